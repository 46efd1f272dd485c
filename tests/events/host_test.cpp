// EVT-13, EVT-19: how the host thread waits (spinning or sleeping); EVT-15: events recorded and waited on from 20
// host threads, each on its own per-thread default stream.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "events.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/thread_team.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::EventsAndWaits;

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct host_wait {
  double wall_ms = 0.0;
  double cpu_ms = 0.0;
  double busy() const { return wall_ms > 0.0 ? cpu_ms / wall_ms : 0.0; }
};

// The calling thread's CPU time and wall time while `wait` blocks on a spin of `spin_ns` enqueued first.
template <class Wait>
host_wait measure_wait(const sc::stream& s, sc::kernels::block_record* records, std::uint64_t spin_ns, Wait&& wait) {
  SC_CHECK_CUDA(sc::kernels::launch_spin(s.get(), records, 1, 32, spin_ns));
  const auto w0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_ms();
  SC_CHECK_CUDA(wait());
  host_wait h;
  h.cpu_ms = thread_cpu_ms() - c0;
  h.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
  return h;
}

// EVT-13 (observed) · RT cudaEventCreateWithFlags (cudaEventBlockingSync), cudaSetDeviceFlags
// (cudaDeviceScheduleBlockingSync): the host thread waiting in cudaEventSynchronize spins on a default event
// and sleeps on a blocking-sync event; the device flag, where the driver takes it on a running context, makes
// a stream synchronize sleep too. Measured as the waiting thread's CPU time over the wall time of a wait on a
// 20 ms GPU spin.
TEST_F(EventsAndWaits, BlockingSyncEventLetsTheWaitingThreadSleep) {
  const sc::claim evt13("EVT-13");
  // Reason for 20 ms: hundreds of scheduler ticks of a sleeping thread, and long against launch cost.
  constexpr std::uint64_t kSpinNs = 20'000'000;
  // Reasons: a spinning wait keeps its thread on a CPU nearly all the time (ratio near 1); a sleeping one
  // wakes a few times (ratio near 0). 0.5 and 0.2 separate the two with room for a loaded host.
  constexpr double kSpinsAtLeast = 0.5;
  constexpr double kSleepsAtMost = 0.2;
  const sc::stream s = make(stream_flags::non_blocking, "s");
  sc::mapped<sc::kernels::block_record> records(1);
  // Mutation (arrangement): the "blocking-sync" event is a default one.
  const sc::event_flags blocking_flags =
      evt13.mutate(sc::mutation_kind::arrangement, sc::event_flags::blocking_sync, sc::event_flags::timing);
  const sc::event plain = sc::event::create(sc::event_flags::timing);
  const sc::event blocking = sc::event::create(blocking_flags);
  const host_wait spin = measure_wait(s, records.device(), kSpinNs, [&] {
    SC_CHECK_CUDA(cudaEventRecord(plain.get(), s.get()));
    return cudaEventSynchronize(plain.get());
  });
  const host_wait sleep = measure_wait(s, records.device(), kSpinNs, [&] {
    SC_CHECK_CUDA(cudaEventRecord(blocking.get(), s.get()));
    return cudaEventSynchronize(blocking.get());
  });
  sc::observe("default_event.wall_ms", spin.wall_ms);
  sc::observe("default_event.cpu_ms", spin.cpu_ms);
  sc::observe("blocking_sync_event.wall_ms", sleep.wall_ms);
  sc::observe("blocking_sync_event.cpu_ms", sleep.cpu_ms);
  EXPECT_TRUE(evt13.matches_baseline("default_event_sync_spins", spin.busy() >= kSpinsAtLeast));
  EXPECT_TRUE(evt13.matches_baseline("blocking_sync_event_sleeps", sleep.busy() <= kSleepsAtMost));

  // The device flag on the running primary context.
  unsigned before = 0;
  SC_CHECK_CUDA(cudaGetDeviceFlags(&before));
  const cudaError_t set = sc::taking_last_error(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  sc::observe("set_device_flags_on_running_context", sc::error_name(set));
  if (set != cudaSuccess) {
    // The row is not dropped: it could not be measured, which is a failure with its reason.
    EXPECT_TRUE(evt13.observed_row("device_blocking_sync_sleeps",
                                   sc::invalid_check("cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) on "
                                                     "the running context returned " +
                                                     sc::error_name(set) + ": no wait under the flag")));
  } else {
    const host_wait flagged =
        measure_wait(s, records.device(), kSpinNs, [&] { return cudaStreamSynchronize(s.get()); });
    SC_CHECK_CUDA(cudaSetDeviceFlags(before));
    sc::observe("device_flag.wall_ms", flagged.wall_ms);
    sc::observe("device_flag.cpu_ms", flagged.cpu_ms);
    EXPECT_TRUE(evt13.matches_baseline("device_blocking_sync_sleeps", flagged.busy() <= kSleepsAtMost));
  }
}

// EVT-19 (observed) · DRV cuDevicePrimaryCtxSetFlags (CU_CTX_SCHED_BLOCKING_SYNC: "block the CPU thread on a
// synchronization primitive when waiting for the GPU"), cuStreamSynchronize: with the flag set on the running
// primary context, the thread waiting in cuStreamSynchronize sleeps. EVT-13's method and bounds; the flags the
// context had are restored.
TEST_F(EventsAndWaits, DriverStreamSynchronizeSleepsUnderBlockingSync) {
  const sc::claim evt19("EVT-19");
  constexpr std::uint64_t kSpinNs = 20'000'000;  // EVT-13's reason
  constexpr double kSleepsAtMost = 0.2;          // EVT-13's reason
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
    EXPECT_TRUE(evt19.observed_row("blocking_sync_sleeps",
                                   sc::invalid_check("cuDevicePrimaryCtxSetFlags on the running context "
                                                     "returned " +
                                                     sc::error_name(set) + ": no wait under the flag")));
    return;
  }
  // The context's flags are restored however the test leaves this scope (a failed step throws): later tests of
  // the process measure how their threads wait.
  struct restore_flags {
    const sc::driver_api& drv;
    CUdevice dev;
    unsigned flags;
    ~restore_flags() {
      sc::note_teardown(drv.cuDevicePrimaryCtxSetFlags(dev, flags), "cuDevicePrimaryCtxSetFlags (restore)");
    }
  } restore{drv, dev, before};
  CUresult waited = CUDA_ERROR_UNKNOWN;
  const host_wait flagged = measure_wait(s, records.device(), kSpinNs, [&] {
    waited = drv.cuStreamSynchronize(s.get());
    return cudaSuccess;
  });
  EXPECT_CU_EQ(CUDA_SUCCESS, waited) << "cuStreamSynchronize under the flag";
  sc::observe("synchronize.wall_ms", flagged.wall_ms);
  sc::observe("synchronize.cpu_ms", flagged.cpu_ms);
  EXPECT_TRUE(evt19.matches_baseline("blocking_sync_sleeps", flagged.busy() <= kSleepsAtMost));
}

// EVT-15 · RT (events and per-thread default streams): 20 host threads, each on its own per-thread default
// stream, form one chain: thread t waits on thread t-1's event, drops its mark and records its own event.
// Thread 0's stream is held by a gate first. While it is closed no mark may land (every dependency holds);
// after it opens the marks land in thread order (order encoded in the tickets).
TEST_F(EventsAndWaits, TwentyThreadsKeepEveryDependency) {
  const sc::claim evt15("EVT-15");
  constexpr unsigned kThreads = 20;
  const unsigned skipped = evt15.mutated(sc::mutation_kind::arrangement) ? 10u : kThreads;
  sc::marks m;
  std::vector<sc::event> events;
  for (unsigned t = 0; t < kThreads; ++t) events.push_back(sc::event::create(sc::event_flags::disable_timing));
  unsigned enqueued = 0;  // under the team's lock: threads 0..enqueued-1 have recorded their event
  std::vector<cudaError_t> codes(kThreads, cudaSuccess);
  sc::gate g;
  const int dev = device();
  // A thread still waiting for its predecessor when the team ends (on any way out of the test) is released
  // without enqueueing anything.
  sc::thread_team team;
  team.start(kThreads, [&](unsigned t) {
    cudaError_t code = cudaSetDevice(dev);
    if (!team.wait_until([&] { return enqueued >= t; })) return;
    const sc::stream mine = sc::stream::per_thread();
    try {
      if (t == 0) g.hold(mine);
      if (code == cudaSuccess && t > 0 && t != skipped)
        code = cudaStreamWaitEvent(cudaStreamPerThread, events[t - 1].get(), 0);
      if (code == cudaSuccess) m.drop(mine, t);
      if (code == cudaSuccess) code = cudaEventRecord(events[t].get(), cudaStreamPerThread);
    } catch (...) {
      code = cudaErrorUnknown;
    }
    team.update([&] {
      codes[t] = code;
      enqueued = t + 1;
    });
    team.wait_until([] { return false; });  // alive (with its per-thread stream) until the chain has run
  });
  const bool all_enqueued = team.wait_until([&] { return enqueued == kThreads; }, sc::kWorkDeadline);
  ASSERT_TRUE(all_enqueued) << "the threads did not all enqueue their part of the chain within "
                            << sc::kWorkDeadline.count() << " ms";
  const auto any_landed = sc::probe("any thread's mark landed", [&] {
    for (unsigned t = 0; t < kThreads; ++t)
      if (m.ticket_of(t) != 0) return true;
    return false;
  });
  {
    sc::held_window w(g);
    EXPECT_TRUE(w.absent(any_landed)) << "a mark of the chain ran while its head was held";
  }
  drain();
  team.end();
  unsigned out_of_order = 0;
  for (unsigned t = 0; t < kThreads; ++t) {
    EXPECT_CUDA_EQ(cudaSuccess, codes[t]) << "thread " << t;
    EXPECT_NE(0u, m.ticket_of(t)) << "thread " << t << "'s mark never landed";
    if (t > 0 && m.ticket_of(t) <= m.ticket_of(t - 1)) ++out_of_order;
  }
  sc::observe("threads", static_cast<int>(kThreads));
  sc::observe("marks_out_of_order", static_cast<int>(out_of_order));
  EXPECT_EQ(0u, out_of_order) << "marks of the chain landed out of thread order";
}

}  // namespace
