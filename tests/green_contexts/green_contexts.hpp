// The GreenContexts fixture: the driver's green-context entry points (CUDA 12.4+ drivers), the device's SM
// resource, and splits of it. A test of this family skips, with the reason, where the driver has no green
// contexts or where the SMs a partition gets are not the driver's to give (MPS, MIG).
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/gpu_test.hpp"

namespace sc::families {

// One cuDevSmResourceSplitByCount call: the groups it made, what remained, and its return code.
struct sm_split {
  CUresult code = CUDA_SUCCESS;
  unsigned groups = 0;
  std::vector<CUdevResource> group;
  CUdevResource remaining{};
};

class GreenContexts : public GpuTest {
 protected:
  void SetUp() override;

 public:
  const green_context_api& api() const { return *api_; }
  // The device's SM resource (cuDeviceGetDevResource).
  CUdevResource device_sms() const;
  // Splits `input` into groups of at least `min_count` SMs, as many as fit (nbGroups asked: the SM count),
  // under `flags`; a dry run (result NULL) when `dry`.
  sm_split split(const CUdevResource& input, unsigned min_count, unsigned flags, bool dry) const;

 private:
  const green_context_api* api_ = nullptr;
  CUdevice dev_ = 0;
};

}  // namespace sc::families
