// GCTX-06: stream priorities inside a green context. The scheduling family's arrangement (SCHED-05's
// arrange_behind_fill) on one partition: a fill wave of the lowest priority holds every SM of the partition, and
// two grids wait behind one latch in streams of the green context, the low-priority one launched first. When the
// fill's blocks end, which grid takes the partition's freed slots? Judged by the block records.
#include <gtest/gtest.h>

#include "green_contexts.hpp"
#include "sc/fixtures/observe.hpp"

namespace {

using sc::families::PartitionSched;

// GCTX-06 · DRV cuGreenCtxStreamCreate (observed: a priority is "a hint" with no "functional guarantee on execution
// order", and nothing says how it acts inside a partition): a later grid of a high-priority green stream is
// dispatched whole on the freed SMs before an earlier grid of a low-priority green stream starts.
TEST_F(PartitionSched, HighPriorityGridTakesFreedSlotsFirst) {
  const sc::claim gctx06("GCTX-06");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  // Mutation (arrangement): the two streams' priorities swapped, so that priority and launch order both favour
  // the earlier grid. (Equal priorities would leave the order to how the two streams' release is picked up:
  // CAPT-12 and SCHED-07 saw grids released together at one priority go either way.)
  const bool swapped = gctx06.mutated(sc::mutation_kind::arrangement);
  const fill_arrangement built = arrange_behind_fill({{"low", swapped ? greatest() : least(), least(), wave()},
                                                      {"high", swapped ? least() : greatest(), greatest(), wave()}});
  if (!built.judgeable()) return;
  EXPECT_TRUE(on_the_partition(built));
  EXPECT_TRUE(gctx06.observed_row("high_grid_dispatched_ahead_of_earlier_low_grid", dispatched_ahead(built, 1, 0)));
}

}  // namespace
