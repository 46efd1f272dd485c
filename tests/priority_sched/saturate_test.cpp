// SCHED-01, 02, 03, 06, 09, 12: a low grid of several waves runs; a second grid is pending behind a latch that
// opens once the low grid's first wave is resident. Who gets the slots the first wave frees? (SCHED-09: can the
// device preempt at all?)
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "priority_sched.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/observe.hpp"
#include "sc/fixtures/trace.hpp"

namespace {

using sc::stream_flags;
using sc::families::decided;
using sc::families::PrioritySched;
using sc::families::sched_grid;

// Waves of the running grid. Reason: after the first wave, three more keep blocks pending for about 3 ms,
// against microseconds for the host to open the latch and 1 ms for the pending grid's one wave.
constexpr unsigned kRunningWaves = 4;

struct saturation {
  std::optional<sc::stream> running_stream, pending_stream;
  sched_grid* running = nullptr;
  sched_grid* pending = nullptr;
  unsigned running_started_at_release = 0;
  PrioritySched::arrangement arranged;

  // Whether the test goes on to judge the two grids: arranged.judgeable(), and both have records (a fatal
  // failure of the test where one has none).
  bool judgeable() const {
    if (!arranged.judgeable()) return false;
    [&] { ASSERT_FALSE(running->host.empty() || pending->host.empty()); }();
    return !running->host.empty() && !pending->host.empty();
  }
  // Why the order of the two grids proves nothing: `none_pending` when every running block had started before
  // the latch opened (none was left pending), else why the pending grid was not ready when room appeared
  // (empty when it was).
  std::string invalid_unless_pending(const std::string& none_pending) const {
    return running_started_at_release >= running->blocks ? none_pending : arranged.not_ready;
  }
};

// `running` (kRunningWaves waves, priority running_priority) runs; `pending` (one wave, pending_priority)
// waits behind a latch opened once the running grid's first wave is resident, built again (arrange) while
// the pending stream was not yet released when the first running block retired. With pending_first the
// pending grid is neither held nor launched second: it is launched first, into an idle device.
saturation saturate(PrioritySched& t, const std::string& running, int running_priority, const std::string& pending,
                    int pending_priority, bool pending_first = false) {
  saturation s;
  s.arranged = t.arrange([&]() -> PrioritySched::attempt_end {
    sc::families::sched_latch latch(t);
    s.running_stream.emplace(t.make(stream_flags::non_blocking, running, running_priority));
    s.pending_stream.emplace(t.make(stream_flags::non_blocking, pending, pending_priority));
    s.pending = &t.grid(pending, *s.pending_stream, pending_priority, t.wave());
    s.running = &t.grid(running, *s.running_stream, running_priority, kRunningWaves * t.wave());
    if (!pending_first) latch.behind(*s.pending_stream);
    t.launch(*s.pending, *s.pending_stream);
    t.launch(*s.running, *s.running_stream);
    std::string not_built = latch.open_when_started(*s.running, pending_first ? 0 : t.wave());
    s.running_started_at_release = latch.started_at_release();
    return {not_built, s.running};
  });
  return s;
}

// SCHED-01's row, from the records of saturate(low, high): the high grid is dispatched completely before the
// low grid's pending blocks, and no low block starts while it is being dispatched. Records the dispatch figures.
sc::held_result high_dispatched_ahead_of_pending_low(const saturation& s) {
  const sc::block_records& low = s.running->host;
  const sc::block_records& high = s.pending->host;
  const std::uint64_t high_first_start = sc::first_start_ns(high);
  const std::uint64_t high_dispatched = sc::dispatch_complete_ns(high);
  const std::uint64_t low_dispatched = sc::dispatch_complete_ns(low);
  const std::size_t low_during = sc::started_within(low, high_first_start, high_dispatched);
  sc::observe("low.started_at_release", static_cast<int>(s.running_started_at_release));
  sc::observe("high.dispatch_us", static_cast<double>(high_dispatched - high_first_start) / 1000.0);
  sc::observe("low.blocks_started_during_high_dispatch", static_cast<unsigned long long>(low_during));
  sc::observe("low.blocks_started_after_high_dispatch",
              static_cast<unsigned long long>(low.size() - sc::started_before(low, high_dispatched + 1)));
  return decided(s.invalid_unless_pending("every low block had started before the latch opened: none was pending"),
                 high_dispatched < low_dispatched && low_during == 0,
                 "D(high) " + std::to_string(high_dispatched) + " vs D(low) " + std::to_string(low_dispatched) +
                     ", low blocks started during the high dispatch: " + std::to_string(low_during));
}

// SCHED-03's row: the first high block starts no sooner than the least remaining time of the low blocks resident
// when the latch opened (no preemption), and later only by the dispatch of a ready grid into a freed slot
// (ready_slack); on CUPTI's clock, from the timeline `t` of the saturation `s`.
sc::held_result dispatch_delay(const PrioritySched& test, const sc::timeline& t, const saturation& s,
                               const sc::claim& sched03) {
  std::uint64_t opened_ns = 0;
  for (const auto& e : t.host_events)
    if (e.label == test.in_attempt("latch opened")) opened_ns = e.start_ns;
  const auto low_items = t.labelled(test.in_attempt("low"));
  const auto high_items = t.labelled(test.in_attempt("high"));
  std::string missing;
  if (opened_ns == 0)
    missing = "the timeline has no \"" + test.in_attempt("latch opened") + "\" event";
  else if (low_items.size() != 1 || high_items.size() != 1 || low_items[0]->blocks.empty() ||
           high_items[0]->blocks.empty())
    missing = "the timeline lacks the grids' block records";
  std::uint64_t first_high = 0;
  std::uint64_t remaining = 0;
  if (missing.empty()) {
    first_high = sc::first_start_ns(high_items[0]->blocks);
    remaining = sc::least_remaining_ns(low_items[0]->blocks, opened_ns);
    if (remaining == 0) missing = "no low block was resident when the latch opened, on CUPTI's clock";
    const double delay_us = (static_cast<double>(first_high) - static_cast<double>(opened_ns)) / 1000.0;
    sc::observe("dispatch_delay_us", delay_us);
    sc::observe("least_remaining_low_block_us", static_cast<double>(remaining) / 1000.0);
    sc::observe("delay_minus_remaining_us", delay_us - static_cast<double>(remaining) / 1000.0);
  }
  // Mutation (expectation): the delay expected to be one block spin longer than the remaining time.
  const std::uint64_t expected_ns =
      opened_ns + remaining +
      sched03.mutate<std::uint64_t>(sc::mutation_kind::expectation, 0, sc::families::kBlockSpinNs);
  const sc::slack tol = test.stamp_slack();
  const sc::slack dispatch = test.ready_slack();
  const bool within = first_high + tol.ns() >= expected_ns && first_high <= expected_ns + dispatch.ns() + tol.ns();
  return decided(missing.empty() ? s.arranged.not_ready : missing, within,
                 "first high block " +
                     std::to_string(static_cast<long long>(first_high) - static_cast<long long>(opened_ns)) +
                     " ns after the latch opened, least remaining low block time " + std::to_string(remaining) +
                     " ns (at least that, less " + std::to_string(tol.ns()) + " ns, and at most " +
                     std::to_string(dispatch.ns()) + " ns more)");
}

// SCHED-09 (observed; RTSS17 App. A): the device can preempt (for time-slicing between contexts);
// HighGridPreemptsNothing shows that priorities within one context do not use it.
TEST_F(PrioritySched, ComputePreemptionIsSupported) {
  const sc::claim sched09("SCHED-09");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  int preemption = 0;
  SC_CHECK_CUDA(cudaDeviceGetAttribute(&preemption, cudaDevAttrComputePreemptionSupported, device()));
  const bool preempts = sched09.mutate(sc::mutation_kind::expectation, preemption != 0, preemption == 0);
  EXPECT_TRUE(sched09.matches_baseline("compute_preemption_supported", preempts));
}

// SCHED-02 (documented in 13.x: "do not preempt already-running work"): every slot was held by the low grid
// when the high grid became pending, so no high block may start before a low block retired, and no SM may ever
// hold more blocks of the two grids than fit.
TEST_F(PrioritySched, HighGridPreemptsNothing) {
  const sc::claim sched02("SCHED-02");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  const bool high_first = sched02.mutated(sc::mutation_kind::arrangement);
  const saturation s = saturate(*this, "low", least(), "high", greatest(), high_first);
  if (!s.judgeable()) return;
  const sc::block_records& low = s.running->host;
  const sc::block_records& high = s.pending->host;
  const sc::slack tol = stamp_slack();
  EXPECT_GE(sc::first_start_ns(high) + tol.ns(), sc::first_end_ns(low))
      << "a high-priority block started " << (sc::first_end_ns(low) - sc::first_start_ns(high))
      << " ns before the first low-priority block retired, while every slot was taken (" << tol << ")";
  EXPECT_LE(most_blocks_on_one_sm({residency(*s.running), residency(*s.pending)}), per_sm())
      << "an SM held more blocks of the two grids at once than fit on it (" << per_sm()
      << "): a resident block was preempted";
}

// SCHED-01 (observed; RTSS17 rule A2, driver docs: priority is a hint): once the low grid's first wave frees
// its slots, the pending high grid takes them: it is dispatched completely before the low grid's pending
// blocks, no low block starting meanwhile.
TEST_F(PrioritySched, HighGridTakesFreedSlotsAheadOfPendingLowBlocks) {
  const sc::claim sched01("SCHED-01");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  const int high_priority = sched01.mutated(sc::mutation_kind::arrangement) ? least() : greatest();
  const saturation s = saturate(*this, "low", least(), "high", high_priority);
  if (!s.judgeable()) return;
  EXPECT_TRUE(sched01.observed_row("high_grid_dispatched_ahead_of_pending_low_blocks",
                                   high_dispatched_ahead_of_pending_low(s)));
}

// SCHED-03 (observed; RTSS17; catalog Q3): from the latch opening (a host event on CUPTI's clock) to the first
// high block is the least remaining time of the low blocks resident then, plus a ready grid's dispatch
// (dispatch_delay).
TEST_F(PrioritySched, DispatchDelayIsTheRemainingBlockTime) {
  const sc::claim sched03("SCHED-03");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  const saturation s = saturate(*this, "low", least(), "high", greatest());
  if (!s.judgeable()) return;
  if (!recorder().enabled())
    return sched03.not_measured(
        "dispatch_delay_is_the_remaining_block_time",
        "CUPTI tracing unavailable (the latch opening is a host event on CUPTI's clock): " + sc::trace::state().reason);
  EXPECT_TRUE(sched03.observed_row("dispatch_delay_is_the_remaining_block_time",
                                   dispatch_delay(*this, recorder().collect(), s, sched03)));
}

// SCHED-12 (recorded; SIGM20, RTAS20): the first sms() blocks of the low grid's first wave start on sms()
// distinct SMs.
TEST_F(PrioritySched, FirstWaveStartsOnDistinctSms) {
  const sc::claim sched12("SCHED-12");
  if (least() == greatest()) GTEST_SKIP() << "the device has one stream priority level";
  // A recorded claim has no mutation: no value of it fails.
  const saturation s = saturate(*this, "low", least(), "high", greatest());
  if (!s.judgeable()) return;
  const std::size_t distinct = sc::distinct_sms_of_first(s.running->host, sms());
  sc::observe("low.first_wave_distinct_sms", static_cast<unsigned long long>(distinct));
  EXPECT_TRUE(sched12.matches_baseline("first_blocks_on_distinct_sms", distinct == sms()));
}

// SCHED-06 (observed; RTSS17 rules G2-G3, X1): at equal priority, a later grid's blocks start only once the
// earlier grid is fully dispatched (one FIFO, head of line).
TEST_F(PrioritySched, EqualPriorityIsFirstInFirstOut) {
  const sc::claim sched06("SCHED-06");
  const bool mutated = sched06.mutated(sc::mutation_kind::arrangement);
  const saturation s = saturate(*this, "earlier", least(), "later", mutated ? greatest() : least());
  if (!s.judgeable()) return;
  const sc::block_records& earlier = s.running->host;
  const sc::block_records& later = s.pending->host;
  const std::uint64_t earlier_dispatched = sc::dispatch_complete_ns(earlier);
  const std::size_t cut = sc::started_before(later, earlier_dispatched);
  sc::observe("later.blocks_started_before_earlier_dispatched", static_cast<unsigned long long>(cut));
  sc::observe("later.first_start_minus_earlier_dispatch_us",
              (static_cast<double>(sc::first_start_ns(later)) - static_cast<double>(earlier_dispatched)) / 1000.0);
  EXPECT_TRUE(sched06.observed_row(
      "later_grid_waits_for_earlier_dispatch",
      decided(s.invalid_unless_pending("every earlier block had started before the latch opened"), cut == 0,
              std::to_string(cut) + " later blocks started before the earlier grid's last")));
}

}  // namespace
