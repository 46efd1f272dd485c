// EVT-13, EVT-19: how the host thread waits (spinning or sleeping); EVT-15: events recorded and waited on from 20
// host threads, each on its own per-thread default stream.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "events.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/thread_team.hpp"
#include "sc/fixtures/thread_time.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::EventsAndWaits;

// The calling thread's CPU time and wall time while `wait` blocks on a spin of `spin_ns` enqueued first.
template <class Wait>
sc::thread_time measure_wait(const sc::stream& s, sc::kernels::block_record* records, std::uint64_t spin_ns,
                             Wait&& wait) {
  SC_CHECK_CUDA(sc::kernels::launch_spin(s.get(), records, 1, 32, spin_ns));
  return sc::time_on_this_thread([&] { SC_CHECK_CUDA(wait()); });
}

// The spin a waiting thread is measured on. Reason for 20 ms: hundreds of scheduler ticks of a sleeping thread,
// and long against launch cost.
constexpr std::uint64_t kSpinNs = 20'000'000;
// Reasons: a spinning wait keeps its thread on a CPU nearly all the time (ratio near 1); a sleeping one wakes a
// few times (ratio near 0). 0.5 and 0.2 separate the two with room for a loaded host.
constexpr double kSpinsAtLeast = 0.5;
constexpr double kSleepsAtMost = 0.2;

// A host call whose code the caller checks.
using host_call = std::function<cudaError_t()>;

// A wait that records `e` in `s` and synchronizes the event.
host_call record_and_synchronize(const sc::event& e, const sc::stream& s) {
  return [&e, &s] {
    SC_CHECK_CUDA(cudaEventRecord(e.get(), s.get()));
    return cudaEventSynchronize(e.get());
  };
}

// A wait's figures, as "<prefix>.wall_ms" and "<prefix>.cpu_ms".
void observe_wait(const std::string& prefix, const sc::thread_time& w) {
  sc::observe(prefix + ".wall_ms", w.wall_ms);
  sc::observe(prefix + ".cpu_ms", w.cpu_ms);
}

// A wait measured under a scheduling flag set on the running primary context, or why none was.
struct flagged_wait {
  std::string set;                      // what the call that set the flag returned, by name
  std::optional<sc::thread_time> wait;  // empty where the flag was refused
  std::string why_not;                  // then: why no wait was measured
};

// cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) on the running primary context, then the wait of a stream
// synchronize on a spin of `s`; the device's flags are restored after the wait.
flagged_wait stream_synchronize_under_device_blocking_sync(const sc::stream& s, sc::kernels::block_record* records) {
  flagged_wait seen;
  unsigned before = 0;
  SC_CHECK_CUDA(cudaGetDeviceFlags(&before));
  const cudaError_t set = sc::taking_last_error(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  seen.set = sc::error_name(set);
  if (set != cudaSuccess) {
    seen.why_not = "cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) on the running context returned " + seen.set +
                   ": no wait under the flag";
    return seen;
  }
  seen.wait = measure_wait(s, records, kSpinNs, [&] { return cudaStreamSynchronize(s.get()); });
  SC_CHECK_CUDA(cudaSetDeviceFlags(before));
  return seen;
}

// Restores the primary context's flags however the test leaves its scope (a failed step throws): later tests of
// the process measure how their threads wait.
struct restore_flags {
  const sc::driver_api& drv;
  CUdevice dev;
  unsigned flags;
  ~restore_flags() {
    sc::note_teardown(drv.cuDevicePrimaryCtxSetFlags(dev, flags), "cuDevicePrimaryCtxSetFlags (restore)");
  }
};

// EVT-13 (observed) · RT cudaEventCreateWithFlags (cudaEventBlockingSync), cudaSetDeviceFlags
// (cudaDeviceScheduleBlockingSync): the host thread waiting in cudaEventSynchronize spins on a default event
// and sleeps on a blocking-sync event; the device flag, where the driver takes it on a running context, makes
// a stream synchronize sleep too. Measured as the waiting thread's CPU time over the wall time of a wait on a
// 20 ms GPU spin.
TEST_F(EventsAndWaits, BlockingSyncEventLetsTheWaitingThreadSleep) {
  const sc::claim evt13("EVT-13");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  sc::mapped<sc::kernels::block_record> records(1);
  const sc::event plain = sc::event::create(sc::event_flags::timing);
  // Mutation (arrangement): the "blocking-sync" event is a default one.
  const sc::event blocking = sc::event::create(
      evt13.mutate(sc::mutation_kind::arrangement, sc::event_flags::blocking_sync, sc::event_flags::timing));
  const sc::thread_time spin = measure_wait(s, records.device(), kSpinNs, record_and_synchronize(plain, s));
  const sc::thread_time sleep = measure_wait(s, records.device(), kSpinNs, record_and_synchronize(blocking, s));
  observe_wait("default_event", spin);
  observe_wait("blocking_sync_event", sleep);
  EXPECT_TRUE(evt13.matches_baseline("default_event_sync_spins", spin.busy() >= kSpinsAtLeast));
  EXPECT_TRUE(evt13.matches_baseline("blocking_sync_event_sleeps", sleep.busy() <= kSleepsAtMost));

  // The device flag on the running primary context.
  const flagged_wait flagged = stream_synchronize_under_device_blocking_sync(s, records.device());
  sc::observe("set_device_flags_on_running_context", flagged.set);
  if (!flagged.wait) {
    // The row is not dropped: it could not be measured, which is a failure with its reason.
    EXPECT_TRUE(evt13.observed_row("device_blocking_sync_sleeps", sc::invalid_check(flagged.why_not)));
  } else {
    observe_wait("device_flag", *flagged.wait);
    EXPECT_TRUE(evt13.matches_baseline("device_blocking_sync_sleeps", flagged.wait->busy() <= kSleepsAtMost));
  }
}

// EVT-19 (observed) · DRV cuDevicePrimaryCtxSetFlags (CU_CTX_SCHED_BLOCKING_SYNC: "block the CPU thread on a
// synchronization primitive when waiting for the GPU"), cuStreamSynchronize: with the flag set on the running
// primary context, the thread waiting in cuStreamSynchronize sleeps. EVT-13's method and bounds; the flags the
// context had are restored.
TEST_F(EventsAndWaits, DriverStreamSynchronizeSleepsUnderBlockingSync) {
  const sc::claim evt19("EVT-19");
  // Mutation (arrangement): the flag set is CU_CTX_SCHED_SPIN, so the waiting thread spins.
  const unsigned policy =
      evt19.mutate<unsigned>(sc::mutation_kind::arrangement, CU_CTX_SCHED_BLOCKING_SYNC, CU_CTX_SCHED_SPIN);
  const sc::driver_api& drv = sc::driver();
  const sc::stream s = make(stream_flags::non_blocking, "s");
  sc::mapped<sc::kernels::block_record> records(1);
  CUdevice dev = 0;
  ASSERT_CU_EQ(CUDA_SUCCESS, drv.cuDeviceGet(&dev, device()));
  unsigned before = 0;
  int active = 0;
  ASSERT_CU_EQ(CUDA_SUCCESS, drv.cuDevicePrimaryCtxGetState(dev, &before, &active));
  sc::observe("primary_context.flags_before", static_cast<long long>(before));
  const CUresult set = drv.cuDevicePrimaryCtxSetFlags(dev, (before & ~CU_CTX_SCHED_MASK) | policy);
  sc::observe("set_flags_on_running_context", sc::error_name(set));
  if (set != CUDA_SUCCESS) {
    const std::string why = "cuDevicePrimaryCtxSetFlags on the running context returned " + sc::error_name(set);
    EXPECT_TRUE(evt19.observed_row("blocking_sync_sleeps", sc::invalid_check(why + ": no wait under the flag")));
    return;
  }
  const restore_flags restore{drv, dev, before};
  CUresult waited = CUDA_ERROR_UNKNOWN;
  const sc::thread_time flagged = measure_wait(s, records.device(), kSpinNs, [&] {
    waited = drv.cuStreamSynchronize(s.get());
    return cudaSuccess;
  });
  EXPECT_CU_EQ(CUDA_SUCCESS, waited) << "cuStreamSynchronize under the flag";
  observe_wait("synchronize", flagged);
  EXPECT_TRUE(evt19.matches_baseline("blocking_sync_sleeps", flagged.busy() <= kSleepsAtMost));
}

// EVT-15's chain of host threads, each on its own per-thread default stream: thread t waits on thread t-1's
// event, drops mark t and records event t. Thread t enqueues only after thread t-1 has, and stays alive (with
// its per-thread stream) until the team ends; a thread still waiting for its predecessor then (on any way out of
// the test) leaves without enqueueing anything.
class thread_chain {
 public:
  thread_chain(unsigned threads, int device) : device_(device), codes_(threads, cudaSuccess) {
    for (unsigned t = 0; t < threads; ++t) events_.push_back(sc::event::create(sc::event_flags::disable_timing));
  }

  // Thread t's part: thread 0 first holds its stream with `head`; thread `unchained` makes no wait.
  void link(sc::thread_team& team, unsigned t, sc::latch& head, sc::marks& m, unsigned unchained);

  // Whether every thread enqueued its part within kWorkDeadline.
  bool all_enqueued(sc::thread_team& team) {
    return team.wait_until([&] { return enqueued_ == codes_.size(); }, sc::kWorkDeadline);
  }
  // Valid once the team has ended: what thread t's calls returned.
  cudaError_t code(unsigned t) const { return codes_[t]; }

 private:
  int device_;
  std::vector<sc::event> events_;
  unsigned enqueued_ = 0;  // under the team's lock: threads 0..enqueued_-1 have recorded their event
  std::vector<cudaError_t> codes_;
};

void thread_chain::link(sc::thread_team& team, unsigned t, sc::latch& head, sc::marks& m, unsigned unchained) {
  cudaError_t code = cudaSetDevice(device_);
  if (!team.wait_until([&] { return enqueued_ >= t; })) return;
  const sc::stream mine = sc::stream::per_thread();
  try {
    if (t == 0) head.hold(mine);
    if (code == cudaSuccess && t > 0 && t != unchained)
      code = cudaStreamWaitEvent(cudaStreamPerThread, events_[t - 1].get(), 0);
    if (code == cudaSuccess) m.drop(mine, t);
    if (code == cudaSuccess) code = cudaEventRecord(events_[t].get(), cudaStreamPerThread);
  } catch (...) {
    code = cudaErrorUnknown;
  }
  team.update([&] {
    codes_[t] = code;
    enqueued_ = t + 1;
  });
  team.wait_until([] { return false; });  // alive (with its per-thread stream) until the chain has run
}

// The probe "any of marks 0..n-1 landed".
sc::probe any_mark_landed(const sc::marks& m, unsigned n) {
  return sc::probe("any thread's mark landed", [&m, n] {
    for (unsigned t = 0; t < n; ++t)
      if (m.ticket_of(t) != 0) return true;
    return false;
  });
}

// How many of marks 1..n-1 landed no later than the mark before them.
unsigned marks_out_of_order(const sc::marks& m, unsigned n) {
  unsigned out_of_order = 0;
  for (unsigned t = 1; t < n; ++t)
    if (m.ticket_of(t) <= m.ticket_of(t - 1)) ++out_of_order;
  return out_of_order;
}

// EVT-15 · RT (events and per-thread default streams): 20 host threads, each on its own per-thread default
// stream, form one chain: thread t waits on thread t-1's event, drops its mark and records its own event.
// Thread 0's stream is held by a latch first. While it is closed no mark may land (every dependency holds);
// after it opens the marks land in thread order (order encoded in the tickets).
TEST_F(EventsAndWaits, TwentyThreadsKeepEveryDependency) {
  const sc::claim evt15("EVT-15");
  constexpr unsigned kThreads = 20;
  const unsigned unchained = evt15.mutated(sc::mutation_kind::arrangement) ? 10u : kThreads;
  sc::marks m;
  thread_chain chain(kThreads, device());
  sc::latch g;
  sc::thread_team team;
  team.start(kThreads, [&](unsigned t) { chain.link(team, t, g, m, unchained); });
  ASSERT_TRUE(chain.all_enqueued(team)) << "the threads did not all enqueue their part of the chain within "
                                        << sc::kWorkDeadline.count() << " ms";
  {
    sc::held_window w(g);
    EXPECT_TRUE(w.absent(any_mark_landed(m, kThreads))) << "a mark of the chain ran while its head was held";
  }
  drain();
  team.end();
  for (unsigned t = 0; t < kThreads; ++t) {
    EXPECT_CUDA_EQ(cudaSuccess, chain.code(t)) << "thread " << t;
    EXPECT_NE(0u, m.ticket_of(t)) << "thread " << t << "'s mark never landed";
  }
  const unsigned out_of_order = marks_out_of_order(m, kThreads);
  sc::observe("threads", static_cast<int>(kThreads));
  sc::observe("marks_out_of_order", static_cast<int>(out_of_order));
  EXPECT_EQ(0u, out_of_order) << "marks of the chain landed out of thread order";
}

}  // namespace
