// HOST-15 (recorded): cuLaunchHostFunc_v2 and its host-task sync modes (CUDA 13.2 driver API): BLOCKING
// (0, the worker thread sleeps until a host task is ready) and SPINWAIT (1, it spins), and what an
// unknown mode returns. The toolkit this suite builds with (13.0) has no declaration of it, so the entry
// point is asked of the driver at run time, and the test skips, saying so, where the driver predates it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "host_funcs.hpp"

namespace {

using sc::stream_flags;
using HostFuncs = sc::families::HostFuncs;

// cuLaunchHostFunc_v2(hStream, fn, userData, syncMode), as the CUDA 13.2 driver API documents it.
using launch_host_func_v2 = CUresult (*)(CUstream, CUhostFn, void*, unsigned int);
constexpr int kV2DriverVersion = 13020;
constexpr unsigned kModeBlocking = 0;
constexpr unsigned kModeSpinWait = 1;
constexpr unsigned kModeUnknown = 2;
// Samples per mode. Reason: a median of 15 latch releases is stable to a few microseconds on an idle host.
constexpr int kSamples = 15;

struct wake {
  std::atomic<bool> ran{false};
  std::chrono::steady_clock::time_point at;
};
void CUDART_CB note_wake(void* data) {
  auto* w = static_cast<wake*>(data);
  w->at = std::chrono::steady_clock::now();
  w->ran.store(true, std::memory_order_release);
}

// cuLaunchHostFunc_v2 as the driver gives it (null when it does not), and why not.
struct v2_entry_point {
  launch_host_func_v2 launch = nullptr;
  std::string why_not;
};

// Asks the driver (of CUDA version `driver`) for cuLaunchHostFunc_v2: a second ABI of cuLaunchHostFunc at
// version 13.2, distinct from the first.
v2_entry_point find_launch_host_func_v2(int driver) {
  if (driver < kV2DriverVersion)
    return {nullptr, "the driver supports CUDA " + std::to_string(driver / 1000) + "." +
                         std::to_string(driver % 1000 / 10) +
                         "; cuLaunchHostFunc_v2 (host-task sync modes) needs a CUDA 13.2 driver, so there is nothing "
                         "to measure"};
  void* v1 = nullptr;
  void* v2 = nullptr;
  cudaDriverEntryPointQueryResult found_v1 = cudaDriverEntryPointSymbolNotFound;
  cudaDriverEntryPointQueryResult found_v2 = cudaDriverEntryPointSymbolNotFound;
  SC_CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuLaunchHostFunc", &v1, 10000, cudaEnableDefault, &found_v1));
  SC_CHECK_CUDA(
      cudaGetDriverEntryPointByVersion("cuLaunchHostFunc", &v2, kV2DriverVersion, cudaEnableDefault, &found_v2));
  if (found_v2 != cudaDriverEntryPointSuccess || v2 == nullptr || v2 == v1)
    return {nullptr, "driver " + std::to_string(driver) + " gives no second ABI of cuLaunchHostFunc at version " +
                         std::to_string(kV2DriverVersion)};
  return {reinterpret_cast<launch_host_func_v2>(v2), ""};
}

// kSamples latencies (microseconds, sorted) from a latch's release to the start of the host function launched
// behind it in `s` with sync mode `mode` (named `key`). A failed step is fatal to the test.
void sample_release_to_start(HostFuncs& t, const sc::stream& s, launch_host_func_v2 launch, unsigned mode,
                             const std::string& key, std::vector<long long>& micros) {
  for (int i = 0; i < kSamples; ++i) {
    wake w;
    sc::latch g;
    t.hold(g, s);
    ASSERT_EQ(CUDA_SUCCESS, launch(s.get(), note_wake, &w, mode)) << "mode " << mode;
    std::chrono::steady_clock::time_point released;
    {
      sc::held_window window(g);
      ASSERT_TRUE(
          window.absent(sc::probe::flag("the host function (" + key + ")", w.ran), std::chrono::milliseconds(1)));
      released = std::chrono::steady_clock::now();
    }
    ASSERT_TRUE(t.drain());
    micros.push_back(std::chrono::duration_cast<std::chrono::microseconds>(w.at - released).count());
  }
  std::sort(micros.begin(), micros.end());
}

// HOST-15 · cuda-python HostTaskSyncMode (CUDA 13.2) (recorded): the latency from a latch's release to the
// start of the host function behind it, per sync mode (median of kSamples), and the code of mode 2.
TEST_F(HostFuncs, HostTaskSyncModesOfLaunchHostFuncV2) {
  const sc::claim host15("HOST-15");
  SC_REQUIRE(sc::requirement::async_launches);
  int driver = 0;
  SC_CHECK_CUDA(cudaDriverGetVersion(&driver));
  sc::observe("driver_version", driver);
  const v2_entry_point v2 = find_launch_host_func_v2(driver);
  if (v2.launch == nullptr) GTEST_SKIP() << v2.why_not;
  const sc::stream s = make(stream_flags::non_blocking, "s");
  wake refused;
  const CUresult unknown = v2.launch(s.get(), note_wake, &refused, kModeUnknown);
  ASSERT_TRUE(drain());
  sc::observe("rc.mode_2", static_cast<int>(unknown));
  EXPECT_TRUE(host15.matches_baseline("rc.mode_2", static_cast<int>(unknown)));
  for (const unsigned mode : {kModeBlocking, kModeSpinWait}) {
    const std::string key = mode == kModeBlocking ? "blocking" : "spinwait";
    std::vector<long long> micros;
    ASSERT_NO_FATAL_FAILURE(sample_release_to_start(*this, s, v2.launch, mode, key, micros));
    sc::observe("release_to_start_us." + key + ".median", micros[micros.size() / 2]);
    sc::observe("release_to_start_us." + key + ".max", micros.back());
  }
}

}  // namespace
