// DFLT-01..05, -10..14, -23: the legacy default stream against blocking and non-blocking streams.
// Orderings are proven with latches: the host checks "not yet" (or "already") while a latch holds a stream.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "default_streams.hpp"
#include "legacy_rules.hpp"
#include "sc/fixtures/child.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using DefaultStreams = sc::families::DefaultStreams;

// DFLT-02 · SSB "Legacy default stream": an action in the legacy stream first waits for all earlier work
// in blocking streams. (Arrangements of DFLT-02..05: legacy_rules.hpp, shared with the driver-API tests.)
TEST_F(DefaultStreams, LegacyStreamWaitsForEarlierBlockingStreamWork) {
  const sc::claim dflt02("DFLT-02");
  SC_REQUIRE(sc::requirement::async_launches);
  sc::families::legacy_waits_for_earlier_blocking_work(*this, dflt02, sc::families::runtime_path(*this));
}

// DFLT-04 · SSB; RT cudaStreamCreateWithFlags: a non-blocking stream does not synchronize with the
// legacy stream — here the legacy stream does not wait for it. (Mirror and negative control of DFLT-02.)
TEST_F(DefaultStreams, LegacyStreamDoesNotWaitForNonBlockingStreamWork) {
  const sc::claim dflt04("DFLT-04");
  SC_REQUIRE(sc::requirement::async_launches);
  sc::families::legacy_does_not_wait_for_non_blocking_work(*this, dflt04, sc::families::runtime_path(*this));
}

// DFLT-03 · SSB example k1(s); k2(0); k3(s): work issued to a blocking stream after a legacy-stream
// action waits for it.
TEST_F(DefaultStreams, BlockingStreamWaitsForEarlierLegacyWork) {
  const sc::claim dflt03("DFLT-03");
  SC_REQUIRE(sc::requirement::async_launches);
  sc::families::blocking_waits_for_earlier_legacy_work(*this, dflt03, sc::families::runtime_path(*this));
}

// DFLT-04 · SSB: the other direction — a non-blocking stream does not wait for legacy work.
// (Mirror and negative control of DFLT-03.)
TEST_F(DefaultStreams, NonBlockingStreamDoesNotWaitForLegacyWork) {
  const sc::claim dflt04("DFLT-04");
  SC_REQUIRE(sc::requirement::async_launches);
  sc::families::non_blocking_does_not_wait_for_legacy_work(*this, dflt04, sc::families::runtime_path(*this));
}

// DFLT-05 · SSB ("such as a kernel launch or cudaStreamWaitEvent()"): cudaStreamWaitEvent on the legacy
// stream holds later blocking-stream work, not non-blocking work.
TEST_F(DefaultStreams, WaitEventOnTheLegacyStreamHoldsLaterBlockingWorkOnly) {
  const sc::claim dflt05("DFLT-05");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::default_connections);
  sc::families::wait_on_legacy_holds_later_blocking_work_only(*this, dflt05, sc::families::runtime_path(*this));
}

// DFLT-01 · PG §2.3 (observed): kernels in two non-blocking streams may run concurrently.
TEST_F(DefaultStreams, KernelsInTwoNonBlockingStreamsMayRunConcurrently) {
  const sc::claim dflt01("DFLT-01");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE_CONCURRENT_KERNELS();
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const sc::stream& second = dflt01.mutated(sc::mutation_kind::arrangement) ? a : b;
  const sc::observation seen = sc::measure_within(sc::kObservedAttempts, [&] {
    sc::marks m;
    sc::latch g;
    hold(g, a);
    drop(m, second, 1);
    return sc::present_while_held(m, 1, g);
  });
  sc::observe("attempts", seen.attempts);
  EXPECT_TRUE(dflt01.observed_row("holds", seen.last));
}

// DFLT-10 · undocumented (observed): cudaStreamQuery on the legacy stream while only a blocking stream is
// busy; the same query while only a non-blocking stream is busy is the contrast.
TEST_F(DefaultStreams, QueryOfTheLegacyStreamWhileABlockingStreamIsBusy) {
  const sc::claim dflt10("DFLT-10");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool swapped = dflt10.mutated(sc::mutation_kind::arrangement);
  for (const stream_flags flags : {stream_flags::blocking, stream_flags::non_blocking}) {
    const std::string kind = flags == stream_flags::blocking ? "blocking" : "non_blocking";
    const stream_flags made =
        swapped ? (flags == stream_flags::blocking ? stream_flags::non_blocking : stream_flags::blocking) : flags;
    const sc::stream s1 = make(made, "busy_" + kind);
    sc::latch g;
    hold(g, s1);
    ASSERT_TRUE(g.wait_started());
    const std::string code = sc::error_name(cudaStreamQuery(legacy_.get()));
    const bool valid = closed(g.state());
    g.open();
    drain();
    ASSERT_TRUE(valid) << "the latch was not closed during the query: " << sc::to_string(g.state());
    const std::string key = kind == "blocking" ? "rc" : "non_blocking.rc";
    sc::observe("rc.cudaStreamQuery(legacy)." + kind, code);
    EXPECT_TRUE(dflt10.matches_baseline(key, code));
  }
}

// DFLT-11 · contested (observed): cudaStreamSynchronize on an empty blocking stream after legacy work —
// does it wait for that work?
TEST_F(DefaultStreams, SynchronizeOfAnEmptyBlockingStreamAfterLegacyWork) {
  const sc::claim dflt11("DFLT-11");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool pending = dflt11.mutated(sc::mutation_kind::arrangement);
  sc::marks m;
  const sc::stream s1 = make(stream_flags::blocking, "s1");
  sc::latch g;
  hold(g, legacy_);
  if (pending) drop(m, s1, 1);
  ASSERT_TRUE(g.wait_started());
  const sc::return_observation seen = sc::call_while_held([&] { return cudaStreamSynchronize(s1.get()); }, g);
  drain();
  EXPECT_CUDA_EQ(cudaSuccess, seen.code);
  EXPECT_TRUE(dflt11.observed_row("returned_while_held", seen.returned));
}

// DFLT-12 · hip-tests _NullStreamSynchronization (observed): cudaStreamSynchronize(cudaStreamLegacy) waits
// for a busy blocking stream but not for a busy non-blocking one.
TEST_F(DefaultStreams, SynchronizeOfTheLegacyStreamWaitsForBlockingStreamsOnly) {
  const sc::claim dflt12("DFLT-12");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool swapped = dflt12.mutated(sc::mutation_kind::arrangement);
  for (const stream_flags flags : {stream_flags::blocking, stream_flags::non_blocking}) {
    const std::string kind = flags == stream_flags::blocking ? "blocking" : "non_blocking";
    const stream_flags made =
        swapped ? (flags == stream_flags::blocking ? stream_flags::non_blocking : stream_flags::blocking) : flags;
    const sc::stream s = make(made, kind);
    sc::latch g;
    hold(g, s);
    ASSERT_TRUE(g.wait_started());
    const sc::return_observation seen = sc::call_while_held([&] { return cudaStreamSynchronize(legacy_.get()); }, g);
    drain();
    EXPECT_CUDA_EQ(cudaSuccess, seen.code);
    EXPECT_TRUE(dflt12.observed_row(kind + ".returned_while_held", seen.returned));
  }
}

// DFLT-23 · RT cudaDeviceSynchronize ("blocks until the device has completed all preceding requested
// tasks"): it waits for a busy stream of every kind — blocking, non-blocking and the legacy stream. In
// each round one stream is held and everything else is idle. Contrast in the same test: synchronizing an
// idle stream returns while the latch is closed.
TEST_F(DefaultStreams, DeviceSynchronizeWaitsForEveryStream) {
  const sc::claim dflt23("DFLT-23");
  SC_REQUIRE(sc::requirement::async_launches);
  const sc::stream blocking = make(stream_flags::blocking, "blocking");
  const sc::stream non_blocking = make(stream_flags::non_blocking, "non_blocking");
  const sc::stream idle = make(stream_flags::non_blocking, "idle");
  const std::function<cudaError_t()> device_sync =
      dflt23.mutated(sc::mutation_kind::arrangement)
          ? std::function<cudaError_t()>([&] { return cudaStreamSynchronize(idle.get()); })
          : std::function<cudaError_t()>([] { return cudaDeviceSynchronize(); });
  for (const sc::stream* busy : {&blocking, &non_blocking, &legacy_}) {
    SCOPED_TRACE("held: " + busy->name());
    sc::latch g;
    hold(g, *busy);
    ASSERT_TRUE(g.wait_started());
    const sc::return_observation seen = sc::call_while_held(device_sync, g, sc::kWaitWindow);
    drain();
    EXPECT_TRUE(sc::does_not_hold(seen.returned)) << "cudaDeviceSynchronize must wait for the latch";
    EXPECT_CUDA_EQ(cudaSuccess, seen.code);
  }
  sc::latch g;
  hold(g, non_blocking);
  ASSERT_TRUE(g.wait_started());
  const sc::return_observation control =
      sc::call_while_held([&] { return cudaStreamSynchronize(idle.get()); }, g, sc::kLandingDeadline);
  EXPECT_TRUE(control.returned)
      << "negative control: synchronizing an idle non-blocking stream must not wait for the latch";
  EXPECT_CUDA_EQ(cudaSuccess, control.code);
}

// Child process body for DFLT-13: tries to destroy both default streams, then uses them. The contrast: a
// created stream is destroyed with cudaSuccess. Mutation (arrangement): the "legacy" destroy is given a
// created stream instead.
[[noreturn]] void destroy_default_streams(const sc::claim& dflt13, const sc::child_channel& channel) {
  sc::marks m;
  cudaStream_t created = nullptr;
  cudaStream_t other = nullptr;
  const bool swapped = dflt13.mutated(sc::mutation_kind::arrangement);
  if (cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking) != cudaSuccess ||
      cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking) != cudaSuccess)
    std::exit(3);
  channel.write("destroy.created", sc::error_name(cudaStreamDestroy(created)));
  channel.write("destroy.legacy", sc::error_name(cudaStreamDestroy(swapped ? other : cudaStreamLegacy)));
  channel.write("destroy.per_thread", sc::error_name(cudaStreamDestroy(cudaStreamPerThread)));
  sc::clear_last_error();
  m.drop(sc::stream::legacy(), 1);
  m.drop(sc::stream::per_thread(), 2);
  const cudaError_t synced = cudaDeviceSynchronize();
  channel.write("sync_after", sc::error_name(synced));
  channel.write("usable.legacy", m.ticket_of(1) != 0 ? "true" : "false");
  channel.write("usable.per_thread", m.ticket_of(2) != 0 ? "true" : "false");
  std::exit(0);
}

// DFLT-13 · ZLUDA stream_cant_destroy_default (observed): the default streams cannot be destroyed; the
// call returns an error and the stream stays usable. In a child process: a crash must not end this one.
TEST_F(DefaultStreams, DefaultStreamsCannotBeDestroyed) {
  const sc::claim dflt13("DFLT-13");
  SC_REQUIRE(sc::requirement::death_test_children);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The mutation acts in the child; asked here too, so that this test's record shows it.
  (void)dflt13.mutated(sc::mutation_kind::arrangement);
  const sc::child_channel channel("DFLT13");
  EXPECT_EXIT(destroy_default_streams(dflt13, channel), ::testing::ExitedWithCode(0), "");
  const auto lines = channel.read();
  EXPECT_EQ(6u, lines.size()) << "the child reported " << lines.size() << " of 6 facts";
  for (const auto& [key, value] : lines) {
    sc::observe(key, value);
    EXPECT_TRUE(dflt13.matches_baseline(key, value));
  }
}

// DFLT-14 · DRV cuStreamBeginCapture, cuStreamIsCapturing: capture cannot begin on the legacy stream, and
// while a blocking stream captures (global mode), using the legacy stream fails with
// cudaErrorStreamCaptureImplicit.
TEST_F(DefaultStreams, CaptureExcludesTheLegacyStream) {
  const sc::claim dflt14("DFLT-14");
  const cudaError_t begin_on_legacy =
      sc::taking_last_error(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal));
  sc::observe("rc.begin_capture(legacy)", sc::error_name(begin_on_legacy));
  EXPECT_NE(cudaSuccess, begin_on_legacy) << "capture began on the legacy stream";
  if (begin_on_legacy == cudaSuccess) {
    cudaGraph_t graph = nullptr;
    (void)cudaStreamEndCapture(cudaStreamLegacy, &graph);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
  const sc::stream capturing = make(
      dflt14.mutate(sc::mutation_kind::arrangement, stream_flags::blocking, stream_flags::non_blocking), "capturing");
  SC_CHECK_CUDA(cudaStreamBeginCapture(capturing.get(), cudaStreamCaptureModeRelaxed));
  const cudaError_t legacy_use = sc::kernels::launch_empty(legacy_.get());
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(capturing.get(), &graph);
  if (graph != nullptr) SC_CHECK_CUDA(cudaGraphDestroy(graph));
  sc::clear_last_error();
  sc::observe("rc.legacy_launch_during_capture", sc::error_name(legacy_use));
  sc::observe("rc.end_capture", sc::error_name(ended));
  EXPECT_CUDA_EQ(cudaErrorStreamCaptureImplicit, legacy_use);
}

}  // namespace
