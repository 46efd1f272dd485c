// DFLT-02..05 through the driver API: the NULL stream (handle 0) of cuLaunchKernel and cuStreamWaitEvent
// is the legacy stream (legacy entry points, as a default build binds them), streams made with
// cuStreamCreate(CU_STREAM_DEFAULT) are blocking and CU_STREAM_NON_BLOCKING ones are not. Same claims,
// same mutations as the runtime tests of legacy_test.cpp; only the API differs.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cstdint>
#include <string>

#include "default_streams.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/event.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using DefaultStreams = sc::testing::DefaultStreams;

class DriverDefaultStreams : public DefaultStreams {
 protected:
  void SetUp() override {
    DefaultStreams::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    api_ = &sc::driver(sc::default_stream_mode::legacy);
    SC_CHECK_CUDA(sc::kernels::mark_function(&mark_));
  }

  // cuStreamCreate with the given flags, owned and tracked like make()'s streams.
  sc::stream make_driver(unsigned flags, const std::string& name) {
    CUstream raw = nullptr;
    SC_CHECK_CU(api_->cuStreamCreate(&raw, flags));
    sc::stream s = sc::stream::adopt(reinterpret_cast<cudaStream_t>(raw), name);
    timeline().track(s);
    return s;
  }
  // A mark launched with cuLaunchKernel into `stream` (0: the NULL stream), labelled like drop()'s.
  void drop_driver(sc::marks& m, CUstream stream, const std::string& where, unsigned id) {
    const auto label = timeline().label("mark" + std::to_string(id) + "@" + where + " (cuLaunchKernel)");
    m.drop_by(id, [&](std::uint32_t* counter, sc::kernels::mark_board* board, unsigned slot) {
      void* args[] = {&counter, &board, &slot};
      SC_CHECK_CU(api_->cuLaunchKernel(reinterpret_cast<CUfunction>(mark_), 1, 1, 1, 1, 1, 1, 0, stream, args,
                                       nullptr));
      return cudaSuccess;
    });
  }
  static CUstream cu(const sc::stream& s) { return reinterpret_cast<CUstream>(s.get()); }

  const sc::driver_api* api_ = nullptr;
  cudaFunction_t mark_ = nullptr;
};

constexpr CUstream kNullStream = nullptr;

// DFLT-02 · DRV cuLaunchKernel (hStream 0 is the NULL stream); SSB: a kernel launched into the NULL
// stream waits for earlier work in a blocking stream made with cuStreamCreate(CU_STREAM_DEFAULT).
TEST_F(DriverDefaultStreams, NullStreamLaunchWaitsForEarlierBlockingStreamWork) {
  sc::claim("DFLT-02", sc::verdict_kind::documented, "DRV cuLaunchKernel on the NULL stream; SSB");
  sc::marks m;
  const sc::stream s1 =
      make_driver(sc::mutate("DFLT-02", unsigned{CU_STREAM_DEFAULT}, unsigned{CU_STREAM_NON_BLOCKING}), "s1");
  sc::gate g;
  hold(g, s1);
  drop_driver(m, kNullStream, "null", 1);
  ASSERT_TRUE(g.wait_started());
  EXPECT_TRUE(sc::absent_while_gated(m, 1, g));
  g.open();
  drain();
  EXPECT_EQ(1u, m.ticket_of(1));
  EXPECT_GE(m.stamp_ns_of(1), g.end_ns()) << "the NULL-stream mark landed before the gate in s1 ended";
}

// DFLT-03 · DRV cuLaunchKernel; SSB example k1(s); k2(0); k3(s), all three launched with the driver API:
// k2 (NULL stream) waits for k1, and k3 (blocking s2) waits for k2.
TEST_F(DriverDefaultStreams, BlockingStreamLaunchWaitsForEarlierNullStreamWork) {
  sc::claim("DFLT-03", sc::verdict_kind::documented, "DRV cuLaunchKernel; SSB example k1<<<s>>>, k2<<<0>>>, k3<<<s>>>");
  sc::marks m;
  const sc::stream s1 = make_driver(CU_STREAM_DEFAULT, "s1");
  const sc::stream s2 =
      make_driver(sc::mutate("DFLT-03", unsigned{CU_STREAM_DEFAULT}, unsigned{CU_STREAM_NON_BLOCKING}), "s2");
  sc::gate k1;
  hold(k1, s1);
  drop_driver(m, kNullStream, "null", 2);
  drop_driver(m, cu(s2), "s2", 3);
  ASSERT_TRUE(k1.wait_started());
  EXPECT_TRUE(sc::absent_while_gated("k3 (mark 3 in blocking s2)", [&] { return m.ticket_of(3) != 0; }, k1));
  EXPECT_EQ(0u, m.ticket_of(2)) << "k2 ran before k1 ended";
  k1.open();
  drain();
  EXPECT_EQ(1u, m.ticket_of(2)) << "k2 (NULL stream) must land first";
  EXPECT_EQ(2u, m.ticket_of(3)) << "k3 (s2) must land after k2";
}

// DFLT-04 · DRV cuStreamCreate (CU_STREAM_NON_BLOCKING: "work running in the created stream may run
// concurrently with work in stream 0 ... performs no implicit synchronization with stream 0"): in both
// directions, with every launch made by cuLaunchKernel.
TEST_F(DriverDefaultStreams, NonBlockingStreamAndNullStreamDoNotWaitForEachOther) {
  sc::claim("DFLT-04", sc::verdict_kind::documented, "DRV cuStreamCreate (CU_STREAM_NON_BLOCKING)");
  const unsigned flags = sc::mutate("DFLT-04", unsigned{CU_STREAM_NON_BLOCKING}, unsigned{CU_STREAM_DEFAULT});
  const sc::stream s = make_driver(flags, "s");
  {
    sc::marks m;
    sc::gate g;
    hold(g, legacy_);
    drop_driver(m, cu(s), "s", 1);
    ASSERT_TRUE(g.wait_started());
    EXPECT_TRUE(sc::present_while_gated(m, 1, g)) << "a non-blocking stream waited for the NULL stream";
    g.open();
    drain();
  }
  {
    sc::marks m;
    sc::gate g;
    hold(g, s);
    drop_driver(m, kNullStream, "null", 2);
    ASSERT_TRUE(g.wait_started());
    EXPECT_TRUE(sc::present_while_gated(m, 2, g)) << "the NULL stream waited for a non-blocking stream";
    g.open();
    drain();
  }
}

// DFLT-05 · DRV cuStreamWaitEvent on the NULL stream; SSB ("such as a kernel launch or
// cudaStreamWaitEvent()"): the wait is a NULL-stream action, so it waits for busy blocking s1 and later
// work in blocking s2 waits for it; non-blocking s3 does not.
TEST_F(DriverDefaultStreams, NullStreamWaitEventHoldsLaterBlockingWorkOnly) {
  sc::claim("DFLT-05", sc::verdict_kind::documented, "DRV cuStreamWaitEvent on the NULL stream; SSB");
  sc::marks m;
  const sc::stream idle = make_driver(CU_STREAM_NON_BLOCKING, "idle");
  const sc::stream s1 = make_driver(CU_STREAM_DEFAULT, "s1");
  const sc::stream s2 = make_driver(CU_STREAM_DEFAULT, "s2");
  const sc::stream s3 = make_driver(CU_STREAM_NON_BLOCKING, "s3");
  const sc::event done = sc::event::create(sc::event_flags::disable_timing);
  SC_CHECK_CUDA(cudaEventRecord(done.get(), idle.get()));
  SC_CHECK_CUDA(sc::synchronize_within(idle, sc::kWorkDeadline));  // complete: the wait itself is a no-op
  sc::gate g;
  hold(g, s1);
  if (!sc::mutation_active("DFLT-05"))
    SC_CHECK_CU(api_->cuStreamWaitEvent(kNullStream, reinterpret_cast<CUevent>(done.get()), 0));
  drop_driver(m, cu(s2), "s2", 2);
  drop_driver(m, cu(s3), "s3", 3);
  ASSERT_TRUE(g.wait_started());
  EXPECT_TRUE(sc::present_while_gated(m, 3, g)) << "non-blocking s3 must not wait";
  EXPECT_TRUE(sc::absent_while_gated(m, 2, g)) << "blocking s2 must wait for the NULL-stream wait, which waits for s1";
  g.open();
  drain();
  EXPECT_NE(0u, m.ticket_of(2));
}

}  // namespace
