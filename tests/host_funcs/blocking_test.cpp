// HOST-06, -07, -08 (observed): what a host function that does not return yet (it waits on a host latch
// in stream A) holds back besides its own stream: host functions of other streams, kernels of other
// streams, and other host threads' CUDA calls. Field reports disagree; each row records what this GPU and
// driver do. Each mutation adds or removes the one edge that flips the measured value (see the plan).
#include <gtest/gtest.h>

#include <string>

#include "host_funcs.hpp"
#include "sc/fixtures/event.hpp"

namespace {

using sc::stream_flags;
using HostFuncs = sc::testing::HostFuncs;
using sc::testing::host_record;

// HOST-06 · RT cudaLaunchHostFunc (host functions of independent streams run in undefined order);
// NVIDIA/nccl #1742 (observed): while a host function in A waits, does a host function in B run?
TEST_F(HostFuncs, HostFunctionOfAnotherStreamWhileOneWaits) {
  sc::claim("HOST-06", sc::verdict_kind::observed, "RT cudaLaunchHostFunc; NVIDIA/nccl #1742");
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  // Mutation (arrangement): A is held by a kernel gate instead, so no host function is waiting (on this
  // driver the measured value then flips from "held back" to "ran").
  const bool device_gate = sc::mutation_active("HOST-06", sc::mutation_kind::arrangement);
  sc::host_latch latch;
  sc::gate g;
  if (device_gate) {
    hold(g, a);
    EXPECT_TRUE(g.wait_started());
  } else {
    hold(latch, a);
    EXPECT_TRUE(latch.wait_started());
  }
  const sc::holder& held = device_gate ? static_cast<const sc::holder&>(g) : latch;
  host_record& other = launch_host_func(b, "b");
  // Reason for the 50 ms window: a free worker runs a host function within microseconds.
  const sc::gated_result ran = sc::present_while_gated("the host function in B", [&] { return other.calls.load() != 0; },
                                                       held, sc::kAbsenceWindow);
  latch.open();
  g.open();
  ASSERT_TRUE(drain());
  EXPECT_TRUE(sc::observed_row("HOST-06", "other_stream_host_function_ran", ran));
}

// HOST-07 · sii-research/VCCL #3; NVIDIA/nccl #1742 (observed): while a host function in A waits, does a
// kernel in B run? (Field reports on Hopper say it is delayed.)
TEST_F(HostFuncs, KernelOfAnotherStreamWhileAHostFunctionWaits) {
  sc::claim("HOST-07", sc::verdict_kind::observed, "sii-research/VCCL #3; NVIDIA/nccl #1742");
  sc::marks m;
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  // Mutation (arrangement): the mark goes behind the latch in A.
  const bool behind = sc::mutation_active("HOST-07", sc::mutation_kind::arrangement);
  sc::host_latch latch;
  hold(latch, a);
  EXPECT_TRUE(latch.wait_started());
  drop(m, behind ? a : b, 1);
  const sc::gated_result ran = sc::present_while_gated(m, 1, latch);
  latch.open();
  ASSERT_TRUE(drain());
  EXPECT_TRUE(sc::observed_row("HOST-07", "other_stream_kernel_ran", ran));
}

// HOST-08 · pytorch/FBGEMM PR #5462 (observed): while a cudaStreamAddCallback callback waits, do another
// host thread's CUDA calls on another stream (cudaEventRecord, cudaStreamQuery) return?
TEST_F(HostFuncs, OtherThreadsCallsWhileACallbackWaits) {
  sc::claim("HOST-08", sc::verdict_kind::observed, "pytorch/FBGEMM PR #5462 (a driver mutex held during callbacks?)");
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  // Mutation (arrangement): the calls also synchronize stream A, so they must wait for the callback.
  const bool wait_for_a = sc::mutation_active("HOST-08", sc::mutation_kind::arrangement);
  sc::host_latch latch(sc::kGateWatchdog, sc::watchdog_report::banner, sc::host_enqueue::stream_callback);
  hold(latch, a);
  EXPECT_TRUE(latch.wait_started());
  const sc::return_observation seen = sc::call_while_gated(
      [&] {
        cudaError_t code = cudaEventRecord(e.get(), b.get());
        if (code == cudaSuccess) code = cudaStreamQuery(b.get());
        if (code == cudaSuccess && wait_for_a) code = cudaStreamSynchronize(a.get());
        return code;
      },
      latch);
  ASSERT_TRUE(drain());
  EXPECT_CUDA_EQ(cudaSuccess, seen.code);
  EXPECT_TRUE(sc::observed_row("HOST-08", "other_thread_calls_returned", seen.returned));
}

}  // namespace
