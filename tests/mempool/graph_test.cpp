// MPOOL-11: an allocation and a free captured in a stream become a graph's memory nodes; a graph whose
// allocation outlives it cannot be launched again before that allocation is freed, unless it was instantiated
// to free it on launch.
#include "sc/fixtures/graph.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "mempool.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::MemoryPools;

// A graph captured in a stream of its own: an allocation of a block (kBlockBytes) on `device`, a fill of it with
// `value`, and, when `free_it`, its free; p is the allocation's address, fixed for the graph's life. When it goes,
// after the graph, the device's graph memory goes back to the system (cudaDeviceGraphMemTrim), however the test
// ended.
class allocating_graph {
 public:
  allocating_graph(MemoryPools& t, int device, std::uint32_t value, bool free_it) : trim_{device} {
    const sc::stream recording = t.make(stream_flags::non_blocking, "recording");
    sc::capture c(recording, cudaStreamCaptureModeThreadLocal);
    SC_CHECK_CUDA(cudaMallocAsync(&p, MemoryPools::kBlockBytes, recording.get()));
    SC_CHECK_CUDA(
        sc::kernels::launch_fill(recording.get(), static_cast<std::uint32_t*>(p), MemoryPools::kBlockWords, value));
    if (free_it) SC_CHECK_CUDA(cudaFreeAsync(p, recording.get()));
    SC_CHECK_CUDA(c.end(g));
  }
  allocating_graph(const allocating_graph&) = delete;
  allocating_graph& operator=(const allocating_graph&) = delete;

 private:
  struct trim_graph_memory {
    int device;
    ~trim_graph_memory() { sc::note_teardown(cudaDeviceGraphMemTrim(device), "cudaDeviceGraphMemTrim"); }
  } trim_;

 public:
  sc::graph g;
  void* p = nullptr;
};

// MPOOL-11 · RT cudaStreamBeginCapture/cudaMallocAsync (stream-ordered allocations in a capture are graph memory
// nodes): an allocation, a fill and a free captured make one memory-allocation node, one kernel node and one
// memory-free node, and the graph launches twice (what it allocates is freed by each launch).
TEST_F(MemoryPools, CapturedAllocationsAreGraphMemoryNodes) {
  const sc::claim mpool11("MPOOL-11");
  const bool unfreed = mpool11.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const allocating_graph a(*this, device(), 3, !unfreed);
  sc::observe("freed.nodes", static_cast<long long>(a.g.node_count()));
  EXPECT_EQ(1u, a.g.node_count(cudaGraphNodeTypeMemAlloc)) << "the captured allocation";
  EXPECT_EQ(1u, a.g.node_count(cudaGraphNodeTypeKernel)) << "the captured fill";
  EXPECT_EQ(1u, a.g.node_count(cudaGraphNodeTypeMemFree)) << "the captured free";
  const sc::graph_exec x = sc::graph_exec::instantiate(a.g);
  void* live = nullptr;  // under the mutation, the first launch's allocation, which the graph does not free
  const sc::families::unfreed_guard left(s, {&live});
  EXPECT_CUDA_EQ(cudaSuccess, launch(x, s, "freed"));
  if (unfreed) live = a.p;
  EXPECT_CUDA_EQ(cudaSuccess, launch(x, s, "freed")) << "a graph that frees what it allocates, launched again";
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(s, sc::kWorkDeadline));
}

// MPOOL-11 · RT cudaGraphLaunch ("If any allocations created by graphExec remain unfreed ... and graphExec was not
// instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch, the launch will fail with cudaErrorInvalidValue"): a
// graph that allocates, fills and does not free is launched; launched again while that allocation is unfreed it
// fails with cudaErrorInvalidValue, and once the allocation (read back as the graph wrote it) was freed it launches.
TEST_F(MemoryPools, UnfreedGraphAllocationRefusesTheNextLaunchUntilFreed) {
  const sc::claim mpool11("MPOOL-11");
  const bool auto_free = mpool11.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const allocating_graph a(*this, device(), 4, false);
  EXPECT_EQ(0u, a.g.node_count(cudaGraphNodeTypeMemFree));
  const sc::graph_exec x = sc::graph_exec::instantiate(a.g, auto_free ? cudaGraphInstantiateFlagAutoFreeOnLaunch : 0);
  void* live = nullptr;  // the graph's allocation while a launch has made it and nothing freed it
  const sc::families::unfreed_guard left(s, {&live});
  ASSERT_CUDA_EQ(cudaSuccess, launch(x, s, "unfreed"));
  live = a.p;
  const cudaError_t again = sc::taking_last_error(launch(x, s, "unfreed"));
  sc::observe("unfreed.second_launch", sc::error_name(again));
  EXPECT_CUDA_EQ(cudaErrorInvalidValue, again) << "a graph launched again while its allocation was unfreed";
  EXPECT_EQ(0u, mismatches_after(static_cast<const std::uint32_t*>(a.p), kBlockWords, 4, s))
      << "the graph's allocation does not read back as the graph wrote it";
  ASSERT_CUDA_EQ(cudaSuccess, sc::families::free_in(live, s));
  const cudaError_t third = launch(x, s, "unfreed");
  EXPECT_CUDA_EQ(cudaSuccess, third) << "the graph launched again after its allocation was freed";
  if (third == cudaSuccess) live = a.p;
  sc::families::expect_freed_in(s, {&live});
}

// MPOOL-11 · RT cudaGraphLaunch (unfreed allocations fail the next launch unless graphExec was "instantiated with
// cudaGraphInstantiateFlagAutoFreeOnLaunch"): a graph that allocates and does not free, instantiated with the flag,
// launches twice with nothing freed in between.
TEST_F(MemoryPools, AutoFreeOnLaunchLetsAnUnfreedGraphLaunchAgain) {
  const sc::claim mpool11("MPOOL-11");
  const bool no_flag = mpool11.mutated(sc::mutation_kind::arrangement);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const allocating_graph a(*this, device(), 5, false);
  const sc::graph_exec x = sc::graph_exec::instantiate(a.g, no_flag ? 0 : cudaGraphInstantiateFlagAutoFreeOnLaunch);
  void* live = nullptr;
  const sc::families::unfreed_guard left(s, {&live});
  const cudaError_t first = launch(x, s, "auto_free");
  EXPECT_CUDA_EQ(cudaSuccess, first);
  if (first == cudaSuccess) live = a.p;
  const cudaError_t again = sc::taking_last_error(launch(x, s, "auto_free"));
  sc::observe("auto_free.second_launch", sc::error_name(again));
  EXPECT_CUDA_EQ(cudaSuccess, again) << "a graph instantiated to free on launch, launched again";
  if (again == cudaSuccess) live = a.p;
  sc::families::expect_freed_in(s, {&live});
}

}  // namespace
