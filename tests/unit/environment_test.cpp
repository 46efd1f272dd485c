// Host tests of the environment decisions (environment.hpp): which requirement of an arrangement cannot
// hold for given variables, entry and device facts, and that every refusal says why.
#include "sc/fixtures/environment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

namespace {

using sc::environment_facts;
using sc::requirement;

bool says(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Requirements, AllHoldInAPlainEnvironment) {
  const environment_facts plain;
  for (const requirement r : sc::all_requirements()) EXPECT_EQ("", sc::why_not(r, plain)) << sc::to_string(r);
  environment_facts known_device;
  known_device.compute_mode = sc::kComputeModeDefault;
  for (const requirement r : sc::all_requirements()) EXPECT_EQ("", sc::why_not(r, known_device)) << sc::to_string(r);
}

TEST(Requirements, LaunchBlockingRefusesAsyncLaunchesOnlyWhenItIsOne) {
  environment_facts env;
  env.launch_blocking = "0";
  EXPECT_EQ("", sc::why_not(requirement::async_launches, env));
  env.launch_blocking = "1";
  const std::string why = sc::why_not(requirement::async_launches, env);
  EXPECT_TRUE(says(why, "CUDA_LAUNCH_BLOCKING=1 (set in the calling environment)")) << why;
  EXPECT_TRUE(says(why, "LaunchReturnsOnlyAfterTheKernelWithLaunchBlocking"))
      << "names the test that still runs: " << why;
  // The entry that sets it is named as its source, and the requirement still fails there.
  env.variant = "launch_blocking";
  env.variant_sets = {"CUDA_LAUNCH_BLOCKING"};
  EXPECT_TRUE(says(sc::why_not(requirement::async_launches, env), "set by the environment variant 'launch_blocking'"));
  // Nothing else depends on it.
  for (const requirement r : sc::all_requirements()) {
    if (r == requirement::async_launches) continue;
    EXPECT_EQ("", sc::why_not(r, env)) << sc::to_string(r);
  }
}

TEST(Requirements, AnEntryExemptsOnlyTheVariableItSetsItself) {
  environment_facts env;
  env.max_connections = "1";
  EXPECT_NE("", sc::why_not(requirement::own_connection_count, env)) << "inherited by a default entry";
  // An entry that sets another variable (the eager or launch_blocking entry) does not make an inherited
  // connection count its own: the loophole through which an ordering test could run on a shared queue.
  env.variant = "eager";
  env.variant_sets = {"CUDA_MODULE_LOADING"};
  EXPECT_NE("", sc::why_not(requirement::own_connection_count, env));
  env.variant = "conn1";
  env.variant_sets = {"CUDA_DEVICE_MAX_CONNECTIONS"};
  EXPECT_EQ("", sc::why_not(requirement::own_connection_count, env));
}

TEST(Requirements, DefaultConnectionsRefuseAnySetCountAndSayWhy) {
  environment_facts env;
  env.max_connections = "32";
  env.variant = "conn32";
  env.variant_sets = {"CUDA_DEVICE_MAX_CONNECTIONS"};
  const std::string why = sc::why_not(requirement::default_connections, env);
  EXPECT_TRUE(says(why, "CUDA_DEVICE_MAX_CONNECTIONS=32 (set by the environment variant 'conn32')")) << why;
  EXPECT_TRUE(says(why, "false dependency")) << why;
  env.max_connections.reset();
  EXPECT_EQ("", sc::why_not(requirement::default_connections, env));
}

TEST(Requirements, ExclusiveComputeModesRefuseASecondContextUnlessMpsServesIt) {
  environment_facts env;
  for (const int mode : {sc::kComputeModeExclusiveProcess, sc::kComputeModeExclusiveThread}) {
    env.compute_mode = mode;
    env.mps = false;
    const std::string why = sc::why_not(requirement::several_contexts, env);
    EXPECT_TRUE(says(why, sc::compute_mode_name(mode))) << why;
    env.mps = true;
    env.mps_evidence = "cudaDevAttrMpsEnabled=1";
    EXPECT_EQ("", sc::why_not(requirement::several_contexts, env));
  }
  env.compute_mode = sc::kComputeModeProhibited;
  EXPECT_TRUE(says(sc::why_not(requirement::several_contexts, env), "prohibited"));
  env.compute_mode.reset();  // not known yet: nothing is refused on a guess
  EXPECT_EQ("", sc::why_not(requirement::several_contexts, env));
}

TEST(Requirements, MpsRefusesSeparateContextsWithItsEvidence) {
  environment_facts env;
  env.mps = true;
  env.mps_evidence = "cudaDevAttrMpsEnabled=1; a control pipe in /tmp/nvidia-mps";
  const std::string why = sc::why_not(requirement::separate_contexts, env);
  EXPECT_TRUE(says(why, env.mps_evidence)) << why;
  EXPECT_TRUE(says(why, "time-sliced")) << why;
}

// The requirements a compute-sanitizer tool breaks: met without one, and refused under one, naming the tool.
TEST(Requirements, ASanitizerToolRefusesItsRequirementsAndNamesTheTool) {
  for (const auto& [r, words] : {std::pair{requirement::unintercepted_calls, "intercepts API calls"},
                                 std::pair{requirement::death_test_children, "death-test child"},
                                 std::pair{requirement::uninstrumented_kernels, "instruments every kernel"}}) {
    environment_facts env;
    EXPECT_EQ("", sc::why_not(r, env)) << sc::to_string(r);
    env.sanitizer = "racecheck";
    const std::string why = sc::why_not(r, env);
    EXPECT_TRUE(says(why, "compute-sanitizer --tool racecheck")) << why;
    EXPECT_TRUE(says(why, words)) << why;
  }
}

TEST(Requirements, EveryRequirementHasADistinctName) {
  std::set<std::string> names;
  for (const requirement r : sc::all_requirements()) EXPECT_TRUE(names.insert(sc::to_string(r)).second);
  EXPECT_EQ(names.size(), sc::all_requirements().size());
  EXPECT_EQ(0u, names.count("unknown"));
}

// Every latch and host latch asks before it is enqueued: under CUDA_LAUNCH_BLOCKING=1 a hold refuses at
// once, naming the SC_REQUIRE the test lacks, unless the test holds under launch blocking on purpose.
TEST(HoldGuard, RefusesUnderLaunchBlockingUnlessTheTestExpectsIt) {
  const char* before = std::getenv("CUDA_LAUNCH_BLOCKING");
  const std::optional<std::string> saved = before == nullptr ? std::nullopt : std::optional<std::string>(before);
  unsetenv("CUDA_LAUNCH_BLOCKING");
  sc::detail::reset_blocking_launch_expectation();
  EXPECT_NO_THROW(sc::detail::check_hold_allowed("sc::latch::hold"));
  setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
  try {
    sc::detail::check_hold_allowed("sc::latch::hold");
    ADD_FAILURE() << "a hold under CUDA_LAUNCH_BLOCKING=1 was allowed";
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(says(e.what(), "SC_REQUIRE(sc::requirement::async_launches)")) << e.what();
  }
  sc::expect_blocking_launches();
  EXPECT_NO_THROW(sc::detail::check_hold_allowed("sc::latch::hold"));
  sc::detail::reset_blocking_launch_expectation();
  if (saved)
    setenv("CUDA_LAUNCH_BLOCKING", saved->c_str(), 1);
  else
    unsetenv("CUDA_LAUNCH_BLOCKING");
}

TEST(Mig, DecidedFromTheNameOrAMigUuidInCudaVisibleDevices) {
  std::string evidence;
  EXPECT_TRUE(sc::mig_from("NVIDIA H100 80GB HBM3 MIG 1g.10gb", std::nullopt, evidence));
  EXPECT_TRUE(says(evidence, "MIG profile")) << evidence;
  EXPECT_TRUE(sc::mig_from("NVIDIA H100 80GB HBM3", std::string("MIG-0b5e7c1a-1234-5678-9abc-def012345678"), evidence));
  EXPECT_TRUE(says(evidence, "CUDA_VISIBLE_DEVICES")) << evidence;
  EXPECT_FALSE(sc::mig_from("NVIDIA H100 80GB HBM3", std::string("0,1"), evidence));
  EXPECT_FALSE(sc::mig_from("NVIDIA H200", std::nullopt, evidence));
}

TEST(ComputeModes, HaveTheirDriverNames) {
  EXPECT_STREQ("default", sc::compute_mode_name(sc::kComputeModeDefault));
  EXPECT_STREQ("exclusive-process", sc::compute_mode_name(sc::kComputeModeExclusiveProcess));
  EXPECT_STREQ("prohibited", sc::compute_mode_name(sc::kComputeModeProhibited));
  EXPECT_STREQ("unknown", sc::compute_mode_name(42));
}

}  // namespace

namespace {

// The kernel module's release and flavor from the lines /proc/driver/nvidia/version begins with, open and
// proprietary; anything else gives neither.
TEST(KernelModule, ReleaseAndFlavorFromTheNvrmLine) {
  const sc::kernel_module open = sc::kernel_module_from(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16)  Thu");
  EXPECT_EQ("580.159.04", open.version);
  EXPECT_EQ("open", open.flavor);
  const sc::kernel_module closed =
      sc::kernel_module_from("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024");
  EXPECT_EQ("550.54.15", closed.version);
  EXPECT_EQ("proprietary", closed.flavor);
  const sc::kernel_module arm =
      sc::kernel_module_from("NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.104.05  Sat");
  EXPECT_EQ("535.104.05", arm.version);
  EXPECT_TRUE(sc::kernel_module_from("GCC version:  gcc version 12.2.0").version.empty());
  EXPECT_TRUE(sc::kernel_module_from("").flavor.empty());
}

}  // namespace
