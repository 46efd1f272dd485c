// HOST-05, HOST-14 (observed): what a host function may call, and which thread runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "host_funcs.hpp"

namespace {

using sc::stream_flags;
using HostFuncs = sc::families::HostFuncs;
using sc::families::host_record;

// HOST-05 · RT cudaLaunchHostFunc ("may not make any CUDA API calls ... may result in
// cudaErrorNotPermitted, but this is not required") (observed): the codes two non-synchronizing calls
// return inside a host function — an allocation, and a query of another, idle stream. The only test
// that makes CUDA calls inside a host function.
TEST_F(HostFuncs, CudaCallsInsideAHostFunction) {
  const sc::claim host05("HOST-05");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream idle = make(stream_flags::non_blocking, "idle");
  const bool outside = host05.mutated(sc::mutation_kind::arrangement);
  void* allocated = nullptr;
  cudaError_t malloc_rc = cudaSuccess;
  cudaError_t query_rc = cudaSuccess;
  const auto calls = [&] {
    malloc_rc = cudaMalloc(&allocated, 256);
    query_rc = cudaStreamQuery(idle.get());
  };
  if (outside)
    calls();
  else
    launch_host_func(s, "cuda calls", calls);
  ASSERT_TRUE(drain());
  if (allocated != nullptr) SC_CHECK_CUDA(cudaFree(allocated));
  sc::clear_last_error();
  EXPECT_TRUE(host05.matches_baseline("rc.cudaMalloc", sc::error_name(malloc_rc)));
  EXPECT_TRUE(host05.matches_baseline("rc.cudaStreamQuery", sc::error_name(query_rc)));
  sc::observe("rc.cudaMalloc", sc::error_name(malloc_rc));
  sc::observe("rc.cudaStreamQuery", sc::error_name(query_rc));
}

// HOST-14 · PG 2.3.4 (observed): host functions run on a thread the driver owns, not the enqueuing
// thread; whether one worker serves a context or each stream has its own is not documented. Two host
// functions in each of four streams, one stream after the other.
TEST_F(HostFuncs, HostFunctionsRunOnADriverThread) {
  const sc::claim host14("HOST-14");
  constexpr int kStreams = 4;
  const bool direct = host14.mutated(sc::mutation_kind::arrangement);
  std::vector<sc::stream> streams;
  for (int i = 0; i < kStreams; ++i) streams.push_back(make(stream_flags::non_blocking, "s" + std::to_string(i)));
  std::vector<std::thread::id> seen;
  for (int i = 0; i < kStreams; ++i) {
    for (int k = 0; k < 2; ++k) {
      std::thread::id ran;
      const auto note = [&ran] { ran = std::this_thread::get_id(); };
      if (direct)
        note();
      else
        launch_host_func(streams[i], "s" + std::to_string(i) + "." + std::to_string(k), note);
      ASSERT_TRUE(drain());
      seen.push_back(ran);
    }
  }
  const bool on_enqueuing_thread = std::find(seen.begin(), seen.end(), std::this_thread::get_id()) != seen.end();
  const int workers = static_cast<int>(std::set<std::thread::id>(seen.begin(), seen.end()).size());
  sc::observe("runs_on_enqueuing_thread", on_enqueuing_thread);
  sc::observe("distinct_worker_threads", workers);
  EXPECT_TRUE(host14.matches_baseline("runs_on_enqueuing_thread", on_enqueuing_thread));
  EXPECT_TRUE(host14.matches_baseline("distinct_worker_threads", workers));
}

}  // namespace
