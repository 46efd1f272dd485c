// CAPT-01, CAPT-09: captured work runs only when its graph is launched, and a graph launch keeps its place in
// its stream's order: behind the work ahead of it, and ahead of the work after it.
#include "capture.hpp"

#include <gtest/gtest.h>

#include "sc/fixtures/check.hpp"

namespace {

using sc::stream_flags;
using sc::families::StreamCapture;

// CAPT-09's streams: s, where the graph keeps its place in the stream's order; recording, where the graph is
// captured; free, a stream nothing holds (where the mutation launches the graph instead).
struct stream_order_streams {
  sc::stream s;
  sc::stream recording;
  sc::stream free;
};
stream_order_streams stream_order_streams_of(StreamCapture& t) {
  return {t.make(stream_flags::non_blocking, "s"), t.make(stream_flags::non_blocking, "recording"),
          t.make(stream_flags::non_blocking, "free")};
}

// CAPT-01 · RT cudaStreamBeginCapture (operations pushed into a capturing stream "will not be executed, but will
// instead be captured into a graph"), cudaGraphLaunch: a mark enqueued in a capturing stream does not land while the
// capture is open, nor after it ended; it lands once the captured graph is launched.
TEST_F(StreamCapture, CapturedWorkRunsOnlyWhenTheGraphIsLaunched) {
  const sc::claim capt01("CAPT-01");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream other = make(stream_flags::non_blocking, "other");
  const sc::stream& target = capt01.mutated(sc::mutation_kind::arrangement) ? other : s;
  sc::marks m;
  sc::graph g;
  {
    sc::capture c(s, cudaStreamCaptureModeThreadLocal);
    m.drop(target, 1);
    // Control: a mark in a stream that is not capturing lands meanwhile, so the window was long enough.
    m.drop(other, 2);
    EXPECT_TRUE(lands_within(m, 2, sc::kLandingDeadline)) << "a mark in a free stream did not land";
    EXPECT_FALSE(lands_within(m, 1)) << "work enqueued in a capturing stream ran while the capture was open";
    EXPECT_CUDA_EQ(cudaSuccess, c.end(g)) << "ending the capture";
  }
  ASSERT_TRUE(g.engaged()) << "the capture gave no graph";
  sc::observe("nodes", static_cast<long long>(g.node_count()));
  EXPECT_EQ(1u, g.node_count()) << "the captured graph should hold the one mark kernel";
  EXPECT_FALSE(lands_within(m, 1)) << "captured work ran after the capture ended, before any launch";
  const sc::graph_exec e = sc::graph_exec::instantiate(g);
  EXPECT_CUDA_EQ(cudaSuccess, launch(e, s, "e"));
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(s, sc::kWorkDeadline));
  EXPECT_NE(0u, m.ticket_of(1)) << "the launched graph's mark never landed";
}

// CAPT-09 · RT cudaGraphLaunch ("Each launch is ordered behind both any previous work in stream and any previous
// launches of graphExec"): a graph launched behind a latch does not run while the latch is closed, and runs once it
// opens.
TEST_F(StreamCapture, GraphLaunchWaitsForEarlierWorkInItsStream) {
  const sc::claim capt09("CAPT-09");
  SC_REQUIRE(sc::requirement::async_launches);
  const stream_order_streams st = stream_order_streams_of(*this);
  const sc::stream& target = capt09.mutated(sc::mutation_kind::arrangement) ? st.free : st.s;
  sc::marks m;
  const sc::graph_exec e = exec_of_mark(st.recording, m, 1);
  sc::latch latch;
  hold(latch, st.s);
  {
    sc::held_window w(latch);
    EXPECT_CUDA_EQ(cudaSuccess, launch(e, target, "e")) << "launching the graph behind the latch";
    EXPECT_TRUE(w.absent(sc::probe::mark(m, 1))) << "the graph ran before the work ahead of it in its stream";
  }
  drain();
  EXPECT_NE(0u, m.ticket_of(1)) << "the graph's mark never landed";
}

// CAPT-09 · RT cudaGraphLaunch (a launch is stream work: later work in the stream is ordered behind it): the graph
// holds itself, a latch node ahead of its mark 1; launched into s, with mark 2 enqueued in s after it. While the
// graph's latch runs (so the graph has started) and is closed, neither mark lands; once it opens both do, the
// graph's first.
TEST_F(StreamCapture, LaterWorkInTheStreamWaitsForTheGraph) {
  const sc::claim capt09("CAPT-09");
  SC_REQUIRE(sc::requirement::async_launches);
  const stream_order_streams st = stream_order_streams_of(*this);
  const sc::stream& target = capt09.mutated(sc::mutation_kind::arrangement) ? st.free : st.s;
  sc::marks m;
  sc::latch latch;  // held by a node of the graph, so made before it
  const sc::graph g = graph_of_latch_then_mark(st.recording, latch, m, 1);
  const sc::graph_exec e = sc::graph_exec::instantiate(g);
  EXPECT_CUDA_EQ(cudaSuccess, launch(e, target, "e")) << "launching the graph";
  drop(m, st.s, 2);
  {
    sc::held_window w(latch);
    EXPECT_TRUE(w.absent(sc::probe::mark(m, 2))) << "work enqueued after the graph ran while the graph was held";
    EXPECT_TRUE(w.absent(sc::probe::mark(m, 1))) << "the graph's mark ran before the latch node ahead of it";
  }
  drain();
  EXPECT_NE(0u, m.ticket_of(1)) << "the graph's mark never landed";
  EXPECT_LT(m.ticket_of(1), m.ticket_of(2)) << "the mark enqueued after the graph landed before the graph's";
}

}  // namespace
