// The GPU lock (gpu_lock.hpp) without a GPU: lock files in a temporary folder, "another process" played by
// a second open file description (flock conflicts between those even inside one process), fork() for the
// child-process rules, and the wait observer as the latch that says a waiter waits (no sleeps).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <future>
#include <string>

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
  // A live holder (this process's pid stands in for the other's).
  const std::string note = "pid " + std::to_string(getpid()) + " (events.fast)";
  hold_as_other("bb", note + "\n");
  setenv("STREAMCHECK_GPU_LOCK_TIMEOUT_S", "1", 1);
  const auto started = std::chrono::steady_clock::now();
  const sc::gpu_lock_outcome got = sc::lock_gpus({"bb"}, "test B");
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(900));
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("held by " + note)) << got.error;
  EXPECT_NE(std::string::npos, got.error.find("STREAMCHECK_GPU_LOCK_TIMEOUT_S")) << got.error;
  EXPECT_FALSE(sc::holds_gpu_lock("bb"));
}

TEST_F(GpuLock, AnOldNoteIsNotTakenForTheHolder) {
  // The holder wrote no note; the one in the file is from a process that no longer exists.
  hold_as_other("bc", "pid 2147483646 (harness.fast)\n");
  const sc::gpu_lock_outcome got = sc::lock_gpus({"bc"}, "test B2", std::chrono::seconds(1));
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("held by a process that left no note")) << got.error;
  EXPECT_NE(std::string::npos, got.error.find("pid 2147483646 (harness.fast)")) << got.error;
}

// The start time of a live process, from /proc (0 when unknown).
unsigned long long start_time_of(long pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(file, line)) return 0;
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  for (int i = 3; i < 22; ++i) rest >> field;
  unsigned long long start = 0;
  rest >> start;
  return start;
}

// A child process that waits until it is killed: a live process that is not this one's parent (which may
// be outside this pid namespace) to name in notes.
class live_child {
 public:
  live_child() : pid_(fork()) {
    if (pid_ == 0) {
      pause();
      _exit(0);
    }
  }
  ~live_child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  long pid() const { return static_cast<long>(pid_); }

 private:
  pid_t pid_;
};

TEST_F(GpuLock, ANoteWhosePidWasTakenByAnotherProcessIsNotTheHolder) {
  // The child is alive, but the note's start time is not its own: the pid was reused.
  live_child child;
  ASSERT_GT(child.pid(), 0);
  ASSERT_NE(0u, start_time_of(child.pid())) << "no /proc here";
  const std::string note = "pid " + std::to_string(child.pid()) + " started " + std::to_string(start_time_of(child.pid()) + 1) + " (x.fast)\n";
  hold_as_other("bd", note);
  const sc::gpu_lock_outcome got = sc::lock_gpus({"bd"}, "test B3", std::chrono::seconds(1));
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("held by a process that left no note")) << got.error;
  EXPECT_NE(std::string::npos, got.error.find("names a pid that another process has now")) << got.error;
}

TEST_F(GpuLock, TheNoteNamesThisProcessByPidAndStartTime) {
  ASSERT_TRUE(sc::lock_gpus({"bf"}, "test B5").taken);
  std::ifstream file(path("bf"));
  std::string note;
  std::getline(file, note);
  const long self = static_cast<long>(getpid());
  EXPECT_EQ("pid " + std::to_string(self) + " started " + std::to_string(start_time_of(self)) + " (test B5)", note);
  sc::release_gpu_locks();
}

TEST_F(GpuLock, ANoteOfALiveWriterNamesItAsTheHolder) {
  live_child child;
  ASSERT_GT(child.pid(), 0);
  ASSERT_NE(0u, start_time_of(child.pid())) << "no /proc here";
  const std::string note = "pid " + std::to_string(child.pid()) + " started " + std::to_string(start_time_of(child.pid())) + " (x.fast)";
  hold_as_other("be", note + "\n");
  const sc::gpu_lock_outcome got = sc::lock_gpus({"be"}, "test B4", std::chrono::seconds(1));
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("held by " + note)) << got.error;
}

TEST_F(GpuLock, RejectsAMalformedTimeout) {
  setenv("STREAMCHECK_GPU_LOCK_TIMEOUT_S", "soon", 1);
  const sc::gpu_lock_outcome got = sc::lock_gpus({"cc"}, "test C");
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("'soon'")) << got.error;
}

// A latch on lock_gpus: set when it starts waiting for `uuid` (the wait observer runs on the waiting thread).
class wait_seen {
 public:
  explicit wait_seen(std::string uuid) : uuid_(std::move(uuid)), seen_(promise_.get_future()) {
    sc::detail::set_gpu_lock_wait_observer([this](const std::string& u) {
      if (u == uuid_ && !fired_.exchange(true)) promise_.set_value();
    });
  }
  ~wait_seen() { sc::detail::set_gpu_lock_wait_observer({}); }
  // Whether the waiter reached its wait within 10 s (a bound on a failure, not a pace: it returns at once).
  bool within_10_s() { return seen_.wait_for(std::chrono::seconds(10)) == std::future_status::ready; }

 private:
  std::string uuid_;
  std::promise<void> promise_;
  std::future<void> seen_;
  std::atomic<bool> fired_{false};
};

// Lets another process's lock go when the test body ends, however it ends: declared after the future of a
// waiting lock_gpus, it is destroyed first, so a failed assertion never leaves the future's destructor
// waiting for a lock that is only let go in TearDown.
struct let_go_at_exit {
  int fd;
  ~let_go_at_exit() { flock(fd, LOCK_UN); }
};
constexpr std::chrono::seconds kWaiterTimeout{20};  // a waiter that is never let go fails, never hangs

TEST_F(GpuLock, WaitsUntilTheHolderLetsGo) {
  const int other = hold_as_other("dd", "pid 1 (other)\n");
  wait_seen waiting("dd");
  auto got_later = std::async(std::launch::async, [] { return sc::lock_gpus({"dd"}, "test D", kWaiterTimeout); });
  const let_go_at_exit guard{other};
  // Let go only once the waiter is known to wait: the lock it then gets can only be the one let go.
  ASSERT_TRUE(waiting.within_10_s()) << "lock_gpus never waited for the lock another process holds";
  EXPECT_EQ(std::future_status::timeout, got_later.wait_for(std::chrono::seconds(0)))
      << "lock_gpus returned while another process held the lock";
  flock(other, LOCK_UN);
  const sc::gpu_lock_outcome got = got_later.get();
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_TRUE(got.taken);
  EXPECT_GT(got.waited_ms, 0.0);
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
  wait_seen waiting("aa");
  auto second = std::async(std::launch::async, [] { return sc::lock_gpus({"aa"}, "test E, peer", kWaiterTimeout); });
  const let_go_at_exit guard{other};
  ASSERT_TRUE(waiting.within_10_s()) << "lock_gpus never waited for aa";
  // While it waits for aa (held here), it cannot reach zz: what another process finds now is what it kept.
  EXPECT_TRUE(free_for_other("zz")) << "the lock zz was kept while waiting for aa, which sorts before it";
  flock(other, LOCK_UN);
  const sc::gpu_lock_outcome got = second.get();
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_TRUE(got.taken);
  EXPECT_TRUE(sc::holds_gpu_lock("aa"));
  EXPECT_TRUE(sc::holds_gpu_lock("zz"));
}

TEST_F(GpuLock, AWaitInOrderThatTimesOutHoldsNothingAndSaysSo) {
  ASSERT_TRUE(sc::lock_gpus({"zz"}, "test F").taken);
  hold_as_other("aa", "pid 3 (other)\n");
  // The caller's timeout (no STREAMCHECK_GPU_LOCK_TIMEOUT_S here).
  const sc::gpu_lock_outcome got = sc::lock_gpus({"aa"}, "test F, peer", std::chrono::seconds(1));
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("pid 3 (other)")) << got.error;
  EXPECT_NE(std::string::npos, got.error.find("let go of the lock(s) it held (zz)")) << got.error;
  EXPECT_FALSE(sc::holds_gpu_lock("zz"));
  EXPECT_FALSE(sc::holds_gpu_lock("aa"));
  EXPECT_TRUE(free_for_other("zz"));
}

TEST_F(GpuLock, AWaitInOrderThatRetookAnEarlierLockLetsItGoOnTimeout) {
  // Held: aa. Wanted: zz (busy). In order, aa is taken again first; then the wait for zz times out.
  ASSERT_TRUE(sc::lock_gpus({"aa"}, "test G").taken);
  hold_as_other("zz", "pid 3 (other)\n");
  const sc::gpu_lock_outcome got = sc::lock_gpus({"zz"}, "test G, peer", std::chrono::seconds(1));
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("let go of the lock(s) it held (aa)")) << got.error;
  EXPECT_FALSE(sc::holds_gpu_lock("aa"));
  EXPECT_TRUE(free_for_other("aa"));
}

TEST_F(GpuLock, AnErrorLeavesNoLockOfTheCall) {
  // yy can be taken, then the lock file of zz cannot be opened (a folder stands in its place).
  fs::create_directories(path("zz"));
  const sc::gpu_lock_outcome got = sc::lock_gpus({"yy", "zz"}, "test G");
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find(path("zz"))) << got.error;
  EXPECT_FALSE(sc::holds_gpu_lock("yy"));
  EXPECT_TRUE(free_for_other("yy"));
}

TEST_F(GpuLock, AnErrorKeepsTheLocksHeldBeforeTheCall) {
  ASSERT_TRUE(sc::lock_gpus({"aa"}, "test G2").taken);
  fs::create_directories(path("zz"));  // zz cannot be opened: the call fails without waiting
  const sc::gpu_lock_outcome got = sc::lock_gpus({"aa", "zz"}, "test G2, peer");
  EXPECT_FALSE(got.taken);
  EXPECT_FALSE(got.error.empty());
  EXPECT_TRUE(sc::holds_gpu_lock("aa"));
  EXPECT_FALSE(free_for_other("aa"));
}

TEST_F(GpuLock, RefusesAnythingButARegularFile) {
  ASSERT_EQ(0, mkfifo(path("ff").c_str(), 0666));
  const sc::gpu_lock_outcome got = sc::lock_gpus({"ff"}, "test I");
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("not a regular file")) << got.error;
}

TEST_F(GpuLock, NeverOpensASymbolicLink) {
  const fs::path target = dir_ / "someone-elses-file";
  { std::ofstream(target) << "keep me\n"; }
  fs::create_symlink(target, path("ll"));
  const sc::gpu_lock_outcome got = sc::lock_gpus({"ll"}, "test H");
  EXPECT_FALSE(got.taken);
  EXPECT_NE(std::string::npos, got.error.find("symbolic link")) << got.error;
  std::ifstream in(target);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ("keep me", text);
}

// fork(): the child inherits the parent's environment, as a death-test child does. `levels` 2: the
// locking process's grandchild. No thread of the test holds the lock state's mutex when it forks.
int in_child(const std::string& owner, bool expect_child, int levels = 1) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (levels > 1) std::_Exit(in_child(owner, expect_child, levels - 1));
    setenv("STREAMCHECK_GPU_LOCK_OWNER", owner.c_str(), 1);
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

// This process's own mark, as main() (claim_gpu_lock_ownership) set it for its children.
std::string own_mark() {
  const char* mark = std::getenv("STREAMCHECK_GPU_LOCK_OWNER");
  return mark != nullptr ? mark : "";
}

TEST_F(GpuLock, AChildOfTheLockingProcessDoesNotLock) {
  // The parent's lock, on a descriptor the child's copy of this process's lock state does not list (a
  // death-test child re-executes the binary and starts with no state at all).
  hold_as_other("gg", "pid of the parent (parent)\n");
  ASSERT_EQ(0u, own_mark().rfind(std::to_string(getpid()) + ":", 0)) << own_mark();
  EXPECT_EQ(0, in_child(own_mark(), /*expect_child=*/true)) << "the child waited for its parent's lock";
  EXPECT_EQ(0, in_child(own_mark(), /*expect_child=*/true, /*levels=*/2))
      << "the grandchild waited for its grandparent's lock";
}

TEST_F(GpuLock, AStaleOwnerMarkIsIgnored) {
  const std::string self = std::to_string(getpid());
  const std::string start = own_mark().substr(own_mark().find(':') + 1);
  for (const std::string& stale : {
           self + ":" + std::to_string(std::stoull(start) + 1),  // this pid, but another process's start time
           std::string("2147483646:") + start,                   // no such process
           std::string("1:18446744073709551615"),                // pid 1, not the process that wrote the mark
           self,                                                 // no start time
       })
    EXPECT_EQ(0, in_child(stale, /*expect_child=*/false)) << "mark " << stale;
}

TEST(GpuLockName, IsTheUuidInHex) {
  cudaUUID_t uuid{};
  for (int i = 0; i < 16; ++i) uuid.bytes[i] = static_cast<char>(i * 17);
  EXPECT_EQ("00112233445566778899aabbccddeeff", sc::uuid_text(uuid));
}

}  // namespace
