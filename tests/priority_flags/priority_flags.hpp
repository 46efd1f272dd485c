// The PriorityFlags fixture: the device's priority range, read once per test, and the skip rule.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/stream.hpp"

namespace sc::families {

// One property of a stream as the runtime and as the driver API report it.
template <class T>
struct both_apis {
  T runtime;
  T driver;
};

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

  // Streams made by the plain creation calls, named after the call: cudaStreamCreateWithFlags and
  // cuStreamCreate with `flags`.
  stream runtime_stream_with_flags(unsigned flags) const;
  stream driver_stream_with_flags(unsigned flags) const;

  // One property of a stream as the runtime and as the driver API report it; each call is expected to
  // succeed (a failed call leaves the sentinel, which no stream reports). The driver's device is an ordinal
  // (the primary context's device).
  both_apis<int> priority_of(cudaStream_t s) const;
  both_apis<unsigned> flags_of(cudaStream_t s) const;
  both_apis<unsigned long long> id_of(cudaStream_t s) const;
  both_apis<int> device_of(cudaStream_t s) const;
};

inline stream PriorityFlags::runtime_stream_with_flags(unsigned flags) const {
  cudaStream_t raw = nullptr;
  SC_CHECK_CUDA(cudaStreamCreateWithFlags(&raw, flags));
  return stream::adopt(raw, "cudaStreamCreateWithFlags(" + std::to_string(flags) + ")");
}

inline stream PriorityFlags::driver_stream_with_flags(unsigned flags) const {
  CUstream raw = nullptr;
  SC_CHECK_CU(cu().cuStreamCreate(&raw, flags));
  return stream::adopt(raw, "cuStreamCreate(" + std::to_string(flags) + ")");
}

inline both_apis<int> PriorityFlags::priority_of(cudaStream_t s) const {
  both_apis<int> seen{-99, -99};
  EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetPriority(s, &seen.runtime));
  EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuStreamGetPriority(s, &seen.driver));
  return seen;
}

inline both_apis<unsigned> PriorityFlags::flags_of(cudaStream_t s) const {
  both_apis<unsigned> seen{99, 99};
  EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetFlags(s, &seen.runtime));
  EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuStreamGetFlags(s, &seen.driver));
  return seen;
}

inline both_apis<unsigned long long> PriorityFlags::id_of(cudaStream_t s) const {
  both_apis<unsigned long long> seen{0, 0};
  EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetId(s, &seen.runtime));
  EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuStreamGetId(s, &seen.driver));
  return seen;
}

inline both_apis<int> PriorityFlags::device_of(cudaStream_t s) const {
  int runtime = -1;
  CUdevice driver = -1;
  EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetDevice(s, &runtime));
  EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuStreamGetDevice(s, &driver));
  return {runtime, static_cast<int>(driver)};
}

}  // namespace sc::families
