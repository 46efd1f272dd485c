#include "mempool.hpp"

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/memory.hpp"
#include "sc/kernels/launch.hpp"

namespace sc::families {

cudaError_t free_in(void*& p, const stream& s) {
  const cudaError_t code = cudaFreeAsync(p, s.get());
  if (code == cudaSuccess) p = nullptr;
  return code;
}

unfreed_guard::~unfreed_guard() {
  bool freed = false;
  for (void** block : blocks_) {
    if (*block == nullptr) continue;
    note_teardown(cudaFreeAsync(*block, s_), "cudaFreeAsync (a block the test left)");
    *block = nullptr;
    freed = true;
  }
  if (freed) note_teardown(cudaStreamSynchronize(s_), "cudaStreamSynchronize (after freeing what the test left)");
}

// Zeroed and finished here, so the reader's stream (of any kind) needs no order with the zeroing.
ones_reader::ones_reader() : seen_(1) {
  SC_CHECK_CUDA(cudaMemsetAsync(seen_.data(), 0, sizeof(std::uint32_t), cudaStreamLegacy));
  SC_CHECK_CUDA(synchronize_within(stream::legacy(), kWorkDeadline));
}

void ones_reader::read(const stream& s, const std::uint32_t* block, std::uint32_t words) {
  SC_CHECK_CUDA(kernels::launch_count_mismatches(s.get(), block, words, 1, seen_.data()));
}

std::uint32_t ones_reader::count() const {
  std::uint32_t host = 0;
  SC_CHECK_CUDA(cudaMemcpy(&host, seen_.data(), sizeof host, cudaMemcpyDeviceToHost));
  return host;
}

cudaError_t allocate_and_fill(const mem_pool& pool, const stream& s, std::size_t bytes, std::uint32_t value, void*& out,
                              cudaError_t& allocated) {
  allocated = cudaMallocFromPoolAsync(&out, bytes, pool.get(), s.get());
  if (allocated != cudaSuccess) {
    clear_last_error();
    return allocated;
  }
  const auto words = static_cast<std::uint32_t>(bytes / sizeof(std::uint32_t));
  return kernels::launch_fill(s.get(), static_cast<std::uint32_t*>(out), words, value);
}

cudaError_t allocate_and_fill(const mem_pool& pool, const stream& s, std::size_t bytes, std::uint32_t value,
                              void*& out) {
  cudaError_t allocated = cudaErrorUnknown;
  return allocate_and_fill(pool, s, bytes, value, out, allocated);
}

void expect_freed_in(const stream& s, std::initializer_list<void**> blocks) {
  for (void** block : blocks) {
    if (*block != nullptr) {
      EXPECT_CUDA_EQ(cudaSuccess, free_in(*block, s));
    }
  }
  EXPECT_CUDA_EQ(cudaSuccess, synchronize_within(s, kWorkDeadline));
}

namespace {
// `g` held in `s`, for the window that opens on it.
holder& held_in(GpuTest& t, const stream& s, latch& g) {
  t.hold(g, s);
  return g;
}
}  // namespace

free_behind_a_latch::free_behind_a_latch(GpuTest& t, const stream& s, void*& held) : window_(held_in(t, s, latch_)) {
  SC_CHECK_CUDA(free_in(held, s));
}

free_behind_a_latch::free_behind_a_latch(GpuTest& t, const stream& s, void*& held, ones_reader& reader,
                                         std::uint32_t words)
    : window_(held_in(t, s, latch_)) {
  reader.read(s, static_cast<const std::uint32_t*>(held), words);
  SC_CHECK_CUDA(free_in(held, s));
}

void MemoryPools::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  int supported = 0;
  SC_CHECK_CUDA(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device()));
  observe("memory_pools_supported", supported);
  if (supported == 0) GTEST_SKIP() << "this device has no memory pools (cudaDevAttrMemoryPoolsSupported is 0)";
  const mem_pool probe = mem_pool::create(device());
  const stream s = make(stream_flags::non_blocking, "reservation_probe");
  void* p = nullptr;
  SC_CHECK_CUDA(cudaMallocFromPoolAsync(&p, kBlockBytes, probe.get(), s.get()));
  block_bytes_ = probe.bytes(cudaMemPoolAttrReservedMemCurrent);
  SC_CHECK_CUDA(cudaFreeAsync(p, s.get()));
  SC_CHECK_CUDA(cudaStreamSynchronize(s.get()));
  observe("pool_reservation_bytes", static_cast<long long>(block_bytes_));
  if (block_bytes_ < kBlockBytes || block_bytes_ > (std::size_t{1} << 32))
    FAIL() << "a fresh pool reserved " << block_bytes_ << " bytes for one allocation of " << kBlockBytes;
}

mem_pool MemoryPools::keeping_pool() const {
  mem_pool pool = mem_pool::create(device());
  pool.set_bytes(cudaMemPoolAttrReleaseThreshold, UINT64_MAX);
  return pool;
}

mem_pool MemoryPools::one_block_pool(bool follow_event_dependencies, bool allow_opportunistic,
                                     bool allow_internal_dependencies) const {
  mem_pool pool = mem_pool::create(device(), block_bytes_);
  pool.set_reuse(follow_event_dependencies, allow_opportunistic, allow_internal_dependencies);
  pool.set_bytes(cudaMemPoolAttrReleaseThreshold, UINT64_MAX);
  return pool;
}

std::uint32_t* MemoryPools::filled_block(const mem_pool& pool, const stream& s) const {
  void* p = nullptr;
  SC_CHECK_CUDA(cudaMallocFromPoolAsync(&p, block_bytes_, pool.get(), s.get()));
  auto* words = static_cast<std::uint32_t*>(p);
  SC_CHECK_CUDA(kernels::launch_fill(s.get(), words, block_words(), 1));
  SC_CHECK_CUDA(synchronize_within(s, kWorkDeadline));
  return words;
}

std::uint32_t MemoryPools::mismatches_after(const std::uint32_t* data, std::uint32_t n, std::uint32_t expected,
                                            const stream& s) {
  device_buffer<std::uint32_t> count(1);
  SC_CHECK_CUDA(cudaMemsetAsync(count.data(), 0, sizeof(std::uint32_t), s.get()));
  SC_CHECK_CUDA(kernels::launch_count_mismatches(s.get(), data, n, expected, count.data()));
  std::uint32_t host = 0;
  SC_CHECK_CUDA(cudaMemcpyAsync(&host, count.data(), sizeof host, cudaMemcpyDeviceToHost, s.get()));
  SC_CHECK_CUDA(synchronize_within(s, kWorkDeadline));
  return host;
}

}  // namespace sc::families
