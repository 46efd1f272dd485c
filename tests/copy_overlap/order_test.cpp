// COPY-01, -02, -11 (documented): copies, memsets and kernels keep their stream's order; pinned and
// device-to-device cudaMemcpyAsync and cudaMemsetAsync return without waiting; the memset rules.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "copy_overlap.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::CopyOverlap;
using sc::families::kCheckedBytes;
using sc::families::kCopyBytes;

constexpr std::uint32_t kValue = 0x5c0a0b0cu;
constexpr int kMemsetByte = 0x3d;
constexpr std::uint32_t kMemsetWord = 0x3d3d3d3du;

// COPY-01 · RT stream semantics: in one stream an H2D copy, a kernel, a memset, a kernel and a D2H copy
// run in enqueue order, and each sees all of the one before it. A gate holds the stream while the host
// checks that nothing after it ran; afterwards the values say whether each step saw the previous one whole
// (the kernels read in reverse order, so a half-finished copy shows), and CUPTI's intervals must follow
// each other in the same order.
TEST_F(CopyOverlap, CopiesMemsetsAndKernelsOfOneStreamRunInOrder) {
  const sc::claim copy01("COPY-01");
  const std::size_t n = kCheckedBytes / sizeof(std::uint32_t);
  sc::pinned_buffer<std::uint32_t> src(n);
  sc::pinned_buffer<std::uint32_t> out(n);
  sc::device_buffer<std::uint32_t> data(n);
  sc::device_buffer<std::uint32_t> wrong(2);
  std::fill(src.data(), src.data() + n, kValue);
  std::fill(out.data(), out.data() + n, 0u);
  SC_CHECK_CUDA(cudaMemset(data.data(), 0, kCheckedBytes));
  SC_CHECK_CUDA(cudaMemset(wrong.data(), 0, 2 * sizeof(std::uint32_t)));
  SC_CHECK_CUDA(cudaDeviceSynchronize());
  sc::marks m;
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream other = make(stream_flags::non_blocking, "other");
  const bool unordered = copy01.mutated(sc::mutation_kind::arrangement);
  sc::gate later;
  hold(later, other);
  sc::gate g;
  hold(g, s);
  SC_CHECK_CUDA(copy("h2d", data.data(), src.data(), kCheckedBytes, cudaMemcpyHostToDevice, unordered ? other : s));
  count_mismatches("check h2d", data.data(), n, kValue, wrong.data(), s);
  SC_CHECK_CUDA(memset("memset", data.data(), kMemsetByte, kCheckedBytes, s));
  count_mismatches("check memset", data.data(), n, kMemsetWord, wrong.data() + 1, s);
  SC_CHECK_CUDA(copy("d2h", out.data(), data.data(), kCheckedBytes, cudaMemcpyDeviceToHost, s));
  drop(m, s, 1);
  {
    sc::held_window w(g);
    EXPECT_TRUE(w.absent(sc::probe::mark(m, 1))) << "work after the copies ran while the stream was held";
    EXPECT_TRUE(w.absent(sc::probe("the D2H copy wrote the host buffer", [&] { return out[n - 1] != 0u; }),
                         std::chrono::milliseconds(0)));
  }
  // s ends with the mark, so once it landed s's work is done (stream order). Waiting for it rather than
  // synchronizing s keeps `later` out: under memcheck (H100) cudaStreamSynchronize(s) waited for other's gate.
  EXPECT_TRUE(sc::wait_until(sc::probe::mark(m, 1), sc::kWorkDeadline)) << "stream s did not finish its work";
  later.open();
  drain();
  std::uint32_t mismatches[2] = {0, 0};
  SC_CHECK_CUDA(cudaMemcpy(mismatches, wrong.data(), sizeof mismatches, cudaMemcpyDeviceToHost));
  EXPECT_EQ(0u, mismatches[0]) << "words the kernel after the H2D copy saw without the copied value";
  EXPECT_EQ(0u, mismatches[1]) << "words the kernel after the memset saw without the memset value";
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += out[i] != kMemsetWord;
  EXPECT_EQ(0u, bad) << "words the D2H copy brought back without the memset value";
  sc::observe("words_checked", static_cast<unsigned long long>(n));
  if (const std::string why = untraced_reason(); !why.empty()) {
    sc::observe("timeline_order", why);
    return;
  }
  const sc::timeline t = recorder().collect();
  const std::vector<std::string> order = {"h2d", "check h2d", "memset", "check memset", "d2h"};
  const sc::slack same_stream = sc::ticks(2, "two timer ticks between consecutive work of one stream");
  for (std::size_t i = 0; i + 1 < order.size(); ++i) {
    const sc::timeline_item* a = one(t, order[i]);
    const sc::timeline_item* b = one(t, order[i + 1]);
    if (a != nullptr && b != nullptr) {
      EXPECT_TRUE(sc::strictly_precedes(sc::as_span(*a), sc::as_span(*b), same_stream));
    }
  }
}

// COPY-02 · SYNC (cudaMemcpyAsync with pinned host memory, and device to device, is asynchronous); COPY-11
// · SYNC (cudaMemsetAsync is always asynchronous): each call returns while a gate holds its stream.
TEST_F(CopyOverlap, PinnedAndDeviceCopiesAndAsyncMemsetsReturnWhileTheStreamIsGated) {
  const sc::claim copy02("COPY-02");
  const sc::claim copy11("COPY-11");
  const std::size_t n = kCopyBytes / sizeof(std::uint32_t);
  const bool pageable_host = copy02.mutated(sc::mutation_kind::arrangement);
  const bool then_sync = copy11.mutated(sc::mutation_kind::arrangement);
  sc::pinned_buffer<std::uint32_t> pinned_host(n);
  sc::families::pageable plain_host(kCopyBytes);
  std::uint32_t* host = pageable_host ? plain_host.data() : pinned_host.data();
  sc::device_buffer<std::uint32_t> a(n);
  sc::device_buffer<std::uint32_t> b(n);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  struct call {
    const char* name;
    std::function<cudaError_t()> make;
  };
  const std::vector<call> calls = {
      {"H2D", [&] { return copy("H2D", a.data(), host, kCopyBytes, cudaMemcpyHostToDevice, s); }},
      {"D2H", [&] { return copy("D2H", host, a.data(), kCopyBytes, cudaMemcpyDeviceToHost, s); }},
      {"D2D", [&] { return copy("D2D", b.data(), a.data(), kCopyBytes, cudaMemcpyDeviceToDevice, s); }},
      {"memset", [&] {
         const cudaError_t code = memset("memset", a.data(), kMemsetByte, kCopyBytes, s);
         return code == cudaSuccess && then_sync ? cudaStreamSynchronize(s.get()) : code;
       }}};
  for (const call& c : calls) {
    SCOPED_TRACE(c.name);
    const sc::return_observation seen = call_while_held(s, c.make);
    drain();
    EXPECT_CUDA_EQ(cudaSuccess, seen.code);
    EXPECT_TRUE(seen.returned) << c.name << " waited for the gated stream";
    sc::observe(std::string("took_us.") + c.name, static_cast<long long>(seen.took.count()));
  }
}

// COPY-11 · SYNC (Memset): a synchronous cudaMemset to device memory is asynchronous with respect to the
// host (it returns while the legacy stream, where it is issued, is held) and runs in the legacy stream's
// order: a kernel enqueued after it finds every word set (order in values), and so does the host after the
// drain. On pinned host memory the same page calls cudaMemset synchronous: it must not return while the
// legacy stream is held.
TEST_F(CopyOverlap, SynchronousMemsetOfDeviceMemoryReturnsBeforeItRuns) {
  const sc::claim copy11("COPY-11");
  const std::size_t n = kCheckedBytes / sizeof(std::uint32_t);
  const std::uint32_t word = 0x01010101u * static_cast<std::uint32_t>(kMemsetByte);
  sc::device_buffer<std::uint32_t> dev(n);
  sc::device_buffer<std::uint32_t> unset_when_read(1);  // words the kernel after the memset found not set
  sc::mapped<std::uint32_t> pinned_target(n);
  const bool pinned = copy11.mutated(sc::mutation_kind::arrangement);
  void* target = pinned ? static_cast<void*>(pinned_target.host()) : static_cast<void*>(dev.data());
  const sc::stream legacy = sc::stream::legacy();
  sc::marks m;
  {
    const sc::return_observation seen = call_while_held(legacy, [&] {
      const auto scope = recorder().label("cudaMemset device");
      cudaError_t code = cudaMemset(target, kMemsetByte, kCheckedBytes);
      if (code == cudaSuccess) drop(m, legacy, 1);
      if (code == cudaSuccess)
        code = sc::kernels::launch_count_mismatches(legacy.get(), dev.data(), static_cast<std::uint32_t>(n), word,
                                                    unset_when_read.data());
      return code;
    });
    drain();
    EXPECT_CUDA_EQ(cudaSuccess, seen.code);
    EXPECT_TRUE(seen.returned) << "cudaMemset of device memory waited for the held legacy stream";
    EXPECT_NE(0u, m.ticket_of(1));
    std::uint32_t unset = 0;
    SC_CHECK_CUDA(cudaMemcpy(&unset, unset_when_read.data(), sizeof(unset), cudaMemcpyDeviceToHost));
    sc::observe("words_unset_when_the_next_kernel_read", static_cast<unsigned long long>(unset));
    EXPECT_EQ(0u, unset) << "a kernel enqueued after the memset in the legacy stream found words not yet set";
    std::vector<std::uint32_t> back(n);
    SC_CHECK_CUDA(cudaMemcpy(back.data(), dev.data(), kCheckedBytes, cudaMemcpyDeviceToHost));
    std::size_t wrong = 0;
    for (const std::uint32_t w : back) wrong += w != word;
    EXPECT_EQ(0u, wrong) << "words of device memory the memset did not set";
  }
  {
    const sc::return_observation seen = call_while_held(legacy, [&] {
      const auto scope = recorder().label("cudaMemset pinned host");
      return cudaMemset(pinned_target.host(), kMemsetByte, kCheckedBytes);
    });
    drain();
    EXPECT_CUDA_EQ(cudaSuccess, seen.code);
    sc::observe("pinned_host_memset_returned_while_gated", seen.returned.message());
    EXPECT_TRUE(sc::does_not_hold(seen.returned))
        << "cudaMemset of pinned host memory, which the documentation calls synchronous, returned while the "
           "legacy stream was held";
  }
}

}  // namespace
