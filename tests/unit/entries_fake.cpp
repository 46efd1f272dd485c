// The executable whose tests unit.Entries.BothModesRegisterEveryTestOnce registers (entries_check.cmake): a
// GoogleTest binary, so that its own --gtest_filter selects, with a parameterized test among them.
#include <gtest/gtest.h>

namespace {

TEST(Fam, Plain) {}
TEST(Fam, Dotty) {}
TEST(Fam, OneConnection) {}
TEST(Other, FirstLaunch) {}
TEST(Other, Axb) {}

class Sweep : public ::testing::TestWithParam<int> {};
TEST_P(Sweep, Case) {}
INSTANTIATE_TEST_SUITE_P(P, Sweep, ::testing::Values(1));

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
