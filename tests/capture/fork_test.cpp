// CAPT-08: fork and join by events pull a second stream into a capture; the endings the documentation names
// for an unjoined fork, the wrong thread, an isolated wait and a merge, one test each.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "capture.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/thread_team.hpp"

namespace {

using sc::stream_flags;
using sc::families::StreamCapture;

// `to` waits on an event recorded in `from` now: in a capture, a fork (or a join back). The event is kept by
// the caller until the capture ended.
sc::event fork(const sc::stream& from, const sc::stream& to) {
  sc::event e = sc::event::create(sc::event_flags::disable_timing);
  SC_CHECK_CUDA(cudaEventRecord(e.get(), from.get()));
  SC_CHECK_CUDA(cudaStreamWaitEvent(to.get(), e.get(), 0));
  return e;
}

// CAPT-08 · Programming Guide, stream capture, "Cross-stream Dependencies and Events" (a stream that waits on an
// event recorded in a capture joins it; every forked stream must be joined back before the capture ends): s forks
// to t by an event and t joins back by another; the capture ends with both streams' marks as its nodes, and the
// launched graph runs both.
TEST_F(StreamCapture, ForkJoinedBackEndsAsOneGraphOfBothStreams) {
  const sc::claim capt08("CAPT-08");
  const bool joined = !capt08.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  sc::marks m;
  sc::graph g;
  {
    sc::capture c(s, cudaStreamCaptureModeThreadLocal);
    m.drop(s, 1);
    const sc::event forked = fork(s, t);
    m.drop(t, 2);
    const std::optional<sc::event> join = joined ? std::optional<sc::event>(fork(t, s)) : std::nullopt;
    const cudaError_t ended = sc::taking_last_error(c.end(g));
    sc::observe("end_capture", sc::error_name(ended));
    EXPECT_CUDA_EQ(cudaSuccess, ended) << "a capture whose fork was joined back";
  }
  if (!g.engaged()) return;
  EXPECT_EQ(2u, g.node_count()) << "both streams' marks should be nodes of the graph";
  const sc::graph_exec x = sc::graph_exec::instantiate(g);
  EXPECT_CUDA_EQ(cudaSuccess, launch(x, s, "fork_join"));
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(s, sc::kWorkDeadline));
  EXPECT_NE(0u, m.ticket_of(1)) << "the origin stream's node did not run";
  EXPECT_NE(0u, m.ticket_of(2)) << "the forked stream's node did not run";
}

// CAPT-08 · cudaErrorStreamCaptureUnjoined: a capture whose forked stream was never joined back ends with it;
// whether the forked stream still captures afterwards is recorded.
TEST_F(StreamCapture, ForkNeverJoinedEndsTheCaptureUnjoined) {
  const sc::claim capt08("CAPT-08");
  const bool joined = capt08.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  sc::marks m;
  sc::graph unjoined;
  sc::capture c(s, cudaStreamCaptureModeThreadLocal);
  const sc::event forked = fork(s, t);
  m.drop(t, 1);
  const std::optional<sc::event> join = joined ? std::optional<sc::event>(fork(t, s)) : std::nullopt;
  const cudaError_t ended = sc::taking_last_error(c.end(unjoined));
  sc::observe("end_capture", sc::error_name(ended));
  sc::observe("forked_stream_capturing_after", capture_status(t));
  EXPECT_CUDA_EQ(cudaErrorStreamCaptureUnjoined, ended) << "ending a capture with an unjoined fork";
}

// CAPT-08 · cudaErrorStreamCaptureWrongThread: a ThreadLocal capture ended from another thread ends with it (its
// own thread ends it afterwards).
TEST_F(StreamCapture, AnotherThreadEndingAThreadLocalCaptureIsTheWrongThread) {
  const sc::claim capt08("CAPT-08");
  const bool own_thread = capt08.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  sc::capture c(s, cudaStreamCaptureModeThreadLocal);
  sc::graph g;
  const cudaError_t ended =
      own_thread ? sc::taking_last_error(c.end(g)) : on_another_thread(device(), cudaStreamCaptureModeGlobal, [&s] {
        cudaGraph_t handle = nullptr;
        const cudaError_t code = cudaStreamEndCapture(s.get(), &handle);
        if (handle != nullptr) (void)cudaGraphDestroy(handle);
        return code;
      });
  sc::observe("end_capture", sc::error_name(ended));
  EXPECT_CUDA_EQ(cudaErrorStreamCaptureWrongThread, ended) << "another thread ending a ThreadLocal capture";
}

// CAPT-08 · cudaErrorStreamCaptureIsolation: a capture waiting on an event recorded outside any capture (and long
// complete) gets it; the status and the ending after it are recorded.
TEST_F(StreamCapture, CaptureWaitingOnAnEventFromOutsideIsIsolation) {
  const sc::claim capt08("CAPT-08");
  const bool inside = capt08.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  const sc::event outside = sc::event::create(sc::event_flags::disable_timing);
  ASSERT_CUDA_EQ(cudaSuccess, cudaEventRecord(outside.get(), t.get()));
  ASSERT_CUDA_EQ(cudaSuccess, sc::synchronize_within(t, sc::kWorkDeadline));
  sc::graph isolated;
  sc::capture c(s, cudaStreamCaptureModeThreadLocal);
  if (inside) {
    ASSERT_CUDA_EQ(cudaSuccess, cudaEventRecord(outside.get(), s.get()));
  }
  const cudaError_t waited = sc::taking_last_error(cudaStreamWaitEvent(s.get(), outside.get(), 0));
  sc::observe("status_after", capture_status(s));
  sc::observe("end_capture", sc::error_name(sc::taking_last_error(c.end(isolated))));
  sc::observe("wait", sc::error_name(waited));
  EXPECT_CUDA_EQ(cudaErrorStreamCaptureIsolation, waited) << "a capture waiting on an event recorded outside it";
}

// CAPT-08 · cudaErrorStreamCaptureMerge: t, capturing a sequence of its own, waits on an event recorded in s's
// capture and gets it; the statuses and endings after it are recorded.
TEST_F(StreamCapture, SecondCaptureWaitingOnTheFirstsEventIsAMerge) {
  const sc::claim capt08("CAPT-08");
  const bool t_captures = !capt08.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  const sc::event recorded = sc::event::create(sc::event_flags::disable_timing);
  sc::graph first;
  sc::graph second;
  sc::capture cs(s, cudaStreamCaptureModeThreadLocal);
  std::optional<sc::capture> ct;
  if (t_captures) ct.emplace(t, cudaStreamCaptureModeThreadLocal);
  ASSERT_CUDA_EQ(cudaSuccess, cudaEventRecord(recorded.get(), s.get()));
  const cudaError_t waited = sc::taking_last_error(cudaStreamWaitEvent(t.get(), recorded.get(), 0));
  sc::observe("status_after", capture_status(s) + ", " + capture_status(t));
  const cudaError_t ended_t = ct ? sc::taking_last_error(ct->end(second)) : cudaErrorIllegalState;
  const cudaError_t ended_s = sc::taking_last_error(cs.end(first));
  sc::observe("end_capture", sc::error_name(ended_s) + ", " + sc::error_name(ended_t));
  sc::observe("wait", sc::error_name(waited));
  EXPECT_CUDA_EQ(cudaErrorStreamCaptureMerge, waited) << "a wait that would merge two capture sequences";
}

}  // namespace
