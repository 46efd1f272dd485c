// EVT-01, -02, -03: what a stream wait holds, and which record of an event it binds to. Proven with gates
// (a kernel on a mapped flag, opened by the host after it checked "not yet") and with order encoded in
// values, never with timing.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "events.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::EventsAndWaits;
using sc::families::stream_kind;

constexpr std::uint32_t kElements = 4096;

// EVT-01 · RT cudaStreamWaitEvent: after cudaStreamWaitEvent(B, e), work in B does not start until the work
// captured by e's latest record has completed, for every pair of stream kinds (blocking, non-blocking,
// per-thread, legacy; two different streams). A gate holds A; a fill in A writes V; e is recorded in A.
// First, where the pair is not ordered anyway by the legacy stream's implicit synchronization, a mark in B
// with no wait must land while the gate is closed (the negative control: B is free). Then B waits on e,
// a consumer in B counts elements that are not V, and a mark follows: it must not land while the gate is
// closed, and after the release the consumer must have seen V everywhere.
TEST_F(EventsAndWaits, WaitHoldsLaterWorkForEveryPairOfStreamKinds) {
  const sc::claim evt01("EVT-01");
  const bool no_wait = evt01.mutated(sc::mutation_kind::arrangement);
  sc::device_buffer<std::uint32_t> mismatches(1);
  sc::marks m;
  unsigned slot = 0;
  int pairs = 0;
  int controls = 0;
  for (stream_kind ka : sc::families::kStreamKinds) {
    for (stream_kind kb : sc::families::kStreamKinds) {
      // The per-thread and legacy streams are one stream each: a pair of them is one stream, not two.
      if (ka == kb && (ka == stream_kind::per_thread || ka == stream_kind::legacy)) continue;
      const std::string pair = std::string(to_string(ka)) + "->" + to_string(kb);
      SCOPED_TRACE("A " + std::string(to_string(ka)) + ", B " + to_string(kb));
      sc::device_buffer<std::uint32_t> data(kElements);
      const sc::stream a = of_kind(ka, std::string("A_") + to_string(ka));
      const sc::stream b = of_kind(kb, std::string("B_") + to_string(kb));
      const sc::event e = sc::event::create(sc::event_flags::disable_timing);
      const std::uint32_t value = 0xe0100u + static_cast<std::uint32_t>(pairs);
      const unsigned control_mark = slot++;
      const unsigned held_mark = slot++;
      sc::gate g;
      hold(g, a);
      {
        const auto label = recorder().label("fill@" + a.name());
        SC_CHECK_CUDA(sc::kernels::launch_fill(a.get(), data.data(), kElements, value));
      }
      record(e, a, "e");
      sc::held_window w(g);
      sc::observe(std::string(to_string(ka)) + "_to_" + to_string(kb) + ".negative_control",
                  !sc::families::implicitly_ordered(ka, kb));
      if (!sc::families::implicitly_ordered(ka, kb)) {
        drop(m, b, control_mark);
        EXPECT_TRUE(w.present(sc::probe::mark(m, control_mark))) << pair << ": B is not free without the wait";
        ++controls;
      }
      if (!no_wait) wait(b, e, "e");
      {
        const auto label = recorder().label("consume@" + b.name());
        SC_CHECK_CUDA(sc::kernels::launch_count_mismatches(b.get(), data.data(), kElements, value, mismatches.data()));
      }
      drop(m, b, held_mark);
      EXPECT_TRUE(w.absent(sc::probe::mark(m, held_mark))) << pair << ": B's work ran before the awaited work";
      w.release();
      drain();
      EXPECT_NE(0u, m.ticket_of(held_mark)) << pair << ": B's mark never landed";
      ++pairs;
    }
  }
  std::uint32_t wrong = 0;
  SC_CHECK_CUDA(cudaMemcpy(&wrong, mismatches.data(), sizeof(wrong), cudaMemcpyDeviceToHost));
  sc::observe("pairs", pairs);
  sc::observe("negative_controls", controls);
  sc::observe("mismatched_elements", static_cast<int>(wrong));
  EXPECT_EQ(0u, wrong) << "consumers after a wait read elements the awaited fill had not written";
}

// EVT-02 · RT cudaEventRecord ("... later calls do not affect earlier waits"): a wait binds to the record
// current when cudaStreamWaitEvent is called. A gate holds A; e is recorded in A; B waits on e and drops a
// mark; then e is recorded again on an idle stream C (that record completes at once). B's mark must still
// not land while the gate is closed. Control: D waits on e after the re-record and its mark lands while
// the gate is closed (it bound to C's finished record).
TEST_F(EventsAndWaits, WaitBindsToTheRecordCurrentAtCallTime) {
  const sc::claim evt02("EVT-02");
  const bool late_wait = evt02.mutated(sc::mutation_kind::arrangement);
  sc::marks m;
  const sc::stream a = make(stream_flags::non_blocking, "A");
  const sc::stream b = make(stream_flags::non_blocking, "B");
  const sc::stream c = make(stream_flags::non_blocking, "C");
  const sc::stream d = make(stream_flags::non_blocking, "D");
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  sc::gate g;
  hold(g, a);
  record(e, a, "e");
  if (!late_wait) wait(b, e, "e");
  record(e, c, "e");
  if (late_wait) wait(b, e, "e");
  drop(m, b, 1);
  wait(d, e, "e");
  drop(m, d, 2);
  {
    sc::held_window w(g);
    EXPECT_TRUE(w.absent(sc::probe::mark(m, 1))) << "re-recording the event moved a wait made before it";
    EXPECT_TRUE(w.present(sc::probe::mark(m, 2))) << "a wait made after the re-record did not bind to it";
  }
  drain();
  EXPECT_NE(0u, m.ticket_of(1));
}

// EVT-02 (second part) · the circular pattern (chipStar TestEventRecordCircularDep): two streams hand one
// event pair back and forth 5000 times, each re-recording an event the other stream waits on. If a wait bound
// to a later record, the two streams would wait on each other for ever; with call-time binding the chain
// completes in order. Each step checks that the word holds the step's number and advances it (order encoded
// in the value). A gate holds the head of s1 while the first slice is queued: no step may run meanwhile (s2's
// first step waits for s1's). The chain runs in slices with a deadline each: a slice that does not finish
// ends the test with a message instead of a hang.
TEST_F(EventsAndWaits, CircularRecordAndWaitCompletesInOrder) {
  const sc::claim evt02("EVT-02");
  constexpr std::uint32_t kIterations = 5000;
  // Reason: 200 iterations are 400 one-thread kernels and 800 event calls, a few milliseconds of work;
  // slicing bounds what is queued when a deadline passes.
  constexpr std::uint32_t kSlice = 200;
  // The timeline keeps the last few iterations only (10000 kernels would bury the page).
  constexpr std::uint32_t kTraced = 4;
  // Mutation (arrangement): each s2 wait is made before s1's record of the same iteration, so it binds to
  // the previous record and s2's step does not wait for s1's.
  const bool wait_first = evt02.mutated(sc::mutation_kind::arrangement);
  sc::mapped<std::uint32_t> word(1);
  sc::device_buffer<std::uint32_t> mismatches(1);
  const sc::stream s1 = make(stream_flags::non_blocking, "s1");
  const sc::stream s2 = make(stream_flags::non_blocking, "s2");
  const sc::event e1 = sc::event::create(sc::event_flags::disable_timing);
  const sc::event e2 = sc::event::create(sc::event_flags::disable_timing);
  const auto step = [&](const sc::stream& s, std::uint32_t expected) {
    SC_CHECK_CUDA(sc::kernels::launch_advance(s.get(), word.device(), expected, mismatches.data()));
  };
  const auto sliced_sync = [&](std::uint32_t i) {
    for (const sc::stream* s : {&s1, &s2}) {
      const cudaError_t code = sc::synchronize_within(*s, sc::kWorkDeadline);
      if (code == cudaErrorNotReady) {
        ADD_FAILURE() << "the circular record/wait chain stopped: " << s->name() << " did not finish iteration " << i
                      << " within " << sc::kWorkDeadline.count() << " ms (a wait bound to a later record?)";
        sc::end_test_process("the circular record/wait chain is stuck");
      }
      SC_CHECK_CUDA(code);
    }
  };
  const auto advanced =
      sc::probe("a step of the chain ran", [&] { return static_cast<volatile std::uint32_t*>(word.host())[0] != 0; });
  sc::gate g;
  hold(g, s1);
  for (std::uint32_t i = 0; i < kIterations; ++i) {
    if (i == kIterations - kTraced) {
      // Work so far is finished; the timeline starts here.
      sliced_sync(i);
      recorder().begin();
      recorder().track(s1);
      recorder().track(s2);
    }
    step(s1, 2 * i);
    if (wait_first) SC_CHECK_CUDA(cudaStreamWaitEvent(s2.get(), e1.get(), 0));
    SC_CHECK_CUDA(cudaEventRecord(e1.get(), s1.get()));
    if (!wait_first) SC_CHECK_CUDA(cudaStreamWaitEvent(s2.get(), e1.get(), 0));
    step(s2, 2 * i + 1);
    SC_CHECK_CUDA(cudaEventRecord(e2.get(), s2.get()));
    SC_CHECK_CUDA(cudaStreamWaitEvent(s1.get(), e2.get(), 0));
    if (i + 1 == kSlice) {
      sc::held_window w(g);
      EXPECT_TRUE(w.absent(advanced)) << "a step ran while the head of the chain was held";
    }
    if ((i + 1) % kSlice == 0) sliced_sync(i);
  }
  drain();
  std::uint32_t wrong = 0;
  SC_CHECK_CUDA(cudaMemcpy(&wrong, mismatches.data(), sizeof(wrong), cudaMemcpyDeviceToHost));
  const std::uint32_t last = word.host()[0];
  sc::observe("iterations", static_cast<int>(kIterations));
  sc::observe("steps_out_of_order", static_cast<int>(wrong));
  sc::observe("final_word", static_cast<int>(last));
  EXPECT_EQ(0u, wrong) << "steps of the chain ran out of order";
  EXPECT_EQ(2 * kIterations, last);
}

// EVT-03 · RT cudaEventRecord, cudaStreamWaitEvent: a wait on an event that was never recorded is a no-op.
// A gate holds an unrelated stream A; B waits on a fresh event and drops a mark: it lands while the gate is
// closed, and synchronizing B then succeeds.
TEST_F(EventsAndWaits, WaitOnANeverRecordedEventIsANoOp) {
  const sc::claim evt03("EVT-03");
  const bool recorded = evt03.mutated(sc::mutation_kind::arrangement);
  sc::marks m;
  const sc::stream a = make(stream_flags::non_blocking, "A");
  const sc::stream b = make(stream_flags::non_blocking, "B");
  const sc::event e = sc::event::create();
  sc::gate g;
  hold(g, a);
  if (recorded) record(e, a, "e");
  wait(b, e, "e");
  drop(m, b, 1);
  sc::held_window w(g);
  const sc::gated_result landed = w.present(sc::probe::mark(m, 1));
  EXPECT_TRUE(landed) << "a wait on a never-recorded event held later work";
  const std::string intercepted = sc::unmet(sc::requirement::unintercepted_calls);
  if (!intercepted.empty()) {
    // Under memcheck (H100) this synchronize waited for A's gate: the call is the tool's, not the driver's.
    sc::observe("sync_of_waiting_stream", "not run: " + intercepted);
  } else if (landed.outcome() == sc::gated_outcome::holds) {
    // B's work is done, so synchronizing it must return while the gate is still closed, with cudaSuccess
    // (on a helper thread, so a synchronize that wrongly waits ends with the window, not on the watchdog).
    const sc::return_observation synced = sc::call_while_gated([&] { return cudaStreamSynchronize(b.get()); }, g);
    sc::observe("sync_of_waiting_stream", sc::error_name(synced.code));
    EXPECT_TRUE(synced.returned) << "synchronizing the stream that waited on a never-recorded event waited";
    EXPECT_CUDA_EQ(cudaSuccess, synced.code);
  }
  w.release();
  drain();
}

}  // namespace
