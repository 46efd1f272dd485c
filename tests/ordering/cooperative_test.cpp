// ORDX-11: cooperative grids. A grid latch of one block per SM takes a block slot on the SMs; beside it, a grid
// as large as co-residency allows on an idle GPU is launched in another stream, cooperatively or not. Each
// block marks itself resident; the host counts them while the first grid is held.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "ordering.hpp"
#include "sc/fixtures/host_atomic.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::OrderingExceptions;

constexpr unsigned kCoopThreads = 1024;  // a large block, so that few fit on an SM: the sizes stay small

// How many blocks of kCoopThreads fit on the whole idle GPU, for the grid latch kernel (the occupancy API).
unsigned co_resident_blocks(unsigned sms) {
  int per_sm = 0;
  SC_CHECK_CUDA(sc::kernels::latch_grid_occupancy(kCoopThreads, &per_sm));
  return static_cast<unsigned>(per_sm) * sms;
}

// A grid of `blocks` blocks in stream b, beside a held grid latch of one block per SM in stream a: whether any
// of its blocks became resident while a was held (polled for the absence window), and whether all did once a
// was opened.
struct beside_held_grid {
  sc::held_result started_while_held{sc::held_outcome::invalid, "not measured"};
  bool all_resident_after = false;
};

beside_held_grid grid_beside_held_grid(OrderingExceptions& t, unsigned sms, bool cooperative) {
  const unsigned blocks = co_resident_blocks(sms);
  sc::mapped<std::uint32_t> held(sms);
  sc::mapped<std::uint32_t> resident(blocks);
  std::fill_n(held.host(), sms, 0u);
  std::fill_n(resident.host(), blocks, 0u);
  const sc::stream a = t.make(stream_flags::non_blocking, "a");
  const sc::stream b = t.make(stream_flags::non_blocking, "b");
  sc::latch second;
  sc::latch first;
  first.hold_by([&](sc::kernels::latch_word* word, std::uint64_t ns, bool banner) {
    return sc::kernels::launch_latch_grid(a.get(), word, ns, banner, sms, kCoopThreads, held.device());
  });
  EXPECT_TRUE(sc::wait_until(
      sc::probe("every block of the first grid resident", [&] { return sc::count_set(held.host(), sms) == sms; }),
      sc::kPresenceDeadline));
  second.hold_by([&](sc::kernels::latch_word* word, std::uint64_t ns, bool banner) {
    return cooperative
               ? sc::kernels::launch_latch_grid_cooperative(b.get(), word, ns, banner, blocks, kCoopThreads,
                                                            resident.device())
               : sc::kernels::launch_latch_grid(b.get(), word, ns, banner, blocks, kCoopThreads, resident.device());
  });
  beside_held_grid out;
  sc::held_window w(first);
  out.started_while_held = w.present(
      sc::probe("a block of the second grid resident", [&] { return sc::count_set(resident.host(), blocks) > 0; }),
      sc::kAbsenceWindow);
  w.release();
  out.all_resident_after = sc::wait_until(sc::probe("every block of the second grid resident",
                                                    [&] { return sc::count_set(resident.host(), blocks) == blocks; }),
                                          sc::kPresenceDeadline);
  second.open();
  SC_CHECK_CUDA(sc::synchronize_within(b, sc::kWorkDeadline));
  return out;
}

// ORDX-11 · RT cudaLaunchCooperativeKernel (its blocks are guaranteed to be resident together: "The total number
// of blocks launched can't exceed the maximum number of blocks per multiprocessor ... times the number of
// multiprocessors"): beside resident work that leaves too few block slots, a cooperative grid as large as the
// idle GPU allows starts none of its blocks, and all of them once the other work ends.
TEST_F(OrderingExceptions, CooperativeGridStartsNoBlockUntilAllFit) {
  const sc::claim ordx11("ORDX-11");
  SC_REQUIRE(sc::requirement::async_launches);
  if (properties().cooperativeLaunch == 0) GTEST_SKIP() << "the device does not support cooperative launches";
  const bool ordinary = ordx11.mutated(sc::mutation_kind::arrangement);
  const beside_held_grid seen = grid_beside_held_grid(*this, sm_count(), !ordinary);
  EXPECT_TRUE(sc::does_not_hold(seen.started_while_held)) << "a cooperative grid started some of its blocks";
  EXPECT_TRUE(seen.all_resident_after);
}

// ORDX-11 (the control): the same grid launched ordinarily starts the blocks that fit beside the held work.
TEST_F(OrderingExceptions, OrdinaryGridOfTheSameSizeStartsPartially) {
  const sc::claim ordx11("ORDX-11");
  SC_REQUIRE(sc::requirement::async_launches);
  if (properties().cooperativeLaunch == 0) GTEST_SKIP() << "the device does not support cooperative launches";
  const bool cooperative = ordx11.mutated(sc::mutation_kind::arrangement);
  const beside_held_grid seen = grid_beside_held_grid(*this, sm_count(), cooperative);
  EXPECT_TRUE(seen.started_while_held) << "an ordinary grid started none of its blocks beside the held work";
  EXPECT_TRUE(seen.all_resident_after);
}

// ORDX-11 · RT cudaLaunchCooperativeKernel (cudaErrorCooperativeLaunchTooLarge: "the number of blocks launched
// per grid for a kernel that was launched via ... cudaLaunchCooperativeKernel exceeds the maximum number of
// blocks as allowed by cudaOccupancyMaxActiveBlocksPerMultiprocessor ... times the number of multiprocessors"):
// one block more than co-residency allows is refused by that name.
TEST_F(OrderingExceptions, CooperativeGridLargerThanCoResidencyIsRefused) {
  const sc::claim ordx11("ORDX-11");
  if (properties().cooperativeLaunch == 0) GTEST_SKIP() << "the device does not support cooperative launches";
  const unsigned blocks = co_resident_blocks(sm_count()) + ordx11.mutate(sc::mutation_kind::arrangement, 1u, 0u);
  sc::mapped<std::uint32_t> resident(blocks);
  sc::mapped<sc::kernels::latch_word> opened(1);  // open before the launch: a grid that is taken runs through
  *opened.host() = sc::kernels::latch_word{};
  opened.host()->open = 1;
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const cudaError_t code = sc::kernels::launch_latch_grid_cooperative(s.get(), opened.device(), 1000000000ull, false,
                                                                      blocks, kCoopThreads, resident.device());
  sc::clear_last_error();
  EXPECT_CUDA_EQ(cudaErrorCooperativeLaunchTooLarge, code);
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
}

}  // namespace
