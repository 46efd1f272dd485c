// MPOOL-01…03: an allocation takes its place in its stream's order; a block freed and allocated again in one
// stream is not written before the earlier readers of the freed block ran; another stream that waits on an event
// recorded after an allocation uses the block only once the allocation completed, after the earlier readers of the
// block it reused.
#include <gtest/gtest.h>

#include <cstdint>

#include "mempool.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::MemoryPools;

// MPOOL-01 · RT cudaMallocFromPoolAsync ("Inserts an allocation operation into hStream. A pointer to the
// allocated memory is returned immediately"; "Basic stream ordering allows future work submitted into the same
// stream to use the allocation"): with a latch holding s, the allocation in s returns while the latch is closed;
// the block, written in s behind the latch, reads back as written once it opens.
TEST_F(MemoryPools, AllocationReturnsWhileItsStreamIsHeldAndIsValidThere) {
  const sc::claim mpool01("MPOOL-01");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool then_sync = mpool01.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = sc::mem_pool::create(device());
  const sc::stream s = make(stream_flags::non_blocking, "s");
  void* block = nullptr;
  const sc::return_observation allocated = call_while_holding(s, [&] {
    const cudaError_t code = sc::families::allocate_and_fill(pool, s, kBlockBytes, 7, block);
    return code == cudaSuccess && then_sync ? cudaStreamSynchronize(s.get()) : code;
  });
  drain();
  EXPECT_CUDA_EQ(cudaSuccess, allocated.code);
  EXPECT_TRUE(allocated.returned) << "cudaMallocFromPoolAsync waited for the held stream";
  sc::observe("allocation_took_us", static_cast<long long>(allocated.took.count()));
  ASSERT_NE(nullptr, block);
  EXPECT_EQ(0u, mismatches_after(static_cast<const std::uint32_t*>(block), kBlockWords, 7, s))
      << "the block written in its stream behind the latch does not read back";
  sc::families::expect_freed_in(s, {&block});
}

// MPOOL-02 · RT cudaFreeAsync ("Inserts a free operation into hStream"), cudaMallocFromPoolAsync (stream
// ordered): in a pool bounded to one block, p is written with 1s; a latch then holds s ahead of a reader of p, the
// free of p, a new allocation q, which must be p's block again (checked: the arrangement), and a write of 2s into
// q. The free and the allocation return while the latch is closed; once it opens the reader saw only 1s (the
// reuse did not overtake it), and q reads back 2s.
TEST_F(MemoryPools, SameStreamReuseWaitsForTheEarlierReaders) {
  const sc::claim mpool02("MPOOL-02");
  SC_REQUIRE(sc::requirement::async_launches);
  // Mutation (arrangement): the write into q goes into another stream, which nothing holds, and finishes while the
  // latch is closed. (It writes q before its allocation completed in stream order, which the documentation leaves
  // undefined; the block is p's, allocated and mapped, so it is the write the reader must not see.)
  const bool elsewhere = mpool02.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = sc::mem_pool::create(device(), block_bytes());
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream other = make(stream_flags::non_blocking, "other");
  std::uint32_t* p = filled_block(pool, s);
  sc::families::ones_reader reader;
  void* q = nullptr;
  {
    sc::latch g;
    hold(g, s);
    sc::held_window w(g);
    reader.read(s, p, block_words());
    const sc::return_observation reused = sc::call_while_held(
        [&] {
          cudaError_t code = cudaFreeAsync(p, s.get());
          if (code == cudaSuccess) code = cudaMallocFromPoolAsync(&q, block_bytes(), pool.get(), s.get());
          const sc::stream& writer = elsewhere ? other : s;
          if (code == cudaSuccess)
            code = sc::kernels::launch_fill(writer.get(), static_cast<std::uint32_t*>(q), block_words(), 2);
          if (code == cudaSuccess && elsewhere) code = cudaStreamSynchronize(other.get());
          return code;
        },
        g);
    EXPECT_CUDA_EQ(cudaSuccess, reused.code);
    EXPECT_TRUE(reused.returned) << "the free and the new allocation waited for the held stream";
  }
  drain();
  const std::uint32_t mismatches = reader.count();
  sc::observe("reader_mismatches", static_cast<long long>(mismatches));
  ASSERT_EQ(static_cast<void*>(p), q)
      << "the pool bounded to one block gave the new allocation other memory: no reuse to test";
  EXPECT_EQ(0u, mismatches) << "the new allocation was written before the freed block's reader ran";
  EXPECT_EQ(0u, mismatches_after(static_cast<const std::uint32_t*>(q), block_words(), 2, s)) << "q does not read back";
  sc::families::expect_freed_in(s, {&q});
}

// MPOOL-03 · RT cudaMallocFromPoolAsync ("Stream query, stream synchronize, and CUDA events can be used to
// guarantee that the allocation operation completes before work submitted in a separate stream runs"): the
// allocation is made to wait in its stream. In a pool bounded to one block, p (filled with 1s) has a reader in s
// behind a latch, then its free, then the allocation q, which must be p's block again (same-stream reuse, checked:
// the arrangement), then an event e. Stream t waits on e, writes 2s into q and drops a mark. While the latch is
// closed the mark is absent; once it opens, the reader of p saw only 1s (t's use of q did not come before the
// allocation completed, which is after the reader), and q reads back as t wrote it.
TEST_F(MemoryPools, AnotherStreamUsesTheReusedBlockAfterAnEvent) {
  const sc::claim mpool03("MPOOL-03");
  SC_REQUIRE(sc::requirement::async_launches);
  // Mutation (arrangement): t does not wait on e. Its write then goes to q before q's allocation completed: to p's
  // memory while p is still allocated (its free waits behind the latch), so it is mapped and the reader sees it.
  const bool no_wait = mpool03.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = sc::mem_pool::create(device(), block_bytes());
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  void* p = filled_block(pool, s);  // null once its free is enqueued
  const void* const block = p;
  void* q = nullptr;
  const sc::families::unfreed_guard left(s, {&p, &q});
  sc::families::ones_reader reader;
  sc::marks m;
  {
    sc::families::free_behind_a_latch freed(*this, s, p, reader, block_words());
    ASSERT_CUDA_EQ(cudaSuccess, cudaMallocFromPoolAsync(&q, block_bytes(), pool.get(), s.get()));
    ASSERT_EQ(block, q) << "the pool bounded to one block gave the new allocation other memory: no reuse to test";
    SC_CHECK_CUDA(cudaEventRecord(e.get(), s.get()));
    if (!no_wait) SC_CHECK_CUDA(cudaStreamWaitEvent(t.get(), e.get(), 0));
    SC_CHECK_CUDA(sc::kernels::launch_fill(t.get(), static_cast<std::uint32_t*>(q), block_words(), 2));
    drop(m, t, 1);
    EXPECT_TRUE(freed.window().absent(sc::probe::mark(m, 1)))
        << "t used the block before the event after its allocation";
  }
  drain();
  sc::observe("reader_mismatches", static_cast<long long>(reader.count()));
  EXPECT_EQ(0u, reader.count()) << "t wrote the reused block before its allocation completed (the freed block's "
                                   "reader, ahead of the allocation in s, saw t's values)";
  EXPECT_EQ(0u, mismatches_after(static_cast<const std::uint32_t*>(q), block_words(), 2, t)) << "q does not read back";
  sc::families::expect_freed_in(t, {&q});
}

}  // namespace
