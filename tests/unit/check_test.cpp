// Host tests of the two error channels and of the test main's argument handling.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/gate.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/observe.hpp"
#include "sc/fixtures/run_context.hpp"

namespace {

TEST(ErrorChannels, SetupFailureNamesCallFileLineAndError) {
  try {
    SC_CHECK_CUDA(cudaErrorInvalidValue);
    FAIL() << "SC_CHECK_CUDA did not throw";
  } catch (const sc::cuda_error& e) {
    const std::string text = e.what();
    EXPECT_EQ(cudaErrorInvalidValue, e.code());
    EXPECT_NE(std::string::npos, text.find("check_test.cpp:")) << text;
    EXPECT_NE(std::string::npos, text.find("cudaErrorInvalidValue")) << text;
  }
}

TEST(ErrorChannels, SuccessDoesNotThrow) { EXPECT_NO_THROW(SC_CHECK_CUDA(cudaSuccess)); }

TEST(ErrorChannels, AssertionPrintsExpectedAndActualNames) {
  const auto r = sc::cuda_code_is("cudaErrorNotReady", "query()", cudaErrorNotReady, cudaSuccess);
  EXPECT_FALSE(r);
  const std::string text = r.message();
  EXPECT_NE(std::string::npos, text.find("query() returned cudaSuccess, expected cudaErrorNotReady")) << text;
  EXPECT_TRUE(sc::cuda_code_is("a", "b", cudaErrorNotReady, cudaErrorNotReady));
}

TEST(ErrorChannels, UnknownRuntimeCodeIsPrintedAsANumber) {
  volatile int unnamed = 54321;  // no cudaError_t has this value
  EXPECT_EQ("cudaError_t(54321)", sc::error_name(static_cast<cudaError_t>(unnamed)));
}

TEST(ErrorChannels, DriverErrorCarriesTheCode) {
  const sc::driver_error e(CUDA_ERROR_INVALID_VALUE, "cuStreamCreate(nullptr, 0)", "f.cpp", 7);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, e.code());
  const std::string text = e.what();
  EXPECT_NE(std::string::npos, text.find("f.cpp:7: cuStreamCreate(nullptr, 0) -> ")) << text;
  // With a driver the name is CUDA_ERROR_INVALID_VALUE; without one the number.
  EXPECT_TRUE(text.find("CUDA_ERROR_INVALID_VALUE") != std::string::npos || text.find("CUresult(1)") != std::string::npos)
      << text;
}

TEST(Mutation, InactiveMutationReturnsTheRealValue) {
  // The suite's own CI runs without STREAMCHECK_MUTATE; the mutation job sets it per catalog ID.
  if (sc::mutation_active("UNIT-NEVER", sc::mutation_kind::arrangement))
    FAIL() << "no catalog ID UNIT-NEVER exists to mutate";
  EXPECT_EQ(4, sc::mutate("UNIT-NEVER", sc::mutation_kind::expectation, 4, 5));
  EXPECT_STREQ("arrangement", sc::to_string(sc::mutation_kind::arrangement));
  EXPECT_STREQ("expectation", sc::to_string(sc::mutation_kind::expectation));
}

TEST(TestMain, StreamcheckArgumentsAreTakenOutOfArgv) {
  std::vector<std::string> storage{"exe", "--streamcheck-results=/tmp/r", "--gtest_brief=1",
                                   "--streamcheck-source=/src", "--streamcheck-prefix=fam."};
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(storage.size());
  const sc::run_context saved = sc::context();
  EXPECT_EQ("", sc::take_streamcheck_arguments(argc, argv.data()));
  EXPECT_EQ(2, argc);
  EXPECT_STREQ("--gtest_brief=1", argv[1]);
  EXPECT_EQ("/tmp/r", sc::context().results_dir);
  EXPECT_EQ("/src", sc::context().source_dir);
  EXPECT_EQ("fam.", sc::context().test_prefix);
  sc::context() = saved;
}

// The environment entry's name and the variable it sets arrive apart; the longer option is not mistaken
// for the shorter one.
TEST(TestMain, VariantAndTheVariableItSetsAreTakenApart) {
  std::vector<std::string> storage{"exe", "--streamcheck-variant-sets=CUDA_LAUNCH_BLOCKING",
                                   "--streamcheck-variant=launch_blocking"};
  std::vector<char*> argv{storage[0].data(), storage[1].data(), storage[2].data(), nullptr};
  int argc = 3;
  const sc::run_context saved = sc::context();
  EXPECT_EQ("", sc::take_streamcheck_arguments(argc, argv.data()));
  EXPECT_EQ(1, argc);
  EXPECT_EQ("launch_blocking", sc::context().env_variant);
  EXPECT_EQ("CUDA_LAUNCH_BLOCKING", sc::context().env_variant_sets);
  sc::context() = saved;
}

TEST(TestMain, FirstFilterIsTaken) {
  std::vector<std::string> storage{"exe", "--streamcheck-first=*.Fresh*:*.Other", "--streamcheck-mode=fast"};
  std::vector<char*> argv{storage[0].data(), storage[1].data(), storage[2].data(), nullptr};
  int argc = 3;
  const sc::run_context saved = sc::context();
  EXPECT_EQ("", sc::take_streamcheck_arguments(argc, argv.data()));
  EXPECT_EQ(1, argc);
  EXPECT_EQ("*.Fresh*:*.Other", sc::context().first_filter);
  sc::context() = saved;
}

// The filters the suite writes (StreamcheckFamily.cmake) select what GoogleTest's own matcher selects.
TEST(FilterSelects, GoogleTestFilterSyntax) {
  EXPECT_TRUE(sc::filter_selects("*", "A.b"));
  EXPECT_FALSE(sc::filter_selects("", "A.b"));
  EXPECT_TRUE(sc::filter_selects("*.FreshStreams*", "DefaultStreams.FreshStreamsBehindBusyStreams"));
  EXPECT_FALSE(sc::filter_selects("*.FreshStreams*", "DefaultStreams.OversubscribedStreams"));
  EXPECT_TRUE(sc::filter_selects("*.Over*:*.Fresh*", "DefaultStreams.FreshStreams"));
  EXPECT_TRUE(sc::filter_selects("A.?c", "A.bc"));
  EXPECT_FALSE(sc::filter_selects("A.?c", "A.c"));
  EXPECT_FALSE(sc::filter_selects("*-*.Fresh*", "DefaultStreams.FreshStreams"));
  EXPECT_TRUE(sc::filter_selects("*-*.Fresh*:*.First*", "DefaultStreams.Other"));
  EXPECT_FALSE(sc::filter_selects("-*.First*", "DefaultStreams.FirstLaunch"));
  EXPECT_TRUE(sc::filter_selects("-*.First*", "DefaultStreams.Other"));
  EXPECT_TRUE(sc::filter_selects("a*b*c", "axxbyyc"));
  EXPECT_FALSE(sc::filter_selects("a*b*c", "axxbyy"));
  EXPECT_FALSE(sc::filter_selects("A.b", "A.bc"));
}

TEST(TestMain, UnknownStreamcheckOptionIsAnError) {
  std::vector<std::string> storage{"exe", "--streamcheck-result=/tmp/r"};
  std::vector<char*> argv{storage[0].data(), storage[1].data(), nullptr};
  int argc = 2;
  const std::string problem = sc::take_streamcheck_arguments(argc, argv.data());
  EXPECT_NE(std::string::npos, problem.find("--streamcheck-result=/tmp/r")) << problem;
}

}  // namespace

namespace {

// A gate whose watchdog fired fails the test that held it, unless the firing was expected (a silent
// gate in a test of the watchdog itself); both are recorded as evidence.
TEST(WatchdogEvidence, AnUnexpectedFiringFailsTheTestAndIsRecorded) {
  sc::fired_gate banner;
  banner.index = 3;
  banner.where = "s1";
  banner.watchdog = std::chrono::milliseconds{2000};
  banner.waited_ns = 2'000'100'000;
  sc::fired_gate silent = banner;
  silent.index = 4;
  silent.expected = true;
  nlohmann::json evidence;
  EXPECT_NONFATAL_FAILURE(evidence = sc::detail::judge_fired_gates({banner, silent}), "the watchdog of gate 3");
  ASSERT_EQ(2u, evidence.size());
  EXPECT_EQ(false, evidence[0]["expected"]);
  EXPECT_EQ("s1", evidence[0]["held"]);
  EXPECT_EQ(2000, evidence[0]["watchdog_ms"]);
  EXPECT_EQ(true, evidence[1]["expected"]);
}

TEST(WatchdogEvidence, AnExpectedFiringIsRecordedWithoutAFailure) {
  sc::fired_gate silent;
  silent.expected = true;
  const nlohmann::json evidence = sc::detail::judge_fired_gates({silent});
  EXPECT_EQ(1u, evidence.size());
}

}  // namespace
