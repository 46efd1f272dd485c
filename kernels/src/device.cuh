// Device-side helpers private to kernels/: timer, SM id, system-scope atomics on mapped memory.
#pragma once

#include <cstdint>

#include <cuda/atomic>

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

}  // namespace sc::kernels::device
