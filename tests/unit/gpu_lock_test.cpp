// The GPU lock (gpu_lock.hpp) without a GPU: "another process" is a second open file description of the
// lock file (flock conflicts between those even inside one process); the UUIDs carry this process's pid.
#include "sc/runner/gpu_lock.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string uuid(const char* name) { return std::string("unit-") + name + "-" + std::to_string(getpid()); }
std::string path(const char* name) { return "/tmp/streamcheck-gpu-" + uuid(name) + ".lock"; }
bool free_for_other(const char* name) {  // another process could take the lock now (and leaves it free)
  const int fd = open(path(name).c_str(), O_RDONLY | O_CREAT, 0644);
  const bool got = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
  return (fd < 0 || close(fd) == 0) && got;
}

class GpuLock : public ::testing::Test {
  void TearDown() override {
    sc::release_gpu_locks();
    for (const char* name : {"a", "b", "link"}) std::filesystem::remove(path(name));
  }
};

TEST_F(GpuLock, IsHeldUntilReleasedAndASecondGpuLaterNeedsAProcessOfItsOwn) {
  ASSERT_EQ("", sc::lock_gpus({uuid("b"), uuid("a")}));
  EXPECT_FALSE(free_for_other("a"));
  EXPECT_FALSE(free_for_other("b"));
  sc::release_gpu_locks();
  EXPECT_TRUE(free_for_other("a"));
  ASSERT_EQ("", sc::lock_gpus({uuid("a")}));
  EXPECT_EQ("", sc::lock_gpus({uuid("a")})) << "a lock this process holds is taken again at once";
  const std::string error = sc::lock_gpus({uuid("a"), uuid("b")});
  EXPECT_NE(std::string::npos, error.find("ISOLATED")) << error;
  EXPECT_TRUE(free_for_other("b")) << "nothing was taken";
}

TEST_F(GpuLock, WaitsForTheHolder) {
  const int other = open(path("a").c_str(), O_RDONLY | O_CREAT, 0644);
  ASSERT_EQ(0, flock(other, LOCK_EX | LOCK_NB));
  FILE* said = std::tmpfile();  // where the waiter says that it waits: then it waits, or returned
  const int err = dup(2);
  dup2(fileno(said), 2);
  std::atomic<bool> returned{false};
  std::thread waiter([&] { returned = sc::lock_gpus({uuid("a")}).empty(); });
  while (!returned && std::ftell(said) == 0 && std::fseek(said, 0, SEEK_END) == 0) std::this_thread::yield();
  EXPECT_FALSE(returned.load()) << "lock_gpus returned while another holder had the lock";
  close(other);
  waiter.join();
  dup2(err, 2);
  EXPECT_TRUE(returned.load());
  EXPECT_FALSE(free_for_other("a"));
}

TEST_F(GpuLock, RefusesALinkInPlaceOfTheFile) {
  std::filesystem::create_symlink("/tmp", path("link"));
  EXPECT_NE(std::string::npos, sc::lock_gpus({uuid("link")}).find("cannot be taken")) << "a link was followed";
}

// The holders of a lock, from /proc/locks: this process once it holds GPU a's lock, and nobody after; the
// parser keeps holders of the one inode and leaves waiters ("->") and other lock kinds out.
TEST_F(GpuLock, HoldersAreReadFromProcLocks) {
  ASSERT_EQ("", sc::lock_gpus({uuid("a")}));
  EXPECT_EQ(std::vector<long>{static_cast<long>(getpid())}, sc::gpu_lock_holders(uuid("a"), sc::proc_locks()));
  sc::release_gpu_locks();
  EXPECT_TRUE(sc::gpu_lock_holders(uuid("a"), sc::proc_locks()).empty());
  const std::string text =
      "1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234 0 EOF\n"
      "1: -> FLOCK  ADVISORY  WRITE 77 00:2d:1234 0 EOF\n"
      "2: POSIX  ADVISORY  WRITE 88 00:2d:1234 0 EOF\n"
      "3: FLOCK  ADVISORY  WRITE 99 fd:01:12345 0 EOF\n"
      "4: FLOCK  ADVISORY  WRITE 5 08:01:1234 0 EOF\n"
      "garbage\n";
  EXPECT_EQ((std::vector<long>{4242, 5}), sc::flock_holders(text, 1234));
  EXPECT_TRUE(sc::flock_holders(text, 1).empty());
}

}  // namespace
