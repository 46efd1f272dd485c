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
  const int launch_priority = capt12.mutated(sc::mutation_kind::arrangement) ? least() : greatest();
  std::vector<pending_grid> specs;
  specs.push_back({"plain_middle", *middle, *middle, wave()});
  pending_grid g{"graph", launch_priority, launch_priority, wave()};
  g.captured_at = least();
  specs.push_back(g);
  const fill_arrangement built = arrange_behind_fill(specs);
  if (!built.judged) return;
  ASSERT_TRUE(built.not_built.empty()) << built.not_built;
  const sc::families::sched_grid& plain = *built.pending[0];
  const sc::families::sched_grid& graph = *built.pending[1];
  const bool first = dispatched_before(graph, plain);
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
  std::vector<pending_grid> specs;
  specs.push_back({"plain_middle", *middle, *middle, wave()});
  pending_grid plain_graph{"graph_without_flag", least(), least(), wave()};
  plain_graph.captured_at = greatest();
  specs.push_back(plain_graph);
  pending_grid flagged{"graph_with_flag", least(), flag != 0 ? greatest() : least(), wave()};
  flagged.captured_at = greatest();
  flagged.instantiate_flags = flag;
  specs.push_back(flagged);
  const fill_arrangement built = arrange_behind_fill(specs);
  if (!built.judged) return;
  ASSERT_TRUE(built.not_built.empty()) << built.not_built;
  const sc::families::sched_grid& plain = *built.pending[0];
  const sc::families::sched_grid& without = *built.pending[1];
  const sc::families::sched_grid& with = *built.pending[2];
  const bool with_first = dispatched_before(with, plain);
  const bool without_after = dispatched_before(plain, without);
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
