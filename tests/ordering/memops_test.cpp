// ORDX-06, ORDX-07: stream memory operations. A wait on a word holds later work of its stream until its
// condition holds; a write from another stream, ordered after that stream's earlier work, releases it.
#include <gtest/gtest.h>

#include <cstdint>

#include "ordering.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/environment.hpp"
#include "sc/fixtures/probe.hpp"

namespace {

using sc::stream_flags;
using sc::families::OrderingExceptions;
using sc::families::wait_word;

// One condition of ORDX-06: the word starts at `initial` and then takes `holding` (neither satisfies the
// wait), and `releasing` satisfies it. Under the mutation the word takes `releasing` where `holding` was due,
// so the wait no longer holds the mark.
void expect_wait_holds(OrderingExceptions& t, const sc::claim& ordx06, unsigned flags, std::uint32_t value,
                       std::uint32_t initial, std::uint32_t holding, std::uint32_t releasing) {
  const bool released_early = ordx06.mutated(sc::mutation_kind::arrangement);
  wait_word w(initial, releasing);
  const sc::families::wait_outcome o =
      t.wait_then_store(w, flags, value, released_early ? releasing : holding, releasing);
  EXPECT_TRUE(o.held) << "later work of the stream ran before the word satisfied the wait";
  EXPECT_TRUE(o.released) << "the wait did not let later work run once the word satisfied it";
}

// ORDX-06 · DRV cuStreamWaitValue32 ("Work ordered after the operation will block until the given condition on
// the memory is satisfied. By default, the condition is to wait for (int32_t)(*addr - value) >= 0, a cyclic
// greater-or-equal"): a wait for 0xFFFFFFF0 holds at 0xFFFFFF00 and at 0x7FFFFFF0, and 5 (past the wrap,
// numerically smaller) releases it.
TEST_F(OrderingExceptions, WaitGeqIsACyclicComparison) {
  const sc::claim ordx06("ORDX-06");
  expect_wait_holds(*this, ordx06, CU_STREAM_WAIT_VALUE_GEQ, 0xFFFFFFF0u, 0xFFFFFF00u, 0x7FFFFFF0u, 5u);
}

// ORDX-06 · DRV CU_STREAM_WAIT_VALUE_EQ ("Wait until *addr == value"): a wait for 7 holds at 0 and at 8 (which
// a greater-or-equal would take), and 7 releases it.
TEST_F(OrderingExceptions, WaitEqHoldsUntilTheWordIsEqual) {
  const sc::claim ordx06("ORDX-06");
  expect_wait_holds(*this, ordx06, CU_STREAM_WAIT_VALUE_EQ, 7u, 0u, 8u, 7u);
}

// ORDX-06 · DRV CU_STREAM_WAIT_VALUE_AND ("Wait until (*addr & value) != 0"): a wait for bit 3 holds at 0 and
// at 0x7, and 0x18 releases it.
TEST_F(OrderingExceptions, WaitAndHoldsUntilABitIsShared) {
  const sc::claim ordx06("ORDX-06");
  expect_wait_holds(*this, ordx06, CU_STREAM_WAIT_VALUE_AND, 0x8u, 0u, 0x7u, 0x18u);
}

// ORDX-06 · DRV CU_STREAM_WAIT_VALUE_NOR ("Wait until ~(*addr | value) != 0", where the device attribute
// CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR says so): a wait for 0xFFFF0000 holds while the word has
// every low bit set (0x0000FFFF, 0x0001FFFF) and 0x00007FFF releases it.
TEST_F(OrderingExceptions, WaitNorHoldsUntilABitIsFreeInBoth) {
  const sc::claim ordx06("ORDX-06");
  CUdevice dev = 0;
  SC_CHECK_CU(sc::driver().cuDeviceGet(&dev, device()));
  int nor = 0;
  SC_CHECK_CU(sc::driver().cuDeviceGetAttribute(&nor, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, dev));
  sc::observe("can_use_stream_wait_value_nor", nor);
  if (nor == 0) GTEST_SKIP() << "CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR is 0 on this device";
  expect_wait_holds(*this, ordx06, CU_STREAM_WAIT_VALUE_NOR, 0xFFFF0000u, 0x0000FFFFu, 0x0001FFFFu, 0x00007FFFu);
}

// s waits on `w` for `value` (GEQ) before mark 1; returns once s reached its wait (an event recorded just before
// it completed), false if it did not within the presence deadline.
bool wait_then_mark(OrderingExceptions& t, wait_word& w, const sc::stream& s, sc::marks& m, std::uint32_t value) {
  const sc::event arrival = sc::families::enqueue_wait(w, s, value, CU_STREAM_WAIT_VALUE_GEQ);
  t.drop(m, s, 1);
  return sc::families::reached_wait(arrival);
}

// ORDX-07 · DRV cuStreamWriteValue32 (a stream memory operation: it runs in its stream's order): behind a latch
// in t, the write leaves the word alone while the latch is closed and writes it once the latch opens.
TEST_F(OrderingExceptions, WriteWaitsForEarlierWorkOfItsStream) {
  const sc::claim ordx07("ORDX-07");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  const sc::stream free = make(stream_flags::non_blocking, "free");
  const bool unheld = ordx07.mutated(sc::mutation_kind::arrangement);
  wait_word w(0u, 1u);
  sc::latch g;
  hold(g, t);
  SC_CHECK_CU(w.write_in(unheld ? free : t, 1u));
  sc::held_window window(g);
  EXPECT_TRUE(window.absent(w.reaches(1u))) << "the write ran before the work ahead of it in its stream";
  window.release();
  EXPECT_TRUE(sc::wait_until(w.reaches(1u), sc::kPresenceDeadline)) << "the write never ran";
  SC_CHECK_CUDA(sc::synchronize_within(t, sc::kWorkDeadline));
}

// ORDX-07 · DRV cuStreamWaitValue32 and cuStreamWriteValue32: a stream waiting on a word is released by a write
// another stream makes. s reached its wait and its mark stays absent for the absence window; then the write is
// enqueued in t, and the mark lands.
TEST_F(OrderingExceptions, WriteFromAnotherStreamReleasesAWaitingStream) {
  const sc::claim ordx07("ORDX-07");
  SC_REQUIRE(sc::requirement::own_connection_count);  // one queue: t's write would queue behind s's wait
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  const std::uint32_t written = ordx07.mutate(sc::mutation_kind::arrangement, 1u, 0u);
  wait_word w(0u, 1u);
  sc::marks m;
  ASSERT_TRUE(wait_then_mark(*this, w, s, m, 1u)) << "s did not reach its wait";
  EXPECT_TRUE(sc::families::stays_absent(sc::probe::mark(m, 1), sc::kAbsenceWindow)) << "s ran past its wait";
  SC_CHECK_CU(w.write_in(t, written));
  EXPECT_TRUE(sc::wait_until(sc::probe::mark(m, 1), sc::kPresenceDeadline)) << "t's write did not release s";
  w.store(1u);
  sc::families::finish_waiting(s);
}

// ORDX-09 · DRV cuStreamWaitValue32 ("This function cannot be used with managed memory (cuMemAllocManaged)",
// and its flags name four conditions): a wait on a managed word and a wait with a condition no flag names are
// refused. Each would be satisfied at once, so a wait the driver took could not hang its stream.
TEST_F(OrderingExceptions, WaitsOnManagedMemoryOrForAnUnnamedConditionAreRefused) {
  const sc::claim ordx09("ORDX-09");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const bool proper = ordx09.mutated(sc::mutation_kind::arrangement);
  const sc::families::managed_word managed;
  wait_word mapped(0u, 0u);
  constexpr unsigned kUnnamedCondition = 0x7u;  // GEQ, EQ, AND and NOR are 0 to 3
  const CUresult on_managed =
      proper ? mapped.wait_in(s, 0u, CU_STREAM_WAIT_VALUE_GEQ)
             : sc::driver().cuStreamWaitValue32(s.get(), managed.address(), 0u, CU_STREAM_WAIT_VALUE_GEQ);
  const unsigned condition = proper ? static_cast<unsigned>(CU_STREAM_WAIT_VALUE_GEQ) : kUnnamedCondition;
  const CUresult unnamed = mapped.wait_in(s, 0u, condition);
  sc::observe("managed_memory", sc::error_name(on_managed));
  sc::observe("unnamed_condition", sc::error_name(unnamed));
  EXPECT_NE(CUDA_SUCCESS, on_managed) << "a wait on managed memory was taken";
  EXPECT_NE(CUDA_SUCCESS, unnamed) << "a wait with condition 0x7 was taken";
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
}

// ORDX-08 · DRV cuStreamWaitValue32 (observed: "improper use of this API may deadlock"; the scheduler may
// serialize streams the driver cannot see ordered): while s waits on a word, does a kernel launched afterwards
// in another stream run? Measured with a mark in t; the host store releases s whatever the answer.
TEST_F(OrderingExceptions, KernelOfAnotherStreamBesideAPendingWait) {
  const sc::claim ordx08("ORDX-08");
  SC_REQUIRE(sc::requirement::own_connection_count);  // one queue: t's mark would surely queue behind the wait
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  const bool same = ordx08.mutated(sc::mutation_kind::arrangement);
  wait_word w(0u, 1u);
  sc::marks m;
  ASSERT_TRUE(wait_then_mark(*this, w, s, m, 1u)) << "s did not reach its wait";
  drop(m, same ? s : t, 2);
  const bool ran = sc::wait_until(sc::probe::mark(m, 2), sc::kPresenceDeadline);
  w.store(1u);
  sc::families::finish_waiting(s);
  SC_CHECK_CUDA(sc::synchronize_within(t, sc::kWorkDeadline));
  EXPECT_TRUE(ordx08.matches_baseline("kernel_in_another_stream_runs", ran));
}

}  // namespace
