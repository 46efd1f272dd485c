// DFLT-20's kernel (declared in launches.hpp): a translation unit, and so a module, of its own, which nothing
// loads until DFLT-20 launches it (or its mutation loads it first).
#include "launches.hpp"

namespace {

__global__ void first_launched_while_held(unsigned* flag) {
  if (flag != nullptr) *flag = 1u;
}

}  // namespace

namespace sc::families::first_launch {

cudaError_t load() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, first_launched_while_held);
}

cudaError_t launch(cudaStream_t stream) {
  first_launched_while_held<<<1, 1, 0, stream>>>(nullptr);
  return cudaGetLastError();
}

}  // namespace sc::families::first_launch
