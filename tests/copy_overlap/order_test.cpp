// COPY-01, -02, -11 (documented): copies, memsets and kernels keep their stream's order; pinned and
// device-to-device cudaMemcpyAsync and cudaMemsetAsync return without waiting; the memset rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <sstream>
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

// COPY-01's buffers: kValue in pinned memory to copy up, the device words the chain works on, pinned memory the
// chain copies back into, and the mismatch counters of its two kernels; all set and synchronized at construction.
struct chain_buffers {
  explicit chain_buffers(std::size_t words);
  // The counts of the kernel after the H2D copy and of the kernel after the memset (after the drain).
  std::array<std::uint32_t, 2> mismatches() const;

  std::size_t n;
  sc::pinned_buffer<std::uint32_t> src;
  sc::pinned_buffer<std::uint32_t> out;
  sc::device_buffer<std::uint32_t> data;
  sc::device_buffer<std::uint32_t> wrong;
};

chain_buffers::chain_buffers(std::size_t words) : n(words), src(words), out(words), data(words), wrong(2) {
  std::fill(src.data(), src.data() + n, kValue);
  std::fill(out.data(), out.data() + n, 0u);
  SC_CHECK_CUDA(cudaMemset(data.data(), 0, n * sizeof(std::uint32_t)));
  SC_CHECK_CUDA(cudaMemset(wrong.data(), 0, 2 * sizeof(std::uint32_t)));
  SC_CHECK_CUDA(cudaDeviceSynchronize());
}

std::array<std::uint32_t, 2> chain_buffers::mismatches() const {
  std::array<std::uint32_t, 2> counted{0, 0};
  SC_CHECK_CUDA(cudaMemcpy(counted.data(), wrong.data(), sizeof counted, cudaMemcpyDeviceToHost));
  return counted;
}

// COPY-01's chain, labelled for the timeline: an H2D copy of src into data (in `h2d_stream`), then in `s` a
// kernel counting the words without kValue, a memset of data, a kernel counting the words without the memset's
// value, and a D2H copy into out.
void enqueue_chain(CopyOverlap& t, chain_buffers& b, const sc::stream& h2d_stream, const sc::stream& s) {
  const std::size_t bytes = b.n * sizeof(std::uint32_t);
  SC_CHECK_CUDA(t.copy("h2d", b.data.data(), b.src.data(), bytes, cudaMemcpyHostToDevice, h2d_stream));
  t.count_mismatches("check h2d", b.data.data(), b.n, kValue, b.wrong.data(), s);
  SC_CHECK_CUDA(t.memset("memset", b.data.data(), kMemsetByte, bytes, s));
  t.count_mismatches("check memset", b.data.data(), b.n, kMemsetWord, b.wrong.data() + 1, s);
  SC_CHECK_CUDA(t.copy("d2h", b.out.data(), b.data.data(), bytes, cudaMemcpyDeviceToHost, s));
}

// Whether each labelled item of `t` ends before the next one starts (two timer ticks of slack), as one stream's
// work must; a pair with a label not found exactly once is left out (CopyOverlap::one has failed the test).
::testing::AssertionResult follow_each_other(const sc::timeline& t, const std::vector<std::string>& labels) {
  const sc::slack same_stream = sc::ticks(2, "two timer ticks between consecutive work of one stream");
  bool in_order = true;
  std::ostringstream pairs;
  for (std::size_t i = 0; i + 1 < labels.size(); ++i) {
    const sc::timeline_item* a = CopyOverlap::one(t, labels[i]);
    const sc::timeline_item* b = CopyOverlap::one(t, labels[i + 1]);
    if (a == nullptr || b == nullptr) continue;
    const ::testing::AssertionResult pair = sc::strictly_precedes(sc::as_span(*a), sc::as_span(*b), same_stream);
    in_order = in_order && static_cast<bool>(pair);
    pairs << labels[i] << " -> " << labels[i + 1] << ": " << pair.message() << "; ";
  }
  return (in_order ? ::testing::AssertionSuccess() : ::testing::AssertionFailure()) << pairs.str();
}

// COPY-01 · RT stream semantics: in one stream an H2D copy, a kernel, a memset, a kernel and a D2H copy
// run in enqueue order, and each sees all of the one before it. A latch holds the stream while the host
// checks that nothing after it ran; afterwards the values say whether each step saw the previous one whole
// (the kernels read in reverse order, so a half-finished copy shows), and CUPTI's intervals must follow
// each other in the same order.
TEST_F(CopyOverlap, CopiesMemsetsAndKernelsOfOneStreamRunInOrder) {
  const sc::claim copy01("COPY-01");
  chain_buffers b(kCheckedBytes / sizeof(std::uint32_t));
  sc::marks m;
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream other = make(stream_flags::non_blocking, "other");
  const bool unordered = copy01.mutated(sc::mutation_kind::arrangement);
  sc::latch later;
  hold(later, other);
  sc::latch g;
  hold(g, s);
  enqueue_chain(*this, b, unordered ? other : s, s);
  drop(m, s, 1);
  {
    sc::held_window w(g);
    EXPECT_TRUE(w.absent(sc::probe::mark(m, 1))) << "work after the copies ran while the stream was held";
    EXPECT_TRUE(w.absent(sc::probe("the D2H copy wrote the host buffer", [&] { return b.out[b.n - 1] != 0u; }),
                         std::chrono::milliseconds(0)));
  }
  // s ends with the mark, so once it landed s's work is done (stream order). Waiting for it rather than
  // synchronizing s keeps `later` out: under memcheck (H100) cudaStreamSynchronize(s) waited for other's latch.
  EXPECT_TRUE(sc::wait_until(sc::probe::mark(m, 1), sc::kWorkDeadline)) << "stream s did not finish its work";
  later.open();
  drain();
  const std::array<std::uint32_t, 2> mismatches = b.mismatches();
  EXPECT_EQ(0u, mismatches[0]) << "words the kernel after the H2D copy saw without the copied value";
  EXPECT_EQ(0u, mismatches[1]) << "words the kernel after the memset saw without the memset value";
  EXPECT_EQ(0u, count_other_than(b.out.data(), b.n, kMemsetWord))
      << "words the D2H copy brought back without the memset value";
  sc::observe("words_checked", static_cast<unsigned long long>(b.n));
  if (const std::string why = untraced_reason(); !why.empty()) return sc::observe("timeline_order", why);
  EXPECT_TRUE(follow_each_other(recorder().collect(), {"h2d", "check h2d", "memset", "check memset", "d2h"}));
}

// A call of COPY-02's and COPY-11's table, by the name its row of figures takes.
struct named_call {
  const char* name;
  std::function<cudaError_t()> make;
};

// COPY-02 · SYNC (cudaMemcpyAsync with pinned host memory, and device to device, is asynchronous); COPY-11
// · SYNC (cudaMemsetAsync is always asynchronous): each call returns while a latch holds its stream.
TEST_F(CopyOverlap, PinnedAndDeviceCopiesAndAsyncMemsetsReturnWhileTheStreamIsHeld) {
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
  const std::vector<named_call> calls = {
      {"H2D", [&] { return copy("H2D", a.data(), host, kCopyBytes, cudaMemcpyHostToDevice, s); }},
      {"D2H", [&] { return copy("D2H", host, a.data(), kCopyBytes, cudaMemcpyDeviceToHost, s); }},
      {"D2D", [&] { return copy("D2D", b.data(), a.data(), kCopyBytes, cudaMemcpyDeviceToDevice, s); }},
      {"memset", [&] {
         const cudaError_t code = memset("memset", a.data(), kMemsetByte, kCopyBytes, s);
         return code == cudaSuccess && then_sync ? cudaStreamSynchronize(s.get()) : code;
       }}};
  for (const named_call& c : calls) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(held_call(s, std::string("took_us.") + c.name, c.make).returned)
        << c.name << " waited for the held stream";
  }
}

// What `d` holds, copied back to the host (after the drain).
std::vector<std::uint32_t> read_back(const sc::device_buffer<std::uint32_t>& d) {
  std::vector<std::uint32_t> back(d.size());
  SC_CHECK_CUDA(cudaMemcpy(back.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost));
  return back;
}

// COPY-11 · SYNC (Memset): a synchronous cudaMemset to device memory is asynchronous with respect to the
// host (it returns while the legacy stream, where it is issued, is held) and runs in the legacy stream's
// order: a kernel enqueued after it finds every word set (order in values), and so does the host after the
// drain.
TEST_F(CopyOverlap, SynchronousMemsetOfDeviceMemoryReturnsBeforeItRuns) {
  const sc::claim copy11("COPY-11");
  const std::size_t n = kCheckedBytes / sizeof(std::uint32_t);
  sc::device_buffer<std::uint32_t> dev(n);
  sc::device_buffer<std::uint32_t> unset_when_read(1);  // words the kernel after the memset found not set
  sc::mapped<std::uint32_t> pinned_target(n);
  const bool pinned = copy11.mutated(sc::mutation_kind::arrangement);
  void* target = pinned ? static_cast<void*>(pinned_target.host()) : static_cast<void*>(dev.data());
  const sc::stream legacy = sc::stream::legacy();
  sc::marks m;
  const sc::return_observation seen = held_call(legacy, [&] {
    const auto scope = recorder().label("cudaMemset device");
    cudaError_t code = cudaMemset(target, kMemsetByte, kCheckedBytes);
    if (code == cudaSuccess) drop(m, legacy, 1);
    if (code == cudaSuccess)
      code = sc::kernels::launch_count_mismatches(legacy.get(), dev.data(), static_cast<std::uint32_t>(n), kMemsetWord,
                                                  unset_when_read.data());
    return code;
  });
  EXPECT_TRUE(seen.returned) << "cudaMemset of device memory waited for the held legacy stream";
  EXPECT_NE(0u, m.ticket_of(1));
  const std::uint32_t unset = read_back(unset_when_read)[0];
  sc::observe("words_unset_when_the_next_kernel_read", static_cast<unsigned long long>(unset));
  EXPECT_EQ(0u, unset) << "a kernel enqueued after the memset in the legacy stream found words not yet set";
  EXPECT_EQ(0u, count_other_than(read_back(dev).data(), n, kMemsetWord))
      << "words of device memory the memset did not set";
}

// COPY-11 · SYNC (Memset): on pinned host memory the same page calls cudaMemset synchronous: it must not
// return while the legacy stream, where it is issued, is held.
TEST_F(CopyOverlap, SynchronousMemsetOfPinnedHostMemoryWaitsForTheLegacyStream) {
  const sc::claim copy11("COPY-11");
  sc::device_buffer<std::uint32_t> dev(kCheckedBytes / sizeof(std::uint32_t));
  sc::mapped<std::uint32_t> pinned_target(kCheckedBytes / sizeof(std::uint32_t));
  const bool on_device = copy11.mutated(sc::mutation_kind::arrangement);
  void* target = on_device ? static_cast<void*>(dev.data()) : static_cast<void*>(pinned_target.host());
  const sc::return_observation seen = held_call(
      sc::stream::legacy(),
      [&] {
        const auto scope = recorder().label("cudaMemset pinned host");
        return cudaMemset(target, kMemsetByte, kCheckedBytes);
      },
      sc::kWaitWindow);
  sc::observe("pinned_host_memset_returned_while_held", seen.returned.message());
  EXPECT_TRUE(sc::does_not_hold(seen.returned))
      << "cudaMemset of pinned host memory, which the documentation calls synchronous, returned while the "
         "legacy stream was held";
}

}  // namespace
