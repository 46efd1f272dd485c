// The GreenContexts fixture: the driver's green-context entry points (CUDA 12.4+ drivers), the device's SM
// resource, and splits of it; and PartitionSched, the block-scheduling harness confined to one partition
// (GCTX-06). A test of this family skips, with the reason, where the driver has no green contexts or where the
// SMs a partition gets are not the driver's to give (MPS, MIG).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/sched.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/kernels/record.hpp"

namespace sc::families {

// The grid that shows where a partition's work runs (GCTX-02, GCTX-08). Reasons: eight blocks per SM of the whole
// device, so that a grid the partition did not confine would reach far beyond it; 20 us a block, long against
// dispatch, short for the whole grid (a few milliseconds).
inline constexpr unsigned kSpreadBlocksPerDeviceSm = 8;
inline constexpr unsigned kSpreadThreads = 128;
inline constexpr std::uint64_t kSpreadSpinNs = 20'000;
// How long a mark beside held work has to land (GCTX-04, GCTX-07). Reason: a mark on a free SM lands within a
// millisecond of its launch; 100 ms is a hundred times that, and a row that stays absent pays it once.
inline constexpr std::chrono::milliseconds kBesideWindow{100};

// One cuDevSmResourceSplitByCount call: the groups it made, what remained, and its return code.
struct sm_split {
  CUresult code = CUDA_SUCCESS;
  unsigned groups = 0;
  std::vector<CUdevResource> group;
  CUdevResource remaining{};
};

// The distinct SMs the first `blocks` records began or ended on.
std::set<unsigned> distinct_sms(const mapped<kernels::block_record>& records, unsigned blocks);

// What a test needs before its first green context: the driver's entry points and the device's handle, or
// (api null) why green contexts cannot be judged here: under MPS a partition may get more SMs than it was given
// (the driver's overview); a MIG instance's SMs are the instance's; the driver may lack the entry points.
struct green_context_access {
  const green_context_api* api = nullptr;
  CUdevice dev = 0;
  std::string unusable;
};
green_context_access open_green_contexts(int device, const std::string& device_name);
// The device's SM resource (cuDeviceGetDevResource).
CUdevResource device_sm_resource(const green_context_api& g, CUdevice dev);
// Splits `input` into groups of at least `min_count` SMs, as many as fit (nbGroups asked: the SM count), under
// `flags`; a dry run (result NULL) when `dry`.
sm_split split_sms(const green_context_api& g, const CUdevResource& input, unsigned min_count, unsigned flags,
                   bool dry);

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
  // device_sm_resource and split_sms for this test's device.
  CUdevResource device_sms() const;
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

// The block-scheduling harness (sc::SchedTest) confined to one partition (GCTX-06). SetUp makes a green
// context on the first group of a split into groups of the minimum partition size; the arrangements' streams are
// that green context's streams, their waves count its SMs (cover_sms), and the block chart marks the SMs its
// grids ran on (the 13.0 driver does not name a partition's SMs; the records do).
class PartitionSched : public SchedTest {
 protected:
  // Skips as GreenContexts does, and where the device's SMs make no partition.
  void SetUp() override;
  // Destroys the green context and its streams before the fixture's teardown counts release errors.
  void TearDown() override;
  stream arrangement_stream(const std::string& name, int priority) override;
  std::vector<chart_partition> chart_partitions(const std::vector<residency_input>& grids) const override;

 public:
  // Whether the fill's and the pending grids' blocks, all together, began and ended on no more distinct SMs than
  // the partition has: a grid that left the partition would make its order say nothing about the partition.
  ::testing::AssertionResult on_the_partition(const fill_arrangement& built) const;

 private:
  std::optional<green_context> green_;
};

}  // namespace sc::families
