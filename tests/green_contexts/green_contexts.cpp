#include "green_contexts.hpp"

#include <stdexcept>

#include "sc/fixtures/check.hpp"
#include "sc/fixtures/environment.hpp"
#include "sc/fixtures/observe.hpp"

namespace sc::families {

green_context_access open_green_contexts(int device, const std::string& device_name) {
  green_context_access out;
  // Under MPS a partition may get more SMs than it was given (the driver's overview); a MIG instance's SMs are
  // the instance's, to be judged against a baseline of its own.
  if (const std::string why = unmet(requirement::separate_contexts); !why.empty()) {
    out.unusable = why;
    return out;
  }
  const device_sharing sharing = probe_device_sharing(device, device_name);
  if (sharing.mig) {
    out.unusable = "a MIG instance (" + sharing.mig_evidence + "): its SMs are not the device's";
    return out;
  }
  std::string missing;
  const green_context_api* api = green_contexts(missing);
  if (api == nullptr) {
    out.unusable = "the driver has no green contexts (" + missing + " not found)";
    return out;
  }
  SC_CHECK_CU(api->cuDeviceGet(&out.dev, device));
  out.api = api;
  return out;
}

CUdevResource device_sm_resource(const green_context_api& g, CUdevice dev) {
  CUdevResource all{};
  SC_CHECK_CU(g.cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  return all;
}

sm_split split_sms(const green_context_api& g, const CUdevResource& input, unsigned min_count, unsigned flags,
                   bool dry) {
  sm_split out;
  out.groups = input.sm.smCount;
  out.group.resize(out.groups);
  out.code = g.cuDevSmResourceSplitByCount(dry ? nullptr : out.group.data(), &out.groups, &input,
                                           dry ? nullptr : &out.remaining, flags, min_count);
  out.group.resize(out.code == CUDA_SUCCESS && !dry ? out.groups : 0);
  return out;
}

void GreenContexts::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFailure()) return;
  const green_context_access access = open_green_contexts(device(), properties().name);
  if (access.api == nullptr) GTEST_SKIP() << access.unusable;
  api_ = access.api;
  dev_ = access.dev;
}

CUdevResource GreenContexts::device_sms() const { return device_sm_resource(*api_, dev_); }

sm_split GreenContexts::split(const CUdevResource& input, unsigned min_count, unsigned flags, bool dry) const {
  return split_sms(*api_, input, min_count, flags, dry);
}

sm_split GreenContexts::smallest_split() const {
  const CUdevResource all = device_sms();
  const sm_split s = split(all, all.sm.minSmPartitionSize, 0, false);
  SC_CHECK_CU(s.code);
  if (s.group.empty()) throw std::runtime_error("cuDevSmResourceSplitByCount made no group");
  return s;
}

CUdevResource GreenContexts::smallest_group() const { return smallest_split().group.front(); }

std::set<unsigned> distinct_sms(const mapped<kernels::block_record>& records, unsigned blocks) {
  std::set<unsigned> sms;
  for (unsigned b = 0; b < blocks; ++b) {
    sms.insert(records.host()[b].sm_begin);
    sms.insert(records.host()[b].sm_end);
  }
  return sms;
}

stream GreenContexts::stream_of(green_context& g, bool in_primary) {
  if (!in_primary) return stream::view(g.new_stream(), "green");
  primary_.emplace(make(stream_flags::non_blocking, "primary"));
  return stream::view(primary_->get(), "primary");
}

green_context::green_context(const green_context_api& g, CUdevice dev, const CUdevResource& group) : g_(g) {
  CUdevResourceDesc desc{};
  CUdevResource copy = group;
  SC_CHECK_CU(g_.cuDevResourceGenerateDesc(&desc, &copy, 1));
  SC_CHECK_CU(g_.cuGreenCtxCreate(&green_, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
}

green_context::~green_context() {
  for (CUstream s : streams_) note_teardown(driver().cuStreamDestroy(s), "cuStreamDestroy (green)");
  note_teardown(g_.cuGreenCtxDestroy(green_), "cuGreenCtxDestroy");
}

CUresult green_context::make_stream(unsigned flags, int priority, CUstream* made) {
  *made = nullptr;
  const CUresult code = g_.cuGreenCtxStreamCreate(made, green_, flags, priority);
  if (code == CUDA_SUCCESS) streams_.push_back(*made);
  return code;
}

CUstream green_context::new_stream() {
  CUstream made = nullptr;
  SC_CHECK_CU(make_stream(CU_STREAM_NON_BLOCKING, 0, &made));
  return made;
}

cudaError_t green_context::make_stream_while_current(CUstream* made, unsigned flags) {
  *made = nullptr;
  cudaError_t code = cudaSuccess;
  {
    const current_green_context in(*this);
    code = cudaStreamCreateWithFlags(made, flags);
  }
  if (code == cudaSuccess) streams_.push_back(*made);
  return code;
}

current_green_context::current_green_context(const green_context& g) : api_(g.api()) {
  CUcontext converted = nullptr;
  SC_CHECK_CU(api_.cuCtxFromGreenCtx(&converted, g.get()));
  SC_CHECK_CU(api_.cuCtxPushCurrent(converted));
}

current_green_context::~current_green_context() {
  CUcontext popped = nullptr;
  note_teardown(api_.cuCtxPopCurrent(&popped), "cuCtxPopCurrent (green)");
}

namespace {
// Adds the SMs the written records of `r` began and ended on to `into`.
void add_sms(const block_records& r, std::set<std::uint32_t>& into) {
  for (const kernels::block_record& b : r) {
    if (b.t1_ns == 0) continue;
    into.insert(b.sm_begin);
    into.insert(b.sm_end);
  }
}
}  // namespace

void PartitionSched::SetUp() {
  SchedTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  const green_context_access access = open_green_contexts(device(), properties().name);
  if (access.api == nullptr) GTEST_SKIP() << access.unusable;
  // The smallest partition the driver makes: the fewest SMs to fill, and the rest of the device stays outside.
  const CUdevResource all = device_sm_resource(*access.api, access.dev);
  const sm_split parts = split_sms(*access.api, all, all.sm.minSmPartitionSize, 0, false);
  if (parts.code != CUDA_SUCCESS || parts.group.empty())
    GTEST_SKIP() << "the device's " << all.sm.smCount << " SMs make no partition of the minimum size, "
                 << all.sm.minSmPartitionSize << " (cuDevSmResourceSplitByCount: " << error_name(parts.code) << ")";
  green_.emplace(*access.api, access.dev, parts.group.front());
  observe("partition.device_sms", static_cast<int>(all.sm.smCount));
  cover_sms(parts.group.front().sm.smCount);
}

void PartitionSched::TearDown() {
  if (green_) {
    // A test that ended early may leave grids in the green context's streams: they end before the streams go.
    // An error here is the base teardown's to report (its own synchronize sees it again).
    (void)cudaDeviceSynchronize();
    green_.reset();
  }
  SchedTest::TearDown();
}

stream PartitionSched::arrangement_stream(const std::string& name, int priority) {
  CUstream made = nullptr;
  SC_CHECK_CU(green_->make_stream(CU_STREAM_NON_BLOCKING, priority, &made));
  stream s = stream::view(made, name);  // the green context destroys its streams
  // Named in the timeline where CUPTI gives the green stream an ID; where it does not, the lane keeps CUPTI's
  // name and the run goes on (the verdict reads block records, not the timeline).
  try {
    recorder().track(s);
  } catch (const std::runtime_error& e) {
    observe("timeline.untracked." + name, e.what());
  }
  return s;
}

std::vector<chart_partition> PartitionSched::chart_partitions(const std::vector<residency_input>& grids) const {
  std::set<std::uint32_t> seen;
  for (const residency_input& g : grids) add_sms(*g.records, seen);
  return {{"green context (" + std::to_string(sms()) + " SMs)", {seen.begin(), seen.end()}}};
}

::testing::AssertionResult PartitionSched::on_the_partition(const fill_arrangement& built) const {
  std::set<std::uint32_t> seen;
  add_sms(built.fill->host, seen);
  for (const sched_grid* g : built.pending) add_sms(g->host, seen);
  observe("partition.distinct_sms_used", static_cast<int>(seen.size()));
  const std::string what = std::to_string(built.pending.size() + 1) + " grids began and ended on " +
                           std::to_string(seen.size()) + " distinct SMs; the partition has " + std::to_string(sms());
  if (seen.size() <= sms()) return ::testing::AssertionSuccess() << what;
  return ::testing::AssertionFailure() << what << ": blocks ran outside it";
}

}  // namespace sc::families
