// EVT-04…08, EVT-12, EVT-16, EVT-17, EVT-20: queries, synchronization and elapsed time. Return codes are compared by
// name; every "pending" case is made with a latch, and every "returns at once" is a call made while a latch is closed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "events.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::EventsAndWaits;

// EVT-08's tolerance. Reason for 2 us: the documented resolution of an elapsed time is about 0.5 us, and CUPTI's
// kernel interval and the events are stamped by different units; four resolutions apart is still "covers".
constexpr double kCoverToleranceMs = 0.002;

double elapsed_ms(const sc::event& from, const sc::event& to) {
  float ms = 0.0f;
  SC_CHECK_CUDA(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return static_cast<double>(ms);
}

// The resolution of elapsed times: pairs of back-to-back records in one stream, how many read 0, and the
// smallest non-zero one (-1 when every pair read 0).
struct resolution {
  int pairs = 200;
  int zeros = 0;
  double min_nonzero_us = -1.0;
};

resolution back_to_back_resolution(const sc::stream& s) {
  resolution r;
  std::vector<sc::event> events;
  for (int i = 0; i < 2 * r.pairs; ++i) events.push_back(sc::event::create());
  for (const sc::event& e : events) SC_CHECK_CUDA(cudaEventRecord(e.get(), s.get()));
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  for (int i = 0; i < r.pairs; ++i) {
    const double us = elapsed_ms(events[2 * i], events[2 * i + 1]) * 1000.0;
    if (us == 0.0) {
      ++r.zeros;
    } else if (r.min_nonzero_us < 0.0 || us < r.min_nonzero_us) {
      r.min_nonzero_us = us;
    }
  }
  return r;
}

void observe_resolution(const resolution& r) {
  sc::observe("back_to_back_pairs", r.pairs);
  sc::observe("back_to_back_zero", r.zeros);
  sc::observe("back_to_back_min_nonzero_us", r.min_nonzero_us);
}

// hold -> record -> call -> release: a latch holds `s`, e is recorded in `s` behind it (as `name`) where
// `record_behind`, and `call` is made on a helper thread while the latch is closed (call_while_held, with its
// steps). The latch is open on return; the caller drains.
sc::return_observation call_while_event_held(EventsAndWaits& t, const sc::stream& s, bool record_behind,
                                             const sc::event& e, const std::string& name,
                                             const std::function<cudaError_t()>& call,
                                             const sc::while_held_steps& steps = sc::while_held_steps()) {
  sc::latch g;
  t.hold(g, s);
  if (record_behind) t.record(e, s, name);
  sc::held_window w(g);
  return sc::call_while_held(call, g, sc::kReturnWindow, steps);
}

// What an event's synchronize and query showed while a latch was closed.
struct synchronize_and_query {
  sc::return_observation sync;       // cudaEventSynchronize, on a helper thread
  std::optional<cudaError_t> query;  // cudaEventQuery, on this thread with the latch still closed; empty: not made
};

// Which step of call_while_held makes the query: once the synchronize has returned, or while it still waits.
enum class query_step { after_return, while_pending };

// call_while_event_held with e ("e"): cudaEventSynchronize(e) on the helper thread, and cudaEventQuery(e) on this
// thread at `step`, the latch still closed.
synchronize_and_query synchronize_and_query_while_held(EventsAndWaits& t, const sc::stream& s, bool record_behind,
                                                       const sc::event& e, query_step step) {
  synchronize_and_query seen;
  sc::while_held_steps steps;
  const auto query = [&] { seen.query = cudaEventQuery(e.get()); };
  (step == query_step::after_return ? steps.after_return : steps.while_pending) = query;
  seen.sync = call_while_event_held(
      t, s, record_behind, e, "e", [&] { return cudaEventSynchronize(e.get()); }, steps);
  return seen;
}

// EVT-04 · RT cudaEventQuery, cudaEventSynchronize: on an event that was never recorded both return
// cudaSuccess at once (while a latch holds another stream, so "at once" cannot mean "after the device idled").
TEST_F(EventsAndWaits, NeverRecordedEventQueriesAndSynchronizesAsDone) {
  const sc::claim evt04("EVT-04");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::event e = sc::event::create();
  const bool recorded = evt04.mutated(sc::mutation_kind::arrangement);
  // The synchronize on a helper thread while the latch is closed; once it has returned, and with the latch
  // still closed, the query.
  const synchronize_and_query seen =
      synchronize_and_query_while_held(*this, s, /*record_behind=*/recorded, e, query_step::after_return);
  drain();
  EXPECT_CUDA_EQ(cudaSuccess, seen.sync.code);
  EXPECT_TRUE(seen.sync.returned) << "cudaEventSynchronize on a never-recorded event waited for unrelated work";
  ASSERT_TRUE(seen.query.has_value()) << "no query made: the synchronize did not return while the latch was closed";
  EXPECT_CUDA_EQ(cudaSuccess, *seen.query);
  sc::observe("query", sc::error_name(*seen.query));
  sc::observe("synchronize", sc::error_name(seen.sync.code));
  sc::observe("synchronize_took_us", static_cast<long long>(seen.sync.took.count()));
}

// EVT-05 · RT cudaStreamQuery: cudaSuccess on an empty stream and on a finished one, cudaErrorNotReady while
// work is pending (a latch holds the stream; the query itself returns while it is closed).
TEST_F(EventsAndWaits, StreamQueryReportsPendingWork) {
  const sc::claim evt05("EVT-05");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream idle = make(stream_flags::non_blocking, "idle");
  EXPECT_CUDA_EQ(cudaSuccess, cudaStreamQuery(s.get())) << "a new, empty stream";
  const sc::stream& queried = evt05.mutated(sc::mutation_kind::arrangement) ? idle : s;
  const sc::return_observation pending = call_while_holding(s, [&] { return cudaStreamQuery(queried.get()); });
  drain();
  EXPECT_TRUE(pending.returned) << "cudaStreamQuery waited for the held work";
  EXPECT_CUDA_EQ(cudaErrorNotReady, pending.code) << "querying a stream held by a latch";
  EXPECT_CUDA_EQ(cudaSuccess, cudaStreamQuery(s.get())) << "the same stream once its work finished";
  sc::observe("while_held", sc::error_name(pending.code));
}

// A driver call made from the helper thread of call_while_holding / call_while_held: the device's primary context
// made current there first (the runtime does that for its own calls), the driver's code kept in `code`.
std::function<cudaError_t()> driver_call(int device, CUresult& code, const std::function<CUresult()>& call) {
  return [device, &code, call] {
    const cudaError_t current = cudaSetDevice(device);
    if (current != cudaSuccess) return current;
    code = call();
    return cudaSuccess;
  };
}

// EVT-16 · DRV cuStreamQuery, the driver twin of EVT-05: CUDA_SUCCESS on an empty stream and on a finished
// one, CUDA_ERROR_NOT_READY while a latch holds it (the query itself returns while the latch is closed).
TEST_F(EventsAndWaits, DriverStreamQueryReportsPendingWork) {
  const sc::claim evt16("EVT-16");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream idle = make(stream_flags::non_blocking, "idle");
  EXPECT_CU_EQ(CUDA_SUCCESS, sc::driver().cuStreamQuery(s.get())) << "a new, empty stream";
  const sc::stream& queried = evt16.mutated(sc::mutation_kind::arrangement) ? idle : s;
  CUresult code = CUDA_ERROR_UNKNOWN;
  const sc::return_observation pending =
      call_while_holding(s, driver_call(device(), code, [&] { return sc::driver().cuStreamQuery(queried.get()); }));
  drain();
  EXPECT_CUDA_EQ(cudaSuccess, pending.code) << "making the context current on the calling thread";
  EXPECT_TRUE(pending.returned) << "cuStreamQuery waited for the held work";
  EXPECT_CU_EQ(CUDA_ERROR_NOT_READY, code) << "querying a stream held by a latch";
  EXPECT_CU_EQ(CUDA_SUCCESS, sc::driver().cuStreamQuery(s.get())) << "the same stream once its work finished";
  sc::observe("while_held", sc::error_name(code));
}

// EVT-17 · DRV cuStreamSynchronize: does not return while a latch holds the stream, and returns CUDA_SUCCESS
// once the latch opens.
TEST_F(EventsAndWaits, DriverStreamSynchronizeWaitsForTheLatch) {
  const sc::claim evt17("EVT-17");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream idle = make(stream_flags::non_blocking, "idle");
  const sc::stream& synchronized = evt17.mutated(sc::mutation_kind::arrangement) ? idle : s;
  sc::latch g;
  hold(g, s);
  sc::held_window w(g);
  CUresult code = CUDA_ERROR_UNKNOWN;
  const sc::return_observation sync = sc::call_while_held(
      driver_call(device(), code, [&] { return sc::driver().cuStreamSynchronize(synchronized.get()); }), g,
      sc::kWaitWindow);
  drain();
  EXPECT_CUDA_EQ(cudaSuccess, sync.code) << "making the context current on the calling thread";
  EXPECT_TRUE(sc::does_not_hold(sync.returned)) << "cuStreamSynchronize returned while the latch held its stream";
  EXPECT_CU_EQ(CUDA_SUCCESS, code) << "cuStreamSynchronize once the latch opened";
  sc::observe("synchronize", sc::error_name(code));
  sc::observe("synchronize_took_us", static_cast<long long>(sync.took.count()));
}

// What the driver's calls on the NULL stream returned on a new host thread.
struct null_stream_calls {
  CUresult got_current = CUDA_ERROR_UNKNOWN;  // cuCtxGetCurrent
  CUcontext current = nullptr;                // the context it read
  CUresult query = CUDA_ERROR_UNKNOWN;        // cuStreamQuery(NULL)
  CUresult synchronize = CUDA_ERROR_UNKNOWN;  // cuStreamSynchronize(NULL)
};

// On a new host thread: `first` (the thread's first call, if it makes one), then cuCtxGetCurrent, cuStreamQuery
// and cuStreamSynchronize on the NULL stream.
null_stream_calls null_stream_calls_on_a_new_thread(const std::function<void()>& first) {
  const sc::driver_api& drv = sc::driver();
  null_stream_calls seen;
  std::thread caller([&] {
    first();
    seen.got_current = drv.cuCtxGetCurrent(&seen.current);
    seen.query = drv.cuStreamQuery(nullptr);
    seen.synchronize = drv.cuStreamSynchronize(nullptr);
  });
  caller.join();
  return seen;
}

// EVT-20 · DRV cuStreamQuery, cuStreamSynchronize (CUDA_ERROR_INVALID_CONTEXT): on a host thread with no current
// context, both return CUDA_ERROR_INVALID_CONTEXT for the NULL stream (the stream of "the current context").
// The thread is a new one that made no runtime call, and cuCtxGetCurrent shows that it has no context.
TEST_F(EventsAndWaits, DriverStreamCallsWithoutACurrentContext) {
  const sc::claim evt20("EVT-20");
  const bool bind = evt20.mutated(sc::mutation_kind::arrangement);
  const int dev = device();
  const null_stream_calls seen = null_stream_calls_on_a_new_thread([&] {
    if (bind) (void)cudaSetDevice(dev);
  });
  sc::observe("cuStreamQuery", sc::error_name(seen.query));
  sc::observe("cuStreamSynchronize", sc::error_name(seen.synchronize));
  if (!bind) {
    ASSERT_CU_EQ(CUDA_SUCCESS, seen.got_current) << "cuCtxGetCurrent on the new thread";
    ASSERT_EQ(nullptr, seen.current) << "the new thread already had a current context, so nothing was tested";
  }
  EXPECT_CU_EQ(CUDA_ERROR_INVALID_CONTEXT, seen.query) << "cuStreamQuery(NULL) on a thread without a context";
  EXPECT_CU_EQ(CUDA_ERROR_INVALID_CONTEXT, seen.synchronize)
      << "cuStreamSynchronize(NULL) on a thread without a context";
}

// EVT-06 · RT cudaEventQuery, cudaEventSynchronize: an event recorded behind a latch reads cudaErrorNotReady
// while the latch is closed, and cudaEventSynchronize does not return until it opens; afterwards both succeed.
TEST_F(EventsAndWaits, EventQueryAndSynchronizeFollowTheCapturedWork) {
  const sc::claim evt06("EVT-06");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::event e = sc::event::create();
  const bool early = evt06.mutated(sc::mutation_kind::arrangement);
  if (early) record(e, s, "e");
  // The synchronize on a helper thread must still be waiting when its window ends (call_while_held then
  // opens the latch, so it can return); while it waits, with the latch closed, the query.
  const synchronize_and_query seen =
      synchronize_and_query_while_held(*this, s, /*record_behind=*/!early, e, query_step::while_pending);
  drain();
  EXPECT_TRUE(sc::does_not_hold(seen.sync.returned)) << "cudaEventSynchronize returned before the captured work ran";
  EXPECT_CUDA_EQ(cudaSuccess, seen.sync.code) << "cudaEventSynchronize once the latch opened";
  ASSERT_TRUE(seen.query.has_value()) << "no query made: the synchronize returned at once";
  EXPECT_CUDA_EQ(cudaErrorNotReady, *seen.query) << "the event's captured work was still held";
  EXPECT_CUDA_EQ(cudaSuccess, cudaEventQuery(e.get())) << "after the captured work completed";
  sc::observe("query_while_held", sc::error_name(*seen.query));
}

// cudaEventElapsedTime (into `ms`) between two completed events created with cudaEventDisableTiming, recorded
// in `s`.
cudaError_t elapsed_between_untimed_events(EventsAndWaits& t, const sc::stream& s, float& ms) {
  const sc::event untimed_a = sc::event::create(sc::event_flags::disable_timing);
  const sc::event untimed_b = sc::event::create(sc::event_flags::disable_timing);
  t.record(untimed_a, s, "untimed_a");
  t.record(untimed_b, s, "untimed_b");
  t.drain();
  return cudaEventElapsedTime(&ms, untimed_a.get(), untimed_b.get());
}

// EVT-07 · RT cudaEventElapsedTime: cudaErrorNotReady while an event is pending; cudaErrorInvalidResourceHandle
// for events created with cudaEventDisableTiming and for a never-recorded event; milliseconds otherwise.
TEST_F(EventsAndWaits, ElapsedTimeErrorsByName) {
  const sc::claim evt07("EVT-07");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::event begin = sc::event::create();
  const sc::event end = sc::event::create();
  const sc::event never = sc::event::create();
  const bool early = evt07.mutated(sc::mutation_kind::arrangement);
  record(begin, s, "begin");
  if (early) record(end, s, "end");
  float ms = -1.0f;
  const sc::return_observation pending = call_while_event_held(*this, s, /*record_behind=*/!early, end, "end", [&] {
    return cudaEventElapsedTime(&ms, begin.get(), end.get());
  });
  sc::clear_last_error();  // the refused calls' errors are not sticky
  drain();
  EXPECT_TRUE(pending.returned) << "cudaEventElapsedTime waited";
  EXPECT_CUDA_EQ(cudaErrorNotReady, pending.code) << "the end event was pending behind a latch";
  const cudaError_t untimed = elapsed_between_untimed_events(*this, s, ms);
  const cudaError_t unrecorded = sc::taking_last_error(cudaEventElapsedTime(&ms, begin.get(), never.get()));
  const cudaError_t done = cudaEventElapsedTime(&ms, begin.get(), end.get());
  EXPECT_CUDA_EQ(cudaErrorInvalidResourceHandle, untimed) << "events created with cudaEventDisableTiming";
  EXPECT_CUDA_EQ(cudaErrorInvalidResourceHandle, unrecorded) << "one event never recorded";
  EXPECT_CUDA_EQ(cudaSuccess, done) << "two completed timing events";
  EXPECT_GE(ms, 0.0f);
  sc::observe("pending", sc::error_name(pending.code));
  sc::observe("disable_timing", sc::error_name(untimed));
  sc::observe("never_recorded", sc::error_name(unrecorded));
  sc::observe("completed_ms", static_cast<double>(ms));
}

// EVT-08 (observed) · RT cudaEventElapsedTime ("may be greater than expected" in non-NULL streams): the elapsed
// time between events around a kernel against the kernel's CUPTI interval; and the smallest non-zero elapsed time
// of back-to-back records (the resolution), recorded.
TEST_F(EventsAndWaits, ElapsedTimeAroundAKernelCoversIt) {
  const sc::claim evt08("EVT-08");
  SC_REQUIRE_TRACING();
  constexpr std::uint64_t kSpinNs = 2'000'000;  // reason: long against the resolution (0.5 us) and launch cost
  const sc::stream s = make(stream_flags::non_blocking, "s");
  sc::mapped<sc::kernels::block_record> records(1);
  const sc::event e0 = sc::event::create();
  const sc::event e1 = sc::event::create();
  // Mutation (arrangement): the end event is recorded ahead of the kernel in its stream. (An idle stream's
  // record is no mutation: in a process with many streams it may share the kernel's hardware queue.)
  const bool ahead = evt08.mutated(sc::mutation_kind::arrangement);
  record(e0, s, "e0");
  if (ahead) record(e1, s, "e1");
  {
    const auto label = recorder().label("spin");
    SC_CHECK_CUDA(sc::kernels::launch_spin(s.get(), records.device(), 1, 32, kSpinNs));
  }
  if (!ahead) record(e1, s, "e1");
  drain();
  const double around_kernel = elapsed_ms(e0, e1);
  const resolution r = back_to_back_resolution(s);
  const sc::timeline t = recorder().collect();
  const auto spins = t.labelled("spin");
  ASSERT_EQ(1u, spins.size()) << "the spin kernel's CUPTI record";
  const double kernel_ms = static_cast<double>(spins[0]->end_ns - spins[0]->start_ns) / 1e6;
  sc::observe("kernel_cupti_ms", kernel_ms);
  sc::observe("elapsed_around_kernel_ms", around_kernel);
  sc::observe("elapsed_minus_kernel_us", (around_kernel - kernel_ms) * 1000.0);
  observe_resolution(r);
  EXPECT_TRUE(evt08.matches_baseline("elapsed_covers_kernel", around_kernel + kCoverToleranceMs >= kernel_ms));
}

// EVT-08 (observed) · RT cudaEventElapsedTime: the elapsed time between events around a wait on another, held
// stream against the time the latch was closed.
TEST_F(EventsAndWaits, ElapsedTimeAroundAWaitCoversTheWait) {
  const sc::claim evt08("EVT-08");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream a = make(stream_flags::non_blocking, "A");
  const sc::event e2 = sc::event::create();
  const sc::event e3 = sc::event::create();
  const sc::event opened = sc::event::create(sc::event_flags::disable_timing);
  const bool ahead = evt08.mutated(sc::mutation_kind::arrangement);
  record(e2, s, "e2");
  SC_CHECK_CUDA(cudaEventSynchronize(e2.get()));  // e2 is complete before the latch is even enqueued
  std::uint64_t held_ns = 0;
  {
    sc::latch g;
    hold(g, a);
    record(opened, a, "opened");
    if (ahead) record(e3, s, "e3");
    wait(s, opened, "opened");
    if (!ahead) record(e3, s, "e3");
    sc::held_window w(g);
    // The latch stays closed for the absence window: e3 must not complete meanwhile.
    const sc::held_result pending =
        w.absent(sc::probe("e3 completed", [&] { return cudaEventQuery(e3.get()) == cudaSuccess; }));
    w.release();
    drain();
    held_ns = g.end_ns() - g.start_ns();
    EXPECT_TRUE(pending);
  }
  const double around_wait = elapsed_ms(e2, e3);
  sc::observe("latch_closed_ms", static_cast<double>(held_ns) / 1e6);
  sc::observe("elapsed_around_wait_ms", around_wait);
  EXPECT_TRUE(evt08.matches_baseline("elapsed_includes_wait_on_another_stream",
                                     around_wait + kCoverToleranceMs >= static_cast<double>(held_ns) / 1e6));
}

// EVT-12 · RT cudaStreamSynchronize; ECRTS18: synchronizing a stream waits for that stream only. A latch holds
// s1; synchronizing an idle s2 returns while it is closed, for a non-blocking and a blocking s2; the
// control: synchronizing s1 does not.
TEST_F(EventsAndWaits, StreamSynchronizeWaitsOnlyForItsStream) {
  const sc::claim evt12("EVT-12");
  const sc::stream s1 = make(stream_flags::non_blocking, "s1");
  const sc::stream nb = make(stream_flags::non_blocking, "s2_non_blocking");
  const sc::stream bl = make(stream_flags::blocking, "s2_blocking");
  const bool same = evt12.mutated(sc::mutation_kind::arrangement);
  for (const sc::stream* s2 : {&nb, &bl}) {
    SCOPED_TRACE(s2->name());
    const sc::stream& target = same ? s1 : *s2;
    const sc::return_observation idle = call_while_holding(s1, [&] { return cudaStreamSynchronize(target.get()); });
    drain();
    EXPECT_TRUE(idle.returned) << "synchronizing idle " << s2->name() << " waited for held s1";
    EXPECT_CUDA_EQ(cudaSuccess, idle.code);
    sc::observe(s2->name() + ".took_us", static_cast<long long>(idle.took.count()));
  }
  const sc::return_observation held = call_while_holding(
      s1, [&] { return cudaStreamSynchronize(s1.get()); }, sc::kWaitWindow);
  drain();
  EXPECT_TRUE(sc::does_not_hold(held.returned)) << "synchronizing the held stream itself returned";
}

}  // namespace
