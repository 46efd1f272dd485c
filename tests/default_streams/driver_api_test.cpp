// DFLT-02..05 through the driver API: the NULL stream (handle 0) of cuLaunchKernel and cuStreamWaitEvent
// is the legacy stream (legacy entry points, as a default build binds them), streams made with
// cuStreamCreate(CU_STREAM_DEFAULT) are blocking and CU_STREAM_NON_BLOCKING ones are not. The
// arrangements, expectations and mutations are the runtime tests' (legacy_rules.hpp); only the API differs.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "default_streams.hpp"
#include "legacy_rules.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using DefaultStreams = sc::families::DefaultStreams;

class DriverDefaultStreams : public DefaultStreams {
 protected:
  void SetUp() override {
    DefaultStreams::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    api_ = &sc::driver(sc::default_stream_mode::legacy);
    SC_CHECK_CUDA(sc::kernels::mark_function(&mark_));
  }

  // Streams from cuStreamCreate, marks from cuLaunchKernel, waits from cuStreamWaitEvent; the legacy
  // stream is handle 0.
  sc::families::enqueue_path driver_path() {
    return {sc::stream::null(),
            [this](stream_flags flags, const std::string& name) {
              CUstream raw = nullptr;
              SC_CHECK_CU(api_->cuStreamCreate(
                  &raw, flags == stream_flags::non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
              sc::stream s = sc::stream::adopt(reinterpret_cast<cudaStream_t>(raw), name);
              recorder().track(s);
              return s;
            },
            [this](sc::marks& m, const sc::stream& s, unsigned id) {
              const auto label = recorder().label("mark" + std::to_string(id) + "@" + s.name() + " (cuLaunchKernel)");
              m.drop_by(id, [&](std::uint32_t* counter, sc::kernels::mark_board* board, unsigned slot) {
                void* args[] = {&counter, &board, &slot};
                SC_CHECK_CU(api_->cuLaunchKernel(reinterpret_cast<CUfunction>(mark_), 1, 1, 1, 1, 1, 1, 0,
                                                 reinterpret_cast<CUstream>(s.get()), args, nullptr));
                return cudaSuccess;
              });
            },
            [this](const sc::stream& s, const sc::event& e) {
              SC_CHECK_CU(
                  api_->cuStreamWaitEvent(reinterpret_cast<CUstream>(s.get()), reinterpret_cast<CUevent>(e.get()), 0));
            }};
  }

  const sc::driver_api* api_ = nullptr;
  cudaFunction_t mark_ = nullptr;
};

// DFLT-02 · DRV cuLaunchKernel (hStream 0 is the NULL stream); SSB: a kernel launched into the NULL
// stream waits for earlier work in a blocking stream made with cuStreamCreate(CU_STREAM_DEFAULT).
TEST_F(DriverDefaultStreams, NullStreamLaunchWaitsForEarlierBlockingStreamWork) {
  const sc::claim dflt02("DFLT-02");
  SC_REQUIRE(sc::requirement::async_launches);
  sc::families::legacy_waits_for_earlier_blocking_work(*this, dflt02, driver_path());
}

// DFLT-03 · DRV cuLaunchKernel; SSB example k1(s); k2(0); k3(s), the marks launched with the driver API.
TEST_F(DriverDefaultStreams, BlockingStreamLaunchWaitsForEarlierNullStreamWork) {
  const sc::claim dflt03("DFLT-03");
  SC_REQUIRE(sc::requirement::async_launches);
  sc::families::blocking_waits_for_earlier_legacy_work(*this, dflt03, driver_path());
}

// DFLT-04 · DRV cuStreamCreate (CU_STREAM_NON_BLOCKING: "work running in the created stream may run
// concurrently with work in stream 0 ... performs no implicit synchronization with stream 0"): in both
// directions.
TEST_F(DriverDefaultStreams, NonBlockingStreamAndNullStreamDoNotWaitForEachOther) {
  const sc::claim dflt04("DFLT-04");
  SC_REQUIRE(sc::requirement::async_launches);
  const sc::families::enqueue_path path = driver_path();
  sc::families::non_blocking_does_not_wait_for_legacy_work(*this, dflt04, path);
  sc::families::legacy_does_not_wait_for_non_blocking_work(*this, dflt04, path);
}

// DFLT-05 · DRV cuStreamWaitEvent on the NULL stream; SSB ("such as a kernel launch or
// cudaStreamWaitEvent()"): the wait is a NULL-stream action, so later blocking work waits for it.
TEST_F(DriverDefaultStreams, NullStreamWaitEventHoldsLaterBlockingWorkOnly) {
  const sc::claim dflt05("DFLT-05");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::default_connections);
  sc::families::wait_on_legacy_holds_later_blocking_work_only(*this, dflt05, driver_path());
}

}  // namespace
