// ORDX-14: an event exported with cudaIpcGetEventHandle and opened in another process (sc_probe ipc-wait):
// that process's stream waits on it like on any event of its own.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "ordering.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/probe.hpp"

namespace {

using sc::stream_flags;
using sc::families::OrderingExceptions;

// How long the other process may take to create its context and open the event. Reason: a context is
// created in well under a second; 10 s leaves room for a loaded host.
constexpr std::chrono::milliseconds kChildReady{10000};

std::string hex(const cudaIpcEventHandle_t& handle) {
  std::string out;
  char two[3];
  for (const char byte : handle.reserved) {
    std::snprintf(two, sizeof two, "%02x", static_cast<unsigned>(static_cast<unsigned char>(byte)));
    out += two;
  }
  return out;
}

// ORDX-14 · RT cudaIpcOpenEventHandle ("Opens an interprocess event handle exported from another process with
// cudaIpcGetEventHandle"; the opened event is used with cudaStreamWaitEvent like any other): the event was
// recorded once, and that record completed, before the other process opened it; it is recorded again behind a
// latch. The other process, told to go while the latch is closed, queries the event (not ready), makes its
// stream wait on it, launches a kernel and synchronizes: that synchronize does not return while the latch is
// closed, and returns once it opens.
TEST_F(OrderingExceptions, AnotherProcessWaitsOnTheLatestRecordOfAnExportedEvent) {
  const sc::claim ordx14("ORDX-14");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool no_second_record = ordx14.mutated(sc::mutation_kind::arrangement);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::event e = sc::event::create(sc::event_flags::interprocess);
  cudaIpcEventHandle_t handle{};
  const cudaError_t exported = cudaIpcGetEventHandle(&handle, e.get());
  if (exported == cudaErrorNotSupported) GTEST_SKIP() << "interprocess events are not supported here";
  SC_CHECK_CUDA(exported);
  SC_CHECK_CUDA(cudaEventRecord(e.get(), a.get()));
  SC_CHECK_CUDA(sc::synchronize_within(a, sc::kWorkDeadline));
  sc::child_probe other("ipc-wait", device(), {"--handle", hex(handle)});
  ASSERT_TRUE(other.wait_ready(kChildReady)) << other.problem();
  sc::latch g;
  hold(g, a);
  if (!no_second_record) SC_CHECK_CUDA(cudaEventRecord(e.get(), a.get()));
  sc::held_window w(g);
  other.go();
  EXPECT_TRUE(w.absent(other.done())) << "the other process's wait returned while the latch held the record";
  w.release();
  ASSERT_TRUE(other.wait_done(sc::kWorkDeadline)) << other.problem();
  sc::observe("other.query", other.result().at("query"));
  EXPECT_EQ("cudaErrorNotReady", other.result().at("query")) << "the other process saw the event complete";
  EXPECT_EQ("cudaSuccess", other.result().at("rc"));
}

}  // namespace
