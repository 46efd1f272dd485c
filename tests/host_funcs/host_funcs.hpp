// The HostFuncs fixture: host functions (cudaLaunchHostFunc) and callbacks (cudaStreamAddCallback) that
// record what they saw into atomics — when they ran (CUPTI clock), in which order (a ticket), how often,
// on which thread, and for callbacks the stream and status they were given. Nothing is asserted inside a
// host function; the test body asserts. Every record becomes a host-lane interval of the test's timeline.
//
// TearDown waits, with a deadline, until every host function the test enqueued has returned, before the
// base fixture synchronizes the device: a host function that never returns would make that synchronize
// hang, so instead the test fails with a message naming it and the process ends. (It waits on the
// records, not on the streams: the test's streams are destroyed by then.)
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/host_latch.hpp"
#include "sc/fixtures/latch.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/fixtures/stream.hpp"

namespace sc::families {

// What one host function or callback saw. Lives in the fixture until the test has ended.
struct host_record {
  std::string label;
  std::function<void()> body;  // runs inside the host function (no CUDA calls)
  std::atomic<int> calls{0};
  std::atomic<unsigned> ticket{0};         // 1 = the first host function of the test to run
  std::atomic<std::uint64_t> start_ns{0};  // CUPTI clock (0 with tracing off)
  std::atomic<std::uint64_t> end_ns{0};
  std::atomic<cudaStream_t> stream{nullptr};  // callbacks: the stream they were given
  std::atomic<int> status{-1};                // callbacks: the status they were given
  std::thread::id thread;                     // written before calls is incremented
  void* user_data_sent = nullptr;             // the userData pointer given at enqueue
  void* user_data_seen = nullptr;             // the userData pointer the function received
  bool enqueued = false;                      // the enqueue call succeeded: it must run before the test ends
};

// The probe "host function <label> ran" (for the latch predicates and held_window).
inline probe ran(const host_record& r) {
  return probe("host function '" + r.label + "' ran", [&r] { return r.calls.load() != 0; });
}

class HostFuncs : public GpuTest {
 protected:
  void SetUp() override;
  void TearDown() override;

 public:
  // The base fixture's make, and the stream is drained by drain() (hold and drop are the base's).
  stream make(stream_flags flags, const std::string& name);
  // Enqueues a host function (cudaLaunchHostFunc) that records itself, then runs `body`.
  host_record& launch_host_func(const stream& s, const std::string& label, std::function<void()> body = {});
  // The same with cudaStreamAddCallback (flags 0), which also records the stream and status it gets.
  host_record& add_callback(const stream& s, const std::string& label, std::function<void()> body = {});
  // A record not enqueued by the helpers above (for calls made with other arguments).
  host_record& record(const std::string& label);
  static void CUDART_CB run_host_func(void* data);
  static void CUDART_CB run_callback(cudaStream_t s, cudaError_t status, void* data);
  // Waits for every stream made by make() with a deadline; false (and a failure) if one did not drain.
  // Only while those streams exist (in the test body).
  bool drain();
  // Waits until every enqueued host function has returned; the labels of those that did not.
  std::vector<std::string> unreturned(std::chrono::milliseconds deadline);

 private:
  host_record& enqueue(const std::string& label, std::function<void()> body,
                       const std::function<cudaError_t(void*)>& call);

  std::deque<host_record> records_;  // stable addresses: host functions point into it
  std::vector<cudaStream_t> streams_;
  std::vector<std::string> names_;
  std::atomic<unsigned> next_ticket_{1};
};

}  // namespace sc::families
