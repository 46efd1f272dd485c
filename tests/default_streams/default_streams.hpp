// The DefaultStreams fixture: streams that the timeline knows by name, and latch/mark helpers that label
// what they enqueue, so every test's observation file shows the order it proved.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/latch.hpp"
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
    // Special handles first: learning their CUPTI ids may need a probe launch, which must not meet a latch.
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

// Latches that each hold a stream of their own (a latch is pinned in place, so each lives on the heap). Declare
// the set after the streams and marks it guards: it is then destroyed, and every latch opened, first.
class latch_set {
 public:
  explicit latch_set(unsigned n) {
    for (unsigned i = 0; i < n; ++i) latches_.push_back(std::make_unique<latch>());
  }
  unsigned size() const { return static_cast<unsigned>(latches_.size()); }
  latch& operator[](unsigned i) { return *latches_[i]; }
  const latch& operator[](unsigned i) const { return *latches_[i]; }
  // How many latches are running.
  unsigned started() const {
    unsigned n = 0;
    for (const auto& g : latches_) n += g->started();
    return n;
  }
  bool all_started() const { return started() == size(); }
  // The state of a latch that is not closed (the last one), or "" when every latch is closed.
  std::string not_closed() const {
    std::string state;
    for (const auto& g : latches_)
      if (!closed(g->state())) state = to_string(g->state());
    return state;
  }
  void open_all() {
    for (auto& g : latches_) g->open();
  }

 private:
  std::vector<std::unique_ptr<latch>> latches_;
};

}  // namespace sc::families

// Concurrency rows need concurrentKernels (catalog preconditions).
#define SC_REQUIRE_CONCURRENT_KERNELS()                                                           \
  do {                                                                                            \
    if (properties().concurrentKernels == 0) GTEST_SKIP() << "cudaDevAttrConcurrentKernels == 0"; \
  } while (false)
