// Host tests of the two error channels and of the test main's argument handling.
#include "sc/fixtures/check.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/latch.hpp"
#include "sc/fixtures/observe.hpp"
#include "sc/runner/run_context.hpp"

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
  EXPECT_TRUE(text.find("CUDA_ERROR_INVALID_VALUE") != std::string::npos ||
              text.find("CUresult(1)") != std::string::npos)
      << text;
}

TEST(Mutation, InactiveMutationReturnsTheRealValue) {
  // The suite's own CI runs without STREAMCHECK_MUTATE; the mutation job sets it per catalog ID.
  if (sc::detail::mutation_active("UNIT-NEVER", sc::mutation_kind::arrangement))
    FAIL() << "no catalog ID UNIT-NEVER exists to mutate";
  EXPECT_STREQ("arrangement", sc::to_string(sc::mutation_kind::arrangement));
  EXPECT_STREQ("expectation", sc::to_string(sc::mutation_kind::expectation));
}

// What take_streamcheck_arguments made of a command line ("exe" and `args`): its message, the arguments it
// left in argv, and the run context it filled (the process's own context is put back afterwards).
struct taken_arguments {
  std::string problem;
  std::vector<std::string> kept;
  sc::run_context context;
};

taken_arguments take(std::vector<std::string> args, const char* build = "legacy") {
  args.insert(args.begin(), "exe");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  const sc::run_context saved = sc::context();
  taken_arguments t;
  t.problem = sc::take_streamcheck_arguments(argc, argv.data(), build);
  for (int i = 1; i < argc; ++i) t.kept.emplace_back(argv[i]);
  t.context = sc::context();
  sc::context() = saved;
  return t;
}

TEST(TestMain, StreamcheckArgumentsAreTakenOutOfArgv) {
  const taken_arguments t = take({"--streamcheck-results=/tmp/r", "--gtest_brief=1"});
  EXPECT_EQ("", t.problem);
  EXPECT_EQ(std::vector<std::string>{"--gtest_brief=1"}, t.kept);
  EXPECT_EQ("/tmp/r", t.context.results_dir);
  EXPECT_EQ("legacy", t.context.build);
}

// A ctest name: the family (the folder of the test's source), the build (legacy adds nothing), the variant.
TEST(TestMain, FamilyBuildAndVariantMakeTheCtestName) {
  const taken_arguments t = take({"--streamcheck-variant=launch_blocking,CUDA_LAUNCH_BLOCKING"}, "ptds");
  EXPECT_EQ("", t.problem);
  EXPECT_TRUE(t.kept.empty());
  EXPECT_EQ("launch_blocking", t.context.variant);
  EXPECT_EQ("CUDA_LAUNCH_BLOCKING", t.context.variant_sets);
  const sc::run_context saved = sc::context();
  sc::context() = t.context;
  EXPECT_EQ("fam.ptds.launch_blocking.S.T", sc::ctest_name("/src/tests/fam/x_test.cpp", "S.T"));
  sc::context().variant.clear();
  sc::context().build = "legacy";
  EXPECT_EQ("fam.S.T", sc::ctest_name("tests/fam/x_test.cpp", "S.T"));
  sc::context() = saved;
  for (const char* bad : {"--streamcheck-variant=conn1", "--streamcheck-variant=,X", "--streamcheck-variant=conn1,"})
    EXPECT_NE(std::string::npos, take({bad}).problem.find("NAME,VARIABLE")) << bad;
}

TEST(TestMain, UnknownStreamcheckOptionIsAnError) {
  const std::string typo = std::string("--streamcheck-") + "result=/tmp/r";  // not a flag of the suite
  const taken_arguments t = take({typo});
  EXPECT_NE(std::string::npos, t.problem.find(typo)) << t.problem;
}

}  // namespace

namespace {

// A latch whose watchdog fired fails the test that held it, unless the firing was expected (a silent
// latch in a test of the watchdog itself); both are recorded as evidence.
TEST(WatchdogEvidence, AnUnexpectedFiringFailsTheTestAndIsRecorded) {
  sc::fired_latch banner;
  banner.index = 3;
  banner.where = "s1";
  banner.watchdog = std::chrono::milliseconds{2000};
  banner.waited_ns = 2'000'100'000;
  sc::fired_latch silent = banner;
  silent.index = 4;
  silent.expected = true;
  nlohmann::json evidence;
  EXPECT_NONFATAL_FAILURE(evidence = sc::detail::judge_fired_latches({banner, silent}), "the watchdog of latch 3");
  ASSERT_EQ(2u, evidence.size());
  EXPECT_EQ(false, evidence[0]["expected"]);
  EXPECT_EQ("s1", evidence[0]["held"]);
  EXPECT_EQ(2000, evidence[0]["watchdog_ms"]);
  EXPECT_EQ(true, evidence[1]["expected"]);
}

TEST(WatchdogEvidence, AnExpectedFiringIsRecordedWithoutAFailure) {
  sc::fired_latch silent;
  silent.expected = true;
  const nlohmann::json evidence = sc::detail::judge_fired_latches({silent});
  EXPECT_EQ(1u, evidence.size());
}

}  // namespace
