// Sample tests for the fast-mode host check (fast_mode_check.py), not a family: run one at a time they
// give GoogleTest's own XML, run together in fast mode the listener's; the check compares the two. Some
// fail or skip on purpose. `Breaking.*` simulates a sticky error (the hook GpuTest uses) when
// SC_SAMPLE_BREAK=1, so the not-run results can be checked without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "sc/fixtures/fast_mode.hpp"

namespace {

TEST(Sample, PassesWithProperties) {
  ::testing::Test::RecordProperty("catalog_id", "PRIO-01");
  ::testing::Test::RecordProperty("verdict_kind", "documented");
  ::testing::Test::RecordProperty("doc_source", "RT <cudaStreamCreate> & \"quotes\" 'apostrophes'\tand\nlines");
  ::testing::Test::RecordProperty("baseline.PRIO-01.range", "match");
  ::testing::Test::RecordProperty("count", 42);
}

TEST(Sample, PassesWithoutProperties) {}

TEST(Sample, FailsWithMarkupInTheMessage) {
  ::testing::Test::RecordProperty("catalog_id", "EVT-02");
  EXPECT_EQ(1, 2) << "a <message> with & and ]]> inside, \"quoted\"";
  ADD_FAILURE() << "a second failure\nover two lines";
}

TEST(Sample, SkipsWithAReason) {
  ::testing::Test::RecordProperty("catalog_id", "HOST-15");
  GTEST_SKIP() << "no usable CUDA device: simulated <skip> & reason";
}

TEST(Sample, FailsThenSkips) {
  ADD_FAILURE() << "failed first";
  GTEST_SKIP() << "then skipped";
}

class SampleFixture : public ::testing::TestWithParam<int> {};
TEST_P(SampleFixture, Parameterized) { ::testing::Test::RecordProperty("param", GetParam()); }
INSTANTIATE_TEST_SUITE_P(Values, SampleFixture, ::testing::Values(1, 2));

TEST(Breaking, RunsFirst) {}

TEST(Breaking, LeavesTheProcessUnusable) {
  if (const char* v = std::getenv("SC_SAMPLE_BREAK"); v != nullptr && std::string(v) == "1")
    sc::note_process_broken("cudaDeviceSynchronize returned cudaErrorIllegalAddress (simulated sticky error)");
}

TEST(Breaking, WouldRunNext) {}

TEST(Breaking, WouldRunLast) {}

TEST(AllSkipped, One) { GTEST_SKIP() << "skipped one"; }

TEST(AllSkipped, Two) { GTEST_SKIP() << "skipped two"; }

}  // namespace
