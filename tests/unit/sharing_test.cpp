// Whether another context ran on a test's GPU (sharing.hpp): which processes are the suite's own, and the
// evidence and reason a test records.
#include "sc/fixtures/sharing.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

namespace {

// A process tree of pids: 100 holds the lock; 101 is its child (a probe), 102 a grandchild; 200 is not.
long parent_in_tree(long pid) {
  static const std::map<long, long> parents = {{100, 1}, {101, 100}, {102, 101}, {200, 1}, {201, 200}};
  const auto found = parents.find(pid);
  return found == parents.end() ? 0 : found->second;
}

// Only the lock's holder, what descends from it, and this process are the suite's own; a name says nothing.
TEST(Sharing, OwnProcessesHoldTheLockOrDescendFromItsHolder) {
  const std::vector<long> holders = {100};
  EXPECT_TRUE(sc::own_process(100, holders, parent_in_tree));
  EXPECT_TRUE(sc::own_process(101, holders, parent_in_tree));
  EXPECT_TRUE(sc::own_process(102, holders, parent_in_tree));
  EXPECT_FALSE(sc::own_process(200, holders, parent_in_tree));
  EXPECT_FALSE(sc::own_process(201, holders, parent_in_tree));
  EXPECT_FALSE(sc::own_process(201, {}, parent_in_tree)) << "nobody holds the lock";
  EXPECT_TRUE(sc::own_process(static_cast<long>(getpid()), {}, sc::parent_of)) << "this process";
  EXPECT_EQ(static_cast<long>(getppid()), sc::parent_of(static_cast<long>(getpid())));
}

// Alone: not shared, the evidence says so. A process at the start, one that came and went while the test ran,
// one at the end, or a stop beyond the bound, is a neighbour, each named in the reason.
TEST(Sharing, EvidenceNamesEveryNeighbourAndTheStopBeyondTheBound) {
  std::string reason;
  const nlohmann::json alone = sc::detail::sharing_evidence("nvml", {}, 40'000, "latch 3 (holding s)", reason);
  EXPECT_FALSE(alone["shared"].get<bool>());
  EXPECT_TRUE(reason.empty()) << reason;
  EXPECT_EQ(sc::kSharedGapNs, alone["gap_bound_ns"].get<std::uint64_t>());
  EXPECT_EQ(sc::kListingPeriod.count(), alone["listing_period_ms"].get<long>());
  const nlohmann::json late =
      sc::detail::sharing_evidence("nvml", {{}, {}, {{4242, "/usr/bin/python3"}}}, 0, "", reason);
  EXPECT_TRUE(late["shared"].get<bool>());
  EXPECT_NE(std::string::npos, reason.find("at the test's end: pid 4242 (/usr/bin/python3)")) << reason;
  EXPECT_EQ("end", late["other_processes"][0]["seen"].get<std::string>());
  const nlohmann::json window = sc::detail::sharing_evidence("nvml", {{}, {{4343, ""}}, {}}, 0, "", reason);
  EXPECT_TRUE(window["shared"].get<bool>());
  EXPECT_NE(std::string::npos, reason.find("while the test ran: pid 4343")) << reason;
  EXPECT_EQ("during", window["other_processes"][0]["seen"].get<std::string>());
  const nlohmann::json stopped =
      sc::detail::sharing_evidence("none: no NVML", {}, sc::kSharedGapNs + 1000, "a block of fill", reason);
  EXPECT_TRUE(stopped["shared"].get<bool>());
  EXPECT_NE(std::string::npos, reason.find("a block of fill stopped for")) << reason;
  EXPECT_EQ("none: no NVML", stopped["process_source"].get<std::string>());
}

// Outside a GPU test nothing is watched: no reason, and a stop noted by a family changes nothing until a watch
// begins.
TEST(Sharing, NoWatchNoReason) { EXPECT_TRUE(sc::gpu_shared_reason().empty()); }

}  // namespace
