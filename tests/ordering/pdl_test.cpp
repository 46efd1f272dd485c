// ORDX-01...04: programmatic dependent launch. A primary that is also a latch holds its stream; its secondary
// marks a board before and after its wait for the primary. What may start while the primary is held, and
// what may not, is read from the board while the latch is closed.
#include <gtest/gtest.h>

#include <cstdint>

#include "ordering.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::pdl_options;
using sc::families::pdl_pair;
using sc::families::ProgrammaticLaunch;

// ORDX-01 · PG "Programmatic Dependent Launch and Synchronization" (without the attribute, a kernel launched
// after another in the same stream starts only once the first completed): the primary triggers, yet a
// secondary launched without the attribute runs nothing while the primary is held.
TEST_F(ProgrammaticLaunch, WithoutTheAttributeTheSecondaryWaitsForThePrimarysEnd) {
  const sc::claim ordx01("ORDX-01");
  const bool programmatic = ordx01.mutated(sc::mutation_kind::arrangement);
  pdl_pair p(make(stream_flags::non_blocking, "s"));
  EXPECT_TRUE(early_absent_while_held(p, pdl_options{programmatic, true, true}))
      << "the secondary started while its primary was held";
  EXPECT_EQ(0u, p.mismatches()) << "the secondary did not see every write of its primary";
}

// ORDX-02 · PG "Programmatic Dependent Launch" and RT cudaGridDependencySynchronize (it "blocks until all
// direct grid dependencies have completed and flushed results back to global memory"): with the attribute,
// the secondary's code after its wait runs only once the primary completed, and it sees every write the
// primary made after its trigger.
TEST_F(ProgrammaticLaunch, PastItsWaitTheSecondarySeesTheCompletedPrimary) {
  const sc::claim ordx02("ORDX-02");
  const bool unsynchronized = ordx02.mutated(sc::mutation_kind::arrangement);
  pdl_pair p(make(stream_flags::non_blocking, "s"));
  start(p, pdl_options{true, true, !unsynchronized});
  sc::held_window w(p.primary);
  EXPECT_TRUE(w.absent(p.late())) << "the secondary ran past its wait while its primary was held";
  w.release();
  finish(p);
  EXPECT_EQ(0u, p.mismatches()) << "the secondary read words its primary had not written yet";
  EXPECT_GE(p.late_ns(), p.primary.end_ns()) << "the secondary's read came before the primary's latch opened";
}

// ORDX-03 · PG "Programmatic Dependent Launch" (observed: once every primary block triggered, the secondary
// "can" launch, and its code before the wait may run beside the primary): the secondary's early mark, while
// the triggered primary is held.
TEST_F(ProgrammaticLaunch, TriggeredPrimaryLetsTheSecondaryStartWhileHeld) {
  const sc::claim ordx03("ORDX-03");
  const bool untriggered = ordx03.mutated(sc::mutation_kind::arrangement);
  const sc::observation seen = sc::measure_within(sc::kObservedAttempts, [&] {
    pdl_pair p(make(stream_flags::non_blocking, "s"));
    start(p, pdl_options{true, !untriggered, true});
    sc::held_window w(p.primary);
    const sc::held_result early = w.present(p.early());
    w.release();
    finish(p);
    return early;
  });
  sc::observe("attempts", seen.attempts);
  EXPECT_TRUE(ordx03.observed_row("secondary_starts_while_primary_held", seen.last));
}

// ORDX-04 · PG "Programmatic Dependent Launch" (a primary that never calls the trigger triggers implicitly
// when it completes): with the attribute, a secondary behind an untriggered held primary runs nothing.
TEST_F(ProgrammaticLaunch, UntriggeredPrimaryTriggersAtItsEnd) {
  const sc::claim ordx04("ORDX-04");
  const bool triggered = ordx04.mutated(sc::mutation_kind::arrangement);
  pdl_pair p(make(stream_flags::non_blocking, "s"));
  EXPECT_TRUE(early_absent_while_held(p, pdl_options{true, triggered, true}))
      << "the secondary started before its untriggered primary completed";
  EXPECT_EQ(0u, p.mismatches());
}

// How ORDX-05's waiter reaches its event: the event attached to the latch's launch, or (the mutations) the same
// event recorded plainly after the latch, or plainly before a latch launched without it.
enum class attach { launch_completion, programmatic, plain_after, plain_before };

// A latch launched in a with an event attached; stream b waits on the event, then drops mark 1. The control:
// c waits on a plain event recorded after the latch, then drops mark 2, which must stay absent (EVT-01's rule).
// Returns whether mark 1 landed while the latch was closed.
sc::held_result waiter_beside_held_kernel(ProgrammaticLaunch& t, attach how) {
  const sc::stream a = t.make(stream_flags::non_blocking, "a");
  const sc::stream b = t.make(stream_flags::non_blocking, "b");
  const sc::stream c = t.make(stream_flags::non_blocking, "c");
  const sc::event attached = sc::event::create(sc::event_flags::disable_timing);
  const sc::event after = sc::event::create(sc::event_flags::disable_timing);
  sc::marks m;
  sc::latch g;
  if (how == attach::plain_before) {
    SC_CHECK_CUDA(cudaEventRecord(attached.get(), a.get()));
    t.hold(g, a);
  } else {
    g.hold_by([&](sc::kernels::latch_word* word, std::uint64_t ns, bool banner) {
      return sc::kernels::launch_latch_with_event(a.get(), word, ns, banner, attached.get(),
                                                  how == attach::programmatic);
    });
  }
  if (how == attach::plain_after) SC_CHECK_CUDA(cudaEventRecord(attached.get(), a.get()));
  SC_CHECK_CUDA(cudaEventRecord(after.get(), a.get()));
  SC_CHECK_CUDA(cudaStreamWaitEvent(b.get(), attached.get(), 0));
  t.drop(m, b, 1);
  SC_CHECK_CUDA(cudaStreamWaitEvent(c.get(), after.get(), 0));
  t.drop(m, c, 2);
  sc::held_window w(g);
  EXPECT_TRUE(w.absent(sc::probe::mark(m, 2))) << "a plain event recorded after the held kernel completed";
  // Reason for kLandingDeadline (50 ms): a waiter released at the kernel's start lands within microseconds
  // (seen: the first poll); the row that is false on sm_90 then costs 50 ms an attempt, not a second.
  return w.present(sc::probe::mark(m, 1), sc::kLandingDeadline);
}

// ORDX-05 · RT cudaLaunchAttributeLaunchCompletionEvent (observed: "Nominally, the event is triggered once all
// blocks of the kernel have begun execution. Currently this is a best effort"): a stream waiting on it runs
// while the kernel is still held.
TEST_F(ProgrammaticLaunch, LaunchCompletionEventLetsAWaiterRunBesideItsKernel) {
  const sc::claim ordx05("ORDX-05");
  const attach how = ordx05.mutate(sc::mutation_kind::arrangement, attach::launch_completion, attach::plain_after);
  const sc::observation seen =
      sc::measure_within(sc::kObservedAttempts, [&] { return waiter_beside_held_kernel(*this, how); });
  sc::observe("attempts", seen.attempts);
  EXPECT_TRUE(ordx05.observed_row("launch_completion_waiter_runs_while_held", seen.last));
}

// ORDX-05 · RT cudaLaunchAttributeProgrammaticEvent with triggerAtBlockStart (observed: the event triggers once
// every block began, but it is "primarily meant for establishing programmatic dependency between device tasks"
// and "allows, but does not guarantee, concurrent execution"): does a stream waiting on it run while the kernel
// is still held?
TEST_F(ProgrammaticLaunch, ProgrammaticEventAndAWaiterBesideItsKernel) {
  const sc::claim ordx05("ORDX-05");
  const attach how = ordx05.mutate(sc::mutation_kind::arrangement, attach::programmatic, attach::plain_before);
  const sc::observation seen =
      sc::measure_within(sc::kObservedAttempts, [&] { return waiter_beside_held_kernel(*this, how); });
  sc::observe("attempts", seen.attempts);
  EXPECT_TRUE(ordx05.observed_row("programmatic_waiter_runs_while_held", seen.last));
}

}  // namespace
