// DFLT-06..09's launches without a stream (declared in launches.hpp). This file is built three ways (plan:
// README.md): legacy, with -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 and with nvcc --default-stream=per-thread.
// It is a .cu file because launch syntax is its subject: `<<<1, 1>>>` without a stream, and stream 0 in a
// runtime call, mean the legacy stream or the calling thread's default stream depending on this file's build.
#include "launches.hpp"
#include "sc/kernels/device.cuh"

namespace {

__global__ void latch_here(sc::kernels::latch_word* latch, std::uint64_t watchdog_ns, bool banner) {
  sc::kernels::device::latch_wait(latch, watchdog_ns, banner);
}
__global__ void mark_here(std::uint32_t* counter, sc::kernels::mark_board* board, unsigned id) {
  sc::kernels::device::mark_land(counter, board, id);
}

}  // namespace

namespace sc::families::stream_zero {

bool per_thread() {
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
  return true;
#else
  return false;
#endif
}

cudaError_t load() {
  cudaFuncAttributes attributes{};
  const cudaError_t e = cudaFuncGetAttributes(&attributes, latch_here);
  return e != cudaSuccess ? e : cudaFuncGetAttributes(&attributes, mark_here);
}

cudaError_t launch_latch(kernels::latch_word* latch, std::uint64_t watchdog_ns, bool banner) {
  latch_here<<<1, 1>>>(latch, watchdog_ns, banner);
  return cudaGetLastError();
}

cudaError_t launch_mark(std::uint32_t* counter, kernels::mark_board* board, unsigned id) {
  mark_here<<<1, 1>>>(counter, board, id);
  return cudaGetLastError();
}

cudaError_t get_ids(ids& out) {
  cudaError_t e = cudaStreamGetId(0, &out.zero);
  if (e == cudaSuccess) e = cudaStreamGetId(cudaStreamLegacy, &out.legacy);
  if (e == cudaSuccess) e = cudaStreamGetId(cudaStreamPerThread, &out.per_thread);
  return e;
}

}  // namespace sc::families::stream_zero
