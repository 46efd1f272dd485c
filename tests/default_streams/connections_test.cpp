// DFLT-15 and DFLT-22: behaviors chosen by environment variables set before CUDA initializes. Each runs
// in its own ctest entry with the variable (default_streams.conn1.*, default_streams.launch_blocking.*).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "default_streams.hpp"

namespace {

using sc::stream_flags;
using DefaultStreams = sc::testing::DefaultStreams;

bool variable_is(const char* name, const char* value) {
  const char* set = std::getenv(name);
  return set != nullptr && std::string(set) == value;
}

// The DFLT-22 arrangement: the gate's own launch runs on call_while_gated's helper thread. `then_sync`
// makes the call also wait for its stream (an arrangement mutation: the launch made synchronous by hand).
sc::return_observation gate_launch_while_gated(sc::testing::DefaultStreams& t, bool then_sync) {
  const sc::stream s = t.make(stream_flags::non_blocking, "s");
  sc::gate g;
  const sc::return_observation seen = sc::call_while_gated(
      [&] {
        try {
          g.hold(s);
          return then_sync ? cudaStreamSynchronize(s.get()) : cudaSuccess;
        } catch (const sc::cuda_error& e) {
          return e.code();
        }
      },
      g);
  t.drain();
  sc::observe("detail", seen.detail);
  EXPECT_CUDA_EQ(cudaSuccess, seen.code);
  return seen;
}

// How a DFLT-15 arrangement is changed: `drop_pending` false removes the kernel pending in A (nothing then
// shares a queue with B); `b_behind_gate` sends B's mark into A behind the gate.
struct held_back_arrangement {
  bool drop_pending = true;
  bool b_behind_gate = false;
};

// The DFLT-15 arrangement: a gate runs in A and a mark waits behind it in A (pending at the head of A's
// queue); then an independent mark goes to B. Records whether B's mark stayed absent while A was gated
// (held_back); an invalid check fails the test and compares nothing.
void independent_work_held_back(sc::testing::DefaultStreams& t, const std::string& key,
                                const held_back_arrangement& how) {
  sc::marks m;
  const sc::stream a = t.make(stream_flags::non_blocking, "a");
  const sc::stream b = t.make(stream_flags::non_blocking, "b");
  sc::gate g;
  t.hold(g, a);
  if (how.drop_pending) t.drop(m, a, 2);  // pending behind the gate
  t.drop(m, how.b_behind_gate ? a : b, 1);
  ASSERT_TRUE(g.wait_started());
  const sc::gated_result held_back = sc::absent_while_gated(m, 1, g);
  g.open();
  t.drain();
  EXPECT_TRUE(sc::observed_row("DFLT-15", key, held_back));
}

// DFLT-15 · RTAS24 rule R2; Megatron-LM #533 (observed): with CUDA_DEVICE_MAX_CONNECTIONS=1 all streams
// share one hardware queue in host enqueue order, so a kernel pending behind a gate in A holds back a
// later, independent kernel in B (a false dependency).
TEST_F(DefaultStreams, WithOneConnectionAPendingKernelHoldsBackAnotherStream) {
  sc::claim("DFLT-15", sc::verdict_kind::observed, "RTAS24 R2; Megatron-LM #533, #5105; ColossalAI #5891");
  SC_REQUIRE(sc::requirement::async_launches);
  if (!variable_is("CUDA_DEVICE_MAX_CONNECTIONS", "1"))
    GTEST_SKIP() << "needs CUDA_DEVICE_MAX_CONNECTIONS=1 before CUDA starts (ctest entry default_streams.conn1.*)";
  held_back_arrangement how;
  // Mutation (arrangement): nothing pending in A, so nothing shares B's queue position.
  how.drop_pending = !sc::mutation_active("DFLT-15", sc::mutation_kind::arrangement);
  independent_work_held_back(*this, "held_back", how);
}

// DFLT-15 negative control (default connections): the same arrangement does not hold B back.
TEST_F(DefaultStreams, WithDefaultConnectionsAPendingKernelDoesNotHoldBackAnotherStream) {
  sc::claim("DFLT-15", sc::verdict_kind::observed, "RTAS24 R2 (negative control: default connections)");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::default_connections);
  held_back_arrangement how;
  // Mutation (arrangement): B's mark goes behind the gate in A.
  how.b_behind_gate = sc::mutation_active("DFLT-15", sc::mutation_kind::arrangement);
  independent_work_held_back(*this, "default.held_back", how);
}

// DFLT-22 · PG (environment variables) negative control: without CUDA_LAUNCH_BLOCKING a launch returns
// while its kernel still runs.
TEST_F(DefaultStreams, LaunchReturnsBeforeTheKernelEnds) {
  sc::claim("DFLT-22", sc::verdict_kind::documented, "PG environment variables (CUDA_LAUNCH_BLOCKING unset)");
  SC_REQUIRE(sc::requirement::async_launches);
  // Mutation (arrangement): the call also synchronizes the gate's stream.
  const bool then_sync = sc::mutation_active("DFLT-22", sc::mutation_kind::arrangement);
  EXPECT_TRUE(gate_launch_while_gated(*this, then_sync).returned) << "the launch waited for its kernel";
}

// DFLT-22 · PG (environment variables): with CUDA_LAUNCH_BLOCKING=1 a kernel launch returns only after
// the kernel has completed: the launch of a gate cannot return while the gate is closed.
TEST_F(DefaultStreams, LaunchReturnsOnlyAfterTheKernelWithLaunchBlocking) {
  sc::claim("DFLT-22", sc::verdict_kind::documented, "PG environment variables (CUDA_LAUNCH_BLOCKING=1)");
  if (!variable_is("CUDA_LAUNCH_BLOCKING", "1"))
    GTEST_SKIP() << "needs CUDA_LAUNCH_BLOCKING=1 before CUDA starts (ctest entry default_streams.launch_blocking.*)";
  // The one test that holds a stream under synchronous launches on purpose: the gate's own launch is the
  // call under test (every other hold refuses at once here).
  sc::expect_blocking_launches();
  const sc::return_observation seen = gate_launch_while_gated(*this, false);
  // Mutation (expectation only): under CUDA_LAUNCH_BLOCKING=1 every launch is synchronous, so no
  // arrangement can make one return while its kernel runs; the entry without the variable is the
  // arrangement-mutated partner.
  if (sc::mutation_active("DFLT-22", sc::mutation_kind::expectation))
    EXPECT_TRUE(seen.returned) << "(mutated expectation)";
  else
    EXPECT_TRUE(sc::does_not_hold(seen.returned)) << "the launch returned while its kernel was held";
}

}  // namespace
