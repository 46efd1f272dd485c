// MPOOL-08: the per-thread default streams of two host threads are two streams for the allocator's reuse rules.
#include <gtest/gtest.h>

#include "mempool.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/thread_team.hpp"

namespace {

using sc::families::MemoryPools;

// An allocation of the one block of `pool` in the calling thread's per-thread stream: its code (the last error
// taken).
cudaError_t allocate_in_per_thread_stream(const MemoryPools& t, const sc::mem_pool& pool, void** out) {
  return sc::taking_last_error(cudaMallocFromPoolAsync(out, t.block_bytes(), pool.get(), cudaStreamPerThread));
}

// The same allocation made on a thread of its own (in its per-thread stream), whose device is `dev`: its code, or
// the code of setting the device. The thread is joined before this returns.
cudaError_t allocate_on_another_thread(const MemoryPools& t, const sc::mem_pool& pool, int dev, void** out) {
  cudaError_t result = cudaErrorUnknown;
  sc::thread_team team;
  team.start(1, [&](unsigned) {
    void* got = nullptr;
    cudaError_t code = cudaSetDevice(dev);
    if (code == cudaSuccess) code = allocate_in_per_thread_stream(t, pool, &got);
    team.update([&] {
      result = code;
      *out = got;
    });
  });
  team.end();
  return result;
}

// MPOOL-08 · RT stream semantics (a per-thread default stream "is not shared" between host threads: each thread
// has its own), cudaMemPoolSetAttribute (reuse across streams needs a dependency unless a policy allows it): in a
// one-block pool where only event dependencies are followed, this thread allocates the block in its per-thread
// stream, and a latch holds that stream ahead of the block's free. Another thread, allocating in its own
// per-thread stream, has no dependency on the free: cudaErrorMemoryAllocation. This thread, allocating again in
// its own per-thread stream, is ordered after the free: it gets the block (the control).
TEST_F(MemoryPools, PerThreadStreamsOfTwoThreadsAreTwoStreamsForReuse) {
  const sc::claim mpool08("MPOOL-08");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool same_thread = mpool08.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = one_block_pool(true, false, false);
  const sc::stream mine = sc::stream::per_thread();
  void* p = filled_block(pool, mine);
  void* const block = p;
  void* theirs = nullptr;
  cudaError_t other = cudaErrorUnknown;
  void* again = nullptr;
  cudaError_t control = cudaErrorUnknown;
  const sc::families::unfreed_guard left(mine, {&p, &theirs, &again});
  {
    sc::families::free_behind_a_latch freed(*this, mine, p);
    other = same_thread ? allocate_in_per_thread_stream(*this, pool, &theirs)
                        : allocate_on_another_thread(*this, pool, device(), &theirs);
    if (theirs == nullptr) control = allocate_in_per_thread_stream(*this, pool, &again);
  }
  drain();
  sc::observe("other_thread.allocation", sc::error_name(other));
  sc::observe("this_thread.allocation", sc::error_name(control));
  sc::observe("this_thread.same_block", again == block);
  EXPECT_EQ(block, again) << "the block freed in this thread's per-thread stream";
  sc::families::expect_freed_in(mine, {&theirs, &again});
  EXPECT_CUDA_EQ(cudaErrorMemoryAllocation, other)
      << "another thread's per-thread stream took the block freed in this thread's, with no dependency on the free";
  EXPECT_CUDA_EQ(cudaSuccess, control) << "this thread's per-thread stream, ordered after the free, got no block";
}

}  // namespace
