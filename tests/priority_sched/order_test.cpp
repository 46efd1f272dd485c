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

// SCHED-04's arrangement: a fill of `small`-thread blocks (a small wave of them) whose k-th block on each SM
// spins kFillSpinNs + k * 0.5 ms, so that on each SM one block retires 0.5 ms before the next: room for a small
// block, not for a large one. Pending behind the latch, opened once the fill's wave is resident: a high grid
// of one wave of full-size blocks, then a later low grid of a small wave.
struct small_room {
  sched_grid* fill = nullptr;
  sched_grid* high = nullptr;
  sched_grid* later = nullptr;
  PrioritySched::arrangement arranged;
};

small_room arrange_small_room(PrioritySched& t, unsigned small, unsigned small_wave) {
  // Reason for 0.5 ms: half a block's spin, long against dispatch latency (microseconds).
  constexpr std::uint64_t kStaggerNs = sc::families::kBlockSpinNs / 2;
  small_room r;
  r.arranged = t.arrange([&]() -> PrioritySched::attempt_end {
    sc::families::sched_latch latch(t);
    const sc::stream fs = t.make(stream_flags::non_blocking, "fill", t.least());
    const sc::stream hs = t.make(stream_flags::non_blocking, "high", t.greatest());
    const sc::stream ls = t.make(stream_flags::non_blocking, "later_low", t.least());
    // The fill spins kFillSpinNs first, so both pending grids are ready before the first small room appears.
    r.fill = &t.grid("fill", fs, t.least(), small_wave, small, sc::families::kFillSpinNs, kStaggerNs);
    r.high = &t.grid("high", hs, t.greatest(), t.wave());
    r.later = &t.grid("later_low", ls, t.least(), small_wave, small);
    t.launch(*r.fill, fs);
    latch.behind(hs);
    t.launch(*r.high, hs);
    latch.behind(ls);
    t.launch(*r.later, ls);
    return {latch.open_when_started(*r.fill, small_wave), r.fill};
  });
  return r;
}

// SCHED-04 (recorded; RTSS17 Fig. 8): a pending high-priority grid whose blocks do not fit yet is not
// overtaken by a later low-priority grid whose smaller blocks would (arrange_small_room).
TEST_F(PrioritySched, LaterSmallLowGridDoesNotCutAhead) {
  const sc::claim sched04("SCHED-04");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  const unsigned small = threads() / 2;
  int small_per_sm = 0;
  SC_CHECK_CUDA(sc::kernels::sched_spin_occupancy(small, &small_per_sm));
  ASSERT_GE(small_per_sm, 2);
  // A recorded claim has no mutation: no value of it fails.
  const small_room r = arrange_small_room(*this, small, sms() * static_cast<unsigned>(small_per_sm));
  if (!r.arranged.judgeable()) return;
  const std::size_t cut = sc::started_before(r.later->host, sc::dispatch_complete_ns(r.high->host));
  sc::observe("later_low.blocks_started_before_high_dispatched", static_cast<unsigned long long>(cut));
  sc::observe("high.first_start_after_fill_first_end_us", (static_cast<double>(sc::first_start_ns(r.high->host)) -
                                                           static_cast<double>(sc::first_end_ns(r.fill->host))) /
                                                              1000.0);
  sc::observe("sms_shared_by_fill_and_high",
              static_cast<unsigned long long>(sc::sms_shared_by_grids({residency(*r.fill), residency(*r.high)})));
  const std::string what = std::to_string(cut) + " later low blocks started before the high grid's last block";
  // Whether any small block cut ahead, and whether the later grid took the small room on every SM (no
  // hold-back at all): recorded values (the claim's kind).
  const std::string& not_ready = r.arranged.not_ready;
  EXPECT_TRUE(sched04.observed_row("later_low_grid_waits_for_high_dispatch", decided(not_ready, cut == 0, what)));
  EXPECT_TRUE(
      sched04.observed_row("later_low_grid_took_the_small_room_on_every_sm", decided(not_ready, cut >= sms(), what)));
}

// SCHED-05's reading, from the highest level down: how many levels were each fully dispatched before the next
// lower one started (dispatch ranks, the lowest level counting as one). Records each level's first start after
// the fill's and whether it started before the next lower one.
struct level_ranks {
  int ranks = 1;
  bool ordered = true;
};

level_ranks dispatch_ranks(const PrioritySched& t, const PrioritySched::fill_arrangement& built) {
  const std::vector<sched_grid*>& grids = built.pending;  // lowest priority first
  const std::uint64_t fill_start = sc::first_start_ns(built.fill->host);
  level_ranks r;
  for (std::size_t i = grids.size() - 1; i > 0; --i) {
    const sched_grid& higher = *grids[i];
    const sched_grid& lower = *grids[i - 1];
    const bool before = t.dispatched_before(higher, lower);
    r.ranks += before ? 1 : 0;
    r.ordered = r.ordered && before;
    sc::observe(higher.label + ".first_start_us",
                static_cast<double>(sc::first_start_ns(higher.host) - fill_start) / 1000.0);
    sc::observe(higher.label + ".starts_before_" + lower.label,
                sc::first_start_ns(higher.host) < sc::first_start_ns(lower.host));
  }
  sc::observe(grids.front()->label + ".first_start_us",
              static_cast<double>(sc::first_start_ns(grids.front()->host) - fill_start) / 1000.0);
  return r;
}

// SCHED-05 (observed; RTAS20, RTSS17 Fig. 7; catalog Q1): one grid per priority level, all pending behind
// one latch, launched lowest priority first (so launch order favours the low ones): is dispatch ordered
// strictly by level, or do some levels share a rank?
TEST_F(PrioritySched, EveryPriorityLevelIsDispatchedInOrder) {
  const sc::claim sched05("SCHED-05");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  const bool mutated = sched05.mutated(sc::mutation_kind::arrangement);
  std::vector<pending_grid> levels;  // from lowest to highest priority (numerically falling)
  for (int p = least(); p >= greatest(); --p)
    levels.push_back({"level" + std::to_string(p), mutated ? least() : p, p, wave()});
  const fill_arrangement built = arrange_behind_fill(levels);
  if (!built.judgeable()) return;
  const level_ranks seen = dispatch_ranks(*this, built);
  sc::observe("levels", static_cast<int>(levels.size()));
  sc::observe("distinct_dispatch_ranks", seen.ranks);
  EXPECT_TRUE(sched05.observed_row(
      "every_level_dispatched_before_the_next_lower",
      decided(built.not_ready, seen.ordered,
              std::to_string(seen.ranks) + " dispatch ranks for " + std::to_string(levels.size()) + " levels")));
}

// The connection count this process runs with: CUDA_DEVICE_MAX_CONNECTIONS, or "default" where it is not set.
std::string connections_setting() {
  const char* set = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  return set != nullptr ? std::string(set) : std::string("default");
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
  const std::string connections = connections_setting();
  sc::observe("connections", connections);
  // Mutation (arrangement): once released, the high grid's stream also waits for the first low grid to
  // finish (with equal priorities instead, 17 streams on 32 connections leave the order to chance).
  const bool mutated = sched07.mutated(sc::mutation_kind::arrangement);
  std::vector<pending_grid> specs;
  // One block per SM: half a wave or less, so 16 of them stay short.
  for (unsigned i = 0; i < kLowStreams; ++i) specs.push_back({"low" + std::to_string(i), least(), least(), sms()});
  specs.push_back({"high", greatest(), greatest(), wave(), mutated});
  const fill_arrangement built = arrange_behind_fill(specs);
  if (!built.judgeable()) return;
  const std::uint64_t high_first = sc::first_start_ns(built.pending.back()->host);
  unsigned ahead = 0;
  for (std::size_t i = 0; i < kLowStreams; ++i)
    ahead += sc::first_start_ns(built.pending[i]->host) < high_first ? 1u : 0u;
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

// SCHED-08's sizes, recorded: clusters of two 1024-thread blocks (or the device's maximum), how many of them
// fit at once, and small blocks of a quarter of that size (at least a warp), with a wave of them.
struct cluster_sizes {
  unsigned cluster = 2;
  int clusters = 0;
  unsigned small = 0;
  unsigned small_wave = 0;
};

cluster_sizes cluster_sizes_of(const PrioritySched& t) {
  cluster_sizes z;
  SC_CHECK_CUDA(sc::kernels::sched_spin_cluster_occupancy(t.threads(), z.cluster, &z.clusters));
  z.small = std::max(32u, t.threads() / 4);
  int small_per_sm = 0;
  SC_CHECK_CUDA(sc::kernels::sched_spin_occupancy(z.small, &small_per_sm));
  z.small_wave = t.sms() * static_cast<unsigned>(small_per_sm);
  sc::observe("cluster.size", static_cast<int>(z.cluster));
  sc::observe("cluster.max_active", z.clusters);
  sc::observe("small.threads", static_cast<int>(z.small));
  return z;
}

// SCHED-08's arrangement: four waves of small low blocks in "small_low" (three stay pending when the latch
// opens, once the first wave is resident) and, pending behind the latch, the high grid of as many clusters as
// fit at once in "cluster_high" (its stream at `cluster_priority`).
struct cluster_race {
  sched_grid* low = nullptr;
  sched_grid* high = nullptr;
  unsigned started_at_release = 0;  // small blocks started when the latch opened
  PrioritySched::arrangement arranged;

  // Why the race proves nothing: no small block was pending when the latch opened, or the cluster grid was not
  // ready when room appeared; empty when it proves something.
  std::string not_pending() const {
    return started_at_release >= low->blocks ? "no small block was pending when the latch opened" : arranged.not_ready;
  }
};

cluster_race arrange_cluster_race(PrioritySched& t, const cluster_sizes& z, int cluster_priority) {
  cluster_race r;
  r.arranged = t.arrange([&]() -> PrioritySched::attempt_end {
    sc::families::sched_latch latch(t);
    const sc::stream ls = t.make(stream_flags::non_blocking, "small_low", t.least());
    const sc::stream hs = t.make(stream_flags::non_blocking, "cluster_high", cluster_priority);
    r.low = &t.grid("small_low", ls, t.least(), 4 * z.small_wave, z.small);
    r.high = &t.grid("cluster_high", hs, t.greatest(), z.cluster * static_cast<unsigned>(z.clusters), 0,
                     sc::families::kBlockSpinNs, 0, z.cluster);
    latch.behind(hs);
    t.launch(*r.high, hs);
    t.launch(*r.low, ls);
    std::string not_built = latch.open_when_started(*r.low, z.small_wave);
    r.started_at_release = latch.started_at_release();  // counted before the latch opened
    return {not_built, r.low};
  });
  return r;
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
  const cluster_sizes z = cluster_sizes_of(*this);
  ASSERT_GT(z.clusters, 0);
  const int cluster_priority = sched08.mutated(sc::mutation_kind::arrangement) ? least() : greatest();
  const cluster_race r = arrange_cluster_race(*this, z, cluster_priority);
  if (!r.arranged.judgeable()) return;
  const cluster_dispatch d = observe_cluster_dispatch(*r.low, *r.high, r.started_at_release);
  const std::string not_pending = r.not_pending();
  EXPECT_TRUE(sched08.observed_row("cluster_grid_dispatched_ahead_of_pending_small_blocks",
                                   decided(not_pending.empty() ? d.invalid : not_pending, d.ahead, d.what)));
}

}  // namespace
