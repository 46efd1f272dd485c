// The StreamCapture fixture: captures and graphs (CAPT-nn). Every capture a test begins is an sc::capture,
// which ends it whatever happens, so no stream stays capturing into the next test of the process.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>
#include <string>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/graph.hpp"
#include "sc/fixtures/latch.hpp"
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
  // graph_of_mark's graph, instantiated (the graph itself is not kept).
  static graph_exec exec_of_mark(const stream& recording, marks& m, unsigned id) {
    return graph_exec::instantiate(graph_of_mark(recording, m, id));
  }
  // A graph that holds itself: latch `g` as a kernel node, then mark `id` of `m`, captured in `recording`
  // (ThreadLocal); throws sc::cuda_error when the capture does not end with a graph. The captured latch is an
  // sc::latch like any other: held (pending) from the capture on, running once a launch of the graph reaches
  // it, open once the host opens it. Its word is in the latch ledger, so its watchdog fires, prints the banner
  // and is audited at the end of the test as a latch held in a stream would be. The node polls that one word at
  // every launch: launch such a graph once while the latch is closed (a later launch finds it open).
  graph graph_of_latch_then_mark(const stream& recording, latch& g, marks& m, unsigned id) {
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
  // What a call made during a capture returned, what ending that capture then returned, and the graph it ended with.
  struct call_in_capture {
    cudaError_t code = cudaErrorUnknown;
    cudaError_t ended = cudaErrorUnknown;
    graph g;  // not engaged when the capture ended without a graph
  };
  // `call` made in a capture of `s` in `mode`, begun for it alone; the capture is ended and this thread's last error
  // cleared before this returns.
  static call_in_capture in_a_capture_of(const stream& s, cudaStreamCaptureMode mode,
                                         const std::function<cudaError_t()>& call) {
    call_in_capture out;
    {
      capture c(s, mode);
      out.code = call();
      out.ended = c.end(out.g);
    }
    sc::clear_last_error();
    return out;
  }
  // What happened when another thread made a call while this thread captured (call_beside_a_capture).
  struct beside_a_capture {
    bool started = false;                     // the other thread was set up before the capture began
    cudaError_t prepared = cudaErrorUnknown;  // setting its device (and its capture mode)
    bool called = false;                      // its call returned while the capture was open
    cudaError_t code = cudaErrorUnknown;      // the call's code (`prepared` when setting up failed)
    cudaError_t ended = cudaErrorUnknown;     // what ending the capture then returned
  };
  // `call` made on a thread of its own while this thread captures `s` in `mode`. Before the capture begins, the
  // thread sets its device to the test's and, when `thread_mode` is given, its capture interaction mode
  // (cudaThreadExchangeStreamCaptureMode); once the capture is open it makes `call` (unless setting up failed),
  // and the capture ends once the call returned or its deadline passed. Nothing is captured when the thread did
  // not start. The thread is joined, and this thread's last error cleared, before this returns.
  beside_a_capture call_beside_a_capture(const stream& s, cudaStreamCaptureMode mode,
                                         std::optional<cudaStreamCaptureMode> thread_mode,
                                         const std::function<cudaError_t()>& call) {
    beside_a_capture out;
    const int dev = device();
    // The team's steps: 1 the other thread is ready, 2 the capture is open, 3 it has called.
    thread_team team;
    team.start(1, [&](unsigned) {
      cudaError_t code = cudaSetDevice(dev);
      if (code == cudaSuccess && thread_mode) {
        cudaStreamCaptureMode mine = *thread_mode;
        code = cudaThreadExchangeStreamCaptureMode(&mine);
      }
      team.step_to(1, [&] { out.prepared = code; });
      if (!team.reached(2, kWorkDeadline)) return;
      const cudaError_t called = sc::taking_last_error(code == cudaSuccess ? call() : code);
      team.step_to(3, [&] { out.code = called; });
    });
    out.started = team.reached(1, kWorkDeadline);
    if (!out.started) return out;
    graph g;
    {
      capture c(s, mode);
      team.step_to(2);
      out.called = team.reached(3, kWorkDeadline);
      out.ended = c.end(g);
    }
    team.end();
    sc::clear_last_error();
    return out;
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
