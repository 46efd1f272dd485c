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

}  // namespace
