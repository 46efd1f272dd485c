// Device-side building blocks: timer, SM id, and the bodies of the latch and mark kernels. kernels/
// uses them for its own kernels; a test translation unit whose subject is launch syntax (a launch
// without a stream, built in several default-stream modes) defines its own __global__ wrappers with them.
// Such kernels must be loaded before any latch closes (sc::preload_kernel).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cuda/atomic>

#include "sc/kernels/record.hpp"

namespace sc::kernels::device {

using sys_u32 = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_system>;
using sys_u64 = cuda::atomic_ref<std::uint64_t, cuda::thread_scope_system>;

// %globaltimer: nanoseconds, updated at a GPU-dependent granularity (measured by INST-01).
__device__ __forceinline__ std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ std::uint32_t sm_id() {
  std::uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

__device__ __forceinline__ std::uint32_t sm_count_bound() {
  std::uint32_t n;
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(n));
  return n;
}

// Waits until the host opens the latch or the watchdog fires (see launch_latch).
__device__ inline void latch_wait(latch_word* latch, std::uint64_t watchdog_ns, bool banner) {
  constexpr unsigned kPollNs = 1000;  // __nanosleep between polls of the host flag
  const std::uint64_t since = now_ns();
  sys_u64(latch->start_ns).store(since, cuda::memory_order_relaxed);
  sys_u32(latch->started).store(1u, cuda::memory_order_release);
  // The widest stop of the wait between the end of one poll of the host's flag and the next poll: a wait that
  // lost its SM to another context (sharing.hpp). The poll itself (a read over the bus, slower while copies
  // load it) is left out, so only the SM's own time is measured.
  std::uint64_t polled = now_ns();  // after the two stores above
  std::uint64_t widest = 0;
  for (;;) {
    const std::uint64_t before = now_ns();
    if (before - polled > widest) widest = before - polled;
    if (sys_u32(latch->open).load(cuda::memory_order_acquire) != 0u) break;
    const std::uint64_t now = now_ns();
    polled = now;
    if (now - since > watchdog_ns) {
      sys_u32(latch->timed_out).store(1u, cuda::memory_order_release);
      if (banner)
        printf("STREAMCHECK-WATCHDOG: latch %p was not opened within %llu ns\n", static_cast<void*>(latch),
               static_cast<unsigned long long>(watchdog_ns));
      break;
    }
    __nanosleep(kPollNs);
  }
  const std::uint64_t end = now_ns();
  sys_u32(latch->widest_gap_ns)
      .store(widest > 0xffffffffull ? 0xffffffffu : static_cast<std::uint32_t>(widest), cuda::memory_order_relaxed);
  sys_u64(latch->end_ns).store(end, cuda::memory_order_release);
}

// Takes the next ticket from *counter (device memory) and publishes it in board->ticket[id].
__device__ inline void mark_land(std::uint32_t* counter, mark_board* board, unsigned id) {
  using device_u32 = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>;
  const std::uint32_t ticket = device_u32(*counter).fetch_add(1u, cuda::memory_order_acq_rel) + 1u;
  sys_u64(board->stamp_ns[id]).store(now_ns(), cuda::memory_order_relaxed);
  sys_u32(board->ticket[id]).store(ticket, cuda::memory_order_release);
}

}  // namespace sc::kernels::device
