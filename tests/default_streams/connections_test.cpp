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

// The DFLT-22 arrangement: the gate's own launch runs on call_while_gated's helper thread. Records and
// returns whether that launch returned while the gate it launched was still closed.
bool gate_launch_returned_while_gated(sc::testing::DefaultStreams& t) {
  const sc::stream s = t.make(stream_flags::non_blocking, "s");
  sc::gate g;
  const sc::return_observation seen = sc::call_while_gated(
      [&] {
        try {
          g.hold(s);
          return cudaSuccess;
        } catch (const sc::cuda_error& e) {
          return e.code();
        }
      },
      g);
  t.drain();
  sc::observe("detail", seen.detail);
  EXPECT_CUDA_EQ(cudaSuccess, seen.code);
  return seen.returned_while_gated;
}

// The DFLT-15 arrangement: a gate runs in A and a mark waits behind it in A (pending at the head of A's
// queue); then an independent mark goes to B. Records and returns whether B's mark stayed absent while A
// was gated.
bool independent_work_held_back(sc::testing::DefaultStreams& t) {
  sc::marks m;
  const sc::stream a = t.make(stream_flags::non_blocking, "a");
  const sc::stream b = t.make(stream_flags::non_blocking, "b");
  sc::gate g;
  t.hold(g, a);
  t.drop(m, a, 2);  // pending behind the gate
  t.drop(m, b, 1);
  const ::testing::AssertionResult held_back =
      g.wait_started() ? sc::absent_while_gated(m, 1, g) : ::testing::AssertionFailure() << "the gate did not start";
  g.open();
  t.drain();
  sc::observe("held_back", static_cast<bool>(held_back));
  sc::observe("detail", held_back.message());
  return static_cast<bool>(held_back);
}

// DFLT-15 · RTAS24 rule R2; Megatron-LM #533 (observed): with CUDA_DEVICE_MAX_CONNECTIONS=1 all streams
// share one hardware queue in host enqueue order, so a kernel pending behind a gate in A holds back a
// later, independent kernel in B (a false dependency).
TEST_F(DefaultStreams, WithOneConnectionAPendingKernelHoldsBackAnotherStream) {
  sc::claim("DFLT-15", sc::verdict_kind::observed, "RTAS24 R2; Megatron-LM #533, #5105; ColossalAI #5891");
  if (!variable_is("CUDA_DEVICE_MAX_CONNECTIONS", "1"))
    GTEST_SKIP() << "needs CUDA_DEVICE_MAX_CONNECTIONS=1 before CUDA starts (ctest entry default_streams.conn1.*)";
  const bool held_back = independent_work_held_back(*this);
  EXPECT_TRUE(sc::matches_baseline("DFLT-15", "held_back", sc::mutate("DFLT-15", held_back, !held_back)));
}

// DFLT-15 negative control (default connections): the same arrangement does not hold B back.
TEST_F(DefaultStreams, WithDefaultConnectionsAPendingKernelDoesNotHoldBackAnotherStream) {
  sc::claim("DFLT-15", sc::verdict_kind::observed, "RTAS24 R2 (negative control: default connections)");
  if (std::getenv("CUDA_DEVICE_MAX_CONNECTIONS") != nullptr)
    GTEST_SKIP() << "CUDA_DEVICE_MAX_CONNECTIONS is set; this control needs the default";
  const bool held_back = independent_work_held_back(*this);
  EXPECT_TRUE(sc::matches_baseline("DFLT-15", "default.held_back", sc::mutate("DFLT-15", held_back, !held_back)));
}

// DFLT-22 · PG (environment variables) negative control: without CUDA_LAUNCH_BLOCKING a launch returns
// while its kernel still runs.
TEST_F(DefaultStreams, LaunchReturnsBeforeTheKernelEnds) {
  sc::claim("DFLT-22", sc::verdict_kind::documented, "PG environment variables (CUDA_LAUNCH_BLOCKING unset)");
  if (variable_is("CUDA_LAUNCH_BLOCKING", "1")) GTEST_SKIP() << "CUDA_LAUNCH_BLOCKING=1 is set";
  const bool returned = gate_launch_returned_while_gated(*this);
  EXPECT_TRUE(sc::mutate("DFLT-22", returned, !returned)) << "the launch waited for its kernel";
}

// DFLT-22 · PG (environment variables): with CUDA_LAUNCH_BLOCKING=1 a kernel launch returns only after
// the kernel has completed: the launch of a gate cannot return while the gate is closed.
TEST_F(DefaultStreams, LaunchReturnsOnlyAfterTheKernelWithLaunchBlocking) {
  sc::claim("DFLT-22", sc::verdict_kind::documented, "PG environment variables (CUDA_LAUNCH_BLOCKING=1)");
  if (!variable_is("CUDA_LAUNCH_BLOCKING", "1"))
    GTEST_SKIP() << "needs CUDA_LAUNCH_BLOCKING=1 before CUDA starts (ctest entry default_streams.launch_blocking.*)";
  const bool returned = gate_launch_returned_while_gated(*this);
  EXPECT_FALSE(sc::mutate("DFLT-22", returned, !returned)) << "the launch returned while its kernel was held";
}

}  // namespace
