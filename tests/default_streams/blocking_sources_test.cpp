// DFLT-18, DFLT-19: which host calls wait for running GPU work, and which hold back other streams
// (observed, per architecture). A gate holds s1; the call runs on a helper thread (returns while gated?);
// if it returned, a mark goes to blocking s2 (does it run while s1 is still gated?).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "default_streams.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using DefaultStreams = sc::testing::DefaultStreams;

constexpr std::size_t kBytes = std::size_t{1} << 20;
// How long the mark on s2 gets to land while s1 is gated. Reason: a mark that nothing holds back lands
// within microseconds of its launch (INST-05), so the suite's absence window (50 ms, thousands of launch
// costs) tells "held back" from "ran"; every call that returns pays this window once more if held back.
constexpr auto kMarkDeadline = sc::kAbsenceWindow;

// One host call under test. `prepare` runs before the gate closes, `call` while it is closed, `release`
// after everything (the API under test is the allocation or free itself, so these are raw calls).
struct host_call {
  std::string name;
  std::function<void()> prepare;
  std::function<cudaError_t()> call;
  std::function<void()> release;
};

std::vector<host_call> calls(void*& device, void*& host, void*& pageable, cudaStream_t other) {
  return {
      {"cudaMalloc", [] {}, [&device] { return cudaMalloc(&device, kBytes); },
       [&device] { sc::note_teardown(cudaFree(device), "cudaFree"); device = nullptr; }},
      {"cudaFree", [&device] { SC_CHECK_CUDA(cudaMalloc(&device, kBytes)); },
       [&device] { const cudaError_t c = cudaFree(device); device = nullptr; return c; }, [] {}},
      {"cudaMallocHost", [] {}, [&host] { return cudaMallocHost(&host, kBytes); },
       [&host] { sc::note_teardown(cudaFreeHost(host), "cudaFreeHost"); host = nullptr; }},
      {"cudaFreeHost", [&host] { SC_CHECK_CUDA(cudaMallocHost(&host, kBytes)); },
       [&host] { const cudaError_t c = cudaFreeHost(host); host = nullptr; return c; }, [] {}},
      {"cudaHostRegister", [&pageable] { pageable = std::aligned_alloc(4096, kBytes); },
       [&pageable] { return cudaHostRegister(pageable, kBytes, cudaHostRegisterDefault); },
       [&pageable] { sc::note_teardown(cudaHostUnregister(pageable), "cudaHostUnregister"); std::free(pageable); pageable = nullptr; }},
      {"cudaMemset(sync)", [&device] { SC_CHECK_CUDA(cudaMalloc(&device, kBytes)); },
       [&device] { return cudaMemset(device, 0, kBytes); },
       [&device] { sc::note_teardown(cudaFree(device), "cudaFree"); device = nullptr; }},
      {"cudaMemcpy(DtoD)", [&device] { SC_CHECK_CUDA(cudaMalloc(&device, 2 * kBytes)); },
       [&device] { return cudaMemcpy(static_cast<char*>(device) + kBytes, device, kBytes, cudaMemcpyDeviceToDevice); },
       [&device] { sc::note_teardown(cudaFree(device), "cudaFree"); device = nullptr; }},
      {"cudaFuncSetAttribute(carveout)", [] {}, [] { return sc::kernels::set_empty_kernel_carveout(50); }, [] {}},
      {"cudaMallocAsync+cudaFreeAsync", [] {},
       [other] {
         void* p = nullptr;
         const cudaError_t a = cudaMallocAsync(&p, kBytes, other);
         return a != cudaSuccess ? a : cudaFreeAsync(p, other);
       },
       [] {}},
  };
}

void measure_blocking_sources(DefaultStreams& t, stream_flags gated_flags, const sc::stream& s1,
                              const sc::stream& s2, const sc::stream& other) {
  const std::string kind = gated_flags == stream_flags::blocking ? "blocking_gate" : "non_blocking_gate";
  void* device = nullptr;
  void* host = nullptr;
  void* pageable = nullptr;
  for (const host_call& c : calls(device, host, pageable, other.get())) {
    SCOPED_TRACE(c.name);
    c.prepare();
    sc::marks m;
    bool other_stream_ran = false;
    bool asked = false;
    sc::return_observation seen;
    {
      sc::gate g;
      t.hold(g, s1);
      if (!g.wait_started()) {
        ADD_FAILURE() << "the gate did not start";
        continue;
      }
      // The mark goes to s2 from the helper thread right after the call returns, while the gate is still
      // closed; call_while_gated opens the gate (and joins) once the helper is done or the window ends.
      seen = sc::call_while_gated(
          [&] {
            const cudaError_t code = c.call();
            if (code == cudaSuccess) {
              t.drop(m, s2, 1);
              asked = true;
              const auto until = std::chrono::steady_clock::now() + kMarkDeadline;
              while (m.ticket_of(1) == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
              other_stream_ran = m.ticket_of(1) != 0 && !g.is_open();
            }
            return code;
          },
          g, sc::kReturnWindow + kMarkDeadline);
    }
    SC_CHECK_CUDA(cudaDeviceSynchronize());
    c.release();
    const std::string key = c.name + "." + kind;
    sc::observe(key + ".returned_while_gated", seen.returned_while_gated);
    sc::observe(key + ".rc", sc::error_name(seen.code));
    if (asked && seen.returned_while_gated) sc::observe(key + ".other_stream_ran", other_stream_ran);
    EXPECT_CUDA_EQ(cudaSuccess, seen.code);
    EXPECT_TRUE(sc::matches_baseline("DFLT-19", key + ".returned_while_gated",
                                     sc::mutate("DFLT-19", seen.returned_while_gated, !seen.returned_while_gated)));
    if (asked && seen.returned_while_gated) {
      EXPECT_TRUE(sc::matches_baseline("DFLT-18", key + ".other_stream_ran",
                                       sc::mutate("DFLT-18", other_stream_ran, !other_stream_ran)));
    }
  }
}

// DFLT-18, DFLT-19 · PG 2.3.8 and the old guide's "Implicit Synchronization" list; ECRTS18 Table 3
// (observed): with a blocking stream gated, which calls return, and does blocking s2 then run?
TEST_F(DefaultStreams, BlockingSourcesWithABlockingStreamBusy) {
  sc::claim("DFLT-18", sc::verdict_kind::observed, "PG 2.3.8; old guide Implicit Synchronization");
  sc::claim("DFLT-19", sc::verdict_kind::observed, "ECRTS18 Table 3; EXAM test_blocking_sources.py");
  const sc::stream s1 = make(stream_flags::blocking, "s1");
  const sc::stream s2 = make(stream_flags::blocking, "s2");
  const sc::stream other = make(stream_flags::non_blocking, "other");
  measure_blocking_sources(*this, stream_flags::blocking, s1, s2, other);
}

// DFLT-18, DFLT-19 · ECRTS18 Table 3 (observed): the same with a non-blocking stream gated.
TEST_F(DefaultStreams, BlockingSourcesWithANonBlockingStreamBusy) {
  sc::claim("DFLT-18", sc::verdict_kind::observed, "PG 2.3.8; old guide Implicit Synchronization");
  sc::claim("DFLT-19", sc::verdict_kind::observed, "ECRTS18 Table 3; EXAM test_blocking_sources.py");
  const sc::stream s1 = make(stream_flags::non_blocking, "s1");
  const sc::stream s2 = make(stream_flags::blocking, "s2");
  const sc::stream other = make(stream_flags::non_blocking, "other");
  measure_blocking_sources(*this, stream_flags::non_blocking, s1, s2, other);
}

}  // namespace
