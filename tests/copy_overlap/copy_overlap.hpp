// The CopyOverlap fixture: streams the timeline knows by name, labelled copies and memsets (one CUPTI
// record each, found again by label), buffers reused inside a test, and the arithmetic the family reads
// from a collected timeline (how much of one interval another covers, a copy's bandwidth).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/latch.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/fixtures/timeline.hpp"

namespace sc::families {

// The size of the copies that decide overlap and measure bandwidth. Reason: 32 MiB takes about 1 ms
// pinned and 3 to 6 ms pageable on PCIe 5 and C2C hosts: long against CUPTI's microsecond resolution, so
// an overlap fraction means something, and short enough for at most 50 ms of GPU work per test.
inline constexpr std::size_t kCopyBytes = std::size_t{32} << 20;
// Copies whose content is checked element by element. Reason: 4 MiB is a million words, enough that a
// consumer running early sees unwritten words, and quick to check on the host.
inline constexpr std::size_t kCheckedBytes = std::size_t{4} << 20;
// How long a free copy engine may take to finish a copy while a latch holds another stream. Reason: 32 MiB
// needs at most about 10 ms even pageable; 1 s is far beyond that and below the latch watchdog (2 s).
inline constexpr std::chrono::milliseconds kCopyDeadline{1000};

// Host memory that is not pinned (plain new[]). Every page is written once at construction, so a copy
// does not also measure first-touch page faults.
class pageable {
 public:
  explicit pageable(std::size_t bytes, std::uint32_t value = 0);
  std::uint32_t* data() const noexcept { return words_.get(); }
  std::size_t bytes() const noexcept { return bytes_; }
  std::size_t size() const noexcept { return bytes_ / sizeof(std::uint32_t); }

 private:
  std::size_t bytes_;
  std::unique_ptr<std::uint32_t[]> words_;
};

class CopyOverlap : public GpuTest {
 protected:
  void SetUp() override;

 public:
  using GpuTest::recorder;
  // cudaMemcpyAsync / cudaMemsetAsync under `label` (one CUPTI record each); they return the call's code.
  cudaError_t copy(const std::string& label, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                   const stream& s);
  cudaError_t memset(const std::string& label, void* dst, int value, std::size_t bytes, const stream& s);
  // A kernel under `label`: counts the words of data[0..n) different from `expected` into *mismatches.
  void count_mismatches(const std::string& label, const std::uint32_t* data, std::size_t n, std::uint32_t expected,
                        std::uint32_t* mismatches, const stream& s);
  int async_engines() const noexcept { return properties().asyncEngineCount; }
  // `work` (copies and their streams' synchronizes) made on another host thread while a latch kernel holds
  // `held`: did it complete while the latch was closed (within kCopyDeadline)? Afterwards the latch is open,
  // the work joined (a failure if it does not finish) and the device drained; a call that failed is a
  // failure too.
  held_result completes_beside_latch(const stream& held, const std::string& what,
                                     const std::function<cudaError_t()>& work);
  // A copy of kCopyBytes into `target`, labelled `label`, and its synchronize, made by completes_beside_latch while a
  // latch holds `held`; `what` names the copy ("a pinned H2D copy": "... in <target> and its synchronize").
  held_result copy_completes_beside_latch(const stream& held, const std::string& what, const std::string& label,
                                          void* dst, const void* src, cudaMemcpyKind kind, const stream& target);
  // call_while_holding(s, call, window), then drain(): a failure where the call did not return cudaSuccess;
  // with a took_key, how long it took is recorded under it (microseconds).
  return_observation held_call(const stream& s, const std::function<cudaError_t()>& call,
                               std::chrono::milliseconds window = kReturnWindow);
  return_observation held_call(const stream& s, const std::string& took_key, const std::function<cudaError_t()>& call,
                               std::chrono::milliseconds window = kReturnWindow);
  // cudaMemcpy (synchronous) under `label` (one CUPTI record); returns the call's code.
  cudaError_t sync_copy(const std::string& label, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
  // Holds `waiters` behind latch `g`: `g` holds `latch_stream`, and each waiter waits on an event recorded
  // after it, so what is queued in them starts once `g` opens, however long the host takes between calls.
  void hold_behind(latch& g, const stream& latch_stream, const std::vector<const stream*>& waiters);
  // Empty when the test's timeline is recorded; otherwise why not (CUPTI unavailable, under a profiler).
  std::string untraced_reason() const;

  // The one item labelled `label` in `t`; nullptr (and a failure) when there is not exactly one.
  static const timeline_item* one(const sc::timeline& t, const std::string& label);
  // The fraction of a's interval that b's covers (0 when a has no length).
  static double covered_fraction(const timeline_item& a, const timeline_item& b);
  // The fraction of the shorter of a and b that the other covers (how much two copies overlap each other).
  static double shorter_covered_by_other(const timeline_item& a, const timeline_item& b);
  // How many of words[0..n) differ from `value`.
  static std::size_t count_other_than(const std::uint32_t* words, std::size_t n, std::uint32_t value);
  // Bytes per nanosecond = GB/s (0 without a duration).
  static double gbps(const timeline_item& c);
  // Records what CUPTI said of a copy or memset under `key`: bandwidth, duration, memory kinds, channel.
  static void observe_copy(const std::string& key, const timeline_item& c);
  // observe_copy of both copies, then how much the two overlap (shorter_covered_by_other), recorded as
  // "shorter_copy_covered_by_the_other" and returned.
  static double observe_copy_pair(const std::string& key_a, const timeline_item& a, const std::string& key_b,
                                  const timeline_item& b);
};

}  // namespace sc::families
