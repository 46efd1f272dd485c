// Host-callable launchers for every kernel of the suite. Each returns the launch's cudaError_t
// (cudaGetLastError right after the launch) and never throws. Tests never use <<<>>> themselves.
//
// These launchers are compiled once, in legacy default-stream mode: a stream handle of 0 passed here
// means the legacy default stream whatever the caller's build mode. Per-thread callers pass
// cudaStreamPerThread explicitly (or launch from their own .cu translation unit).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "sc/kernels/record.hpp"

namespace sc::kernels {

// Holds `stream` until latch->open becomes 1, or until watchdog_ns of %globaltimer have passed; then it
// sets timed_out and, when `banner` is true, prints the watchdog banner (STREAMCHECK-WATCHDOG), which
// CTest turns into a failure. Only a test of the watchdog itself passes banner = false.
cudaError_t launch_latch(cudaStream_t stream, latch_word* latch, std::uint64_t watchdog_ns, bool banner = true);
// launch_latch through cudaLaunchKernelEx with `event` attached to the launch: the launch-completion event
// (cudaLaunchAttributeLaunchCompletionEvent, "nominally" once every block began) or, when `programmatic`, the
// programmatic event with triggerAtBlockStart (once every block began or triggered). `event` must disable timing.
cudaError_t launch_latch_with_event(cudaStream_t stream, latch_word* latch, std::uint64_t watchdog_ns, bool banner,
                                    cudaEvent_t event, bool programmatic);

// One thread takes the next ticket from *counter (device memory) and stores it in board->ticket[id].
cudaError_t launch_mark(cudaStream_t stream, std::uint32_t* counter, mark_board* board, unsigned id);

// The mark kernel's function handle in the current context (a CUfunction for cuLaunchKernel). Its
// parameters, in order: std::uint32_t* counter, mark_board* board, unsigned id (as launch_mark's).
cudaError_t mark_function(cudaFunction_t* function);

// `blocks` blocks of `threads` threads each spin for spin_ns of %globaltimer time; thread 0 of each
// block writes records[blockIdx.x].
cudaError_t launch_spin(cudaStream_t stream, block_record* records, unsigned blocks, unsigned threads,
                        std::uint64_t spin_ns);
// The spin kernel as a context-less handle: cuLaunchKernel takes it cast to CUfunction and launches it in the
// context of the stream it is given. Its parameters, in order: block_record* records, std::uint64_t spin_ns.
cudaError_t spin_kernel_handle(cudaKernel_t* kernel);

// The scheduling grid (priority_sched): `blocks` blocks of `threads` threads spin as `plan` says and
// write records[blockIdx.x] (block_record). With cluster > 1 the grid is launched in thread-block
// clusters of that many blocks (cudaLaunchKernelEx; blocks must be a multiple of cluster).
cudaError_t launch_sched_spin(cudaStream_t stream, block_record* records, unsigned blocks, unsigned threads,
                              const spin_plan& plan, unsigned cluster = 1);
// The same grid launched through cudaLaunchKernelEx with cudaLaunchAttributePriority set to `priority`: the
// grid's own execution priority, whatever its stream's (ORDX-12); with cluster > 1 also in clusters.
cudaError_t launch_sched_spin_at_priority(cudaStream_t stream, block_record* records, unsigned blocks, unsigned threads,
                                          const spin_plan& plan, int priority, unsigned cluster = 1);
// How many blocks of `threads` threads of the scheduling grid fit on one SM at once (occupancy API).
cudaError_t sched_spin_occupancy(unsigned threads, int* blocks_per_sm);
// How many clusters of `cluster` blocks of `threads` threads can be resident at once on the device.
cudaError_t sched_spin_cluster_occupancy(unsigned threads, unsigned cluster, int* clusters);

// `blocks` blocks of `threads` threads; thread 0 of each spins spin_ns and logs every gap longer than
// threshold_ns between its timer reads into logs[blockIdx.x] (time-slicing, SCHED-11).
cudaError_t launch_gap_log(cudaStream_t stream, gap_log* logs, unsigned blocks, unsigned threads, std::uint64_t spin_ns,
                           std::uint64_t threshold_ns);

// One thread reads %globaltimer `reads` times back to back and summarizes the steps.
cudaError_t launch_timer_probe(cudaStream_t stream, timer_probe* out, unsigned reads);

// Publishes %globaltimer at start, then continuously (beacon::now_ns) for spin_ns, then at the end.
cudaError_t launch_beacon(cudaStream_t stream, beacon* out, std::uint64_t spin_ns);

// Does nothing: launch cost (INST-05).
cudaError_t launch_empty(cudaStream_t stream);
// The context-independent handles of launch_empty's kernel and of a kernel of the same module that nothing
// launches (loading states, DFLT-20 across devices).
cudaError_t empty_and_unused_kernels(cudaKernel_t* empty, cudaKernel_t* unused);

// A latch as wide as a grid: `blocks` blocks of `threads` threads all stay resident (holding their thread
// slots) until latch->open becomes 1 or the watchdog fires. Block b sets resident[b] to 1 when it starts
// (`resident`: `blocks` words of mapped host memory, zeroed), so the host can tell when the whole grid is
// resident (sc::count_set). Block 0 publishes started/start_ns/end_ns like launch_latch.
cudaError_t launch_latch_grid(cudaStream_t stream, latch_word* latch, std::uint64_t watchdog_ns, bool banner,
                              unsigned blocks, unsigned threads, std::uint32_t* resident);

// Programmatic dependent launch (compute capability 9.0; below it both kernels do nothing). The primary is a
// latch as wide as its `blocks` blocks: each block first lets its dependents launch when `trigger`
// (griddepcontrol.launch_dependents), then waits for the latch (block 0 publishes it like launch_latch), then
// writes out[block] = value, a write made after its trigger.
cudaError_t launch_pdl_primary(cudaStream_t stream, latch_word* latch, std::uint64_t watchdog_ns, bool banner,
                               unsigned blocks, bool trigger, std::uint32_t* out, std::uint32_t value);
// Its secondary, one block, launched with cudaLaunchAttributeProgrammaticStreamSerialization set to
// `programmatic`: it sets board->early, waits for its primary (griddepcontrol.wait) when `synchronize`, then
// counts the words of out[0, n) that are not `value` into board->mismatches and sets board->late.
cudaError_t launch_pdl_secondary(cudaStream_t stream, pdl_board* board, const std::uint32_t* out, std::uint32_t n,
                                 std::uint32_t value, bool programmatic, bool synchronize);

// The same grid latch launched with cudaLaunchCooperativeKernel: all of its blocks must be resident together.
cudaError_t launch_latch_grid_cooperative(cudaStream_t stream, latch_word* latch, std::uint64_t watchdog_ns,
                                          bool banner, unsigned blocks, unsigned threads, std::uint32_t* resident);

// How many blocks of `threads` threads of the grid latch fit on one SM at once (the occupancy API).
cudaError_t latch_grid_occupancy(unsigned threads, int* blocks_per_sm);

// Traps (a device fault): the context is lost, later calls return an error. Only in a child process.
cudaError_t launch_trap(cudaStream_t stream);

// out[i] = value for i < n (a data path with a known result).
cudaError_t launch_fill(cudaStream_t stream, std::uint32_t* out, std::uint32_t n, std::uint32_t value);

// Producer of a data path: spins spin_ns first (writes late), then out[i] = value for i < n.
cudaError_t launch_fill_late(cudaStream_t stream, std::uint32_t* out, std::uint32_t n, std::uint32_t value,
                             std::uint64_t spin_ns);

// Consumer of a data path: reads data[] in reverse order (a half-finished producer shows at the end
// first) and adds the number of elements different from `expected` to *mismatches (device memory).
cudaError_t launch_count_mismatches(cudaStream_t stream, const std::uint32_t* data, std::uint32_t n,
                                    std::uint32_t expected, std::uint32_t* mismatches);

// One thread: adds 1 to *mismatches (device memory) unless *word == expected, then sets *word = expected + 1
// (a step of a chain whose order is encoded in the value).
cudaError_t launch_advance(cudaStream_t stream, std::uint32_t* word, std::uint32_t expected, std::uint32_t* mismatches);

// cudaFuncSetAttribute(preferred shared-memory carveout) on the empty kernel (a blocking-source probe).
cudaError_t set_empty_kernel_carveout(int percent);

// Loads every kernel above into the current context (cudaFuncGetAttributes on each), so that no lazy
// module load can synchronize the context while a latch holds a stream.
cudaError_t preload();

}  // namespace sc::kernels
