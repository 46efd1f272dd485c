// PRIO-01..06, PRIO-11: the priority range and what a created stream reports, runtime and driver API.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "priority_flags.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/latch.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/fixtures/thread_team.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream;
using sc::stream_flags;
using PriorityFlags = sc::families::PriorityFlags;

int clamp_priority(long long request, int least, int greatest) {
  if (request < greatest) return greatest;
  if (request > least) return least;
  return static_cast<int>(request);
}

struct out_of_range_request {
  const char* label;
  long long value;
};
std::vector<out_of_range_request> out_of_range_requests(int least, int greatest) {
  return {{"INT_MIN", INT_MIN},          {"minus_1000", -1000}, {"greatest_minus_1", greatest - 1LL},
          {"least_plus_1", least + 1LL}, {"plus_1000", 1000},   {"INT_MAX", INT_MAX}};
}

const char* flags_name(stream_flags f) { return f == stream_flags::blocking ? "blocking" : "non_blocking"; }

// PRIO-01 · RT cudaDeviceGetStreamPriorityRange, DRV cuCtxGetStreamPriorityRange: least >= greatest
// (lower numbers are higher priorities, the meaningful range is [greatest, least]); either pointer may
// be NULL when that value is not wanted; a device without priorities reports 0 for both.
TEST_F(PriorityFlags, RuntimeRangeHasLeastAtOrAboveGreatest) {
  const sc::claim prio01("PRIO-01");
  int least = 0;
  int greatest = 0;
  if (prio01.mutated(sc::mutation_kind::arrangement))
    EXPECT_CUDA_EQ(cudaSuccess, cudaDeviceGetStreamPriorityRange(&greatest, &least));
  else
    EXPECT_CUDA_EQ(cudaSuccess, cudaDeviceGetStreamPriorityRange(&least, &greatest));
  EXPECT_GE(least, greatest) << "least " << least << ", greatest " << greatest;
  if (least == greatest) {
    EXPECT_EQ(0, least) << "a device without priorities reports 0 for both";
  }
  int least_only = 99;
  int greatest_only = 99;
  EXPECT_CUDA_EQ(cudaSuccess, cudaDeviceGetStreamPriorityRange(&least_only, nullptr));
  EXPECT_CUDA_EQ(cudaSuccess, cudaDeviceGetStreamPriorityRange(nullptr, &greatest_only));
  EXPECT_EQ(least_, least_only) << "least asked alone";
  EXPECT_EQ(greatest_, greatest_only) << "greatest asked alone";
  sc::observe("least", least);
  sc::observe("greatest", greatest);
  sc::observe("levels", least - greatest + 1);
  EXPECT_TRUE(prio01.matches_baseline("least", least));
  EXPECT_TRUE(prio01.matches_baseline("greatest", greatest));
}

// PRIO-02 · DRV cuCtxGetStreamPriorityRange, RT (same definition): the primary context's driver range
// equals the runtime range.
TEST_F(PriorityFlags, DriverRangeEqualsRuntimeRange) {
  const sc::claim prio02("PRIO-02");
  int least = 0;
  int greatest = 0;
  if (prio02.mutated(sc::mutation_kind::arrangement))
    EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuCtxGetStreamPriorityRange(&greatest, &least));
  else
    EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuCtxGetStreamPriorityRange(&least, &greatest));
  EXPECT_EQ(least_, least);
  EXPECT_EQ(greatest_, greatest);
  sc::observe("driver.least", least);
  sc::observe("driver.greatest", greatest);
}

// PRIO-03 · RT cudaStreamCreateWithPriority, cudaStreamGetPriority: a priority outside the range is
// clamped to the nearest end without error, and Get returns the clamped value. Requests below the range
// are decisive (greatest differs from the default 0). Requests above it clamp to least, which on every
// NVIDIA GPU so far is 0, the default priority: there they cannot be told from "the priority was
// ignored" (recorded as above_range_distinguishable).
TEST_F(PriorityFlags, RuntimeOutOfRangePrioritiesAreClamped) {
  const sc::claim prio03("PRIO-03");
  if (priorities_missing()) GTEST_SKIP() << kNoPriorities;
  for (const stream_flags flags : {stream_flags::blocking, stream_flags::non_blocking}) {
    for (const auto& request : out_of_range_requests(least_, greatest_)) {
      SCOPED_TRACE(std::string(request.label) + " " + flags_name(flags));
      const int asked = prio03.mutate(sc::mutation_kind::arrangement, static_cast<int>(request.value), 0);
      cudaStream_t raw = nullptr;
      EXPECT_CUDA_EQ(cudaSuccess, cudaStreamCreateWithPriority(&raw, static_cast<unsigned>(flags), asked));
      const stream s = stream::adopt(raw, request.label);
      int got = 0;
      EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetPriority(s.get(), &got));
      EXPECT_EQ(clamp_priority(request.value, least_, greatest_), got);
      sc::observe(std::string("clamp.") + request.label + "." + flags_name(flags), got);
    }
  }
  sc::observe("above_range_distinguishable", least_ != 0);
}

// PRIO-04 · DRV cuStreamCreateWithPriority, cuStreamGetPriority: the same clamping through the driver API
// (the above-range half has PRIO-03's limit where least is 0).
TEST_F(PriorityFlags, DriverOutOfRangePrioritiesAreClamped) {
  const sc::claim prio04("PRIO-04");
  if (priorities_missing()) GTEST_SKIP() << kNoPriorities;
  for (const unsigned flags : {0u, static_cast<unsigned>(CU_STREAM_NON_BLOCKING)}) {
    for (const auto& request : out_of_range_requests(least_, greatest_)) {
      SCOPED_TRACE(std::string(request.label) + " flags " + std::to_string(flags));
      const int asked = prio04.mutate(sc::mutation_kind::arrangement, static_cast<int>(request.value), 0);
      CUstream raw = nullptr;
      EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuStreamCreateWithPriority(&raw, flags, asked));
      const stream s = stream::adopt(raw, request.label);  // CUstream and cudaStream_t are one type
      int got = 0;
      EXPECT_CU_EQ(CUDA_SUCCESS, cu().cuStreamGetPriority(s.get(), &got));
      EXPECT_EQ(clamp_priority(request.value, least_, greatest_), got);
      sc::observe(std::string("driver.clamp.") + request.label + ".flags" + std::to_string(flags), got);
    }
  }
  sc::observe("above_range_distinguishable", least_ != 0);
}

// PRIO-05 · RT cudaStreamGetPriority: every value in [greatest, least] reads back unchanged, both ends
// included, through both APIs.
TEST_F(PriorityFlags, EveryInRangePriorityReadsBackUnchanged) {
  const sc::claim prio05("PRIO-05");
  if (priorities_missing()) GTEST_SKIP() << kNoPriorities;
  int checked = 0;
  for (int p = greatest_; p <= least_; ++p) {
    SCOPED_TRACE("priority " + std::to_string(p));
    const int asked = prio05.mutate(sc::mutation_kind::arrangement, p, p + 1);
    const stream s = stream::create(stream_flags::non_blocking, asked);
    const auto seen = priority_of(s.get());
    EXPECT_EQ(p, seen.runtime);
    EXPECT_EQ(p, seen.driver);
    ++checked;
  }
  // A loop that never ran proves nothing: it must have visited every level.
  EXPECT_EQ(least_ - greatest_ + 1, checked);
  sc::observe("levels_checked", checked);
}

// PRIO-06 · RT/DRV ...CreateWithPriority ("0 represents default priority"): streams from the plain
// constructors have priority 0.
TEST_F(PriorityFlags, PlainlyCreatedStreamsHaveDefaultPriorityZero) {
  const sc::claim prio06("PRIO-06");
  std::vector<stream> streams;
  streams.push_back(prio06.mutated(sc::mutation_kind::arrangement)
                        ? stream::create(stream_flags::blocking, greatest_ - 1)
                        : stream::create_default("cudaStreamCreate"));
  for (const unsigned flags : {0u, static_cast<unsigned>(cudaStreamNonBlocking)}) {
    streams.push_back(runtime_stream_with_flags(flags));
    streams.push_back(driver_stream_with_flags(flags));
  }
  for (const stream& s : streams) {
    const auto seen = priority_of(s.get());
    EXPECT_EQ(0, seen.runtime) << s.name();
    EXPECT_EQ(0, seen.driver) << s.name();
  }
}

// PRIO-11's start lines: the threads arrive, then wait for "start" (enqueue) and "go" (check), which the test
// opens. Changed and read under the team's lock.
struct team_phases {
  // Reason: allocation by 16 threads at once took about 2.5 s on an H100; 10 s bounds a stuck thread.
  static constexpr auto kDeadline = std::chrono::milliseconds{10'000};
  unsigned arrived = 0;
  bool start = false;
  bool go = false;
  void arrive(sc::thread_team& team) {
    team.update([this] { ++arrived; });
  }
  bool all_arrived(sc::thread_team& team, unsigned n) {
    return team.wait_until([this, n] { return arrived >= n; }, kDeadline);
  }
  void open(sc::thread_team& team, bool& phase) {
    team.update([&phase] { phase = true; });
  }
  void wait_for(sc::thread_team& team, const bool& phase) {
    if (!team.wait_until([&phase] { return phase; }, kDeadline))
      throw std::runtime_error("gave up waiting for the test thread");
  }
};

// One PRIO-11 thread's work: a stream at every priority level (blocking and non-blocking alternating), each
// filling a buffer with its own value and copying it back.
class level_streams {
 public:
  level_streams(unsigned thread, int greatest, int least)
      : side_(stream::create(stream_flags::non_blocking, 0, "side")) {
    for (int p = greatest; p <= least; ++p) {
      const auto flags = (p + static_cast<int>(thread)) % 2 == 0 ? stream_flags::blocking : stream_flags::non_blocking;
      levels_.push_back(level{stream::create(flags, p), sc::device_buffer<std::uint32_t>(kElements),
                              sc::pinned_buffer<std::uint32_t>(kElements),
                              thread * 1000u + static_cast<std::uint32_t>(p - greatest) + 1u});
    }
  }
  // Every level's work, behind `released`; the copy back in a side stream when `unordered`. Returns the count.
  unsigned enqueue(const sc::event& released, bool unordered) {
    for (level& w : levels_) {
      SC_CHECK_CUDA(cudaStreamWaitEvent(w.s.get(), released.get(), 0));
      SC_CHECK_CUDA(sc::kernels::launch_fill(w.s.get(), w.data.data(), kElements, w.value));
      const stream& copier = unordered ? side_ : w.s;
      SC_CHECK_CUDA(
          cudaMemcpyAsync(w.back.data(), w.data.data(), w.data.bytes(), cudaMemcpyDeviceToHost, copier.get()));
      if (unordered) SC_CHECK_CUDA(sc::synchronize_within(side_, sc::kWorkDeadline));
    }
    return static_cast<unsigned>(levels_.size());
  }
  // Waits for every level and checks its copy; the number of levels checked (throws at the first wrong element).
  int check() const {
    for (const level& w : levels_) {
      SC_CHECK_CUDA(sc::synchronize_within(w.s, sc::kWorkDeadline));
      for (std::uint32_t i = kElements; i-- > 0;)
        if (w.back[i] != w.value)
          throw std::runtime_error("element " + std::to_string(i) + " is " + std::to_string(w.back[i]) + ", expected " +
                                   std::to_string(w.value));
    }
    return static_cast<int>(levels_.size());
  }

 private:
  static constexpr std::uint32_t kElements = 4096;
  struct level {
    stream s;
    sc::device_buffer<std::uint32_t> data;
    sc::pinned_buffer<std::uint32_t> back;
    std::uint32_t value;
  };
  stream side_;
  std::vector<level> levels_;
};

// PRIO-11's threads: each makes its level_streams, arrives at the start line, enqueues its work behind
// `released` once the test opens "start", and checks it once the test opens "go". A thread that throws keeps
// the message as its error, and still arrives, so that it never holds the start line.
class level_threads {
 public:
  level_threads(unsigned threads, int device, int greatest, int least)
      : threads_(threads),
        device_(device),
        greatest_(greatest),
        least_(least),
        errors_(threads),
        checked_(threads, 0) {}

  void start(const sc::event& released, bool unordered_copy) {
    team_.start(threads_, [this, &released, unordered_copy](unsigned t) {
      try {
        SC_CHECK_CUDA(cudaSetDevice(device_));
        level_streams work(t, greatest_, least_);
        phases_.arrive(team_);
        phases_.wait_for(team_, phases_.start);
        enqueued_ += work.enqueue(released, unordered_copy);
        phases_.wait_for(team_, phases_.go);
        checked_[t] = work.check();
      } catch (const std::exception& e) {
        errors_[t] = e.what();
        phases_.arrive(team_);  // a thread that failed early must not hold the start line
      }
    });
  }
  bool all_arrived() { return phases_.all_arrived(team_, threads_); }
  // Opens "start" while `g` holds the event every stream waits on, and checks that every thread's streams
  // have their work enqueued (so pending at once) while it is closed; records how long that took.
  sc::held_result start_while_held(const sc::latch& g) {
    const unsigned expected = threads_ * static_cast<unsigned>(least_ - greatest_ + 1);
    const auto started = std::chrono::steady_clock::now();
    phases_.open(team_, phases_.start);
    sc::held_result all_pending = sc::present_while_held(
        "all " + std::to_string(expected) + " streams created with their work pending",
        [&] { return enqueued_.load() == expected; }, g);
    sc::observe("enqueue_ms",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    sc::observe("streams_pending_at_once", static_cast<int>(enqueued_.load()));
    return all_pending;
  }
  void open_start() { phases_.open(team_, phases_.start); }
  void open_go() { phases_.open(team_, phases_.go); }
  void end() { team_.end(); }
  const std::string& error(unsigned t) const { return errors_[t]; }
  int levels_checked(unsigned t) const { return checked_[t]; }

 private:
  const unsigned threads_;
  const int device_;
  const int greatest_;
  const int least_;
  std::vector<std::string> errors_;
  std::vector<int> checked_;
  team_phases phases_;  // the team's lock guards it
  std::atomic<unsigned> enqueued_{0};
  sc::thread_team team_;  // last: its threads use every member above
};

// PRIO-11 · RT stream semantics: streams at every level, created and used from 16 host threads at once,
// all complete with correct results. "At once" is arranged, not hoped for: the 16 threads create their
// streams and buffers together, then, once a latch holds, enqueue their work together; every stream's
// work waits on an event behind that latch, so all 16 x levels streams have their work pending at the
// same time (checked while the latch is closed) before any of it runs.
TEST_F(PriorityFlags, StreamsAtEveryLevelFromSixteenThreadsComplete) {
  const sc::claim prio11("PRIO-11");
  SC_REQUIRE(sc::requirement::async_launches);
  constexpr unsigned kThreads = 16;
  const bool unordered_copy = prio11.mutated(sc::mutation_kind::arrangement);
  const stream hold = stream::create(stream_flags::non_blocking, 0, "hold");
  const sc::event released = sc::event::create(sc::event_flags::disable_timing);
  level_threads threads(kThreads, device(), greatest_, least_);
  threads.start(released, unordered_copy);
  sc::held_result all_pending{sc::held_outcome::invalid, "not measured: the threads did not reach the start line"};
  {
    sc::latch g;
    if (threads.all_arrived()) {
      g.hold(hold);
      SC_CHECK_CUDA(cudaEventRecord(released.get(), hold.get()));
      all_pending = threads.start_while_held(g);
    }
    threads.open_start();
    g.open();
    threads.open_go();
  }
  threads.end();
  EXPECT_TRUE(all_pending);
  for (unsigned t = 0; t < kThreads; ++t) {
    EXPECT_EQ("", threads.error(t)) << "thread " << t;
    EXPECT_EQ(least_ - greatest_ + 1, threads.levels_checked(t)) << "thread " << t;
  }
}

}  // namespace
