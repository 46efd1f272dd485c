#include "priority_sched.hpp"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "sc/fixtures/calibration.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/host_atomic.hpp"
#include "sc/fixtures/observe.hpp"
#include "sc/fixtures/sharing.hpp"
#include "sc/kernels/launch.hpp"

namespace sc::families {

void PrioritySched::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  // Grids are left pending behind a latch (the arrangement every scheduling test is built on), and which
  // grid is pending where depends on independent hardware queues.
  SC_REQUIRE(requirement::async_launches);
  SC_REQUIRE(requirement::own_connection_count);
  threads_ = static_cast<unsigned>(std::min(1024, properties().maxThreadsPerBlock));
  int per_sm = 0;
  SC_CHECK_CUDA(kernels::sched_spin_occupancy(threads_, &per_sm));
  ASSERT_GT(per_sm, 0) << "the scheduling grid does not fit on an SM with " << threads_ << " threads";
  per_sm_ = static_cast<unsigned>(per_sm);
  sms_ = static_cast<unsigned>(properties().multiProcessorCount);
  SC_CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least_, &greatest_));
  ready_words_ = device_buffer<std::uint32_t>(kernels::kReadyWords);
  begin_readiness();
  observe("grid.threads", static_cast<int>(threads_));
  observe("grid.blocks_per_sm", per_sm);
  observe("grid.wave_blocks", static_cast<int>(wave()));
  observe("grid.block_spin_ns", static_cast<unsigned long long>(kBlockSpinNs));
  observe("priority.least", least_);
  observe("priority.greatest", greatest_);
  observe("limits.max_threads_per_sm", properties().maxThreadsPerMultiProcessor);
  observe("limits.max_blocks_per_sm", properties().maxBlocksPerMultiProcessor);
}

sched_grid& PrioritySched::grid(const std::string& label, const stream& s, int priority, unsigned blocks,
                                unsigned threads, std::uint64_t spin_ns, std::uint64_t stagger_ns, unsigned cluster) {
  sched_grid& g = grids_.emplace_back();
  g.label = label;
  g.stream = s.name();
  g.priority = priority;
  g.blocks = blocks;
  g.threads = threads == 0 ? threads_ : threads;
  g.cluster = cluster;
  g.records = device_buffer<kernels::block_record>(blocks);
  zero(g.records.data(), blocks * sizeof(kernels::block_record));
  g.started = mapped<std::uint32_t>(blocks);
  std::fill(g.started.host(), g.started.host() + blocks, 0u);
  g.plan.spin_ns = spin_ns;
  g.plan.stagger_ns = stagger_ns;
  g.plan.arrivals = nullptr;
  g.plan.arrival_slots = 0;
  if (stagger_ns != 0) {
    // %smid values lie below %nsmid, which may exceed the SM count: room for four times the SMs.
    const std::size_t slots = 4 * static_cast<std::size_t>(sms_) + 64;
    g.arrivals = device_buffer<std::uint32_t>(slots);
    zero(g.arrivals.data(), slots * sizeof(std::uint32_t));
    g.plan.arrivals = g.arrivals.data();
    g.plan.arrival_slots = static_cast<std::uint32_t>(slots);
  }
  g.plan.started = g.started.device();
  g.plan.ready = ready_words_.data();
  g.plan.ready_count = kernels::kReadyWords;
  return g;
}

void PrioritySched::zero(void* p, std::size_t bytes) {
  // A plain cudaMemset goes into the legacy stream, which no non-blocking grid stream waits for: under
  // time-slicing one landed after the highest-priority grid had run and wiped its records.
  if (!zeroing_) zeroing_ = make(stream_flags::non_blocking, "zeroing");
  SC_CHECK_CUDA(cudaMemsetAsync(p, 0, bytes, zeroing_->get()));
  SC_CHECK_CUDA(synchronize_within(*zeroing_, kWorkDeadline));
}

void PrioritySched::launch(sched_grid& g, const stream& s) {
  const auto label = recorder().label(in_attempt(g.label));
  SC_CHECK_CUDA(kernels::launch_sched_spin(s.get(), g.records.data(), g.blocks, g.threads, g.plan, g.cluster));
  g.launched = true;
}

unsigned PrioritySched::started(const sched_grid& g) const {
  unsigned n = 0;
  for (unsigned b = 0; b < g.blocks; ++b) n += load_acquire(g.started.host()[b]) != 0u ? 1u : 0u;
  return n;
}

bool PrioritySched::wait_started(const sched_grid& g, unsigned n) {
  const auto deadline = std::chrono::steady_clock::now() + kWaveDeadline;
  while (started(g) < n) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << g.label << ": only " << started(g) << " of " << n << " blocks started within "
                    << kWaveDeadline.count() << " ms";
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

sched_latch::sched_latch(PrioritySched& t) : t_(t), s_(t.make(stream_flags::non_blocking, "latch")) {
  t_.begin_readiness(&s_);
  t_.hold(latch_, s_);
  opened_ = event::create(event_flags::disable_timing);
  SC_CHECK_CUDA(cudaEventRecord(opened_.get(), s_.get()));
}

void sched_latch::behind(const stream& s) const {
  SC_CHECK_CUDA(cudaStreamWaitEvent(s.get(), opened_.get(), 0));
  t_.write_ready_word(s);
}

void PrioritySched::begin_readiness(const stream* s) {
  // Before the arrangement's first launch, and finished before it: no block may read a word of the last one.
  SC_CHECK_CUDA(cudaMemsetAsync(ready_words_.data(), 0, kernels::kReadyWords * sizeof(std::uint32_t),
                                s != nullptr ? s->get() : nullptr));
  SC_CHECK_CUDA(s != nullptr ? cudaStreamSynchronize(s->get()) : cudaDeviceSynchronize());
  released_ = 0;
  ready_problem_.clear();
}

void PrioritySched::write_ready_word(const stream& s) {
  if (released_ >= kernels::kReadyWords)
    throw std::logic_error("PrioritySched: more streams behind the latch than ready words");
  // The stream's front end writes the word (cuStreamWriteValue32 takes no SM), so it lands as soon as the
  // stream has passed its wait, even while every SM is full.
  const CUresult code = driver().cuStreamWriteValue32(
      s.get(), reinterpret_cast<CUdeviceptr>(ready_words_.data() + released_), 1u, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (code != CUDA_SUCCESS && ready_problem_.empty()) {
    const char* name = nullptr;
    driver().cuGetErrorName(code, &name);
    ready_problem_ = std::string("cuStreamWriteValue32 failed (") + (name != nullptr ? name : "unknown") + ")";
  }
  ++released_;
}

std::string sched_latch::open_when_started(const sched_grid& running, unsigned n) {
  held_window w(latch_);
  std::string why = w.started() ? std::string() : "the latch did not start: " + w.why_not();
  if (why.empty() && n > 0 && !t_.wait_started(running, n))
    why = running.label + ": " + std::to_string(n) + " blocks did not start in time";
  started_at_release_ = t_.started(running);
  t_.recorder().host_event(t_.in_attempt("latch opened"));
  w.release();
  return why;
}

residency_input PrioritySched::residency(const sched_grid& g) { return {&g.host, g.threads, g.label}; }

std::uint32_t PrioritySched::most_blocks_on_one_sm(const std::vector<residency_input>& grids) {
  std::uint32_t most = 0;
  for (const residency_peak& p : residency_peaks(grids)) most = std::max(most, p.blocks);
  return most;
}

slack PrioritySched::stamp_slack() const {
  return ticks(4,
               "block stamps are %globaltimer reads on different SMs; the timer advances in ticks, so two "
               "ordered events may read the same value or, read on either side of an update, one tick apart");
}

bool PrioritySched::dispatched_before(const sched_grid& first, const sched_grid& then) const {
  return dispatch_complete_ns(first.host) <= first_start_ns(then.host) + stamp_slack().ns();
}

slack PrioritySched::ready_slack() const {
  const std::uint64_t tick = std::max<std::uint64_t>(device_timer().tick_ns, 1);
  // 100 us: a ready grid starts within about a microsecond of a slot freeing (SCHED-03: 0.5 us after the
  // remaining block time); a pending grid still waiting for the latch's release takes milliseconds.
  return ticks((100'000 + tick - 1) / tick,
               "dispatch of a ready grid into a freed slot takes microseconds; "
               "100 us later the grid was not ready yet");
}

std::string PrioritySched::ready_when_room(const sched_grid& running) const {
  if (!ready_problem_.empty()) return "the pending streams' release cannot be shown: " + ready_problem_;
  const kernels::block_record* first = nullptr;
  for (const auto& b : running.host)
    if (b.t1_ns != 0 && (first == nullptr || b.t1_ns < first->t1_ns)) first = &b;
  if (first == nullptr) return running.label + " has no block record";
  const std::uint32_t all = released_ >= kernels::kReadyWords ? ~0u : (1u << released_) - 1u;
  const std::uint32_t seen = first->ready_seen & all;
  unsigned count = 0;
  for (std::uint32_t bits = seen; bits != 0; bits &= bits - 1) ++count;
  observe("pending.streams_behind_latch", static_cast<int>(released_));
  observe("pending.streams_released_at_first_free_slot", static_cast<int>(count));
  if (seen == all) return {};
  std::ostringstream why;
  why << "when the first block of " << running.label << " retired, " << count << " of " << released_
      << " streams behind the latch had been released: the other grids were not ready when room appeared, so "
      << "the order shows when the latch's release reached each stream, not their priorities";
  return why.str();
}

bool PrioritySched::collect() {
  if (collected_) return judged_;
  collected_ = true;
  drain();
  std::vector<chart_grid> chart;
  std::vector<residency_input> inputs;
  for (sched_grid& g : grids_) {
    if (!g.launched) continue;
    g.host.resize(g.blocks);
    SC_CHECK_CUDA(
        cudaMemcpy(g.host.data(), g.records.data(), g.blocks * sizeof(kernels::block_record), cudaMemcpyDeviceToHost));
    const auto unwritten = std::count_if(g.host.begin(), g.host.end(), [](const auto& b) { return b.t1_ns == 0; });
    EXPECT_EQ(0, unwritten) << g.label << ": blocks without a record (the grid did not run to the end)";
    recorder().blocks(in_attempt(g.label), g.host.data(), g.host.size());
    chart.push_back({in_attempt(g.label), g.stream, "", g.priority, g.threads, &g.host});
    inputs.push_back(residency(g));
    observe(g.label + ".priority", g.priority);
    observe(g.label + ".blocks", static_cast<int>(g.blocks));
    const std::uint64_t gap = widest_gap_ns(g.host);
    observe(g.label + ".widest_gap_ns", static_cast<unsigned long long>(gap));
    sc::note_kernel_gap(gap, "a block of " + in_attempt(g.label));
    observe(g.label + ".moved_blocks", static_cast<unsigned long long>(moved_blocks(g.host)));
  }
  write_block_chart(chart, properties(), least_, greatest_);
  // Under a tool the records show the tool's scheduling (racecheck: more blocks on an SM than fit).
  if (const std::string why = unmet(requirement::uninstrumented_kernels); !why.empty()) {
    observe("verdicts", "not judged: " + why);
    [&] { GTEST_SKIP() << why; }();
    return judged_ = false;
  }
  EXPECT_TRUE(residency_verdict(inputs, properties(), "residency"));
  // Another context on the GPU (sharing.hpp): its blocks were time-sliced with these, and no block-level row
  // can say what this context's scheduling did.
  if (skip_if_gpu_shared()) return judged_ = false;
  return judged_ = true;
}

std::string PrioritySched::in_attempt(const std::string& name) const {
  return attempt_ == 1 ? name : name + " (attempt " + std::to_string(attempt_) + ")";
}

bool PrioritySched::arrangement::judgeable() const {
  if (!judged) return false;
  [&] { ASSERT_TRUE(not_built.empty()) << not_built; }();
  return not_built.empty();
}

PrioritySched::arrangement PrioritySched::arrange(const std::function<attempt_end()>& attempt) {
  // Every grid of the test is the arrangement's: an attempt put aside frees them all.
  if (arranged_ || !grids_.empty()) throw std::logic_error("PrioritySched::arrange: once per test, before any grid");
  arranged_ = true;
  for (;;) {
    const attempt_end end = attempt();
    arrangement out;
    out.judged = collect();
    out.not_built = end.not_built;
    if (out.judged && out.not_built.empty() && end.room != nullptr) out.not_ready = ready_when_room(*end.room);
    if (out.not_ready.empty() || HasFailure() || attempt_ >= kArrangementAttempts) {
      observe("arrangement.attempts", attempt_);
      return out;
    }
    observe("arrangement.attempt" + std::to_string(attempt_) + ".not_ready", out.not_ready);
    // collect() drained the device and kept what the records showed; the next attempt starts from nothing.
    if (!collected_) drain();
    grids_.clear();
    collected_ = false;
    judged_ = true;
    ++attempt_;
  }
}

PrioritySched::fill_arrangement PrioritySched::arrange_behind_fill(const std::vector<pending_grid>& pending) {
  fill_arrangement out;
  static_cast<arrangement&>(out) = arrange([&]() -> attempt_end {
    sched_latch latch(*this);
    const stream fs = make(stream_flags::non_blocking, "fill", least_);
    out.fill = &grid("fill", fs, least_, wave(), 0, kFillSpinNs);
    std::vector<stream> streams;
    streams.reserve(pending.size());
    out.pending.clear();
    for (const pending_grid& p : pending) {
      streams.push_back(make(stream_flags::non_blocking, p.label, p.stream_priority));
      out.pending.push_back(&grid(p.label, streams.back(), p.priority, p.blocks));
    }
    // The grids launched as graphs are captured first: nothing of the arrangement runs yet.
    std::vector<std::optional<graph_exec>> graphs(pending.size());
    for (std::size_t i = 0; i < pending.size(); ++i) {
      if (!pending[i].captured_at) continue;
      const stream recording = make(stream_flags::non_blocking, pending[i].label + ".capture", *pending[i].captured_at);
      const sched_grid& g = *out.pending[i];
      graph captured;
      {
        capture c(recording, cudaStreamCaptureModeThreadLocal);
        SC_CHECK_CUDA(
            kernels::launch_sched_spin(recording.get(), g.records.data(), g.blocks, g.threads, g.plan, g.cluster));
        SC_CHECK_CUDA(c.end(captured));
      }
      std::size_t count = 1;
      cudaGraphNode_t node = nullptr;
      SC_CHECK_CUDA(cudaGraphGetNodes(captured.get(), &node, &count));
      cudaLaunchAttributeValue value{};
      const cudaError_t asked =
          count == 1 ? cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributePriority, &value) : cudaSuccess;
      sc::clear_last_error();
      const std::string key = pending[i].label + ".node_priority";
      if (count != 1)
        observe(key, "not read: the capture has " + std::to_string(count) + " nodes, not one");
      else if (asked != cudaSuccess)
        observe(key, "not read: " + error_name(asked));
      else
        observe(key, value.priority);
      graphs[i] = graph_exec::instantiate(captured, pending[i].instantiate_flags);
    }
    launch(*out.fill, fs);
    const event first_done = event::create(event_flags::disable_timing);
    for (std::size_t i = 0; i < pending.size(); ++i) {
      latch.behind(streams[i]);
      if (i > 0 && pending[i].after_first) SC_CHECK_CUDA(cudaStreamWaitEvent(streams[i].get(), first_done.get(), 0));
      if (graphs[i]) {
        const auto label = recorder().label(in_attempt(out.pending[i]->label));
        SC_CHECK_CUDA(graphs[i]->launch(streams[i]));
        out.pending[i]->launched = true;
      } else {
        launch(*out.pending[i], streams[i]);
      }
      if (i == 0) SC_CHECK_CUDA(cudaEventRecord(first_done.get(), streams[0].get()));
    }
    return {latch.open_when_started(*out.fill, wave()), out.fill};
  });
  if (!out.judged || !out.not_built.empty()) return out;
  std::uint64_t first = 0;
  for (const sched_grid* g : out.pending) {
    const std::uint64_t t = first_start_ns(g->host);
    if (t != 0) first = first == 0 ? t : std::min(first, t);
  }
  observe("pending.first_start_after_first_free_slot_us",
          (static_cast<double>(first) - static_cast<double>(first_end_ns(out.fill->host))) / 1000.0);
  return out;
}

held_result decided(bool holds, const std::string& what) {
  return {holds ? held_outcome::holds : held_outcome::does_not_hold, what};
}

held_result decided(const std::string& invalid_reason, bool holds, const std::string& what) {
  if (!invalid_reason.empty()) return invalid_check(what + ": " + invalid_reason);
  return decided(holds, what);
}

void write_block_chart(const std::vector<chart_grid>& grids, const cudaDeviceProp& properties, int least,
                       int greatest) {
  std::uint64_t base = 0;
  for (const chart_grid& g : grids)
    if (g.records != nullptr)
      for (const auto& b : *g.records)
        if (b.t1_ns != 0) base = (base == 0 || b.t0_ns < base) ? b.t0_ns : base;
  nlohmann::json out = {{"clock", "globaltimer"},
                        {"base_ns", base},
                        {"sms", properties.multiProcessorCount},
                        {"max_threads_per_sm", properties.maxThreadsPerMultiProcessor},
                        {"max_blocks_per_sm", properties.maxBlocksPerMultiProcessor},
                        {"priority_least", least},
                        {"priority_greatest", greatest},
                        {"grids", nlohmann::json::array()}};
  for (const chart_grid& g : grids) {
    nlohmann::json rows = nlohmann::json::array();
    if (g.records != nullptr)
      for (const auto& b : *g.records) {
        if (b.t1_ns == 0) continue;
        rows.push_back({b.t0_ns - base, b.t1_ns - base, b.sm_begin, b.sm_end, b.max_gap_ns});
      }
    out["grids"].push_back({{"label", g.label},
                            {"stream", g.stream},
                            {"process", g.process},
                            {"priority", g.priority},
                            {"threads", g.threads},
                            {"fields", {"t0", "t1", "sm0", "sm1", "max_gap"}},
                            {"records", std::move(rows)}});
  }
  sc::record_block_chart(out);
}

::testing::AssertionResult residency_verdict(const std::vector<residency_input>& grids,
                                             const cudaDeviceProp& properties, const std::string& key) {
  // SCHED-13 is claimed by a test that judges something; one of recorded values alone checks its records the
  // same way (wrong records still fail it) and stays recorded.
  std::optional<claim> sched13;
  if (sc::has_claim_of_kind(verdict_kind::observed) || sc::has_claim_of_kind(verdict_kind::documented))
    sched13.emplace("SCHED-13", verdict_kind::documented,
                    "RT cudaDeviceProp maxThreadsPerMultiProcessor, maxBlocksPerMultiProcessor");
  // Mutation SCHED-13 (expectation): the limit taken as one block per SM.
  const bool mutated = sched13 && sched13->mutated(mutation_kind::expectation);
  return within_residency_limits(grids, properties, key, mutated ? 1 : properties.maxBlocksPerMultiProcessor);
}

::testing::AssertionResult within_residency_limits(const std::vector<residency_input>& grids,
                                                   const cudaDeviceProp& properties, const std::string& key,
                                                   int block_limit) {
  const std::vector<residency_peak> peaks = residency_peaks(grids);
  std::uint32_t most_blocks = 0;
  std::uint64_t most_threads = 0;
  std::ostringstream over;
  std::size_t over_count = 0;
  for (const residency_peak& p : peaks) {
    most_blocks = std::max(most_blocks, p.blocks);
    most_threads = std::max(most_threads, p.threads);
    if (p.blocks > static_cast<std::uint32_t>(block_limit) ||
        p.threads > static_cast<std::uint64_t>(properties.maxThreadsPerMultiProcessor)) {
      // The first few SMs say what happened; the rest are counted.
      if (++over_count <= 4)
        over << " SM " << p.sm << ": " << p.blocks << " blocks / " << p.threads << " threads (" << p.grids
             << " grids at once, t=" << p.at_ns << ");";
    }
  }
  observe(key + ".most_blocks_on_one_sm", static_cast<unsigned long long>(most_blocks));
  observe(key + ".most_threads_on_one_sm", static_cast<unsigned long long>(most_threads));
  observe(key + ".sms_with_records", static_cast<unsigned long long>(peaks.size()));
  if (over_count == 0) return ::testing::AssertionSuccess();
  if (over_count > 4) over << " and " << over_count - 4 << " more SMs;";
  return ::testing::AssertionFailure()
         << "more blocks or threads resident on one SM than the device allows (maxBlocksPerMultiProcessor "
         << block_limit << ", maxThreadsPerMultiProcessor " << properties.maxThreadsPerMultiProcessor
         << "); within one context that means the records are wrong "
         << "or blocks were time-sliced:" << over.str();
}

}  // namespace sc::families
