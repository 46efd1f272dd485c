// Instrument self-checks INST-01, -02, -03, -05, -08. Each records its figures (RecordProperty, the
// observation file, and <results>/instruments/INST-nn.json, merged into env.json at the end of the run).
#include "instruments.hpp"

#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/host_atomic.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using nlohmann::json;

using Instruments = sc::families::Instruments;

std::uint64_t monotonic_raw_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// Busy-polls a mapped word (no sleeps: the moment it changes is what is measured), with a deadline.
bool await_flag(std::uint32_t& word, std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (sc::load_acquire(word) == 0u)
    if (std::chrono::steady_clock::now() > until) return false;
  return true;
}

// INST-01 · PTX special registers (%globaltimer): the timer's tick is measured, and every tolerance of
// the suite is a number of these ticks.
TEST_F(Instruments, GlobaltimerTickIsMeasured) {
  const sc::claim inst01("INST-01");
  sc::mapped<sc::kernels::timer_probe> probe(1);
  sc::stream s = sc::stream::create(sc::stream_flags::non_blocking);
  const unsigned reads = inst01.mutate(sc::mutation_kind::arrangement, 4 * sc::kTimerProbeReads, 1u);
  SC_CHECK_CUDA(sc::kernels::launch_timer_probe(s.get(), probe.device(), reads));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  const sc::kernels::timer_probe p = *probe.host();

  // Reason for the bound: published ticks range from 32 ns (H200) to 1 us (A100); a tick above 4 us
  // would make the suite's 2-tick tolerances coarser than a kernel launch.
  constexpr std::uint64_t kLargestUsableTickNs = 4096;
  EXPECT_GT(p.steps, 0u) << "no %globaltimer step in " << p.reads << " reads";
  EXPECT_GT(p.min_step_ns, 0u);
  EXPECT_LE(p.min_step_ns, kLargestUsableTickNs);
  EXPECT_EQ(sc::device_timer().tick_ns, p.min_step_ns) << "the start-up calibration saw another tick";

  const json figures = {{"tick_ns", p.min_step_ns},
                        {"max_step_ns", p.max_step_ns},
                        {"reads", p.reads},
                        {"steps", p.steps},
                        {"cupti_active", sc::trace::state().enabled}};
  sc::observe("tick_ns", static_cast<unsigned long long>(p.min_step_ns));
  sc::observe("max_step_ns", static_cast<unsigned long long>(p.max_step_ns));
  inst01.record_instrument(figures);
  EXPECT_TRUE(inst01.matches_baseline("tick_ns", p.min_step_ns));
}

// One host/GPU clock pair: the GPU stamp read between two host clock reads.
struct clock_pair {
  std::uint64_t host_ns = 0;  // midpoint of the bracket
  std::uint64_t gpu_ns = 0;
  std::uint64_t bracket_ns = ~std::uint64_t{0};
};

// Of `samples` reads of a beacon stamp (normally its running one), the one with the tightest host bracket.
clock_pair tightest_pair(std::uint64_t& stamp, int samples) {
  clock_pair best;
  for (int i = 0; i < samples; ++i) {
    const std::uint64_t before = monotonic_raw_ns();
    const std::uint64_t gpu = sc::load_acquire(stamp);
    const std::uint64_t after = monotonic_raw_ns();
    if (gpu != 0 && after - before < best.bracket_ns)
      best = clock_pair{before + (after - before) / 2, gpu, after - before};
  }
  return best;
}

// INST-02 · EXAM task_host_utilities rate check: %globaltimer advances at the host's raw monotonic rate.
TEST_F(Instruments, GlobaltimerRateMatchesHostClock) {
  const sc::claim inst02("INST-02");
  // The stamps are read while the beacon runs: under synchronous launches it has ended before the first read.
  SC_REQUIRE(sc::requirement::async_launches);
  // Reason: 200 ms between the two clock pairs makes each pair's error (the bracket, microseconds) a few
  // parts in 1e5.
  constexpr std::uint64_t kSpanNs = 200'000'000;
  // Reason: pairs are taken from the running stamp near the start and near the end; 2000 reads at each
  // end take well under a millisecond and contain some read that was not interrupted.
  constexpr int kSamples = 2000;
  // Reason: durations in the suite are compared with slack of at least 2 ticks or 5 %; a rate error
  // below 1 % cannot flip any of them.
  constexpr double kRateTolerance = 0.01;
  sc::mapped<sc::kernels::beacon> beacon(1);
  sc::stream s = sc::stream::create(sc::stream_flags::non_blocking);
  SC_CHECK_CUDA(sc::kernels::launch_beacon(s.get(), beacon.device(), kSpanNs));
  ASSERT_TRUE(await_flag(beacon.host()->started, std::chrono::seconds{2})) << "beacon kernel never started";
  const clock_pair first = tightest_pair(beacon.host()->now_ns, kSamples);
  // Let most of the span pass: wait (busy, no sleep) until the GPU stamp is 90 % of the way.
  const std::uint64_t gpu_start = sc::load_acquire(beacon.host()->start_ns);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  while (sc::load_acquire(beacon.host()->now_ns) - gpu_start < kSpanNs / 10 * 9)
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the beacon's stamp stopped advancing";
  const bool stale = inst02.mutated(sc::mutation_kind::arrangement);
  const clock_pair last = tightest_pair(stale ? beacon.host()->start_ns : beacon.host()->now_ns, kSamples);
  // A pair read after the beacon ended holds a stamp that had stopped: no rate can be made of it.
  const bool ended_before_read = sc::load_acquire(beacon.host()->done) != 0;
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  if (ended_before_read) {
    const sc::gated_result invalid = sc::invalid_check(
        "the beacon had ended when the second clock pair was read, so its stamp had stopped: no rate");
    FAIL() << invalid.message();
  }

  const double gpu_ns = static_cast<double>(static_cast<std::int64_t>(last.gpu_ns - first.gpu_ns));
  const double host_ns = static_cast<double>(last.host_ns - first.host_ns);
  const double rate = gpu_ns / host_ns;
  sc::observe("rate", rate);
  sc::observe("gpu_ns", gpu_ns);
  sc::observe("host_ns", host_ns);
  sc::observe("bracket_ns.first", static_cast<unsigned long long>(first.bracket_ns));
  sc::observe("bracket_ns.last", static_cast<unsigned long long>(last.bracket_ns));
  inst02.record_instrument({{"rate", rate},
                            {"gpu_ns", gpu_ns},
                            {"host_ns", host_ns},
                            {"bracket_ns", {first.bracket_ns, last.bracket_ns}},
                            {"host_clock", "CLOCK_MONOTONIC_RAW"},
                            {"tolerance", kRateTolerance},
                            {"cupti_active", sc::trace::state().enabled}});
  EXPECT_NEAR(1.0, rate, kRateTolerance) << "%globaltimer ran " << gpu_ns << " ns while the host saw " << host_ns;
}

// INST-03 · hip-tests utils.hh failure mode: the spin kernel lasts what it was asked, by %globaltimer,
// never by SM cycles.
TEST_F(Instruments, SpinKernelHitsRequestedDuration) {
  const sc::claim inst03("INST-03");
  constexpr std::uint64_t kRequestedNs = 5'000'000;
  // Reason: the loop ends at the first read past the target, then a barrier and one more read; a block
  // descheduled during the spin would overshoot by far more than this.
  const sc::slack overshoot = sc::ticks(32, "loop exit read, barrier and final read");
  // Reason: cudaEventElapsedTime has "a resolution of around 0.5 microseconds".
  constexpr double kEventResolutionMs = 0.0005;
  sc::mapped<sc::kernels::block_record> record(1);
  sc::stream s = sc::stream::create(sc::stream_flags::non_blocking);
  sc::event before = sc::event::create();
  sc::event after = sc::event::create();
  SC_CHECK_CUDA(cudaEventRecord(before.get(), s.get()));
  SC_CHECK_CUDA(sc::kernels::launch_spin(
      s.get(), record.device(), 1, 128, inst03.mutate(sc::mutation_kind::arrangement, kRequestedNs, kRequestedNs / 2)));
  SC_CHECK_CUDA(cudaEventRecord(after.get(), s.get()));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  float event_ms = 0;
  SC_CHECK_CUDA(cudaEventElapsedTime(&event_ms, before.get(), after.get()));

  const sc::kernels::block_record r = *record.host();
  const std::uint64_t spun = r.t1_ns - r.t0_ns;
  sc::observe("spin_ns", static_cast<unsigned long long>(spun));
  // The kernel ran (a tool checks it); an instrumented loop's overshoot is the tool's, not the instrument's.
  SC_REQUIRE(sc::requirement::uninstrumented_kernels);
  EXPECT_GE(spun, kRequestedNs);
  EXPECT_LE(spun, kRequestedNs + overshoot.ns()) << "slack " << overshoot;
  EXPECT_GE(static_cast<double>(event_ms) + kEventResolutionMs, static_cast<double>(kRequestedNs) / 1e6);
  sc::observe("event_ms", static_cast<double>(event_ms));
  sc::observe("max_gap_ns", static_cast<unsigned long long>(r.max_gap_ns));
  inst03.record_instrument({{"requested_ns", kRequestedNs},
                            {"spin_ns", spun},
                            {"event_ms", event_ms},
                            {"overshoot_ns", spun - kRequestedNs},
                            {"max_gap_ns", r.max_gap_ns}});
}

// INST-05 · GTRACE launch latency: the cost of a launch is recorded; "immediately" in the suite's
// windows is measured against it.
TEST_F(Instruments, LaunchCostIsRecorded) {
  const sc::claim inst05("INST-05");
  constexpr int kLaunches = 1000;
  // Reason: the gate windows (20 ms absence) assume launches cost microseconds; at 100 us a window
  // still spans 200 launches. Below 50 ns per launch the events did not bracket the launches.
  constexpr double kMaxLaunchUs = 100.0;
  constexpr double kMinLaunchUs = 0.05;
  sc::stream s = sc::stream::create(sc::stream_flags::non_blocking);
  sc::event before = sc::event::create();
  sc::event after = sc::event::create();
  SC_CHECK_CUDA(sc::kernels::launch_empty(s.get()));  // warm
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  const bool bracket =
      !inst05.mutated(sc::mutation_kind::arrangement);  // mutation: record both events before the launches
  SC_CHECK_CUDA(cudaEventRecord(before.get(), s.get()));
  if (!bracket) SC_CHECK_CUDA(cudaEventRecord(after.get(), s.get()));
  const auto host_start = std::chrono::steady_clock::now();
  for (int i = 0; i < kLaunches; ++i) SC_CHECK_CUDA(sc::kernels::launch_empty(s.get()));
  const auto host_end = std::chrono::steady_clock::now();
  if (bracket) SC_CHECK_CUDA(cudaEventRecord(after.get(), s.get()));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  float ms = 0;
  SC_CHECK_CUDA(cudaEventElapsedTime(&ms, before.get(), after.get()));
  const double gpu_us = static_cast<double>(ms) * 1000.0 / kLaunches;
  const double host_us = std::chrono::duration<double, std::micro>(host_end - host_start).count() / kLaunches;
  sc::observe("gpu_us_per_launch", gpu_us);
  sc::observe("host_enqueue_us_per_launch", host_us);
  // The launches ran; under a tool their cost is the tool's (racecheck on an H100: 5 ms per empty launch).
  SC_REQUIRE(sc::requirement::uninstrumented_kernels);
  inst05.record_instrument({{"launches", kLaunches},
                            {"gpu_us_per_launch", gpu_us},
                            {"host_enqueue_us_per_launch", host_us},
                            {"cupti_active", sc::trace::state().enabled}});
  EXPECT_GT(gpu_us, kMinLaunchUs);
  EXPECT_LT(gpu_us, kMaxLaunchUs);
}

// INST-08 · PTX %smid, %nsmid: %smid < %nsmid; recorded at block start and end because it may change
// after preemption.
TEST_F(Instruments, SmIdsAreBelowNsmidAndRecordedAtBothEnds) {
  const sc::claim inst08("INST-08");
  const unsigned blocks = static_cast<unsigned>(properties().multiProcessorCount);
  sc::mapped<sc::kernels::block_record> records(blocks);
  sc::stream s = sc::stream::create(sc::stream_flags::non_blocking);
  const unsigned launched = inst08.mutate(sc::mutation_kind::arrangement, blocks, blocks - 1);
  SC_CHECK_CUDA(sc::kernels::launch_spin(s.get(), records.device(), launched, 1024, 1'000'000));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  std::set<std::uint32_t> distinct;
  unsigned moved = 0;
  for (unsigned b = 0; b < blocks; ++b) {
    const auto& r = records.host()[b];
    EXPECT_LT(r.sm_begin, r.nsmid) << "block " << b;
    EXPECT_LT(r.sm_end, r.nsmid) << "block " << b;
    distinct.insert(r.sm_begin);
    moved += r.sm_begin != r.sm_end;
  }
  sc::observe("blocks", static_cast<int>(blocks));
  sc::observe("distinct_sms", static_cast<int>(distinct.size()));
  sc::observe("blocks_that_changed_sm", static_cast<int>(moved));
  sc::observe("nsmid", static_cast<int>(records.host()[0].nsmid));
  inst08.record_instrument({{"blocks", blocks},
                            {"distinct_sms", distinct.size()},
                            {"blocks_that_changed_sm", moved},
                            {"nsmid", records.host()[0].nsmid},
                            {"sm_count", properties().multiProcessorCount}});
}

}  // namespace
