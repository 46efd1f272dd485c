// EVT-09, -10, -11: destroying a busy stream or a pending event, and invalid arguments by name.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>

#include "events.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/memory.hpp"

namespace {

using sc::stream_flags;
using sc::families::EventsAndWaits;

constexpr unsigned char kMemsetByte = 0xab;

// A non-blocking stream and a disable-timing event that the test destroys itself: no owner releases them.
cudaStream_t stream_to_destroy() {
  cudaStream_t raw = nullptr;
  SC_CHECK_CUDA(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
  return raw;
}
cudaEvent_t event_to_destroy() {
  cudaEvent_t raw = nullptr;
  SC_CHECK_CUDA(cudaEventCreateWithFlags(&raw, cudaEventDisableTiming));
  return raw;
}

// cudaStreamDestroy(s); with `sync_first`, cudaStreamSynchronize(s) first, whose error (if any) is returned
// instead of destroying.
cudaError_t destroy_stream(cudaStream_t s, bool sync_first) {
  if (sync_first) {
    if (const cudaError_t code = cudaStreamSynchronize(s); code != cudaSuccess) return code;
  }
  return cudaStreamDestroy(s);
}

// What a destroy made while a latch was closed showed.
struct destroy_seen {
  sc::return_observation destroyed;           // the destroy, on a helper thread
  std::optional<sc::held_result> still_held;  // mark absent right after the destroy returned; empty: it did not
};

// `destroy` on a helper thread while `g`, which holds the work, is closed (call_while_held); once it has
// returned, with the latch still closed, whether mark `id` is still absent. The latch is open on return; the
// caller drains.
destroy_seen destroy_while_held(sc::latch& g, const std::function<cudaError_t()>& destroy, const sc::marks& m,
                                unsigned id) {
  destroy_seen seen;
  sc::held_window w(g);
  sc::while_held_steps steps;
  steps.after_return = [&] { seen.still_held = w.absent(sc::probe::mark(m, id)); };
  seen.destroyed = sc::call_while_held(destroy, g, sc::kReturnWindow, steps);
  return seen;
}

// EVT-09 · RT cudaStreamDestroy; DRV cuStreamDestroy ("... resources released once the device has completed
// all work"): destroying a stream whose work is held by a latch returns while the latch is closed, the queued
// work has still not run right after, and once the latch opens it completes (a mark kernel and a memset into
// mapped memory). The destroyed handle is never used again.
TEST_F(EventsAndWaits, DestroyingABusyStreamReturnsAndItsWorkCompletes) {
  const sc::claim evt09("EVT-09");
  SC_REQUIRE(sc::requirement::unintercepted_calls);
  sc::marks m;
  sc::mapped<std::uint32_t> word(1);
  const cudaStream_t raw = stream_to_destroy();
  const sc::stream doomed = sc::stream::view(raw, "doomed");
  recorder().track(doomed);
  const bool sync_first = evt09.mutated(sc::mutation_kind::arrangement);
  sc::latch g;
  hold(g, doomed);
  drop(m, doomed, 1);
  {
    const auto label = recorder().label("memset@doomed");
    SC_CHECK_CUDA(cudaMemsetAsync(word.device(), kMemsetByte, sizeof(std::uint32_t), raw));
  }
  const destroy_seen seen = destroy_while_held(
      g, [&] { return destroy_stream(raw, sync_first); }, m, 1);
  drain();
  EXPECT_CUDA_EQ(cudaSuccess, seen.destroyed.code);
  EXPECT_TRUE(seen.destroyed.returned) << "cudaStreamDestroy waited for the stream's work";
  ASSERT_TRUE(seen.still_held.has_value()) << "the destroy did not return while the latch was closed";
  EXPECT_TRUE(*seen.still_held) << "the destroyed stream's queued mark ran before the latch opened";
  EXPECT_NE(0u, m.ticket_of(1)) << "the mark queued in the destroyed stream never ran";
  EXPECT_EQ(0xababababu, word.host()[0]) << "the memset queued in the destroyed stream never ran";
  sc::observe("destroy_took_us", static_cast<long long>(seen.destroyed.took.count()));
}

// EVT-10 · RT cudaEventDestroy ("... will complete ... asynchronously", waits already enqueued are honored): a
// latch holds A, e is recorded in A, B waits on e and drops a mark; destroying e returns while the latch is
// closed, B's mark still has not landed right after, and it lands once the latch opens.
TEST_F(EventsAndWaits, DestroyingAPendingEventKeepsItsWaits) {
  const sc::claim evt10("EVT-10");
  sc::marks m;
  const sc::stream a = make(stream_flags::non_blocking, "A");
  const sc::stream b = make(stream_flags::non_blocking, "B");
  const cudaEvent_t raw = event_to_destroy();
  const bool no_wait = evt10.mutated(sc::mutation_kind::arrangement);
  sc::latch g;
  hold(g, a);
  record(raw, a, "e");
  if (!no_wait) wait(b, raw, "e");
  drop(m, b, 1);
  const destroy_seen seen = destroy_while_held(
      g, [&] { return cudaEventDestroy(raw); }, m, 1);
  drain();
  EXPECT_CUDA_EQ(cudaSuccess, seen.destroyed.code);
  EXPECT_TRUE(seen.destroyed.returned) << "cudaEventDestroy waited for the event's captured work";
  ASSERT_TRUE(seen.still_held.has_value()) << "the destroy did not return while the latch was closed";
  EXPECT_TRUE(*seen.still_held) << "B's mark ran before the work its (destroyed) event captured";
  EXPECT_NE(0u, m.ticket_of(1));
  sc::observe("destroy_took_us", static_cast<long long>(seen.destroyed.took.count()));
}

// What creating an event with cudaEventInterprocess and timing returns (an event made after all is destroyed
// at once).
cudaError_t create_interprocess_event_with_timing() {
  cudaEvent_t ipc = nullptr;
  const cudaError_t interprocess = sc::taking_last_error(cudaEventCreateWithFlags(&ipc, cudaEventInterprocess));
  if (interprocess == cudaSuccess && ipc != nullptr) SC_CHECK_CUDA(cudaEventDestroy(ipc));
  return interprocess;
}

// EVT-11 · RT cudaStreamWaitEvent (flags 0 or cudaEventWaitExternal), cudaEventCreateWithFlags
// (cudaEventInterprocess needs cudaEventDisableTiming), null out-pointers: each refused with
// cudaErrorInvalidValue, by name, and the error is not sticky (a kernel runs afterwards).
TEST_F(EventsAndWaits, InvalidArgumentsAreRefusedByName) {
  const sc::claim evt11("EVT-11");
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::event e = sc::event::create();
  record(e, s, "e");
  const unsigned bad_flags = evt11.mutate<unsigned>(sc::mutation_kind::arrangement, 0x2u, 0u);
  const cudaError_t wait_flags = sc::taking_last_error(cudaStreamWaitEvent(s.get(), e.get(), bad_flags));
  const cudaError_t interprocess = create_interprocess_event_with_timing();
  const cudaError_t null_create = sc::taking_last_error(cudaEventCreate(nullptr));
  const cudaError_t null_create_flags =
      sc::taking_last_error(cudaEventCreateWithFlags(nullptr, cudaEventDisableTiming));
  const cudaError_t null_elapsed = sc::taking_last_error(cudaEventElapsedTime(nullptr, e.get(), e.get()));
  EXPECT_CUDA_EQ(cudaErrorInvalidValue, wait_flags) << "cudaStreamWaitEvent with flags 0x" << std::hex << bad_flags;
  EXPECT_CUDA_EQ(cudaErrorInvalidValue, interprocess) << "cudaEventInterprocess without cudaEventDisableTiming";
  EXPECT_CUDA_EQ(cudaErrorInvalidValue, null_create) << "cudaEventCreate(nullptr)";
  EXPECT_CUDA_EQ(cudaErrorInvalidValue, null_create_flags) << "cudaEventCreateWithFlags(nullptr, ...)";
  EXPECT_CUDA_EQ(cudaErrorInvalidValue, null_elapsed) << "cudaEventElapsedTime(nullptr, ...)";
  // Not sticky: work still runs.
  sc::marks m;
  drop(m, s, 1);
  EXPECT_CUDA_EQ(cudaSuccess, sc::synchronize_within(s, sc::kWorkDeadline));
  EXPECT_NE(0u, m.ticket_of(1)) << "a kernel after the refused calls did not run";
  sc::observe("wait_bad_flags", sc::error_name(wait_flags));
  sc::observe("interprocess_with_timing", sc::error_name(interprocess));
  sc::observe("create_null", sc::error_name(null_create));
  sc::observe("create_with_flags_null", sc::error_name(null_create_flags));
  sc::observe("elapsed_null", sc::error_name(null_elapsed));
}

}  // namespace
