// Host tests of the run's context-facts file (context_facts.hpp): written whole, once per run and GPU, and a
// write that cannot happen says why instead of throwing.
#include "sc/runner/context_facts.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

namespace fs = std::filesystem;

class ContextFacts : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = fs::temp_directory_path() / ("sc-context-facts-" + std::to_string(getpid()));
    fs::remove_all(run_);
    fs::create_directories(run_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(run_, ec);
  }
  nlohmann::json read(const std::string& uuid) const {
    std::ifstream in(sc::context_facts_path(run_.string(), uuid));
    return nlohmann::json::parse(in);
  }
  fs::path run_;
};

TEST_F(ContextFacts, TheFirstWriterOfAGpuKeepsTheFileAndNothingElseIsLeft) {
  const std::string uuid(32, 'a');
  EXPECT_EQ(sc::context_facts_path(run_.string(), uuid), (run_ / "gpu" / (uuid + ".json")).string());
  EXPECT_EQ("", sc::record_context_facts(run_.string(), uuid, {{"timer_tick_ns", 32}}, "family.Suite.First"));
  EXPECT_EQ("", sc::record_context_facts(run_.string(), uuid, {{"timer_tick_ns", 1000}}, "family.Suite.Second"));
  const nlohmann::json facts = read(uuid);
  EXPECT_EQ("family.Suite.First", facts.value("measured_by", ""));
  EXPECT_EQ(32, facts.value("timer_tick_ns", 0));
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(run_ / "gpu")) files += entry.is_regular_file() ? 1 : 0;
  EXPECT_EQ(1u, files) << "a .part file was left";
  // Another GPU of the run has a file of its own.
  EXPECT_EQ("", sc::record_context_facts(run_.string(), std::string(32, 'b'), {{"timer_tick_ns", 32}}, "x"));
  EXPECT_EQ("x", read(std::string(32, 'b')).value("measured_by", ""));
}

TEST_F(ContextFacts, AWriteThatCannotHappenSaysWhy) {
  // A folder stands where this process's temporary file would be written (root cannot write there either).
  const std::string uuid(32, 'c');
  fs::create_directories(sc::context_facts_path(run_.string(), uuid) + "." + std::to_string(getpid()) + ".part");
  const std::string problem = sc::record_context_facts(run_.string(), uuid, {{"a", 1}}, "t");
  EXPECT_NE(std::string::npos, problem.find("cannot write")) << problem;
  EXPECT_FALSE(fs::exists(sc::context_facts_path(run_.string(), uuid)));
}

TEST_F(ContextFacts, AFolderThatCannotBeMadeSaysWhy) {
  // A file stands where the gpu folder would be.
  std::ofstream(run_ / "gpu") << "not a folder";
  const std::string problem = sc::record_context_facts(run_.string(), std::string(32, 'd'), {{"a", 1}}, "t");
  EXPECT_NE(std::string::npos, problem.find("cannot create")) << problem;
}

}  // namespace
