// HOST-11 (documented): what host functions and callbacks do after a device fault. A fault loses the
// context for good, so the arrangement runs in a child process (a threadsafe death test); the child
// reports through a child_channel and the parent brings every value into its own observation file
// ("child.<key>") and asserts there.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <string>

#include "host_funcs.hpp"
#include "sc/fixtures/child.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using HostFuncs = sc::families::HostFuncs;

// What the child's host function and callback saw. Order is encoded in values: `order` counts calls, so
// the host function (enqueued first) and the callback (second) each know how many ran before them.
struct after_fault {
  std::atomic<int> order{0};
  std::atomic<int> host_func_calls{0};
  std::atomic<int> callback_calls{0};
  std::atomic<int> callback_status{-1};
  std::atomic<int> host_func_calls_seen_by_callback{-1};
};
after_fault g_seen;

void CUDART_CB host_func(void*) {
  g_seen.order.fetch_add(1);
  g_seen.host_func_calls.fetch_add(1);
}
void CUDART_CB callback(cudaStream_t, cudaError_t status, void*) {
  g_seen.order.fetch_add(1);
  g_seen.host_func_calls_seen_by_callback.store(g_seen.host_func_calls.load());
  g_seen.callback_status.store(status);
  g_seen.callback_calls.fetch_add(1);
}

// Child body. A latch holds s; behind it a trapping kernel, then a host function H, then a callback C. So
// both are enqueued while the context is still healthy (the enqueue codes are recorded), and the fault
// happens only after the latch opens. If H were called it would run before C (stream order): C seeing no
// call of H, and H never called by the end, means H was skipped.
[[noreturn]] void fault_then_host_work(const sc::child_channel& channel, bool trap) {
  const auto name = [](cudaError_t code) { return std::string(sc::error_name(code)); };
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) std::_Exit(3);
  {
    const sc::stream held = sc::stream::view(s, "s");
    sc::latch g;
    g.hold(held);
    channel.write("latch_started", g.wait_started() ? "true" : "false");
    channel.write("enqueue.trap", name(trap ? sc::kernels::launch_trap(s) : sc::kernels::launch_empty(s)));
    channel.write("enqueue.cudaLaunchHostFunc", name(cudaLaunchHostFunc(s, host_func, nullptr)));
    channel.write("enqueue.cudaStreamAddCallback", name(cudaStreamAddCallback(s, callback, nullptr, 0)));
  }  // the latch opens: the trap runs
  channel.write("cudaStreamSynchronize", name(cudaStreamSynchronize(s)));
  // The callback may run after the synchronize has returned the error, and nothing in stream order is
  // left to wait on in a lost context: wait for the callback itself, with a deadline. (H's absence is
  // decided by values, not by this wait: C records how often H had run when C ran.)
  sc::wait_until(sc::probe::counter("the callback after the fault ran", g_seen.callback_calls), sc::kWorkDeadline);
  channel.write("callback.calls", std::to_string(g_seen.callback_calls.load()));
  channel.write("callback.status", g_seen.callback_status.load() < 0
                                       ? std::string("none")
                                       : name(static_cast<cudaError_t>(g_seen.callback_status.load())));
  channel.write("host_func.calls_seen_by_callback", std::to_string(g_seen.host_func_calls_seen_by_callback.load()));
  channel.write("host_func.calls", std::to_string(g_seen.host_func_calls.load()));
  channel.write("cudaGetLastError", name(cudaGetLastError()));
  std::_Exit(0);  // no teardown in a lost context
}

// Runs fault_then_host_work in a threadsafe death-test child (a fault loses the context for good) and returns
// the values it wrote, each also observed as "child.<key>".
std::map<std::string, std::string> values_of_faulting_child(bool trap) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const sc::child_channel channel("HOST11");
  EXPECT_EXIT(fault_then_host_work(channel, trap), ::testing::ExitedWithCode(0), "")
      << "the child that faulted the device did not end normally";
  return channel.read_observed("child.");
}

// HOST-11 · DRV cuStreamAddCallback ("in the event of a device error, all subsequently executed callbacks
// will receive an appropriate CUresult"); cuLaunchHostFunc / RT cudaLaunchHostFunc (unlike callbacks,
// not called after an error in the context): after a trapping kernel, the callback behind it runs and
// gets an error status, and the host function behind it is never called.
TEST_F(HostFuncs, AfterADeviceFaultCallbacksGetTheErrorAndHostFunctionsAreSkipped) {
  const sc::claim host11("HOST-11");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::death_test_children);
  const bool trap = !host11.mutated(sc::mutation_kind::arrangement);
  std::map<std::string, std::string> child = values_of_faulting_child(trap);
  ASSERT_FALSE(child.empty()) << "the child reported nothing";
  EXPECT_EQ("true", child["latch_started"]) << "the latch in the child did not start, so the fault may have come early";
  EXPECT_EQ("cudaSuccess", child["enqueue.cudaLaunchHostFunc"]) << "enqueued before the fault, it must be accepted";
  EXPECT_EQ("cudaSuccess", child["enqueue.cudaStreamAddCallback"]) << "enqueued before the fault, it must be accepted";
  EXPECT_NE("cudaSuccess", child["cudaStreamSynchronize"])
      << "the stream with the faulting kernel synchronized cleanly";
  EXPECT_EQ("1", child["callback.calls"]) << "the callback after the fault was not called exactly once";
  EXPECT_NE("cudaSuccess", child["callback.status"]) << "the callback after the fault got no error status";
  EXPECT_NE("none", child["callback.status"]);
  EXPECT_EQ("0", child["host_func.calls_seen_by_callback"])
      << "the host function ran before the callback (stream order), so it was called after the fault";
  EXPECT_EQ("0", child["host_func.calls"]) << "the host function was called after the fault";
}

}  // namespace
