// The GreenContexts fixture: the driver's green-context entry points (CUDA 12.4+ drivers), the device's SM
// resource, and splits of it. A test of this family skips, with the reason, where the driver has no green
// contexts or where the SMs a partition gets are not the driver's to give (MPS, MIG).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/kernels/record.hpp"

namespace sc::families {

// One cuDevSmResourceSplitByCount call: the groups it made, what remained, and its return code.
struct sm_split {
  CUresult code = CUDA_SUCCESS;
  unsigned groups = 0;
  std::vector<CUdevResource> group;
  CUdevResource remaining{};
};

// The distinct SMs the first `blocks` records began or ended on.
std::set<unsigned> distinct_sms(const mapped<kernels::block_record>& records, unsigned blocks);

// A green context made from one group of a split (with CU_GREEN_CTX_DEFAULT_STREAM, which the 13.0 driver
// requires), and the streams made in it, destroyed before it.
class green_context {
 public:
  green_context(const green_context_api& g, CUdevice dev, const CUdevResource& group);
  ~green_context();
  green_context(const green_context&) = delete;
  green_context& operator=(const green_context&) = delete;
  CUgreenCtx get() const noexcept { return green_; }
  const green_context_api& api() const noexcept { return g_; }
  // cuGreenCtxStreamCreate with `flags` and `priority`: its code; a stream it made is kept, and destroyed with
  // the context.
  CUresult make_stream(unsigned flags, int priority, CUstream* made);
  // cudaStreamCreateWithFlags(`flags`) while the green context, converted by cuCtxFromGreenCtx, is current to
  // this thread (the runtime then makes the stream in it); kept and destroyed like the others.
  cudaError_t make_stream_while_current(CUstream* made, unsigned flags = cudaStreamNonBlocking);
  // A non-blocking stream of priority 0 (make_stream), or an exception naming the code.
  CUstream new_stream();

 private:
  const green_context_api& g_;
  CUgreenCtx green_ = nullptr;
  std::vector<CUstream> streams_;
};

// While it lives, the green context (converted by cuCtxFromGreenCtx) is current to this thread: the runtime
// then makes streams and events in it. cuCtxPushCurrent on construction, cuCtxPopCurrent on destruction.
class current_green_context {
 public:
  explicit current_green_context(const green_context& g);
  ~current_green_context();
  current_green_context(const current_green_context&) = delete;
  current_green_context& operator=(const current_green_context&) = delete;

 private:
  const green_context_api& api_;
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
  // The device's SMs split into groups of the minimum partition size (the split must succeed).
  sm_split smallest_split() const;
  // Its first group.
  CUdevResource smallest_group() const;
  CUdevice dev() const noexcept { return dev_; }
  // A new stream of `g`, or, when `in_primary` (an arrangement mutation), a stream of the primary context made
  // for the test; a view either way, its owner living as long as the test.
  stream stream_of(green_context& g, bool in_primary);

 private:
  std::optional<stream> primary_;
  const green_context_api* api_ = nullptr;
  CUdevice dev_ = 0;
};

}  // namespace sc::families
