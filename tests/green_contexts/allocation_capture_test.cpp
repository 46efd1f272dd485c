// GCTX-08: stream-ordered allocation and stream capture in a green context's stream. No document ties either to
// green contexts (the programming guide says a captured kernel node keeps the context of its capture stream), so
// what happens is recorded and compared with the baseline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "green_contexts.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/graph.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::families::green_context;
using sc::families::GreenContexts;

constexpr std::uint32_t kWords = 1u << 16;  // 256 KiB: a small allocation of the device's default pool
constexpr std::uint32_t kValue = 0x6c0ffee;
using sc::families::kSpreadBlocksPerDeviceSm;
using sc::families::kSpreadSpinNs;
using sc::families::kSpreadThreads;

// GCTX-08 (observed): cudaMallocAsync in a green context's stream, a fill kernel there, a copy to mapped host
// memory and cudaFreeAsync, in stream order: the calls' codes and whether every word read back holds the value.
TEST_F(GreenContexts, StreamOrderedAllocationInAGreenStream) {
  const sc::claim gctx08("GCTX-08");
  green_context green(api(), dev(), smallest_group());
  const sc::stream s = sc::stream::view(green.new_stream(), "green");
  const std::uint32_t written = gctx08.mutate(sc::mutation_kind::arrangement, kValue, kValue + 1);
  sc::mapped<std::uint32_t> back(kWords);
  void* p = nullptr;
  const cudaError_t allocated = cudaMallocAsync(&p, kWords * sizeof(std::uint32_t), s.get());
  EXPECT_TRUE(gctx08.matches_baseline("malloc_async", sc::error_name(allocated)));
  if (allocated != cudaSuccess) return;
  auto* words = static_cast<std::uint32_t*>(p);
  SC_CHECK_CUDA(sc::kernels::launch_fill(s.get(), words, kWords, written));
  SC_CHECK_CUDA(cudaMemcpyAsync(back.host(), words, kWords * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s.get()));
  SC_CHECK_CUDA(cudaFreeAsync(p, s.get()));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  const std::uint32_t* out = back.host();
  EXPECT_TRUE(gctx08.matches_baseline("every_word_filled",
                                      std::all_of(out, out + kWords, [](std::uint32_t w) { return w == kValue; })));
}

// GCTX-08 (observed; PG "Green Contexts": a kernel node keeps the context of its capture stream): a grid captured
// in a green context's stream and replayed into a primary-context stream; the codes of capture and replay, and
// whether the replayed grid stayed on the partition's SMs.
TEST_F(GreenContexts, GridCapturedInAGreenStreamKeepsItsPartition) {
  const sc::claim gctx08("GCTX-08");
  const CUdevResource group = smallest_group();
  green_context green(api(), dev(), group);
  const sc::stream captured_in = stream_of(green, gctx08.mutated(sc::mutation_kind::arrangement));
  const sc::stream replay = make(sc::stream_flags::non_blocking, "replay");
  const unsigned blocks = kSpreadBlocksPerDeviceSm * device_sms().sm.smCount;
  sc::mapped<sc::kernels::block_record> records(blocks);
  SC_CHECK_CUDA(cudaStreamBeginCapture(captured_in.get(), cudaStreamCaptureModeThreadLocal));
  const cudaError_t launched =
      sc::kernels::launch_spin(captured_in.get(), records.device(), blocks, kSpreadThreads, kSpreadSpinNs);
  cudaGraph_t raw = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(captured_in.get(), &raw);
  const sc::graph g = sc::graph::adopt(raw);
  EXPECT_TRUE(gctx08.matches_baseline("capture", sc::error_name(launched != cudaSuccess ? launched : ended)));
  if (launched != cudaSuccess || ended != cudaSuccess) return;
  const sc::graph_exec x = sc::graph_exec::instantiate(g);
  SC_CHECK_CUDA(launch(x, replay, "captured in green"));
  SC_CHECK_CUDA(sc::synchronize_within(replay, sc::kWorkDeadline));
  const std::set<unsigned> used = sc::families::distinct_sms(records, blocks);
  sc::observe("distinct_sms_used", static_cast<int>(used.size()));
  sc::observe("provisioned_sms", static_cast<int>(group.sm.smCount));
  EXPECT_TRUE(gctx08.matches_baseline("replay_stays_on_the_partition", used.size() <= group.sm.smCount));
}

}  // namespace
