// EVT-18 (documented): cuStreamQuery and cuStreamSynchronize report the error of an earlier asynchronous
// launch. A fault loses the context for good, so the arrangement runs in a child process (a threadsafe death
// test, as HOST-11's); the child reports through a child_channel and the parent asserts.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include "events.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/child.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::families::EventsAndWaits;

// Child body. A latch holds s; behind it a trapping kernel, whose launch returns before it runs. While the latch
// is closed the query of s reads "not ready" (no error is known yet); once it opens the trap runs, and the
// query, polled until it is no longer "not ready", and the synchronize of s must report an error. What the
// queries of another, idle stream t say afterwards is recorded: the note says "may".
[[noreturn]] void fault_then_query(const sc::child_channel& channel, bool trap) {
  const sc::driver_api& drv = sc::driver();
  cudaStream_t s = nullptr;
  cudaStream_t t = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) std::_Exit(3);
  if (cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking) != cudaSuccess) std::_Exit(3);
  {
    const sc::stream held = sc::stream::view(s, "s");
    sc::latch g;
    g.hold(held);
    channel.write("latch_started", g.wait_started() ? "true" : "false");
    channel.write("launch", sc::error_name(trap ? sc::kernels::launch_trap(s) : sc::kernels::launch_empty(s)));
    channel.write("query_while_held", sc::error_name(drv.cuStreamQuery(s)));
    channel.write("query_other_while_held", sc::error_name(drv.cuStreamQuery(t)));
  }  // the latch opens: the trap runs
  CUresult query = CUDA_ERROR_NOT_READY;
  const auto deadline = std::chrono::steady_clock::now() + sc::kWorkDeadline;
  while ((query = drv.cuStreamQuery(s)) == CUDA_ERROR_NOT_READY && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  channel.write("query_after", sc::error_name(query));
  channel.write("synchronize_after", sc::error_name(drv.cuStreamSynchronize(s)));
  channel.write("query_other_after", sc::error_name(drv.cuStreamQuery(t)));
  channel.write("synchronize_other_after", sc::error_name(drv.cuStreamSynchronize(t)));
  std::_Exit(0);  // no teardown in a lost context
}

// EVT-18 · DRV cuStreamQuery, cuStreamSynchronize ("may also return error codes from previous, asynchronous
// launches"): the launch of a trapping kernel returns CUDA_SUCCESS and the query reads CUDA_ERROR_NOT_READY
// while a latch holds it back; after the trap, the query and the synchronize of its stream return an error.
TEST_F(EventsAndWaits, DriverStreamCallsReportAnEarlierAsynchronousError) {
  const sc::claim evt18("EVT-18");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::death_test_children);
  const bool trap = !evt18.mutated(sc::mutation_kind::arrangement);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const sc::child_channel channel("EVT18");
  EXPECT_EXIT(fault_then_query(channel, trap), ::testing::ExitedWithCode(0), "")
      << "the child that faulted the device did not end normally";
  std::map<std::string, std::string> child = channel.read_observed("child.");
  for (const char* key : {"latch_started", "launch", "query_while_held", "query_after", "synchronize_after"})
    ASSERT_EQ(1u, child.count(key)) << "the child wrote no " << key << ", so it ended before that step";
  EXPECT_EQ("true", child["latch_started"]) << "the latch in the child did not start, so the fault may have come early";
  EXPECT_EQ("cudaSuccess", child["launch"]) << "the launch of the trapping kernel must return before it runs";
  EXPECT_EQ("CUDA_ERROR_NOT_READY", child["query_while_held"]) << "querying the stream while the latch held the trap";
  EXPECT_EQ("CUDA_SUCCESS", child["query_other_while_held"]) << "querying an idle stream before the fault";
  EXPECT_NE("CUDA_SUCCESS", child["query_after"]) << "cuStreamQuery did not report the earlier launch's error";
  EXPECT_NE("CUDA_ERROR_NOT_READY", child["query_after"]) << "the stream's work never ended";
  EXPECT_NE("CUDA_SUCCESS", child["synchronize_after"])
      << "cuStreamSynchronize did not report the earlier launch's error";
}

}  // namespace
