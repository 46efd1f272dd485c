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

// A green context made from one group of a split (with CU_GREEN_CTX_DEFAULT_STREAM, which the 13.0 driver
// requires), and the streams made in it, destroyed before it.
class green_context {
 public:
  green_context(const green_context_api& g, CUdevice dev, const CUdevResource& group);
  ~green_context();
  green_context(const green_context&) = delete;
  green_context& operator=(const green_context&) = delete;
  CUgreenCtx get() const noexcept { return green_; }
  // cuGreenCtxStreamCreate with `flags` and `priority`: its code; a stream it made is kept, and destroyed with
  // the context.
  CUresult make_stream(unsigned flags, int priority, CUstream* made);

 private:
  const green_context_api& g_;
  CUgreenCtx green_ = nullptr;
  std::vector<CUstream> streams_;
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
  // The first group of the device's smallest split (the minimum partition).
  CUdevResource smallest_group() const;
  CUdevice dev() const noexcept { return dev_; }

 private:
  const green_context_api* api_ = nullptr;
  CUdevice dev_ = 0;
};

}  // namespace sc::families
