#include "green_contexts.hpp"

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/environment.hpp"

namespace sc::families {

void GreenContexts::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFailure()) return;
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

}  // namespace sc::families
