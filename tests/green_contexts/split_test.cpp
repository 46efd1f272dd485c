// GCTX-01: the device's SM resource as the driver reports it, and cuDevSmResourceSplitByCount's groups.
#include <gtest/gtest.h>

#include <string>

#include "green_contexts.hpp"
#include "sc/fixtures/check.hpp"

namespace {

using sc::families::GreenContexts;
using sc::families::sm_split;

// GCTX-01 · DRV cuDeviceGetDevResource (recorded: the SM resource's count, minimum partition size and
// co-scheduling alignment; the guide's rule for compute capability 9.0 and later is multiples of 8): the
// three figures and the device's own SM count, side by side.
TEST_F(GreenContexts, SmResourceOfTheDevice) {
  const sc::claim gctx01("GCTX-01", sc::verdict_kind::recorded);
  const CUdevResource all = device_sms();
  sc::observe("sm.smCount", static_cast<int>(all.sm.smCount));
  sc::observe("sm.minSmPartitionSize", static_cast<int>(all.sm.minSmPartitionSize));
  sc::observe("sm.smCoscheduledAlignment", static_cast<int>(all.sm.smCoscheduledAlignment));
  sc::observe("device.multiProcessorCount", properties().multiProcessorCount);
  // The mutation (expectation) asks for more SMs than the resource has: the one check of this row must bite.
  EXPECT_GT(all.sm.smCount, gctx01.mutate(sc::mutation_kind::expectation, 0u, all.sm.smCount));
}

class SplitByCount : public GreenContexts, public ::testing::WithParamInterface<unsigned> {};

// GCTX-01 · DRV cuDevSmResourceSplitByCount ("a disjoint set of symmetrical partitions"; the overview: the
// minimum count is rounded up to the minimum partition size and the alignment; a NULL result "simulates a
// split and provides the amount of groups that would be created"): every group the same size, at least the
// minimum asked, at least the minimum partition, a multiple of the alignment; as many groups as the dry run
// said; the groups and the remainder no more than the device's SMs.
TEST_P(SplitByCount, GroupsFollowTheRoundingRules) {
  const sc::claim gctx01("GCTX-01", sc::verdict_kind::documented);
  const CUdevResource all = device_sms();
  const unsigned min_count = GetParam();
  if (min_count > all.sm.smCount) GTEST_SKIP() << "the device has " << all.sm.smCount << " SMs";
  const unsigned at_least =
      min_count + gctx01.mutate(sc::mutation_kind::expectation, 0u, all.sm.smCoscheduledAlignment);
  const sm_split dry = split(all, min_count, 0, true);
  const sm_split real = split(all, min_count, 0, false);
  ASSERT_CU_EQ(CUDA_SUCCESS, dry.code);
  ASSERT_CU_EQ(CUDA_SUCCESS, real.code);
  ASSERT_GT(real.groups, 0u);
  EXPECT_EQ(dry.groups, real.groups) << "the dry run predicted another number of groups";
  const unsigned size = real.group[0].sm.smCount;
  sc::observe("groups", static_cast<int>(real.groups));
  sc::observe("group_sms", static_cast<int>(size));
  sc::observe("remaining_sms", static_cast<int>(real.remaining.sm.smCount));
  for (const CUdevResource& g : real.group) EXPECT_EQ(size, g.sm.smCount) << "the groups are not symmetrical";
  EXPECT_GE(size, at_least);
  EXPECT_GE(size, all.sm.minSmPartitionSize);
  EXPECT_EQ(0u, size % all.sm.smCoscheduledAlignment) << size << " SMs, alignment " << all.sm.smCoscheduledAlignment;
  EXPECT_LE(real.groups * size + real.remaining.sm.smCount, all.sm.smCount);
}

std::string min_count_name(const ::testing::TestParamInfo<unsigned>& instance) {
  return "AtLeast" + std::to_string(instance.param);
}

INSTANTIATE_TEST_SUITE_P(, SplitByCount, ::testing::Values(1u, 8u, 9u, 16u, 66u), min_count_name);

}  // namespace
