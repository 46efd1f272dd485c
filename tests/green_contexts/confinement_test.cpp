// GCTX-02: a green context's stream runs its blocks only on its partition's SMs. A grid much larger than the
// partition, launched with the runtime into a stream cuGreenCtxStreamCreate made; each block records the
// %smid it began and ended on.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "green_contexts.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::families::green_context;
using sc::families::GreenContexts;
using sc::families::sm_split;

// Reasons: eight blocks per SM of the whole device, so that a grid the partition did not confine would reach
// far beyond it; 20 us a block, long against dispatch, short for the whole grid (a few milliseconds).
constexpr unsigned kBlocksPerDeviceSm = 8;
constexpr unsigned kThreads = 128;
constexpr std::uint64_t kSpinNs = 20'000;

// The distinct SMs the grid's blocks began or ended on.
std::set<unsigned> sms_of(const sc::mapped<sc::kernels::block_record>& records, unsigned blocks) {
  std::set<unsigned> sms;
  for (unsigned b = 0; b < blocks; ++b) {
    sms.insert(records.host()[b].sm_begin);
    sms.insert(records.host()[b].sm_end);
  }
  return sms;
}

class Confinement : public GreenContexts, public ::testing::WithParamInterface<unsigned> {};

// GCTX-02 · PG "Green Contexts" (work launched on a green context's streams "can only use its provisioned
// SMs"; the driver's overview names the two cases in which it may use more: MPS, and compute capability 9.x
// once a module with dynamic parallelism is loaded, which this suite does not load): the blocks of the grid ran
// on no more distinct SMs than the partition holds.
TEST_P(Confinement, GridInAGreenStreamStaysOnItsPartition) {
  const sc::claim gctx02("GCTX-02");
  const CUdevResource all = device_sms();
  if (GetParam() > all.sm.smCount) GTEST_SKIP() << "the device has " << all.sm.smCount << " SMs";
  const sm_split parts = split(all, GetParam(), 0, false);
  ASSERT_CU_EQ(CUDA_SUCCESS, parts.code);
  const unsigned provisioned = parts.group.front().sm.smCount;
  green_context green(api(), dev(), parts.group.front());
  CUstream raw = nullptr;
  ASSERT_CU_EQ(CUDA_SUCCESS, green.make_stream(CU_STREAM_NON_BLOCKING, 0, &raw));
  const bool primary = gctx02.mutated(sc::mutation_kind::arrangement);
  const sc::stream ordinary = make(sc::stream_flags::non_blocking, "primary");
  const sc::stream s = primary ? sc::stream::view(ordinary.get(), "primary") : sc::stream::view(raw, "green");
  const unsigned blocks = kBlocksPerDeviceSm * all.sm.smCount;
  sc::mapped<sc::kernels::block_record> records(blocks);
  SC_CHECK_CUDA(sc::kernels::launch_spin(s.get(), records.device(), blocks, kThreads, kSpinNs));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  const std::set<unsigned> used = sms_of(records, blocks);
  sc::observe("provisioned_sms", static_cast<int>(provisioned));
  sc::observe("distinct_sms_used", static_cast<int>(used.size()));
  EXPECT_LE(used.size(), provisioned) << "the grid ran on more SMs than its green context holds";
}

std::string group_name(const ::testing::TestParamInfo<unsigned>& instance) {
  return "AtLeast" + std::to_string(instance.param);
}

INSTANTIATE_TEST_SUITE_P(, Confinement, ::testing::Values(8u, 16u, 64u), group_name);

}  // namespace
