// CAPT-05: legacy-stream work beside a capture, in each capture mode. Beside a capture of a non-blocking stream it
// runs at once and is not captured; beside a capture of a blocking stream it is refused and the capture is
// invalidated. From another thread beside a blocking Global capture, what happens is compared with the baseline.
//
// The guide's rule is about the streams, not the capture mode: the legacy stream always takes in the blocking
// streams, so using it beside a blocking stream's capture would make a dependency on captured work (the header of
// cudaStreamIsCapturing says the same: the legacy stream is unusable while a blocking stream captures). The modes
// decide which threads may make potentially unsafe calls (CAPT-02, CAPT-03); a launch is not one of them. So (a)
// and (b) run under every mode: value-parameterized tests, one instance per mode (Global, ThreadLocal, Relaxed).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "capture.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::StreamCapture;

// Enqueues mark `id` of `m` into the legacy stream and returns the launch's code (a refused launch is the
// behavior under test here, not a failure of the arrangement).
cudaError_t legacy_mark(sc::marks& m, unsigned id) {
  cudaError_t code = cudaSuccess;
  m.drop_by(id, [&](std::uint32_t* counter, sc::kernels::mark_board* board, unsigned slot) {
    code = sc::kernels::launch_mark(cudaStreamLegacy, counter, board, slot);
    return cudaSuccess;
  });
  return code;
}

// The capturing stream's kind: `kind`, or the other kind under CAPT-05's mutation (arrangement).
stream_flags capturing_kind(const sc::claim& capt05, stream_flags kind) {
  if (!capt05.mutated(sc::mutation_kind::arrangement)) return kind;
  return kind == stream_flags::blocking ? stream_flags::non_blocking : stream_flags::blocking;
}

// CAPT-05's scenarios that run in every capture mode: one instance per mode, the mode the test's parameter.
class StreamCaptureInEachMode : public StreamCapture, public ::testing::WithParamInterface<cudaStreamCaptureMode> {};

// CAPT-05 (a) · Programming Guide, stream capture (the rule names streams "not created with cudaStreamNonBlocking"
// only): while s, a non-blocking stream, captures mark 1 in the instance's mode, mark 2 is launched into the legacy
// stream from the capturing thread: the launch is accepted and the mark lands while the capture is still open; the
// capture ends with the one captured mark as its graph.
TEST_P(StreamCaptureInEachMode, LegacyStreamWorkRunsBesideANonBlockingCapture) {
  const sc::claim capt05("CAPT-05");
  const sc::stream s = make(capturing_kind(capt05, stream_flags::non_blocking), "s");
  sc::marks m;
  const call_in_capture got = in_a_capture_of(s, GetParam(), [&] {
    m.drop(s, 1);
    const cudaError_t launched = legacy_mark(m, 2);
    EXPECT_TRUE(lands_within(m, 2, sc::kLandingDeadline)) << "the legacy-stream mark did not run at once";
    return launched;
  });
  sc::observe("legacy_launch", sc::error_name(got.code));
  sc::observe("end_capture", sc::error_name(got.ended));
  EXPECT_CUDA_EQ(cudaSuccess, got.code) << "legacy-stream work beside a capture of a non-blocking stream";
  EXPECT_CUDA_EQ(cudaSuccess, got.ended) << "ending the capture of the non-blocking stream";
  if (got.g.engaged()) {
    EXPECT_EQ(1u, got.g.node_count()) << "the legacy-stream work was captured";
  }
}

// CAPT-05 (b) · Programming Guide, stream capture ("When any stream in the same context is being captured, and it
// was not created with cudaStreamNonBlocking, any attempted use of the legacy stream is invalid"),
// cudaErrorStreamCaptureImplicit: while b, a blocking stream, captures in the instance's mode, a mark launched into
// the legacy stream from the capturing thread is refused, never runs, and the capture then ends with an error. (In
// the Relaxed instance too: Relaxed frees the thread from the unsafe-call rules, not the legacy stream from its
// implicit dependency on the blocking stream.)
TEST_P(StreamCaptureInEachMode, LegacyStreamWorkIsRefusedBesideABlockingCapture) {
  const sc::claim capt05("CAPT-05");
  const sc::stream b = make(capturing_kind(capt05, stream_flags::blocking), "b");
  sc::marks m;
  const call_in_capture got = in_a_capture_of(b, GetParam(), [&] { return legacy_mark(m, 1); });
  sc::observe("legacy_launch", sc::error_name(got.code));
  sc::observe("end_capture", sc::error_name(got.ended));
  EXPECT_CUDA_EQ(cudaErrorStreamCaptureImplicit, got.code) << "legacy-stream work beside a blocking capture";
  EXPECT_NE(cudaSuccess, got.ended) << "the blocking capture ended cleanly after the refused legacy use";
  EXPECT_FALSE(lands_within(m, 1)) << "the refused legacy-stream work ran";
}

// The instances' names: the capture modes in PascalCase.
std::string mode_instance_name(const ::testing::TestParamInfo<cudaStreamCaptureMode>& mode) {
  switch (mode.param) {
    case cudaStreamCaptureModeGlobal:
      return "Global";
    case cudaStreamCaptureModeThreadLocal:
      return "ThreadLocal";
    case cudaStreamCaptureModeRelaxed:
      return "Relaxed";
  }
  return "Unknown";
}

INSTANTIATE_TEST_SUITE_P(, StreamCaptureInEachMode, ::testing::ValuesIn(StreamCapture::kModes), mode_instance_name);

// CAPT-05 (c) · the guide's rule names no thread: a mark launched into the legacy stream from another thread while
// this thread captures b (blocking) in Global mode. Its code, the capture's ending and whether the mark ran are
// compared with the baseline (row other_thread_beside_a_blocking_global_capture, gating).
TEST_F(StreamCapture, LegacyStreamWorkFromAnotherThreadBesideABlockingGlobalCapture) {
  const sc::claim capt05("CAPT-05");
  const sc::stream b = make(capturing_kind(capt05, stream_flags::blocking), "b");
  sc::marks m;
  // The other thread keeps its own capture mode (Global, the default).
  const beside_a_capture got =
      call_beside_a_capture(b, cudaStreamCaptureModeGlobal, std::nullopt, [&] { return legacy_mark(m, 1); });
  ASSERT_TRUE(got.started) << "the other thread did not start";
  EXPECT_TRUE(got.called) << "the other thread's launch";
  const bool landed = lands_within(m, 1, sc::kLandingDeadline);
  sc::observe("other_thread.legacy_launch", sc::error_name(got.code));
  sc::observe("other_thread.end_capture", sc::error_name(got.ended));
  sc::observe("other_thread.mark_landed", landed);
  EXPECT_TRUE(capt05.matches_baseline(
      "other_thread_beside_a_blocking_global_capture",
      sc::error_name(got.code) + "; " + sc::error_name(got.ended) + "; " + (landed ? "ran" : "did not run")));
}

}  // namespace
