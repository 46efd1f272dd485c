// MPOOL-01, MPOOL-02: an allocation takes its place in its stream's order, and a block freed and allocated
// again in one stream is not written before the earlier readers of the freed block ran.
#include <gtest/gtest.h>

#include <cstdint>

#include "mempool.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::testing::MemoryPools;

// MPOOL-01 · RT cudaMallocFromPoolAsync ("returns a pointer ... The allocation comes from the memory pool
// associated with the stream ... the allocation is stream ordered"): with a gate holding s, the allocation in s
// returns while the gate is closed; the block, written in s behind the gate, reads back as written once it opens.
TEST_F(MemoryPools, AllocationReturnsWhileItsStreamIsGatedAndIsValidThere) {
  const sc::claim mpool01("MPOOL-01", sc::verdict_kind::documented, "RT cudaMallocFromPoolAsync (stream ordered)");
  SC_REQUIRE(sc::requirement::async_launches);
  // Mutation (arrangement): the stream is synchronized after the allocation, so the call cannot return while gated.
  const bool then_sync = mpool01.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = sc::mem_pool::create(device());
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const int dev = device();
  void* block = nullptr;
  const sc::return_observation allocated = call_while_held(s, [&] {
    cudaError_t code = cudaSetDevice(dev);
    if (code == cudaSuccess) code = cudaMallocFromPoolAsync(&block, kBlockBytes, pool.get(), s.get());
    if (code == cudaSuccess)
      code = sc::kernels::launch_fill(s.get(), static_cast<std::uint32_t*>(block), kBlockWords, 7);
    if (code == cudaSuccess && then_sync) code = cudaStreamSynchronize(s.get());
    return code;
  });
  drain();
  EXPECT_CUDA_EQ(cudaSuccess, allocated.code);
  EXPECT_TRUE(allocated.returned) << "cudaMallocFromPoolAsync waited for the gated stream";
  sc::observe("allocation_took_us", static_cast<long long>(allocated.took.count()));
  ASSERT_NE(nullptr, block);
  EXPECT_EQ(0u, mismatches_after(static_cast<const std::uint32_t*>(block), kBlockWords, 7, s))
      << "the block written in its stream behind the gate does not read back";
  EXPECT_CUDA_EQ(cudaSuccess, cudaFreeAsync(block, s.get()));
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(s, sc::kWorkDeadline));
}

// MPOOL-02 · RT cudaFreeAsync ("The memory ... may be reused ... once the free has completed in stream order"),
// cudaMallocFromPoolAsync: in a pool bounded to one block, p is written with 1; a gate then holds s ahead of a
// reader of p, the free of p, a new allocation q (which can only be p's block again) and a write of 2 into q.
// Once the gate opens, the reader saw only 1s: the reuse did not overtake it. Whether q is p's address is
// recorded.
TEST_F(MemoryPools, SameStreamReuseWaitsForTheEarlierReaders) {
  const sc::claim mpool02("MPOOL-02", sc::verdict_kind::documented, "RT cudaFreeAsync, cudaMallocFromPoolAsync");
  SC_REQUIRE(sc::requirement::async_launches);
  // Mutation (arrangement): the write into q goes into another, free stream, so it is not ordered after the reader.
  const bool elsewhere = mpool02.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = sc::mem_pool::create(device(), kBlockBytes);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream free = make(stream_flags::non_blocking, "free");
  void* p = nullptr;
  ASSERT_CUDA_EQ(cudaSuccess, cudaMallocFromPoolAsync(&p, kBlockBytes, pool.get(), s.get()));
  auto* words = static_cast<std::uint32_t*>(p);
  SC_CHECK_CUDA(sc::kernels::launch_fill(s.get(), words, kBlockWords, 1));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  sc::device_buffer<std::uint32_t> seen(1);
  SC_CHECK_CUDA(cudaMemset(seen.data(), 0, sizeof(std::uint32_t)));
  void* q = nullptr;
  {
    sc::gate g;
    hold(g, s);
    sc::held_window w(g);
    SC_CHECK_CUDA(sc::kernels::launch_count_mismatches(s.get(), words, kBlockWords, 1, seen.data()));
    ASSERT_CUDA_EQ(cudaSuccess, cudaFreeAsync(p, s.get()));
    ASSERT_CUDA_EQ(cudaSuccess, cudaMallocFromPoolAsync(&q, kBlockBytes, pool.get(), s.get()));
    SC_CHECK_CUDA(
        sc::kernels::launch_fill((elsewhere ? free : s).get(), static_cast<std::uint32_t*>(q), kBlockWords, 2));
  }
  drain();
  std::uint32_t mismatches = 0;
  SC_CHECK_CUDA(cudaMemcpy(&mismatches, seen.data(), sizeof mismatches, cudaMemcpyDeviceToHost));
  sc::observe("reused_address", p == q);
  sc::observe("reader_mismatches", static_cast<long long>(mismatches));
  EXPECT_EQ(0u, mismatches) << "the new allocation was written before the freed block's reader ran";
  EXPECT_CUDA_EQ(cudaSuccess, cudaFreeAsync(q, s.get()));
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(s, sc::kWorkDeadline));
}

}  // namespace
