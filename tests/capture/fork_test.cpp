// CAPT-08: fork and join by events pull a second stream into a capture; the endings the documentation names
// for an unjoined fork and for the wrong thread.
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

// CAPT-08 · Programming Guide, stream capture, "Cross-stream Dependencies and Events" (a stream that waits on an
// event recorded in a capture joins it; every forked stream must be joined back before the capture ends);
// cudaErrorStreamCaptureUnjoined, cudaErrorStreamCaptureWrongThread: (a) s forks to t by an event and t joins
// back by another: the capture ends with both streams' marks as nodes, and the launched graph runs both; (b)
// without the join the capture ends with cudaErrorStreamCaptureUnjoined; (c) a ThreadLocal capture ended from
// another thread ends with cudaErrorStreamCaptureWrongThread (its own thread ends it afterwards); (d) a capture
// waiting on an event recorded outside any capture gets cudaErrorStreamCaptureIsolation; (e) a stream capturing a
// sequence of its own that waits on an event of another capture gets cudaErrorStreamCaptureMerge. Whether the
// forked stream still captures after (b), and the statuses and endings after (d) and (e), are recorded.
TEST_F(StreamCapture, ForkAndJoinByEventsAndTheirEndings) {
  const sc::claim capt08("CAPT-08");
  // Mutation (arrangement): in (a), t is not joined back; in (d) the event waited on is recorded in the capture
  // first; in (e) the waiting stream is not capturing (its wait forks into the other capture).
  const bool no_join = capt08.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  const sc::event fork = sc::event::create(sc::event_flags::disable_timing);
  const sc::event join = sc::event::create(sc::event_flags::disable_timing);

  // (a) fork and join
  sc::marks m;
  sc::graph g;
  {
    sc::capture c(s, cudaStreamCaptureModeThreadLocal);
    m.drop(s, 1);
    ASSERT_CUDA_EQ(cudaSuccess, cudaEventRecord(fork.get(), s.get()));
    ASSERT_CUDA_EQ(cudaSuccess, cudaStreamWaitEvent(t.get(), fork.get(), 0));
    m.drop(t, 2);
    if (!no_join) {
      ASSERT_CUDA_EQ(cudaSuccess, cudaEventRecord(join.get(), t.get()));
      ASSERT_CUDA_EQ(cudaSuccess, cudaStreamWaitEvent(s.get(), join.get(), 0));
    }
    const cudaError_t ended = c.end(g);
    sc::observe("fork_join.end_capture", sc::error_name(ended));
    EXPECT_CUDA_EQ(cudaSuccess, ended) << "a capture whose fork was joined back";
  }
  (void)cudaGetLastError();
  if (g.engaged()) {
    EXPECT_EQ(2u, g.node_count()) << "both streams' marks should be nodes of the graph";
    const sc::graph_exec x = sc::graph_exec::instantiate(g);
    EXPECT_CUDA_EQ(cudaSuccess, launch(x, s, "fork_join"));
    EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(s, sc::kWorkDeadline));
    EXPECT_NE(0u, m.ticket_of(1)) << "the origin stream's node did not run";
    EXPECT_NE(0u, m.ticket_of(2)) << "the forked stream's node did not run";
  }

  // (b) a fork that is never joined
  {
    sc::graph unjoined;
    sc::capture c(s, cudaStreamCaptureModeThreadLocal);
    ASSERT_CUDA_EQ(cudaSuccess, cudaEventRecord(fork.get(), s.get()));
    ASSERT_CUDA_EQ(cudaSuccess, cudaStreamWaitEvent(t.get(), fork.get(), 0));
    m.drop(t, 3);
    const cudaError_t ended = sc::taking_last_error(c.end(unjoined));
    sc::observe("unjoined.end_capture", sc::error_name(ended));
    sc::observe("unjoined.forked_stream_capturing_after", capture_status(t));
    EXPECT_CUDA_EQ(cudaErrorStreamCaptureUnjoined, ended) << "ending a capture with an unjoined fork";
  }
  (void)cudaGetLastError();

  // (c) the wrong thread ends a ThreadLocal capture
  {
    sc::capture c(s, cudaStreamCaptureModeThreadLocal);
    const int dev = device();
    cudaError_t other = cudaErrorUnknown;
    sc::thread_team team;
    team.start(1, [&](unsigned) {
      cudaGraph_t handle = nullptr;
      cudaError_t code = cudaSetDevice(dev);
      if (code == cudaSuccess) code = cudaStreamEndCapture(s.get(), &handle);
      if (handle != nullptr) (void)cudaGraphDestroy(handle);
      team.update([&] { other = code; });
    });
    team.end();
    sc::observe("wrong_thread.end_capture", sc::error_name(other));
    EXPECT_CUDA_EQ(cudaErrorStreamCaptureWrongThread, other) << "another thread ending a ThreadLocal capture";
  }
  (void)cudaGetLastError();

  // (d) isolation: the capture waits on an event recorded outside any capture (and long complete); fresh streams,
  // whatever (b) left. Under the mutation the event is recorded inside the capture first: a plain wait.
  {
    const sc::stream s4 = make(stream_flags::non_blocking, "s_isolation");
    const sc::stream t4 = make(stream_flags::non_blocking, "t_isolation");
    const sc::event outside = sc::event::create(sc::event_flags::disable_timing);
    ASSERT_CUDA_EQ(cudaSuccess, cudaEventRecord(outside.get(), t4.get()));
    ASSERT_CUDA_EQ(cudaSuccess, sc::synchronize_within(t4, sc::kWorkDeadline));
    sc::graph isolated;
    sc::capture c(s4, cudaStreamCaptureModeThreadLocal);
    if (no_join) {
      ASSERT_CUDA_EQ(cudaSuccess, cudaEventRecord(outside.get(), s4.get()));
    }
    const cudaError_t waited = sc::taking_last_error(cudaStreamWaitEvent(s4.get(), outside.get(), 0));
    const std::string status = capture_status(s4);
    const cudaError_t ended = c.end(isolated);
    sc::observe("isolation.wait", sc::error_name(waited));
    sc::observe("isolation.status_after", status);
    sc::observe("isolation.end_capture", sc::error_name(ended));
    EXPECT_CUDA_EQ(cudaErrorStreamCaptureIsolation, waited) << "a capture waiting on an event recorded outside it";
  }
  (void)cudaGetLastError();

  // (e) merge: t, capturing a sequence of its own, waits on an event recorded in s's capture; fresh streams. Under
  // the mutation t is not capturing, so the wait is a fork into s's capture.
  {
    const sc::stream s5 = make(stream_flags::non_blocking, "s_merge");
    const sc::stream t5 = make(stream_flags::non_blocking, "t_merge");
    sc::graph first;
    sc::graph second;
    sc::capture cs(s5, cudaStreamCaptureModeThreadLocal);
    std::optional<sc::capture> ct;
    if (!no_join) ct.emplace(t5, cudaStreamCaptureModeThreadLocal);
    ASSERT_CUDA_EQ(cudaSuccess, cudaEventRecord(fork.get(), s5.get()));
    const cudaError_t waited = sc::taking_last_error(cudaStreamWaitEvent(t5.get(), fork.get(), 0));
    const std::string status_s = capture_status(s5);
    const std::string status_t = capture_status(t5);
    const cudaError_t ended_t = ct ? ct->end(second) : cudaErrorIllegalState;
    const cudaError_t ended_s = cs.end(first);
    sc::observe("merge.wait", sc::error_name(waited));
    sc::observe("merge.status_after", status_s + ", " + status_t);
    sc::observe("merge.end_capture", sc::error_name(ended_s) + ", " + sc::error_name(ended_t));
    EXPECT_CUDA_EQ(cudaErrorStreamCaptureMerge, waited) << "a wait that would merge two capture sequences";
  }
  (void)cudaGetLastError();
}

}  // namespace
