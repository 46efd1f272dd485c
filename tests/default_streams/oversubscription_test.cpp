// DFLT-16, DFLT-17: many busy streams against the number of hardware connections
// (CUDA_DEVICE_MAX_CONNECTIONS, default 8; entries default_streams.conn1.* and default_streams.conn32.*).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "default_streams.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using DefaultStreams = sc::testing::DefaultStreams;

std::string connections() {
  const char* set = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  return set == nullptr ? std::string("default") : std::string(set);
}

// DFLT-16 · RTAS24 R2, Fig. 5, Corollaries 1-2 (observed): with the default 8 connections, more busy
// streams than connections produce false dependencies: streams whose head shares a hardware queue with a
// busy stream's pending work are held back. 8 streams each hold a gate and a mark pending behind it; then
// 16 fresh streams get one mark each. How many fresh marks land while the gates are closed?
TEST_F(DefaultStreams, FreshStreamsBehindBusyStreamsWithTheConnectionsInUse) {
  sc::claim("DFLT-16", sc::verdict_kind::observed, "RTAS24 R2, Fig. 5, Corollaries 1-2");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE_CONCURRENT_KERNELS();
  constexpr unsigned kBusy = 8;
  constexpr unsigned kFresh = 16;
  // Reason: an independent 1-thread kernel lands within microseconds; 300 ms is thousands of launches.
  constexpr auto kLandingWindow = std::chrono::milliseconds{300};
  // Mutation (arrangement), per entry: with 32 connections (every stream has its own queue) the fresh
  // marks go behind the gates; otherwise nothing is pending behind the gates (no queue head waits).
  const bool mutated = sc::mutation_active("DFLT-16", sc::mutation_kind::arrangement);
  const bool own_queues = connections() == "32";
  sc::marks m;
  std::vector<sc::stream> busy;
  std::vector<sc::stream> fresh;
  for (unsigned i = 0; i < kBusy; ++i) busy.push_back(make(stream_flags::non_blocking, "busy" + std::to_string(i)));
  for (unsigned i = 0; i < kFresh; ++i) fresh.push_back(make(stream_flags::non_blocking, "fresh" + std::to_string(i)));
  std::vector<std::unique_ptr<sc::gate>> gates;  // declared last: destroyed (opened) first
  for (unsigned i = 0; i < kBusy; ++i) {
    gates.push_back(std::make_unique<sc::gate>());
    hold(*gates.back(), busy[i]);
    if (!(mutated && !own_queues)) drop(m, busy[i], i);  // pending behind the gate: the queue head waits
  }
  for (unsigned i = 0; i < kFresh; ++i) drop(m, mutated && own_queues ? busy[i % kBusy] : fresh[i], kBusy + i);
  const auto start = std::chrono::steady_clock::now();
  unsigned landed = 0;
  while (std::chrono::steady_clock::now() - start < kLandingWindow) {
    landed = 0;
    for (unsigned i = 0; i < kFresh; ++i) landed += m.ticket_of(kBusy + i) != 0;
    if (landed == kFresh) break;
    std::this_thread::yield();
  }
  unsigned started = 0;
  std::string not_closed;
  for (const auto& g : gates) {
    started += g->started();
    if (!closed(g->state())) not_closed = sc::to_string(g->state());
  }
  for (auto& g : gates) g->open();
  drain();
  ASSERT_EQ("", not_closed) << "a gate was not closed during the window, so the count proves nothing";
  const std::string key = "connections_" + connections();
  sc::observe(key + ".busy_gates_running", static_cast<int>(started));
  sc::observe(key + ".fresh_marks_landed", static_cast<int>(landed));
  EXPECT_TRUE(sc::matches_baseline("DFLT-16", key + ".fresh_marks_landed", static_cast<int>(landed)));
}

// DFLT-17 · RT stream and event semantics; ROCm hipSharedQueueAnyOrderOverlap pattern: under
// oversubscription (32 streams; 1, 8 or 32 connections) every event dependency is honored: 16
// producer/consumer pairs ping-pong 50 times; producers write late, consumers read early in reverse order.
TEST_F(DefaultStreams, OversubscribedStreamsKeepEveryEventDependency) {
  sc::claim("DFLT-17", sc::verdict_kind::documented, "RT cudaStreamWaitEvent, cudaEventRecord (stream semantics)");
  constexpr unsigned kPairs = 16;
  constexpr unsigned kReps = 50;
  constexpr std::uint32_t kElements = 4096;
  // Reason: 20 us of spinning before the write is many times a launch, so a consumer that did not wait
  // would read the previous value.
  constexpr std::uint64_t kProducerDelayNs = 20'000;
  sc::device_buffer<std::uint32_t> mismatches(1);
  std::vector<sc::device_buffer<std::uint32_t>> data;
  std::vector<sc::stream> producers;
  std::vector<sc::stream> consumers;
  std::vector<sc::event> produced;
  std::vector<sc::event> consumed;
  for (unsigned p = 0; p < kPairs; ++p) {
    data.emplace_back(kElements);
    producers.push_back(make(stream_flags::non_blocking, "producer" + std::to_string(p)));
    consumers.push_back(make(stream_flags::non_blocking, "consumer" + std::to_string(p)));
    produced.push_back(sc::event::create(sc::event_flags::disable_timing));
    consumed.push_back(sc::event::create(sc::event_flags::disable_timing));
  }
  const bool wait_for_data = !sc::mutation_active("DFLT-17", sc::mutation_kind::arrangement);
  for (unsigned rep = 0; rep < kReps; ++rep) {
    for (unsigned p = 0; p < kPairs; ++p) {
      const std::uint32_t value = (p + 1) * 1000u + rep + 1;
      if (rep > 0) SC_CHECK_CUDA(cudaStreamWaitEvent(producers[p].get(), consumed[p].get(), 0));
      SC_CHECK_CUDA(sc::kernels::launch_fill_late(producers[p].get(), data[p].data(), kElements, value, kProducerDelayNs));
      SC_CHECK_CUDA(cudaEventRecord(produced[p].get(), producers[p].get()));
      if (wait_for_data) SC_CHECK_CUDA(cudaStreamWaitEvent(consumers[p].get(), produced[p].get(), 0));
      SC_CHECK_CUDA(sc::kernels::launch_count_mismatches(consumers[p].get(), data[p].data(), kElements, value,
                                                         mismatches.data()));
      SC_CHECK_CUDA(cudaEventRecord(consumed[p].get(), consumers[p].get()));
    }
  }
  drain();
  std::uint32_t wrong = 0;
  SC_CHECK_CUDA(cudaMemcpy(&wrong, mismatches.data(), sizeof(wrong), cudaMemcpyDeviceToHost));
  sc::observe("connections", connections());
  sc::observe("checks", static_cast<int>(kPairs * kReps));
  sc::observe("mismatched_elements", static_cast<int>(wrong));
  EXPECT_EQ(0u, wrong) << "consumers read data their producers had not written yet, with "
                       << connections() << " connections";
}

}  // namespace
