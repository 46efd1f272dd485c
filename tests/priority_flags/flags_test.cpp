// PRIO-08..10: creation flags read back, bad flags rejected, null out-pointers answered with an error.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "priority_flags.hpp"
#include "sc/fixtures/child.hpp"
#include "sc/fixtures/stream.hpp"

namespace {

using sc::stream;
using sc::stream_flags;
using PriorityFlags = sc::families::PriorityFlags;

// A value no API returns as a stream: if it is still there after a failed create, nothing was created.
cudaStream_t sentinel_stream() { return reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5c5c}); }

// PRIO-08 · RT cudaStreamGetFlags, cudaStreamCreateWithFlags: the creation flags read back, also for
// streams made with a priority, through both APIs.
TEST_F(PriorityFlags, GetFlagsReturnsTheCreationFlags) {
  const sc::claim prio08("PRIO-08");
  struct made {
    stream s;
    unsigned expected;
  };
  const stream_flags non_blocking =
      prio08.mutate(sc::mutation_kind::arrangement, stream_flags::non_blocking, stream_flags::blocking);
  std::vector<made> streams;
  streams.push_back({stream::create_default("cudaStreamCreate"), 0u});
  streams.push_back({stream::create(stream_flags::blocking, 0, "WithPriority(blocking, 0)"), 0u});
  streams.push_back({stream::create(non_blocking, 0, "WithPriority(non_blocking, 0)"), 1u});
  streams.push_back({stream::create(non_blocking, greatest_, "WithPriority(non_blocking, greatest)"), 1u});
  for (const unsigned flags : {0u, 1u}) {
    streams.push_back({runtime_stream_with_flags(flags), flags});
    streams.push_back({driver_stream_with_flags(flags), flags});
  }
  for (const made& m : streams) {
    const auto seen = flags_of(m.s.get());
    EXPECT_EQ(m.expected, seen.runtime) << m.s.name();
    EXPECT_EQ(m.expected, seen.driver) << m.s.name();
  }
}

// PRIO-09 · RT cudaStreamCreateWithFlags (valid flags, error list): unknown flag bits are rejected with
// cudaErrorInvalidValue and no stream is created; the same through the driver API.
TEST_F(PriorityFlags, UnknownFlagBitsAreRejected) {
  const sc::claim prio09("PRIO-09");
  const unsigned bad = prio09.mutate(sc::mutation_kind::arrangement, 0x80u, 0x1u);
  cudaStream_t with_flags = sentinel_stream();
  cudaStream_t with_priority = sentinel_stream();
  CUstream driver = sentinel_stream();
  EXPECT_CUDA_EQ(cudaErrorInvalidValue, cudaStreamCreateWithFlags(&with_flags, bad));
  EXPECT_CUDA_EQ(cudaErrorInvalidValue, cudaStreamCreateWithPriority(&with_priority, bad, 0));
  EXPECT_CU_EQ(CUDA_ERROR_INVALID_VALUE, cu().cuStreamCreate(&driver, bad));
  for (cudaStream_t* out : {&with_flags, &with_priority, &driver}) {
    // A handle that came back anyway is a created stream: destroy it, and fail only if it is real.
    if (*out != sentinel_stream() && *out != nullptr) {
      const stream leaked = stream::adopt(*out, "created despite bad flags");
      ADD_FAILURE() << "a stream was created for flags 0x" << std::hex << bad;
    }
  }
  sc::clear_last_error();
}

// Child process body for PRIO-10: one line per call, written as soon as the call returns (so a child that
// stops shows which call it did not come back from); exit(0) is reached only if no call crashed.
[[noreturn]] void report_null_out_pointer_codes(const sc::claim& prio10, const sc::child_channel& channel) {
  const stream s = stream::create(stream_flags::non_blocking);
  channel.write("cudaStreamCreate", sc::error_name(cudaStreamCreate(nullptr)));
  channel.write("cudaStreamCreateWithFlags", sc::error_name(cudaStreamCreateWithFlags(nullptr, cudaStreamNonBlocking)));
  channel.write("cudaStreamCreateWithPriority", sc::error_name(cudaStreamCreateWithPriority(nullptr, 0, 0)));
  channel.write("cudaStreamGetPriority", sc::error_name(cudaStreamGetPriority(s.get(), nullptr)));
  channel.write("cudaStreamGetFlags", sc::error_name(cudaStreamGetFlags(s.get(), nullptr)));
  if (prio10.mutated(sc::mutation_kind::arrangement)) std::raise(SIGSEGV);  // the crash this test must catch
  std::exit(0);
}

// PRIO-10 · hip-tests _NegTst (observed): null out-pointers to the create and get functions give an
// error code, not a crash. Run in a child process, because a crash there must not end this one.
TEST_F(PriorityFlags, NullOutPointersReturnAnErrorCode) {
  const sc::claim prio10("PRIO-10");
  SC_REQUIRE(sc::requirement::death_test_children);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The mutation acts in the child (it crashes); asked here too, so that this test's record shows it.
  (void)prio10.mutated(sc::mutation_kind::arrangement);
  const sc::child_channel channel("PRIO10");
  EXPECT_EXIT(report_null_out_pointer_codes(prio10, channel), ::testing::ExitedWithCode(0), "");
  const auto lines = channel.read();
  for (const auto& [call, code] : lines) {
    sc::observe("rc." + call, code);
    EXPECT_TRUE(prio10.matches_baseline(call, code));
  }
  EXPECT_EQ(5u, lines.size()) << "the child reported " << lines.size() << " of 5 calls";
}

}  // namespace
