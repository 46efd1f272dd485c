// PRIO-07: priority and flags of the special handles (0, legacy, per-thread), through both APIs. Built
// twice: in the legacy build and with CUDA_API_PER_THREAD_DEFAULT_STREAM (tests prefixed ptds.).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "priority_flags.hpp"
#include "sc/fixtures/stream.hpp"

namespace {

using PriorityFlags = sc::families::PriorityFlags;

struct special {
  const char* name;
  cudaStream_t handle;
};

// PRIO-07 · not stated in the docs (observed): the special handles report priority 0, and the legacy
// stream flags 0, in both default-stream build modes.
TEST_F(PriorityFlags, SpecialHandlesReportTheirPriorityAndFlags) {
  const sc::claim prio07("PRIO-07");
  // Mutation (arrangement): the "legacy" row asks a created stream of the highest priority instead.
  const sc::stream impostor = sc::stream::create(sc::stream_flags::non_blocking, greatest_, "impostor");
  const bool swapped = prio07.mutated(sc::mutation_kind::arrangement);
  const std::vector<special> handles = {
      {"null", nullptr}, {"legacy", swapped ? impostor.get() : cudaStreamLegacy}, {"per_thread", cudaStreamPerThread}};
  sc::observe("build_mode", kModeName);
  for (const special& h : handles) {
    SCOPED_TRACE(h.name);
    const auto priority = priority_of(h.handle);
    const auto flags = flags_of(h.handle);
    EXPECT_EQ(priority.runtime, priority.driver) << h.name << ": runtime and driver disagree";
    EXPECT_EQ(flags.runtime, flags.driver) << h.name << ": runtime and driver disagree";
    const std::string key = std::string(kModeName) + "." + h.name;
    sc::observe(key + ".priority", priority.runtime);
    sc::observe(key + ".flags", static_cast<int>(flags.runtime));
    EXPECT_TRUE(prio07.matches_baseline(key + ".priority", priority.runtime));
    EXPECT_TRUE(prio07.matches_baseline(key + ".flags", flags.runtime));
  }
}

}  // namespace
