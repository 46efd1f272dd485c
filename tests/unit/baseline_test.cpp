// Host tests of the baseline files themselves: every entry says what it expects, whether it is gating,
// where the value comes from, why it is gating (or not) and whether a driver update may flip it.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sc/fixtures/observe.hpp"
#include "sc/fixtures/predicates.hpp"

namespace {

TEST(BaselineFiles, EveryEntrySaysWhyItIsGatingAndWhetherADriverMayFlipIt) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(SC_SOURCE_DIR) / "baselines";  // the tree this binary was built from
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  int files = 0;
  int entries = 0;
  for (const auto& item : fs::directory_iterator(dir)) {
    if (item.path().extension() != ".json") continue;
    ++files;
    SCOPED_TRACE(item.path().string());
    std::ifstream in(item.path());
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(doc.is_discarded()) << "not valid JSON";
    EXPECT_EQ("streamcheck.baseline", doc.value("schema", ""));
    EXPECT_EQ("sm_", doc.value("arch", "").substr(0, 3));
    ASSERT_TRUE(doc.contains("entries") && doc["entries"].is_object());
    for (const auto& [id, rows] : doc["entries"].items()) {
      for (const auto& [key, row] : rows.items()) {
        ++entries;
        const std::string where = id + "/" + key;
        EXPECT_TRUE(row.contains("expected")) << where;
        EXPECT_TRUE(row.contains("gating") && row["gating"].is_boolean()) << where;
        EXPECT_TRUE(row.contains("driver_may_flip") && row["driver_may_flip"].is_boolean()) << where;
        EXPECT_FALSE(row.value("why", "").empty()) << where << ": where the value comes from";
        EXPECT_FALSE(row.value("gating_reason", "").empty()) << where << ": why it is gating or not";
      }
    }
  }
  EXPECT_GT(files, 0) << "no baseline file in " << dir;
  EXPECT_GT(entries, 0);
}

// STREAMCHECK_SANITIZER set for one scope, as ci/sanitizer.sh sets it for a test process.
struct under_tool {
  explicit under_tool(const char* tool) { ::setenv("STREAMCHECK_SANITIZER", tool, 1); }
  ~under_tool() { ::unsetenv("STREAMCHECK_SANITIZER"); }
};

bool contains(const std::vector<std::string>& rows, const std::string& row) {
  for (const std::string& r : rows)
    if (r == row) return true;
  return false;
}

// Under a compute-sanitizer tool a baseline row is recorded and not compared: not a failure, whatever the
// value, and noted with the tool's reason (a test whose claims are all observed then ends skipped with it).
TEST(BaselineRows, UnderAToolTheyAreRecordedNotCompared) {
  const under_tool tool("racecheck");
  const ::testing::AssertionResult row = sc::detail::matches_baseline("PRIO-01", "unit.under_tool", true);
  EXPECT_TRUE(row);
  EXPECT_NE(std::string::npos, std::string(row.message()).find("not compared")) << row.message();
  EXPECT_TRUE(contains(sc::detail::not_compared_rows(), "PRIO-01/unit.under_tool"));
  EXPECT_NE(std::string::npos, sc::detail::not_compared_reason().find("--tool racecheck"));
}

// An observed check that could not be measured fails, except under a tool, where it is noted as not compared.
TEST(BaselineRows, AnInvalidObservedCheckFailsUnlessUnderATool) {
  const sc::held_result invalid = sc::invalid_check("the latch was ended by its watchdog");
  EXPECT_FALSE(sc::detail::observed_row("PRIO-01", "unit.invalid_plain", invalid));
  const under_tool tool("synccheck");
  EXPECT_TRUE(sc::detail::observed_row("PRIO-01", "unit.invalid_tool", invalid));
  EXPECT_TRUE(contains(sc::detail::not_compared_rows(), "PRIO-01/unit.invalid_tool (could not be measured)"));
}

}  // namespace

namespace {

// "Not judged" is decided row by row: an observed claim with a row that had no baseline is listed whatever
// else the test claims (a documented claim asserted keeps the test's verdict, not that claim's), and a
// documented claim's own rows never make it "not judged".
TEST(BaselineRows, UnjudgedClaimsAreTheObservedOnesWithAnUnjudgedRow) {
  const nlohmann::json claims = nlohmann::json::parse(
      R"([{"id": "SCHED-13", "kind": "documented"}, {"id": "CAPT-01", "kind": "observed"},
          {"id": "SCHED-12", "kind": "observed"}])");
  const std::map<std::string, std::string> unjudged{{"CAPT-01", "no baseline: no file sm_100.json"},
                                                    {"SCHED-13", "no baseline: no file sm_100.json"}};
  const nlohmann::json found = sc::detail::unjudged_claims(claims, unjudged);
  ASSERT_EQ(1u, found.size()) << found.dump();
  EXPECT_EQ("CAPT-01", found[0]["id"]);
  EXPECT_EQ("no baseline: no file sm_100.json", found[0]["reason"]);
}

}  // namespace

namespace {

// One row against a baseline file: a gating entry that differs fails, a non-gating one is recorded as
// differing and passes, a missing entry or file is not judged (never a pass of the row, never a failure).
TEST(BaselineRows, GatingDiffersFailsNotGatingShowsAndMissingIsNotJudged) {
  const nlohmann::json doc = nlohmann::json::parse(R"({"entries": {"X-01": {
      "latches": {"expected": true, "gating": true, "gating_reason": "r"},
      "informs": {"expected": 3, "gating": false}}}})");
  const auto row = [&](const std::string& key, const nlohmann::json& value) {
    return sc::detail::compare_with_baseline(doc, "sm_90.json", "X-01", key, value);
  };
  const sc::detail::baseline_row differs_gating = row("latches", false);
  EXPECT_TRUE(differs_gating.fails);
  EXPECT_EQ("differs-gating", differs_gating.row["status"]);
  EXPECT_EQ("r", differs_gating.row["gating_reason"]);
  EXPECT_NE(std::string::npos, differs_gating.text.find("gating")) << differs_gating.text;
  EXPECT_FALSE(row("latches", true).fails);
  EXPECT_EQ("match", row("latches", true).row["status"]);
  const sc::detail::baseline_row differs = row("informs", 4);
  EXPECT_FALSE(differs.fails);
  EXPECT_EQ("differs", differs.row["status"]);
  EXPECT_EQ(3, differs.row["expected"]);
  EXPECT_EQ("differs", row("informs", true).row["status"]) << "a boolean never equals a number";
  const sc::detail::baseline_row missing = row("absent", 1);
  EXPECT_FALSE(missing.fails);
  EXPECT_EQ("no-entry", missing.row["status"]);
  const sc::detail::baseline_row no_file =
      sc::detail::compare_with_baseline(nullptr, "sm_100.json", "X-01", "latches", true);
  EXPECT_FALSE(no_file.fails);
  EXPECT_EQ("no-baseline", no_file.row["status"]);
  EXPECT_EQ("no file sm_100.json", no_file.row["detail"]);
}

}  // namespace

namespace {

// A recorded claim's row is shown, never judged (and listed for the test's skip message). Its claims reach the
// XML only when the record ends (take_result): this test never ends its record, so it puts no claim into a
// run's evidence.
TEST(BaselineRows, RecordedRowsAreShownNeverJudged) {
  sc::detail::begin_record("Unit.Recorded", "unit.Unit.Recorded");
  const sc::claim recorded("SCHED-12", sc::verdict_kind::recorded, "unit");
  const ::testing::AssertionResult shown = recorded.matches_baseline("unit.recorded", 7);
  EXPECT_TRUE(shown);
  EXPECT_NE(std::string::npos, std::string(shown.message()).find("(recorded)")) << shown.message();
  EXPECT_TRUE(contains(sc::detail::recorded_rows(), "SCHED-12/unit.recorded = 7"));
  EXPECT_TRUE(sc::has_claim_of_kind(sc::verdict_kind::recorded));
  EXPECT_FALSE(sc::has_claim_of_kind(sc::verdict_kind::documented));
  const ::testing::TestResult& result = *::testing::UnitTest::GetInstance()->current_test_info()->result();
  for (int i = 0; i < result.test_property_count(); ++i)
    EXPECT_NE(std::string("catalog_id"), result.GetTestProperty(i).key()) << "a claim reached the XML";
  // The next test starts with none of it.
  sc::detail::begin_record("Unit.Next", "unit.Unit.Next");
  EXPECT_TRUE(sc::detail::recorded_rows().empty());
}

}  // namespace

// A claim takes its kind and source from its plan row (cmake/plan_rows.py): an ID no plan has, a row of several
// kinds claimed without one, and a kind the row does not name each fail the test that claims it.
TEST(PlanClaims, KindAndSourceComeFromThePlanRow) {
  const auto row_of = [](const std::string& id) -> const sc::detail::plan_row* {
    for (std::size_t i = 0; i < sc::detail::kPlanRowCount; ++i)
      if (id == sc::detail::kPlanRows[i].id) return &sc::detail::kPlanRows[i];
    return nullptr;
  };
  ASSERT_NE(nullptr, row_of("CAPT-01"));
  EXPECT_STREQ("documented", row_of("CAPT-01")->kind);
  EXPECT_NE(std::string::npos, std::string(row_of("DFLT-18")->kind).find(" / ")) << "a row of two kinds";
  EXPECT_NONFATAL_FAILURE(sc::claim("NOPLAN-1"), "no test plan");
  EXPECT_NONFATAL_FAILURE(sc::claim("DFLT-18"), "name the kind this test proves");
  EXPECT_NONFATAL_FAILURE(sc::claim("CAPT-01", sc::verdict_kind::observed), "which does not name observed");
  const sc::claim one("CAPT-01");
  const sc::claim chosen("DFLT-18", sc::verdict_kind::observed);
  EXPECT_EQ("DFLT-18", chosen.id());
}
