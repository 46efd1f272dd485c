// HOST-01, -02, -03, -10: where a host function stands in its stream's order, proven with latches and
// host latches (never with timing).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "host_funcs.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using HostFuncs = sc::families::HostFuncs;
using sc::families::host_record;
using sc::families::ran;

constexpr std::uint32_t kElements = 4096;

// How many of data[0..n) are not `value`, read in reverse order (a half-finished producer shows at the end
// first).
std::uint32_t count_other_than(const std::uint32_t* data, std::uint32_t n, std::uint32_t value) {
  std::uint32_t bad = 0;
  for (std::uint32_t i = n; i-- > 0;) bad += data[i] != value;
  return bad;
}

// How many of marks 0..n-1 have landed.
unsigned landed_marks(const sc::marks& m, unsigned n) {
  unsigned landed = 0;
  for (unsigned k = 0; k < n; ++k) landed += m.ticket_of(k) != 0;
  return landed;
}

// The probe "<what> ran": every host function of `fns` was called.
sc::probe all_ran(const std::string& what, const std::vector<host_record*>& fns) {
  return sc::probe(what, [&fns] {
    for (const host_record* f : fns)
      if (f->calls.load() == 0) return false;
    return true;
  });
}

// HOST-01 · RT cudaLaunchHostFunc ("called after currently enqueued work"); PG 2.3.4: a host function runs
// only after all work enqueued before it in its stream has completed, and sees that work's results. A
// latch holds s; a fill kernel after it writes V into mapped memory; the host function, after the fill,
// reads the buffer in reverse order. It must not run while the latch is closed, and must see V everywhere.
TEST_F(HostFuncs, HostFunctionRunsAfterEarlierWorkAndSeesItsResults) {
  const sc::claim host01("HOST-01");
  SC_REQUIRE(sc::requirement::async_launches);
  constexpr std::uint32_t kValue = 0x5c0001u;
  sc::mapped<std::uint32_t> data(kElements);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream other = make(stream_flags::non_blocking, "other");
  const bool unordered = host01.mutated(sc::mutation_kind::arrangement);
  std::atomic<std::uint32_t> wrong{0};
  sc::latch g;
  hold(g, s);
  SC_CHECK_CUDA(sc::kernels::launch_fill(s.get(), data.device(), kElements, kValue));
  host_record& reader = launch_host_func(unordered ? other : s, "reader",
                                         [&] { wrong.store(count_other_than(data.host(), kElements, kValue)); });
  {
    sc::held_window w(g);
    EXPECT_TRUE(w.absent(ran(reader))) << "the host function ran before the work enqueued ahead of it";
  }
  ASSERT_TRUE(drain());
  EXPECT_EQ(1, reader.calls.load());
  EXPECT_EQ(0u, wrong.load()) << "elements the host function saw without the fill's value";
  sc::observe("elements_checked", static_cast<int>(kElements));
}

// HOST-02 · RT cudaLaunchHostFunc ("will block work added after it"), cudaStreamAddCallback: while a host
// function runs (it waits on a host latch), later work in its stream does not start.
TEST_F(HostFuncs, HostFunctionBlocksLaterWorkInItsStream) {
  const sc::claim host02("HOST-02");
  SC_REQUIRE(sc::requirement::async_launches);
  sc::marks m;
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream other = make(stream_flags::non_blocking, "other");
  const bool elsewhere = host02.mutated(sc::mutation_kind::arrangement);
  sc::host_latch latch;
  hold(latch, s);
  drop(m, elsewhere ? other : s, 1);
  {
    sc::held_window w(latch);
    EXPECT_TRUE(w.absent(sc::probe::mark(m, 1))) << "work after a waiting host function ran";
  }
  ASSERT_TRUE(drain());
  EXPECT_NE(0u, m.ticket_of(1));
}

// HOST-03 · RT stream order: host functions of one stream run exactly once each, in enqueue order,
// interleaved with kernels. N host functions alternate with N marks; host function i must be the i-th to
// run (tickets 1..N) and see exactly i + 1 marks landed (it ran after mark i and before mark i + 1).
TEST_F(HostFuncs, HostFunctionsOfOneStreamRunOnceInEnqueueOrderBetweenKernels) {
  const sc::claim host03("HOST-03");
  SC_REQUIRE(sc::requirement::async_launches);
  constexpr unsigned kFunctions = 8;
  sc::marks m;
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream late = make(stream_flags::non_blocking, "late");
  const bool displaced = host03.mutated(sc::mutation_kind::arrangement);
  std::vector<host_record*> fns;
  std::vector<unsigned> marks_seen(kFunctions, 0);
  sc::latch hold_late;
  hold(hold_late, late);
  for (unsigned i = 0; i < kFunctions; ++i) {
    drop(m, s, i);
    fns.push_back(&launch_host_func(displaced && i == 3 ? late : s, "f" + std::to_string(i),
                                    [&m, &marks_seen, i] { marks_seen[i] = landed_marks(m, kFunctions); }));
  }
  const sc::held_result every_one_ran = sc::present_while_held(all_ran("all host functions of s", fns), hold_late);
  hold_late.open();
  ASSERT_TRUE(drain());
  EXPECT_TRUE(every_one_ran);
  for (unsigned i = 0; i < kFunctions; ++i) {
    EXPECT_EQ(1, fns[i]->calls.load()) << "f" << i;
    EXPECT_EQ(i + 1, fns[i]->ticket.load()) << "f" << i << " ran out of enqueue order";
    EXPECT_EQ(i + 1, marks_seen[i]) << "f" << i << " did not run between mark " << i << " and mark " << i + 1;
  }
}

// HOST-03 negative control: host functions of two streams without a join have no fixed order. The first
// one enqueued (into a stream held by a latch) runs after the second (in a free stream).
TEST_F(HostFuncs, NegativeControlHostFunctionsOfTwoStreamsHaveNoFixedOrder) {
  const sc::claim host03("HOST-03");
  SC_REQUIRE(sc::requirement::async_launches);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const bool joined = host03.mutated(sc::mutation_kind::arrangement);
  sc::latch g;
  hold(g, a);
  host_record& first = launch_host_func(a, "first");
  host_record& second = launch_host_func(joined ? a : b, "second");
  {
    sc::held_window w(g);
    EXPECT_TRUE(w.present(ran(second))) << "the second host function waited for the first one's stream";
  }
  ASSERT_TRUE(drain());
  EXPECT_EQ(1u, second.ticket.load());
  EXPECT_EQ(2u, first.ticket.load());
}

// HOST-10 · RT cudaLaunchHostFunc (it starts as if an event recorded just before it had been
// synchronized): it also waits for work joined into its stream earlier by an event wait. A latch holds A;
// B waits on an event recorded in A after the latch; the host function in B must not run while A is held.
TEST_F(HostFuncs, HostFunctionWaitsForWorkJoinedByAnEventWait) {
  const sc::claim host10("HOST-10");
  SC_REQUIRE(sc::requirement::async_launches);
  const sc::stream a = make(stream_flags::non_blocking, "a");
  const sc::stream b = make(stream_flags::non_blocking, "b");
  const sc::event joined = sc::event::create(sc::event_flags::disable_timing);
  const bool no_wait = host10.mutated(sc::mutation_kind::arrangement);
  sc::latch g;
  hold(g, a);
  SC_CHECK_CUDA(cudaEventRecord(joined.get(), a.get()));
  if (!no_wait) SC_CHECK_CUDA(cudaStreamWaitEvent(b.get(), joined.get(), 0));
  host_record& fn = launch_host_func(b, "after join");
  {
    sc::held_window w(g);
    EXPECT_TRUE(w.absent(ran(fn))) << "the host function in B ran before the work B joined by an event wait";
  }
  ASSERT_TRUE(drain());
  EXPECT_EQ(1, fn.calls.load());
}

}  // namespace
