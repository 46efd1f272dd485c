// The GPU lock (gpu_lock.hpp) without a GPU: lock files in a temporary folder, "another process" played by
// a second open file description (flock conflicts between those even inside one process), and fork() for
// the child-process rules.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "sc/fixtures/gpu_lock.hpp"

namespace {

namespace fs = std::filesystem;

class GpuLock : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sc_gpu_lock_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    setenv("STREAMCHECK_GPU_LOCK_DIR", dir_.c_str(), 1);
    unsetenv("STREAMCHECK_GPU_LOCK_TIMEOUT_S");
  }
  void TearDown() override {
    sc::release_gpu_locks();
    for (int fd : others_) close(fd);
    unsetenv("STREAMCHECK_GPU_LOCK_DIR");
    unsetenv("STREAMCHECK_GPU_LOCK_TIMEOUT_S");
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string path(const std::string& uuid) const { return (dir_ / ("streamcheck-gpu-" + uuid + ".lock")).string(); }
  // Another process's lock on `uuid`, with its note; returns its descriptor (closed in TearDown).
  int hold_as_other(const std::string& uuid, const std::string& note) {
    const int fd = open(path(uuid).c_str(), O_RDWR | O_CREAT, 0666);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(0, flock(fd, LOCK_EX | LOCK_NB));
    EXPECT_EQ(static_cast<ssize_t>(note.size()), pwrite(fd, note.data(), note.size(), 0));
    others_.push_back(fd);
    return fd;
  }
  // Whether another process could take `uuid` now (and leaves it free again).
  bool free_for_other(const std::string& uuid) const {
    const int fd = open(path(uuid).c_str(), O_RDWR | O_CREAT, 0666);
    const bool got = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (fd >= 0) close(fd);
    return got;
  }

  fs::path dir_;
  std::vector<int> others_;
};

TEST_F(GpuLock, TakesAFreeLockAndKeepsItUntilReleased) {
  const sc::gpu_lock_outcome got = sc::lock_gpus({"aa"}, "test A");
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_TRUE(got.taken);
  EXPECT_TRUE(sc::holds_gpu_lock("aa"));
  EXPECT_FALSE(free_for_other("aa"));
  // A second call for the same GPU takes nothing more.
  EXPECT_FALSE(sc::lock_gpus({"aa"}, "test A").taken);
  sc::release_gpu_locks();
  EXPECT_FALSE(sc::holds_gpu_lock("aa"));
  EXPECT_TRUE(free_for_other("aa"));
}

TEST_F(GpuLock, GivesUpAfterItsTimeoutNamingTheHolder) {
  hold_as_other("bb", "pid 4242 (events.fast)\n");
  setenv("STREAMCHECK_GPU_LOCK_TIMEOUT_S", "1", 1);
  const auto started = std::chrono::steady_clock::now();
  const sc::gpu_lock_outcome got = sc::lock_gpus({"bb"}, "test B");
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(900));
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("pid 4242 (events.fast)")) << got.error;
  EXPECT_NE(std::string::npos, got.error.find("STREAMCHECK_GPU_LOCK_TIMEOUT_S")) << got.error;
  EXPECT_FALSE(sc::holds_gpu_lock("bb"));
}

TEST_F(GpuLock, RejectsAMalformedTimeout) {
  setenv("STREAMCHECK_GPU_LOCK_TIMEOUT_S", "soon", 1);
  const sc::gpu_lock_outcome got = sc::lock_gpus({"cc"}, "test C");
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("'soon'")) << got.error;
}

TEST_F(GpuLock, WaitsUntilTheHolderLetsGo) {
  const int other = hold_as_other("dd", "pid 1 (other)\n");
  std::thread let_go([other] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    flock(other, LOCK_UN);
  });
  const sc::gpu_lock_outcome got = sc::lock_gpus({"dd"}, "test D");
  let_go.join();
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_TRUE(got.taken);
  EXPECT_GE(got.waited_ms, 250.0);
  // The waiter wrote its own note for the next one.
  char note[64] = {};
  const int fd = open(path("dd").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_GT(pread(fd, note, sizeof note - 1, 0), 0);
  close(fd);
  EXPECT_NE(std::string::npos, std::string(note).find("(test D)")) << note;
}

TEST_F(GpuLock, WaitsOnlyInUuidOrder) {
  // It holds zz and needs aa, which another process holds: waiting with zz held could deadlock with a
  // process that holds aa and waits for zz, so it lets zz go and takes aa, then zz.
  ASSERT_TRUE(sc::lock_gpus({"zz"}, "test E").taken);
  const int other = hold_as_other("aa", "pid 2 (other)\n");
  auto second = std::async(std::launch::async, [] { return sc::lock_gpus({"aa"}, "test E, peer"); });
  bool zz_freed = false;
  for (int i = 0; i < 200 && !zz_freed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    zz_freed = free_for_other("zz");
  }
  EXPECT_TRUE(zz_freed) << "the lock zz was kept while waiting for aa, which sorts before it";
  flock(other, LOCK_UN);
  const sc::gpu_lock_outcome got = second.get();
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_TRUE(got.taken);
  EXPECT_TRUE(sc::holds_gpu_lock("aa"));
  EXPECT_TRUE(sc::holds_gpu_lock("zz"));
}

// fork(): the child inherits the parent's environment, as a death-test child or sc::child process does.
int in_child(const char* owner, bool expect_child) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (owner != nullptr) setenv("STREAMCHECK_GPU_LOCK_OWNER", owner, 1);
    setenv("STREAMCHECK_GPU_LOCK_TIMEOUT_S", "1", 1);  // a child that does wait fails in 1 s, not never
    sc::claim_gpu_lock_ownership();
    const sc::gpu_lock_outcome got = sc::lock_gpus({"gg"}, "child");
    const bool as_child = !got.taken && got.error.empty() && sc::holds_gpu_lock("gg");
    const bool as_locker = got.taken && got.error.empty();
    std::_Exit(expect_child ? (as_child ? 0 : 1) : (as_locker ? 0 : 1));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST_F(GpuLock, AChildOfTheLockingProcessDoesNotLock) {
  // The parent's lock, on a descriptor the child's copy of this process's lock state does not list (a
  // death-test child re-executes the binary and starts with no state at all).
  hold_as_other("gg", "pid of the parent (parent)\n");
  const std::string parent = std::to_string(getpid());
  EXPECT_EQ(0, in_child(parent.c_str(), /*expect_child=*/true)) << "the child waited for its parent's lock";
}

TEST_F(GpuLock, AStaleOwnerMarkIsIgnored) {
  // Not an ancestor of the child (pid 1 is never counted, and this one does not exist): the child locks.
  EXPECT_EQ(0, in_child("1", /*expect_child=*/false));
  EXPECT_EQ(0, in_child("2147483646", /*expect_child=*/false));
}

TEST(GpuLockName, IsTheUuidInHex) {
  cudaUUID_t uuid{};
  for (int i = 0; i < 16; ++i) uuid.bytes[i] = static_cast<char>(i * 17);
  EXPECT_EQ("00112233445566778899aabbccddeeff", sc::uuid_text(uuid));
}

}  // namespace
