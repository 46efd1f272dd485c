// The executable whose tests runner/tests/test_entries.py makes entries of: a GoogleTest binary, so that its own
// --gtest_filter selects, with a parameterized test among them. Its tests claim (#line) to be defined in the
// folders of two families, fam and kin, and of a folder that is no family.
#include <gtest/gtest.h>

namespace {

#line 1 "/src/tests/fam/fam_test.cpp"
TEST(Fam, Plain) {}
TEST(Fam, Dotty) {}
TEST(Fam, OneConnection) {}
TEST(Other, FirstLaunch) {}
TEST(Other, Axb) {}

class Sweep : public ::testing::TestWithParam<int> {};
TEST_P(Sweep, Case) {}
INSTANTIATE_TEST_SUITE_P(P, Sweep, ::testing::Values(1));

#line 1 "/src/tests/kin/kin_test.cpp"
TEST(Kin, Alone) {}
TEST(Kin, Pair) {}

#line 1 "/src/tests/stray/stray_test.cpp"
TEST(Stray, Lost) {}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
