// thread_team (thread_team.hpp) without a GPU: stages reached in order, deadlines, and the end that
// releases every wait.
#include "sc/fixtures/thread_team.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace {

using std::chrono::milliseconds;

TEST(ThreadTeam, ThreadsAndTheTestMeetWhereTheySay) {
  unsigned ready = 0;
  bool go = false;
  std::vector<int> seen(4, 0);
  sc::thread_team team;
  team.start(4, [&](unsigned i) {
    team.update([&] { ++ready; });
    if (team.wait_until([&] { return go; })) seen[i] = 1;
  });
  ASSERT_TRUE(team.wait_until([&] { return ready == 4; }, milliseconds(10'000)));
  EXPECT_EQ(std::vector<int>(4, 0), seen) << "a thread went on before the test said go";
  team.update([&] { go = true; });
  team.end();
  EXPECT_EQ(std::vector<int>(4, 1), seen);
}

TEST(ThreadTeam, ADeadlinePassesAndTheEndReleasesEveryWait) {
  bool released = false;
  {
    sc::thread_team team;
    EXPECT_FALSE(team.wait_until([] { return false; }, milliseconds(1)));
    team.start(1, [&](unsigned) { released = !team.wait_until([] { return false; }); });
  }  // the destructor ends the team
  EXPECT_TRUE(released);
}

// A handshake in steps: the thread waits for the test's step 2 before taking its own 3; a step never goes back.
TEST(ThreadTeam, StepsAreReachedInOrderAndNeverGoBack) {
  int seen_by_thread = 0;
  sc::thread_team team;
  team.start(1, [&](unsigned) {
    team.step_to(1);
    if (team.reached(2, milliseconds(10'000))) team.step_to(3, [&] { seen_by_thread = 2; });
  });
  ASSERT_TRUE(team.reached(1, milliseconds(10'000)));
  EXPECT_FALSE(team.reached(3, milliseconds(20))) << "the thread went on before step 2";
  team.step_to(2);
  ASSERT_TRUE(team.reached(3, milliseconds(10'000)));
  EXPECT_EQ(2, seen_by_thread);
  team.step_to(1);
  EXPECT_TRUE(team.reached(3, milliseconds(1))) << "a step went back";
}

}  // namespace
