// PRIO-12, PRIO-13: stream ids and devices, for created streams and special handles.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "priority_flags.hpp"
#include "sc/fixtures/stream.hpp"

namespace {

using sc::stream;
using sc::stream_flags;
using PriorityFlags = sc::families::PriorityFlags;

// PRIO-12 · RT cudaStreamGetId (12.0): ids are unique for the program's lifetime (a destroyed stream's id
// is not handed out again) and the special handles have ids too; the driver reports the same ids.
TEST_F(PriorityFlags, StreamIdsAreUniqueForTheProgramsLifetime) {
  const sc::claim prio12("PRIO-12");
  constexpr int kRounds = 3;
  constexpr int kPerRound = 8;
  std::vector<unsigned long long> ids;
  const bool misread = prio12.mutated(sc::mutation_kind::arrangement);
  for (int round = 0; round < kRounds; ++round) {
    std::vector<stream> streams;  // destroyed at the end of each round
    for (int i = 0; i < kPerRound; ++i) {
      streams.push_back(stream::create(i % 2 ? stream_flags::blocking : stream_flags::non_blocking));
      const cudaStream_t asked = misread && ids.empty() ? cudaStreamPerThread : streams.back().get();
      unsigned long long runtime_id = 0;
      unsigned long long driver_id = 0;
      EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetId(asked, &runtime_id));
      EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuStreamGetId(asked, &driver_id));
      EXPECT_EQ(runtime_id, driver_id);
      ids.push_back(runtime_id);
    }
  }
  const std::set<unsigned long long> distinct(ids.begin(), ids.end());
  EXPECT_EQ(ids.size(), distinct.size()) << "a stream id was handed out twice across create/destroy rounds";

  unsigned long long legacy_id = 0;
  unsigned long long per_thread_id = 0;
  EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetId(cudaStreamLegacy, &legacy_id));
  EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetId(cudaStreamPerThread, &per_thread_id));
  EXPECT_NE(legacy_id, per_thread_id);
  EXPECT_EQ(0u, distinct.count(legacy_id)) << "the legacy stream shares an id with a created stream";
  EXPECT_EQ(0u, distinct.count(per_thread_id)) << "the per-thread stream shares an id with a created stream";
  sc::observe("created_ids", static_cast<int>(ids.size()));
  sc::observe("id.legacy", legacy_id);
  sc::observe("id.per_thread", per_thread_id);
}

// PRIO-13 · RT cudaStreamGetDevice (12.8): the stream's device, also for special handles; the driver's
// cuStreamGetDevice agrees.
TEST_F(PriorityFlags, StreamGetDeviceReturnsTheStreamsDevice) {
  const sc::claim prio13("PRIO-13");
  int devices = 0;
  SC_CHECK_CUDA(cudaGetDeviceCount(&devices));
  // Mutation: with a second GPU (arrangement) the created stream is made on the other device (without its GPU
  // lock: the mutation job runs one family at a time, and no test of this family measures time); with one GPU
  // no stream of another device can exist, so only the expected device changes (expectation).
  const bool elsewhere = devices > 1 && prio13.mutated(sc::mutation_kind::arrangement);
  const int expected = devices > 1 ? device() : prio13.mutate(sc::mutation_kind::expectation, device(), device() + 1);
  std::vector<stream> streams;
  if (elsewhere) {
    SC_CHECK_CUDA(cudaSetDevice((device() + 1) % devices));
    streams.push_back(stream::create(stream_flags::non_blocking, 0, "created on the other device"));
    SC_CHECK_CUDA(cudaSetDevice(device()));
  } else {
    streams.push_back(stream::create(stream_flags::non_blocking, 0, "created"));
  }
  streams.push_back(stream::legacy());
  streams.push_back(stream::per_thread());
  streams.push_back(stream::null());
  for (const stream& s : streams) {
    int runtime_view = -1;
    CUdevice driver_view = -1;
    EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetDevice(s.get(), &runtime_view));
    EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuStreamGetDevice(s.get(), &driver_view));
    EXPECT_EQ(expected, runtime_view) << s.name();
    EXPECT_EQ(expected, static_cast<int>(driver_view)) << s.name() << " (primary context of device ordinal)";
  }
}

}  // namespace
