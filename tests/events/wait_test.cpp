// EVT-01, -02, -03: what a stream wait holds, and which record of an event it binds to. Proven with latches
// (a kernel on a mapped flag, opened by the host after it checked "not yet") and with order encoded in
// values, never with timing.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "events.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::EventsAndWaits;
using sc::families::stream_kind;

constexpr std::uint32_t kElements = 4096;

// EVT-01's pairs: every ordered pair of two different streams of the four kinds. The per-thread and legacy
// streams are one stream each: a pair of one of them with itself is one stream, not two.
std::vector<std::pair<stream_kind, stream_kind>> pairs_of_two_streams() {
  std::vector<std::pair<stream_kind, stream_kind>> pairs;
  for (stream_kind ka : sc::families::kStreamKinds) {
    for (stream_kind kb : sc::families::kStreamKinds) {
      if (ka != kb || (ka != stream_kind::per_thread && ka != stream_kind::legacy)) pairs.emplace_back(ka, kb);
    }
  }
  return pairs;
}

// What one pair of EVT-01 showed.
struct pair_result {
  // The negative control, where the legacy stream does not order the pair anyway: B's mark with no wait,
  // watched while A is held.
  std::optional<sc::held_result> free_without_wait;
  // B's mark after the wait and the consumer, watched while A is held.
  sc::held_result held{sc::held_outcome::invalid, "not measured"};
  // The same mark's ticket once A was released (0: it never landed).
  std::uint32_t held_ticket = 0;
};

// EVT-01's arrangement, one pair at a time. The pairs share one marks board (two marks each) and one count of
// the elements consumers read without the awaited value; each pair has a buffer and a value of its own.
class pair_waits {
 public:
  explicit pair_waits(EventsAndWaits& t) : t_(t), mismatches_(1) {}

  // A latch holds A; a fill in A writes the pair's value; e is recorded in A. The negative control, where the
  // pair has one. Then B waits on e (only `with_wait`), a consumer in B counts the elements that are not the
  // value, and B's mark follows; A is released and the device drained.
  pair_result run(stream_kind ka, stream_kind kb, bool with_wait);

  int pairs() const noexcept { return pairs_; }
  // How many pairs so far had a negative control.
  int negative_controls() const noexcept { return controls_; }
  // Elements the consumers of every pair so far read without their pair's value.
  std::uint32_t mismatched_elements() const {
    std::uint32_t wrong = 0;
    SC_CHECK_CUDA(cudaMemcpy(&wrong, mismatches_.data(), sizeof(wrong), cudaMemcpyDeviceToHost));
    return wrong;
  }

 private:
  EventsAndWaits& t_;
  sc::device_buffer<std::uint32_t> mismatches_;
  sc::marks m_;
  int pairs_ = 0;
  int controls_ = 0;
};

pair_result pair_waits::run(stream_kind ka, stream_kind kb, bool with_wait) {
  const unsigned index = pairs_++;
  sc::device_buffer<std::uint32_t> data(kElements);
  const sc::stream a = t_.of_kind(ka, std::string("A_") + to_string(ka));
  const sc::stream b = t_.of_kind(kb, std::string("B_") + to_string(kb));
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  const std::uint32_t value = 0xe0100u + index;
  const unsigned control_mark = 2 * index;
  const unsigned held_mark = 2 * index + 1;
  pair_result r;
  sc::latch g;
  t_.hold(g, a);
  t_.fill(a, data.data(), kElements, value);
  t_.record(e, a, "e");
  sc::held_window w(g);
  if (!sc::families::implicitly_ordered(ka, kb)) {
    t_.drop(m_, b, control_mark);
    r.free_without_wait = w.present(sc::probe::mark(m_, control_mark));
    ++controls_;
  }
  if (with_wait) t_.wait(b, e, "e");
  t_.count_mismatches(b, data.data(), kElements, value, mismatches_.data());
  t_.drop(m_, b, held_mark);
  r.held = w.absent(sc::probe::mark(m_, held_mark));
  w.release();
  t_.drain();
  r.held_ticket = m_.ticket_of(held_mark);
  return r;
}

// EVT-01 · RT cudaStreamWaitEvent: after cudaStreamWaitEvent(B, e), work in B does not start until the work
// captured by e's latest record has completed, for every pair of stream kinds (blocking, non-blocking,
// per-thread, legacy; two different streams). A latch holds A; a fill in A writes V; e is recorded in A.
// First, where the pair is not ordered anyway by the legacy stream's implicit synchronization, a mark in B
// with no wait must land while the latch is closed (the negative control: B is free). Then B waits on e,
// a consumer in B counts elements that are not V, and a mark follows: it must not land while the latch is
// closed, and after the release the consumer must have seen V everywhere.
TEST_F(EventsAndWaits, WaitHoldsLaterWorkForEveryPairOfStreamKinds) {
  const sc::claim evt01("EVT-01");
  const bool no_wait = evt01.mutated(sc::mutation_kind::arrangement);
  pair_waits bench(*this);
  for (const auto& [ka, kb] : pairs_of_two_streams()) {
    SCOPED_TRACE("A " + std::string(to_string(ka)) + ", B " + to_string(kb));
    const pair_result r = bench.run(ka, kb, /*with_wait=*/!no_wait);
    sc::observe(std::string(to_string(ka)) + "_to_" + to_string(kb) + ".negative_control",
                !sc::families::implicitly_ordered(ka, kb));
    if (r.free_without_wait) {
      EXPECT_TRUE(*r.free_without_wait) << "B is not free without the wait";
    }
    EXPECT_TRUE(r.held) << "B's work ran before the awaited work";
    EXPECT_NE(0u, r.held_ticket) << "B's mark never landed";
  }
  const std::uint32_t wrong = bench.mismatched_elements();
  sc::observe("pairs", bench.pairs());
  sc::observe("negative_controls", bench.negative_controls());
  sc::observe("mismatched_elements", static_cast<int>(wrong));
  EXPECT_EQ(0u, wrong) << "consumers after a wait read elements the awaited fill had not written";
}

// EVT-02 · RT cudaEventRecord ("... later calls do not affect earlier waits"): a wait binds to the record
// current when cudaStreamWaitEvent is called. A latch holds A; e is recorded in A; B waits on e and drops a
// mark; then e is recorded again on an idle stream C (that record completes at once). B's mark must still
// not land while the latch is closed. Control: D waits on e after the re-record and its mark lands while
// the latch is closed (it bound to C's finished record).
TEST_F(EventsAndWaits, WaitBindsToTheRecordCurrentAtCallTime) {
  const sc::claim evt02("EVT-02");
  const bool late_wait = evt02.mutated(sc::mutation_kind::arrangement);
  sc::marks m;
  const sc::stream a = make(stream_flags::non_blocking, "A");
  const sc::stream b = make(stream_flags::non_blocking, "B");
  const sc::stream c = make(stream_flags::non_blocking, "C");
  const sc::stream d = make(stream_flags::non_blocking, "D");
  const sc::event e = sc::event::create(sc::event_flags::disable_timing);
  sc::latch g;
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

// The circular chain's length: 5000 iterations, 10000 steps.
constexpr std::uint32_t kIterations = 5000;
// The circular chain's slices. Reason: 200 iterations are 400 one-thread kernels and 800 event calls, a few
// milliseconds of work; slicing bounds what is queued when a deadline passes.
constexpr std::uint32_t kSlice = 200;
// The timeline keeps the last few iterations only (10000 kernels would bury the page).
constexpr std::uint32_t kTraced = 4;

// EVT-02's circular chain: streams s1 and s2 hand events e1 and e2 back and forth. Each step is a one-thread
// kernel that checks that the word holds the step's number and advances it (order encoded in the value); a
// step that finds another number counts into `mismatches`.
struct circular_chain {
  explicit circular_chain(EventsAndWaits& t)
      : word(1),
        mismatches(1),
        s1(t.make(stream_flags::non_blocking, "s1")),
        s2(t.make(stream_flags::non_blocking, "s2")),
        e1(sc::event::create(sc::event_flags::disable_timing)),
        e2(sc::event::create(sc::event_flags::disable_timing)) {}

  // Iteration i: s1's step 2i, e1 recorded in s1, s2 waits on e1, s2's step 2i + 1, e2 recorded in s2, s1
  // waits on e2; with `wait_first`, s2's wait on e1 comes before s1's record.
  void enqueue_iteration(std::uint32_t i, bool wait_first) const;
  void step(const sc::stream& s, std::uint32_t expected) const {
    SC_CHECK_CUDA(sc::kernels::launch_advance(s.get(), word.device(), expected, mismatches.data()));
  }

  // Waits for both streams with a deadline each, after iteration i: a stream that does not finish ends the
  // test with a message instead of a hang.
  void finish_slice(std::uint32_t i) const {
    for (const sc::stream* s : {&s1, &s2}) {
      const cudaError_t code = sc::synchronize_within(*s, sc::kWorkDeadline);
      if (code == cudaErrorNotReady) {
        ADD_FAILURE() << "the circular record/wait chain stopped: " << s->name() << " did not finish iteration " << i
                      << " within " << sc::kWorkDeadline.count() << " ms (a wait bound to a later record?)";
        sc::end_test_process("the circular record/wait chain is stuck");
      }
      SC_CHECK_CUDA(code);
    }
  }

  // The timeline starts after iteration i, once the work so far is finished.
  void trace_from(sc::recorder& recorder, std::uint32_t i) const {
    finish_slice(i);
    recorder.begin();
    recorder.track(s1);
    recorder.track(s2);
  }

  sc::probe advanced() const {
    return sc::probe("a step of the chain ran",
                     [this] { return static_cast<volatile std::uint32_t*>(word.host())[0] != 0; });
  }
  // The word once the chain has run: 2 * kIterations when every step ran.
  std::uint32_t final_word() const { return word.host()[0]; }
  std::uint32_t steps_out_of_order() const {
    std::uint32_t wrong = 0;
    SC_CHECK_CUDA(cudaMemcpy(&wrong, mismatches.data(), sizeof(wrong), cudaMemcpyDeviceToHost));
    return wrong;
  }

  sc::mapped<std::uint32_t> word;
  sc::device_buffer<std::uint32_t> mismatches;
  const sc::stream s1;
  const sc::stream s2;
  const sc::event e1;
  const sc::event e2;
};

void circular_chain::enqueue_iteration(std::uint32_t i, bool wait_first) const {
  step(s1, 2 * i);
  if (wait_first) SC_CHECK_CUDA(cudaStreamWaitEvent(s2.get(), e1.get(), 0));
  SC_CHECK_CUDA(cudaEventRecord(e1.get(), s1.get()));
  if (!wait_first) SC_CHECK_CUDA(cudaStreamWaitEvent(s2.get(), e1.get(), 0));
  step(s2, 2 * i + 1);
  SC_CHECK_CUDA(cudaEventRecord(e2.get(), s2.get()));
  SC_CHECK_CUDA(cudaStreamWaitEvent(s1.get(), e2.get(), 0));
}

// EVT-02 (second part) · the circular pattern (chipStar TestEventRecordCircularDep): two streams hand one
// event pair back and forth 5000 times, each re-recording an event the other stream waits on. If a wait bound
// to a later record, the two streams would wait on each other for ever; with call-time binding the chain
// completes in order. Each step checks that the word holds the step's number and advances it (order encoded
// in the value). A latch holds the head of s1 while the first slice is queued: no step may run meanwhile (s2's
// first step waits for s1's). The chain runs in slices with a deadline each: a slice that does not finish
// ends the test with a message instead of a hang.
TEST_F(EventsAndWaits, CircularRecordAndWaitCompletesInOrder) {
  const sc::claim evt02("EVT-02");
  // Mutation (arrangement): each s2 wait is made before s1's record of the same iteration, so it binds to
  // the previous record and s2's step does not wait for s1's.
  const bool wait_first = evt02.mutated(sc::mutation_kind::arrangement);
  circular_chain chain(*this);
  sc::latch g;
  hold(g, chain.s1);
  for (std::uint32_t i = 0; i < kIterations; ++i) {
    if (i == kIterations - kTraced) chain.trace_from(recorder(), i);
    chain.enqueue_iteration(i, wait_first);
    if (i + 1 == kSlice) {
      sc::held_window w(g);
      EXPECT_TRUE(w.absent(chain.advanced())) << "a step ran while the head of the chain was held";
    }
    if ((i + 1) % kSlice == 0) chain.finish_slice(i);
  }
  drain();
  const std::uint32_t wrong = chain.steps_out_of_order();
  sc::observe("iterations", static_cast<int>(kIterations));
  sc::observe("steps_out_of_order", static_cast<int>(wrong));
  sc::observe("final_word", static_cast<int>(chain.final_word()));
  EXPECT_EQ(0u, wrong) << "steps of the chain ran out of order";
  EXPECT_EQ(2 * kIterations, chain.final_word());
}

// EVT-03's synchronize of the waiting stream B, once B's mark has landed while the latch is closed: B's work is
// done, so it must return while the latch is still closed, with cudaSuccess. Made on a helper thread, so a
// synchronize that wrongly waits ends with the window, not on the watchdog. Not made under a tool that intercepts
// the call: under memcheck (H100) it waited for A's latch, the tool's doing, not the driver's. Its code, or why it
// was not made, is observed as "sync_of_waiting_stream".
std::optional<sc::return_observation> synchronize_waiting_stream(const sc::stream& b, sc::latch& g,
                                                                 const sc::held_result& landed) {
  const std::string intercepted = sc::unmet(sc::requirement::unintercepted_calls);
  if (!intercepted.empty()) {
    sc::observe("sync_of_waiting_stream", "not run: " + intercepted);
    return std::nullopt;
  }
  if (landed.outcome() != sc::held_outcome::holds) return std::nullopt;
  const sc::return_observation synced = sc::call_while_held([&] { return cudaStreamSynchronize(b.get()); }, g);
  sc::observe("sync_of_waiting_stream", sc::error_name(synced.code));
  return synced;
}

// EVT-03 · RT cudaEventRecord, cudaStreamWaitEvent: a wait on an event that was never recorded is a no-op.
// A latch holds an unrelated stream A; B waits on a fresh event and drops a mark: it lands while the latch is
// closed, and synchronizing B then succeeds.
TEST_F(EventsAndWaits, WaitOnANeverRecordedEventIsANoOp) {
  const sc::claim evt03("EVT-03");
  sc::marks m;
  const sc::stream a = make(stream_flags::non_blocking, "A");
  const sc::stream b = make(stream_flags::non_blocking, "B");
  const sc::event e = sc::event::create();
  const bool recorded = evt03.mutated(sc::mutation_kind::arrangement);
  sc::latch g;
  hold(g, a);
  if (recorded) record(e, a, "e");
  wait(b, e, "e");
  drop(m, b, 1);
  sc::held_window w(g);
  const sc::held_result landed = w.present(sc::probe::mark(m, 1));
  EXPECT_TRUE(landed) << "a wait on a never-recorded event held later work";
  if (const std::optional<sc::return_observation> synced = synchronize_waiting_stream(b, g, landed)) {
    EXPECT_TRUE(synced->returned) << "synchronizing the stream that waited on a never-recorded event waited";
    EXPECT_CUDA_EQ(cudaSuccess, synced->code);
  }
  w.release();
  drain();
}

}  // namespace
