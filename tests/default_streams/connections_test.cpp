// DFLT-15, DFLT-16, DFLT-17 and DFLT-22: behaviors of the hardware connections
// (CUDA_DEVICE_MAX_CONNECTIONS, default 8) and of launch blocking, chosen by environment variables set
// before CUDA initializes (entries default_streams.conn1.*, default_streams.conn32.*,
// default_streams.launch_blocking.*). DFLT-16 and DFLT-17 are parameterized by the connection count: an
// instance per count, each run in the entries that set it (DefaultConnections in the default entries).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "default_streams.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using DefaultStreams = sc::families::DefaultStreams;

bool variable_is(const char* name, const char* value) {
  const char* set = std::getenv(name);
  return set != nullptr && std::string(set) == value;
}

// The DFLT-22 arrangement: the latch's own launch runs on call_while_held's helper thread (with `window`).
// `then_sync` makes the call also wait for its stream (an arrangement mutation: the launch made synchronous
// by hand).
sc::return_observation latch_launch_while_held(sc::families::DefaultStreams& t, bool then_sync,
                                               std::chrono::milliseconds window) {
  const sc::stream s = t.make(stream_flags::non_blocking, "s");
  sc::latch g;
  const sc::return_observation seen = sc::call_while_held(
      [&] {
        try {
          g.hold(s);
          return then_sync ? cudaStreamSynchronize(s.get()) : cudaSuccess;
        } catch (const sc::cuda_error& e) {
          return e.code();
        }
      },
      g, window);
  t.drain();
  sc::observe("detail", seen.detail);
  EXPECT_CUDA_EQ(cudaSuccess, seen.code);
  return seen;
}

// How a DFLT-15 arrangement is changed: `drop_pending` false removes the kernel pending in A (nothing then
// shares a queue with B); `b_behind_latch` sends B's mark into A behind the latch.
struct held_back_arrangement {
  bool drop_pending = true;
  bool b_behind_latch = false;
};

// The DFLT-15 arrangement: a latch runs in A and a mark waits behind it in A (pending at the head of A's
// queue); then an independent mark goes to B. Records whether B's mark stayed absent while A was held
// (held_back); an invalid check fails the test and compares nothing.
void independent_work_held_back(sc::families::DefaultStreams& t, const sc::claim& dflt15, const std::string& key,
                                const held_back_arrangement& how) {
  sc::marks m;
  const sc::stream a = t.make(stream_flags::non_blocking, "a");
  const sc::stream b = t.make(stream_flags::non_blocking, "b");
  sc::latch g;
  t.hold(g, a);
  if (how.drop_pending) t.drop(m, a, 2);  // pending behind the latch
  t.drop(m, how.b_behind_latch ? a : b, 1);
  ASSERT_TRUE(g.wait_started());
  const sc::held_result held_back = sc::absent_while_held(m, 1, g);
  g.open();
  t.drain();
  EXPECT_TRUE(dflt15.observed_row(key, held_back));
}

std::string connections() {
  const char* set = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  return set == nullptr ? std::string("default") : std::string(set);
}

// A connection count DFLT-16 and DFLT-17 are measured with, and the ctest entries that set it before CUDA
// starts (none sets it for the default, 8 on Hopper).
struct connection_count {
  const char* name;      // the instance's
  const char* variable;  // CUDA_DEVICE_MAX_CONNECTIONS as those entries set it; nullptr: unset
  const char* entries;
};
constexpr connection_count kDefaultConnections{"DefaultConnections", nullptr, "the default entries"};
constexpr connection_count kOneConnection{"OneConnection", "1", "default_streams.conn1.*"};
constexpr connection_count kThirtyTwoConnections{"ThirtyTwoConnections", "32", "default_streams.conn32.*"};

// How GoogleTest shows an instance's parameter: by its name.
void PrintTo(const connection_count& count, std::ostream* out) { *out << count.name; }

// DFLT-16 and DFLT-17, once per connection count: each instance runs in the entries that set its count and
// skips elsewhere.
class ConnectionCounts : public DefaultStreams, public ::testing::WithParamInterface<connection_count> {
 protected:
  void SetUp() override {
    DefaultStreams::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (GetParam().variable == nullptr)
      SC_REQUIRE(sc::requirement::default_connections);
    else if (!variable_is("CUDA_DEVICE_MAX_CONNECTIONS", GetParam().variable))
      GTEST_SKIP() << "needs CUDA_DEVICE_MAX_CONNECTIONS=" << GetParam().variable << " before CUDA starts (ctest entry "
                   << GetParam().entries << ")";
  }
};

// `n` non-blocking streams named prefix0, prefix1, ..., made one after the other.
std::vector<sc::stream> make_streams(DefaultStreams& t, unsigned n, const std::string& prefix) {
  std::vector<sc::stream> made;
  for (unsigned i = 0; i < n; ++i) made.push_back(t.make(stream_flags::non_blocking, prefix + std::to_string(i)));
  return made;
}

// How many of marks first .. first + n - 1 land within a window (watched to its end, or until all have
// landed), and when the count last grew, from the window's start (host clock).
struct landings {
  unsigned landed = 0;
  std::chrono::steady_clock::duration last{0};
};
landings count_landings(const sc::marks& m, unsigned first, unsigned n, std::chrono::milliseconds window) {
  const auto start = std::chrono::steady_clock::now();
  landings seen;
  auto last_landing = start;
  while (std::chrono::steady_clock::now() - start < window) {
    unsigned now_landed = 0;
    for (unsigned i = 0; i < n; ++i) now_landed += m.ticket_of(first + i) != 0;
    if (now_landed > seen.landed) last_landing = std::chrono::steady_clock::now();
    seen.landed = now_landed;
    if (seen.landed == n) break;
    std::this_thread::yield();
  }
  seen.last = last_landing - start;
  return seen;
}

// DFLT-16 · RTAS24 R2, Fig. 5, Corollaries 1-2 (observed): with the default 8 connections, more busy
// streams than connections produce false dependencies: streams whose head shares a hardware queue with a
// busy stream's pending work are held back. 8 streams each hold a latch and a mark pending behind it; then
// 16 fresh streams get one mark each. How many fresh marks land while the latches are closed?
// What ran before it in its process does not change the count: its 24 streams are created one after the other,
// and the driver hands connections out to new streams in turn, so the 8 busy streams cover all 8 default
// connections, and with 32 the 24 streams get 24 different ones, wherever the turn stood.
TEST_P(ConnectionCounts, FreshStreamsBehindBusyStreamsWithTheConnectionsInUse) {
  const sc::claim dflt16("DFLT-16");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE_CONCURRENT_KERNELS();
  constexpr unsigned kBusy = 8;
  constexpr unsigned kFresh = 16;
  // Reason: a 1-thread kernel whose stream has a free queue lands within microseconds of the window's start
  // (they were launched before it starts; last_landing_us records when the last was seen: with 32
  // connections an H100 had all 16 landed at the window's first look, 0.2-0.7 us after its start, in 25
  // runs); 100 ms is over 10^5 times that, and thousands of launches. Marks still absent at its end are
  // counted as held back.
  constexpr auto kLandingWindow = std::chrono::milliseconds{100};
  // Mutation (arrangement), per entry: with 32 connections (every stream has its own queue) the fresh
  // marks go behind the latches; otherwise nothing is pending behind the latches (no queue head waits).
  const bool mutated = dflt16.mutated(sc::mutation_kind::arrangement);
  const bool own_queues = connections() == "32";
  sc::marks m;
  const std::vector<sc::stream> busy = make_streams(*this, kBusy, "busy");
  const std::vector<sc::stream> fresh = make_streams(*this, kFresh, "fresh");
  sc::families::latch_set latches(kBusy);  // declared last: destroyed (opened) first
  for (unsigned i = 0; i < kBusy; ++i) {
    hold(latches[i], busy[i]);
    if (!(mutated && !own_queues)) drop(m, busy[i], i);  // pending behind the latch: the queue head waits
  }
  for (unsigned i = 0; i < kFresh; ++i) drop(m, mutated && own_queues ? busy[i % kBusy] : fresh[i], kBusy + i);
  const landings seen = count_landings(m, kBusy, kFresh, kLandingWindow);
  const unsigned started = latches.started();
  const std::string not_closed = latches.not_closed();
  latches.open_all();
  drain();
  ASSERT_EQ("", not_closed) << "a latch was not closed during the window, so the count proves nothing";
  const std::string key = "connections_" + connections();
  sc::observe(key + ".busy_latches_running", static_cast<int>(started));
  sc::observe(key + ".fresh_marks_landed", static_cast<int>(seen.landed));
  // Evidence for the window: how long after its start the last fresh mark was seen (absent: none landed).
  if (seen.landed > 0)
    sc::observe(key + ".last_landing_us", std::chrono::duration<double, std::micro>(seen.last).count());
  EXPECT_TRUE(dflt16.matches_baseline(key + ".fresh_marks_landed", static_cast<int>(seen.landed)));
}

// DFLT-17's producer/consumer pairs: pair p has a buffer, a producer and a consumer stream and the events
// between them, made pair by pair (the order in which the streams are handed their connections).
class ping_pong_pairs {
 public:
  ping_pong_pairs(DefaultStreams& t, unsigned pairs) {
    for (unsigned p = 0; p < pairs; ++p) {
      data_.emplace_back(kElements);
      producers_.push_back(t.make(stream_flags::non_blocking, "producer" + std::to_string(p)));
      consumers_.push_back(t.make(stream_flags::non_blocking, "consumer" + std::to_string(p)));
      produced_.push_back(sc::event::create(sc::event_flags::disable_timing));
      consumed_.push_back(sc::event::create(sc::event_flags::disable_timing));
    }
  }
  // Round `rep` of pair p: the producer waits for the consumer's previous round and writes its value late;
  // the consumer waits for the producer's event (when `wait_for_data`), reads early in reverse order and
  // adds the elements that are not this round's value to `mismatches`.
  void enqueue_round(unsigned p, unsigned rep, bool wait_for_data, std::uint32_t* mismatches);

 private:
  static constexpr std::uint32_t kElements = 4096;
  // Reason: 20 us of spinning before the write is many times a launch, so a consumer that did not wait
  // would read the previous value.
  static constexpr std::uint64_t kProducerDelayNs = 20'000;
  std::vector<sc::device_buffer<std::uint32_t>> data_;
  std::vector<sc::stream> producers_;
  std::vector<sc::stream> consumers_;
  std::vector<sc::event> produced_;
  std::vector<sc::event> consumed_;
};

void ping_pong_pairs::enqueue_round(unsigned p, unsigned rep, bool wait_for_data, std::uint32_t* mismatches) {
  const std::uint32_t value = (p + 1) * 1000u + rep + 1;
  if (rep > 0) SC_CHECK_CUDA(cudaStreamWaitEvent(producers_[p].get(), consumed_[p].get(), 0));
  SC_CHECK_CUDA(
      sc::kernels::launch_fill_late(producers_[p].get(), data_[p].data(), kElements, value, kProducerDelayNs));
  SC_CHECK_CUDA(cudaEventRecord(produced_[p].get(), producers_[p].get()));
  if (wait_for_data) SC_CHECK_CUDA(cudaStreamWaitEvent(consumers_[p].get(), produced_[p].get(), 0));
  SC_CHECK_CUDA(
      sc::kernels::launch_count_mismatches(consumers_[p].get(), data_[p].data(), kElements, value, mismatches));
  SC_CHECK_CUDA(cudaEventRecord(consumed_[p].get(), consumers_[p].get()));
}

// DFLT-17 · RT stream and event semantics; ROCm hipSharedQueueAnyOrderOverlap pattern: under
// oversubscription (32 streams; 1, 8 or 32 connections) every event dependency is honored: 16
// producer/consumer pairs ping-pong 50 times; producers write late, consumers read early in reverse order.
TEST_P(ConnectionCounts, OversubscribedStreamsKeepEveryEventDependency) {
  const sc::claim dflt17("DFLT-17");
  constexpr unsigned kPairs = 16;
  constexpr unsigned kReps = 50;
  sc::device_buffer<std::uint32_t> mismatches(1);
  ping_pong_pairs pairs(*this, kPairs);
  const bool wait_for_data = !dflt17.mutated(sc::mutation_kind::arrangement);
  for (unsigned rep = 0; rep < kReps; ++rep)
    for (unsigned p = 0; p < kPairs; ++p) pairs.enqueue_round(p, rep, wait_for_data, mismatches.data());
  drain();
  std::uint32_t wrong = 0;
  SC_CHECK_CUDA(cudaMemcpy(&wrong, mismatches.data(), sizeof(wrong), cudaMemcpyDeviceToHost));
  sc::observe("connections", connections());
  sc::observe("checks", static_cast<int>(kPairs * kReps));
  sc::observe("mismatched_elements", static_cast<int>(wrong));
  EXPECT_EQ(0u, wrong) << "consumers read data their producers had not written yet, with " << connections()
                       << " connections";
}

INSTANTIATE_TEST_SUITE_P(, ConnectionCounts,
                         ::testing::Values(kDefaultConnections, kOneConnection, kThirtyTwoConnections),
                         [](const ::testing::TestParamInfo<connection_count>& instance) {
                           return instance.param.name;
                         });

// DFLT-15 · RTAS24 rule R2; Megatron-LM #533 (observed): with CUDA_DEVICE_MAX_CONNECTIONS=1 all streams
// share one hardware queue in host enqueue order, so a kernel pending behind a latch in A holds back a
// later, independent kernel in B (a false dependency).
TEST_F(DefaultStreams, WithOneConnectionAPendingKernelHoldsBackAnotherStream) {
  const sc::claim dflt15("DFLT-15");
  SC_REQUIRE(sc::requirement::async_launches);
  if (!variable_is("CUDA_DEVICE_MAX_CONNECTIONS", "1"))
    GTEST_SKIP() << "needs CUDA_DEVICE_MAX_CONNECTIONS=1 before CUDA starts (ctest entry default_streams.conn1.*)";
  held_back_arrangement how;
  how.drop_pending = !dflt15.mutated(sc::mutation_kind::arrangement);
  independent_work_held_back(*this, dflt15, "held_back", how);
}

// DFLT-15 negative control (default connections): the same arrangement does not hold B back.
TEST_F(DefaultStreams, WithDefaultConnectionsAPendingKernelDoesNotHoldBackAnotherStream) {
  const sc::claim dflt15("DFLT-15");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::default_connections);
  held_back_arrangement how;
  how.b_behind_latch = dflt15.mutated(sc::mutation_kind::arrangement);
  independent_work_held_back(*this, dflt15, "default.held_back", how);
}

// DFLT-22 · PG (environment variables) negative control: without CUDA_LAUNCH_BLOCKING a launch returns
// while its kernel still runs.
TEST_F(DefaultStreams, LaunchReturnsBeforeTheKernelEnds) {
  const sc::claim dflt22("DFLT-22");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool then_sync = dflt22.mutated(sc::mutation_kind::arrangement);
  EXPECT_TRUE(latch_launch_while_held(*this, then_sync, sc::kReturnWindow).returned)
      << "the launch waited for its kernel";
}

// DFLT-22 · PG (environment variables): with CUDA_LAUNCH_BLOCKING=1 a kernel launch returns only after
// the kernel has completed: the launch of a latch cannot return while the latch is closed.
TEST_F(DefaultStreams, LaunchReturnsOnlyAfterTheKernelWithLaunchBlocking) {
  const sc::claim dflt22("DFLT-22");
  if (!variable_is("CUDA_LAUNCH_BLOCKING", "1"))
    GTEST_SKIP() << "needs CUDA_LAUNCH_BLOCKING=1 before CUDA starts (ctest entry default_streams.launch_blocking.*)";
  // The one test that holds a stream under synchronous launches on purpose: the latch's own launch is the
  // call under test (every other hold refuses at once here).
  sc::expect_blocking_launches();
  const sc::return_observation seen = latch_launch_while_held(*this, false, sc::kWaitWindow);
  // Mutation (expectation only): under CUDA_LAUNCH_BLOCKING=1 every launch is synchronous, so no
  // arrangement can make one return while its kernel runs; the entry without the variable is the
  // arrangement-mutated partner.
  if (dflt22.mutated(sc::mutation_kind::expectation))
    EXPECT_TRUE(seen.returned) << "(mutated expectation)";
  else
    EXPECT_TRUE(sc::does_not_hold(seen.returned)) << "the launch returned while its kernel was held";
}

}  // namespace
