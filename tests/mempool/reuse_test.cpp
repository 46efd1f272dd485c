// MPOOL-04…07: which reuse policy lets an allocation in stream b take the block freed in stream a. Every test
// uses a pool bounded to one block (MemoryPools::one_block_pool), so the allocation either reuses the freed
// block or fails: which one it did is the verdict, and the freed block's reader in a (counting the words that
// are not 1) shows whether b's writer overtook it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "mempool.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::testing::MemoryPools;

// The block (`bytes`) of `pool` allocated in `a` and filled with 1s, finished.
std::uint32_t* filled_block(const sc::mem_pool& pool, std::size_t bytes, const sc::stream& a) {
  void* p = nullptr;
  SC_CHECK_CUDA(cudaMallocFromPoolAsync(&p, bytes, pool.get(), a.get()));
  auto* words = static_cast<std::uint32_t*>(p);
  SC_CHECK_CUDA(sc::kernels::launch_fill(a.get(), words, static_cast<std::uint32_t>(bytes / sizeof *words), 1));
  SC_CHECK_CUDA(sc::synchronize_within(a, sc::kWorkDeadline));
  return words;
}

// After the gate and drain: b's allocation (`allocated`) reused block p as q; a's reader of p, counting into `seen`
// the words that were not 1, saw only 1s (b's writer did not overtake it); q reads back the 2s b wrote. q is freed.
// `not_reused` says what a failed allocation means.
void expect_reused_in_order(MemoryPools& t, cudaError_t allocated, const std::uint32_t* p, void*& q,
                            const sc::device_buffer<std::uint32_t>& seen, const sc::stream& b, const char* not_reused) {
  sc::observe("allocation", sc::error_name(allocated));
  sc::observe("same_block", q == p);
  ASSERT_CUDA_EQ(cudaSuccess, allocated) << not_reused;
  EXPECT_EQ(static_cast<const void*>(p), q) << "a pool of one block gave b other memory";
  std::uint32_t mismatches = 0;
  SC_CHECK_CUDA(cudaMemcpy(&mismatches, seen.data(), sizeof mismatches, cudaMemcpyDeviceToHost));
  EXPECT_EQ(0u, mismatches) << "b wrote the reused block before a's reader of the freed block ran";
  EXPECT_EQ(0u, t.mismatches_after(static_cast<const std::uint32_t*>(q), t.block_words(), 2, b));
  EXPECT_CUDA_EQ(cudaSuccess, sc::testing::free_in(q, b));
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(b, sc::kWorkDeadline));
}

// MPOOL-04 · RT cudaMemPoolSetAttribute (cudaMemPoolReuseFollowEventDependencies: "Allow cuMemAllocAsync to use
// memory asynchronously freed in another stream as long as a stream ordering dependency of the allocating stream
// on the free action exists"): with only this policy on, a gate holds a ahead of a reader of p, the free of p and
// an event; b waits on the event and allocates. The allocation returns while gated with p's block, and b's
// writer, ordered behind the event, does not overtake the reader.
TEST_F(MemoryPools, FreedBlockIsReusedAcrossAnEventEdge) {
  const sc::claim mpool04("MPOOL-04", sc::verdict_kind::documented,
                          "RT cudaMemPoolSetAttribute (cudaMemPoolReuseFollowEventDependencies)");
  SC_REQUIRE(sc::requirement::async_launches);
  // Mutation (arrangement): b does not wait on the event, so no dependency on the free exists.
  const bool no_edge = mpool04.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = one_block_pool(true, false, false);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  std::uint32_t* p = filled_block(pool, block_bytes(), a);
  sc::device_buffer<std::uint32_t> seen(1);
  SC_CHECK_CUDA(cudaMemsetAsync(seen.data(), 0, sizeof(std::uint32_t), a.get()));
  void* held = p;  // until its free is enqueued
  void* q = nullptr;
  const sc::testing::unfreed_guard left_in_a(a, {&held});
  const sc::testing::unfreed_guard left_in_b(b, {&q});
  cudaError_t allocated = cudaErrorUnknown;
  {
    sc::gate g;
    hold(g, a);
    sc::held_window w(g);
    SC_CHECK_CUDA(sc::kernels::launch_count_mismatches(a.get(), p, block_words(), 1, seen.data()));
    SC_CHECK_CUDA(sc::testing::free_in(held, a));
    SC_CHECK_CUDA(cudaEventRecord(e.get(), a.get()));
    if (!no_edge) SC_CHECK_CUDA(cudaStreamWaitEvent(b.get(), e.get(), 0));
    const sc::return_observation r = sc::call_while_gated(
        [&] {
          allocated = cudaMallocFromPoolAsync(&q, block_bytes(), pool.get(), b.get());
          if (allocated != cudaSuccess) {
            (void)cudaGetLastError();  // on this (the helper) thread, where the failed call left it
            return allocated;
          }
          return sc::kernels::launch_fill(b.get(), static_cast<std::uint32_t*>(q), block_words(), 2);
        },
        g);
    EXPECT_TRUE(r.returned) << "the allocation across the event edge waited for the gated stream";
  }
  drain();
  expect_reused_in_order(*this, allocated, p, q, seen, b,
                         "the only block, freed in a before the event b waits on, was not reused");
}

// MPOOL-05 (observed) · RT cudaMemPoolSetAttribute (cudaMemPoolReuseAllowOpportunistic: "Allow reuse of already
// completed frees when there is no dependency between the free and allocation"): with only this policy on, p is
// freed in a, and a is seen idle by cudaStreamQuery (the free completed; no synchronize told the pool); b, with no
// dependency on a, allocates. Row `completed_free_reused`: the allocation succeeded with p's block. The same
// arrangement with the policy off is recorded (`without_the_policy.*`).
TEST_F(MemoryPools, CompletedFreeIsReusedWithoutAnEdge) {
  const sc::claim mpool05("MPOOL-05", sc::verdict_kind::observed,
                          "RT cudaMemPoolSetAttribute (cudaMemPoolReuseAllowOpportunistic)");
  // Mutation (arrangement): the policy is off in the measured pool too.
  const bool off = mpool05.mutated(sc::mutation_kind::arrangement);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  struct outcome {
    cudaError_t code;
    bool same_block;
  };
  const auto reuse_after_completion = [&](bool opportunistic) {
    const sc::mem_pool pool = one_block_pool(false, opportunistic, false);
    std::uint32_t* p = filled_block(pool, block_bytes(), a);
    SC_CHECK_CUDA(cudaFreeAsync(p, a.get()));
    // Complete, as cudaStreamQuery sees it; never synchronized (after a synchronize of a, its free is reused in
    // b with every policy off: H100, driver 580).
    SC_CHECK_CUDA(sc::synchronize_within(a, sc::kWorkDeadline));
    void* q = nullptr;
    const cudaError_t code = cudaMallocFromPoolAsync(&q, block_bytes(), pool.get(), b.get());
    (void)cudaGetLastError();
    const outcome out{code, code == cudaSuccess && q == p};
    if (code == cudaSuccess) {
      SC_CHECK_CUDA(cudaFreeAsync(q, b.get()));
      SC_CHECK_CUDA(sc::synchronize_within(b, sc::kWorkDeadline));
    }
    return out;
  };
  const outcome with = reuse_after_completion(!off);
  const outcome without = reuse_after_completion(false);
  sc::observe("allocation", sc::error_name(with.code));
  sc::observe("without_the_policy.allocation", sc::error_name(without.code));
  sc::observe("without_the_policy.same_block", without.same_block);
  EXPECT_TRUE(mpool05.matches_baseline("completed_free_reused", with.same_block));
}

// MPOOL-06 · RT cudaMemPoolSetAttribute (cudaMemPoolReuseAllowInternalDependencies: "Allow cuMemAllocAsync to
// insert new stream dependencies in order to establish the stream ordering required to reuse a piece of memory
// released by cuFreeAsync"): with only this policy on, a gate holds a ahead of a reader of p and the free of p;
// b, with no dependency on a, allocates and drops a mark. The allocation returns while gated with p's block; the
// mark is absent while the gate is closed (the dependency the allocator added), and b's writer does not overtake
// the reader.
TEST_F(MemoryPools, ReuseAddsAHiddenDependency) {
  const sc::claim mpool06("MPOOL-06", sc::verdict_kind::documented,
                          "RT cudaMemPoolSetAttribute (cudaMemPoolReuseAllowInternalDependencies)");
  SC_REQUIRE(sc::requirement::async_launches);
  // Mutation (arrangement): the policy is off, so nothing lets b reuse a pending free.
  const bool off = mpool06.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = one_block_pool(false, false, !off);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  std::uint32_t* p = filled_block(pool, block_bytes(), a);
  sc::device_buffer<std::uint32_t> seen(1);
  SC_CHECK_CUDA(cudaMemsetAsync(seen.data(), 0, sizeof(std::uint32_t), a.get()));
  sc::marks m;
  void* held = p;  // until its free is enqueued
  void* q = nullptr;
  const sc::testing::unfreed_guard left_in_a(a, {&held});
  const sc::testing::unfreed_guard left_in_b(b, {&q});
  cudaError_t allocated = cudaErrorUnknown;
  {
    sc::gate g;
    hold(g, a);
    sc::held_window w(g);
    SC_CHECK_CUDA(sc::kernels::launch_count_mismatches(a.get(), p, block_words(), 1, seen.data()));
    SC_CHECK_CUDA(sc::testing::free_in(held, a));
    // The mark goes in with the allocation; whether it lands is asked once the call returned, the gate still
    // closed (call_while_gated opens the gate when it is done).
    sc::gated_result mark_held(sc::gated_outcome::invalid, "not asked: the allocation did not return while gated");
    sc::while_gated_steps steps;
    steps.after_return = [&] { mark_held = w.absent(sc::probe::mark(m, 1)); };
    const sc::return_observation r = sc::call_while_gated(
        [&] {
          allocated = cudaMallocFromPoolAsync(&q, block_bytes(), pool.get(), b.get());
          if (allocated != cudaSuccess) {
            (void)cudaGetLastError();  // on this (the helper) thread, where the failed call left it
            return allocated;
          }
          const cudaError_t filled =
              sc::kernels::launch_fill(b.get(), static_cast<std::uint32_t*>(q), block_words(), 2);
          if (filled == cudaSuccess) m.drop(b, 1);
          return filled;
        },
        g, sc::kReturnWindow, steps);
    EXPECT_TRUE(r.returned) << "the allocation waited for the gated stream on the host";
    if (allocated == cudaSuccess) {
      EXPECT_TRUE(mark_held) << "b's work after the reusing allocation ran while a was gated";
    }
  }
  drain();
  expect_reused_in_order(*this, allocated, p, q, seen, b,
                         "the only block, freed behind a gate, was not reused with a dependency");
}

// MPOOL-07 · RT cudaMemPoolSetAttribute (the three reuse policies), cudaMemPoolProps::maxSize: with every reuse
// policy off, b's allocation while a's free of the only block is pending behind a gate fails with
// cudaErrorMemoryAllocation, returning while gated. Row `allocates_after_the_free_completed` (observed): once the
// gate opened and the device was synchronized (drain), the same allocation in b succeeds (the release threshold
// is left at its default, 0, so the synchronize may return the freed memory to the system and the pool maps it
// again).
TEST_F(MemoryPools, NoReusePolicyFailsWhileTheFreeIsPending) {
  const sc::claim mpool07("MPOOL-07", sc::verdict_kind::documented,
                          "RT cudaMemPoolSetAttribute (reuse policies), cudaMemPoolProps::maxSize");
  SC_REQUIRE(sc::requirement::async_launches);
  // Mutation (arrangement): internal dependencies are allowed, so the pending free can be reused.
  const bool allow = mpool07.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = sc::mem_pool::create(device(), block_bytes());
  pool.set_reuse(false, false, allow);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  void* held = filled_block(pool, block_bytes(), a);  // until its free is enqueued
  void* q = nullptr;
  const sc::testing::unfreed_guard left_in_a(a, {&held});
  const sc::testing::unfreed_guard left_in_b(b, {&q});
  cudaError_t pending = cudaErrorUnknown;
  {
    sc::gate g;
    hold(g, a);
    sc::held_window w(g);
    SC_CHECK_CUDA(sc::testing::free_in(held, a));
    const sc::return_observation r = sc::call_while_gated(
        [&] {
          pending = cudaMallocFromPoolAsync(&q, block_bytes(), pool.get(), b.get());
          (void)cudaGetLastError();  // on this (the helper) thread, where a failed call left it
          return cudaSuccess;
        },
        g);
    EXPECT_TRUE(r.returned) << "the allocation waited for the gated stream on the host";
  }
  drain();
  sc::observe("while_pending.allocation", sc::error_name(pending));
  if (pending == cudaSuccess) {
    EXPECT_CUDA_EQ(cudaSuccess, sc::testing::free_in(q, b));
    EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(b, sc::kWorkDeadline));
  }
  EXPECT_CUDA_EQ(cudaErrorMemoryAllocation, pending)
      << "an allocation with every reuse policy off, in a pool whose only block's free was pending";
  SC_CHECK_CUDA(sc::synchronize_within(a, sc::kWorkDeadline));
  const cudaError_t after = cudaMallocFromPoolAsync(&q, block_bytes(), pool.get(), b.get());
  (void)cudaGetLastError();
  sc::observe("after_completion.allocation", sc::error_name(after));
  EXPECT_TRUE(mpool07.matches_baseline("allocates_after_the_free_completed", after == cudaSuccess));
  if (after == cudaSuccess) {
    EXPECT_CUDA_EQ(cudaSuccess, sc::testing::free_in(q, b));
    EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(b, sc::kWorkDeadline));
  }
}

}  // namespace
