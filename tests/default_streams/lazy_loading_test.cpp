// DFLT-20: lazy loading (CUDA_MODULE_LOADING=LAZY, the default) against a running latch. The subject is the
// first launch of a kernel nobody has loaded yet: first_launch.cu's, never preloaded.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "default_streams.hpp"
#include "launches.hpp"

namespace {

using sc::stream_flags;
using DefaultStreams = sc::families::DefaultStreams;

// DFLT-20 · old guide "Lazy Loading: Possible issues" (observed): with lazy loading the first launch of a
// kernel "might require context synchronization", so it may wait for a kernel spinning in another stream.
// Measured in the default entry (lazy) and in default_streams.eager.* (CUDA_MODULE_LOADING=EAGER).
TEST_F(DefaultStreams, FirstLaunchOfAnUnloadedKernelWhileALatchRuns) {
  const sc::claim dflt20("DFLT-20");
  SC_REQUIRE(sc::requirement::async_launches);
  const char* loading = std::getenv("CUDA_MODULE_LOADING");
  const std::string mode = loading == nullptr ? "default" : loading;
  // Mutation (arrangement), per entry: under lazy loading the kernel is loaded before the latch closes
  // (the launch then has nothing to load); with eager loading the call also synchronizes the held
  // stream (it then must wait).
  const bool mutated = dflt20.mutated(sc::mutation_kind::arrangement);
  const bool eager = mode == "EAGER";
  if (mutated && !eager) SC_CHECK_CUDA(sc::families::first_launch::load());
  const sc::stream s1 = make(stream_flags::non_blocking, "s1");
  const sc::stream s2 = make(stream_flags::non_blocking, "s2");
  sc::latch g;
  hold(g, s1);
  ASSERT_TRUE(g.wait_started());
  const sc::return_observation seen = sc::call_while_held(
      [&] {
        const auto label = recorder().label("first launch");
        const cudaError_t launched = sc::families::first_launch::launch(s2.get());
        return launched == cudaSuccess && mutated && eager ? cudaStreamSynchronize(s1.get()) : launched;
      },
      g);
  drain();
  sc::observe("module_loading", mode);
  EXPECT_CUDA_EQ(cudaSuccess, seen.code);
  EXPECT_TRUE(dflt20.observed_row(mode + ".returned_while_held", seen.returned));
}

}  // namespace
