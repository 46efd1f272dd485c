// GCTX-10: a partition smaller than a grid's co-residency. A cooperative grid one block larger than the
// partition holds is launched into its stream (what the driver says is recorded against the baseline); an
// ordinary grid four times as large as the partition holds runs there in waves (block records).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "green_contexts.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::families::green_context;
using sc::families::GreenContexts;

constexpr unsigned kCoopThreads = 1024;  // a large block, so that few fit on an SM
// Reasons: four partitions' worth of blocks, so that a confined grid needs at least four waves; 200 us a block,
// long against dispatch (microseconds), short for the grid (about a millisecond).
constexpr unsigned kWaves = 4;
constexpr std::uint64_t kWaveSpinNs = 200'000;

// The most records whose [t0, t1) overlap at one moment (an end sorts before a start at the same time).
unsigned most_at_once(const sc::kernels::block_record* r, unsigned n) {
  std::vector<std::pair<std::uint64_t, int>> edges;
  for (unsigned b = 0; b < n; ++b) {
    edges.emplace_back(r[b].t0_ns, 1);
    edges.emplace_back(r[b].t1_ns, -1);
  }
  std::sort(edges.begin(), edges.end());
  int now = 0;
  int most = 0;
  for (const auto& e : edges) most = std::max(most, now += e.second);
  return static_cast<unsigned>(most);
}

// GCTX-10 (observed: no document ties cooperative launches to green contexts; the occupancy queries given a green
// stream count its SMs): a cooperative grid of the latch kernel one block larger than co-residency on the
// partition allows, launched into the partition's stream. Its return code is the row.
TEST_F(GreenContexts, CooperativeGridLargerThanThePartitionHolds) {
  const sc::claim gctx10("GCTX-10", sc::verdict_kind::observed);
  if (properties().cooperativeLaunch == 0) GTEST_SKIP() << "the device does not support cooperative launches";
  const CUdevResource group = smallest_group();
  green_context green(api(), dev(), group);
  const sc::stream s = stream_of(green, gctx10.mutated(sc::mutation_kind::arrangement));
  int per_sm = 0;
  SC_CHECK_CUDA(sc::kernels::latch_grid_occupancy(kCoopThreads, &per_sm));
  const unsigned blocks = static_cast<unsigned>(per_sm) * group.sm.smCount + 1;
  sc::mapped<std::uint32_t> resident(blocks);
  sc::mapped<sc::kernels::latch_word> opened(1);  // open before the launch: a grid that is taken runs through
  *opened.host() = sc::kernels::latch_word{};
  opened.host()->open = 1;
  const cudaError_t code = sc::kernels::launch_latch_grid_cooperative(s.get(), opened.device(), 1'000'000'000ull, false,
                                                                      blocks, kCoopThreads, resident.device());
  sc::clear_last_error();
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  EXPECT_TRUE(gctx10.matches_baseline("cooperative_one_block_beyond_the_partition", sc::error_name(code)));
}

// GCTX-10 · PG "Green Contexts" (work on a green context's streams "can only use its provisioned SMs"): a grid
// of four partitions' worth of blocks never has more blocks resident at once than the partition's SMs hold
// threads for, and its last block starts after its first ended (it ran in waves).
TEST_F(GreenContexts, OrdinaryGridRunsInWavesOnThePartition) {
  const sc::claim gctx10("GCTX-10", sc::verdict_kind::documented);
  const CUdevResource group = smallest_group();
  green_context green(api(), dev(), group);
  const unsigned capacity =
      static_cast<unsigned>(properties().maxThreadsPerMultiProcessor) / kCoopThreads * group.sm.smCount;
  const sc::stream s = stream_of(green, gctx10.mutated(sc::mutation_kind::arrangement));
  const unsigned blocks = kWaves * capacity;
  sc::mapped<sc::kernels::block_record> records(blocks);
  SC_CHECK_CUDA(sc::kernels::launch_spin(s.get(), records.device(), blocks, kCoopThreads, kWaveSpinNs));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  const sc::kernels::block_record* r = records.host();
  const unsigned peak = most_at_once(r, blocks);
  const auto by_t0 = [](const auto& x, const auto& y) { return x.t0_ns < y.t0_ns; };
  const auto by_t1 = [](const auto& x, const auto& y) { return x.t1_ns < y.t1_ns; };
  sc::observe("capacity_blocks", static_cast<int>(capacity));
  sc::observe("most_blocks_at_once", static_cast<int>(peak));
  EXPECT_LE(peak, capacity) << "more blocks were resident at once than the partition's SMs hold";
  EXPECT_GE(std::max_element(r, r + blocks, by_t0)->t0_ns, std::min_element(r, r + blocks, by_t1)->t1_ns)
      << "every block started before the first ended: the grid did not run in waves";
}

}  // namespace
