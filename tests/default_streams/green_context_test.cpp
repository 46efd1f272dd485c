// DFLT-21: green contexts (driver API, CUDA 12.4+): their streams are non-blocking and they have no
// per-thread default stream.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "default_streams.hpp"
#include "sc/fixtures/driver.hpp"

namespace {

using DefaultStreams = sc::families::DefaultStreams;

// A green context on 8 SMs (CC 9.0 partitions come in multiples of 8), destroyed with its stream.
class green_context {
 public:
  green_context(const sc::green_context_api& g, int ordinal) : g_(g) {
    CUdevice dev = 0;
    SC_CHECK_CU(g_.cuDeviceGet(&dev, ordinal));
    CUdevResource all{};
    SC_CHECK_CU(g_.cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
    CUdevResource part{};
    CUdevResource rest{};
    unsigned groups = 1;
    SC_CHECK_CU(g_.cuDevSmResourceSplitByCount(&part, &groups, &all, &rest, 0, 8));
    CUdevResourceDesc desc{};
    SC_CHECK_CU(g_.cuDevResourceGenerateDesc(&desc, &part, 1));
    SC_CHECK_CU(g_.cuGreenCtxCreate(&green_, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    sms_ = part.sm.smCount;
  }
  green_context(const green_context&) = delete;
  green_context& operator=(const green_context&) = delete;
  ~green_context() {
    if (stream_ != nullptr) sc::note_teardown(sc::driver().cuStreamDestroy(stream_), "cuStreamDestroy (green)");
    sc::note_teardown(g_.cuGreenCtxDestroy(green_), "cuGreenCtxDestroy");
  }
  CUgreenCtx get() const { return green_; }
  unsigned sms() const { return sms_; }
  CUstream& stream() { return stream_; }
  // cuStreamGetCtx_v2 of `asked` while this green context is current (pushed, then popped again).
  CUresult stream_context_while_current(CUstream asked) const;

 private:
  const sc::green_context_api& g_;
  CUgreenCtx green_ = nullptr;
  CUstream stream_ = nullptr;
  unsigned sms_ = 0;
};

CUresult green_context::stream_context_while_current(CUstream asked) const {
  CUcontext as_context = nullptr;
  SC_CHECK_CU(g_.cuCtxFromGreenCtx(&as_context, green_));
  SC_CHECK_CU(g_.cuCtxPushCurrent(as_context));
  CUcontext context = nullptr;
  CUgreenCtx owner = nullptr;
  const CUresult rc = g_.cuStreamGetCtx_v2(asked, &context, &owner);
  CUcontext popped = nullptr;
  SC_CHECK_CU(g_.cuCtxPopCurrent(&popped));
  return rc;
}

// A stream the green context made although it must not have: its flags recorded, then destroyed.
void record_and_destroy_unexpected_stream(CUstream made) {
  unsigned flags = 0;
  EXPECT_CU_EQ(CUDA_SUCCESS, sc::driver().cuStreamGetFlags(made, &flags));
  sc::observe("flags_of_stream_made_with_flags_0", static_cast<int>(flags));
  sc::note_teardown(sc::driver().cuStreamDestroy(made), "cuStreamDestroy (green, flags 0)");
}

// DFLT-21 · DRV cuGreenCtxStreamCreate ("CU_STREAM_NON_BLOCKING must be specified"), cuStreamGetCtx_v2
// ("specifying CU_STREAM_PER_THREAD ... returns CUDA_ERROR_INVALID_HANDLE if a green context is current"):
// no blocking stream can be made in a green context, its streams read back non-blocking and belong to
// it, and it has no per-thread default stream.
TEST_F(DefaultStreams, GreenContextStreamsAreNonBlockingAndHaveNoPerThreadStream) {
  const sc::claim dflt21("DFLT-21");
  std::string missing;
  const sc::green_context_api* g = sc::green_contexts(missing);
  if (g == nullptr) GTEST_SKIP() << "the driver has no green contexts (" << missing << " not found)";
  green_context green(*g, device());
  sc::observe("green_context_sms", static_cast<int>(green.sms()));

  // Flags 0 leave out the flag that "must be specified": the call is invalid and creates nothing.
  CUstream blocking = reinterpret_cast<CUstream>(std::uintptr_t{0x5c5c});
  const CUresult blocking_rc = g->cuGreenCtxStreamCreate(&blocking, green.get(), 0, 0);
  sc::observe("rc.blocking_stream", sc::error_name(blocking_rc));
  EXPECT_CU_EQ(CUDA_ERROR_INVALID_VALUE, blocking_rc) << "flags 0 (no CU_STREAM_NON_BLOCKING) were accepted";
  if (blocking_rc == CUDA_SUCCESS) record_and_destroy_unexpected_stream(blocking);

  SC_CHECK_CU(g->cuGreenCtxStreamCreate(&green.stream(), green.get(), CU_STREAM_NON_BLOCKING, 0));
  unsigned flags = 0;
  EXPECT_CU_EQ(CUDA_SUCCESS, sc::driver().cuStreamGetFlags(green.stream(), &flags));
  EXPECT_EQ(static_cast<unsigned>(CU_STREAM_NON_BLOCKING), flags);
  CUcontext context = nullptr;
  CUgreenCtx owner = nullptr;
  EXPECT_CU_EQ(CUDA_SUCCESS, g->cuStreamGetCtx_v2(green.stream(), &context, &owner));
  EXPECT_EQ(green.get(), owner) << "the stream does not belong to its green context";

  const CUstream asked = dflt21.mutated(sc::mutation_kind::arrangement) ? CU_STREAM_LEGACY : CU_STREAM_PER_THREAD;
  const CUresult per_thread_rc = green.stream_context_while_current(asked);
  sc::observe("rc.per_thread_with_green_current", sc::error_name(per_thread_rc));
  EXPECT_CU_EQ(CUDA_ERROR_INVALID_HANDLE, per_thread_rc);
}

}  // namespace
