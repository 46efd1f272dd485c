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

// A non-blocking stream made on device `other`; the current device is `home` again on return.
stream stream_on_device(int other, int home, const char* name) {
  SC_CHECK_CUDA(cudaSetDevice(other));
  stream s = stream::create(stream_flags::non_blocking, 0, name);
  SC_CHECK_CUDA(cudaSetDevice(home));
  return s;
}

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
      const auto id = id_of(asked);
      EXPECT_EQ(id.runtime, id.driver);
      ids.push_back(id.runtime);
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
  streams.push_back(elsewhere ? stream_on_device((device() + 1) % devices, device(), "created on the other device")
                              : stream::create(stream_flags::non_blocking, 0, "created"));
  streams.push_back(stream::legacy());
  streams.push_back(stream::per_thread());
  streams.push_back(stream::null());
  for (const stream& s : streams) {
    const auto seen = device_of(s.get());
    EXPECT_EQ(expected, seen.runtime) << s.name();
    EXPECT_EQ(expected, seen.driver) << s.name() << " (primary context of device ordinal)";
  }
}

}  // namespace
