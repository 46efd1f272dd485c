// GCTX-04: what runs beside a held partition. A grid latch fills one green context's SMs (all of its blocks
// resident, or twice as many blocks as fit, the rest queued); a mark is launched in a neighbour's stream; does it
// land while the grid is held? Observed rows, one per neighbour and fill.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <tuple>

#include "green_contexts.hpp"
#include "sc/fixtures/check.hpp"
#include "sc/fixtures/host_atomic.hpp"
#include "sc/fixtures/latch.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/fixtures/predicates.hpp"
#include "sc/fixtures/stream.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::families::green_context;
using sc::families::GreenContexts;

constexpr unsigned kWideThreads = 1024;  // a large block: two fill an sm_90 SM's thread slots
using sc::families::kBesideWindow;

enum class neighbour { other_green, same_green, primary };
enum class fill { resident, queued };

// The row's baseline key: "mark_lands.<neighbour>.<fill>".
std::string row_key(neighbour who, fill how_full) {
  const char* whos[] = {"other_green_context", "same_green_context", "primary_context"};
  return std::string("mark_lands.") + whos[static_cast<int>(who)] +
         (how_full == fill::queued ? ".queued" : ".resident");
}

class BesideHeldPartition : public GreenContexts, public ::testing::WithParamInterface<std::tuple<neighbour, fill>> {};

// GCTX-04 · DRV overview (observed: disjoint partitions do not promise concurrency, "other resources such as
// hardware connections" can couple them): with the first partition's grid held, does a mark land in another
// green context's stream, in a second stream of the same green context, in a stream of the primary context?
TEST_P(BesideHeldPartition, MarkLandsBesideTheHeldGrid) {
  const sc::claim gctx04("GCTX-04");
  SC_REQUIRE(sc::requirement::async_launches);
  SC_REQUIRE(sc::requirement::own_connection_count);  // one queue would put every neighbour behind the grid
  const auto [who, how_full] = GetParam();
  const sc::families::sm_split parts = smallest_split();
  if (parts.groups < 2) GTEST_SKIP() << "the device splits into " << parts.groups << " partition(s), not two";
  green_context held(api(), dev(), parts.group[0]);
  green_context other(api(), dev(), parts.group[1]);
  const sc::stream a = sc::stream::view(held.new_stream(), "held");
  const sc::stream primary = make(sc::stream_flags::non_blocking, "primary");
  const CUstream beside[] = {other.new_stream(), held.new_stream(), primary.get()};
  CUstream n = beside[static_cast<int>(who)];
  // Mutation (arrangement): the mark goes where the row's answer flips (into the held stream itself, or, for the
  // row that stays absent, into the primary context's stream).
  if (gctx04.mutated(sc::mutation_kind::arrangement)) n = who == neighbour::same_green ? primary.get() : a.get();
  int per_sm = 0;
  SC_CHECK_CUDA(sc::kernels::latch_grid_occupancy(kWideThreads, &per_sm));
  const unsigned fit = static_cast<unsigned>(per_sm) * parts.group[0].sm.smCount;
  const unsigned blocks = how_full == fill::queued ? 2 * fit : fit;
  sc::mapped<std::uint32_t> resident(blocks);
  std::fill_n(resident.host(), blocks, 0u);
  sc::latch l;
  l.hold_by([&](sc::kernels::latch_word* word, std::uint64_t ns, bool banner) {
    return sc::kernels::launch_latch_grid(a.get(), word, ns, banner, blocks, kWideThreads, resident.device());
  });
  ASSERT_TRUE(
      sc::wait_until(sc::probe("the partition full", [&] { return sc::count_set(resident.host(), blocks) >= fit; }),
                     sc::kPresenceDeadline));
  sc::marks m;
  drop(m, sc::stream::view(n, "beside"), 1);
  sc::held_window w(l);
  EXPECT_TRUE(gctx04.observed_row(row_key(who, how_full), w.present(sc::probe::mark(m, 1), kBesideWindow)));
  w.release();
  SC_CHECK_CUDA(sc::synchronize_within(a, sc::kWorkDeadline));
  SC_CHECK_CUDA(sc::synchronize_within(sc::stream::view(n, "beside"), sc::kWorkDeadline));
}

std::string beside_name(const ::testing::TestParamInfo<std::tuple<neighbour, fill>>& instance) {
  const char* who[] = {"OtherGreenContext", "SameGreenContext", "PrimaryContext"};
  const char* how[] = {"Resident", "Queued"};
  return std::string(who[static_cast<int>(std::get<0>(instance.param))]) +
         how[static_cast<int>(std::get<1>(instance.param))];
}

INSTANTIATE_TEST_SUITE_P(, BesideHeldPartition,
                         ::testing::Combine(::testing::Values(neighbour::other_green, neighbour::same_green,
                                                              neighbour::primary),
                                            ::testing::Values(fill::resident, fill::queued)),
                         beside_name);

}  // namespace
