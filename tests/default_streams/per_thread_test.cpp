// DFLT-06..09: the per-thread default stream. This file and stream_zero.cu are built three ways (plan:
// README.md): in the legacy build, with -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 and with nvcc
// --default-stream=per-thread. What stream 0 means is stream_zero.cu's: its launches without a stream and its
// stream-0 id follow the build, and this file names every other stream by its handle (nvcc's flag does not
// reach it, as it is host code).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "default_streams.hpp"
#include "launches.hpp"
#include "sc/fixtures/thread_team.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using DefaultStreams = sc::families::DefaultStreams;
namespace stream_zero = sc::families::stream_zero;

class PerThreadStreams : public DefaultStreams {
 protected:
  void SetUp() override {
    DefaultStreams::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // stream_zero.cu's kernels: loaded now, before any latch, like the library's.
    SC_CHECK_CUDA(stream_zero::load());
    sc::observe("build_variant", SC_BUILD_VARIANT);
    sc::observe("per_thread_build", stream_zero::per_thread());
  }

  // A latch holds `held`, then mark `id` goes to `later`: whether the mark stays absent while the latch is
  // closed. The latch is open and the device drained on return.
  sc::held_result absent_behind_held_stream(const sc::stream& held, const sc::stream& later, unsigned id) {
    sc::marks m;
    sc::latch g;
    hold(g, held);
    drop(m, later, id);
    sc::held_window w(g);
    const sc::held_result absent = w.absent(sc::probe::mark(m, id));
    w.release();
    drain();
    return absent;
  }

  // Mark `id` launched with <<<>>> and no stream, labelled "mark<id>@<<<>>>"; with `other_path` through the
  // other build mode's path instead: the legacy-mode library's stream 0 in per-thread builds,
  // cudaStreamPerThread in the legacy build.
  void drop_without_a_stream(sc::marks& m, unsigned id, bool other_path) {
    const auto label = recorder().label("mark" + std::to_string(id) + "@<<<>>>");
    if (other_path && stream_zero::per_thread())
      drop(m, sc::stream::null(), id);
    else if (other_path)
      drop(m, per_thread_, id);
    else
      m.drop_by(id, stream_zero::launch_mark);
  }
};

// DFLT-08's threads: thread i selects the device, holds latch i through `launch` (its error kept as code(i)),
// and stays alive, its default stream too, until end().
class threads_holding_latches {
 public:
  template <class Launch>
  threads_holding_latches(sc::families::latch_set& latches, int device, Launch launch)
      : codes_(latches.size(), cudaSuccess) {
    team_.start(latches.size(), [this, &latches, device, launch](unsigned i) {
      codes_[i] = cudaSetDevice(device);
      try {
        if (codes_[i] == cudaSuccess) latches[i].hold_by(launch);
      } catch (const sc::cuda_error& e) {
        codes_[i] = e.code();
      }
      team_.update([this] { ++launched_; });
      team_.wait_until([] { return false; });  // alive (its default stream too) until the team ends
    });
  }
  // Waits (up to kPresenceDeadline) until every thread has made its launch.
  void wait_launched() {
    team_.wait_until([this] { return launched_ == codes_.size(); }, sc::kPresenceDeadline);
  }
  void end() { team_.end(); }
  cudaError_t code(unsigned i) const { return codes_[i]; }

 private:
  std::vector<cudaError_t> codes_;
  std::size_t launched_ = 0;  // under the team's lock
  sc::thread_team team_;      // last: its threads use every member above
};

// DFLT-06 · SSB; PG 2.3.6: the per-thread default stream does not synchronize with other (blocking)
// streams; the explicit cudaStreamPerThread handle behaves so in every build mode.
TEST_F(PerThreadStreams, PerThreadStreamDoesNotWaitForBlockingStreams) {
  const sc::claim dflt06("DFLT-06");
  SC_REQUIRE(sc::requirement::async_launches);
  sc::marks m;
  const sc::stream s1 = make(stream_flags::blocking, "s1");
  const sc::stream s2 = make(stream_flags::blocking, "s2");
  const sc::stream& target = dflt06.mutated(sc::mutation_kind::arrangement) ? legacy_ : per_thread_;
  sc::latch g;
  hold(g, s1);
  drop(m, target, 1);
  drop(m, s2, 2);  // a blocking stream after per-thread work: no implicit wait either
  ASSERT_TRUE(g.wait_started());
  EXPECT_TRUE(sc::present_while_held(m, 1, g)) << "per-thread stream work waited for blocking s1";
  EXPECT_TRUE(sc::present_while_held(m, 2, g)) << "blocking s2 after per-thread work waited";
}

// DFLT-07 · SSB: the per-thread default stream is not non-blocking: it synchronizes with the legacy
// stream, in both directions.
TEST_F(PerThreadStreams, PerThreadStreamSynchronizesWithTheLegacyStream) {
  const sc::claim dflt07("DFLT-07");
  SC_REQUIRE(sc::requirement::async_launches);
  const sc::stream nb = make(stream_flags::non_blocking, "nb");
  const sc::stream& subject = dflt07.mutated(sc::mutation_kind::arrangement) ? nb : per_thread_;
  EXPECT_TRUE(absent_behind_held_stream(legacy_, subject, 1)) << "per-thread work did not wait for earlier legacy work";
  EXPECT_TRUE(absent_behind_held_stream(subject, legacy_, 2)) << "legacy work did not wait for earlier per-thread work";
}

// DFLT-08 · SSB; PG 2.3.6.2: the per-thread default streams of two host threads are distinct
// (cudaStreamGetId differs) and independent (one's latch does not hold the other's work).
TEST_F(PerThreadStreams, PerThreadStreamsOfTwoThreadsAreDistinctAndIndependent) {
  const sc::claim dflt08("DFLT-08");
  SC_REQUIRE(sc::requirement::async_launches);
  // Under memcheck (H100) thread B's launch waited for thread A's latch, so B never got to drop its mark.
  SC_REQUIRE(sc::requirement::unintercepted_calls);
  sc::marks m;
  sc::latch g;
  unsigned long long id_a = 0;
  unsigned long long id_b = 0;
  SC_CHECK_CUDA(cudaStreamGetId(cudaStreamPerThread, &id_a));
  hold(g, per_thread_);  // this thread's per-thread stream
  ASSERT_TRUE(g.wait_started());
  cudaError_t in_thread = cudaSuccess;
  const bool same_thread = dflt08.mutated(sc::mutation_kind::arrangement);
  std::thread b([&] {
    in_thread = cudaSetDevice(device());
    if (in_thread == cudaSuccess) in_thread = cudaStreamGetId(cudaStreamPerThread, &id_b);
    if (in_thread == cudaSuccess && !same_thread) m.drop(sc::stream::per_thread(), 1);
  });
  if (same_thread) m.drop(per_thread_, 1);
  b.join();
  EXPECT_CUDA_EQ(cudaSuccess, in_thread);
  EXPECT_NE(id_a, id_b) << "two host threads share one per-thread stream id";
  EXPECT_TRUE(sc::present_while_held(m, 1, g)) << "thread B's per-thread work waited for thread A's latch";
  sc::observe("id.thread_a", id_a);
  sc::observe("id.thread_b", id_b);
}

// DFLT-08 · PG 2.3.6.2 (the classic example): the default streams of 8 host threads run concurrently.
// Each thread launches a latch without a stream; all eight run at once while none is open. In the legacy
// build stream 0 is the one legacy stream, so the same code must NOT get there (negative control).
TEST_F(PerThreadStreams, DefaultStreamsOfEightThreadsRunConcurrently) {
  const sc::claim dflt08("DFLT-08");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE_CONCURRENT_KERNELS();
  constexpr unsigned kThreads = 8;
  sc::families::latch_set latches(kThreads);
  // Mutation (arrangement): each thread launches through the other build mode's path: the legacy-mode
  // library's stream 0 (the legacy stream) in per-thread builds, cudaStreamPerThread in the legacy build.
  const bool other_path = dflt08.mutated(sc::mutation_kind::arrangement);
  const bool per_thread = stream_zero::per_thread();
  const auto launch = [other_path, per_thread](sc::kernels::latch_word* w, std::uint64_t ns, bool banner) {
    if (!other_path) return stream_zero::launch_latch(w, ns, banner);
    return sc::kernels::launch_latch(per_thread ? nullptr : cudaStreamPerThread, w, ns, banner);
  };
  threads_holding_latches threads(latches, device(), launch);
  threads.wait_launched();
  // Judged against latch 0: in the legacy build the eight latches queue in one stream, and latch 0 may be
  // pending behind another; a pending latch is closed all the same.
  const auto all_started = [&] { return latches.all_started(); };
  const sc::held_result together = per_thread ? sc::present_while_held("all 8 latches running", all_started, latches[0])
                                              : sc::absent_while_held("all 8 latches running", all_started, latches[0]);
  const int running = static_cast<int>(latches.started());
  latches.open_all();
  SC_CHECK_CUDA(cudaDeviceSynchronize());
  threads.end();
  for (unsigned i = 0; i < kThreads; ++i) EXPECT_CUDA_EQ(cudaSuccess, threads.code(i)) << "thread " << i;
  EXPECT_TRUE(together) << (per_thread ? "per-thread build" : "legacy build (negative control)");
  for (unsigned i = 0; i < kThreads; ++i) EXPECT_FALSE(latches[i].timed_out()) << "a latch's watchdog fired";
  sc::observe("latches_running_together", running);
}

// DFLT-09 · SSB; PG 2.3.6.2: the build mode decides what stream 0 and a launch without a stream mean,
// per translation unit. Latch blocking s1; a mark launched without a stream (in stream_zero.cu) waits for it
// in the legacy build (legacy stream) and does not in per-thread builds. The library's launcher, compiled in
// legacy mode, still sends handle 0 to the legacy stream in every build: each unit keeps its own mode.
TEST_F(PerThreadStreams, LaunchWithoutAStreamFollowsTheBuildMode) {
  const sc::claim dflt09("DFLT-09");
  SC_REQUIRE(sc::requirement::async_launches);
  sc::marks m;
  const sc::stream s1 = make(stream_flags::blocking, "s1");
  sc::latch g;
  hold(g, s1);
  drop_without_a_stream(m, 1, dflt09.mutated(sc::mutation_kind::arrangement));
  drop(m, sc::stream::null(), 2);  // through the legacy-mode library: always the legacy stream
  ASSERT_TRUE(g.wait_started());
  const bool per_thread = stream_zero::per_thread();
  if (per_thread)
    EXPECT_TRUE(sc::present_while_held(m, 1, g)) << "<<<>>> without a stream went to the legacy stream";
  else
    EXPECT_TRUE(sc::absent_while_held(m, 1, g)) << "<<<>>> without a stream did not go to the legacy stream";
  EXPECT_TRUE(sc::absent_while_held(m, 2, g)) << "the legacy-mode library's handle 0 did not mean the legacy stream";
  g.open();
  drain();
  stream_zero::ids ids;
  SC_CHECK_CUDA(stream_zero::get_ids(ids));
  EXPECT_EQ(per_thread ? ids.per_thread : ids.legacy, ids.zero) << "stream 0's id in this translation unit";
  sc::observe("id.stream0", ids.zero);
  sc::observe("id.legacy", ids.legacy);
  sc::observe("id.per_thread", ids.per_thread);
}

}  // namespace
