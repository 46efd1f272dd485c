#include "green_contexts.hpp"

#include <stdexcept>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/environment.hpp"

namespace sc::families {

void GreenContexts::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFailure()) return;
  // Under MPS a partition may get more SMs than it was given (the driver's overview); a MIG instance's SMs are
  // the instance's, to be judged against a baseline of its own.
  SC_REQUIRE(requirement::separate_contexts);
  const device_sharing sharing = probe_device_sharing(device(), properties().name);
  if (sharing.mig) GTEST_SKIP() << "a MIG instance (" << sharing.mig_evidence << "): its SMs are not the device's";
  std::string missing;
  api_ = green_contexts(missing);
  if (api_ == nullptr) GTEST_SKIP() << "the driver has no green contexts (" << missing << " not found)";
  SC_CHECK_CU(api_->cuDeviceGet(&dev_, device()));
}

CUdevResource GreenContexts::device_sms() const {
  CUdevResource all{};
  SC_CHECK_CU(api_->cuDeviceGetDevResource(dev_, &all, CU_DEV_RESOURCE_TYPE_SM));
  return all;
}

sm_split GreenContexts::split(const CUdevResource& input, unsigned min_count, unsigned flags, bool dry) const {
  sm_split out;
  out.groups = input.sm.smCount;
  out.group.resize(out.groups);
  out.code = api_->cuDevSmResourceSplitByCount(dry ? nullptr : out.group.data(), &out.groups, &input,
                                               dry ? nullptr : &out.remaining, flags, min_count);
  out.group.resize(out.code == CUDA_SUCCESS && !dry ? out.groups : 0);
  return out;
}

sm_split GreenContexts::smallest_split() const {
  const CUdevResource all = device_sms();
  const sm_split s = split(all, all.sm.minSmPartitionSize, 0, false);
  SC_CHECK_CU(s.code);
  if (s.group.empty()) throw std::runtime_error("cuDevSmResourceSplitByCount made no group");
  return s;
}

CUdevResource GreenContexts::smallest_group() const { return smallest_split().group.front(); }

std::set<unsigned> distinct_sms(const mapped<kernels::block_record>& records, unsigned blocks) {
  std::set<unsigned> sms;
  for (unsigned b = 0; b < blocks; ++b) {
    sms.insert(records.host()[b].sm_begin);
    sms.insert(records.host()[b].sm_end);
  }
  return sms;
}

stream GreenContexts::stream_of(green_context& g, bool in_primary) {
  if (!in_primary) return stream::view(g.new_stream(), "green");
  primary_.emplace(make(stream_flags::non_blocking, "primary"));
  return stream::view(primary_->get(), "primary");
}

green_context::green_context(const green_context_api& g, CUdevice dev, const CUdevResource& group) : g_(g) {
  CUdevResourceDesc desc{};
  CUdevResource copy = group;
  SC_CHECK_CU(g_.cuDevResourceGenerateDesc(&desc, &copy, 1));
  SC_CHECK_CU(g_.cuGreenCtxCreate(&green_, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
}

green_context::~green_context() {
  for (CUstream s : streams_) note_teardown(driver().cuStreamDestroy(s), "cuStreamDestroy (green)");
  note_teardown(g_.cuGreenCtxDestroy(green_), "cuGreenCtxDestroy");
}

CUresult green_context::make_stream(unsigned flags, int priority, CUstream* made) {
  *made = nullptr;
  const CUresult code = g_.cuGreenCtxStreamCreate(made, green_, flags, priority);
  if (code == CUDA_SUCCESS) streams_.push_back(*made);
  return code;
}

CUstream green_context::new_stream() {
  CUstream made = nullptr;
  SC_CHECK_CU(make_stream(CU_STREAM_NON_BLOCKING, 0, &made));
  return made;
}

cudaError_t green_context::make_stream_while_current(CUstream* made, unsigned flags) {
  *made = nullptr;
  cudaError_t code = cudaSuccess;
  {
    const current_green_context in(*this);
    code = cudaStreamCreateWithFlags(made, flags);
  }
  if (code == cudaSuccess) streams_.push_back(*made);
  return code;
}

current_green_context::current_green_context(const green_context& g) : api_(g.api()) {
  CUcontext converted = nullptr;
  SC_CHECK_CU(api_.cuCtxFromGreenCtx(&converted, g.get()));
  SC_CHECK_CU(api_.cuCtxPushCurrent(converted));
}

current_green_context::~current_green_context() {
  CUcontext popped = nullptr;
  note_teardown(api_.cuCtxPopCurrent(&popped), "cuCtxPopCurrent (green)");
}

}  // namespace sc::families
