// GCTX-07: a green context's own legacy default stream (the NULL stream while its converted context is current)
// beside the primary context's default streams, and beside a blocking stream made in the green context. A latch
// holds one place; a mark goes into another; does it land while the latch holds? Observed rows.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>

#include "green_contexts.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/latch.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/stream.hpp"

namespace {

using sc::families::current_green_context;
using sc::families::green_context;
using sc::families::GreenContexts;

using sc::families::kBesideWindow;

enum class place { green_legacy, primary_legacy, primary_per_thread, green_blocking };

struct scenario {
  place held;
  place mark;
  const char* name;
};

class GreenDefaultStream : public GreenContexts, public ::testing::WithParamInterface<scenario> {
 protected:
  // Runs `f` with the stream of `p`, the green context current where `p` belongs to it.
  void at(place p, green_context& g, CUstream blocking, const std::function<void(const sc::stream&)>& f) {
    if (p == place::primary_legacy) return f(sc::stream::view(cudaStreamLegacy, "legacy"));
    if (p == place::primary_per_thread) return f(sc::stream::view(cudaStreamPerThread, "per-thread"));
    const current_green_context in(g);
    f(p == place::green_legacy ? sc::stream::view(cudaStreamLegacy, "green legacy")
                               : sc::stream::view(blocking, "green blocking"));
  }
};

// GCTX-07 · DRV overview (observed: with the converted green context current, the NULL stream and the streams the
// runtime makes belong to it; no text says how they order against the primary context's default streams): a
// mark in one place, beside a latch holding another.
TEST_P(GreenDefaultStream, MarkBesideHeldWork) {
  const sc::claim gctx07("GCTX-07");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::own_connection_count);  // one queue would put every mark behind the latch
  const scenario row = GetParam();
  green_context green(api(), dev(), smallest_group());
  CUstream blocking = nullptr;
  ASSERT_CUDA_EQ(cudaSuccess, green.make_stream_while_current(&blocking, cudaStreamDefault));
  unsigned flags = 0;
  SC_CHECK_CUDA(cudaStreamGetFlags(blocking, &flags));
  sc::observe("green_blocking.flags", static_cast<int>(flags));  // what the runtime made it
  const place mark = gctx07.mutated(sc::mutation_kind::arrangement) ? row.held : row.mark;
  sc::latch l;
  at(row.held, green, blocking, [&](const sc::stream& s) { hold(l, s); });
  sc::marks m;
  at(mark, green, blocking, [&](const sc::stream& s) { drop(m, s, 1); });
  sc::held_window w(l);
  const std::string key = std::string("mark_lands.") + row.name;
  EXPECT_TRUE(gctx07.observed_row(key, w.present(sc::probe::mark(m, 1), kBesideWindow)));
  w.release();
  SC_CHECK_CUDA(cudaDeviceSynchronize());  // the primary context's synchronize includes its green contexts
}

std::string scenario_name(const ::testing::TestParamInfo<scenario>& instance) {
  std::string out;
  for (const char* c = instance.param.name; *c != '\0'; ++c) {
    const bool start = c == instance.param.name || c[-1] == '_' || c[-1] == '.';
    if (*c != '_' && *c != '.') out += start ? static_cast<char>(*c - 'a' + 'A') : *c;
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(
    , GreenDefaultStream,
    ::testing::Values(scenario{place::green_legacy, place::primary_legacy, "green_legacy_held.primary_legacy"},
                      scenario{place::primary_legacy, place::green_legacy, "primary_legacy_held.green_legacy"},
                      scenario{place::green_legacy, place::primary_per_thread, "green_legacy_held.primary_per_thread"},
                      scenario{place::green_legacy, place::green_blocking, "green_legacy_held.green_blocking"}),
    scenario_name);

}  // namespace
