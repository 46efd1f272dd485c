// SCHED-04, 05, 07, 08: several grids pending behind one latch while a running grid holds every SM; in
// which order are they dispatched once the latch opens?
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "priority_sched.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/observe.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::decided;
using sc::families::PrioritySched;
using sc::families::sched_grid;

// SCHED-04 (recorded; RTSS17 Fig. 8): a pending high-priority grid whose blocks do not fit yet is not
// overtaken by a later low-priority grid whose smaller blocks would. The running grid has blocks of half
// the size, staggered so that on each SM one retires 0.5 ms before the next: room for a small block, not
// for a large one.
TEST_F(PrioritySched, LaterSmallLowGridDoesNotCutAhead) {
  const sc::claim sched04("SCHED-04");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  const unsigned small = threads() / 2;
  int small_per_sm = 0;
  SC_CHECK_CUDA(sc::kernels::sched_spin_occupancy(small, &small_per_sm));
  ASSERT_GE(small_per_sm, 2);
  const unsigned small_wave = sms() * static_cast<unsigned>(small_per_sm);
  // Reason for 0.5 ms: half a block's spin, long against dispatch latency (microseconds).
  constexpr std::uint64_t kStaggerNs = sc::families::kBlockSpinNs / 2;
  // A recorded claim has no mutation: no value of it fails.
  sched_grid* fill = nullptr;
  sched_grid* high = nullptr;
  sched_grid* later = nullptr;
  const arrangement built = arrange([&]() -> attempt_end {
    sc::families::sched_latch latch(*this);
    const sc::stream fs = make(stream_flags::non_blocking, "fill", least());
    const sc::stream hs = make(stream_flags::non_blocking, "high", greatest());
    const sc::stream ls = make(stream_flags::non_blocking, "later_low", least());
    // The fill spins kFillSpinNs first, so both pending grids are ready before the first small room appears.
    fill = &grid("fill", fs, least(), small_wave, small, sc::families::kFillSpinNs, kStaggerNs);
    high = &grid("high", hs, greatest(), wave());
    later = &grid("later_low", ls, least(), small_wave, small);
    launch(*fill, fs);
    latch.behind(hs);
    launch(*high, hs);
    latch.behind(ls);
    launch(*later, ls);
    return {latch.open_when_started(*fill, small_wave), fill};
  });
  if (!built.judged) return;
  ASSERT_TRUE(built.not_built.empty()) << built.not_built;
  const std::uint64_t high_dispatched = sc::dispatch_complete_ns(high->host);
  const std::size_t cut = sc::started_before(later->host, high_dispatched);
  sc::observe("later_low.blocks_started_before_high_dispatched", static_cast<unsigned long long>(cut));
  sc::observe("high.first_start_after_fill_first_end_us", (static_cast<double>(sc::first_start_ns(high->host)) -
                                                           static_cast<double>(sc::first_end_ns(fill->host))) /
                                                              1000.0);
  sc::observe("sms_shared_by_fill_and_high",
              static_cast<unsigned long long>(sc::sms_shared_by_grids({residency(*fill), residency(*high)})));
  const std::string what = std::to_string(cut) + " later low blocks started before the high grid's last block";
  // Whether any small block cut ahead, and whether the later grid took the small room on every SM (no
  // hold-back at all): recorded values (the claim's kind).
  EXPECT_TRUE(sched04.observed_row("later_low_grid_waits_for_high_dispatch", decided(built.not_ready, cut == 0, what)));
  EXPECT_TRUE(sched04.observed_row("later_low_grid_took_the_small_room_on_every_sm",
                                   decided(built.not_ready, cut >= sms(), what)));
}

// SCHED-05 (observed; RTAS20, RTSS17 Fig. 7; catalog Q1): one grid per priority level, all pending behind
// one latch, launched lowest priority first (so launch order favours the low ones): is dispatch ordered
// strictly by level, or do some levels share a rank?
TEST_F(PrioritySched, EveryPriorityLevelIsDispatchedInOrder) {
  const sc::claim sched05("SCHED-05");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  // Levels from lowest to highest priority (numerically falling).
  std::vector<int> levels;
  for (int p = least(); p >= greatest(); --p) levels.push_back(p);
  const bool mutated = sched05.mutated(sc::mutation_kind::arrangement);
  std::vector<pending_grid> specs;
  for (int p : levels) specs.push_back({"level" + std::to_string(p), mutated ? least() : p, p, wave()});
  const fill_arrangement built = arrange_behind_fill(specs);
  if (!built.judged) return;
  ASSERT_TRUE(built.not_built.empty()) << built.not_built;
  const sched_grid* fill = built.fill;
  const std::vector<sched_grid*>& grids = built.pending;
  const std::string& not_ready = built.not_ready;
  // From the highest level down: each level fully dispatched before the next lower one starts.
  int ranks = 1;
  bool ordered = true;
  for (std::size_t i = levels.size() - 1; i > 0; --i) {
    const sched_grid& higher = *grids[i];
    const sched_grid& lower = *grids[i - 1];
    const bool before = dispatched_before(higher, lower);
    const bool starts_first = sc::first_start_ns(higher.host) < sc::first_start_ns(lower.host);
    ranks += before ? 1 : 0;
    ordered = ordered && before;
    sc::observe(higher.label + ".first_start_us",
                static_cast<double>(sc::first_start_ns(higher.host) - sc::first_start_ns(fill->host)) / 1000.0);
    sc::observe(higher.label + ".starts_before_" + lower.label, starts_first);
  }
  sc::observe(grids.front()->label + ".first_start_us",
              static_cast<double>(sc::first_start_ns(grids.front()->host) - sc::first_start_ns(fill->host)) / 1000.0);
  sc::observe("levels", static_cast<int>(levels.size()));
  sc::observe("distinct_dispatch_ranks", ranks);
  EXPECT_TRUE(sched05.observed_row(
      "every_level_dispatched_before_the_next_lower",
      decided(not_ready, ordered,
              std::to_string(ranks) + " dispatch ranks for " + std::to_string(levels.size()) + " levels")));
}

// SCHED-07 (observed; RTAS24 R2 x RTSS17 A2; catalog Q2): a high-priority grid launched after grids in 16
// busy low-priority streams. With a hardware queue per stream it is dispatched first; where streams share
// queues (8 connections by default, 1 with CUDA_DEVICE_MAX_CONNECTIONS=1) it can wait behind the low grids
// queued before it. Run once per connection count (ctest entries default, conn1, conn32).
TEST_F(PrioritySched, HighGridBehindBusyLowStreams) {
  const sc::claim sched07("SCHED-07");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  // Reason for 16: twice the default connection count, so streams must share hardware queues.
  constexpr unsigned kLowStreams = 16;
  const char* set = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const std::string connections = set != nullptr ? std::string(set) : std::string("default");
  sc::observe("connections", connections);
  // Mutation (arrangement): once released, the high grid's stream also waits for the first low grid to
  // finish (with equal priorities instead, 17 streams on 32 connections leave the order to chance).
  const bool mutated = sched07.mutated(sc::mutation_kind::arrangement);
  std::vector<pending_grid> specs;
  // One block per SM: half a wave or less, so 16 of them stay short.
  for (unsigned i = 0; i < kLowStreams; ++i) specs.push_back({"low" + std::to_string(i), least(), least(), sms()});
  specs.push_back({"high", greatest(), greatest(), wave(), mutated});
  const fill_arrangement built = arrange_behind_fill(specs);
  if (!built.judged) return;
  ASSERT_TRUE(built.not_built.empty()) << built.not_built;
  const sched_grid* high = built.pending.back();
  const std::vector<const sched_grid*> lows(built.pending.begin(), built.pending.end() - 1);
  const std::uint64_t high_first = sc::first_start_ns(high->host);
  unsigned ahead = 0;
  for (const sched_grid* g : lows) ahead += sc::first_start_ns(g->host) < high_first ? 1u : 0u;
  sc::observe("low_grids_started_before_high", static_cast<int>(ahead));
  EXPECT_TRUE(sched07.observed_row("high_grid_dispatched_first.connections_" + connections,
                                   decided(built.not_ready, ahead == 0,
                                           std::to_string(ahead) + " of " + std::to_string(kLowStreams) +
                                               " low grids started before the high grid")));
}

// SCHED-08's reading of the block records: the cluster grid is dispatched ahead of the pending small blocks when
// its last block starts before the small grid's last, and no small block pending at the release (those running
// then are `started_at_release`) starts before the cluster grid was dispatched, as SCHED-01 asks. Records that count
// fewer small blocks started by then than were running at the release make the row invalid.
struct cluster_dispatch {
  bool ahead = false;
  std::string what;
  std::string invalid;
};
cluster_dispatch observe_cluster_dispatch(const sched_grid& low, const sched_grid& high, unsigned started_at_release) {
  const std::uint64_t high_first = sc::first_start_ns(high.host);
  const std::uint64_t high_dispatched = sc::dispatch_complete_ns(high.host);
  const std::uint64_t low_dispatched = sc::dispatch_complete_ns(low.host);
  const std::size_t before = sc::started_before(low.host, high_dispatched);
  const std::size_t cut = before >= started_at_release ? before - started_at_release : 0;
  sc::observe("small_low.blocks_started_during_cluster_dispatch",
              static_cast<unsigned long long>(sc::started_within(low.host, high_first, high_dispatched)));
  sc::observe("small_low.pending_blocks_started_before_cluster_dispatched", static_cast<unsigned long long>(cut));
  sc::observe("cluster_high.first_start_after_release_wave_us",
              (static_cast<double>(high_first) - static_cast<double>(sc::first_end_ns(low.host))) / 1000.0);
  sc::observe("cluster_high.dispatch_us", static_cast<double>(high_dispatched - high_first) / 1000.0);
  cluster_dispatch d;
  d.ahead = cut == 0 && high_dispatched < low_dispatched;
  d.what = std::to_string(cut) + " pending small blocks started before the cluster grid was dispatched; D(cluster) " +
           std::to_string(high_dispatched) + " vs D(small) " + std::to_string(low_dispatched);
  if (before < started_at_release)
    d.invalid = std::to_string(before) +
                " small blocks started before the cluster grid was dispatched, fewer than the " +
                std::to_string(started_at_release) + " running when the latch opened: the records disagree";
  return d;
}

// SCHED-08 (observed; catalog Q4, no published answer): a high-priority grid launched in thread-block
// clusters of two 1024-thread blocks, pending while many small low-priority blocks run and wait. A cluster
// needs two SMs of one GPC with room at once: is it dispatched ahead of the pending small blocks, or starved
// by them?
TEST_F(PrioritySched, ClusterGridAgainstManySmallBlocks) {
  const sc::claim sched08("SCHED-08");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  int cluster_launch = 0;
  SC_CHECK_CUDA(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, device()));
  if (cluster_launch == 0) GTEST_SKIP() << "the device does not support thread-block cluster launch";
  constexpr unsigned kCluster = 2;
  int clusters = 0;
  SC_CHECK_CUDA(sc::kernels::sched_spin_cluster_occupancy(threads(), kCluster, &clusters));
  ASSERT_GT(clusters, 0);
  const unsigned small = std::max(32u, threads() / 4);
  int small_per_sm = 0;
  SC_CHECK_CUDA(sc::kernels::sched_spin_occupancy(small, &small_per_sm));
  const unsigned small_wave = sms() * static_cast<unsigned>(small_per_sm);
  sc::observe("cluster.size", static_cast<int>(kCluster));
  sc::observe("cluster.max_active", clusters);
  sc::observe("small.threads", static_cast<int>(small));
  const bool mutated = sched08.mutated(sc::mutation_kind::arrangement);
  sched_grid* low = nullptr;
  sched_grid* high = nullptr;
  unsigned started_at_release = 0;
  const arrangement built = arrange([&]() -> attempt_end {
    sc::families::sched_latch latch(*this);
    const sc::stream ls = make(stream_flags::non_blocking, "small_low", least());
    const sc::stream hs = make(stream_flags::non_blocking, "cluster_high", mutated ? least() : greatest());
    // Four waves of small blocks: three stay pending when the latch opens.
    low = &grid("small_low", ls, least(), 4 * small_wave, small);
    high = &grid("cluster_high", hs, greatest(), kCluster * static_cast<unsigned>(clusters), 0,
                 sc::families::kBlockSpinNs, 0, kCluster);
    latch.behind(hs);
    launch(*high, hs);
    launch(*low, ls);
    std::string not_built = latch.open_when_started(*low, small_wave);
    started_at_release = latch.started_at_release();  // counted before the latch opened
    return {not_built, low};
  });
  if (!built.judged) return;
  ASSERT_TRUE(built.not_built.empty()) << built.not_built;
  const std::string not_pending =
      started_at_release >= low->blocks ? "no small block was pending when the latch opened" : built.not_ready;
  const cluster_dispatch d = observe_cluster_dispatch(*low, *high, started_at_release);
  EXPECT_TRUE(sched08.observed_row("cluster_grid_dispatched_ahead_of_pending_small_blocks",
                                   decided(not_pending.empty() ? d.invalid : not_pending, d.ahead, d.what)));
}

}  // namespace
