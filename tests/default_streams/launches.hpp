// The family's CUDA translation units, whose meaning is their build: stream_zero.cu (what stream 0 and a launch
// without a stream mean; built three ways, CMakeLists.txt) and first_launch.cu (a kernel no one loads before
// DFLT-20 launches it). Their tests are host code (the .cpp files) and call them through these declarations.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "sc/kernels/record.hpp"

namespace sc::families {

namespace stream_zero {
// Whether stream_zero.cu was built with the per-thread default stream (the macro or nvcc's flag).
bool per_thread();
// Loads its two kernels (so that no latch meets a module load).
cudaError_t load();
// Its kernels, launched <<<1, 1>>> without a stream: to stream 0 as its build names it.
cudaError_t launch_latch(kernels::latch_word* latch, std::uint64_t watchdog_ns, bool banner);
cudaError_t launch_mark(std::uint32_t* counter, kernels::mark_board* board, unsigned id);
// The ids of stream 0 as stream_zero.cu names it, of the legacy stream and of the calling thread's
// per-thread stream.
struct ids {
  unsigned long long zero = 0;
  unsigned long long legacy = 0;
  unsigned long long per_thread = 0;
};
cudaError_t get_ids(ids& out);
}  // namespace stream_zero

namespace first_launch {
// Loads the kernel without launching it.
cudaError_t load();
// Launches it (one thread, no arguments of note) into `stream`.
cudaError_t launch(cudaStream_t stream);
}  // namespace first_launch

}  // namespace sc::families
