// PRIO-12, PRIO-13: stream ids and devices, for created streams and special handles.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "priority_flags.hpp"
#include "sc/fixtures/stream.hpp"

namespace {

using sc::stream;
using sc::stream_flags;
using PriorityFlags = sc::testing::PriorityFlags;

// PRIO-12 · RT cudaStreamGetId (12.0): ids are unique for the program's lifetime (a destroyed stream's id
// is not handed out again) and the special handles have ids too; the driver reports the same ids.
TEST_F(PriorityFlags, StreamIdsAreUniqueForTheProgramsLifetime) {
  sc::claim("PRIO-12", sc::verdict_kind::documented, "RT cudaStreamGetId; DRV cuStreamGetId");
  constexpr int kRounds = 3;
  constexpr int kPerRound = 8;
  std::vector<unsigned long long> ids;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<stream> streams;  // destroyed at the end of each round
    for (int i = 0; i < kPerRound; ++i) {
      streams.push_back(stream::create(i % 2 ? stream_flags::blocking : stream_flags::non_blocking));
      unsigned long long runtime_id = 0;
      unsigned long long driver_id = 0;
      EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetId(streams.back().get(), &runtime_id));
      EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuStreamGetId(streams.back().get(), &driver_id));
      EXPECT_EQ(runtime_id, driver_id);
      ids.push_back(runtime_id);
    }
  }
  if (sc::mutation_active("PRIO-12")) ids.push_back(ids.front());
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
  sc::claim("PRIO-13", sc::verdict_kind::documented, "RT cudaStreamGetDevice; DRV cuStreamGetDevice");
  const int expected = sc::mutate("PRIO-13", device(), device() + 1);
  std::vector<stream> streams;
  streams.push_back(stream::create(stream_flags::non_blocking, 0, "created"));
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
