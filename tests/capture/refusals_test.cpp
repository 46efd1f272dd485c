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

// What one call made during a capture did to it (outcome_in_a_capture).
struct capture_outcome {
  cudaError_t code = cudaErrorUnknown;   // the call's
  std::string status;                    // the stream's capture status after the call
  cudaError_t ended = cudaErrorUnknown;  // what ending the capture returned
  std::string nodes;                     // how many nodes the graph it ended with has, or "no graph"
  // "<call's code>; <status after it>; <what ending the capture returned>"
  std::string row() const { return sc::error_name(code) + "; " + status + "; " + sc::error_name(ended); }
};

// While `s` captures in `mode`, with mark 1 of a board of its own captured, `call` is made (its code is the
// call's); the capture is then ended and this thread's last error cleared.
capture_outcome outcome_in_a_capture(const sc::stream& s, cudaStreamCaptureMode mode,
                                     const std::function<cudaError_t()>& call) {
  capture_outcome out;
  sc::marks m;
  sc::graph g;
  {
    sc::capture c(s, mode);
    m.drop(s, 1);
    out.code = call();
    out.status = StreamCapture::capture_status(s);
    out.ended = c.end(g);
  }
  sc::clear_last_error();
  out.nodes = g.engaged() ? std::to_string(g.node_count()) : "no graph";
  return out;
}

// A call and the name of its baseline row; CAPT-06's calls are made into a stream.
struct named_call {
  const char* name;
  std::function<cudaError_t()> call;
};
struct named_call_into {
  const char* name;
  std::function<cudaError_t(cudaStream_t)> call;
};

// One copy of `src` to `dst` (buffers of the same size) as a batch of one (cudaMemcpyBatchAsync) into `s`, its
// source read in stream order.
cudaError_t batch_of_one_copy(sc::device_buffer<std::uint32_t>& dst, const sc::device_buffer<std::uint32_t>& src,
                              cudaStream_t s) {
  void* dsts[] = {dst.data()};
  const void* srcs[] = {src.data()};
  std::size_t sizes[] = {src.size() * sizeof(std::uint32_t)};
  cudaMemcpyAttributes attrs{};
  attrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  std::size_t attr_index = 0;
  return cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attrs, &attr_index, 1, s);
}

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
  const named_call calls[] = {
      {"device_synchronize", [] { return cudaDeviceSynchronize(); }},
      {"sync_copy", [&] { return cudaMemcpy(&host, word.data(), sizeof host, cudaMemcpyDeviceToHost); }},
  };
  for (const cudaStreamCaptureMode capture_mode : kModes) {
    for (const cudaStreamCaptureMode thread_mode : kModes) {
      for (const named_call& c : calls) {
        const std::string cell = std::string(mode_name(capture_mode)) + "." + mode_name(thread_mode) + "." + c.name;
        SCOPED_TRACE(cell);
        const sc::stream s = make(capturing, "s");
        const capture_outcome got =
            outcome_in_a_capture(s, capture_mode, [&] { return on_another_thread(dev, thread_mode, c.call); });
        EXPECT_TRUE(capt04.matches_baseline(cell, got.row()));
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
  sc::marks launched;
  const sc::graph_exec small_exec = exec_of_mark(recording, launched, 1);
  const sc::stream other = make(stream_flags::non_blocking, "other");
  sc::device_buffer<std::uint32_t> source(64);
  sc::device_buffer<std::uint32_t> target(64);
  SC_CHECK_CUDA(cudaMemset(source.data(), 0, 64 * sizeof(std::uint32_t)));
  std::uint32_t pageable[64] = {};
  const named_call_into calls[] = {
      {"memcpy_batch", [&](cudaStream_t into) { return batch_of_one_copy(target, source, into); }},
      {"graph_launch", [&](cudaStream_t into) { return cudaGraphLaunch(small_exec.get(), into); }},
      {"pageable_copy",
       [&](cudaStream_t into) {
         return cudaMemcpyAsync(pageable, source.data(), sizeof pageable, cudaMemcpyDeviceToHost, into);
       }},
  };
  for (const named_call_into& c : calls) {
    SCOPED_TRACE(c.name);
    const sc::stream s = make(stream_flags::non_blocking, "s");
    const capture_outcome got = outcome_in_a_capture(s, cudaStreamCaptureModeThreadLocal, [&] {
      return sc::taking_last_error(c.call(elsewhere ? other.get() : s.get()));
    });
    EXPECT_TRUE(capt06.matches_baseline(c.name, got.row() + "; " + got.nodes));
  }
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(other, sc::kWorkDeadline));
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(recording, sc::kWorkDeadline));
}

}  // namespace
