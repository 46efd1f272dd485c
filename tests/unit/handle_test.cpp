// Host tests of the move-only ownership every wrapper is built on, and of the wrappers' empty and
// moved-from states that need no GPU.
#include "sc/fixtures/handle.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/stream.hpp"

namespace {

// A fake handle kind that records every release.
std::vector<int> g_released;
struct counted_traits {
  using handle_type = int;
  static void release(int handle) noexcept { g_released.push_back(handle); }
};
using counted = sc::unique_handle<counted_traits>;

class Handle : public ::testing::Test {
 protected:
  void SetUp() override { g_released.clear(); }
};

TEST_F(Handle, EmptyHandleIsNotEngagedAndReleasesNothing) {
  {
    counted h;
    EXPECT_FALSE(h.engaged());
    EXPECT_FALSE(h.owns());
    EXPECT_EQ(0, h.get());
  }
  EXPECT_TRUE(g_released.empty());
}

TEST_F(Handle, OwnedHandleIsReleasedExactlyOnce) {
  {
    counted h(7, sc::ownership::owned);
    EXPECT_TRUE(h.owns());
  }
  EXPECT_EQ(std::vector<int>{7}, g_released);
}

TEST_F(Handle, BorrowedHandleIsNeverReleased) {
  {
    counted h(7, sc::ownership::borrowed);
    EXPECT_TRUE(h.engaged());
    EXPECT_FALSE(h.owns());
  }
  EXPECT_TRUE(g_released.empty());
}

TEST_F(Handle, ZeroIsAValidEngagedHandle) {
  counted h(0, sc::ownership::owned);  // the NULL stream is handle 0 and still a stream
  EXPECT_TRUE(h.engaged());
  h.reset();
  EXPECT_EQ(std::vector<int>{0}, g_released);
}

TEST_F(Handle, MoveConstructionTransfersOwnershipAndEmptiesTheSource) {
  counted a(3, sc::ownership::owned);
  counted b(std::move(a));
  EXPECT_FALSE(a.engaged());  // NOLINT(bugprone-use-after-move): the moved-from state is the subject
  EXPECT_EQ(0, a.get());
  EXPECT_TRUE(b.owns());
  EXPECT_EQ(3, b.get());
  EXPECT_TRUE(g_released.empty());
  b.reset();
  EXPECT_EQ(std::vector<int>{3}, g_released);
}

TEST_F(Handle, MoveAssignmentReleasesTheTargetsOldHandleFirst) {
  counted a(1, sc::ownership::owned);
  counted b(2, sc::ownership::owned);
  b = std::move(a);
  EXPECT_EQ(std::vector<int>{2}, g_released);
  EXPECT_EQ(1, b.get());
  EXPECT_FALSE(a.engaged());  // NOLINT(bugprone-use-after-move)
}

TEST_F(Handle, SelfMoveAssignmentKeepsTheHandle) {
  counted a(5, sc::ownership::owned);
  counted& alias = a;
  a = std::move(alias);
  EXPECT_TRUE(a.owns());
  EXPECT_EQ(5, a.get());
  EXPECT_TRUE(g_released.empty());
}

TEST_F(Handle, MovingABorrowedHandleNeverReleasesIt) {
  counted a(9, sc::ownership::borrowed);
  counted b(std::move(a));
  b.reset();
  EXPECT_TRUE(g_released.empty());
}

TEST(StreamViews, SpecialHandlesAreNamedBorrowedViews) {
  const sc::stream legacy = sc::stream::legacy();
  const sc::stream per_thread = sc::stream::per_thread();
  const sc::stream null = sc::stream::null();
  EXPECT_EQ(cudaStreamLegacy, legacy.get());
  EXPECT_EQ(cudaStreamPerThread, per_thread.get());
  EXPECT_EQ(nullptr, null.get());
  for (const sc::stream* s : {&legacy, &per_thread, &null}) {
    EXPECT_TRUE(s->engaged()) << s->name();
    EXPECT_FALSE(s->owns()) << s->name();
  }
  EXPECT_EQ("legacy", legacy.name());
  EXPECT_EQ("per-thread", per_thread.name());
  EXPECT_EQ("null(0)", null.name());
}

TEST(StreamViews, MovedFromViewIsEmpty) {
  sc::stream a = sc::stream::legacy();
  sc::stream b = std::move(a);
  EXPECT_FALSE(a.engaged());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(nullptr, a.get());
  EXPECT_EQ(cudaStreamLegacy, b.get());
  EXPECT_FALSE(b.owns());
}

TEST(Buffers, DefaultAndMovedFromBuffersAreEmpty) {
  sc::mapped<int> m;
  EXPECT_FALSE(m.engaged());
  EXPECT_EQ(nullptr, m.host());
  EXPECT_EQ(nullptr, m.device());
  sc::mapped<int> moved(std::move(m));
  EXPECT_EQ(0u, moved.size());
  sc::device_buffer<int> d;
  EXPECT_EQ(nullptr, d.data());
  EXPECT_EQ(0u, d.bytes());
}

}  // namespace
