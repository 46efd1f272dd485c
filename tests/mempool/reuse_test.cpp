// MPOOL-04…07: which reuse policy lets an allocation in stream b take the block freed in stream a. Every test
// uses a pool bounded to one block (MemoryPools::one_block_pool), so the allocation either reuses the freed
// block or fails: which one it did is the verdict, and the freed block's reader in a (counting the words that
// are not 1) shows whether b's writer overtook it. MPOOL-06 runs its arrangement twice: between two ordinary
// streams (documented), and between the per-thread default streams of two host threads (observed).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "mempool.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/fixtures/thread_team.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::MemoryPools;

// After the latch and drain: b's allocation (`allocated`) reused block p as q; a's reader of p saw only 1s (b's
// writer did not overtake it); q reads back the 2s b wrote. q is freed. `not_reused` says what a failed allocation
// means.
void expect_reused_in_order(MemoryPools& t, cudaError_t allocated, const std::uint32_t* p, void*& q,
                            const sc::families::ones_reader& reader, const sc::stream& b, const char* not_reused) {
  sc::observe("allocation", sc::error_name(allocated));
  sc::observe("same_block", q == p);
  ASSERT_CUDA_EQ(cudaSuccess, allocated) << not_reused;
  EXPECT_EQ(static_cast<const void*>(p), q) << "a pool of one block gave b other memory";
  EXPECT_EQ(0u, reader.count()) << "b wrote the reused block before a's reader of the freed block ran";
  EXPECT_EQ(0u, t.mismatches_after(static_cast<const std::uint32_t*>(q), t.block_words(), 2, b));
  sc::families::expect_freed_in(b, {&q});
}

// MPOOL-04 · RT cudaMemPoolSetAttribute (cudaMemPoolReuseFollowEventDependencies: "Allow cuMemAllocAsync to use
// memory asynchronously freed in another stream as long as a stream ordering dependency of the allocating stream
// on the free action exists"): with only this policy on, a latch holds a ahead of a reader of p, the free of p and
// an event; b waits on the event and allocates. The allocation returns while held with p's block, and b's
// writer, ordered behind the event, does not overtake the reader.
TEST_F(MemoryPools, FreedBlockIsReusedAcrossAnEventEdge) {
  const sc::claim mpool04("MPOOL-04");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool no_edge = mpool04.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = one_block_pool(true, false, false);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  std::uint32_t* p = filled_block(pool, a);
  sc::families::ones_reader reader;
  void* held = p;  // until its free is enqueued
  void* q = nullptr;
  const sc::families::unfreed_guard left_in_a(a, {&held});
  const sc::families::unfreed_guard left_in_b(b, {&q});
  cudaError_t allocated = cudaErrorUnknown;
  {
    sc::families::free_behind_a_latch freed(*this, a, held, reader, block_words());
    SC_CHECK_CUDA(cudaEventRecord(e.get(), a.get()));
    if (!no_edge) SC_CHECK_CUDA(cudaStreamWaitEvent(b.get(), e.get(), 0));
    const sc::return_observation r = sc::call_while_held(
        [&] { return sc::families::allocate_and_fill(pool, b, block_bytes(), 2, q, allocated); }, freed.latch());
    EXPECT_TRUE(r.returned) << "the allocation across the event edge waited for the held stream";
  }
  drain();
  expect_reused_in_order(*this, allocated, p, q, reader, b,
                         "the only block, freed in a before the event b waits on, was not reused");
}

// What an allocation in b made of the one block of a pool, freed in a and complete (reuse_after_completion).
struct completed_free_reuse {
  cudaError_t code;  // the allocation's
  bool same_block;   // it returned the freed block
};

// In a fresh one-block pool with only opportunistic reuse on or every policy off: p, filled with 1s in a, is freed
// there, and a is seen idle by cudaStreamQuery (the free completed; no synchronize told the pool); then b, with no
// dependency on a, allocates. What b got is freed in b before this returns.
completed_free_reuse reuse_after_completion(const MemoryPools& t, const sc::stream& a, const sc::stream& b,
                                            bool opportunistic) {
  const sc::mem_pool pool = t.one_block_pool(false, opportunistic, false);
  std::uint32_t* p = t.filled_block(pool, a);
  SC_CHECK_CUDA(cudaFreeAsync(p, a.get()));
  // Complete, as cudaStreamQuery sees it; never synchronized (after a synchronize of a, its free is reused in b
  // with every policy off: H100, driver 580).
  SC_CHECK_CUDA(sc::synchronize_within(a, sc::kWorkDeadline));
  void* q = nullptr;
  const cudaError_t code = sc::taking_last_error(cudaMallocFromPoolAsync(&q, t.block_bytes(), pool.get(), b.get()));
  const completed_free_reuse out{code, code == cudaSuccess && q == p};
  if (code == cudaSuccess) {
    SC_CHECK_CUDA(cudaFreeAsync(q, b.get()));
    SC_CHECK_CUDA(sc::synchronize_within(b, sc::kWorkDeadline));
  }
  return out;
}

// MPOOL-05 (observed) · RT cudaMemPoolSetAttribute (cudaMemPoolReuseAllowOpportunistic: "Allow reuse of already
// completed frees when there is no dependency between the free and allocation"): with only this policy on, p is
// freed in a, and a is seen idle by cudaStreamQuery (the free completed; no synchronize told the pool); b, with no
// dependency on a, allocates. Row `completed_free_reused`: the allocation succeeded with p's block. The same
// arrangement with the policy off is recorded (`without_the_policy.*`).
TEST_F(MemoryPools, CompletedFreeIsReusedWithoutAnEdge) {
  const sc::claim mpool05("MPOOL-05");
  const bool off = mpool05.mutated(sc::mutation_kind::arrangement);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const completed_free_reuse with = reuse_after_completion(*this, a, b, !off);
  const completed_free_reuse without = reuse_after_completion(*this, a, b, false);
  sc::observe("allocation", sc::error_name(with.code));
  sc::observe("without_the_policy.allocation", sc::error_name(without.code));
  sc::observe("without_the_policy.same_block", without.same_block);
  EXPECT_TRUE(mpool05.matches_baseline("completed_free_reused", with.same_block));
}

// What MPOOL-06's arrangement showed (reuse_behind_a_latch).
struct reuse_seen {
  cudaError_t allocated = cudaErrorUnknown;                             // b's allocation
  bool same_block = false;                                              // it returned the freed block p
  sc::held_result returned{sc::held_outcome::invalid, "not measured"};  // the allocation returned while a was held
  // b's mark, dropped after the allocation (and after its write when it succeeded), absent while a was held.
  sc::held_result later_work_held{sc::held_outcome::invalid, "not asked: the allocation did not return while held"};
  std::uint32_t reader_mismatches = 0;   // words of p that a's reader, ahead of the free, saw not 1
  std::uint32_t written_mismatches = 0;  // words of q that do not read back as the 2s b wrote
};

// What both MPOOL-06 arrangements share: p, the one block of `pool`, filled with 1s in a; a reader of it; b's mark;
// q, b's allocation. Whatever a check that ends the test early leaves allocated is freed in a.
struct block_under_reuse {
  block_under_reuse(MemoryPools& t, const sc::mem_pool& pool, const sc::stream& a)
      : p(t.filled_block(pool, a)), held(p), left(a, {&held, &q}) {}
  // Once the device drained: whether the allocation q got the freed block p, what a's reader of p saw, and whether
  // q reads back as the 2s written into it; then q is freed in a.
  void read_back(MemoryPools& t, reuse_seen& seen, const sc::stream& a) {
    seen.same_block = seen.allocated == cudaSuccess && q == p;
    seen.reader_mismatches = reader.count();
    if (q != nullptr) {
      seen.written_mismatches = t.mismatches_after(static_cast<const std::uint32_t*>(q), t.block_words(), 2, a);
      SC_CHECK_CUDA(sc::families::free_in(q, a));
      SC_CHECK_CUDA(sc::synchronize_within(a, sc::kWorkDeadline));
    }
  }

  std::uint32_t* p;
  sc::families::ones_reader reader;
  sc::marks m;
  void* held;  // p until its free is enqueued
  void* q = nullptr;
  const sc::families::unfreed_guard left;
};

// MPOOL-06's arrangement in `pool` (one block; the test sets its policies): p, filled with 1s in a; a latch holds a
// ahead of a reader of p and the free of p; then, on a helper thread (call_while_held), b allocates q, writes 2s
// into it and drops mark 1, the mark whether or not the allocation succeeded. Whether the mark lands is asked once
// the call returned, the latch still closed. Once the device drained, q is read back and freed in a.
reuse_seen reuse_behind_a_latch(MemoryPools& t, const sc::mem_pool& pool, const sc::stream& a, const sc::stream& b) {
  reuse_seen seen;
  block_under_reuse x(t, pool, a);
  {
    sc::families::free_behind_a_latch freed(t, a, x.held, x.reader, t.block_words());
    sc::while_held_steps steps;
    steps.after_return = [&] { seen.later_work_held = freed.window().absent(sc::probe::mark(x.m, 1)); };
    const sc::return_observation r = sc::call_while_held(
        [&] {
          const cudaError_t code = sc::families::allocate_and_fill(pool, b, t.block_bytes(), 2, x.q, seen.allocated);
          x.m.drop(b, 1);
          return code;
        },
        freed.latch(), sc::kReturnWindow, steps);
    seen.returned = r.returned;
  }
  t.drain();
  x.read_back(t, seen, a);
  return seen;
}

// MPOOL-06's arrangement between the per-thread default streams of two host threads: a is this thread's, b that of
// a thread of its own (sc::thread_team), which allocates q in b, writes 2s into it and drops mark 1 while the latch
// holds a (after the reader of p and the free of p, as in reuse_behind_a_latch). That thread stays until its stream
// has finished, and every wait has a deadline: work that never finishes (a dependency nobody satisfies) fails the
// test and ends its process instead of hanging it (a first version, whose thread ended with its work queued,
// hung on an H100 and an H200). `dev`: the test's device.
reuse_seen reuse_across_per_thread_streams(MemoryPools& t, const sc::mem_pool& pool, int dev) {
  reuse_seen seen;
  const sc::stream a = sc::stream::per_thread();
  block_under_reuse x(t, pool, a);
  // The team's steps: 1 the free is enqueued, 2 the other thread allocated and enqueued its work, 3 the latch is
  // open, 4 the other thread's stream finished or its deadline passed (`theirs` says which).
  cudaError_t theirs = cudaErrorUnknown;
  sc::thread_team team;
  team.start(1, [&](unsigned) {
    const cudaError_t set = cudaSetDevice(dev);
    if (!team.reached(1, sc::kWorkDeadline)) return;
    void* got = nullptr;
    const cudaError_t allocated =
        set != cudaSuccess ? set : cudaMallocFromPoolAsync(&got, t.block_bytes(), pool.get(), cudaStreamPerThread);
    sc::clear_last_error();
    if (allocated == cudaSuccess)
      (void)sc::kernels::launch_fill(cudaStreamPerThread, static_cast<std::uint32_t*>(got), t.block_words(), 2);
    x.m.drop_by(1, [](std::uint32_t* counter, sc::kernels::mark_board* board, unsigned slot) {
      (void)sc::kernels::launch_mark(cudaStreamPerThread, counter, board, slot);  // a failed launch: no mark
      return cudaSuccess;
    });
    team.step_to(2, [&] {
      seen.allocated = allocated;
      x.q = got;
    });
    if (!team.reached(3, sc::kWorkDeadline)) return;
    const cudaError_t finished = sc::synchronize_within(sc::stream::per_thread(), sc::kWorkDeadline);
    team.step_to(4, [&] { theirs = finished; });
  });
  {
    sc::families::free_behind_a_latch freed(t, a, x.held, x.reader, t.block_words());
    team.step_to(1);
    const bool returned = team.reached(2, sc::kReturnWindow);
    seen.returned = sc::held_result(returned ? sc::held_outcome::holds : sc::held_outcome::does_not_hold,
                                    returned ? "the other thread's allocation returned while a was held"
                                             : "the other thread's allocation had not returned while a was held");
    if (returned) seen.later_work_held = freed.window().absent(sc::probe::mark(x.m, 1));
  }
  const bool called = team.reached(2, sc::kWorkDeadline);
  if (called) team.step_to(3);
  const bool finished = called && team.reached(4, 2 * sc::kWorkDeadline);
  const cudaError_t mine = sc::synchronize_within(a, sc::kWorkDeadline);
  if (!finished || theirs != cudaSuccess || mine != cudaSuccess) {
    ADD_FAILURE() << "the work never finished once the latch opened: the other thread's allocation "
                  << (called ? "returned" : "never returned") << ", its per-thread stream "
                  << (finished ? sc::error_name(theirs) : std::string("did not report")) << ", this thread's "
                  << sc::error_name(mine) << " (a dependency the allocator added that nothing satisfies?)";
    sc::end_test_process("the per-thread streams' work did not finish after the latch opened");
  }
  team.end();
  t.drain();
  x.read_back(t, seen, a);
  return seen;
}

// MPOOL-06 · RT cudaMemPoolSetAttribute (cudaMemPoolReuseAllowInternalDependencies: "Allow cuMemAllocAsync to
// insert new stream dependencies in order to establish the stream ordering required to reuse a piece of memory
// released by cuFreeAsync"): with only this policy on, a latch holds a ahead of a reader of p and the free of p;
// b, with no dependency on a, allocates and drops a mark. The allocation returns while held with p's block; the
// mark is absent while the latch is closed (the dependency the allocator added), and b's writer does not overtake
// the reader.
TEST_F(MemoryPools, ReuseAddsAHiddenDependency) {
  const sc::claim mpool06("MPOOL-06", sc::verdict_kind::documented);
  SC_REQUIRE(sc::requirement::async_launches);
  const bool off = mpool06.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = one_block_pool(false, false, !off);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const reuse_seen seen = reuse_behind_a_latch(*this, pool, a, b);
  sc::observe("allocation", sc::error_name(seen.allocated));
  sc::observe("same_block", seen.same_block);
  EXPECT_TRUE(seen.returned) << "the allocation waited for the held stream on the host";
  ASSERT_CUDA_EQ(cudaSuccess, seen.allocated)
      << "the only block, freed behind a latch, was not reused with a dependency";
  EXPECT_TRUE(seen.same_block) << "a pool of one block gave b other memory";
  EXPECT_TRUE(seen.later_work_held) << "b's work after the reusing allocation ran while a was held";
  EXPECT_EQ(0u, seen.reader_mismatches) << "b wrote the reused block before a's reader of the freed block ran";
  EXPECT_EQ(0u, seen.written_mismatches) << "the reused block does not read back as b wrote it";
}

// MPOOL-06 (observed) · the same arrangement between the per-thread default streams of two host threads: a is this
// thread's per-thread stream, b another thread's. Nothing documents how the allocator treats per-thread streams
// here (MPOOL-08: for reuse they are two streams), so what it does is compared with the baseline: row
// `per_thread_streams.allocation` ("the freed block", "other memory", or the allocation's error) and row
// `per_thread_streams.later_work_held` (the other thread's mark absent while this thread's stream was held: the
// dependency the allocator added). A reuse that let the writer overtake the freed block's reader fails at once.
TEST_F(MemoryPools, ReuseAddsAHiddenDependencyBetweenPerThreadStreams) {
  const sc::claim mpool06("MPOOL-06", sc::verdict_kind::observed);
  SC_REQUIRE(sc::requirement::async_launches);
  const bool off = mpool06.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = one_block_pool(false, false, !off);
  const reuse_seen seen = reuse_across_per_thread_streams(*this, pool, device());
  const std::string allocation = seen.allocated != cudaSuccess ? sc::error_name(seen.allocated)
                                 : seen.same_block             ? "the freed block"
                                                               : "other memory";
  sc::observe("per_thread_streams.returned_while_held", seen.returned.outcome() == sc::held_outcome::holds);
  sc::observe("per_thread_streams.reader_mismatches", static_cast<long long>(seen.reader_mismatches));
  EXPECT_TRUE(mpool06.matches_baseline("per_thread_streams.allocation", allocation));
  EXPECT_TRUE(mpool06.observed_row("per_thread_streams.later_work_held", seen.later_work_held));
  EXPECT_EQ(0u, seen.reader_mismatches) << "the other thread wrote the reused block before this thread's reader of "
                                           "the freed block ran";
  EXPECT_EQ(0u, seen.written_mismatches) << "the reused block does not read back as the other thread wrote it";
}

// MPOOL-07 · RT cudaMemPoolSetAttribute (the three reuse policies), cudaMemPoolProps::maxSize: with every reuse
// policy off, b's allocation while a's free of the only block is pending behind a latch fails with
// cudaErrorMemoryAllocation, returning while held. Row `allocates_after_the_free_completed` (observed): once the
// latch opened and the device was synchronized (drain), the same allocation in b succeeds (the release threshold
// is left at its default, 0, so the synchronize may return the freed memory to the system and the pool maps it
// again).
TEST_F(MemoryPools, NoReusePolicyFailsWhileTheFreeIsPending) {
  const sc::claim mpool07("MPOOL-07", sc::verdict_kind::documented);
  SC_REQUIRE(sc::requirement::async_launches);
  const bool allow = mpool07.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = sc::mem_pool::create(device(), block_bytes());
  pool.set_reuse(false, false, allow);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  void* held = filled_block(pool, a);  // until its free is enqueued
  void* q = nullptr;
  const sc::families::unfreed_guard left_in_a(a, {&held});
  const sc::families::unfreed_guard left_in_b(b, {&q});
  cudaError_t pending = cudaErrorUnknown;
  {
    sc::families::free_behind_a_latch freed(*this, a, held);
    const sc::return_observation r = sc::call_while_held(
        [&] {
          pending = cudaMallocFromPoolAsync(&q, block_bytes(), pool.get(), b.get());
          sc::clear_last_error();  // on this (the helper) thread, where a failed call left it
          return cudaSuccess;
        },
        freed.latch());
    EXPECT_TRUE(r.returned) << "the allocation waited for the held stream on the host";
  }
  drain();
  sc::observe("while_pending.allocation", sc::error_name(pending));
  sc::families::expect_freed_in(b, {&q});
  EXPECT_CUDA_EQ(cudaErrorMemoryAllocation, pending)
      << "an allocation with every reuse policy off, in a pool whose only block's free was pending";
  SC_CHECK_CUDA(sc::synchronize_within(a, sc::kWorkDeadline));
  const cudaError_t after = sc::taking_last_error(cudaMallocFromPoolAsync(&q, block_bytes(), pool.get(), b.get()));
  sc::observe("after_completion.allocation", sc::error_name(after));
  EXPECT_TRUE(mpool07.matches_baseline("allocates_after_the_free_completed", after == cudaSuccess));
  sc::families::expect_freed_in(b, {&q});
}

}  // namespace
