// The DFLT-02..05 arrangements, written once and run through two APIs: the runtime (legacy_test.cpp) and
// the driver API (driver_api_test.cpp). A path says how a test creates streams, launches a mark and
// waits for an event; the arrangement, its expectations and its mutation (of the claim `c` the test made)
// are the same for both.
#pragma once

#include <functional>
#include <string>

#include "default_streams.hpp"
#include "sc/fixtures/event.hpp"

namespace sc::families {

struct enqueue_path {
  stream null_stream;  // the legacy stream as this API names it (cudaStreamLegacy, or handle 0)
  std::function<stream(stream_flags, const std::string&)> make;
  std::function<void(marks&, const stream&, unsigned)> drop;
  std::function<void(const stream&, const event&)> wait_event;
};

inline enqueue_path runtime_path(DefaultStreams& t) {
  return {stream::legacy(), [&t](stream_flags flags, const std::string& name) { return t.make(flags, name); },
          [&t](marks& m, const stream& s, unsigned id) { t.drop(m, s, id); },
          [](const stream& s, const event& e) { SC_CHECK_CUDA(cudaStreamWaitEvent(s.get(), e.get(), 0)); }};
}

// The DFLT-02 and DFLT-04 (legacy side) arrangement: a latch holds s1, made with `s1_flags`, then mark 1 goes
// to the legacy stream. The latch is the last member: destroyed, and opened, first.
struct legacy_mark_behind_held_s1 {
  legacy_mark_behind_held_s1(DefaultStreams& t, const enqueue_path& p, stream_flags s1_flags)
      : s1(p.make(s1_flags, "s1")) {
    t.hold(g, s1);
    p.drop(m, p.null_stream, 1);
  }
  marks m;
  stream s1;
  latch g;
};

// DFLT-02: an action in the legacy stream first waits for all earlier work in blocking streams.
inline void legacy_waits_for_earlier_blocking_work(DefaultStreams& t, const claim& c, const enqueue_path& p) {
  legacy_mark_behind_held_s1 arranged(
      t, p, c.mutate(mutation_kind::arrangement, stream_flags::blocking, stream_flags::non_blocking));
  {
    held_window w(arranged.g);
    EXPECT_TRUE(w.absent(probe::mark(arranged.m, 1))) << "legacy work ran while blocking s1 was held";
    t.recorder().host_event("latch opened");
  }
  t.drain();
  EXPECT_EQ(1u, arranged.m.ticket_of(1));
  EXPECT_GE(arranged.m.stamp_ns_of(1), arranged.g.end_ns()) << "the legacy mark landed before the latch in s1 ended";
}

// DFLT-03, SSB example k1(s); k2(0); k3(s): k1 holds blocking s1, k2 goes to the legacy stream, k3 to
// blocking s2: k2 waits for k1 (first edge) and k3 for k2 (second edge: nothing else could hold k3 back).
inline void blocking_waits_for_earlier_legacy_work(DefaultStreams& t, const claim& c, const enqueue_path& p) {
  marks m;
  const stream s1 = p.make(stream_flags::blocking, "s1");
  const stream s2 =
      p.make(c.mutate(mutation_kind::arrangement, stream_flags::blocking, stream_flags::non_blocking), "s2");
  latch k1;
  t.hold(k1, s1);
  p.drop(m, p.null_stream, 2);
  p.drop(m, s2, 3);
  {
    held_window w(k1);
    EXPECT_TRUE(w.absent(probe("k3 (mark 3 in blocking s2) landed", [&m] { return m.ticket_of(3) != 0; })));
    EXPECT_TRUE(w.absent(probe::mark(m, 2), std::chrono::milliseconds(0))) << "k2 ran before k1 ended";
  }
  t.drain();
  EXPECT_EQ(1u, m.ticket_of(2)) << "k2 (legacy) must land first";
  EXPECT_EQ(2u, m.ticket_of(3)) << "k3 (s2) must land after k2";
}

// DFLT-04, one direction: the legacy stream does not wait for a non-blocking stream.
inline void legacy_does_not_wait_for_non_blocking_work(DefaultStreams& t, const claim& c, const enqueue_path& p) {
  legacy_mark_behind_held_s1 arranged(
      t, p, c.mutate(mutation_kind::arrangement, stream_flags::non_blocking, stream_flags::blocking));
  {
    held_window w(arranged.g);
    EXPECT_TRUE(w.present(probe::mark(arranged.m, 1))) << "the legacy stream waited for a non-blocking stream";
  }
  t.drain();
}

// DFLT-04, the other direction: a non-blocking stream does not wait for legacy work.
inline void non_blocking_does_not_wait_for_legacy_work(DefaultStreams& t, const claim& c, const enqueue_path& p) {
  marks m;
  const stream s2 =
      p.make(c.mutate(mutation_kind::arrangement, stream_flags::non_blocking, stream_flags::blocking), "s2");
  latch g;
  t.hold(g, p.null_stream);
  p.drop(m, s2, 3);
  {
    held_window w(g);
    EXPECT_TRUE(w.present(probe::mark(m, 3))) << "a non-blocking stream waited for the legacy stream";
  }
  t.drain();
}

// DFLT-05: a wait on the legacy stream is a legacy action: later blocking-stream work waits for it (and
// so for busy blocking s1), non-blocking work does not.
inline void wait_on_legacy_holds_later_blocking_work_only(DefaultStreams& t, const claim& c, const enqueue_path& p) {
  marks m;
  const stream idle = p.make(stream_flags::non_blocking, "idle");
  const stream s1 = p.make(stream_flags::blocking, "s1");
  const stream s2 = p.make(stream_flags::blocking, "s2");
  const stream s3 = p.make(stream_flags::non_blocking, "s3");
  const event done = event::create(event_flags::disable_timing);
  SC_CHECK_CUDA(cudaEventRecord(done.get(), idle.get()));
  SC_CHECK_CUDA(synchronize_within(idle, kWorkDeadline));  // the event is complete: the wait is a no-op
  latch g;
  t.hold(g, s1);
  if (!c.mutated(mutation_kind::arrangement)) p.wait_event(p.null_stream, done);
  p.drop(m, s2, 2);
  p.drop(m, s3, 3);
  {
    held_window w(g);
    EXPECT_TRUE(w.present(probe::mark(m, 3))) << "non-blocking s3 must not wait";
    EXPECT_TRUE(w.absent(probe::mark(m, 2))) << "blocking s2 must wait for the legacy wait, which waits for s1";
  }
  t.drain();
  EXPECT_NE(0u, m.ticket_of(2));
}

}  // namespace sc::families
