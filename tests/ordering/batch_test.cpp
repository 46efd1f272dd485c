// ORDX-10: batch copies (cudaMemcpyBatchAsync). The batch as a whole runs in its stream's order, behind a latch;
// where its source is read depends on the source access order the copies carry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ordering.hpp"
#include "sc/fixtures/host_atomic.hpp"
#include "sc/kernels/launch.hpp"

namespace {

using sc::stream_flags;
using sc::families::OrderingExceptions;

constexpr std::uint32_t kWords = 4096;  // per copy
constexpr std::size_t kBytes = kWords * sizeof(std::uint32_t);
constexpr std::uint32_t kBefore = 0xba7c0001u;
constexpr std::uint32_t kAfter = 0xba7c0002u;

// One batch of n copies in `s`, every copy with source access order `order`.
cudaError_t batch_copy(const sc::stream& s, std::vector<void*> dsts, std::vector<const void*> srcs,
                       cudaMemcpySrcAccessOrder order) {
  std::vector<std::size_t> sizes(dsts.size(), kBytes);
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = order;
  std::size_t first = 0;
  return cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(), &attributes, &first, 1, s.get());
}

// ORDX-10 · RT cudaMemcpyBatchAsync ("The batch as a whole executes in stream order"): four device-to-host
// copies into pinned memory the host reads, enqueued behind a latch: none lands while the latch is closed, and
// all do once it opens.
TEST_F(OrderingExceptions, BatchOfCopiesRunsWholeInStreamOrder) {
  const sc::claim ordx10("ORDX-10");
  SC_REQUIRE(sc::requirement::async_launches);
  constexpr unsigned kCopies = 4;
  const sc::stream s = make(stream_flags::non_blocking, "s");
  const sc::stream free = make(stream_flags::non_blocking, "free");
  const bool unheld = ordx10.mutated(sc::mutation_kind::arrangement);
  sc::device_buffer<std::uint32_t> src(kCopies * kWords);
  sc::mapped<std::uint32_t> dst(kCopies * kWords);
  std::fill_n(dst.host(), kCopies * kWords, 0u);
  SC_CHECK_CUDA(sc::kernels::launch_fill(s.get(), src.data(), kCopies * kWords, kBefore));
  std::vector<void*> dsts;
  std::vector<const void*> srcs;
  for (unsigned c = 0; c < kCopies; ++c) {
    dsts.push_back(dst.host() + c * kWords);
    srcs.push_back(src.data() + c * kWords);
  }
  sc::latch g;
  hold(g, s);
  SC_CHECK_CUDA(batch_copy(unheld ? free : s, dsts, srcs, cudaMemcpySrcAccessOrderStream));
  sc::held_window w(g);
  EXPECT_TRUE(w.absent(sc::probe("a copy of the batch landed", [&] {
    return sc::count_set(dst.host(), kCopies * kWords) > 0;
  }))) << "the batch ran before the work ahead of it in its stream";
  w.release();
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  SC_CHECK_CUDA(sc::synchronize_within(free, sc::kWorkDeadline));
  for (std::size_t i = kCopies * kWords; i-- > 0;) ASSERT_EQ(kBefore, dst.host()[i]) << "word " << i;
}

class BatchSourceOrder : public OrderingExceptions, public ::testing::WithParamInterface<cudaMemcpySrcAccessOrder> {};

// ORDX-10 · RT cudaMemcpyBatchAsync (cudaMemcpySrcAccessOrderStream: "the source will be accessed in stream
// order"; ...DuringApiCall: "all accesses must be complete before the API call returns"): a host-to-device copy
// from pinned memory holding kBefore, behind a latch; once the call returned the host stores kAfter into the
// source, while the latch is still closed where the call returned at once. The destination tells which the copy
// read: kAfter in stream order, kBefore during the call.
TEST_P(BatchSourceOrder, HostStoreAfterTheCallTellsWhenTheSourceWasRead) {
  const sc::claim ordx10("ORDX-10");
  SC_REQUIRE(sc::requirement::async_launches);
  const bool in_stream = GetParam() == cudaMemcpySrcAccessOrderStream;
  const cudaMemcpySrcAccessOrder order =
      ordx10.mutate(sc::mutation_kind::arrangement, GetParam(),
                    in_stream ? cudaMemcpySrcAccessOrderDuringApiCall : cudaMemcpySrcAccessOrderStream);
  const sc::stream s = make(stream_flags::non_blocking, "s");
  sc::pinned_buffer<std::uint32_t> src(kWords);
  std::fill_n(src.data(), kWords, kBefore);
  sc::device_buffer<std::uint32_t> dst(kWords);
  bool stored = false;
  const auto store_after = [&] {
    std::fill_n(src.data(), kWords, kAfter);
    stored = true;
  };
  sc::latch g;
  hold(g, s);
  const sc::return_observation r = sc::call_while_held([&] { return batch_copy(s, {dst.data()}, {src.data()}, order); },
                                                       g, sc::kReturnWindow, {{}, store_after});
  sc::observe("returned_while_held", r.returned.outcome() == sc::held_outcome::holds);
  if (!stored) store_after();
  EXPECT_CUDA_EQ(cudaSuccess, r.code);
  if (in_stream) {
    EXPECT_TRUE(r.returned) << "the batch call did not return while its stream was held";
  }
  SC_CHECK_CUDA(sc::synchronize_within(s, sc::kWorkDeadline));
  std::vector<std::uint32_t> seen(kWords);
  SC_CHECK_CUDA(cudaMemcpy(seen.data(), dst.data(), kBytes, cudaMemcpyDeviceToHost));
  const std::uint32_t want = in_stream ? kAfter : kBefore;
  EXPECT_EQ(kWords, static_cast<std::size_t>(std::count(seen.begin(), seen.end(), want)))
      << "the copy did not read the source " << (in_stream ? "in stream order" : "during the call");
}

std::string order_name(const ::testing::TestParamInfo<cudaMemcpySrcAccessOrder>& instance) {
  return instance.param == cudaMemcpySrcAccessOrderStream ? "Stream" : "DuringApiCall";
}

INSTANTIATE_TEST_SUITE_P(, BatchSourceOrder,
                         ::testing::Values(cudaMemcpySrcAccessOrderStream, cudaMemcpySrcAccessOrderDuringApiCall),
                         order_name);

}  // namespace
