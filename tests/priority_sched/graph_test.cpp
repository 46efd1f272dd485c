// CAPT-12 (the capture family's ID, proven with this family's harness): at which priority a launched graph's
// kernels are dispatched. Pending behind one latch while a fill wave holds every SM, the grids compete by
// priority once slots free (SCHED-05's arrangement); one of them is a graph.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "priority_sched.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/observe.hpp"

namespace {

using sc::families::decided;
using sc::families::PrioritySched;

// The priority between the lowest and the highest, or nullopt when the device has fewer than three levels. A plain
// grid there is dispatched after a grid of the highest priority and before one of the lowest whatever the launch
// order, so a graph's place against it shows the graph's priority; grids of equal priority released together do
// not keep their launch order (two H100s disagreed), so they would show nothing.
std::optional<int> middle_priority(const PrioritySched& t) {
  if (t.least() - t.greatest() < 2) return std::nullopt;
  return (t.least() + t.greatest()) / 2;
}

// A pending grid launched as a graph (arrange_behind_fill): captured in a stream of priority `captured_at`,
// instantiated with `flags`, launched into a stream of priority `launched_at`; `priority` is the one the test
// states for it (block chart).
PrioritySched::pending_grid graph_grid(const PrioritySched& t, const std::string& label, int launched_at, int priority,
                                       int captured_at, unsigned long long flags = 0) {
  PrioritySched::pending_grid g{label, launched_at, priority, t.wave()};
  g.captured_at = captured_at;
  g.instantiate_flags = flags;
  return g;
}

// The arrangement of both tests: behind the latch, a plain grid "plain_middle" at the middle priority first,
// then `graphs` in order (arrange_behind_fill: built.pending[0] is the plain grid).
PrioritySched::fill_arrangement after_plain_middle_grid(PrioritySched& t, int middle,
                                                        std::vector<PrioritySched::pending_grid> graphs) {
  graphs.insert(graphs.begin(), PrioritySched::pending_grid{"plain_middle", middle, middle, t.wave()});
  return t.arrange_behind_fill(graphs);
}

// CAPT-12 (observed) · RT cudaGraphLaunch (a graph is launched into a stream), cudaGraphInstantiateWithFlags
// (cudaGraphInstantiateFlagUseNodePriority: "Run the graph using the per-node priority attributes rather than
// the priority of the stream it is launched into"), cudaLaunchAttributePriority (a captured kernel node takes
// the capturing stream's priority): pending behind the latch, launched in this order, a plain grid at the middle
// priority, then a graph of one grid captured in a stream of the lowest priority and launched into a stream of
// the highest. Row `graph_runs_at_its_launch_streams_priority` (gating): the graph's grid is dispatched before the
// plain grid starts.
TEST_F(PrioritySched, GraphRunsAtItsLaunchStreamsPriority) {
  const sc::claim capt12("CAPT-12");
  const std::optional<int> middle = middle_priority(*this);
  if (!middle)
    GTEST_SKIP() << "the device has " << least() - greatest() + 1 << " stream priority levels; this needs three";
  const int launched_at = capt12.mutated(sc::mutation_kind::arrangement) ? least() : greatest();
  const fill_arrangement built =
      after_plain_middle_grid(*this, *middle, {graph_grid(*this, "graph", launched_at, launched_at, least())});
  if (!built.judgeable()) return;
  const bool first = dispatched_before(*built.pending[1], *built.pending[0]);
  EXPECT_TRUE(capt12.observed_row(
      "graph_runs_at_its_launch_streams_priority",
      decided(built.not_ready, first,
              std::string("the graph captured at the lowest priority, launched into a stream of the highest, ") +
                  (first ? "was" : "was not") + " dispatched before the plain middle-priority grid")));
}

// CAPT-12 (observed) · the same sources: pending behind the latch, launched in this order, a plain grid at the
// middle priority, a graph captured in a stream of the highest priority and instantiated without flags, and a
// second capture like it instantiated with cudaGraphInstantiateFlagUseNodePriority, both launched into streams of
// the lowest priority. Rows (gating): `graph_runs_at_its_node_priority_with_the_flag`, the flagged graph is
// dispatched before the plain grid starts; `graph_without_the_flag_runs_at_its_launch_streams_priority`, the plain
// grid is dispatched before the unflagged graph starts.
TEST_F(PrioritySched, GraphRunsAtItsNodePriorityWithTheFlag) {
  const sc::claim capt12("CAPT-12");
  const std::optional<int> middle = middle_priority(*this);
  if (!middle)
    GTEST_SKIP() << "the device has " << least() - greatest() + 1 << " stream priority levels; this needs three";
  const unsigned long long flag = capt12.mutated(sc::mutation_kind::arrangement)
                                      ? 0ull
                                      : static_cast<unsigned long long>(cudaGraphInstantiateFlagUseNodePriority);
  const fill_arrangement built = after_plain_middle_grid(
      *this, *middle,
      {graph_grid(*this, "graph_without_flag", least(), least(), greatest()),
       graph_grid(*this, "graph_with_flag", least(), flag != 0 ? greatest() : least(), greatest(), flag)});
  if (!built.judgeable()) return;
  const sc::families::sched_grid& plain = *built.pending[0];
  const bool with_first = dispatched_before(*built.pending[2], plain);
  const bool without_after = dispatched_before(plain, *built.pending[1]);
  EXPECT_TRUE(capt12.observed_row(
      "graph_runs_at_its_node_priority_with_the_flag",
      decided(built.not_ready, with_first,
              std::string("the graph captured at the highest priority, instantiated with UseNodePriority and "
                          "launched into a lowest-priority stream, ") +
                  (with_first ? "was" : "was not") + " dispatched before the plain middle-priority grid")));
  EXPECT_TRUE(capt12.observed_row("graph_without_the_flag_runs_at_its_launch_streams_priority",
                                  decided(built.not_ready, without_after,
                                          std::string("a graph like it instantiated without the flag ") +
                                              (without_after ? "started after" : "started before") +
                                              " the plain middle-priority grid was dispatched")));
}

}  // namespace
