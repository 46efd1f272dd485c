// HOST-06, -07, -08 (observed): what a host function that does not return yet (it waits on a host latch
// in stream A) holds back besides its own stream: host functions of other streams, kernels of other
// streams, and other host threads' CUDA calls. Field reports disagree; each row records what this GPU and
// driver do. Each mutation adds or removes the one edge that flips the measured value (see the plan).
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>

#include "host_funcs.hpp"
#include "sc/fixtures/event.hpp"

namespace {

using sc::stream_flags;
using HostFuncs = sc::families::HostFuncs;
using sc::families::host_record;

// How long another process may take to create its context and load its kernels. Reason: a context on an
// idle H100 takes about 0.2 s; 20 s leaves room for a loaded machine and a driver that initializes slowly.
constexpr std::chrono::milliseconds kChildReadyDeadline{20000};

// hold -> probe -> release, for a holder already holding stream A: once it runs, `enqueue` puts the work under
// test in and returns its probe, which is watched (until `deadline`) while the holder is still closed; then the
// holder is released. The caller drains.
sc::held_result lands_while_held(sc::holder& held, const std::function<sc::probe()>& enqueue,
                                 std::chrono::milliseconds deadline = sc::kPresenceDeadline) {
  sc::held_window w(held);
  const sc::held_result seen = w.present(enqueue(), deadline);
  w.release();
  return seen;
}

// A host call whose code the caller checks.
using host_call = std::function<cudaError_t()>;

// Another host thread's calls on stream B: cudaEventRecord(e, B), then cudaStreamQuery(B); with `then_sync_a`,
// cudaStreamSynchronize(A) after them.
host_call record_and_query(const sc::event& e, const sc::stream& b, const sc::stream& a, bool then_sync_a) {
  return [&e, &b, &a, then_sync_a] {
    cudaError_t code = cudaEventRecord(e.get(), b.get());
    if (code == cudaSuccess) code = cudaStreamQuery(b.get());
    if (code == cudaSuccess && then_sync_a) code = cudaStreamSynchronize(a.get());
    return code;
  };
}

// HOST-06 · RT cudaLaunchHostFunc (host functions of independent streams run in undefined order);
// NVIDIA/nccl #1742 (observed): while a host function in A waits, does a host function in B run?
TEST_F(HostFuncs, HostFunctionOfAnotherStreamWhileOneWaits) {
  const sc::claim host06("HOST-06");
  SC_REQUIRE(sc::requirement::async_launches);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  sc::host_latch latch;
  sc::latch g;
  // Mutation (arrangement): A is held by a kernel latch instead, so no host function is waiting (on this
  // driver the measured value then flips from "held back" to "ran").
  const bool device_latch = host06.mutated(sc::mutation_kind::arrangement);
  sc::holder& held = device_latch ? static_cast<sc::holder&>(g) : latch;
  hold(held, a);
  // Reason for kLandingDeadline: a free worker runs a host function within microseconds.
  const sc::held_result ran = lands_while_held(
      held, [&] { return sc::families::ran(launch_host_func(b, "b")); }, sc::kLandingDeadline);
  ASSERT_TRUE(drain());
  EXPECT_TRUE(host06.observed_row("other_stream_host_function_ran", ran));
}

// HOST-07 · sii-research/VCCL #3; NVIDIA/nccl #1742 (observed): while a host function in A waits, does a
// kernel in B run? (Field reports on Hopper say it is delayed.)
TEST_F(HostFuncs, KernelOfAnotherStreamWhileAHostFunctionWaits) {
  const sc::claim host07("HOST-07");
  SC_REQUIRE(sc::requirement::async_launches);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const sc::stream& target = host07.mutated(sc::mutation_kind::arrangement) ? a : b;
  sc::marks m;
  sc::host_latch latch;
  hold(latch, a);
  const sc::held_result ran = lands_while_held(latch, [&] {
    drop(m, target, 1);
    return sc::probe::mark(m, 1);
  });
  ASSERT_TRUE(drain());
  EXPECT_TRUE(host07.observed_row("other_stream_kernel_ran", ran));
}

// HOST-08 · pytorch/FBGEMM PR #5462 (observed): while a cudaStreamAddCallback callback waits, do another
// host thread's CUDA calls on another stream (cudaEventRecord, cudaStreamQuery) return? And does another
// process's work (a kernel and cudaDeviceSynchronize in its own context) complete? The thread is a
// thread_probe, the process a child_probe: the same held window judges both.
TEST_F(HostFuncs, OtherThreadsCallsWhileACallbackWaits) {
  const sc::claim host08("HOST-08");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::several_contexts);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  // The other process sets up its context before anything is held (that takes far longer than a window).
  sc::child_probe other_process("launch-sync", device());
  ASSERT_TRUE(other_process.wait_ready(kChildReadyDeadline)) << other_process.problem();
  const bool wait_for_a = host08.mutated(sc::mutation_kind::arrangement);
  sc::thread_probe calls("cudaEventRecord + cudaStreamQuery on stream B", record_and_query(e, b, a, wait_for_a));
  sc::host_latch latch(sc::kLatchWatchdog, sc::watchdog_report::banner, sc::host_enqueue::stream_callback);
  hold(latch, a);
  sc::held_window w(latch);
  calls.start();
  const sc::held_result thread_returned = w.present(calls.returned(), sc::kReturnWindow);
  other_process.go();
  // Reason for 1 s: the other context's kernel and synchronize take milliseconds on an idle GPU.
  const sc::held_result process_done = w.present(other_process.done(), sc::kPresenceDeadline);
  w.release();
  ASSERT_TRUE(calls.join_within(sc::kWorkDeadline)) << "the other thread's calls did not return after the release";
  ASSERT_TRUE(drain());
  ASSERT_TRUE(other_process.wait_done(sc::kWorkDeadline)) << other_process.problem();
  EXPECT_CUDA_EQ(cudaSuccess, calls.code()) << calls.failure();
  EXPECT_EQ("cudaSuccess", other_process.result().at("rc")) << "the other process's kernel or synchronize failed";
  sc::observe("other_thread_took_us", static_cast<long long>(calls.took().count()));
  sc::observe("other_process_took_us", other_process.result().at("took_us"));
  EXPECT_TRUE(host08.observed_row("other_thread_calls_returned", thread_returned));
  EXPECT_TRUE(host08.observed_row("other_process_work_completed", process_done));
}

}  // namespace
