#include "ordering.hpp"

#include <chrono>
#include <thread>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/driver.hpp"
#include "sc/fixtures/environment.hpp"
#include "sc/fixtures/host_atomic.hpp"
#include "sc/fixtures/probe.hpp"
#include "sc/kernels/launch.hpp"

namespace sc::families {

wait_word::wait_word(std::uint32_t initial, std::uint32_t release) : release_(release) {
  store_release(*word_.host(), initial);
}

wait_word::~wait_word() { store_release(*word_.host(), release_); }

CUresult wait_word::wait_in(const stream& s, std::uint32_t value, unsigned flags) const {
  return driver().cuStreamWaitValue32(s.get(), reinterpret_cast<CUdeviceptr>(word_.device()), value, flags);
}

CUresult wait_word::write_in(const stream& s, std::uint32_t value) const {
  return driver().cuStreamWriteValue32(s.get(), reinterpret_cast<CUdeviceptr>(word_.device()), value,
                                       CU_STREAM_WRITE_VALUE_DEFAULT);
}

void wait_word::store(std::uint32_t value) { store_release(*word_.host(), value); }

probe wait_word::reaches(std::uint32_t value) const {
  return probe("the word holds " + std::to_string(value),
               [this, value] { return load_acquire(*word_.host()) == value; });
}

managed_word::managed_word() {
  void* p = nullptr;
  SC_CHECK_CUDA(cudaMallocManaged(&p, sizeof(std::uint32_t)));
  word_ = static_cast<std::uint32_t*>(p);
  *word_ = 0;
}

managed_word::~managed_word() {
  if (const cudaError_t code = cudaFree(word_); code != cudaSuccess) note_teardown(code, "cudaFree(managed word)");
}

void OrderingExceptions::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFailure()) return;
  // Every arrangement checks "not yet" while a stream waits.
  SC_REQUIRE(requirement::async_launches);
}

void finish_waiting(const stream& s) {
  if (const cudaError_t code = synchronize_within(s, kWorkDeadline); code != cudaSuccess) {
    ADD_FAILURE() << "a stream waiting on a word did not finish once the word satisfied its wait (" << error_name(code)
                  << ")";
    end_test_process(
        "a stream still waits on a word its releasing value did not release: the device cannot "
        "be synchronized");
  }
}

held_result stays_absent(const probe& p, std::chrono::milliseconds window) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < window) {
    if (p.seen()) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
      return {held_outcome::does_not_hold, p.what() + " after " + std::to_string(us.count()) + " us"};
    }
    std::this_thread::yield();
  }
  return {held_outcome::holds, p.what() + ": not for " + std::to_string(window.count()) + " ms"};
}

event enqueue_wait(const wait_word& w, const stream& s, std::uint32_t value, unsigned flags) {
  event arrival = event::create(event_flags::disable_timing);
  SC_CHECK_CUDA(cudaEventRecord(arrival.get(), s.get()));
  SC_CHECK_CU(w.wait_in(s, value, flags));
  return arrival;
}

bool reached_wait(const event& arrival) {
  return wait_until(probe("the stream reached its wait", [&] { return cudaEventQuery(arrival.get()) == cudaSuccess; }),
                    kPresenceDeadline);
}

wait_outcome OrderingExceptions::wait_then_store(wait_word& w, unsigned flags, std::uint32_t value,
                                                 std::uint32_t holding, std::uint32_t releasing) {
  const stream s = make(stream_flags::non_blocking, "s");
  marks m;
  // Whatever happens below, the word ends at the wait's own value, which satisfies every condition used here
  // (EQ, GEQ whether cyclic or not, AND and NOR of a value neither 0 nor all ones), before the marks are freed
  // (their release synchronizes the device, which would otherwise wait for s forever).
  struct release_on_exit {
    wait_word& w;
    std::uint32_t value;
    ~release_on_exit() { w.store(value); }
  } release{w, value};
  const event arrival = enqueue_wait(w, s, value, flags);
  drop(m, s, 1);
  wait_outcome out{invalid_check("the stream did not reach its wait"), invalid_check("not checked")};
  if (!reached_wait(arrival)) {
    w.store(value);
    finish_waiting(s);
    return out;
  }
  w.store(holding);
  out.held = stays_absent(probe::mark(m, 1), kAbsenceWindow);
  w.store(releasing);
  const bool landed = wait_until(probe::mark(m, 1), kPresenceDeadline);
  out.released = {landed ? held_outcome::holds : held_outcome::does_not_hold,
                  landed ? "mark 1 landed once the word released the wait"
                         : "mark 1 had not landed " + std::to_string(kPresenceDeadline.count()) + " ms after"};
  w.store(value);
  finish_waiting(s);
  return out;
}

pdl_pair::pdl_pair(stream stream_) : s(std::move(stream_)) { *board.host() = kernels::pdl_board{}; }

probe pdl_pair::early() const {
  return probe("the secondary ran before its wait", [this] { return load_acquire(board.host()->early) != 0; });
}

probe pdl_pair::late() const {
  return probe("the secondary ran past its wait", [this] { return load_acquire(board.host()->late) != 0; });
}

std::uint32_t pdl_pair::mismatches() const { return load_acquire(board.host()->mismatches); }

std::uint64_t pdl_pair::late_ns() const { return load_acquire(board.host()->late_ns); }

void ProgrammaticLaunch::SetUp() {
  OrderingExceptions::SetUp();
  if (IsSkipped() || HasFailure()) return;
  if (compute_capability() < 90)
    GTEST_SKIP() << "programmatic dependent launch needs compute capability 9.0; this GPU has "
                 << compute_capability() / 10 << "." << compute_capability() % 10;
}

void ProgrammaticLaunch::start(pdl_pair& p, const pdl_options& o) {
  SC_CHECK_CUDA(cudaMemsetAsync(p.out.data(), 0, pdl_pair::kPrimaryBlocks * sizeof(std::uint32_t), p.s.get()));
  {
    const auto label = recorder().label("primary@" + p.s.name());
    p.primary.hold_by([&](kernels::latch_word* word, std::uint64_t watchdog_ns, bool banner) {
      return kernels::launch_pdl_primary(p.s.get(), word, watchdog_ns, banner, pdl_pair::kPrimaryBlocks, o.trigger,
                                         p.out.data(), pdl_pair::kValue);
    });
  }
  const auto label = recorder().label("secondary@" + p.s.name());
  SC_CHECK_CUDA(kernels::launch_pdl_secondary(p.s.get(), p.board.device(), p.out.data(), pdl_pair::kPrimaryBlocks,
                                              pdl_pair::kValue, o.programmatic, o.synchronize));
}

void ProgrammaticLaunch::finish(pdl_pair& p) { SC_CHECK_CUDA(synchronize_within(p.s, kWorkDeadline)); }

held_result ProgrammaticLaunch::early_absent_while_held(pdl_pair& p, const pdl_options& o) {
  start(p, o);
  held_window w(p.primary);
  const held_result absent = w.absent(p.early());
  w.release();
  finish(p);
  return absent;
}

}  // namespace sc::families
