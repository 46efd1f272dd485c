#include "events.hpp"

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/device.hpp"
#include "sc/kernels/launch.hpp"

namespace sc::families {

const char* to_string(stream_kind kind) noexcept {
  switch (kind) {
    case stream_kind::blocking:
      return "blocking";
    case stream_kind::non_blocking:
      return "non_blocking";
    case stream_kind::per_thread:
      return "per_thread";
    case stream_kind::legacy:
      return "legacy";
  }
  return "?";
}

bool implicitly_ordered(stream_kind a, stream_kind b) noexcept {
  const auto joins_legacy = [](stream_kind k) { return k != stream_kind::non_blocking; };
  return (a == stream_kind::legacy && joins_legacy(b)) || (b == stream_kind::legacy && joins_legacy(a));
}

void EventsAndWaits::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  // Latches need launches that return while their kernel runs; waits across streams and their negative
  // controls need independent hardware queues.
  SC_REQUIRE(requirement::async_launches);
  SC_REQUIRE(requirement::own_connection_count);
  recorder().track(stream::legacy());
  recorder().track(stream::per_thread());
}

stream EventsAndWaits::of_kind(stream_kind kind, const std::string& name) {
  switch (kind) {
    case stream_kind::blocking:
      return make(stream_flags::blocking, name);
    case stream_kind::non_blocking:
      return make(stream_flags::non_blocking, name);
    case stream_kind::per_thread:
      return stream::per_thread();
    case stream_kind::legacy:
      return stream::legacy();
  }
  throw std::logic_error("of_kind: unknown stream kind");
}

void EventsAndWaits::record(cudaEvent_t e, const stream& s, const std::string& event_name) {
  recorder().host_event("record " + event_name + "@" + s.name());
  SC_CHECK_CUDA(cudaEventRecord(e, s.get()));
}

void EventsAndWaits::wait(const stream& s, cudaEvent_t e, const std::string& event_name) {
  recorder().host_event("wait " + s.name() + "<-" + event_name);
  SC_CHECK_CUDA(cudaStreamWaitEvent(s.get(), e, 0));
}

void EventsAndWaits::fill(const stream& s, std::uint32_t* data, std::uint32_t n, std::uint32_t value) {
  const auto label = recorder().label("fill@" + s.name());
  SC_CHECK_CUDA(kernels::launch_fill(s.get(), data, n, value));
}

void EventsAndWaits::count_mismatches(const stream& s, const std::uint32_t* data, std::uint32_t n, std::uint32_t value,
                                      std::uint32_t* mismatches) {
  const auto label = recorder().label("consume@" + s.name());
  SC_CHECK_CUDA(kernels::launch_count_mismatches(s.get(), data, n, value, mismatches));
}

std::string EventsAcrossDevices::skip_before_context(int device, int device_count) const {
  return choose_peer_device(device, device_count).why_not;
}

std::vector<int> EventsAcrossDevices::more_devices(int device, int device_count) const {
  return {choose_peer_device(device, device_count).index};
}

void EventsAcrossDevices::SetUp() {
  EventsAndWaits::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  int count = 0;
  SC_CHECK_CUDA(cudaGetDeviceCount(&count));
  const peer_choice choice = choose_peer_device(device(), count);
  if (choice.index < 0) GTEST_SKIP() << choice.why_not;
  cudaDeviceProp peer_props{};
  SC_CHECK_CUDA(cudaGetDeviceProperties(&peer_props, choice.index));
  // The base SetUp locked the peer's GPU with the test's own (more_devices): no other process of the suite
  // tests on it meanwhile, although CTest did not give it to this test.
  peer_ = choice.index;
  observe("peer.index", peer_);
  observe("peer.name", std::string(peer_props.name));
  observe("peer.compute_capability", peer_props.major * 10 + peer_props.minor);
  // The peer's context exists before any latch closes, and (except in the lazy-loading test) so do its
  // kernels: a module load on one device may wait for a held kernel on another.
  use(peer_);
  SC_CHECK_CUDA(cudaFree(nullptr));
  if (preload_peer()) SC_CHECK_CUDA(kernels::preload());
  use(device());
}

void EventsAcrossDevices::TearDown() {
  if (peer_ >= 0) {
    // The peer's work must be finished (and its errors seen) before the base fixture ends the test.
    if (cudaSetDevice(peer_) == cudaSuccess) {
      if (const cudaError_t code = cudaDeviceSynchronize(); code != cudaSuccess)
        ADD_FAILURE() << "cudaDeviceSynchronize on the peer device " << peer_ << " returned " << error_name(code);
    }
    (void)cudaSetDevice(device());
  }
  EventsAndWaits::TearDown();
}

void EventsAcrossDevices::use(int d) const { SC_CHECK_CUDA(cudaSetDevice(d)); }

}  // namespace sc::families
