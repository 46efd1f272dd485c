// MPOOL-09, MPOOL-10, MPOOL-12: what a pool keeps and says it keeps. The release threshold and trimming decide
// how much memory stays reserved; the usage attributes count what the application holds. Sizes are whole 2 MiB
// blocks (MemoryPools::kBlockBytes), so no rounding stands between an allocation and the counters.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mempool.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::MemoryPools;

constexpr long long as_count(std::uint64_t bytes) { return static_cast<long long>(bytes); }

// A pool's reserved bytes before and after a synchronize (reserved_around).
struct reserved_bytes {
  std::uint64_t before;
  std::uint64_t after;
};

// A fresh pool of `device` with release threshold `threshold`: two blocks allocated and freed in s (e recorded after
// the frees), s seen idle by cudaStreamQuery (the synchronize below is the first the pool hears of), then
// `synchronize`; the pool's reserved bytes just before and just after it.
reserved_bytes reserved_around(int device, const sc::stream& s, const sc::event& e, std::uint64_t threshold,
                               const std::function<cudaError_t()>& synchronize) {
  const sc::mem_pool pool = sc::mem_pool::create(device);
  pool.set_bytes(cudaMemPoolAttrReleaseThreshold, threshold);
  void* x = nullptr;
  void* y = nullptr;
  const sc::families::unfreed_guard left(s, {&x, &y});
  SC_CHECK_CUDA(cudaMallocFromPoolAsync(&x, MemoryPools::kBlockBytes, pool.get(), s.get()));
  SC_CHECK_CUDA(cudaMallocFromPoolAsync(&y, MemoryPools::kBlockBytes, pool.get(), s.get()));
  SC_CHECK_CUDA(sc::kernels::launch_fill(s.get(), static_cast<std::uint32_t*>(x), MemoryPools::kBlockWords, 1));
  SC_CHECK_CUDA(sc::families::free_in(x, s));
  SC_CHECK_CUDA(sc::families::free_in(y, s));
  SC_CHECK_CUDA(cudaEventRecord(e.get(), s.get()));
  // Idle, seen without a synchronize: the synchronize below is the first the pool hears of.
  const bool finished =
      sc::wait_until(sc::probe("s idle", [&] { return cudaStreamQuery(s.get()) == cudaSuccess; }), sc::kWorkDeadline);
  if (!finished) throw sc::cuda_error(cudaErrorNotReady, "cudaStreamQuery(s)", __FILE__, __LINE__);
  const std::uint64_t before = pool.bytes(cudaMemPoolAttrReservedMemCurrent);
  SC_CHECK_CUDA(synchronize());
  return {before, pool.bytes(cudaMemPoolAttrReservedMemCurrent)};
}

// The synchronizes MPOOL-09 records besides the freeing stream's, each with its row's name: of `idle`, a stream that
// freed nothing; of `e`, recorded after the frees; of the device.
std::vector<std::pair<const char*, std::function<cudaError_t()>>> other_synchronizes(const sc::stream& idle,
                                                                                     const sc::event& e) {
  return {
      {"unrelated_stream_synchronize", [&idle] { return cudaStreamSynchronize(idle.get()); }},
      {"event_synchronize", [&e] { return cudaEventSynchronize(e.get()); }},
      {"device_synchronize", [] { return cudaDeviceSynchronize(); }},
  };
}

// MPOOL-09 · RT cudaMemPoolSetAttribute (cudaMemPoolAttrReleaseThreshold: "When more than the release threshold
// bytes of memory are held by the memory pool, the allocator will try to release memory back to the OS on the next
// call to stream, event or context synchronize"; the default is 0): two blocks allocated and freed in s, then one
// kind of synchronize; the pool's reserved bytes read after it. Row `released_at_stream_synchronize` (gating):
// with the threshold 0, synchronizing s leaves nothing reserved. Which other synchronizes release (an unrelated idle
// stream, an event recorded after the frees, the device) is recorded, each in a cycle of its own, after s was seen
// idle by cudaStreamQuery.
TEST_F(MemoryPools, ReleaseThresholdDecidesWhatASynchronizeKeeps) {
  const sc::claim mpool09("MPOOL-09");
  const std::uint64_t measured_threshold = mpool09.mutated(sc::mutation_kind::arrangement) ? UINT64_MAX : 0;
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream idle = make(stream_flags::non_blocking, "idle");
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  const reserved_bytes by_stream =
      reserved_around(device(), s, e, measured_threshold, [&] { return cudaStreamSynchronize(s.get()); });
  sc::observe("stream_synchronize.reserved_before", as_count(by_stream.before));
  sc::observe("stream_synchronize.reserved_after", as_count(by_stream.after));
  EXPECT_GE(by_stream.before, 2 * kBlockBytes) << "the two freed blocks were not reserved before the synchronize";
  EXPECT_TRUE(mpool09.matches_baseline("released_at_stream_synchronize", by_stream.after == 0));
  for (const auto& [name, synchronize] : other_synchronizes(idle, e)) {
    const reserved_bytes r = reserved_around(device(), s, e, 0, synchronize);
    sc::observe(std::string(name) + ".reserved_after", as_count(r.after));
    EXPECT_TRUE(mpool09.matches_baseline(std::string("released_at_") + name, r.after == 0));
  }
}

// MPOOL-09 · the same attribute, the other way: with the threshold at its maximum, the two freed blocks stay reserved
// across the freeing stream's synchronize (asserted: what the threshold is for).
TEST_F(MemoryPools, MaximumReleaseThresholdKeepsTheBlocksAtASynchronize) {
  const sc::claim mpool09("MPOOL-09");
  const std::uint64_t threshold = mpool09.mutated(sc::mutation_kind::arrangement) ? 0 : UINT64_MAX;
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  const reserved_bytes kept =
      reserved_around(device(), s, e, threshold, [&] { return cudaStreamSynchronize(s.get()); });
  sc::observe("threshold_max.reserved_after", as_count(kept.after));
  EXPECT_GE(kept.after, 2 * kBlockBytes) << "a pool whose threshold is the maximum released memory at a synchronize";
}

// MPOOL-10 · RT cudaMemPoolTrimTo ("Releases memory back to the OS until the pool contains fewer than
// minBytesToKeep reserved bytes, or there is no more memory that the allocator can safely release. The allocator
// cannot release OS allocations that back outstanding asynchronous allocations"): in a pool that keeps every byte
// (threshold maximum), a block freed in s behind a latch is still outstanding: trimming to 0 while the latch is
// closed leaves it reserved. Once the latch opened and s was synchronized (cudaStreamSynchronize), trimming to 0
// leaves nothing reserved. A trim in between, with s idle as cudaStreamQuery saw it but not synchronized, is
// recorded.
TEST_F(MemoryPools, TrimKeepsMemoryBehindAPendingFree) {
  const sc::claim mpool10("MPOOL-10");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool late = mpool10.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = keeping_pool();
  const sc::stream s = make(stream_flags::non_blocking, "s");
  void* p = nullptr;
  const sc::families::unfreed_guard left(s, {&p});
  ASSERT_CUDA_EQ(cudaSuccess, cudaMallocFromPoolAsync(&p, kBlockBytes, pool.get(), s.get()));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  std::uint64_t while_pending = 0;
  {
    sc::families::free_behind_a_latch freed(*this, s, p);
    if (late) {
      freed.window().release();
      SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
      SC_CHECK_CUDA(cudaStreamSynchronize(s.get()));
    }
    ASSERT_CUDA_EQ(cudaSuccess, cudaMemPoolTrimTo(pool.get(), 0));
    while_pending = pool.bytes(cudaMemPoolAttrReservedMemCurrent);
  }
  // The latch is open and s idle as cudaStreamQuery sees it; no synchronize has told the pool yet.
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  ASSERT_CUDA_EQ(cudaSuccess, cudaMemPoolTrimTo(pool.get(), 0));
  const std::uint64_t after_query = pool.bytes(cudaMemPoolAttrReservedMemCurrent);
  SC_CHECK_CUDA(cudaStreamSynchronize(s.get()));
  ASSERT_CUDA_EQ(cudaSuccess, cudaMemPoolTrimTo(pool.get(), 0));
  const std::uint64_t after = pool.bytes(cudaMemPoolAttrReservedMemCurrent);
  sc::observe("reserved_after_trim_while_pending", as_count(while_pending));
  sc::observe("reserved_after_trim_once_idle_by_query", as_count(after_query));
  sc::observe("reserved_after_trim_once_synchronized", as_count(after));
  EXPECT_GE(while_pending, kBlockBytes) << "trimming released the memory of a free still pending behind a latch";
  EXPECT_EQ(0u, after) << "trimming to 0 kept memory once the free had completed and the host had seen it";
}

// The bytes of `pool` in use by the application, and the bytes it reserved.
std::uint64_t used(const sc::mem_pool& pool) { return pool.bytes(cudaMemPoolAttrUsedMemCurrent); }
std::uint64_t reserved(const sc::mem_pool& pool) { return pool.bytes(cudaMemPoolAttrReservedMemCurrent); }

// Blocks x and y (kBlockBytes each) allocated from `pool` in s, and s finished (use under ASSERT_NO_FATAL_FAILURE:
// a refused allocation fails the test).
void allocate_two_blocks(const sc::mem_pool& pool, const sc::stream& s, void*& x, void*& y) {
  ASSERT_CUDA_EQ(cudaSuccess, cudaMallocFromPoolAsync(&x, MemoryPools::kBlockBytes, pool.get(), s.get()));
  ASSERT_CUDA_EQ(cudaSuccess, cudaMallocFromPoolAsync(&y, MemoryPools::kBlockBytes, pool.get(), s.get()));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
}

// MPOOL-12 · RT cudaMemPoolGetAttribute (cudaMemPoolAttrUsedMemCurrent: "Amount of memory from the pool that is
// currently in use by the application"; cudaMemPoolAttrUsedMemHigh: its high watermark "since the last time it was
// reset"; cudaMemPoolAttrReservedMemCurrent likewise for the backing memory): a fresh pool holds nothing; two blocks
// allocated: 4 MiB used, reserved bytes not below them; one freed: 2 MiB used, 4 MiB the high mark.
TEST_F(MemoryPools, UsageCountersAgreeWithTheAllocations) {
  const sc::claim mpool12("MPOOL-12");
  const bool no_free = mpool12.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = keeping_pool();
  const sc::stream s = make(stream_flags::non_blocking, "s");
  EXPECT_EQ(0u, used(pool)) << "a fresh pool";
  EXPECT_EQ(0u, reserved(pool)) << "a fresh pool";
  void* x = nullptr;
  void* y = nullptr;
  const sc::families::unfreed_guard left(s, {&x, &y});
  ASSERT_NO_FATAL_FAILURE(allocate_two_blocks(pool, s, x, y));
  sc::observe("two_blocks.used", as_count(used(pool)));
  sc::observe("two_blocks.reserved", as_count(reserved(pool)));
  EXPECT_EQ(2 * kBlockBytes, used(pool)) << "two blocks allocated";
  EXPECT_GE(reserved(pool), used(pool));
  if (!no_free) SC_CHECK_CUDA(sc::families::free_in(x, s));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  sc::observe("one_freed.used", as_count(used(pool)));
  sc::observe("one_freed.used_high", as_count(pool.bytes(cudaMemPoolAttrUsedMemHigh)));
  EXPECT_EQ(kBlockBytes, used(pool)) << "one of two blocks freed";
  EXPECT_EQ(2 * kBlockBytes, pool.bytes(cudaMemPoolAttrUsedMemHigh)) << "the high mark after one of two was freed";
  sc::families::expect_freed_in(s, {&x, &y});
}

// MPOOL-12 · RT cudaMemPoolSetAttribute (cudaMemPoolAttrUsedMemHigh "can only be reset to zero"): in a pool whose
// high mark is 4 MiB (two blocks allocated, one freed), a reset to 1 is refused with cudaErrorInvalidValue.
TEST_F(MemoryPools, UsedHighMarkResetsOnlyToZero) {
  const sc::claim mpool12("MPOOL-12");
  cuuint64_t reset_to = mpool12.mutated(sc::mutation_kind::arrangement) ? 0 : 1;
  const sc::mem_pool pool = keeping_pool();
  const sc::stream s = make(stream_flags::non_blocking, "s");
  void* x = nullptr;
  void* y = nullptr;
  const sc::families::unfreed_guard left(s, {&x, &y});
  ASSERT_NO_FATAL_FAILURE(allocate_two_blocks(pool, s, x, y));
  SC_CHECK_CUDA(sc::families::free_in(x, s));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  EXPECT_CUDA_EQ(cudaErrorInvalidValue, cudaMemPoolSetAttribute(pool.get(), cudaMemPoolAttrUsedMemHigh, &reset_to))
      << "a high mark reset to a value other than zero";
  sc::clear_last_error();
  sc::families::expect_freed_in(s, {&x, &y});
}

// MPOOL-12 · the same attributes (cudaMemPoolAttrUsedMemHigh and cudaMemPoolAttrReservedMemHigh: high watermarks
// "since the last time it was reset"): two blocks allocated and one freed, both high marks reset to zero, then a
// new block: the used high mark is the 4 MiB then in use, not the earlier peak; the reserved high mark is not below
// the reserved bytes, nor those below the used bytes; with every block freed nothing is used.
TEST_F(MemoryPools, UsedHighMarkAfterAResetIsWhatIsThenInUse) {
  const sc::claim mpool12("MPOOL-12");
  const bool no_free = mpool12.mutated(sc::mutation_kind::arrangement);
  const sc::mem_pool pool = keeping_pool();
  const sc::stream s = make(stream_flags::non_blocking, "s");
  void* x = nullptr;
  void* y = nullptr;
  void* z = nullptr;
  const sc::families::unfreed_guard left(s, {&x, &y, &z});
  ASSERT_NO_FATAL_FAILURE(allocate_two_blocks(pool, s, x, y));
  if (!no_free) SC_CHECK_CUDA(sc::families::free_in(x, s));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  pool.set_bytes(cudaMemPoolAttrUsedMemHigh, 0);
  pool.set_bytes(cudaMemPoolAttrReservedMemHigh, 0);
  sc::observe("after_reset.used_high", as_count(pool.bytes(cudaMemPoolAttrUsedMemHigh)));
  sc::observe("after_reset.reserved_high", as_count(pool.bytes(cudaMemPoolAttrReservedMemHigh)));
  EXPECT_LE(pool.bytes(cudaMemPoolAttrUsedMemHigh), used(pool)) << "the high mark just reset";
  ASSERT_CUDA_EQ(cudaSuccess, cudaMallocFromPoolAsync(&z, kBlockBytes, pool.get(), s.get()));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  sc::observe("third_block.used", as_count(used(pool)));
  sc::observe("third_block.used_high", as_count(pool.bytes(cudaMemPoolAttrUsedMemHigh)));
  EXPECT_EQ(2 * kBlockBytes, used(pool)) << "a block allocated after one of two was freed";
  EXPECT_EQ(2 * kBlockBytes, pool.bytes(cudaMemPoolAttrUsedMemHigh)) << "the high mark since the reset";
  EXPECT_GE(pool.bytes(cudaMemPoolAttrReservedMemHigh), reserved(pool));
  EXPECT_GE(reserved(pool), used(pool));
  sc::families::expect_freed_in(s, {&x, &y, &z});
  EXPECT_EQ(0u, used(pool)) << "every block freed";
}

}  // namespace
