// GCTX-03: the streams of a green context. cuGreenCtxStreamCreate requires the non-blocking flag, and clamps
// priorities to the device's range as cuStreamCreateWithPriority does (PRIO-03's rule).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "green_contexts.hpp"
#include "sc/fixtures/check.hpp"

namespace {

using sc::families::green_context;
using sc::families::GreenContexts;

// GCTX-03 · DRV cuGreenCtxStreamCreate ("CU_STREAM_NON_BLOCKING must be specified"): a stream asked for without
// the flag is refused (CUDA_ERROR_INVALID_VALUE, as DFLT-21 saw) and none is made; with it, the stream reads
// back non-blocking.
TEST_F(GreenContexts, StreamsMustBeNonBlocking) {
  const sc::claim gctx03("GCTX-03");
  green_context green(api(), dev(), smallest_group());
  const unsigned asked =
      gctx03.mutate(sc::mutation_kind::arrangement, 0u, static_cast<unsigned>(CU_STREAM_NON_BLOCKING));
  CUstream refused = nullptr;
  const CUresult code = green.make_stream(asked, 0, &refused);
  sc::observe("rc.flags_0", sc::error_name(code));
  EXPECT_CU_EQ(CUDA_ERROR_INVALID_VALUE, code) << "a stream without CU_STREAM_NON_BLOCKING was made";
  CUstream made = nullptr;
  ASSERT_CU_EQ(CUDA_SUCCESS, green.make_stream(CU_STREAM_NON_BLOCKING, 0, &made));
  unsigned flags = 0;
  EXPECT_CU_EQ(CUDA_SUCCESS, sc::driver().cuStreamGetFlags(made, &flags));
  EXPECT_EQ(static_cast<unsigned>(CU_STREAM_NON_BLOCKING), flags);
}

// GCTX-03 · DRV cuGreenCtxStreamCreate (a priority "outside the numerical range returned by
// cuCtxGetStreamPriorityRange ... will automatically be clamped to the lowest or the highest number in the
// range"): every priority from three past the greatest to three past the least reads back
// clamped to the range.
TEST_F(GreenContexts, StreamPrioritiesAreClampedToTheRange) {
  const sc::claim gctx03("GCTX-03");
  int least = 0;
  int greatest = 0;
  SC_CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  green_context green(api(), dev(), smallest_group());
  const bool unclamped = gctx03.mutated(sc::mutation_kind::expectation);
  for (int asked = greatest - 3; asked <= least + 3; ++asked) {
    CUstream s = nullptr;
    ASSERT_CU_EQ(CUDA_SUCCESS, green.make_stream(CU_STREAM_NON_BLOCKING, asked, &s)) << "priority " << asked;
    int got = 0;
    EXPECT_CUDA_EQ(cudaSuccess, cudaStreamGetPriority(s, &got));
    EXPECT_EQ(unclamped ? asked : std::clamp(asked, greatest, least), got) << "priority " << asked;
  }
}

}  // namespace
