// GCTX-05: events order work across green contexts. An event recorded in green context A behind a latch, waited
// on by green context B: a mark in B's stream stays absent while the latch holds, and lands once it opens. Two
// ways: a stream's record and wait (cuEventRecord, cuStreamWaitEvent), and the green context's own
// (cuGreenCtxRecordEvent, cuGreenCtxWaitEvent).
#include <gtest/gtest.h>

#include <string>

#include "green_contexts.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/latch.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/stream.hpp"

namespace {

using sc::families::current_green_context;
using sc::families::green_context;
using sc::families::GreenContexts;

class AcrossGreenContexts : public GreenContexts, public ::testing::WithParamInterface<bool> {};

// The record in A (whole context or stream a) and the wait in B (whole context or stream b).
void record_then_wait(bool whole_context, const green_context& A, const sc::stream& a, const green_context& B,
                      const sc::stream& b, const sc::event& e) {
  if (whole_context) {
    SC_CHECK_CU(A.api().cuGreenCtxRecordEvent(A.get(), e.get()));
    SC_CHECK_CU(B.api().cuGreenCtxWaitEvent(B.get(), e.get()));
    return;
  }
  SC_CHECK_CUDA(cudaEventRecord(e.get(), a.get()));
  SC_CHECK_CUDA(cudaStreamWaitEvent(b.get(), e.get(), 0));
}

// GCTX-05 · DRV cuStreamWaitEvent and cuGreenCtxWaitEvent ("hEvent may be from a different context or device");
// cuGreenCtxRecordEvent ("Captures in hEvent all the activities of the green context"): B's mark, submitted after
// the wait, does not land while A's latch holds the recorded work, and lands after.
TEST_P(AcrossGreenContexts, WaiterIsAbsentWhileTheRecorderIsHeld) {
  const sc::claim gctx05("GCTX-05");
  SC_REQUIRE(sc::requirement::async_launches);
  const sc::families::sm_split parts = smallest_split();
  if (parts.groups < 2) GTEST_SKIP() << "the device splits into " << parts.groups << " partition(s), not two";
  green_context A(api(), dev(), parts.group[0]);
  green_context B(api(), dev(), parts.group[1]);
  const sc::stream a = sc::stream::view(A.new_stream(), "a");
  const sc::stream b = sc::stream::view(B.new_stream(), "b");
  const sc::event e = [&] {  // made in A, as cuEventRecord wants the stream's context
    const current_green_context in(A);
    return sc::event::create(sc::event_flags::disable_timing);
  }();
  const bool before_the_latch = gctx05.mutated(sc::mutation_kind::arrangement);
  if (before_the_latch) record_then_wait(GetParam(), A, a, B, b, e);
  sc::latch l;
  hold(l, a);
  if (!before_the_latch) record_then_wait(GetParam(), A, a, B, b, e);
  sc::marks m;
  drop(m, b, 1);
  sc::held_window w(l);
  EXPECT_TRUE(w.absent(sc::probe::mark(m, 1))) << "B's mark landed while A's recorded work was held";
  w.release();
  EXPECT_TRUE(sc::wait_until(sc::probe::mark(m, 1), sc::kPresenceDeadline)) << "B's mark never landed";
  SC_CHECK_CUDA(sc::synchronize_within(b, sc::kWorkDeadline));
}

std::string way_name(const ::testing::TestParamInfo<bool>& instance) {
  return instance.param ? "GreenContextEvent" : "StreamEvent";
}

INSTANTIATE_TEST_SUITE_P(, AcrossGreenContexts, ::testing::Bool(), way_name);

}  // namespace
