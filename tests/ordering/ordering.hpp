// The OrderingExceptions fixture: the documented places where CUDA lets work leave plain stream order. For
// now the stream memory operations (cuStreamWaitValue32, cuStreamWriteValue32): a 32-bit word in mapped host
// memory that a stream waits on, stored by the host or written by another stream.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "sc/fixtures/event.hpp"
#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/latch.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/fixtures/sched.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/kernels/record.hpp"

namespace sc::families {

// A word a stream waits on. The destructor stores `release` (a value that satisfies every wait the test
// enqueued on it), so that no stream is left waiting when a test fails.
class wait_word {
 public:
  wait_word(std::uint32_t initial, std::uint32_t release);
  ~wait_word();
  wait_word(const wait_word&) = delete;
  wait_word& operator=(const wait_word&) = delete;

  // cuStreamWaitValue32(s, word, value, flags): later work of `s` waits until the condition holds.
  CUresult wait_in(const stream& s, std::uint32_t value, unsigned flags) const;
  // cuStreamWriteValue32(s, word, value): written once the earlier work of `s` is done.
  CUresult write_in(const stream& s, std::uint32_t value) const;
  // A store by the host, seen by the device's next read of the word.
  void store(std::uint32_t value);
  // "the word holds <value>", read by the host.
  probe reaches(std::uint32_t value) const;

 private:
  mapped<std::uint32_t> word_{1};
  std::uint32_t release_;
};

// One 32-bit word of managed memory (cudaMallocManaged), for the waits the driver refuses (ORDX-09).
class managed_word {
 public:
  managed_word();
  ~managed_word();
  managed_word(const managed_word&) = delete;
  managed_word& operator=(const managed_word&) = delete;
  CUdeviceptr address() const noexcept { return reinterpret_cast<CUdeviceptr>(word_); }

 private:
  std::uint32_t* word_ = nullptr;
};

// What a wait on a word showed: that its stream reached it (an event recorded just before it completed), that
// a mark behind it stayed absent while the word held it, and that the mark landed once the word released it.
struct wait_outcome {
  held_result held;
  held_result released;
};

class OrderingExceptions : public GpuTest {
 protected:
  void SetUp() override;
  unsigned sm_count() const { return static_cast<unsigned>(properties().multiProcessorCount); }

 public:
  // In a fresh stream: [event "reached"] [wait on `w` for `value` under `flags`] [mark 1]; the host stores
  // `holding` (which must not satisfy the wait) and checks the mark stays absent for kAbsenceWindow once the
  // stream reached the wait, then stores `releasing` and checks the mark lands within kPresenceDeadline.
  wait_outcome wait_then_store(wait_word& w, unsigned flags, std::uint32_t value, std::uint32_t holding,
                               std::uint32_t releasing);
};

// A programmatic dependent launch whose primary is held: how its secondary is launched (ORDX-01...04).
struct pdl_options {
  bool programmatic;  // cudaLaunchAttributeProgrammaticStreamSerialization on the secondary
  bool trigger;       // the primary's blocks let their dependents launch before they wait
  bool synchronize;   // the secondary waits for its primary (cudaGridDependencySynchronize) before it reads
};

// The pair in one stream: a primary of kPrimaryBlocks blocks that is also a latch, then its secondary, which
// marks the board before and after its wait and counts the primary's words it read that were not `kValue`.
class pdl_pair {
 public:
  static constexpr unsigned kPrimaryBlocks = 2;
  static constexpr std::uint32_t kValue = 0x0d1e5u;
  explicit pdl_pair(stream s);
  probe early() const;  // the secondary ran its code before the wait
  probe late() const;   // the secondary ran its code after the wait
  std::uint32_t mismatches() const;
  std::uint64_t late_ns() const;

  mapped<kernels::pdl_board> board{1};
  device_buffer<std::uint32_t> out{kPrimaryBlocks};
  stream s;
  latch primary;  // last: destroyed, so opened, first
};

class ProgrammaticLaunch : public OrderingExceptions {
 protected:
  void SetUp() override;  // skips below compute capability 9.0

 public:
  // Enqueues the primary (held) and then the secondary, as `o` says.
  void start(pdl_pair& p, const pdl_options& o);
  // Waits, with a deadline, for the pair once the primary was opened.
  static void finish(pdl_pair& p);
  // start(p, o), then whether the secondary's early mark stayed absent while the primary was held; the primary is
  // opened and the pair finished before it returns (mismatches() is then final).
  held_result early_absent_while_held(pdl_pair& p, const pdl_options& o);
};

// The block-level scheduling harness (sc::SchedTest) for the priority a grid gets from its launch or from a
// priority set on its stream after the stream was made (ORDX-12): grids pending behind one latch while a fill
// wave holds every SM (arrange_behind_fill), judged by their block records (SchedTest::dispatched_ahead).
class PerLaunchPriority : public SchedTest {};

// `p` stays unseen for `window` (polled): holds; seen within it: does not hold.
held_result stays_absent(const probe& p, std::chrono::milliseconds window);

// Records an event in `s`, then enqueues there a wait on `w` for `value` under `flags`: the event completes once
// `s` has reached the wait (reached_wait).
event enqueue_wait(const wait_word& w, const stream& s, std::uint32_t value, unsigned flags);
// Whether the stream of `arrival` (enqueue_wait's event) reached its wait within kPresenceDeadline.
bool reached_wait(const event& arrival);

// Waits, with a deadline, until `s` (which waited on a word now released) is idle. A stream still waiting then
// would hang every later synchronize of the device: the test fails and ends its process (end_test_process).
void finish_waiting(const stream& s);

}  // namespace sc::families
