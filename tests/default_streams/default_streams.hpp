// The DefaultStreams fixture: streams that the timeline knows by name, and gate/mark helpers that label
// what they enqueue, so every test's observation file shows the order it proved.
#pragma once

#include <string>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/gate.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/stream.hpp"

namespace sc::families {

class DefaultStreams : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // The default entries prove orderings with independent hardware queues.
    SC_REQUIRE(requirement::own_connection_count);
    // Special handles first: learning their CUPTI ids may need a probe launch, which must not meet a gate.
    recorder().track(legacy_);
    recorder().track(per_thread_);
  }

  // make, hold, drop and drain come from GpuTest; public so that a test file's free functions can share
  // an arrangement between tests.
 public:
  using GpuTest::recorder;
  int device_index() const noexcept { return device(); }

  const stream legacy_ = stream::legacy();
  const stream per_thread_ = stream::per_thread();
};

}  // namespace sc::families

// Concurrency rows need concurrentKernels (catalog preconditions).
#define SC_REQUIRE_CONCURRENT_KERNELS()                                                           \
  do {                                                                                            \
    if (properties().concurrentKernels == 0) GTEST_SKIP() << "cudaDevAttrConcurrentKernels == 0"; \
  } while (false)
