#include "sc/runner/resume.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

#include "sc/fixtures/gpu_session.hpp"
#include "sc/runner/process.hpp"

namespace sc {
namespace {

constexpr const char kProgressFlag[] = "--streamcheck-progress=";
constexpr const char kXmlFlag[] = "--gtest_output=xml:";

// What a child wrote into its progress file: the tests it was about to run (in its order) and those it started.
struct child_progress {
  std::vector<std::string> listed;
  std::vector<std::string> started;
};

child_progress read_progress(const std::string& file) {
  child_progress p;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const std::size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string word = line.substr(0, space);
    std::string test = line.substr(space + 1);
    if (word == "test") p.listed.push_back(std::move(test));
    if (word == "start") p.started.push_back(std::move(test));
  }
  return p;
}

// `args` with GoogleTest's filter replaced by `filter`, the XML file of part 2 and later named <entry>.part<n>.xml,
// and the progress file added.
std::vector<std::string> child_arguments(const std::vector<std::string>& args, const std::string& filter, int part,
                                         const std::string& progress) {
  std::vector<std::string> out{args.front()};
  for (std::size_t i = 1; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--gtest_filter=", 0) == 0) continue;
    if (a.rfind(kXmlFlag, 0) == 0 && part > 1) {
      const std::size_t stem_end = a.size() >= 4 && a.compare(a.size() - 4, 4, ".xml") == 0 ? a.size() - 4 : a.size();
      a = a.substr(0, stem_end) + ".part" + std::to_string(part) + ".xml";
    }
    out.push_back(std::move(a));
  }
  out.push_back("--gtest_filter=" + filter);
  out.push_back(kProgressFlag + progress);
  return out;
}

// Runs this executable with `args`; its exit status, 128 + the signal that ended it, or -1 when it could not run.
int run_child(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    // A parent killed by ctest's timeout takes its child along (the child may hold the GPU).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

std::string progress_file() {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/streamcheck-progress-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) return {};
  close(fd);
  return path;
}

bool completed(int status) { return status == 0 || status == 1 || status == kAllSkippedExitCode; }

class progress_listener final : public ::testing::EmptyTestEventListener {
 public:
  explicit progress_listener(int fd) : fd_(fd) {}

 private:
  void note(const char* word, const ::testing::TestInfo& info) {
    const std::string line = std::string(word) + " " + info.test_suite_name() + "." + info.name() + "\n";
    if (write(fd_, line.data(), line.size()) < 0) std::perror("streamcheck: progress file");
  }
  void OnTestProgramStart(const ::testing::UnitTest& unit) override {
    for (const ::testing::TestInfo* info : selected_tests(unit)) note("test", *info);
  }
  void OnTestStart(const ::testing::TestInfo& info) override {
    usable_at_start_ = gpu_session::get().broken_reason().empty();
    note("start", info);
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const std::string broken = gpu_session::get().broken_reason();
    if (!usable_at_start_ || broken.empty() || !gpu_session::get().fresh_process_helps()) return;
    std::fflush(stdout);
    std::fprintf(stderr, "streamcheck: %s.%s left the process unusable (%s); ending it\n", info.test_suite_name(),
                 info.name(), broken.c_str());
    std::fflush(stderr);
    end_process(kEndedExitCode);
  }

  int fd_;
  bool usable_at_start_ = true;
};

}  // namespace

bool filter_may_select_many(const std::string& filter) {
  return filter.empty() || filter.find_first_of("*?:-") != std::string::npos;
}

int run_resuming(const std::vector<std::string>& args) {
  std::string filter = GTEST_FLAG_GET(filter);
  int first_abnormal = 0;
  int last = 0;
  for (int part = 1;; ++part) {
    const std::string progress = progress_file();
    if (progress.empty()) {
      std::perror("streamcheck: no progress file for the test process");
      return 2;
    }
    const int status = run_child(child_arguments(args, filter, part, progress));
    const child_progress p = read_progress(progress);
    std::remove(progress.c_str());
    if (completed(status)) {
      last = status;
      break;
    }
    if (first_abnormal == 0) first_abnormal = status;
    if (p.started.empty() || status == 2) {
      std::fprintf(stderr, "streamcheck: the test process ended (status %d) before its first test\n", status);
      break;
    }
    const std::set<std::string> started(p.started.begin(), p.started.end());
    filter.clear();
    std::size_t left = 0;
    for (const std::string& test : p.listed)
      if (started.count(test) == 0) filter += (left++ == 0 ? "" : ":") + test;
    std::fprintf(stderr, "streamcheck: %s ended its process (status %d)%s\n", p.started.back().c_str(), status,
                 left == 0 ? "" : ("; its " + std::to_string(left) + " tests not started run in a fresh one").c_str());
    if (left == 0) break;
  }
  return first_abnormal != 0 ? first_abnormal : last;
}

void install_progress_listener(const std::string& file) {
  const int fd = open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) {
    std::perror(("streamcheck: cannot open the progress file " + file).c_str());
    return;
  }
  ::testing::UnitTest::GetInstance()->listeners().Append(new progress_listener(fd));
}

}  // namespace sc
