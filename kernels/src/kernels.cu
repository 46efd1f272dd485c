#include "sc/kernels/device.cuh"
#include "sc/kernels/launch.hpp"

namespace sc::kernels {
namespace {

using device::now_ns;
using device::sys_u32;
using device::sys_u64;

__global__ void latch_kernel(latch_word* latch, std::uint64_t watchdog_ns, bool banner) {
  device::latch_wait(latch, watchdog_ns, banner);
}

__global__ void mark_kernel(std::uint32_t* counter, mark_board* board, unsigned id) {
  device::mark_land(counter, board, id);
}

// The body of every timed spin: every warp resident (start barrier), spin `spin_ns` of %globaltimer time
// from t0, resynchronize, and thread 0 writes the block's record. t0 and sm0 are the block's shared
// stamps, set by thread 0 before the barrier. ready: see spin_plan.
__device__ void timed_spin(block_record* records, const std::uint64_t& t0, const std::uint32_t& sm0,
                           std::uint64_t spin_ns, const std::uint32_t* ready = nullptr, std::uint32_t ready_count = 0) {
  __shared__ std::uint32_t seen;
  if (threadIdx.x == 0) seen = 0u;
  __syncthreads();  // every warp of the block is resident before the spin is counted
  std::uint64_t last = t0;
  std::uint64_t widest = 0;
  for (std::uint64_t now = t0; now - t0 < spin_ns;) {
    now = now_ns();
    if (now - last > widest) widest = now - last;
    last = now;
  }
  // The ready words are read while every warp still holds its place (the block has not begun to free its
  // slot): a word per thread, read at once, whatever the block's size.
  const std::uint32_t words = ready == nullptr ? 0u : (ready_count < kReadyWords ? ready_count : kReadyWords);
  for (std::uint32_t i = threadIdx.x; i < words; i += blockDim.x)
    if (*static_cast<const volatile std::uint32_t*>(ready + i) != 0u) atomicOr(&seen, 1u << i);
  __syncthreads();
  if (threadIdx.x == 0) {
    records[blockIdx.x] = block_record{t0, now_ns(), widest, sm0, device::sm_id(), device::sm_count_bound(), seen};
  }
}

__global__ void spin_kernel(block_record* records, std::uint64_t spin_ns) {
  __shared__ std::uint64_t t0;
  __shared__ std::uint32_t sm0;
  if (threadIdx.x == 0) {
    t0 = now_ns();
    sm0 = device::sm_id();
  }
  timed_spin(records, t0, sm0, spin_ns);
}

// The scheduling grid: a timed spin whose length depends on the block's arrival order on its SM, and
// which says "started" in mapped memory (see spin_plan).
__global__ void sched_spin_kernel(block_record* records, spin_plan plan) {
  __shared__ std::uint64_t t0;
  __shared__ std::uint32_t sm0;
  __shared__ std::uint32_t arrival;
  if (threadIdx.x == 0) {
    t0 = now_ns();
    sm0 = device::sm_id();
    arrival = plan.arrivals == nullptr || sm0 >= plan.arrival_slots ? 0u : atomicAdd(&plan.arrivals[sm0], 1u);
    if (plan.started != nullptr) sys_u32(plan.started[blockIdx.x]).store(1u, cuda::memory_order_relaxed);
  }
  __syncthreads();  // arrival is read by every thread below
  timed_spin(records, t0, sm0, plan.spin_ns + arrival * plan.stagger_ns, plan.ready, plan.ready_count);
}

__global__ void gap_log_kernel(gap_log* logs, std::uint64_t spin_ns, std::uint64_t threshold_ns) {
  if (threadIdx.x == 0) {
    gap_log& log = logs[blockIdx.x];
    const std::uint32_t sm0 = device::sm_id();
    const std::uint64_t t0 = now_ns();
    std::uint32_t gaps = 0;
    std::uint64_t last = t0;
    for (std::uint64_t now = t0; now - t0 < spin_ns;) {
      now = now_ns();
      if (now - last > threshold_ns) {
        if (gaps < kGapSlots) {
          log.at_ns[gaps] = last;
          log.len_ns[gaps] = now - last;
        }
        ++gaps;
      }
      last = now;
    }
    log.t0_ns = t0;
    log.t1_ns = now_ns();
    log.gaps = gaps;
    log.sm_begin = sm0;
    log.sm_end = device::sm_id();
    log.reserved = 0;
  }
  __syncthreads();
}

__global__ void timer_probe_kernel(timer_probe* out, unsigned reads) {
  const std::uint64_t first = now_ns();
  std::uint64_t last = first;
  std::uint64_t min_step = ~std::uint64_t{0};
  std::uint64_t max_step = 0;
  std::uint32_t steps = 0;
  for (unsigned i = 1; i < reads; ++i) {
    const std::uint64_t now = now_ns();
    const std::uint64_t step = now - last;
    if (step != 0) {
      ++steps;
      if (step < min_step) min_step = step;
      if (step > max_step) max_step = step;
    }
    last = now;
  }
  *out = timer_probe{first, last, steps ? min_step : 0, max_step, reads, steps};
}

__global__ void beacon_kernel(beacon* out, std::uint64_t spin_ns) {
  const std::uint64_t t0 = now_ns();
  sys_u64(out->start_ns).store(t0, cuda::memory_order_relaxed);
  sys_u32(out->started).store(1u, cuda::memory_order_release);
  std::uint64_t now = t0;
  while (now - t0 < spin_ns) {
    now = now_ns();
    sys_u64(out->now_ns).store(now, cuda::memory_order_relaxed);
    __threadfence_system();  // push the stamp out to host memory now, not whenever the write buffer drains
  }
  sys_u64(out->end_ns).store(now, cuda::memory_order_relaxed);
  sys_u32(out->done).store(1u, cuda::memory_order_release);
}

__global__ void empty_kernel() {}
// Never launched: a kernel of empty_kernel's module that no test uses, whose loading state shows whether a
// context loads kernels lazily (DFLT-20 across devices).
__global__ void unused_kernel() {}

// One thread of a block of a grid-wide latch: block 0's is the latch proper (it publishes started/start/end
// like latch_kernel); the others poll the open flag until it is set or the watchdog passes (no banner: block 0
// reports).
__device__ void wait_as_part_of_a_grid_latch(latch_word* latch, std::uint64_t watchdog_ns, bool banner) {
  if (blockIdx.x == 0) {
    device::latch_wait(latch, watchdog_ns, banner);
    return;
  }
  const std::uint64_t since = now_ns();
  while (sys_u32(latch->open).load(cuda::memory_order_acquire) == 0u && now_ns() - since <= watchdog_ns)
    __nanosleep(1000);
}

// A latch that occupies thread slots: every thread of every block stays resident until the host opens
// the latch. Block 0's thread 0 is the latch proper (it publishes started/start/end like latch_kernel);
// thread 0 of every block marks its own slot of `resident` (a plain release store: no read-modify-write on
// host memory, which is not atomic where the device has no native host atomics, and which compute-sanitizer
// memcheck reported as an invalid system-scoped atomic on an H100), then polls the open flag (with the
// watchdog, no banner: block 0 reports); the other threads wait at the barrier, holding their slots.
__global__ void latch_grid_kernel(latch_word* latch, std::uint64_t watchdog_ns, bool banner, std::uint32_t* resident) {
  if (threadIdx.x == 0) {
    sys_u32(resident[blockIdx.x]).store(1u, cuda::memory_order_release);
    wait_as_part_of_a_grid_latch(latch, watchdog_ns, banner);
  }
  __syncthreads();
}

// Programmatic dependent launch: the two PTX instructions exist from sm_90 on.
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_primary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__global__ void pdl_primary_kernel(latch_word* latch, std::uint64_t watchdog_ns, bool banner, bool trigger,
                                   std::uint32_t* out, std::uint32_t value) {
  if (threadIdx.x != 0) return;
  if (trigger) launch_dependents();
  wait_as_part_of_a_grid_latch(latch, watchdog_ns, banner);
  out[blockIdx.x] = value;
}

__global__ void pdl_secondary_kernel(pdl_board* board, const std::uint32_t* out, std::uint32_t n, std::uint32_t value,
                                     bool synchronize) {
  sys_u64(board->early_ns).store(now_ns(), cuda::memory_order_relaxed);
  sys_u32(board->early).store(1u, cuda::memory_order_release);
  if (synchronize) wait_for_primary();
  std::uint32_t wrong = 0;
  for (std::uint32_t i = n; i-- > 0;) wrong += out[i] != value ? 1u : 0u;  // the last written first
  sys_u32(board->mismatches).store(wrong, cuda::memory_order_relaxed);
  sys_u64(board->late_ns).store(now_ns(), cuda::memory_order_relaxed);
  sys_u32(board->late).store(1u, cuda::memory_order_release);
}

// Ends in a device fault (PTX trap): the context is unusable afterwards.
__global__ void trap_kernel() { __trap(); }

__global__ void fill_kernel(std::uint32_t* out, std::uint32_t n, std::uint32_t value) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = value;
}

__global__ void fill_late_kernel(std::uint32_t* out, std::uint32_t n, std::uint32_t value, std::uint64_t spin_ns) {
  const std::uint64_t t0 = now_ns();
  while (now_ns() - t0 < spin_ns) {
  }
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = value;
}

__global__ void count_mismatches_kernel(const std::uint32_t* data, std::uint32_t n, std::uint32_t expected,
                                        std::uint32_t* mismatches) {
  std::uint32_t wrong = 0;
  const std::uint32_t stride = gridDim.x * blockDim.x;
  for (std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
    const std::uint32_t i = n - 1 - k;  // reverse order
    wrong += data[i] != expected;
  }
  if (wrong != 0) atomicAdd(mismatches, wrong);
}

// One step of a chain across streams (EVT-02): the word must hold `expected` (else one more mismatch), and
// then holds expected + 1, so the steps' order is encoded in the value.
__global__ void advance_kernel(std::uint32_t* word, std::uint32_t expected, std::uint32_t* mismatches) {
  volatile std::uint32_t* w = word;
  if (*w != expected) atomicAdd(mismatches, 1u);
  *w = expected + 1;
}

}  // namespace

cudaError_t launch_fill_late(cudaStream_t stream, std::uint32_t* out, std::uint32_t n, std::uint32_t value,
                             std::uint64_t spin_ns) {
  fill_late_kernel<<<4, 256, 0, stream>>>(out, n, value, spin_ns);
  return cudaGetLastError();
}

cudaError_t launch_count_mismatches(cudaStream_t stream, const std::uint32_t* data, std::uint32_t n,
                                    std::uint32_t expected, std::uint32_t* mismatches) {
  count_mismatches_kernel<<<4, 256, 0, stream>>>(data, n, expected, mismatches);
  return cudaGetLastError();
}

cudaError_t set_empty_kernel_carveout(int percent) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(empty_kernel),
                              cudaFuncAttributePreferredSharedMemoryCarveout, percent);
}

cudaError_t launch_latch(cudaStream_t stream, latch_word* latch, std::uint64_t watchdog_ns, bool banner) {
  latch_kernel<<<1, 1, 0, stream>>>(latch, watchdog_ns, banner);
  return cudaGetLastError();
}

cudaError_t launch_latch_with_event(cudaStream_t stream, latch_word* latch, std::uint64_t watchdog_ns, bool banner,
                                    cudaEvent_t event, bool programmatic) {
  cudaLaunchAttribute attribute{};
  if (programmatic) {
    attribute.id = cudaLaunchAttributeProgrammaticEvent;
    attribute.val.programmaticEvent.event = event;
    attribute.val.programmaticEvent.flags = 0;
    attribute.val.programmaticEvent.triggerAtBlockStart = 1;
  } else {
    attribute.id = cudaLaunchAttributeLaunchCompletionEvent;
    attribute.val.launchCompletionEvent.event = event;
    attribute.val.launchCompletionEvent.flags = 0;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(1);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, latch_kernel, latch, watchdog_ns, banner);
}

cudaError_t launch_mark(cudaStream_t stream, std::uint32_t* counter, mark_board* board, unsigned id) {
  if (id >= kMarkSlots) return cudaErrorInvalidValue;
  mark_kernel<<<1, 1, 0, stream>>>(counter, board, id);
  return cudaGetLastError();
}

cudaError_t mark_function(cudaFunction_t* function) {
  return cudaGetFuncBySymbol(function, reinterpret_cast<const void*>(&mark_kernel));
}

cudaError_t spin_kernel_handle(cudaKernel_t* kernel) {
  return cudaGetKernel(kernel, reinterpret_cast<const void*>(&spin_kernel));
}

cudaError_t launch_spin(cudaStream_t stream, block_record* records, unsigned blocks, unsigned threads,
                        std::uint64_t spin_ns) {
  spin_kernel<<<blocks, threads, 0, stream>>>(records, spin_ns);
  return cudaGetLastError();
}

namespace {
// A launch configuration of `blocks` x `threads` in clusters of `cluster` blocks; `attribute` is filled
// and pointed to, so it must outlive the configuration.
cudaLaunchConfig_t cluster_config(unsigned blocks, unsigned threads, unsigned cluster, cudaStream_t stream,
                                  cudaLaunchAttribute* attribute) {
  attribute->id = cudaLaunchAttributeClusterDimension;
  attribute->val.clusterDim.x = cluster;
  attribute->val.clusterDim.y = 1;
  attribute->val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  return config;
}
}  // namespace

cudaError_t launch_sched_spin(cudaStream_t stream, block_record* records, unsigned blocks, unsigned threads,
                              const spin_plan& plan, unsigned cluster) {
  if (cluster <= 1) {
    sched_spin_kernel<<<blocks, threads, 0, stream>>>(records, plan);
    return cudaGetLastError();
  }
  if (blocks % cluster != 0) return cudaErrorInvalidValue;
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t config = cluster_config(blocks, threads, cluster, stream, &attribute);
  return cudaLaunchKernelEx(&config, sched_spin_kernel, records, plan);
}

cudaError_t launch_sched_spin_at_priority(cudaStream_t stream, block_record* records, unsigned blocks, unsigned threads,
                                          const spin_plan& plan, int priority, unsigned cluster) {
  if (cluster > 1 && blocks % cluster != 0) return cudaErrorInvalidValue;
  // attributes[0]: the cluster dimension (used only with cluster > 1); the priority comes after it.
  cudaLaunchAttribute attributes[2]{};
  cudaLaunchConfig_t config = cluster_config(blocks, threads, cluster > 1 ? cluster : 1, stream, &attributes[0]);
  cudaLaunchAttribute& wanted = cluster > 1 ? attributes[1] : attributes[0];
  wanted = cudaLaunchAttribute{};
  wanted.id = cudaLaunchAttributePriority;
  wanted.val.priority = priority;
  config.attrs = attributes;
  config.numAttrs = cluster > 1 ? 2 : 1;
  return cudaLaunchKernelEx(&config, sched_spin_kernel, records, plan);
}

cudaError_t sched_spin_occupancy(unsigned threads, int* blocks_per_sm) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, sched_spin_kernel, static_cast<int>(threads), 0);
}

cudaError_t sched_spin_cluster_occupancy(unsigned threads, unsigned cluster, int* clusters) {
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t config = cluster_config(cluster, threads, cluster, nullptr, &attribute);
  return cudaOccupancyMaxActiveClusters(clusters, sched_spin_kernel, &config);
}

cudaError_t launch_gap_log(cudaStream_t stream, gap_log* logs, unsigned blocks, unsigned threads, std::uint64_t spin_ns,
                           std::uint64_t threshold_ns) {
  gap_log_kernel<<<blocks, threads, 0, stream>>>(logs, spin_ns, threshold_ns);
  return cudaGetLastError();
}

cudaError_t launch_timer_probe(cudaStream_t stream, timer_probe* out, unsigned reads) {
  timer_probe_kernel<<<1, 1, 0, stream>>>(out, reads);
  return cudaGetLastError();
}

cudaError_t launch_beacon(cudaStream_t stream, beacon* out, std::uint64_t spin_ns) {
  beacon_kernel<<<1, 1, 0, stream>>>(out, spin_ns);
  return cudaGetLastError();
}

cudaError_t launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t empty_and_unused_kernels(cudaKernel_t* empty, cudaKernel_t* unused) {
  if (const cudaError_t code = cudaGetKernel(empty, empty_kernel); code != cudaSuccess) return code;
  return cudaGetKernel(unused, unused_kernel);
}

cudaError_t launch_latch_grid(cudaStream_t stream, latch_word* latch, std::uint64_t watchdog_ns, bool banner,
                              unsigned blocks, unsigned threads, std::uint32_t* resident) {
  latch_grid_kernel<<<blocks, threads, 0, stream>>>(latch, watchdog_ns, banner, resident);
  return cudaGetLastError();
}

cudaError_t launch_latch_grid_cooperative(cudaStream_t stream, latch_word* latch, std::uint64_t watchdog_ns,
                                          bool banner, unsigned blocks, unsigned threads, std::uint32_t* resident) {
  void* args[] = {&latch, &watchdog_ns, &banner, &resident};
  return cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(latch_grid_kernel), dim3(blocks), dim3(threads),
                                     args, 0, stream);
}

cudaError_t latch_grid_occupancy(unsigned threads, int* blocks_per_sm) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, latch_grid_kernel, static_cast<int>(threads), 0);
}

cudaError_t launch_pdl_primary(cudaStream_t stream, latch_word* latch, std::uint64_t watchdog_ns, bool banner,
                               unsigned blocks, bool trigger, std::uint32_t* out, std::uint32_t value) {
  pdl_primary_kernel<<<blocks, 1, 0, stream>>>(latch, watchdog_ns, banner, trigger, out, value);
  return cudaGetLastError();
}

cudaError_t launch_pdl_secondary(cudaStream_t stream, pdl_board* board, const std::uint32_t* out, std::uint32_t n,
                                 std::uint32_t value, bool programmatic, bool synchronize) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = programmatic ? 1 : 0;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(1);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, pdl_secondary_kernel, board, out, n, value, synchronize);
}

cudaError_t launch_trap(cudaStream_t stream) {
  trap_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t launch_advance(cudaStream_t stream, std::uint32_t* word, std::uint32_t expected,
                           std::uint32_t* mismatches) {
  advance_kernel<<<1, 1, 0, stream>>>(word, expected, mismatches);
  return cudaGetLastError();
}

cudaError_t launch_fill(cudaStream_t stream, std::uint32_t* out, std::uint32_t n, std::uint32_t value) {
  const unsigned threads = 256;
  const unsigned blocks = n == 0 ? 1u : (n + threads - 1) / threads > 1024u ? 1024u : (n + threads - 1) / threads;
  fill_kernel<<<blocks, threads, 0, stream>>>(out, n, value);
  return cudaGetLastError();
}

namespace {
// Every kernel of the suite, for preload(). A new kernel is added here and nowhere else.
const void* const kAllKernels[] = {reinterpret_cast<const void*>(latch_kernel),
                                   reinterpret_cast<const void*>(mark_kernel),
                                   reinterpret_cast<const void*>(spin_kernel),
                                   reinterpret_cast<const void*>(timer_probe_kernel),
                                   reinterpret_cast<const void*>(beacon_kernel),
                                   reinterpret_cast<const void*>(empty_kernel),
                                   reinterpret_cast<const void*>(trap_kernel),
                                   reinterpret_cast<const void*>(latch_grid_kernel),
                                   reinterpret_cast<const void*>(fill_kernel),
                                   reinterpret_cast<const void*>(fill_late_kernel),
                                   reinterpret_cast<const void*>(count_mismatches_kernel),
                                   reinterpret_cast<const void*>(sched_spin_kernel),
                                   reinterpret_cast<const void*>(gap_log_kernel),
                                   reinterpret_cast<const void*>(advance_kernel),
                                   reinterpret_cast<const void*>(pdl_primary_kernel),
                                   reinterpret_cast<const void*>(pdl_secondary_kernel)};
}  // namespace

cudaError_t preload() {
  for (const void* kernel : kAllKernels) {
    cudaFuncAttributes attributes{};
    if (const cudaError_t code = cudaFuncGetAttributes(&attributes, kernel); code != cudaSuccess) return code;
  }
  return cudaSuccess;
}

}  // namespace sc::kernels
