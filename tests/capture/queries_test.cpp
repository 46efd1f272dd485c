// CAPT-07: synchronizing or querying a capturing stream, or an event recorded in a capture, is refused (CUDA
// Programming Guide, stream capture, "Prohibited and Unhandled Operations": invalid, and an invalid operation
// invalidates the capture); an event recorded with cudaEventRecordExternal becomes a node that signals the
// event when the graph runs.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "capture.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/event.hpp"

namespace {

using sc::stream_flags;
using sc::testing::StreamCapture;

// CAPT-07 · CUDA Programming Guide, stream capture ("It is invalid to synchronize or query the execution status of
// a stream which is being captured or a captured event"; "When an invalid operation is attempted during stream
// capture, any associated capture graphs are invalidated"), cudaErrorCapturedEvent; RT cudaEventRecordWithFlags
// (cudaEventRecordExternal): each refused call gets a capture of its own, which must then end with an error; the
// external record becomes an event-record node, and the event completes once the launched graph ran.
TEST_F(StreamCapture, QueriesOfCapturedWorkAreRefusedAndExternalEventsSignal) {
  const sc::claim capt07("CAPT-07", sc::verdict_kind::documented,
                         "Programming Guide: stream capture, prohibited operations; RT cudaEventRecordWithFlags");
  // Mutation (arrangement): the stream and the event asked about are another stream's, which is not capturing,
  // and the external record is a plain one (no node).
  const bool elsewhere = capt07.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream idle = make(stream_flags::non_blocking, "idle");
  const sc::stream& asked = elsewhere ? idle : s;
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  struct refused {
    const char* name;
    std::function<cudaError_t()> call;
    cudaError_t expected;  // cudaErrorUnknown: any error
  };
  const std::vector<refused> calls = {
      {"cudaStreamQuery", [&] { return cudaStreamQuery(asked.get()); }, cudaErrorUnknown},
      {"cudaStreamSynchronize", [&] { return cudaStreamSynchronize(asked.get()); }, cudaErrorUnknown},
      {"cudaEventQuery",
       [&] {
         SC_CHECK_CUDA(cudaEventRecord(e.get(), asked.get()));
         return cudaEventQuery(e.get());
       },
       cudaErrorCapturedEvent},
  };
  for (const refused& r : calls) {
    SCOPED_TRACE(r.name);
    sc::graph g;
    cudaError_t code = cudaSuccess;
    cudaError_t ended = cudaSuccess;
    {
      sc::capture c(s, cudaStreamCaptureModeThreadLocal);
      code = r.call();
      ended = c.end(g);
    }
    (void)cudaGetLastError();
    sc::observe(std::string(r.name) + ".code", sc::error_name(code));
    sc::observe(std::string(r.name) + ".end_capture", sc::error_name(ended));
    if (r.expected == cudaErrorUnknown) {
      EXPECT_NE(cudaSuccess, code) << r.name << " on a capturing stream was not refused";
    } else {
      EXPECT_CUDA_EQ(r.expected, code) << r.name << " on an event recorded in the capture";
    }
    EXPECT_NE(cudaSuccess, ended) << "the capture ended cleanly after " << r.name << " was refused";
    cudaStreamCaptureStatus status{};
    EXPECT_CUDA_EQ(cudaSuccess, cudaStreamIsCapturing(s.get(), &status));
    EXPECT_EQ(cudaStreamCaptureStatusNone, status) << "the stream still captures after its capture ended";
  }

  // The external record: a mark, then the record, captured; the graph launched into a stream of its own.
  sc::marks m;
  const sc::event external = sc::event::create(sc::event_flags::disable_timing);
  sc::graph g;
  {
    sc::capture c(s, cudaStreamCaptureModeThreadLocal);
    m.drop(s, 1);
    ASSERT_CUDA_EQ(cudaSuccess,
                   cudaEventRecordWithFlags(external.get(), s.get(), elsewhere ? 0u : cudaEventRecordExternal));
    ASSERT_CUDA_EQ(cudaSuccess, c.end(g)) << "a capture with an external event record";
  }
  EXPECT_EQ(1u, g.node_count(cudaGraphNodeTypeEventRecord)) << "the external record is not an event-record node";
  const sc::graph_exec x = sc::graph_exec::instantiate(g);
  EXPECT_CUDA_EQ(cudaSuccess, launch(x, idle, "external"));
  EXPECT_CUDA_EQ(cudaSuccess, cudaEventSynchronize(external.get())) << "waiting for the external event";
  EXPECT_NE(0u, m.ticket_of(1)) << "the event completed before the work recorded ahead of it ran";
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(idle, sc::kWorkDeadline));
}

}  // namespace
