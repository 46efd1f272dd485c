// The EventsAndWaits fixture: events, stream waits, queries and synchronization, and what destroying a
// busy stream or a pending event leaves behind (EVT-nn). Orderings are proven with the suite's latches and
// marks; every event record and wait the test makes through the fixture is a host event of its timeline
// ("record e@s", "wait s<-e"), so the report shows where each edge was made.
//
// EventsAcrossDevices adds a second GPU (EVT-14): it skips at once, with the count, where fewer than two
// devices are visible, locks the peer's GPU with its own before any context exists, and loads the suite's kernels on
// the peer before any latch is closed (a lazy module load on one device was seen to wait for a held kernel on the
// other).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sc/fixtures/event.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/latch.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/stream.hpp"

namespace sc::families {

// The four kinds of stream a wait can join (EVT-01).
enum class stream_kind { blocking, non_blocking, per_thread, legacy };
const char* to_string(stream_kind kind) noexcept;
inline constexpr stream_kind kStreamKinds[] = {stream_kind::blocking, stream_kind::non_blocking,
                                               stream_kind::per_thread, stream_kind::legacy};

// Whether work in `a` and work in `b` are ordered by the legacy default stream's implicit synchronization
// (RT "Stream synchronization behavior"): the legacy stream waits for, and holds, every blocking stream of
// the context, and the per-thread default stream is a blocking stream in this sense. Such a pair orders its
// work without any wait, so a negative control ("no wait, no order") cannot be built for it.
bool implicitly_ordered(stream_kind a, stream_kind b) noexcept;

class EventsAndWaits : public GpuTest {
 protected:
  void SetUp() override;

 public:
  // A stream of `kind`: created (blocking, non-blocking) and tracked, or a view of the special handle.
  stream of_kind(stream_kind kind, const std::string& name);
  // cudaEventRecord / cudaStreamWaitEvent, each a host event of the timeline.
  void record(const event& e, const stream& s, const std::string& event_name) { record(e.get(), s, event_name); }
  void wait(const stream& s, const event& e, const std::string& event_name) { wait(s, e.get(), event_name); }
  // The same for an event the test owns by its handle (one it destroys itself).
  void record(cudaEvent_t e, const stream& s, const std::string& event_name);
  void wait(const stream& s, cudaEvent_t e, const std::string& event_name);
  // A producer and a consumer of one value: a fill of `n` elements with `value` ("fill@<stream>"), and a
  // count of the elements that are not `value`, added to *mismatches ("consume@<stream>").
  void fill(const stream& s, std::uint32_t* data, std::uint32_t n, std::uint32_t value);
  void count_mismatches(const stream& s, const std::uint32_t* data, std::uint32_t n, std::uint32_t value,
                        std::uint32_t* mismatches);
};

class EventsAcrossDevices : public EventsAndWaits {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Fewer than two devices (or no peer the environment allows): skipped before any context is created.
  std::string skip_before_context(int device, int device_count) const override;
  // The peer: its GPU lock is taken with the test's own, before either context exists.
  std::vector<int> more_devices(int device, int device_count) const override;

 public:
  int peer() const noexcept { return peer_; }
  // Makes `device` current (the test's own or the peer) for the calls that follow.
  void use(int device) const;

 protected:
  // Whether SetUp loads the suite's kernels on the peer (false only for the test of lazy loading itself).
  virtual bool preload_peer() const { return true; }

 private:
  int peer_ = -1;
};

}  // namespace sc::families
