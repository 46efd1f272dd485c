// The executable unit.Resume.ATestThatEndsItsProcessCostsItAlone runs (resume_check.sh): the suite's test main
// (runner/src/main.cpp) around three host tests, the second of which crashes its process when asked to.
#include <gtest/gtest.h>

#include <cstdlib>

namespace {

TEST(Resume, First) {}
TEST(Resume, Crashes) {
  if (std::getenv("SC_RESUME_CRASH") != nullptr) std::abort();
}
TEST(Resume, Last) {}

}  // namespace
