// The StreamCapture fixture: captures and graphs (CAPT-nn). Every capture a test begins is an sc::capture,
// which ends it whatever happens, so no stream stays capturing into the next test of the process.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/gate.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/graph.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/fixtures/thread_team.hpp"

namespace sc::families {

class StreamCapture : public GpuTest {
 public:
  // The three capture modes, and each one's name in observation and baseline keys.
  static constexpr cudaStreamCaptureMode kModes[] = {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                                     cudaStreamCaptureModeRelaxed};
  static const char* mode_name(cudaStreamCaptureMode mode) {
    switch (mode) {
      case cudaStreamCaptureModeGlobal:
        return "global";
      case cudaStreamCaptureModeThreadLocal:
        return "thread_local";
      case cudaStreamCaptureModeRelaxed:
        return "relaxed";
    }
    return "?";
  }
  // Whether mark `id` of `m` lands within `window`. Work that nothing holds back lands within microseconds
  // (predicates.hpp, kAbsenceWindow), so a mark that does not is held back: here, by being captured.
  static bool lands_within(const marks& m, unsigned id, std::chrono::milliseconds window = kAbsenceWindow) {
    return wait_until(probe::mark(m, id), window);
  }
  // A graph of one node, mark `id` of `m`, captured in `recording` (ThreadLocal); throws sc::cuda_error when the
  // capture does not end with a graph.
  static graph graph_of_mark(const stream& recording, marks& m, unsigned id) {
    graph g;
    capture c(recording, cudaStreamCaptureModeThreadLocal);
    m.drop(recording, id);
    SC_CHECK_CUDA(c.end(g));
    return g;
  }
  // A graph that holds itself: gate `g` as a kernel node, then mark `id` of `m`, captured in `recording`
  // (ThreadLocal); throws sc::cuda_error when the capture does not end with a graph. The captured gate is an
  // sc::gate like any other: held (pending) from the capture on, running once a launch of the graph reaches
  // it, open once the host opens it. Its word is in the gate ledger, so its watchdog fires, prints the banner
  // and is audited at the end of the test as a gate held in a stream would be. The node polls that one word at
  // every launch: launch such a graph once while the gate is closed (a later launch finds it open).
  graph graph_of_gate_then_mark(const stream& recording, gate& g, marks& m, unsigned id) {
    graph out;
    capture c(recording, cudaStreamCaptureModeThreadLocal);
    hold(g, recording);
    drop(m, recording, id);
    SC_CHECK_CUDA(c.end(out));
    return out;
  }
  // `call` made on a thread of its own, whose device is `device` and whose capture interaction mode is `mode`
  // (cudaThreadExchangeStreamCaptureMode, set first); its code, or the code of setting the thread up. The thread
  // is joined before this returns.
  static cudaError_t on_another_thread(int device, cudaStreamCaptureMode mode,
                                       const std::function<cudaError_t()>& call) {
    cudaError_t result = cudaErrorUnknown;
    thread_team team;
    team.start(1, [&](unsigned) {
      cudaStreamCaptureMode mine = mode;
      cudaError_t code = cudaSetDevice(device);
      if (code == cudaSuccess) code = cudaThreadExchangeStreamCaptureMode(&mine);
      if (code == cudaSuccess) code = call();
      sc::clear_last_error();
      team.update([&] { result = code; });
    });
    team.end();
    return result;
  }
  // "active", "invalidated" or "none" for `s` now, or the error cudaStreamIsCapturing returned.
  static std::string capture_status(const stream& s) {
    cudaStreamCaptureStatus status{};
    const cudaError_t asked = cudaStreamIsCapturing(s.get(), &status);
    if (asked != cudaSuccess) {
      sc::clear_last_error();
      return error_name(asked);
    }
    switch (status) {
      case cudaStreamCaptureStatusActive:
        return "active";
      case cudaStreamCaptureStatusInvalidated:
        return "invalidated";
      case cudaStreamCaptureStatusNone:
        return "none";
    }
    return "?";
  }
};

}  // namespace sc::families
