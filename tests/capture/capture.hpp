// The StreamCapture fixture: captures and graphs (CAPT-nn). Every capture a test begins is an sc::capture,
// which ends it whatever happens, so no stream stays capturing into the next test of the process.
#pragma once

#include <cuda_runtime_api.h>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/gate.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/graph.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/probe.hpp"

namespace sc::testing {

class StreamCapture : public GpuTest {
 public:
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
};

}  // namespace sc::testing
