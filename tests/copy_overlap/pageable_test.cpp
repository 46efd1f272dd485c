// COPY-05, -07, -08 (observed), COPY-09, -10 (documented, with observed rows): pageable host memory and
// synchronous copies. "Returns while held" is decided by call_while_held: the call is made while a latch
// holds the stream it depends on, and either returns within the window (it did not wait) or not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "copy_overlap.hpp"
#include "sc/fixtures/memory.hpp"

namespace {

using sc::stream_flags;
using sc::families::CopyOverlap;
using sc::families::kCopyBytes;
using sc::families::pageable;

// COPY-05's first row: an H2D copy from `src` into an idle stream `s` (after one the same, so that no first use
// is measured), and what cudaStreamQuery(s) says right after the call returned; s is synchronized afterwards.
cudaError_t query_right_after_copy_into_idle_stream(CopyOverlap& t, std::uint32_t* dst, const std::uint32_t* src,
                                                    const sc::stream& s) {
  SC_CHECK_CUDA(t.copy("warm-up", dst, src, kCopyBytes, cudaMemcpyHostToDevice, s));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  SC_CHECK_CUDA(t.copy("idle stream", dst, src, kCopyBytes, cudaMemcpyHostToDevice, s));
  const cudaError_t right_after = cudaStreamQuery(s.get());
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  return right_after;
}

// COPY-05's figures: an H2D and a D2H copy of kCopyBytes each way between `dev` and pinned host memory, then
// pageable, all in `s`, labelled "pinned H2D" ... "pageable D2H".
void copy_both_ways_pinned_and_pageable(CopyOverlap& t, std::uint32_t* dev, std::uint32_t* pinned, std::uint32_t* plain,
                                        const sc::stream& s) {
  SC_CHECK_CUDA(t.copy("pinned H2D", dev, pinned, kCopyBytes, cudaMemcpyHostToDevice, s));
  SC_CHECK_CUDA(t.copy("pinned D2H", pinned, dev, kCopyBytes, cudaMemcpyDeviceToHost, s));
  SC_CHECK_CUDA(t.copy("pageable H2D", dev, plain, kCopyBytes, cudaMemcpyHostToDevice, s));
  SC_CHECK_CUDA(t.copy("pageable D2H", plain, dev, kCopyBytes, cudaMemcpyDeviceToHost, s));
}

// Their bandwidth, record count and channel, from the timeline, as "figure.<label>.*" (never judged).
void observe_bandwidth_figures(const sc::timeline& t) {
  for (const char* label : {"pinned H2D", "pinned D2H", "pageable H2D", "pageable D2H"}) {
    const auto parts = t.labelled(label);
    if (parts.empty()) continue;
    std::uint64_t busy = 0;
    for (const sc::timeline_item* p : parts) busy += p->end_ns - p->start_ns;
    std::string key = std::string("figure.") + label;
    for (char& ch : key) ch = ch == ' ' ? '_' : ch;
    sc::observe(key + ".gbps", busy > 0 ? static_cast<double>(kCopyBytes) / static_cast<double>(busy) : 0.0);
    sc::observe(key + ".records", static_cast<int>(parts.size()));
    if (!parts.front()->channel_type.empty())
      sc::observe(key + ".channel", parts.front()->channel_type + ":" + std::to_string(parts.front()->channel_id));
  }
}

// COPY-05 · SYNC ("might be synchronous"); 11.1 archive (staging by a worker thread) (observed): an async
// H2D copy from pageable memory — is it complete when the call returns (idle stream), and does the call
// return while a latch holds its stream? Figures beside it (never judged): H2D and D2H bandwidth, pinned
// and pageable, from CUPTI.
TEST_F(CopyOverlap, PageableAsyncCopiesAreSynchronousToTheHost) {
  const sc::claim copy05("COPY-05");
  const std::size_t n = kCopyBytes / sizeof(std::uint32_t);
  pageable plain(kCopyBytes, 3u);
  sc::pinned_buffer<std::uint32_t> pinned(n);
  sc::device_buffer<std::uint32_t> dev(n);
  const bool use_pinned = copy05.mutated(sc::mutation_kind::arrangement);
  const std::uint32_t* src = use_pinned ? pinned.data() : plain.data();
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const cudaError_t right_after = query_right_after_copy_into_idle_stream(*this, dev.data(), src, s);
  sc::observe("query_right_after_return", sc::error_name(right_after));
  EXPECT_TRUE(copy05.matches_baseline("h2d_complete_on_return", right_after == cudaSuccess));
  const sc::return_observation seen = held_call(
      s, "held.took_us", [&] { return copy("held", dev.data(), src, kCopyBytes, cudaMemcpyHostToDevice, s); });
  EXPECT_TRUE(copy05.observed_row("h2d_returned_while_held", seen.returned));
  copy_both_ways_pinned_and_pageable(*this, dev.data(), pinned.data(), plain.data(), s);
  drain();
  if (!untraced_reason().empty()) return;
  observe_bandwidth_figures(recorder().collect());
}

// COPY-07 · SYNC 11.x ("returns only once the copy has completed"); current: "might be synchronous"
// (observed): does a D2H cudaMemcpyAsync into pageable memory return while a latch holds its stream?
TEST_F(CopyOverlap, PageableDeviceToHostCopyAgainstAHeldStream) {
  const sc::claim copy07("COPY-07");
  const std::size_t n = kCopyBytes / sizeof(std::uint32_t);
  pageable plain(kCopyBytes);
  sc::pinned_buffer<std::uint32_t> pinned(n);
  sc::device_buffer<std::uint32_t> dev(n);
  std::uint32_t* dst = copy07.mutated(sc::mutation_kind::arrangement) ? pinned.data() : plain.data();
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::return_observation seen =
      held_call(s, "took_us", [&] { return copy("d2h", dst, dev.data(), kCopyBytes, cudaMemcpyDeviceToHost, s); });
  EXPECT_TRUE(copy07.observed_row("d2h_returned_while_held", seen.returned));
}

// COPY-08 · old guide ("Concurrent Execution between Host and Device": copies of 64 KB or less are
// asynchronous) vs SYNC ("might be synchronous") (observed, contested): small pageable H2D
// cudaMemcpyAsync against a latch in the same stream at 4 KB, 64 KB, 64 KB + 1 and 1 MiB.
TEST_F(CopyOverlap, SmallPageableCopiesAgainstAHeldStream) {
  const sc::claim copy08("COPY-08");
  pageable plain(1u << 20, 5u);
  sc::device_buffer<std::uint32_t> dev((1u << 20) / sizeof(std::uint32_t));
  // Mutation (arrangement): each copy is followed by a synchronize of its stream (pinned sources would not
  // do: on the H100 every size returns while held, so pinned and pageable read the same).
  const bool then_sync = copy08.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  for (const std::size_t bytes : {std::size_t{4096}, std::size_t{65536}, std::size_t{65537}, std::size_t{1} << 20}) {
    SCOPED_TRACE(bytes);
    const std::string size = std::to_string(bytes);
    const sc::return_observation seen = held_call(s, "took_us." + size, [&] {
      const cudaError_t code = copy("h2d " + size, dev.data(), plain.data(), bytes, cudaMemcpyHostToDevice, s);
      return code == cudaSuccess && then_sync ? cudaStreamSynchronize(s.get()) : code;
    });
    EXPECT_TRUE(copy08.observed_row("returned_while_held." + size, seen.returned));
  }
}

// A synchronous copy of COPY-09's table: its name, kind and ends, and whether it must return while the
// legacy stream is held.
struct memcpy_rule {
  const char* name;
  cudaMemcpyKind kind;
  void* dst;
  const void* src;
  bool returns;
};

// COPY-09 · SYNC (Memcpy, synchronous): cudaMemcpy from pageable memory to the device performs a stream
// sync first; device to pageable host returns only after the copy completed; device to device does no
// host-side synchronization. With a latch in the legacy stream (where cudaMemcpy is issued): the first two
// must not return while it is closed, the third must.
TEST_F(CopyOverlap, SynchronousCopyRules) {
  const sc::claim copy09("COPY-09");
  const std::size_t bytes = std::size_t{1} << 20;
  pageable plain(bytes, 9u);
  sc::device_buffer<std::uint32_t> x(bytes / sizeof(std::uint32_t));
  sc::device_buffer<std::uint32_t> y(bytes / sizeof(std::uint32_t));
  const bool elsewhere = copy09.mutated(sc::mutation_kind::arrangement);
  const sc::stream nb = make(stream_flags::non_blocking, "nb");
  const sc::stream legacy = sc::stream::legacy();
  const sc::stream& held = elsewhere ? nb : legacy;
  for (const memcpy_rule& c : {memcpy_rule{"pageable H2D", cudaMemcpyHostToDevice, x.data(), plain.data(), false},
                               memcpy_rule{"D2H to pageable", cudaMemcpyDeviceToHost, plain.data(), x.data(), false},
                               memcpy_rule{"D2D", cudaMemcpyDeviceToDevice, y.data(), x.data(), true}}) {
    SCOPED_TRACE(c.name);
    const sc::return_observation seen = held_call(
        held, std::string("took_us.") + c.name,
        [&] { return sync_copy(std::string("cudaMemcpy ") + c.name, c.dst, c.src, bytes, c.kind); },
        c.returns ? sc::kReturnWindow : sc::kWaitWindow);
    if (c.returns)
      EXPECT_TRUE(seen.returned) << "cudaMemcpy " << c.name << " waited for the held legacy stream";
    else
      EXPECT_TRUE(sc::does_not_hold(seen.returned))
          << "cudaMemcpy " << c.name << " returned while the legacy stream was held";
  }
}

// COPY-10 · SYNC (synchronous copies are issued to the default stream) + SSB: in a legacy build a
// synchronous D2H cudaMemcpy waits for earlier work in blocking streams (documented), and (observed) not
// for work in non-blocking streams.
TEST_F(CopyOverlap, SynchronousDeviceToHostCopyAgainstBusyStreams) {
  const sc::claim copy10("COPY-10", sc::verdict_kind::documented);
  const std::size_t bytes = std::size_t{1} << 20;
  sc::pinned_buffer<std::uint32_t> host(bytes / sizeof(std::uint32_t));
  sc::device_buffer<std::uint32_t> dev(bytes / sizeof(std::uint32_t));
  // Mutation (arrangement): the "blocking" stream is made non-blocking.
  const stream_flags first =
      copy10.mutate(sc::mutation_kind::arrangement, stream_flags::blocking, stream_flags::non_blocking);
  const sc::stream s1 = make(first, "s1");
  const sc::stream s2 = make(stream_flags::non_blocking, "s2");
  const auto d2h = [&] { return sync_copy("cudaMemcpy D2H", host.data(), dev.data(), bytes, cudaMemcpyDeviceToHost); };
  const sc::return_observation behind_blocking = held_call(s1, d2h, sc::kWaitWindow);
  EXPECT_TRUE(sc::does_not_hold(behind_blocking.returned)) << "the synchronous D2H copy did not wait for blocking s1";
  const sc::return_observation behind_non_blocking = held_call(s2, d2h);
  EXPECT_TRUE(copy10.observed_row("d2h_returned_while_non_blocking_stream_held", behind_non_blocking.returned));
}

}  // namespace
