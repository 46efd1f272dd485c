// MPOOL-08: the per-thread default streams of two host threads are two streams for the allocator's reuse rules.
#include <gtest/gtest.h>

#include <cstdint>

#include "mempool.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/thread_team.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::families::MemoryPools;

// MPOOL-08 · RT stream semantics (a per-thread default stream "is not shared" between host threads: each thread
// has its own), cudaMemPoolSetAttribute (reuse across streams needs a dependency unless a policy allows it): in a
// one-block pool where only event dependencies are followed, this thread allocates the block in its per-thread
// stream, and a gate holds that stream ahead of the block's free. Another thread, allocating in its own
// per-thread stream, has no dependency on the free: cudaErrorMemoryAllocation. This thread, allocating again in
// its own per-thread stream, is ordered after the free: it gets the block (the control).
TEST_F(MemoryPools, PerThreadStreamsOfTwoThreadsAreTwoStreamsForReuse) {
  const sc::claim mpool08("MPOOL-08");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool same_thread = mpool08.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = one_block_pool(true, false, false);
  const sc::stream mine = sc::stream::per_thread();
  void* p = nullptr;
  ASSERT_CUDA_EQ(cudaSuccess, cudaMallocFromPoolAsync(&p, block_bytes(), pool.get(), cudaStreamPerThread));
  SC_CHECK_CUDA(sc::kernels::launch_fill(cudaStreamPerThread, static_cast<std::uint32_t*>(p), block_words(), 1));
  SC_CHECK_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
  void* const block = p;
  const int dev = device();
  void* theirs = nullptr;
  cudaError_t other = cudaErrorUnknown;
  void* again = nullptr;
  cudaError_t control = cudaErrorUnknown;
  const sc::families::unfreed_guard left(mine, {&p, &theirs, &again});
  {
    sc::gate g;
    hold(g, mine);
    sc::held_window w(g);
    SC_CHECK_CUDA(sc::families::free_in(p, mine));
    // In the calling thread's per-thread stream.
    const auto allocate = [&](void** out) {
      const cudaError_t code =
          sc::taking_last_error(cudaMallocFromPoolAsync(out, block_bytes(), pool.get(), cudaStreamPerThread));
      return code;
    };
    if (same_thread) {
      other = allocate(&theirs);
    } else {
      sc::thread_team team;
      team.start(1, [&](unsigned) {
        void* got = nullptr;
        cudaError_t code = cudaSetDevice(dev);
        if (code == cudaSuccess) code = allocate(&got);
        team.update([&] {
          other = code;
          theirs = got;
        });
      });
      team.end();
    }
    if (theirs == nullptr) {
      control = allocate(&again);
    }
  }
  drain();
  sc::observe("other_thread.allocation", sc::error_name(other));
  sc::observe("this_thread.allocation", sc::error_name(control));
  sc::observe("this_thread.same_block", again == block);
  EXPECT_EQ(block, again) << "the block freed in this thread's per-thread stream";
  for (void** left_over : {&theirs, &again}) {
    if (*left_over != nullptr) {
      EXPECT_CUDA_EQ(cudaSuccess, sc::families::free_in(*left_over, mine));
    }
  }
  EXPECT_CUDA_EQ(cudaSuccess, cudaStreamSynchronize(cudaStreamPerThread));
  EXPECT_CUDA_EQ(cudaErrorMemoryAllocation, other)
      << "another thread's per-thread stream took the block freed in this thread's, with no dependency on the free";
  EXPECT_CUDA_EQ(cudaSuccess, control) << "this thread's per-thread stream, ordered after the free, got no block";
}

}  // namespace
