// CAPT-05: legacy-stream work beside a capture. Beside a capture in a non-blocking stream it runs at once and is
// not captured; beside a capture in a blocking stream it is refused and the capture is invalidated. From another
// thread beside a blocking Global capture, what happens is recorded.
#include <gtest/gtest.h>

#include <string>

#include "capture.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/thread_team.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::testing::StreamCapture;

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

// CAPT-05 · Programming Guide, stream capture ("When any stream in the same context is being captured, and it was
// not created with cudaStreamNonBlocking, any attempted use of the legacy stream is invalid"),
// cudaErrorStreamCaptureImplicit: (a) beside a capture in a non-blocking stream, a mark launched into the legacy
// stream is accepted, lands at once, and is not a node of the captured graph; (b) beside a capture in a blocking
// stream the same launch is refused with cudaErrorStreamCaptureImplicit, never runs, and the capture ends with an
// error; (c) the launch made from another thread beside a blocking Global capture: its code, the capture's
// ending and whether the mark ran, compared with the baseline (row other_thread_beside_a_blocking_global_capture).
TEST_F(StreamCapture, LegacyStreamWorkBesideACapture) {
  const sc::claim capt05("CAPT-05", sc::verdict_kind::documented,
                         "Programming Guide: stream capture (use of the legacy stream beside a capture)");
  // Mutation (arrangement): in (a) the capturing stream is a blocking one.
  const stream_flags first_kind =
      capt05.mutated(sc::mutation_kind::arrangement) ? stream_flags::blocking : stream_flags::non_blocking;
  const sc::stream s = make(first_kind, "s");
  const sc::stream b = make(stream_flags::blocking, "b");
  sc::marks m;

  // (a) beside a non-blocking capture
  {
    sc::graph g;
    sc::capture c(s, cudaStreamCaptureModeThreadLocal);
    m.drop(s, 1);
    const cudaError_t launched = legacy_mark(m, 2);
    sc::observe("non_blocking.legacy_launch", sc::error_name(launched));
    EXPECT_CUDA_EQ(cudaSuccess, launched) << "legacy-stream work beside a capture in a non-blocking stream";
    EXPECT_TRUE(lands_within(m, 2, sc::kLandingDeadline)) << "the legacy-stream mark did not run at once";
    const cudaError_t ended = c.end(g);
    EXPECT_CUDA_EQ(cudaSuccess, ended) << "ending the non-blocking capture";
    if (g.engaged()) {
      EXPECT_EQ(1u, g.node_count()) << "the legacy-stream work was captured";
    }
  }
  (void)cudaGetLastError();

  // (b) beside a blocking capture, from the capturing thread
  {
    sc::graph g;
    sc::capture c(b, cudaStreamCaptureModeThreadLocal);
    const cudaError_t launched = legacy_mark(m, 3);
    const cudaError_t ended = c.end(g);
    (void)cudaGetLastError();
    sc::observe("blocking.legacy_launch", sc::error_name(launched));
    sc::observe("blocking.end_capture", sc::error_name(ended));
    EXPECT_CUDA_EQ(cudaErrorStreamCaptureImplicit, launched) << "legacy-stream work beside a blocking capture";
    EXPECT_NE(cudaSuccess, ended) << "the blocking capture ended cleanly after the refused legacy use";
    EXPECT_FALSE(lands_within(m, 3)) << "the refused legacy-stream work ran";
  }

  // (c) beside a blocking Global capture, from another thread: recorded
  {
    const int dev = device();
    int step = 0;
    cudaError_t launched = cudaErrorUnknown;
    sc::thread_team team;
    team.start(1, [&](unsigned) {
      const cudaError_t set = cudaSetDevice(dev);
      team.update([&] { step = 1; });
      if (!team.wait_until([&] { return step == 2; }, sc::kWorkDeadline)) return;
      const cudaError_t code = set == cudaSuccess ? legacy_mark(m, 4) : set;
      (void)cudaGetLastError();
      team.update([&] {
        launched = code;
        step = 3;
      });
    });
    ASSERT_TRUE(team.wait_until([&] { return step == 1; }, sc::kWorkDeadline)) << "the other thread did not start";
    sc::graph g;
    cudaError_t ended = cudaSuccess;
    {
      sc::capture c(b, cudaStreamCaptureModeGlobal);
      team.update([&] { step = 2; });
      EXPECT_TRUE(team.wait_until([&] { return step == 3; }, sc::kWorkDeadline)) << "the other thread's launch";
      ended = c.end(g);
    }
    team.end();
    (void)cudaGetLastError();
    sc::observe("other_thread.legacy_launch", sc::error_name(launched));
    sc::observe("other_thread.end_capture", sc::error_name(ended));
    const bool landed = lands_within(m, 4, sc::kLandingDeadline);
    sc::observe("other_thread.mark_landed", landed);
    EXPECT_TRUE(capt05.matches_baseline(
        "other_thread_beside_a_blocking_global_capture",
        sc::error_name(launched) + "; " + sc::error_name(ended) + "; " + (landed ? "ran" : "did not run")));
  }
  drain();
}

}  // namespace
