// CAPT-04, CAPT-06 (observed): what a capture does with calls it does not capture. Device-wide synchronization
// and a synchronous copy made by another thread during a capture, per capture mode and per mode of that thread;
// calls the capturing thread makes that a capture refuses, and whether the capture survives them. Each cell is
// one baseline row whose value reads "<call's code>; <capture status after it>; <what ending the capture
// returned>[; <nodes>]", compared by name.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "capture.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::StreamCapture;

// CAPT-04 (observed, contested) · RT cudaThreadExchangeStreamCaptureMode, Programming Guide, stream capture
// ("Prohibited and Unhandled Operations"); measured differently by ROCm (rocm-systems PR #4508, reverted in
// #11698) and PyTorch: while this thread captures s (non-blocking, one mark captured) in each mode, another
// thread in each mode calls cudaDeviceSynchronize, or copies 4 bytes device to pageable host with cudaMemcpy.
// Row `<capture mode>.<thread mode>.<call>`: the call's code, s's capture status after it, what ending the
// capture returned.
TEST_F(StreamCapture, DeviceWideCallsFromAnotherThreadPerMode) {
  const sc::claim capt04("CAPT-04");
  // Mutation (arrangement): the capturing stream is a blocking one, so the synchronous copy (legacy-stream work)
  // meets the capture. (The calls made on the capturing thread instead read the same on an H100.)
  const stream_flags capturing =
      capt04.mutated(sc::mutation_kind::arrangement) ? stream_flags::blocking : stream_flags::non_blocking;
  const int dev = device();
  sc::device_buffer<std::uint32_t> word(1);
  SC_CHECK_CUDA(cudaMemset(word.data(), 0, sizeof(std::uint32_t)));
  std::uint32_t host = 0;
  const std::pair<const char*, std::function<cudaError_t()>> calls[] = {
      {"device_synchronize", [] { return cudaDeviceSynchronize(); }},
      {"sync_copy", [&] { return cudaMemcpy(&host, word.data(), sizeof host, cudaMemcpyDeviceToHost); }},
  };
  for (const cudaStreamCaptureMode capture_mode : kModes) {
    for (const cudaStreamCaptureMode thread_mode : kModes) {
      for (const auto& [name, call] : calls) {
        const std::string cell = std::string(mode_name(capture_mode)) + "." + mode_name(thread_mode) + "." + name;
        SCOPED_TRACE(cell);
        const sc::stream s = make(capturing, "s");
        sc::marks m;
        sc::graph g;
        cudaError_t code = cudaErrorUnknown;
        std::string status;
        cudaError_t ended = cudaErrorUnknown;
        {
          sc::capture c(s, capture_mode);
          m.drop(s, 1);
          code = on_another_thread(dev, thread_mode, call);
          status = capture_status(s);
          ended = c.end(g);
        }
        sc::clear_last_error();
        EXPECT_TRUE(capt04.matches_baseline(cell, sc::error_name(code) + "; " + status + "; " + sc::error_name(ended)));
      }
    }
  }
}

// CAPT-06 (observed) · Programming Guide, stream capture ("Prohibited and Unhandled Operations"); user reports of
// refused calls that leave the capture valid with the work silently missing (rapidsai/rmm #2518, a batch copy) or
// that abort (microsoft/onnxruntime PR #32081, a graph launch into a capturing stream): in a ThreadLocal capture of
// s with one mark captured, the capturing thread makes one call into s. Row `<call>`: its code, the capture status
// after it, what ending the capture returned, and how many nodes the graph has.
TEST_F(StreamCapture, CallsACaptureRefusesAndWhetherItSurvives) {
  const sc::claim capt06("CAPT-06");
  const bool elsewhere = capt06.mutated(sc::mutation_kind::arrangement);
  const sc::stream recording = make(stream_flags::non_blocking, "recording");
  const sc::stream other = make(stream_flags::non_blocking, "other");
  sc::marks launched;
  const sc::graph small = graph_of_mark(recording, launched, 1);
  const sc::graph_exec small_exec = sc::graph_exec::instantiate(small);
  sc::device_buffer<std::uint32_t> source(64);
  sc::device_buffer<std::uint32_t> target(64);
  SC_CHECK_CUDA(cudaMemset(source.data(), 0, 64 * sizeof(std::uint32_t)));
  std::uint32_t pageable[64] = {};
  using call_fn = std::function<cudaError_t(cudaStream_t)>;
  const std::pair<const char*, call_fn> calls[] = {
      {"memcpy_batch",
       [&](cudaStream_t into) {
         void* dsts[] = {target.data()};
         const void* srcs[] = {source.data()};
         std::size_t sizes[] = {64 * sizeof(std::uint32_t)};
         cudaMemcpyAttributes attrs{};
         attrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
         std::size_t attr_index = 0;
         return cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attrs, &attr_index, 1, into);
       }},
      {"graph_launch", [&](cudaStream_t into) { return cudaGraphLaunch(small_exec.get(), into); }},
      {"pageable_copy",
       [&](cudaStream_t into) {
         return cudaMemcpyAsync(pageable, source.data(), sizeof pageable, cudaMemcpyDeviceToHost, into);
       }},
  };
  for (const auto& [name, call] : calls) {
    SCOPED_TRACE(name);
    const sc::stream s = make(stream_flags::non_blocking, "s");
    sc::marks m;
    sc::graph g;
    cudaError_t code = cudaErrorUnknown;
    std::string status;
    cudaError_t ended = cudaErrorUnknown;
    {
      sc::capture c(s, cudaStreamCaptureModeThreadLocal);
      m.drop(s, 1);
      code = sc::taking_last_error(call(elsewhere ? other.get() : s.get()));
      status = capture_status(s);
      ended = c.end(g);
    }
    sc::clear_last_error();
    const std::string nodes = g.engaged() ? std::to_string(g.node_count()) : "no graph";
    EXPECT_TRUE(capt06.matches_baseline(
        name, sc::error_name(code) + "; " + status + "; " + sc::error_name(ended) + "; " + nodes));
  }
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(other, sc::kWorkDeadline));
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(recording, sc::kWorkDeadline));
}

}  // namespace
