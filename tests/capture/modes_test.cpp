// CAPT-02, CAPT-03: potentially unsafe calls during a capture, per capture mode and per thread mode
// (RT cudaThreadExchangeStreamCaptureMode). The unsafe call is cudaMalloc, the example the documentation gives.
// Return codes are compared by name; what ending the capture returns after a refused call is recorded.
#include <gtest/gtest.h>

#include <string>

#include "capture.hpp"
#include "sc/fixtures/check.hpp"

namespace {

using sc::stream_flags;
using sc::families::StreamCapture;

// Reason for 256 bytes: any size is an allocation; the smallest keeps the test's footprint nil.
constexpr std::size_t kBytes = 256;

// CAPT-02 · RT cudaThreadExchangeStreamCaptureMode ("If the local thread has an ongoing capture sequence that
// was not initiated with cudaStreamCaptureModeRelaxed ... this thread is prohibited from potentially unsafe API
// calls"; cudaMalloc is the example): on the capturing thread, cudaMalloc is refused under a Global and a
// ThreadLocal capture, and that capture then cannot end cleanly; under a Relaxed capture it succeeds and the
// capture ends with its graph.
TEST_F(StreamCapture, UnsafeCallOnTheCapturingThreadPerMode) {
  const sc::claim capt02("CAPT-02");
  const bool safe_call = capt02.mutated(sc::mutation_kind::arrangement);
  // The rules are the thread's: this thread is in Global mode (the default) for the test, whatever it was before.
  const sc::thread_capture_mode global(cudaStreamCaptureModeGlobal);
  sc::observe("thread_mode_before", mode_name(global.previous()));
  for (const cudaStreamCaptureMode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    const sc::stream s = make(stream_flags::non_blocking, std::string("s_") + mode_name(mode));
    void* p = nullptr;
    int dev = -1;
    const call_in_capture got =
        in_a_capture_of(s, mode, [&] { return safe_call ? cudaGetDevice(&dev) : cudaMalloc(&p, kBytes); });
    if (p != nullptr) {
      EXPECT_CUDA_EQ(cudaSuccess, cudaFree(p));
    }
    sc::observe(std::string(mode_name(mode)) + ".call", sc::error_name(got.code));
    sc::observe(std::string(mode_name(mode)) + ".end_capture", sc::error_name(got.ended));
    if (mode == cudaStreamCaptureModeRelaxed) {
      EXPECT_CUDA_EQ(cudaSuccess, got.code) << "cudaMalloc refused on the thread of a Relaxed capture";
      EXPECT_CUDA_EQ(cudaSuccess, got.ended) << "a Relaxed capture after cudaMalloc";
    } else {
      EXPECT_CUDA_EQ(cudaErrorStreamCaptureUnsupported, got.code) << "cudaMalloc on the capturing thread";
      EXPECT_CUDA_EQ(cudaErrorStreamCaptureInvalidated, got.ended) << "ending the capture after a refused unsafe call";
    }
  }
}

// CAPT-03 · RT cudaThreadExchangeStreamCaptureMode (a thread in Global mode is prohibited from potentially unsafe
// calls "if any other thread has a concurrent capture sequence initiated with cudaStreamCaptureModeGlobal";
// ThreadLocal: "Concurrent capture sequences in other threads are ignored"; Relaxed: not prohibited): while this
// thread captures in each mode, another thread in each mode calls cudaMalloc. It is refused only when the
// capture is Global and the other thread's mode is Global. What ending the capture returns is recorded.
TEST_F(StreamCapture, UnsafeCallFromAnotherThreadPerMode) {
  const sc::claim capt03("CAPT-03");
  const bool relax = capt03.mutated(sc::mutation_kind::arrangement);
  for (const cudaStreamCaptureMode capture_mode : kModes) {
    for (const cudaStreamCaptureMode thread_mode : kModes) {
      const std::string cell = std::string(mode_name(capture_mode)) + "." + mode_name(thread_mode);
      SCOPED_TRACE(cell);
      const bool both_global =
          capture_mode == cudaStreamCaptureModeGlobal && thread_mode == cudaStreamCaptureModeGlobal;
      const sc::stream s = make(stream_flags::non_blocking, "s_" + cell);
      void* p = nullptr;
      const beside_a_capture got =
          call_beside_a_capture(s, capture_mode, relax && both_global ? cudaStreamCaptureModeRelaxed : thread_mode,
                                [&] { return cudaMalloc(&p, kBytes); });
      ASSERT_TRUE(got.started) << "the other thread did not start";
      ASSERT_CUDA_EQ(cudaSuccess, got.prepared) << "setting the other thread's device and mode";
      EXPECT_TRUE(got.called) << "the other thread's call";
      if (p != nullptr) {
        EXPECT_CUDA_EQ(cudaSuccess, cudaFree(p));
      }
      sc::observe(cell + ".call", sc::error_name(got.code));
      sc::observe(cell + ".end_capture", sc::error_name(got.ended));
      if (both_global) {
        EXPECT_CUDA_EQ(cudaErrorStreamCaptureUnsupported, got.code)
            << "cudaMalloc from a Global thread beside a Global capture";
      } else {
        EXPECT_CUDA_EQ(cudaSuccess, got.code) << "cudaMalloc from another thread that this capture does not restrict";
      }
    }
  }
}

}  // namespace
