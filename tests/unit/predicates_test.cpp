// Host tests of the timeline predicates on synthetic spans, edge cases included.
#include "sc/fixtures/predicates.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "sc/fixtures/observe.hpp"

namespace {

using sc::clock_domain;
using sc::span;

span gt(std::uint64_t begin, std::uint64_t end, const char* label = "k") {
  return span{clock_domain::globaltimer, begin, end, label};
}
const sc::slack kNone{0, 32, "exact comparison"};
const sc::slack kTwoTicks{2, 32, "timer quantization at both ends"};

std::string message(const ::testing::AssertionResult& r) { return r.message(); }

TEST(Precedes, HoldsForDisjointOrderedSpans) { EXPECT_TRUE(sc::strictly_precedes(gt(0, 100), gt(200, 300), kNone)); }

TEST(Precedes, FailsForReversedSpans) { EXPECT_FALSE(sc::strictly_precedes(gt(200, 300), gt(0, 100), kNone)); }

TEST(Precedes, HoldsForTouchingSpans) { EXPECT_TRUE(sc::strictly_precedes(gt(0, 100), gt(100, 200), kNone)); }

TEST(Precedes, OverlapWithinSlackHoldsAndBeyondFails) {
  EXPECT_TRUE(sc::strictly_precedes(gt(0, 164), gt(100, 200), kTwoTicks));   // 64 ns = 2 ticks
  EXPECT_FALSE(sc::strictly_precedes(gt(0, 165), gt(100, 200), kTwoTicks));  // one ns more
}

TEST(Precedes, ZeroLengthSpansAreComparable) {
  EXPECT_TRUE(sc::strictly_precedes(gt(50, 50), gt(50, 50), kNone));
  EXPECT_FALSE(sc::strictly_precedes(gt(60, 60), gt(50, 50), kNone));
}

TEST(Precedes, NearTheEndOfTheClockDoesNotOverflow) {
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  EXPECT_TRUE(sc::strictly_precedes(gt(top - 10, top - 5), gt(top - 5, top), kTwoTicks));
  EXPECT_FALSE(sc::strictly_precedes(gt(top - 1, top), gt(0, 1), kTwoTicks));
}

TEST(Spans, DifferentClocksAreRefused) {
  const span host{clock_domain::host_steady, 0, 10, "host"};
  const auto r = sc::strictly_precedes(gt(0, 5), host, kNone);
  EXPECT_FALSE(r);
  EXPECT_NE(std::string::npos, message(r).find("different clocks")) << message(r);
  EXPECT_FALSE(sc::overlaps_by_at_least(gt(0, 10), host, 0, kNone));
}

TEST(Spans, MalformedSpanIsRefused) {
  const auto r = sc::overlaps_by_at_least(gt(10, 5), gt(0, 20), 0, kNone);
  EXPECT_FALSE(r);
  EXPECT_NE(std::string::npos, message(r).find("malformed")) << message(r);
}

TEST(Overlap, IsMeasuredAgainstTheRequiredLength) {
  EXPECT_TRUE(sc::overlaps_by_at_least(gt(0, 100), gt(50, 150), 50, kNone));
  EXPECT_FALSE(sc::overlaps_by_at_least(gt(0, 100), gt(50, 150), 51, kNone));
  EXPECT_TRUE(sc::overlaps_by_at_least(gt(0, 100), gt(50, 150), 100, kTwoTicks));  // 50 + 64 >= 100
}

TEST(Overlap, TouchingSpansOverlapByZero) {
  EXPECT_TRUE(sc::overlaps_by_at_least(gt(0, 100), gt(100, 200), 0, kNone));
  EXPECT_FALSE(sc::overlaps_by_at_least(gt(0, 100), gt(100, 200), 1, kNone));
}

TEST(Overlap, ContainedSpanOverlapsByItsLength) {
  const auto r = sc::overlaps_by_at_least(gt(0, 1000), gt(200, 300), 100, kNone);
  EXPECT_TRUE(r);
  EXPECT_NE(std::string::npos, message(r).find("overlap by 100 ns")) << message(r);
}

TEST(AllStartBeforeAny, HoldsWhenEveryFirstStartPrecedesEverySecondStart) {
  const std::vector<span> a{gt(0, 500), gt(10, 600), gt(20, 400)};
  const std::vector<span> b{gt(30, 700), gt(25, 800)};
  EXPECT_TRUE(sc::all_start_before_any(a, b, kNone));
}

TEST(AllStartBeforeAny, FailsWhenOneSecondStartIsEarlyAndNamesIt) {
  const std::vector<span> a{gt(0, 500, "a0"), gt(100, 600, "a1")};
  const std::vector<span> b{gt(300, 700, "b0"), gt(50, 800, "b1")};
  const auto r = sc::all_start_before_any(a, b, kNone);
  EXPECT_FALSE(r);
  EXPECT_NE(std::string::npos, message(r).find("a1")) << message(r);
  EXPECT_NE(std::string::npos, message(r).find("b1")) << message(r);
}

TEST(AllStartBeforeAny, RefusesEmptyGroups) {
  EXPECT_FALSE(sc::all_start_before_any({}, {gt(0, 1)}, kNone));
  EXPECT_FALSE(sc::all_start_before_any({gt(0, 1)}, {}, kNone));
}

TEST(BlockRecords, KernelSpanAndDispatchCompletion) {
  const std::vector<sc::kernels::block_record> records{
      {100, 900, 32, 0, 0, 132, 0}, {150, 950, 32, 1, 1, 132, 0}, {400, 800, 32, 2, 2, 132, 0}};
  const span k = sc::kernel_span(records, "spin");
  EXPECT_EQ(100u, k.begin_ns);
  EXPECT_EQ(950u, k.end_ns);
  EXPECT_EQ(400u, sc::dispatch_complete_ns(records));
  const auto blocks = sc::block_spans(records, "spin");
  ASSERT_EQ(3u, blocks.size());
  EXPECT_EQ("spin#2", blocks[2].label);
  EXPECT_EQ(0u, sc::kernel_span({}, "none").length_ns());
}

TEST(Messages, CarryBothSpansAndTheSlackReasonOnSuccess) {
  const auto r = sc::strictly_precedes(gt(0, 100, "first"), gt(200, 300, "second"), kTwoTicks);
  ASSERT_TRUE(r);
  const std::string text = message(r);
  EXPECT_NE(std::string::npos, text.find("first [globaltimer 0 .. 100, 100 ns]")) << text;
  EXPECT_NE(std::string::npos, text.find("second")) << text;
  EXPECT_NE(std::string::npos, text.find("timer quantization at both ends")) << text;
}

}  // namespace

namespace {

// Three-valued latch checks: an invalid check passes neither as "holds" nor as "does not hold".
using sc::held_outcome;
using sc::held_result;

TEST(HeldResult, HoldsPassesOnlyTheClaimThatItHolds) {
  const held_result r(held_outcome::holds, "mark 1 stayed absent");
  EXPECT_TRUE(r);
  EXPECT_FALSE(sc::does_not_hold(r));
}

TEST(HeldResult, DoesNotHoldPassesOnlyTheNegativeClaim) {
  const held_result r(held_outcome::does_not_hold, "mark 1 landed");
  EXPECT_FALSE(static_cast<::testing::AssertionResult>(r));
  EXPECT_TRUE(sc::does_not_hold(r));
}

TEST(HeldResult, InvalidPassesNeitherClaimAndSaysWhy) {
  const held_result r(held_outcome::invalid, "the latch was ended by its watchdog");
  const ::testing::AssertionResult as_holds = r;
  const ::testing::AssertionResult as_not = sc::does_not_hold(r);
  EXPECT_FALSE(as_holds);
  EXPECT_FALSE(as_not);
  EXPECT_NE(std::string::npos, message(as_holds).find("invalid check: the latch was ended by its watchdog"));
  EXPECT_NE(std::string::npos, message(as_not).find("invalid check"));
  EXPECT_FALSE(r.valid());
}

TEST(HeldResult, AnInvalidObservedRowFailsAndIsComparedWithNothing) {
  const ::testing::AssertionResult row =
      sc::detail::observed_row("UNIT-NEVER", "k", held_result(held_outcome::invalid, "the latch was opened"));
  EXPECT_FALSE(row);
  EXPECT_NE(std::string::npos, message(row).find("could not be measured: the latch was opened")) << message(row);
}

TEST(HeldResult, BoundedAttemptsStopAtTheFirstHoldAndAtTheFirstInvalid) {
  int calls = 0;
  const sc::observation held = sc::measure_within(3, [&] {
    ++calls;
    return held_result(calls == 2 ? held_outcome::holds : held_outcome::does_not_hold, "try");
  });
  EXPECT_EQ(2, held.attempts);
  EXPECT_EQ(held_outcome::holds, held.last.outcome());
  calls = 0;
  const sc::observation invalid = sc::measure_within(3, [&] {
    ++calls;
    return held_result(held_outcome::invalid, "watchdog");
  });
  EXPECT_EQ(1, invalid.attempts) << "an invalid trial is not retried";
  EXPECT_EQ(held_outcome::invalid, invalid.last.outcome());
  const sc::observation never = sc::measure_within(3, [] { return held_result(held_outcome::does_not_hold, "no"); });
  EXPECT_EQ(3, never.attempts);
}

}  // namespace
