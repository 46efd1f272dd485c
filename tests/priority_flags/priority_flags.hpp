// The PriorityFlags fixture: the device's priority range, read once per test, and the skip rule.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/gpu_test.hpp"

namespace sc::families {

class PriorityFlags : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    SC_CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least_, &greatest_));
  }
  // Skip rule of the family: no priorities, no priority rows.
  bool priorities_missing() const { return least_ == greatest_; }
  static constexpr const char* kNoPriorities = "no stream priorities (least == greatest)";

  int least_ = 0;     // numerically largest: lowest priority
  int greatest_ = 0;  // numerically smallest: highest priority

  // The build mode of this translation unit.
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
  static constexpr default_stream_mode kMode = default_stream_mode::per_thread;
  static constexpr const char* kModeName = "per_thread_build";
#else
  static constexpr default_stream_mode kMode = default_stream_mode::legacy;
  static constexpr const char* kModeName = "legacy_build";
#endif
  const driver_api& cu() const { return driver(kMode); }
};

}  // namespace sc::families
