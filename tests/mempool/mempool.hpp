// The MemoryPools fixture: the stream-ordered allocator (MPOOL-nn). Every test uses pools of its own
// (sc::mem_pool), never the device's default pool, so no test's frees or reuse policy reach another's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/latch.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/pool.hpp"
#include "sc/fixtures/predicates.hpp"

namespace sc::families {

// cudaFreeAsync(p, s); p becomes null once the free is enqueued, so that an unfreed_guard no longer frees it.
cudaError_t free_in(void*& p, const stream& s);

// Frees in `s`, when it goes out of scope, each of `blocks` still non-null, and waits for `s`: a check that ends a
// test early must leave no allocation outstanding (its pool could not give the memory back, and in fast mode the
// rest of the family shares the process). Declare it after the pool and the stream, before any latch.
class unfreed_guard {
 public:
  unfreed_guard(const stream& s, std::initializer_list<void**> blocks) : s_(s.get()), blocks_(blocks) {}
  ~unfreed_guard();
  unfreed_guard(const unfreed_guard&) = delete;
  unfreed_guard& operator=(const unfreed_guard&) = delete;

 private:
  cudaStream_t s_;
  std::vector<void**> blocks_;
};

// A reader of a block that filled_block filled with 1s: enqueued in a stream, it counts the words that are not 1,
// so a later writer of the same memory that overtook it shows in count().
class ones_reader {
 public:
  // Zeroes the count through the legacy stream and waits for it: make the reader before any latch closes.
  ones_reader();
  // Enqueues the reader of `words` words at `block` in `s`.
  void read(const stream& s, const std::uint32_t* block, std::uint32_t words);
  // The words the reader saw that were not 1; ask once the reader ran (the device drained).
  std::uint32_t count() const;

 private:
  device_buffer<std::uint32_t> seen_;
};

// An allocation of `bytes` from `pool` in `s` (into `out`) and, when it succeeded, a fill of it with `value` in `s`:
// the allocation's error, or else the fill's code; `allocated`, where given, gets the allocation's code. A failed
// allocation's error is taken from this thread's last error (made on call_while_held's helper thread, it would
// stay there).
cudaError_t allocate_and_fill(const mem_pool& pool, const stream& s, std::size_t bytes, std::uint32_t value,
                              void*& out);
cudaError_t allocate_and_fill(const mem_pool& pool, const stream& s, std::size_t bytes, std::uint32_t value, void*& out,
                              cudaError_t& allocated);

// Frees in `s` each of `blocks` still non-null (free_in: it becomes null), then waits for `s` within the work
// deadline; a call that fails is a (non-fatal) failure of the test.
void expect_freed_in(const stream& s, std::initializer_list<void**> blocks);

// A latch holding `s`, and behind it in `s` a reader of the block `held` points to (when a reader is given) and the
// free of that block (free_in: `held` becomes null). So the freed block's last reader is still to run, and its free
// still pending, while the latch is closed. Built in place (the latch is pinned: a queued kernel polls its word);
// destroyed, it opens the latch. Declare it after the pool, the streams and the blocks' guard (rule 13).
class free_behind_a_latch {
 public:
  free_behind_a_latch(GpuTest& t, const stream& s, void*& held);
  free_behind_a_latch(GpuTest& t, const stream& s, void*& held, ones_reader& reader, std::uint32_t words);
  free_behind_a_latch(const free_behind_a_latch&) = delete;
  free_behind_a_latch& operator=(const free_behind_a_latch&) = delete;

  sc::latch& latch() noexcept { return latch_; }
  // What may not happen while the latch is closed (held_window::absent), and its early release.
  held_window& window() noexcept { return window_; }

 private:
  sc::latch latch_;
  held_window window_;
};

class MemoryPools : public GpuTest {
 protected:
  // Skips, with the reason, where the device has no memory pools (cudaDevAttrMemoryPoolsSupported is 0).
  void SetUp() override;

 public:
  // Reason for 2 MiB: a size the driver allocates without rounding (the usage counters of MPOOL-12 read it back
  // exactly on an H100), for tests that need some allocation and no particular pool layout.
  static constexpr std::size_t kBlockBytes = std::size_t{2} << 20;
  static constexpr std::uint32_t kBlockWords = kBlockBytes / sizeof(std::uint32_t);
  // The pool's reservation unit, measured in SetUp: what a fresh pool reserves for one kBlockBytes allocation
  // (32 MiB on an H100, driver 580). A pool's maxSize below it did not bound the pool to one allocation there,
  // so a one-block pool is bounded to this, and its one block is an allocation of this size.
  std::size_t block_bytes() const noexcept { return block_bytes_; }
  std::uint32_t block_words() const noexcept {
    return static_cast<std::uint32_t>(block_bytes_ / sizeof(std::uint32_t));
  }
  // A pool of the test's device that keeps what it reserved: its release threshold at the maximum, so only a trim
  // gives memory back.
  mem_pool keeping_pool() const;
  // A pool bounded to one block (block_bytes()) with the given reuse policies and its release threshold at the maximum
  // (a completed free keeps its memory in the pool instead of going back to the system at the next synchronize, so the
  // one block is what a later allocation must reuse or fail for).
  mem_pool one_block_pool(bool follow_event_dependencies, bool allow_opportunistic,
                          bool allow_internal_dependencies) const;
  // The one block (block_bytes()) of `pool` allocated in `s` and filled with 1s, finished.
  std::uint32_t* filled_block(const mem_pool& pool, const stream& s) const;
  // How many words of data[0..n) differ from `expected`, counted in `s` and read after `s` finished.
  std::uint32_t mismatches_after(const std::uint32_t* data, std::uint32_t n, std::uint32_t expected, const stream& s);

 private:
  std::size_t block_bytes_ = kBlockBytes;
};

}  // namespace sc::families
