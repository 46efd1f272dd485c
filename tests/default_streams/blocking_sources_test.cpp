// DFLT-18, DFLT-19: which host calls wait for running GPU work, and which hold back other streams or
// other host threads (observed, per architecture). A latch holds s1; the call runs on a helper thread
// (returns while held?); if it returned, a mark goes to blocking s2 (does it run while s1 is still
// held?); if it is still pending, a third thread launches a mark into a non-blocking stream (does the
// launch return, and does the mark run, while the call waits?).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "default_streams.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using DefaultStreams = sc::families::DefaultStreams;

constexpr std::size_t kBytes = std::size_t{1} << 20;
// How long the mark on s2 gets to land while s1 is held. Reason: a mark that nothing holds back lands
// within microseconds of its launch (INST-05), so the suite's landing deadline (50 ms, thousands of launch
// costs) tells "held back" from "ran"; every call that returns pays this deadline once more if held back.
constexpr auto kMarkDeadline = sc::kLandingDeadline;

// One host call under test. `prepare` runs before the latch closes, `call` while it is closed, `release`
// after everything (the API under test is the allocation or free itself, so these are raw calls).
struct host_call {
  std::string name;
  std::function<void()> prepare;
  std::function<cudaError_t()> call;
  std::function<void()> release;
};

// Two rows for one pair of calls that make and free `handle`: the making call measured (freed afterwards,
// `free_label` naming the release), then the freeing call measured (made beforehand).
template <class Handle>
void add_make_and_free(std::vector<host_call>& rows, const std::string& make_name, const std::string& free_name,
                       const char* free_label, Handle& handle, const std::function<cudaError_t()>& make_call,
                       const std::function<cudaError_t()>& free_call) {
  rows.push_back({make_name, [] {}, make_call,
                  [&handle, free_call, free_label] {
                    sc::note_teardown(free_call(), free_label);
                    handle = nullptr;
                  }});
  rows.push_back({free_name, [make_call] { SC_CHECK_CUDA(make_call()); },
                  [&handle, free_call] {
                    const cudaError_t c = free_call();
                    handle = nullptr;
                    return c;
                  },
                  [] {}});
}

std::vector<host_call> calls(void*& device, void*& host, void*& pageable, cudaStream_t& made, cudaStream_t other) {
  std::vector<host_call> rows;
  add_make_and_free(
      rows, "cudaStreamCreate", "cudaStreamDestroy(idle)", "cudaStreamDestroy", made,
      [&made] { return cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking); },
      [&made] { return cudaStreamDestroy(made); });
  add_make_and_free(
      rows, "cudaMalloc", "cudaFree", "cudaFree", device, [&device] { return cudaMalloc(&device, kBytes); },
      [&device] { return cudaFree(device); });
  add_make_and_free(
      rows, "cudaMallocHost", "cudaFreeHost", "cudaFreeHost", host, [&host] { return cudaMallocHost(&host, kBytes); },
      [&host] { return cudaFreeHost(host); });
  rows.push_back({"cudaHostRegister", [&pageable] { pageable = std::aligned_alloc(4096, kBytes); },
                  [&pageable] { return cudaHostRegister(pageable, kBytes, cudaHostRegisterDefault); },
                  [&pageable] {
                    sc::note_teardown(cudaHostUnregister(pageable), "cudaHostUnregister");
                    std::free(pageable);
                    pageable = nullptr;
                  }});
  rows.push_back(
      {"cudaFuncSetAttribute(carveout)", [] {}, [] { return sc::kernels::set_empty_kernel_carveout(50); }, [] {}});
  rows.push_back({"cudaMallocAsync+cudaFreeAsync", [] {},
                  [other] {
                    void* p = nullptr;
                    const cudaError_t a = cudaMallocAsync(&p, kBytes, other);
                    return a != cudaSuccess ? a : cudaFreeAsync(p, other);
                  },
                  [] {}});
  return rows;
}

// What another host thread sees while a call waits: does its launch into the non-blocking stream `other`
// return, and does that kernel run, while s1 is still held? (ECRTS18: cudaFree blocked other threads.)
// The thread starts and selects its device before the call is made, so only its launch is judged; it then
// waits for go() (launch) or cancel() (the call returned: nothing to probe).
class other_thread_probe {
 public:
  other_thread_probe(sc::marks& m, const sc::stream& other, unsigned id, int device)
      : m_(m), other_(other), id_(id), thread_([this, device] { body(device); }) {
    while (!ready_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  other_thread_probe(const other_thread_probe&) = delete;
  other_thread_probe& operator=(const other_thread_probe&) = delete;
  ~other_thread_probe() { join(); }  // also on an exception path; the latch is open by then

  // While the call is pending and the latch closed: release the launch and watch it for kMarkDeadline.
  void go(const sc::latch& g) {
    asked_ = true;
    signal_.store(kGo, std::memory_order_release);
    const auto until = std::chrono::steady_clock::now() + kMarkDeadline;
    while (!(launched_.load(std::memory_order_acquire) && m_.ticket_of(id_) != 0) &&
           std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
    const bool held = closed(g.state());
    if (!held) ADD_FAILURE() << "the latch was " << sc::to_string(g.state()) << " when the other thread was judged";
    launch_returned_ = launched_.load(std::memory_order_acquire) && held;
    mark_ran_ = m_.ticket_of(id_) != 0 && held;
  }
  // After the latch opened (a blocked launch can then return). Cancels a probe that was never released.
  void join() {
    int expected = kWait;
    signal_.compare_exchange_strong(expected, kCancel, std::memory_order_acq_rel);
    if (thread_.joinable()) thread_.join();
  }

  bool asked() const { return asked_; }
  bool launch_returned() const { return launch_returned_; }
  bool mark_ran() const { return mark_ran_; }
  const std::string& error() const { return error_; }

 private:
  static constexpr int kWait = 0, kGo = 1, kCancel = 2;
  void body(int device) {
    const cudaError_t selected = cudaSetDevice(device);
    ready_.store(true, std::memory_order_release);
    int signal = kWait;
    while ((signal = signal_.load(std::memory_order_acquire)) == kWait) std::this_thread::yield();
    if (signal == kCancel) return;
    try {
      SC_CHECK_CUDA(selected);
      m_.drop_by(id_, [&](std::uint32_t* counter, sc::kernels::mark_board* board, unsigned slot) {
        return sc::kernels::launch_mark(other_.get(), counter, board, slot);
      });
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    launched_.store(true, std::memory_order_release);
  }

  sc::marks& m_;
  const sc::stream& other_;
  const unsigned id_;
  std::atomic<bool> ready_{false};
  std::atomic<int> signal_{kWait};
  std::atomic<bool> launched_{false};
  std::string error_;
  bool asked_ = false;
  bool launch_returned_ = false;
  bool mark_ran_ = false;
  std::thread thread_;  // last: started once every member above exists
};

// DFLT-18/19 with s1 (made with `held_flags`) held: every call of calls(), each with its latch.
void measure_blocking_sources(DefaultStreams& t, const sc::claim& dflt18, const sc::claim& dflt19,
                              stream_flags held_flags) {
  const sc::stream s1 = t.make(held_flags, "s1");
  const sc::stream s2 = t.make(stream_flags::blocking, "s2");
  const sc::stream other = t.make(stream_flags::non_blocking, "other");
  const std::string kind = held_flags == stream_flags::blocking ? "blocking_latch" : "non_blocking_latch";
  // Mutations (arrangement): DFLT-19, every call first synchronizes the held stream (so it must wait);
  // DFLT-18, the mark meant for s2 goes into the held s1 (so it cannot run).
  const bool call_waits = dflt19.mutated(sc::mutation_kind::arrangement);
  const sc::stream& after = dflt18.mutated(sc::mutation_kind::arrangement) ? s1 : s2;
  void* device = nullptr;
  void* host = nullptr;
  void* pageable = nullptr;
  cudaStream_t made = nullptr;
  for (const host_call& c : calls(device, host, pageable, made, other.get())) {
    SCOPED_TRACE(c.name);
    c.prepare();
    sc::marks m;
    sc::held_result other_stream_ran{sc::held_outcome::invalid, "not measured: the call did not return"};
    bool latch_started = true;
    other_thread_probe probe(m, other, 2, t.device_index());
    sc::return_observation seen;
    {
      sc::latch g;
      t.hold(g, s1);
      if (!g.wait_started()) {
        ADD_FAILURE() << "the latch did not start";
        latch_started = false;
      } else {
        // A call that returned: a mark goes to blocking s2 while the latch is still closed. A call still
        // pending after kPendingStepAfter: another thread launches a mark into non-blocking `other`.
        sc::while_held_steps steps;
        steps.after_return = [&] {
          t.drop(m, after, 1);
          other_stream_ran = sc::present_while_held(m, 1, g, kMarkDeadline);
        };
        steps.while_pending = [&] { probe.go(g); };
        const std::function<cudaError_t()> call = call_waits ? std::function<cudaError_t()>([&] {
          const cudaError_t synced = cudaStreamSynchronize(s1.get());
          return synced != cudaSuccess ? synced : c.call();
        })
                                                             : c.call;
        seen = sc::call_while_held(call, g, sc::kReturnWindow, steps);
      }
    }
    probe.join();
    SC_CHECK_CUDA(cudaDeviceSynchronize());
    c.release();
    if (!latch_started) continue;
    const std::string key = c.name + "." + kind;
    sc::observe(key + ".rc", sc::error_name(seen.code));
    EXPECT_CUDA_EQ(cudaSuccess, seen.code);
    EXPECT_TRUE(probe.error().empty()) << "the other thread's launch failed: " << probe.error();
    EXPECT_TRUE(dflt19.observed_row(key + ".returned_while_held", seen.returned));
    const bool returned = seen.returned.outcome() == sc::held_outcome::holds;
    if (returned) sc::observe(key + ".took_us", static_cast<long long>(seen.took.count()));
    if (returned && seen.code == cudaSuccess) {
      EXPECT_TRUE(dflt18.observed_row(key + ".other_stream_ran", other_stream_ran));
    }
    if (probe.asked()) {
      sc::observe(key + ".other_thread_launch_returned", probe.launch_returned());
      sc::observe(key + ".other_thread_mark_ran", probe.mark_ran());
      EXPECT_TRUE(dflt19.matches_baseline(key + ".other_thread_launch_returned", probe.launch_returned()));
      EXPECT_TRUE(dflt19.matches_baseline(key + ".other_thread_mark_ran", probe.mark_ran()));
    }
  }
}

// DFLT-18, DFLT-19 · PG 2.3.8 and the old guide's "Implicit Synchronization" list; ECRTS18 Table 3
// (observed): with a blocking stream held, which calls return, and does blocking s2 then run?
TEST_F(DefaultStreams, BlockingSourcesWithABlockingStreamBusy) {
  const sc::claim dflt18("DFLT-18", sc::verdict_kind::observed);
  const sc::claim dflt19("DFLT-19");
  SC_REQUIRE(sc::requirement::async_launches);
  measure_blocking_sources(*this, dflt18, dflt19, stream_flags::blocking);
}

// DFLT-18, DFLT-19 · ECRTS18 Table 3 (observed): the same with a non-blocking stream held.
TEST_F(DefaultStreams, BlockingSourcesWithANonBlockingStreamBusy) {
  const sc::claim dflt18("DFLT-18", sc::verdict_kind::observed);
  const sc::claim dflt19("DFLT-19");
  SC_REQUIRE(sc::requirement::async_launches);
  measure_blocking_sources(*this, dflt18, dflt19, stream_flags::non_blocking);
}

// One DFLT-18 call issued to the legacy stream, with a blocking and then a non-blocking s1 held: the call
// returns while held, and a mark in blocking s2 issued after it stays absent behind blocking s1 (SSB) and
// runs beside non-blocking s1 (DFLT-04). `into_held`: the mark goes into the held s1 instead.
void expect_legacy_stream_work(DefaultStreams& t, const char* name, const std::function<cudaError_t()>& call,
                               bool into_held) {
  for (const stream_flags flags : {stream_flags::blocking, stream_flags::non_blocking}) {
    const bool blocking = flags == stream_flags::blocking;
    SCOPED_TRACE(std::string(name) + (blocking ? " with blocking s1 held" : " with non-blocking s1 held"));
    sc::marks m;
    const sc::stream s1 = t.make(flags, "s1");
    const sc::stream s2 = t.make(stream_flags::blocking, "s2");
    sc::held_result later{sc::held_outcome::invalid, "not measured: the call did not return"};
    sc::latch g;
    t.hold(g, s1);
    ASSERT_TRUE(g.wait_started());
    sc::while_held_steps steps;
    steps.after_return = [&] {
      t.drop(m, into_held ? s1 : s2, 1);
      later = blocking ? sc::absent_while_held(m, 1, g) : sc::present_while_held(m, 1, g, kMarkDeadline);
    };
    const sc::return_observation seen = sc::call_while_held(call, g, sc::kReturnWindow, steps);
    t.drain();
    EXPECT_CUDA_EQ(cudaSuccess, seen.code);
    EXPECT_TRUE(seen.returned) << name << " waited for the latch";
    EXPECT_TRUE(later) << (blocking ? "blocking s2 ran before the legacy-stream call's wait for s1 ended"
                                    : "blocking s2 waited although the call did not wait for non-blocking s1");
    const std::string key = std::string(name) + (blocking ? ".blocking_latch" : ".non_blocking_latch");
    sc::observe(key + ".detail", seen.detail);
    if (seen.returned.outcome() == sc::held_outcome::holds)
      sc::observe(key + ".took_us", static_cast<long long>(seen.took.count()));
  }
}

// DFLT-18 (documented part) · SYNC: a synchronous cudaMemset to device memory is asynchronous with respect
// to the host, and a synchronous device-to-device cudaMemcpy does no host-side synchronization; both are
// issued to the default stream, which in this (legacy) build is the legacy stream; SSB: so each first
// waits for work in blocking streams, and later blocking-stream work waits for it. With a blocking s1
// held: the call returns while held, and a mark in blocking s2 issued after it stays absent. With a
// non-blocking s1 held: the call returns, and the mark runs (DFLT-04).
TEST_F(DefaultStreams, SynchronousMemsetAndDeviceCopyAreLegacyStreamWork) {
  const sc::claim dflt18("DFLT-18", sc::verdict_kind::documented);
  SC_REQUIRE(sc::requirement::async_launches);
  const bool into_held = dflt18.mutated(sc::mutation_kind::arrangement);
  sc::device_buffer<char> memory(2 * kBytes);
  ASSERT_NO_FATAL_FAILURE(expect_legacy_stream_work(
      *this, "cudaMemset(sync)", [&] { return cudaMemset(memory.data(), 0x5c, kBytes); }, into_held));
  ASSERT_NO_FATAL_FAILURE(expect_legacy_stream_work(
      *this, "cudaMemcpy(DtoD)",
      [&] { return cudaMemcpy(memory.data() + kBytes, memory.data(), kBytes, cudaMemcpyDeviceToDevice); }, into_held));
}

}  // namespace
