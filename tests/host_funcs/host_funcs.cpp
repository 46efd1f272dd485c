#include "host_funcs.hpp"

#include "sc/fixtures/gpu_test.hpp"
#include "sc/fixtures/trace.hpp"

namespace sc::families {
namespace {

std::uint64_t cupti_now() { return trace::state().enabled ? trace::now_ns() : 0; }

// What a record's host function was given: the record and the fixture's ticket counter.
struct host_call_args {
  host_record* record;
  std::atomic<unsigned>* tickets;
};

void note_run(host_record& r, std::atomic<unsigned>& tickets, void* user_data) {
  r.start_ns.store(cupti_now());
  r.thread = std::this_thread::get_id();
  r.user_data_seen = user_data;
  r.ticket.store(tickets.fetch_add(1u));
  if (r.body) r.body();
  r.end_ns.store(cupti_now());
  r.calls.fetch_add(1);  // last: a reader that sees the call sees everything above
}

}  // namespace

void HostFuncs::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  // Orderings across streams and the two-stream negative control need independent hardware queues.
  SC_REQUIRE(requirement::own_connection_count);
  recorder().track(stream::legacy());
}

void HostFuncs::TearDown() {
  if (const std::vector<std::string> stuck = unreturned(kWorkDeadline); !stuck.empty()) {
    // A host function that never returns would hang the base fixture's cudaDeviceSynchronize: record the
    // failure and end the process (CTest sees the message and the exit status).
    std::string names;
    for (const std::string& n : stuck) names += " " + n;
    ADD_FAILURE() << "host function(s) did not return within " << kWorkDeadline.count() << " ms:" << names;
    end_test_process("host function(s) of this test did not return:" + names);
  }
  for (const host_record& r : records_) recorder().host_interval("host:" + r.label, r.start_ns.load(), r.end_ns.load());
  GpuTest::TearDown();
}

stream HostFuncs::make(stream_flags flags, const std::string& name) {
  stream s = GpuTest::make(flags, name);
  streams_.push_back(s.get());
  names_.push_back(name);
  return s;
}

host_record& HostFuncs::record(const std::string& label) {
  host_record& r = records_.emplace_back();
  r.label = label;
  return r;
}

void CUDART_CB HostFuncs::run_host_func(void* data) {
  auto* args = static_cast<host_call_args*>(data);
  note_run(*args->record, *args->tickets, data);
  delete args;
}

void CUDART_CB HostFuncs::run_callback(cudaStream_t s, cudaError_t status, void* data) {
  auto* args = static_cast<host_call_args*>(data);
  args->record->stream.store(s);
  args->record->status.store(static_cast<int>(status));
  note_run(*args->record, *args->tickets, data);
  delete args;
}

host_record& HostFuncs::enqueue(const std::string& label, std::function<void()> body,
                                const std::function<cudaError_t(void*)>& call) {
  host_record& r = record(label);
  r.body = std::move(body);
  auto* args = new host_call_args{&r, &next_ticket_};
  r.user_data_sent = args;
  const cudaError_t code = call(args);
  if (code != cudaSuccess) delete args;
  SC_CHECK_CUDA(code);
  r.enqueued = true;
  return r;
}

host_record& HostFuncs::launch_host_func(const stream& s, const std::string& label, std::function<void()> body) {
  return enqueue(label, std::move(body), [&s](void* args) { return cudaLaunchHostFunc(s.get(), run_host_func, args); });
}

host_record& HostFuncs::add_callback(const stream& s, const std::string& label, std::function<void()> body) {
  return enqueue(label, std::move(body),
                 [&s](void* args) { return cudaStreamAddCallback(s.get(), run_callback, args, 0); });
}

std::vector<std::string> HostFuncs::unreturned(std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::vector<std::string> stuck;
  do {
    stuck.clear();
    for (const host_record& r : records_)
      if (r.enqueued && r.calls.load() == 0) stuck.push_back(r.label);
    if (stuck.empty()) break;
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < until);
  return stuck;
}

bool HostFuncs::drain() {
  bool drained = true;
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    if (synchronize_within(stream::view(streams_[i], names_[i]), kWorkDeadline) == cudaErrorNotReady) {
      ADD_FAILURE() << "stream " << names_[i] << " did not drain within " << kWorkDeadline.count()
                    << " ms: a host function in it has not returned";
      drained = false;
    }
  }
  return drained;
}

}  // namespace sc::families
