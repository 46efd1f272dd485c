// Block-record arithmetic (blocks.hpp), on hand-made records: no GPU.
#include "sc/fixtures/blocks.hpp"

#include <gtest/gtest.h>

namespace {

sc::kernels::block_record rec(std::uint64_t t0, std::uint64_t t1, std::uint32_t sm, std::uint32_t sm_end = ~0u,
                              std::uint64_t gap = 32) {
  return {t0, t1, gap, sm, sm_end == ~0u ? sm : sm_end, 144u, 0u};
}

TEST(Blocks, StartsEndsAndWindows) {
  const sc::block_records r = {rec(100, 200, 0), rec(150, 260, 1), rec(300, 400, 0)};
  EXPECT_EQ(100u, sc::first_start_ns(r));
  EXPECT_EQ(200u, sc::first_end_ns(r));
  EXPECT_EQ(300u, sc::dispatch_complete_ns(r));
  EXPECT_EQ(2u, sc::started_within(r, 100, 150));  // both ends inclusive
  EXPECT_EQ(0u, sc::started_within(r, 151, 299));
  EXPECT_EQ(1u, sc::started_before(r, 150));
  EXPECT_EQ(0u, sc::first_start_ns({}));
}

TEST(Blocks, GapsMovesAndDistinctSms) {
  const sc::block_records r = {rec(0, 10, 3), rec(1, 10, 3, 5, 900), rec(2, 10, 4), rec(9, 10, 7)};
  EXPECT_EQ(900u, sc::widest_gap_ns(r));
  EXPECT_EQ(1u, sc::moved_blocks(r));
  EXPECT_EQ(2u, sc::distinct_sms_of_first(r, 3));  // SMs 3, 3, 4
  EXPECT_EQ(3u, sc::distinct_sms_of_first(r, 10));
}

TEST(Blocks, LeastRemaining) {
  const sc::block_records r = {rec(0, 100, 0), rec(50, 120, 1), rec(100, 200, 0)};
  EXPECT_EQ(40u, sc::least_remaining_ns(r, 60));
  EXPECT_EQ(20u, sc::least_remaining_ns(r, 100));  // the first ended at 100: not resident then
  EXPECT_EQ(0u, sc::least_remaining_ns(r, 500));
}

TEST(Blocks, ResidencyPeaksCountOverlapsPerSmWithEndsBeforeStarts) {
  const sc::block_records low = {rec(0, 100, 0), rec(0, 100, 0), rec(0, 100, 1)};
  const sc::block_records high = {rec(100, 200, 0), rec(50, 150, 1)};
  const auto peaks = sc::residency_peaks({{&low, 1024, "low"}, {&high, 1024, "high"}});
  ASSERT_EQ(2u, peaks.size());
  EXPECT_EQ(0u, peaks[0].sm);
  EXPECT_EQ(2u, peaks[0].blocks);  // a block starting the moment two end does not make three
  EXPECT_EQ(2048u, peaks[0].threads);
  EXPECT_EQ(1u, peaks[0].grids);
  EXPECT_EQ(1u, peaks[1].sm);
  EXPECT_EQ(2u, peaks[1].blocks);
  EXPECT_EQ(2u, peaks[1].grids);
  EXPECT_EQ(50u, peaks[1].at_ns);
  EXPECT_EQ(1u, sc::sms_shared_by_grids({{&low, 1024, "low"}, {&high, 1024, "high"}}));
}

TEST(Blocks, UnfinishedRecordsAreNotCounted) {
  const sc::block_records r = {rec(0, 0, 0), rec(10, 20, 0)};
  const auto peaks = sc::residency_peaks({{&r, 32, "g"}});
  ASSERT_EQ(1u, peaks.size());
  EXPECT_EQ(1u, peaks[0].blocks);
}

}  // namespace
