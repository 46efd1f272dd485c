// ORDX-08, the rest: what a pending wait on a word holds. A wait is done by the GPU's front end, so it should
// hold no SM (a grid filling every SM, in another stream, runs to its end meanwhile); with one hardware
// connection every stream shares the waiting queue, so it also holds an independent stream's kernel until the
// host writes the word (the deadlock hazard the driver's documentation warns of). Observed rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ordering.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/host_atomic.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::enqueue_wait;
using sc::families::OrderingExceptions;
using sc::families::reached_wait;
using sc::families::wait_word;

constexpr unsigned kThreads = 1024;  // a large block: the grid fills every SM with few blocks
// Reasons: two waves of 100 us blocks, a fraction of a millisecond for the whole grid on a free GPU.
constexpr unsigned kWaves = 2;
constexpr std::uint64_t kSpinNs = 100'000;
// How long a kernel beside the pending wait has to land or end. Reason: a mark or a grid of 0.2 ms on free SMs
// is done within a millisecond of its launch; 100 ms is a hundred times that, and a row that stays absent pays
// it once.
constexpr std::chrono::milliseconds kBesideWindow{100};

// ORDX-08 · DRV cuStreamWaitValue32 (observed: the wait is a stream memory operation, not a kernel): while s
// waits on its word, a grid of two waves of 1024-thread blocks over every SM runs to its end in t.
TEST_F(OrderingExceptions, GridOverEverySmEndsBesideAPendingWait) {
  const sc::claim ordx08("ORDX-08");
  SC_REQUIRE(sc::requirement::own_connection_count);  // one queue: t's grid would surely queue behind the wait
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  const unsigned blocks =
      kWaves * static_cast<unsigned>(properties().maxThreadsPerMultiProcessor) / kThreads * sm_count();
  sc::mapped<sc::kernels::block_record> records(blocks);
  std::fill_n(reinterpret_cast<unsigned char*>(records.host()), blocks * sizeof(sc::kernels::block_record), 0);
  wait_word w(0u, 1u);  // the last made: on any exit it releases s before the records' free synchronizes
  ASSERT_TRUE(reached_wait(enqueue_wait(w, s, 1u, CU_STREAM_WAIT_VALUE_GEQ))) << "s did not reach its wait";
  const bool behind = ordx08.mutated(sc::mutation_kind::arrangement);  // the grid goes behind the wait
  SC_CHECK_CUDA(sc::kernels::launch_spin((behind ? s : t).get(), records.device(), blocks, kThreads, kSpinNs));
  const bool ended = sc::wait_until(sc::probe("every block of the grid ended",
                                              [&] {
                                                for (unsigned b = 0; b < blocks; ++b)
                                                  if (sc::load_acquire(records.host()[b].t1_ns) == 0) return false;
                                                return true;
                                              }),
                                    kBesideWindow);
  w.store(1u);
  sc::families::finish_waiting(s);
  SC_CHECK_CUDA(sc::synchronize_within(t, sc::kWorkDeadline));
  sc::observe("grid_blocks", static_cast<int>(blocks));
  EXPECT_TRUE(ordx08.matches_baseline("grid_over_every_sm_ends_beside_the_wait", ended));
}

// ORDX-08 · DRV cuStreamWaitValue32 (observed: "improper use of this API may deadlock"): with
// CUDA_DEVICE_MAX_CONNECTIONS=1, a mark launched in t after s reached its wait does not land until the host
// writes the word; then it does (released by the host, never by a watchdog).
TEST_F(OrderingExceptions, WithOneConnectionAPendingWaitHoldsBackAnotherStream) {
  const sc::claim ordx08("ORDX-08");
  SC_REQUIRE(sc::requirement::async_launches);
  const char* connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (connections == nullptr || std::string(connections) != "1")
    GTEST_SKIP() << "needs CUDA_DEVICE_MAX_CONNECTIONS=1 before CUDA starts (ctest entry ordering.conn1.*)";
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream t = make(stream_flags::non_blocking, "t");
  const bool no_wait = ordx08.mutated(sc::mutation_kind::arrangement);  // the word already satisfies the wait
  // The marks before the word: their zeroing would queue behind the wait in the one hardware queue, and the word,
  // made last, releases s on any exit before the marks' free synchronizes the device.
  sc::marks m;
  wait_word w(no_wait ? 1u : 0u, 1u);
  ASSERT_TRUE(reached_wait(enqueue_wait(w, s, 1u, CU_STREAM_WAIT_VALUE_GEQ))) << "s did not reach its wait";
  drop(m, t, 1);
  const bool ran = sc::wait_until(sc::probe::mark(m, 1), kBesideWindow);
  w.store(1u);
  EXPECT_TRUE(sc::wait_until(sc::probe::mark(m, 1), sc::kPresenceDeadline)) << "the host's write released nothing";
  sc::families::finish_waiting(s);
  EXPECT_TRUE(ordx08.matches_baseline("kernel_in_another_stream_runs_with_one_connection", ran));
}

}  // namespace
