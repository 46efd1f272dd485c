// GCTX-02: a green context's stream runs its blocks only on its partition's SMs. A grid much larger than the
// partition, launched three ways into a stream of the green context; each block records the %smid it began and
// ended on.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "green_contexts.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/sched.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::families::green_context;
using sc::families::GreenContexts;
using sc::families::sm_split;

using sc::families::kSpreadBlocksPerDeviceSm;
using sc::families::kSpreadSpinNs;
using sc::families::kSpreadThreads;

// How the grid reaches the green context: the runtime into a cuGreenCtxStreamCreate stream; the driver
// (cuLaunchKernel with the context-less kernel) into such a stream; the runtime into a stream it made while the
// converted green context was current.
enum class route { runtime, driver, current };

// The spin grid into `s`, by the runtime or by the driver.
void launch_grid(CUstream s, bool by_driver, sc::mapped<sc::kernels::block_record>& records, unsigned blocks) {
  if (!by_driver) {
    SC_CHECK_CUDA(sc::kernels::launch_spin(s, records.device(), blocks, kSpreadThreads, kSpreadSpinNs));
    return;
  }
  cudaKernel_t kernel = nullptr;
  SC_CHECK_CUDA(sc::kernels::spin_kernel_handle(&kernel));
  sc::kernels::block_record* out = records.device();
  std::uint64_t spin_ns = kSpreadSpinNs;
  void* parameters[] = {&out, &spin_ns};
  SC_CHECK_CU(sc::driver().cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), blocks, 1, 1, kSpreadThreads, 1, 1, 0,
                                          s, parameters, nullptr));
}

// The report's block chart of the grid, its partition drawn over the SMs its blocks ran on (the driver names a
// partition's SM count, not its %smid values).
void draw(const sc::mapped<sc::kernels::block_record>& records, unsigned blocks, const std::set<unsigned>& used,
          unsigned provisioned, const cudaDeviceProp& properties) {
  const sc::block_records rows(records.host(), records.host() + blocks);
  const sc::chart_partition partition{"green context (" + std::to_string(provisioned) + " SMs provisioned)",
                                      std::vector<std::uint32_t>(used.begin(), used.end())};
  sc::write_block_chart({{"grid", "green", "", 0, kSpreadThreads, &rows}}, properties, 0, 0, {partition});
}

class Confinement : public GreenContexts, public ::testing::WithParamInterface<std::tuple<unsigned, route>> {};

// GCTX-02 · PG "Green Contexts" (work launched on a green context's streams "can only use its provisioned
// SMs"; the driver's overview names the two cases in which it may use more: MPS, and compute capability 9.x
// once a module with dynamic parallelism is loaded, which this suite does not load): the blocks of the grid ran
// on no more distinct SMs than the partition holds.
TEST_P(Confinement, GridInAGreenStreamStaysOnItsPartition) {
  const sc::claim gctx02("GCTX-02");
  const auto [min_count, how] = GetParam();
  const CUdevResource all = device_sms();
  if (min_count > all.sm.smCount) GTEST_SKIP() << "the device has " << all.sm.smCount << " SMs";
  const sm_split parts = split(all, min_count, 0, false);
  ASSERT_CU_EQ(CUDA_SUCCESS, parts.code);
  green_context green(api(), dev(), parts.group.front());
  CUstream s = nullptr;
  if (how == route::current)
    SC_CHECK_CUDA(green.make_stream_while_current(&s));
  else
    SC_CHECK_CU(green.make_stream(CU_STREAM_NON_BLOCKING, 0, &s));
  const sc::stream ordinary = make(sc::stream_flags::non_blocking, "primary");
  if (gctx02.mutated(sc::mutation_kind::arrangement)) s = ordinary.get();
  const unsigned blocks = kSpreadBlocksPerDeviceSm * all.sm.smCount;
  sc::mapped<sc::kernels::block_record> records(blocks);
  launch_grid(s, how == route::driver, records, blocks);
  SC_CHECK_CUDA(sc::synchronize_within(sc::stream::view(s, "green"), sc::kWorkDeadline));
  const std::set<unsigned> used = sc::families::distinct_sms(records, blocks);
  sc::observe("provisioned_sms", static_cast<int>(parts.group.front().sm.smCount));
  sc::observe("distinct_sms_used", static_cast<int>(used.size()));
  draw(records, blocks, used, parts.group.front().sm.smCount, properties());
  EXPECT_LE(used.size(), parts.group.front().sm.smCount) << "the grid ran on more SMs than its green context holds";
}

std::string partition_route_name(const ::testing::TestParamInfo<std::tuple<unsigned, route>>& instance) {
  const char* how[] = {"Runtime", "Driver", "Current"};
  return std::string(how[static_cast<int>(std::get<1>(instance.param))]) + "AtLeast" +
         std::to_string(std::get<0>(instance.param));
}

INSTANTIATE_TEST_SUITE_P(, Confinement,
                         ::testing::Combine(::testing::Values(8u, 16u, 64u),
                                            ::testing::Values(route::runtime, route::driver, route::current)),
                         partition_route_name);

}  // namespace
