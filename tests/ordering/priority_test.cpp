// ORDX-12: a grid's priority set by its launch (cudaLaunchAttributePriority on cudaLaunchKernelEx) whatever its
// stream's, and a stream's priority set after the stream was made (cudaStreamSetAttribute), which applies to
// the work submitted afterwards only. Each test leaves two grids pending behind one latch while a fill wave of
// the lowest priority holds every SM (arrange_behind_fill, SCHED-05's arrangement), the grid the test expects
// to lose launched first, so that launch order never favours the expected winner.
#include <gtest/gtest.h>

#include "ordering.hpp"
#include "sc/fixtures/observe.hpp"

namespace {

using sc::families::PerLaunchPriority;

// A priority strictly between the lowest and the greatest (the device has at least three levels).
int middle(const PerLaunchPriority& t) { return t.least() - 1; }

// (a) Two grids in two streams of the lowest priority; the later one launched with the greatest priority as a
// launch attribute is dispatched whole before the earlier one starts.
TEST_F(PerLaunchPriority, LaunchAttributeRaisesAGridAboveItsStream) {
  const sc::claim ordx12("ORDX-12");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  pending_grid raised{"raised", least(), greatest(), wave()};
  if (!ordx12.mutated(sc::mutation_kind::arrangement)) raised.launch_priority = greatest();
  const fill_arrangement built = arrange_behind_fill({{"plain", least(), least(), wave()}, raised});
  if (!built.judgeable()) return;
  EXPECT_TRUE(dispatched_ahead(built, 1, 0));
}

// (b) A grid in a stream of the greatest priority launched with the lowest as a launch attribute falls below a
// later grid of a stream of middle priority.
TEST_F(PerLaunchPriority, LaunchAttributeLowersAGridBelowItsStream) {
  const sc::claim ordx12("ORDX-12");
  if (least() - greatest() < 2) GTEST_SKIP() << "the device has fewer than three stream priority levels";
  pending_grid lowered{"lowered", greatest(), least(), wave()};
  if (!ordx12.mutated(sc::mutation_kind::arrangement)) lowered.launch_priority = least();
  const fill_arrangement built = arrange_behind_fill({lowered, {"middle", middle(*this), middle(*this), wave()}});
  if (!built.judgeable()) return;
  EXPECT_TRUE(dispatched_ahead(built, 1, 0));
}

// (c) A stream of the lowest priority raised to the greatest (cudaStreamSetAttribute) once its grid was
// submitted, while the grid is still pending: the grid keeps the priority it was submitted with and stays
// behind a later grid of a stream of middle priority.
TEST_F(PerLaunchPriority, StreamRaisedAfterItsGridLeavesTheGridAtTheOldPriority) {
  const sc::claim ordx12("ORDX-12");
  if (least() - greatest() < 2) GTEST_SKIP() << "the device has fewer than three stream priority levels";
  pending_grid kept{"kept", least(), least(), wave()};
  (ordx12.mutated(sc::mutation_kind::arrangement) ? kept.stream_priority_before : kept.stream_priority_after) =
      greatest();
  const fill_arrangement built = arrange_behind_fill({kept, {"middle", middle(*this), middle(*this), wave()}});
  if (!built.judgeable()) return;
  EXPECT_TRUE(dispatched_ahead(built, 1, 0));
}

// (c) The same stream raised just before its grid's submission (the stream already waits for the latch): the
// grid takes the new priority and goes ahead of an earlier grid of a stream of middle priority.
TEST_F(PerLaunchPriority, StreamRaisedBeforeItsGridGivesTheGridTheNewPriority) {
  const sc::claim ordx12("ORDX-12");
  if (least() - greatest() < 2) GTEST_SKIP() << "the device has fewer than three stream priority levels";
  pending_grid raised{"raised", least(), greatest(), wave()};
  (ordx12.mutated(sc::mutation_kind::arrangement) ? raised.stream_priority_after : raised.stream_priority_before) =
      greatest();
  const fill_arrangement built = arrange_behind_fill({{"middle", middle(*this), middle(*this), wave()}, raised});
  if (!built.judgeable()) return;
  EXPECT_TRUE(dispatched_ahead(built, 1, 0));
}

}  // namespace
