#include "copy_overlap.hpp"

#include <algorithm>

#include "sc/fixtures/event.hpp"
#include "sc/fixtures/observe.hpp"
#include "sc/fixtures/trace.hpp"
#include "sc/kernels/launch.hpp"

namespace sc::families {

pageable::pageable(std::size_t bytes, std::uint32_t value)
    : bytes_(bytes), words_(new std::uint32_t[bytes / sizeof(std::uint32_t)]) {
  std::fill(words_.get(), words_.get() + size(), value);
}

void CopyOverlap::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  // Every test holds a stream with a latch while it checks a copy (asynchronous launches), and orderings
  // and overlaps across streams need independent hardware queues.
  SC_REQUIRE(requirement::async_launches);
  SC_REQUIRE(requirement::own_connection_count);
  observe("async_engine_count", properties().asyncEngineCount);
  observe("pageable_memory_access", properties().pageableMemoryAccess);
  observe("concurrent_kernels", properties().concurrentKernels);
  observe("copy_bytes", static_cast<unsigned long long>(kCopyBytes));
  recorder().track(stream::legacy());
}

cudaError_t CopyOverlap::copy(const std::string& label, void* dst, const void* src, std::size_t bytes,
                              cudaMemcpyKind kind, const stream& s) {
  const auto scope = recorder().label(label);
  return cudaMemcpyAsync(dst, src, bytes, kind, s.get());
}

cudaError_t CopyOverlap::memset(const std::string& label, void* dst, int value, std::size_t bytes, const stream& s) {
  const auto scope = recorder().label(label);
  return cudaMemsetAsync(dst, value, bytes, s.get());
}

void CopyOverlap::count_mismatches(const std::string& label, const std::uint32_t* data, std::size_t n,
                                   std::uint32_t expected, std::uint32_t* mismatches, const stream& s) {
  const auto scope = recorder().label(label);
  SC_CHECK_CUDA(kernels::launch_count_mismatches(s.get(), data, static_cast<std::uint32_t>(n), expected, mismatches));
}

held_result CopyOverlap::completes_beside_latch(const stream& held, const std::string& what,
                                                const std::function<cudaError_t()>& work) {
  thread_probe done(what, work);
  latch g;  // declared after the probe: opened before the probe's thread is joined
  hold(g, held);
  held_window w(g);
  done.start();
  const held_result result = w.present(done.returned(), kCopyDeadline);
  w.release();
  EXPECT_TRUE(done.join_within(kWorkDeadline)) << what << " did not finish after the latch opened";
  drain();
  EXPECT_CUDA_EQ(cudaSuccess, done.code()) << what << ": " << done.failure();
  return result;
}

held_result CopyOverlap::copy_completes_beside_latch(const stream& held, const std::string& what,
                                                     const std::string& label, void* dst, const void* src,
                                                     cudaMemcpyKind kind, const stream& target) {
  return completes_beside_latch(held, what + " in " + target.name() + " and its synchronize", [&] {
    const cudaError_t code = copy(label, dst, src, kCopyBytes, kind, target);
    return code == cudaSuccess ? cudaStreamSynchronize(target.get()) : code;
  });
}

return_observation CopyOverlap::held_call(const stream& s, const std::function<cudaError_t()>& call,
                                          std::chrono::milliseconds window) {
  const return_observation seen = call_while_holding(s, call, window);
  drain();
  EXPECT_CUDA_EQ(cudaSuccess, seen.code);
  return seen;
}

return_observation CopyOverlap::held_call(const stream& s, const std::string& took_key,
                                          const std::function<cudaError_t()>& call, std::chrono::milliseconds window) {
  const return_observation seen = held_call(s, call, window);
  observe(took_key, static_cast<long long>(seen.took.count()));
  return seen;
}

cudaError_t CopyOverlap::sync_copy(const std::string& label, void* dst, const void* src, std::size_t bytes,
                                   cudaMemcpyKind kind) {
  const auto scope = recorder().label(label);
  return cudaMemcpy(dst, src, bytes, kind);
}

void CopyOverlap::hold_behind(latch& g, const stream& latch_stream, const std::vector<const stream*>& waiters) {
  hold(g, latch_stream);
  // The event may go once the waits are made: they still hold (EVT-10).
  const event opened = event::create(event_flags::disable_timing);
  SC_CHECK_CUDA(cudaEventRecord(opened.get(), latch_stream.get()));
  for (const stream* w : waiters) SC_CHECK_CUDA(cudaStreamWaitEvent(w->get(), opened.get(), 0));
}

std::string CopyOverlap::untraced_reason() const {
  const auto& state = trace::state();
  if (state.enabled) return "";
  return "CUPTI tracing is off (" + (state.reason.empty() ? std::string("no reason given") : state.reason) + ")";
}

const timeline_item* CopyOverlap::one(const sc::timeline& t, const std::string& label) {
  const auto found = t.labelled(label);
  EXPECT_EQ(1u, found.size()) << "timeline items labelled '" << label << "'";
  return found.size() == 1 ? found[0] : nullptr;
}

double CopyOverlap::covered_fraction(const timeline_item& a, const timeline_item& b) {
  if (a.end_ns <= a.start_ns) return 0.0;
  const std::uint64_t lo = std::max(a.start_ns, b.start_ns);
  const std::uint64_t hi = std::min(a.end_ns, b.end_ns);
  return hi > lo ? static_cast<double>(hi - lo) / static_cast<double>(a.end_ns - a.start_ns) : 0.0;
}

double CopyOverlap::shorter_covered_by_other(const timeline_item& a, const timeline_item& b) {
  const bool a_shorter = a.end_ns - a.start_ns <= b.end_ns - b.start_ns;
  return a_shorter ? covered_fraction(a, b) : covered_fraction(b, a);
}

std::size_t CopyOverlap::count_other_than(const std::uint32_t* words, std::size_t n, std::uint32_t value) {
  std::size_t other = 0;
  for (std::size_t i = 0; i < n; ++i) other += words[i] != value;
  return other;
}

double CopyOverlap::gbps(const timeline_item& c) {
  return c.end_ns > c.start_ns ? static_cast<double>(c.bytes) / static_cast<double>(c.end_ns - c.start_ns) : 0.0;
}

void CopyOverlap::observe_copy(const std::string& key, const timeline_item& c) {
  observe(key + ".gbps", gbps(c));
  observe(key + ".duration_us", static_cast<double>(c.end_ns - c.start_ns) / 1000.0);
  observe(key + ".bytes", static_cast<unsigned long long>(c.bytes));
  observe(key + ".kinds", c.copy_kind + " " + c.src_kind + "->" + c.dst_kind);
  if (!c.channel_type.empty()) observe(key + ".channel", c.channel_type + ":" + std::to_string(c.channel_id));
}

double CopyOverlap::observe_copy_pair(const std::string& key_a, const timeline_item& a, const std::string& key_b,
                                      const timeline_item& b) {
  observe_copy(key_a, a);
  observe_copy(key_b, b);
  const double mutual = shorter_covered_by_other(a, b);
  observe("shorter_copy_covered_by_the_other", mutual);
  return mutual;
}

}  // namespace sc::families
