// CAPT-07: synchronizing or querying a capturing stream, or an event recorded in a capture, is refused (CUDA
// Programming Guide, stream capture, "Prohibited and Unhandled Operations": invalid, and an invalid operation
// invalidates the capture); an event recorded with cudaEventRecordExternal becomes a node that signals the
// event when the graph runs, once the work captured ahead of it ran.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "capture.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/event.hpp"

namespace {

using sc::stream_flags;
using sc::families::StreamCapture;

// A call that a capture must refuse, and the code it must refuse it with (cudaErrorUnknown: any error).
struct refused_call {
  const char* name;
  std::function<cudaError_t()> call;
  cudaError_t expected;
};

// CAPT-07 · CUDA Programming Guide, stream capture ("It is invalid to synchronize or query the execution status of
// a stream which is being captured or a captured event"; "When an invalid operation is attempted during stream
// capture, any associated capture graphs are invalidated"), cudaErrorCapturedEvent: cudaStreamQuery and
// cudaStreamSynchronize of the capturing stream, and cudaEventQuery of an event recorded in the capture, are
// refused, each in a capture of its own, which must then end with an error.
TEST_F(StreamCapture, QueriesOfCapturedWorkAreRefused) {
  const sc::claim capt07("CAPT-07");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream idle = make(stream_flags::non_blocking, "idle");
  const sc::stream& asked = capt07.mutated(sc::mutation_kind::arrangement) ? idle : s;
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  const refused_call calls[] = {
      {"cudaStreamQuery", [&] { return cudaStreamQuery(asked.get()); }, cudaErrorUnknown},
      {"cudaStreamSynchronize", [&] { return cudaStreamSynchronize(asked.get()); }, cudaErrorUnknown},
      {"cudaEventQuery",
       [&] {
         SC_CHECK_CUDA(cudaEventRecord(e.get(), asked.get()));
         return cudaEventQuery(e.get());
       },
       cudaErrorCapturedEvent},
  };
  for (const refused_call& r : calls) {
    SCOPED_TRACE(r.name);
    const call_in_capture got = in_a_capture_of(s, cudaStreamCaptureModeThreadLocal, r.call);
    sc::observe(std::string(r.name) + ".code", sc::error_name(got.code));
    sc::observe(std::string(r.name) + ".end_capture", sc::error_name(got.ended));
    if (r.expected == cudaErrorUnknown) {
      EXPECT_NE(cudaSuccess, got.code) << r.name << " on a capturing stream was not refused";
    } else {
      EXPECT_CUDA_EQ(r.expected, got.code) << r.name << " on an event recorded in the capture";
    }
    EXPECT_NE(cudaSuccess, got.ended) << "the capture ended cleanly after " << r.name << " was refused";
    EXPECT_EQ("none", capture_status(s)) << "the stream still captures after its capture ended";
  }
}

// Captures into `out`, in `s` (ThreadLocal): latch `g` held as a kernel node, mark 1 of `m`, and a record of `e` with
// cudaEventRecordExternal after them, or ahead of them when `record_first`. Each step must be accepted (use under
// ASSERT_NO_FATAL_FAILURE).
void capture_latch_mark_and_external_record(StreamCapture& t, const sc::stream& s, sc::latch& g, sc::marks& m,
                                            const sc::event& e, bool record_first, sc::graph& out) {
  const auto record = [&] { return cudaEventRecordWithFlags(e.get(), s.get(), cudaEventRecordExternal); };
  sc::capture c(s, cudaStreamCaptureModeThreadLocal);
  if (record_first) {
    ASSERT_CUDA_EQ(cudaSuccess, record());
  }
  t.hold(g, s);
  t.drop(m, s, 1);
  if (!record_first) {
    ASSERT_CUDA_EQ(cudaSuccess, record());
  }
  ASSERT_CUDA_EQ(cudaSuccess, c.end(out)) << "a capture with an external event record";
}

// CAPT-07 · RT cudaEventRecordWithFlags (cudaEventRecordExternal: captured as an external event-record node),
// cudaGraphAddEventRecordNode ("Each launch of the graph will record event to capture execution of the node's
// dependencies"): a graph captured as a latch node, mark 1 and an external record of e has one event-record node;
// launched, e does not complete while the latch ahead of the record is closed (nor does the mark land), and
// completes once the latch opened and the graph ran.
TEST_F(StreamCapture, ExternalEventRecordCompletesAfterTheWorkAheadOfIt) {
  const sc::claim capt07("CAPT-07");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool first = capt07.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream idle = make(stream_flags::non_blocking, "idle");
  const sc::event external = sc::event::create(sc::event_flags::disable_timing);
  sc::marks m;
  sc::latch latch;  // held by a node of the graph, so made before it
  sc::graph g;
  ASSERT_NO_FATAL_FAILURE(capture_latch_mark_and_external_record(*this, s, latch, m, external, first, g));
  EXPECT_EQ(1u, g.node_count(cudaGraphNodeTypeEventRecord)) << "the external record is not an event-record node";
  const sc::graph_exec x = sc::graph_exec::instantiate(g);
  EXPECT_CUDA_EQ(cudaSuccess, launch(x, idle, "external"));
  const sc::probe completed("the external event completed",
                            [&] { return cudaEventQuery(external.get()) == cudaSuccess; });
  {
    sc::held_window w(latch);
    EXPECT_TRUE(w.absent(completed)) << "the event completed while work captured ahead of its record was held";
    EXPECT_TRUE(w.absent(sc::probe::mark(m, 1))) << "the graph's mark ran before the latch node ahead of it";
  }
  sc::clear_last_error();
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(idle, sc::kWorkDeadline));
  EXPECT_CUDA_EQ(cudaSuccess, cudaEventQuery(external.get())) << "the external event once the graph ran";
  EXPECT_NE(0u, m.ticket_of(1)) << "the graph's mark never landed";
}

}  // namespace
