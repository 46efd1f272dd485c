// CAPT-10, CAPT-11: one executable graph's launches are serialized across streams while two instantiations of a
// graph are not; an executable graph's parameter update reaches later launches only.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "capture.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::StreamCapture;

// CAPT-10's arrangement: s1 and s2, two non-blocking streams; a graph of mark 1 of m, captured in a third stream and
// instantiated twice (x and y).
struct one_graph_two_instances {
  explicit one_graph_two_instances(StreamCapture& t)
      : s1(t.make(stream_flags::non_blocking, "s1")),
        s2(t.make(stream_flags::non_blocking, "s2")),
        recording(t.make(stream_flags::non_blocking, "recording")),
        g(StreamCapture::graph_of_mark(recording, m, 1)),
        x(sc::graph_exec::instantiate(g)),
        y(sc::graph_exec::instantiate(g)) {}
  const sc::stream s1;
  const sc::stream s2;
  const sc::stream recording;
  sc::marks m;
  const sc::graph g;
  const sc::graph_exec x;
  const sc::graph_exec y;
};

// A latch holds a.s1; x is launched into s1 behind it, then `second` (x or y) into s2, each launch expected to be
// accepted; `while_held` asks its question while the latch is closed. The caller drains.
void launch_beside_a_held_launch(StreamCapture& t, one_graph_two_instances& a, bool second_is_y,
                                 const std::function<void(const sc::held_window&)>& while_held) {
  sc::latch latch;
  t.hold(latch, a.s1);
  sc::held_window w(latch);
  EXPECT_CUDA_EQ(cudaSuccess, t.launch(a.x, a.s1, "x"));
  EXPECT_CUDA_EQ(cudaSuccess, t.launch(second_is_y ? a.y : a.x, a.s2, second_is_y ? "y" : "x"));
  while_held(w);
}

// CAPT-10 · RT cudaGraphLaunch ("Only one instance of graphExec may be executing at a time. Each launch is ordered
// behind both any previous work in stream and any previous launches of graphExec"): an executable graph launched
// behind a latch in s1 and then into a free stream s2 does not run in s2 while the latch is closed. Like its control
// (the next test), it needs s2 to run while s1 waits: with CUDA_DEVICE_MAX_CONNECTIONS set the streams may share one
// hardware queue (with 1, s2's launch waits behind s1's; H100 and H200), so the test skips at once there.
TEST_F(StreamCapture, OneExecutableGraphIsSerializedAcrossStreams) {
  const sc::claim capt10("CAPT-10");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::default_connections);
  const bool other_instance = capt10.mutated(sc::mutation_kind::arrangement);
  one_graph_two_instances a(*this);
  launch_beside_a_held_launch(*this, a, other_instance, [&](const sc::held_window& w) {
    EXPECT_TRUE(w.absent(sc::probe::mark(a.m, 1)))
        << "a launch of the executable graph ran while its earlier launch in another stream was held";
  });
  drain();
  EXPECT_NE(0u, a.m.ticket_of(1)) << "the graph's mark never landed";
}

// CAPT-10 · RT cudaGraphLaunch ("To execute a graph concurrently, it must be instantiated multiple times into
// multiple executable graphs"), the control of the serialization above: two instantiations of one graph are not
// ordered with each other, so the second, launched into s2 while the first is held behind a latch in s1, runs at
// once. Skips where CUDA_DEVICE_MAX_CONNECTIONS is set, as above.
TEST_F(StreamCapture, TwoInstantiationsOfAGraphRunAtOnceAcrossStreams) {
  const sc::claim capt10("CAPT-10");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::default_connections);
  const bool same_instance = capt10.mutated(sc::mutation_kind::arrangement);
  one_graph_two_instances a(*this);
  launch_beside_a_held_launch(*this, a, !same_instance, [&](const sc::held_window& w) {
    EXPECT_TRUE(w.present(sc::probe::mark(a.m, 1)))
        << "another instantiation of the graph did not run while the first was held";
  });
  drain();
}

// The one kernel node of a graph of one mark (graph_of_mark), and its parameters changed to drop mark `slot` of the
// same board instead. Built in place: `changed` points into `args`, `args` into the fields.
struct retargeted_mark_node {
  retargeted_mark_node() = default;
  retargeted_mark_node(const retargeted_mark_node&) = delete;
  retargeted_mark_node& operator=(const retargeted_mark_node&) = delete;
  cudaGraphNode_t node = nullptr;
  std::uint32_t* counter = nullptr;
  sc::kernels::mark_board* board = nullptr;
  unsigned slot = 0;
  void* args[3] = {&counter, &board, &slot};
  cudaKernelNodeParams changed{};
};

// Reads the mark node of `g` into `out` and makes its parameters drop mark `slot` (use under
// ASSERT_NO_FATAL_FAILURE: a graph that is not one mark node fails the test).
void retarget_mark_node(const sc::graph& g, unsigned slot, retargeted_mark_node& out) {
  ASSERT_EQ(1u, g.node_count());
  std::size_t count = 1;
  ASSERT_CUDA_EQ(cudaSuccess, cudaGraphGetNodes(g.get(), &out.node, &count));
  cudaKernelNodeParams params{};
  ASSERT_CUDA_EQ(cudaSuccess, cudaGraphKernelNodeGetParams(out.node, &params));
  ASSERT_NE(nullptr, params.kernelParams) << "the captured mark node has no parameter array";
  // The mark kernel's parameters: counter, board, slot (kernels/launch.hpp, launch_mark).
  out.counter = *static_cast<std::uint32_t**>(params.kernelParams[0]);
  out.board = *static_cast<sc::kernels::mark_board**>(params.kernelParams[1]);
  out.slot = slot;
  out.changed = params;
  out.changed.kernelParams = out.args;
  out.changed.extra = nullptr;
}

// CAPT-11 · RT cudaGraphExecKernelNodeSetParams ("The modifications only affect future launches of hGraphExec.
// Already enqueued or running launches of hGraphExec are not affected by this call"): an executable graph of
// mark 1 is launched behind a latch; its node is then changed to mark 2 and the graph launched again. Once the
// latch opens, mark 1 lands (the enqueued launch kept its parameters), then mark 2.
TEST_F(StreamCapture, ParameterUpdatesReachLaterLaunchesOnly) {
  const sc::claim capt11("CAPT-11");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool early = capt11.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream recording = make(stream_flags::non_blocking, "recording");
  sc::marks m;
  const sc::graph g = graph_of_mark(recording, m, 1);
  retargeted_mark_node to_2;
  ASSERT_NO_FATAL_FAILURE(retarget_mark_node(g, 2, to_2));
  const sc::graph_exec x = sc::graph_exec::instantiate(g);
  if (early) {
    ASSERT_CUDA_EQ(cudaSuccess, cudaGraphExecKernelNodeSetParams(x.get(), to_2.node, &to_2.changed));
  }
  {
    sc::latch latch;
    hold(latch, s);
    sc::held_window w(latch);
    EXPECT_CUDA_EQ(cudaSuccess, launch(x, s, "x"));
    if (!early) {
      EXPECT_CUDA_EQ(cudaSuccess, cudaGraphExecKernelNodeSetParams(x.get(), to_2.node, &to_2.changed));
    }
    EXPECT_CUDA_EQ(cudaSuccess, launch(x, s, "x"));
    EXPECT_TRUE(w.absent(sc::probe::mark(m, 1)));
    EXPECT_TRUE(w.absent(sc::probe::mark(m, 2)));
  }
  drain();
  EXPECT_NE(0u, m.ticket_of(1)) << "the launch enqueued before the update did not keep its parameters";
  EXPECT_NE(0u, m.ticket_of(2)) << "the launch after the update did not get the new parameters";
  EXPECT_LT(m.ticket_of(1), m.ticket_of(2));
}

}  // namespace
