// ORDX-13: a stream's synchronization policy (cudaStreamAttributeSynchronizationPolicy), measured as the
// calling thread's CPU time over the wall time of a cudaStreamSynchronize that waits for a 20 ms spin (the
// method of EVT-13 and EVT-19). One instance per policy; Auto is the context's own flag.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "ordering.hpp"
#include "sc/fixtures/thread_time.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::OrderingExceptions;

// Reason for 20 ms: hundreds of scheduler ticks of a sleeping thread, and long against launch cost.
constexpr std::uint64_t kHeldSpinNs = 20'000'000;
// Reason for 0.9: the host's clock starts before the launch, so the wait spans the whole spin, which
// %globaltimer times on the GPU; 10 % leaves room for the spin's calibration, far beyond its error.
constexpr double kWaitedAtLeast = 0.9 * kHeldSpinNs / 1e6;

class SyncPolicy : public OrderingExceptions, public ::testing::WithParamInterface<cudaSynchronizationPolicy> {};

// ORDX-13 · RT cudaLaunchAttributeSynchronizationPolicy (recorded: the policies, auto, spin, yield and blocking
// sync, apply "for work queued up in this stream"; the page does not say how a synchronize waits): the
// synchronize waits for the whole spin (asserted), and its CPU time over wall time is recorded.
TEST_P(SyncPolicy, SynchronizeWaitsAndItsThreadTimeIsRecorded) {
  const sc::claim ordx13("ORDX-13");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool idle = ordx13.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  cudaLaunchAttributeValue policy{};
  policy.syncPolicy = GetParam();
  SC_CHECK_CUDA(cudaStreamSetAttribute(s.get(), cudaStreamAttributeSynchronizationPolicy, &policy));
  sc::mapped<sc::kernels::block_record> records(1);
  const sc::thread_time t = sc::time_on_this_thread([&] {
    if (!idle) SC_CHECK_CUDA(sc::kernels::launch_spin(s.get(), records.device(), 1, 32, kHeldSpinNs));
    EXPECT_CUDA_EQ(cudaSuccess, cudaStreamSynchronize(s.get()));
  });
  sc::observe("wall_ms", t.wall_ms);
  sc::observe("cpu_ms", t.cpu_ms);
  sc::observe("cpu_over_wall", t.busy());
  EXPECT_GE(t.wall_ms, kWaitedAtLeast) << "the synchronize returned before the spin it waited for had ended";
}

std::string policy_name(const ::testing::TestParamInfo<cudaSynchronizationPolicy>& instance) {
  switch (instance.param) {
    case cudaSyncPolicyAuto:
      return "Auto";
    case cudaSyncPolicySpin:
      return "Spin";
    case cudaSyncPolicyYield:
      return "Yield";
    default:
      return "BlockingSync";
  }
}

INSTANTIATE_TEST_SUITE_P(, SyncPolicy,
                         ::testing::Values(cudaSyncPolicyAuto, cudaSyncPolicySpin, cudaSyncPolicyYield,
                                           cudaSyncPolicyBlockingSync),
                         policy_name);

}  // namespace
