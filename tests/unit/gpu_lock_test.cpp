// The GPU lock (gpu_lock.hpp) without a GPU: "another process" is a second open file description of the
// lock file (flock conflicts between those even inside one process). UUIDs carry this process's pid, so
// runs beside each other do not meet.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "sc/fixtures/gpu_lock.hpp"

namespace {

std::string uuid(const char* name) { return std::string("unit-") + name + "-" + std::to_string(getpid()); }
std::string path(const std::string& id) { return "/tmp/streamcheck-gpu-" + id + ".lock"; }

// Whether another process could take the lock now (and leaves it free again).
bool free_for_other(const std::string& id) {
  const int fd = open(path(id).c_str(), O_RDONLY | O_CREAT, 0644);
  const bool got = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
  if (fd >= 0) close(fd);
  return got;
}

class GpuLock : public ::testing::Test {
 protected:
  void TearDown() override {
    sc::release_gpu_locks();
    for (const char* name : {"a", "b", "link"}) std::filesystem::remove(path(uuid(name)));
  }
};

TEST_F(GpuLock, IsHeldUntilReleased) {
  ASSERT_EQ("", sc::lock_gpus({uuid("b"), uuid("a")}));
  EXPECT_FALSE(free_for_other(uuid("a")));
  EXPECT_FALSE(free_for_other(uuid("b")));
  EXPECT_EQ("", sc::lock_gpus({uuid("a")})) << "a lock this process holds is taken again at once";
  sc::release_gpu_locks();
  EXPECT_TRUE(free_for_other(uuid("a")));
  EXPECT_TRUE(free_for_other(uuid("b")));
}

TEST_F(GpuLock, AnotherGpuLaterNeedsAProcessOfItsOwn) {
  ASSERT_EQ("", sc::lock_gpus({uuid("a")}));
  const std::string error = sc::lock_gpus({uuid("a"), uuid("b")});
  EXPECT_NE(std::string::npos, error.find("ISOLATED")) << error;
  EXPECT_TRUE(free_for_other(uuid("b"))) << "nothing was taken";
  EXPECT_FALSE(free_for_other(uuid("a"))) << "the lock held before is kept";
}

TEST_F(GpuLock, WaitsForTheHolder) {
  const int other = open(path(uuid("a")).c_str(), O_RDONLY | O_CREAT, 0644);
  ASSERT_EQ(0, flock(other, LOCK_EX | LOCK_NB));
  std::atomic<bool> returned{false};
  std::string error = "not returned";
  std::thread waiter([&] {
    error = sc::lock_gpus({uuid("a")});
    returned = true;
  });
  // Not a proof of order by timing: a waiter that returned while the other descriptor held the lock fails here.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "lock_gpus returned while another holder had the lock";
  close(other);
  waiter.join();
  EXPECT_EQ("", error);
  EXPECT_FALSE(free_for_other(uuid("a")));
}

TEST_F(GpuLock, RefusesALinkInPlaceOfTheFile) {
  std::filesystem::create_symlink("/tmp", path(uuid("link")));
  const std::string error = sc::lock_gpus({uuid("link")});
  EXPECT_NE(std::string::npos, error.find("cannot be opened")) << error;
}

}  // namespace
