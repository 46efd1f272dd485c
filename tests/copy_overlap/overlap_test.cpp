// COPY-03, -04, -06, -12, -13 (observed): what a copy does beside a kernel that another stream keeps
// resident (a latch), proven twice: by the latch (the copy completed while the kernel was still waiting)
// and by CUPTI (the copy's interval inside the kernel's; the fraction recorded). Which copy engines
// exist is read from the device (asyncEngineCount), never assumed.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "copy_overlap.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/host_atomic.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/trace.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::CopyOverlap;
using sc::families::kCopyBytes;

// A copy lies inside a kernel when the kernel covers at least this fraction of it. Reason: CUPTI stamps
// copies and kernels on one clock, but an interval's ends can be off by a microsecond or so; 1 % of a
// millisecond copy is ten times that.
constexpr double kInside = 0.99;
// Two copies overlap each other when the shorter one is at least half covered by the other (catalog
// COPY-04). Reason: copies queued one after the other on one engine share no time at all; any real
// concurrency of two equal copies covers far more than half.
constexpr double kMutualOverlap = 0.5;

// COPY-03's and COPY-06's arrangement: a latch kernel resident in stream "a" (labelled "latch@a"), and a copy of
// kCopyBytes labelled `label`, with its synchronize, in stream "b" (in "a" itself `into_held_stream`): did the
// copy complete while the latch was closed?
sc::held_result copy_beside_resident_kernel(CopyOverlap& t, const std::string& what, const std::string& label,
                                            void* dst, const void* src, bool into_held_stream) {
  const sc::stream a = t.make(stream_flags::non_blocking, "a");
  const sc::stream b = t.make(stream_flags::non_blocking, "b");
  return t.copy_completes_beside_latch(a, what, label, dst, src, cudaMemcpyHostToDevice, into_held_stream ? a : b);
}

// COPY-03 · PG 2.3 (copy/compute overlap "may" happen); simpleStreams only prints it: a pinned H2D copy in
// stream B completes while a latch kernel in stream A is still resident, and CUPTI puts the copy inside the
// kernel.
TEST_F(CopyOverlap, PinnedCopyRunsWhileAKernelIsResident) {
  const sc::claim copy03("COPY-03");
  const std::size_t n = kCopyBytes / sizeof(std::uint32_t);
  sc::pinned_buffer<std::uint32_t> src(n);
  sc::device_buffer<std::uint32_t> dst(n);
  const bool into_held_stream = copy03.mutated(sc::mutation_kind::arrangement);
  const sc::held_result done =
      copy_beside_resident_kernel(*this, "a pinned H2D copy", "h2d", dst.data(), src.data(), into_held_stream);
  EXPECT_TRUE(copy03.observed_row("copy_completed_while_kernel_resident", done));
  if (const std::string why = untraced_reason(); !why.empty()) return copy03.not_measured("copy_inside_kernel", why);
  const sc::timeline t = recorder().collect();
  const sc::timeline_item* c = one(t, "h2d");
  const sc::timeline_item* k = one(t, "latch@a");
  ASSERT_TRUE(c != nullptr && k != nullptr);
  observe_copy("h2d", *c);
  const double inside = covered_fraction(*c, *k);
  sc::observe("copy_covered_by_kernel", inside);
  EXPECT_TRUE(copy03.matches_baseline("copy_inside_kernel", inside >= kInside));
}

// The ends of two copies of kCopyBytes: two pinned host buffers and two device buffers.
struct two_copies {
  sc::pinned_buffer<std::uint32_t> host0{kCopyBytes / sizeof(std::uint32_t)};
  sc::pinned_buffer<std::uint32_t> host1{kCopyBytes / sizeof(std::uint32_t)};
  sc::device_buffer<std::uint32_t> dev0{kCopyBytes / sizeof(std::uint32_t)};
  sc::device_buffer<std::uint32_t> dev1{kCopyBytes / sizeof(std::uint32_t)};
};

// COPY-04's copies, made on the helper thread of completes_beside_latch: an H2D copy (host0 -> dev0) in
// `up` and a D2H copy (dev1 -> host1) in `down`, both queued behind latch `start` (hold_behind), which opens
// once both are queued (or a call failed or threw); then both streams' synchronizes.
cudaError_t copy_both_ways_together(CopyOverlap& t, const two_copies& c, sc::latch& start, const sc::stream& up,
                                    const sc::stream& down) {
  cudaError_t code = cudaSuccess;
  {
    // The start latch runs before the copies are queued behind it, and opens as this block ends.
    sc::held_window open_start(start);
    code = t.copy("h2d", c.dev0.data(), c.host0.data(), kCopyBytes, cudaMemcpyHostToDevice, up);
    if (code == cudaSuccess)
      code = t.copy("d2h", c.host1.data(), c.dev1.data(), kCopyBytes, cudaMemcpyDeviceToHost, down);
  }
  if (code == cudaSuccess) code = cudaStreamSynchronize(up.get());
  return code == cudaSuccess ? cudaStreamSynchronize(down.get()) : code;
}

// COPY-04 · PG 2.3; deviceQuery ("copy engines"): with asyncEngineCount >= 2, an H2D copy and a D2H copy
// in two more streams both complete while a kernel is resident, and overlap each other.
TEST_F(CopyOverlap, CopiesInOppositeDirectionsOverlapEachOtherAndAKernel) {
  const sc::claim copy04("COPY-04");
  if (async_engines() < 2)
    GTEST_SKIP() << "asyncEngineCount is " << async_engines() << ": this device cannot copy in both directions at once";
  const two_copies copies;
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const sc::stream c = make(stream_flags::non_blocking, "c");
  const sc::stream& d2h_stream = copy04.mutated(sc::mutation_kind::arrangement) ? b : c;
  // Both copies wait on a start latch that opens once both are queued, so they start together however long
  // the host took between the two calls: on two H100s testing at once, the shorter copy was once less than
  // half covered (a 32 MiB copy lasts about 0.6 ms; a delay of 0.3 ms between the calls is enough).
  const sc::stream starter = make(stream_flags::non_blocking, "start");
  sc::latch start;
  hold_behind(start, starter, {&b, &c});
  const sc::held_result done = completes_beside_latch(
      a, "an H2D copy in b and a D2H copy in " + d2h_stream.name() + ", started together, and their synchronizes",
      [&] { return copy_both_ways_together(*this, copies, start, b, d2h_stream); });
  EXPECT_TRUE(copy04.observed_row("both_copies_completed_while_kernel_resident", done));
  if (const std::string why = untraced_reason(); !why.empty())
    return copy04.not_measured("copies_overlap_each_other", why);
  const sc::timeline t = recorder().collect();
  const sc::timeline_item* h2d = one(t, "h2d");
  const sc::timeline_item* d2h = one(t, "d2h");
  ASSERT_TRUE(h2d != nullptr && d2h != nullptr);
  const double mutual = observe_copy_pair("h2d", *h2d, "d2h", *d2h);
  EXPECT_TRUE(copy04.matches_baseline("copies_overlap_each_other", mutual >= kMutualOverlap));
}

// The fraction of a copy's records (a staged copy may come as several) that item `k` covers, by duration.
double covered_by(const std::vector<const sc::timeline_item*>& parts, const sc::timeline_item& k) {
  double covered_ns = 0;
  double total_ns = 0;
  for (const sc::timeline_item* p : parts) {
    covered_ns += CopyOverlap::covered_fraction(*p, k) * static_cast<double>(p->end_ns - p->start_ns);
    total_ns += static_cast<double>(p->end_ns - p->start_ns);
  }
  return total_ns > 0 ? covered_ns / total_ns : 0.0;
}

// COPY-06 · old guide ("will not overlap"); PG 2.3.2.3 (observed): does an async copy from pageable
// memory in stream B complete while a kernel in stream A is resident?
TEST_F(CopyOverlap, PageableCopyBesideAResidentKernel) {
  const sc::claim copy06("COPY-06");
  sc::families::pageable src(kCopyBytes, 7u);
  sc::device_buffer<std::uint32_t> dst(kCopyBytes / sizeof(std::uint32_t));
  const bool into_held_stream = copy06.mutated(sc::mutation_kind::arrangement);
  EXPECT_TRUE(copy06.observed_row("pageable_copy_completed_while_kernel_resident",
                                  copy_beside_resident_kernel(*this, "a pageable H2D copy", "h2d pageable", dst.data(),
                                                              src.data(), into_held_stream)));
  // Without CUPTI the overlap is a figure not measured, not a row: the claim was judged above.
  if (const std::string why = untraced_reason(); !why.empty()) return sc::observe("copy_covered_by_kernel", why);
  const sc::timeline t = recorder().collect();
  const sc::timeline_item* k = one(t, "latch@a");
  const auto parts = t.labelled("h2d pageable");
  ASSERT_TRUE(k != nullptr && !parts.empty());
  observe_copy("h2d_pageable", *parts.front());
  sc::observe("h2d_pageable.records", static_cast<int>(parts.size()));
  sc::observe("copy_covered_by_kernel", covered_by(parts, *k));
}

// COPY-12's arrangement, once per grid size: which of a one-thread kernel (the control), a memset and a D2D
// copy ran while a grid latch of `blocks` blocks held the SMs.
struct sm_room {
  sc::held_result kernel_ran{sc::held_outcome::invalid, "not measured"};
  sc::held_result memset_ran{sc::held_outcome::invalid, "not measured"};
  sc::held_result d2d_ran{sc::held_outcome::invalid, "not measured"};
};

sm_room try_beside_grid_latch(CopyOverlap& t, const std::string& name, unsigned blocks, unsigned threads) {
  const std::size_t n = kCopyBytes / sizeof(std::uint32_t);
  sc::device_buffer<std::uint32_t> x(n);
  sc::device_buffer<std::uint32_t> y(n);
  sc::mapped<std::uint32_t> resident(blocks);  // one flag per block, zeroed
  sc::marks m;
  const sc::stream a = t.make(stream_flags::non_blocking, name + ".a");
  const sc::stream b = t.make(stream_flags::non_blocking, name + ".b");
  const sc::stream c = t.make(stream_flags::non_blocking, name + ".c");
  const sc::stream d = t.make(stream_flags::non_blocking, name + ".d");
  sc::thread_probe memset_done("a memset in " + b.name() + " and its synchronize", [&] {
    const cudaError_t code = t.memset(name + ".memset", x.data(), 0x11, kCopyBytes, b);
    return code == cudaSuccess ? cudaStreamSynchronize(b.get()) : code;
  });
  sc::thread_probe d2d_done("a D2D copy in " + c.name() + " and its synchronize", [&] {
    const cudaError_t code = t.copy(name + ".d2d", y.data(), x.data(), kCopyBytes, cudaMemcpyDeviceToDevice, c);
    return code == cudaSuccess ? cudaStreamSynchronize(c.get()) : code;
  });
  sc::latch g;
  {
    const auto label = t.recorder().label("grid latch@" + a.name());
    g.hold_by([&](sc::kernels::latch_word* word, std::uint64_t ns, bool banner) {
      return sc::kernels::launch_latch_grid(a.get(), word, ns, banner, blocks, threads, resident.device());
    });
  }
  sm_room room;
  sc::held_window w(g);
  // Every block resident before anything is asked. Reason for 1 s: a grid of this size starts in microseconds.
  EXPECT_TRUE(w.present(sc::probe(name + ": all " + std::to_string(blocks) + " blocks of the grid latch resident",
                                  [&] { return sc::count_set(resident.host(), blocks) == blocks; }),
                        sc::kPresenceDeadline));
  sc::observe(name + ".resident_blocks", static_cast<unsigned long long>(sc::count_set(resident.host(), blocks)));
  t.drop(m, d, 1);
  // Reason for kLandingDeadline (50 ms): a free engine (or free SM) finishes 32 MiB in well under 10 ms.
  room.kernel_ran = w.present(sc::probe::mark(m, 1), sc::kLandingDeadline);
  memset_done.start();
  room.memset_ran = w.present(memset_done.returned(), sc::kLandingDeadline);
  d2d_done.start();
  room.d2d_ran = w.present(d2d_done.returned(), sc::kLandingDeadline);
  w.release();
  EXPECT_TRUE(memset_done.join_within(sc::kWorkDeadline));
  EXPECT_TRUE(d2d_done.join_within(sc::kWorkDeadline));
  t.drain();
  EXPECT_CUDA_EQ(cudaSuccess, memset_done.code()) << name;
  EXPECT_CUDA_EQ(cudaSuccess, d2d_done.code()) << name;
  return room;
}

// COPY-12's grid latch sizes (recorded by grid_latch_sizes_of).
struct grid_latch_sizes {
  unsigned threads = 0;  // per block: 1024 or the device's maximum
  int per_sm = 0;        // such blocks on one SM (occupancy API)
  unsigned sms = 0;
  // A grid that takes every thread slot of every SM.
  unsigned full() const { return sms * static_cast<unsigned>(per_sm); }
  // At most half as many blocks as SMs: however they are placed, at least half of the SMs hold none.
  unsigned some_free() const { return std::max(1u, sms / 2); }
};

grid_latch_sizes grid_latch_sizes_of(const cudaDeviceProp& properties) {
  grid_latch_sizes z;
  z.threads = static_cast<unsigned>(std::min(1024, properties.maxThreadsPerBlock));
  SC_CHECK_CUDA(sc::kernels::latch_grid_occupancy(z.threads, &z.per_sm));
  z.sms = static_cast<unsigned>(properties.multiProcessorCount);
  sc::observe("grid_latch.threads", static_cast<int>(z.threads));
  sc::observe("grid_latch.blocks_per_sm", z.per_sm);
  sc::observe("grid_latch.blocks.some_sms_free", static_cast<int>(z.some_free()));
  sc::observe("grid_latch.blocks.full", static_cast<int>(z.full()));
  return z;
}

// A memset and a D2D copy before any latch, so that no first use (loading, set-up) is measured beside one.
void warm_up_memset_and_device_copy(CopyOverlap& t) {
  sc::device_buffer<std::uint32_t> w1(1024);
  sc::device_buffer<std::uint32_t> w2(1024);
  const sc::stream s = t.make(stream_flags::non_blocking, "warm-up");
  SC_CHECK_CUDA(cudaMemsetAsync(w1.data(), 0, 4096, s.get()));
  SC_CHECK_CUDA(cudaMemcpyAsync(w2.data(), w1.data(), 4096, cudaMemcpyDeviceToDevice, s.get()));
  SC_CHECK_CUDA(synchronize_within(s, sc::kWorkDeadline));
}

// COPY-12 · a claim in a vlasiator PR #1125 review; catalog Q5 (observed): do cudaMemsetAsync and a D2D
// cudaMemcpyAsync run on the SMs (needing room there), or on a copy engine? A grid-wide latch takes SMs;
// then a one-thread kernel (the control), a memset and a D2D copy go into three other streams. Three
// arrangements: some SMs empty (the control must run), every thread slot of every SM taken (the control
// must not run), and one latch block per SM (recorded). A memset that runs exactly when the control runs
// needs room on an SM, like a kernel; one that runs regardless is done elsewhere.
TEST_F(CopyOverlap, MemsetAndDeviceCopyWhileEverySmIsFull) {
  const sc::claim copy12("COPY-12");
  const grid_latch_sizes z = grid_latch_sizes_of(properties());
  ASSERT_GT(z.per_sm, 0);
  warm_up_memset_and_device_copy(*this);
  const sm_room free_room = try_beside_grid_latch(*this, "some_free", z.some_free(), z.threads);
  const bool mutated = copy12.mutated(sc::mutation_kind::arrangement);
  const sm_room full_room = try_beside_grid_latch(*this, "full", mutated ? z.some_free() : z.full(), z.threads);
  const sm_room one_room = try_beside_grid_latch(*this, "one_per_sm", z.sms, z.threads);
  // The controls: room on an SM lets a kernel run, no room holds it back. Without both, the memset rows
  // below say nothing about thread slots.
  EXPECT_TRUE(copy12.observed_row("control_kernel_ran_with_free_sms", free_room.kernel_ran));
  EXPECT_TRUE(copy12.observed_row("control_kernel_ran_while_sms_full", full_room.kernel_ran));
  EXPECT_TRUE(copy12.observed_row("memset_ran_with_free_sms", free_room.memset_ran));
  EXPECT_TRUE(copy12.observed_row("memset_ran_while_sms_full", full_room.memset_ran));
  EXPECT_TRUE(copy12.observed_row("d2d_copy_ran_with_free_sms", free_room.d2d_ran));
  EXPECT_TRUE(copy12.observed_row("d2d_copy_ran_while_sms_full", full_room.d2d_ran));
  // One latch block per SM leaves half the thread slots of every SM free (per_sm >= 2): does another
  // kernel use them?
  EXPECT_TRUE(copy12.observed_row("control_kernel_ran_beside_one_latch_block_per_sm", one_room.kernel_ran));
  EXPECT_TRUE(copy12.observed_row("memset_ran_beside_one_latch_block_per_sm", one_room.memset_ran));
  if (const std::string why = untraced_reason(); !why.empty()) return sc::observe("channels", why);
  const sc::timeline tl = recorder().collect();
  for (const char* label : {"full.memset", "full.d2d"})
    if (const sc::timeline_item* item = one(tl, label)) observe_copy(label, *item);
}

// The stream priorities of the device: the lowest (numerically greatest) and the highest.
struct priority_range {
  int least = 0;
  int greatest = 0;
};

priority_range device_priority_range() {
  priority_range r;
  SC_CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&r.least, &r.greatest));
  return r;
}

// Whether `a` or `b` has finished all its work (cudaStreamQuery), as a probe named `what`.
sc::probe either_finished(const std::string& what, const sc::stream& a, const sc::stream& b) {
  return sc::probe(
      what, [&a, &b] { return cudaStreamQuery(a.get()) == cudaSuccess || cudaStreamQuery(b.get()) == cudaSuccess; });
}

// COPY-13 · DRV/RT ...CreateWithPriority ("only compute kernels" are affected); PG 2.3.9.1; NVlabs
// cuda-oxide #761 vs NVIDIA/warp test_streams.py (recorded): two equal pinned H2D copies, one in the
// lowest-priority stream issued first, one in the highest-priority stream issued second, both held behind
// one latch (an event wait): which starts first once the latch opens, and how much they overlap.
TEST_F(CopyOverlap, StreamPriorityAndCopies) {
  const sc::claim copy13("COPY-13");
  SC_REQUIRE_TRACING();
  const priority_range priorities = device_priority_range();
  if (priorities.least == priorities.greatest) GTEST_SKIP() << "the device has one stream priority level";
  const two_copies copies;  // 0: the low-priority copy, 1: the high-priority one
  const sc::stream gs = make(stream_flags::non_blocking, "latch");
  const sc::stream low = make(stream_flags::non_blocking, "low", priorities.least);
  const sc::stream high = make(stream_flags::non_blocking, "high", priorities.greatest);
  // A recorded claim has no mutation: no value of it fails (the hold below is the arrangement's check).
  sc::latch g;
  hold_behind(g, gs, {&low, &high});
  // The low-priority copy is issued first, so a high-priority copy that starts first was moved ahead.
  SC_CHECK_CUDA(copy("low", copies.dev0.data(), copies.host0.data(), kCopyBytes, cudaMemcpyHostToDevice, low));
  SC_CHECK_CUDA(copy("high", copies.dev1.data(), copies.host1.data(), kCopyBytes, cudaMemcpyHostToDevice, high));
  {
    sc::held_window w(g);
    EXPECT_TRUE(w.absent(either_finished("a copy behind the latch finished", low, high)))
        << "a copy did not wait for the event";
  }
  drain();
  const sc::timeline t = recorder().collect();
  const sc::timeline_item* l = one(t, "low");
  const sc::timeline_item* h = one(t, "high");
  ASSERT_TRUE(l != nullptr && h != nullptr);
  observe_copy_pair("low", *l, "high", *h);
  sc::observe("priority.least", priorities.least);
  sc::observe("priority.greatest", priorities.greatest);
  sc::observe("high_start_minus_low_start_us",
              (static_cast<double>(h->start_ns) - static_cast<double>(l->start_ns)) / 1000.0);
  EXPECT_TRUE(copy13.matches_baseline("high_priority_copy_started_first", h->start_ns < l->start_ns));
}

}  // namespace
