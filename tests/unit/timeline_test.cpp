// Host tests of the observation layer's arithmetic: clock fitting, CUPTI records -> timeline (labels,
// streams, markers, memory kinds, block records), and the JSON round trip.
#include "sc/fixtures/timeline.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "sc/fixtures/predicates.hpp"

namespace {

using sc::activity;
using sc::activity_kind;

activity kernel(std::uint32_t corr, std::uint32_t stream, std::uint64_t start, std::uint64_t end) {
  activity a;
  a.kind = activity_kind::kernel;
  a.correlation_id = corr;
  a.stream_id = stream;
  a.start_ns = start;
  a.end_ns = end;
  a.name = "spin_kernel";
  return a;
}

activity link(std::uint32_t corr, std::uint64_t external) {
  activity a;
  a.kind = activity_kind::external_correlation;
  a.correlation_id = corr;
  a.external_id = external;
  return a;
}

activity marker(std::uint32_t id, std::uint32_t flags, std::uint64_t t, const char* name) {
  activity a;
  a.kind = activity_kind::marker;
  a.marker_id = id;
  a.marker_flags = flags;
  a.start_ns = a.end_ns = t;
  a.name = name;
  a.domain = "streamcheck";
  return a;
}

TEST(ClockFit, OffsetIsTheMiddleOfWhatEveryKernelAllows) {
  // Starts say the offset is at least 990..1004, ends that it is at most 1012..1500: [1004, 1012].
  const sc::clock_map m = sc::fit_clock({1000, 1004, 990}, {1012, 1500, 1030});
  ASSERT_TRUE(m.valid);
  EXPECT_TRUE(m.consistent);
  EXPECT_EQ(1008, m.offset_ns);
  EXPECT_EQ(4u, m.residual_ns);
  EXPECT_EQ(6u, m.samples);
}

TEST(ClockFit, AnyKernelsBlocksLieInsideItsInterval) {
  // The true offset is 500; launch latencies 300..2000 ns at the start and 200..900 ns at the end. A kernel
  // that starts quicker than any of the fit's still lands inside its CUPTI interval within the residual.
  const long long truth = 500;
  const sc::clock_map m =
      sc::fit_clock({truth - 2000, truth - 300, truth - 1200}, {truth + 900, truth + 200, truth + 400});
  const std::uint64_t t0 = 1'000'000, t1 = 3'000'000;
  const std::uint64_t cupti_start = t0 + truth - 50, cupti_end = t1 + truth + 60;  // quicker than any above
  EXPECT_GE(m.to_cupti(t0) + m.residual_ns, cupti_start);
  EXPECT_LE(m.to_cupti(t1), cupti_end + m.residual_ns);
}

TEST(ClockFit, ContradictingClocksAreNotConsistentAndTheResidualSaysByHowMuch) {
  const sc::clock_map m = sc::fit_clock({1000, 3000}, {2000, 2500});
  ASSERT_TRUE(m.valid);
  EXPECT_FALSE(m.consistent);  // a start needs at least 3000, an end allows at most 2000
  EXPECT_EQ(2500, m.offset_ns);
  EXPECT_EQ(500u, m.residual_ns);
}

TEST(ClockFit, EmptyOrUnpairedIsInvalidAndOddSumsRoundDown) {
  EXPECT_FALSE(sc::fit_clock({}, {}).valid);
  EXPECT_FALSE(sc::fit_clock({1}, {}).valid);
  EXPECT_EQ(-21, sc::fit_clock({-21}, {-20}).offset_ns);
  EXPECT_EQ(1u, sc::fit_clock({-21}, {-20}).residual_ns);
  EXPECT_EQ(10, sc::fit_clock({10}, {11}).offset_ns);
}

TEST(ClockFit, ConversionHandlesNegativeOffsets) {
  const sc::clock_map m = sc::fit_clock({-60'000}, {-60'000});
  EXPECT_EQ(940'000u, m.to_cupti(1'000'000));
  EXPECT_EQ(0u, m.residual_ns);
}

TEST(BuildTimeline, LabelsComeFromExternalCorrelationAndStreamsFromTheMap) {
  sc::timeline_inputs in;
  in.labels = {{1, "k1"}, {2, "k2"}};
  in.streams = {{13, "s1"}};
  const std::vector<activity> records{link(100, 1), kernel(100, 13, 500, 900), link(101, 2), kernel(101, 14, 100, 400),
                                      kernel(102, 13, 1000, 1100)};
  const sc::timeline t = sc::build_timeline(records, in);
  ASSERT_EQ(3u, t.items.size());
  EXPECT_EQ("k2", t.items[0].label);  // sorted by start
  EXPECT_EQ("cupti:14", t.items[0].stream);
  EXPECT_EQ("k1", t.items[1].label);
  EXPECT_EQ("s1", t.items[1].stream);
  EXPECT_EQ("", t.items[2].label);
  EXPECT_EQ(1u, t.unlabelled_records);
  ASSERT_EQ(1u, t.labelled("k1").size());
}

TEST(BuildTimeline, ExternalIdsWithoutALabelStayUnlabelled) {
  sc::timeline_inputs in;
  const sc::timeline t = sc::build_timeline({link(7, 99), kernel(7, 1, 0, 1)}, in);
  EXPECT_EQ("", t.items.at(0).label);
}

TEST(BuildTimeline, MarkersPairIntoRangesAndInstantsAreZeroLength) {
  const std::vector<activity> records{marker(5, 2, 100, "Suite.Test"), marker(6, 1, 150, "instant"),
                                      marker(7, 2, 160, "open"), marker(5, 4, 900, "")};
  const sc::timeline t = sc::build_timeline(records, {});
  ASSERT_NE(nullptr, t.range("Suite.Test"));
  EXPECT_EQ(100u, t.range("Suite.Test")->start_ns);
  EXPECT_EQ(900u, t.range("Suite.Test")->end_ns);
  EXPECT_EQ(t.range("instant")->start_ns, t.range("instant")->end_ns);
  EXPECT_EQ(0u, t.range("open")->end_ns) << "an unmatched START stays open";
  EXPECT_EQ("streamcheck", t.range("open")->domain);
}

TEST(BuildTimeline, CopiesCarryTheirKindsAndBytes) {
  activity copy;
  copy.kind = activity_kind::memcpy;
  copy.copy_kind = 1;
  copy.src_kind = 2;
  copy.dst_kind = 3;
  copy.bytes = 4096;
  copy.start_ns = 10;
  copy.end_ns = 20;
  activity pageable = copy;
  pageable.src_kind = 1;
  const sc::timeline t = sc::build_timeline({copy, pageable}, {});
  EXPECT_EQ("HtoD", t.items[0].copy_kind);
  EXPECT_EQ("pinned", t.items[0].src_kind);
  EXPECT_EQ("device", t.items[0].dst_kind);
  EXPECT_EQ(4096u, t.items[0].bytes);
  EXPECT_EQ("pageable", t.items[1].src_kind);
  EXPECT_STREQ("unknown", sc::memcpy_kind_name(42));
}

TEST(BuildTimeline, BlockRecordsMoveOntoTheCuptiClock) {
  sc::timeline_inputs in;
  in.labels = {{1, "spin"}};
  in.clock = sc::fit_clock({-1000}, {-1000});
  in.blocks["spin"] = {{5000, 9000, 32, 3, 3, 132, 0}};
  const sc::timeline t = sc::build_timeline({link(1, 1), kernel(1, 2, 3990, 8010)}, in);
  ASSERT_EQ(1u, t.items[0].blocks.size());
  EXPECT_EQ(4000u, t.items[0].blocks[0].t0_ns);
  EXPECT_EQ(8000u, t.items[0].blocks[0].t1_ns);
  // The block lies within its kernel's CUPTI interval on the common clock.
  const sc::span k = sc::as_span(t.items[0]);
  const sc::span b{sc::clock_domain::cupti, 4000, 8000, "block"};
  EXPECT_TRUE(sc::overlaps_by_at_least(k, b, 4000, sc::slack{0, 32, "exact"}));
}

TEST(BuildTimeline, WithoutAClockMapBlockRecordsAreNotMixedIn) {
  sc::timeline_inputs in;
  in.labels = {{1, "spin"}};
  in.blocks["spin"] = {{5000, 9000, 32, 3, 3, 132, 0}};
  const sc::timeline t = sc::build_timeline({link(1, 1), kernel(1, 2, 0, 1)}, in);
  EXPECT_TRUE(t.items[0].blocks.empty()) << "globaltimer stamps must not be shown on the CUPTI clock unconverted";
}

TEST(TimelineJson, RoundTripKeepsItemsRangesAndBlocks) {
  sc::timeline_inputs in;
  in.labels = {{1, "k1"}};
  in.streams = {{13, "s1"}};
  in.clock = sc::fit_clock({0}, {0});
  in.blocks["k1"] = {{10, 20, 1, 4, 4, 132, 0}};
  const sc::timeline before =
      sc::build_timeline({link(1, 1), kernel(1, 13, 5, 25), marker(1, 2, 1, "r"), marker(1, 4, 30, "")}, in);
  const nlohmann::json j = nlohmann::json::parse(sc::to_json(before, in.clock).dump());
  EXPECT_EQ("cupti", j["clock"]);
  EXPECT_EQ(true, j["clock_map"]["consistent"]);
  EXPECT_EQ(false,
            nlohmann::json::parse(sc::to_json(before, sc::fit_clock({5}, {0})).dump())["clock_map"]["consistent"]);
  const sc::timeline after = sc::timeline_from_json(j);
  ASSERT_EQ(1u, after.items.size());
  EXPECT_EQ("k1", after.items[0].label);
  EXPECT_EQ("s1", after.items[0].stream);
  EXPECT_EQ(25u, after.items[0].end_ns);
  ASSERT_EQ(1u, after.items[0].blocks.size());
  EXPECT_EQ(4u, after.items[0].blocks[0].sm_begin);
  ASSERT_NE(nullptr, after.range("r"));
  EXPECT_EQ(30u, after.range("r")->end_ns);
}

TEST(Attribution, OnlyRecordsGivenToTheBuilderBelongToTheTest) {
  // The recorder drops everything flushed before the test began; the builder sees only the test's.
  sc::timeline_inputs in;
  in.labels = {{1, "mine"}};
  const sc::timeline t = sc::build_timeline({link(9, 1), kernel(9, 1, 100, 200)}, in);
  ASSERT_EQ(1u, t.items.size());
  EXPECT_EQ("mine", t.items[0].label);
}

}  // namespace
