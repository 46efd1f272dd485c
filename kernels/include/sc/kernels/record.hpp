// Plain records shared by device code, host fixtures and result readers. No CUDA includes: every
// field is a fixed-width integer so the layout is the same on both sides.
#pragma once

#include <cstdint>

namespace sc::kernels {

// One per latch, in mapped pinned host memory. The host writes `open`; the latch kernel writes the rest.
// Latch words live in the process's latch ledger (fixtures), so they outlast their latches: after the test
// the fixture reads every word again and records any watchdog that fired.
struct latch_word {
  std::uint32_t open;           // host -> device: 1 releases the latch
  std::uint32_t started;        // device -> host: 1 once the latch kernel runs (it now holds its stream)
  std::uint32_t timed_out;      // device -> host: 1 if the watchdog ended the wait
  std::uint32_t widest_gap_ns;  // device -> host: widest stop between two timer reads of the wait (saturated)
  std::uint64_t start_ns;       // %globaltimer when the latch kernel began waiting
  std::uint64_t end_ns;         // %globaltimer when it stopped waiting (released or timed out)
};

// Order encoded in values: each mark takes a ticket from a counter in *device* memory (atomic
// read-modify-write on mapped host memory is not atomic from the host's side, and compute-sanitizer
// rejects it) and publishes it with a plain system-scope store into this board, in mapped host memory.
inline constexpr unsigned kMarkSlots = 64;
struct mark_board {
  std::uint32_t ticket[kMarkSlots];    // 0 = not landed yet; else 1 for the board's first mark, 2, ...
  std::uint64_t stamp_ns[kMarkSlots];  // %globaltimer when the mark landed
};

// What the secondary of a programmatic dependent launch saw (ORDX), in mapped host memory, zeroed: `early` is
// set by its block before it waits for the primary, `late` after; `mismatches` counts the primary's words it
// read after the wait that did not hold the primary's value.
struct pdl_board {
  std::uint32_t early;
  std::uint32_t late;
  std::uint32_t mismatches;
  std::uint32_t pad;
  std::uint64_t early_ns;  // %globaltimer when `early` was set
  std::uint64_t late_ns;   // %globaltimer when `late` was set
};

// One per block of a timed spin, written by thread 0.
struct block_record {
  std::uint64_t t0_ns;       // %globaltimer after all warps of the block reached the start barrier
  std::uint64_t t1_ns;       // %globaltimer after the spin ended and the block re-synchronized
  std::uint64_t max_gap_ns;  // largest delta between two consecutive timer reads of thread 0
  std::uint32_t sm_begin;    // %smid at t0
  std::uint32_t sm_end;      // %smid at t1 (differs only if the block was moved, e.g. after preemption)
  std::uint32_t nsmid;       // %nsmid (upper bound of %smid values, may exceed the SM count)
  std::uint32_t ready_seen;  // bit i: the grid's ready word i was not zero when the block ended (spin_plan)
};

// How a scheduling grid (priority_sched) spins. With arrivals (device memory, one zeroed word per %smid
// value) the k-th block to start on an SM spins spin_ns + k * stagger_ns, so the blocks
// sharing an SM retire one after another; without it every block spins spin_ns. started, when not null,
// is mapped host memory with one word per block: thread 0 stores 1 there as soon as it runs (a block gets
// all its resources when it is dispatched, so it then holds its slot). ready, when not null, is device
// memory with ready_count words (at most 32), each written by a stream's front end once that stream has passed
// its wait: thread 0 reads them as its block ends and keeps which were set (block_record::ready_seen), so
// the block that frees the first slot tells which pending streams were released by then.
inline constexpr unsigned kReadyWords = 32;
struct spin_plan {
  std::uint64_t spin_ns;
  std::uint64_t stagger_ns;
  std::uint32_t* arrivals;
  std::uint32_t arrival_slots;  // words at arrivals; an SM whose %smid is not below it counts as first
  std::uint32_t ready_count;
  std::uint32_t* started;
  const std::uint32_t* ready;
};

// One per block of a gap-logging spin (time-slicing between contexts, SCHED-11): every stretch longer
// than the threshold between two consecutive %globaltimer reads of thread 0, while the block spun.
inline constexpr unsigned kGapSlots = 48;
struct gap_log {
  std::uint64_t t0_ns;
  std::uint64_t t1_ns;
  std::uint64_t at_ns[kGapSlots];   // the read before the gap
  std::uint64_t len_ns[kGapSlots];  // the gap's length
  std::uint32_t gaps;               // gaps seen (may exceed kGapSlots; only the first kGapSlots are kept)
  std::uint32_t sm_begin;
  std::uint32_t sm_end;
  std::uint32_t reserved;
};

// Result of back-to-back %globaltimer reads by one thread (instrument INST-01).
struct timer_probe {
  std::uint64_t first_ns;
  std::uint64_t last_ns;
  std::uint64_t min_step_ns;  // smallest non-zero difference between consecutive reads: the tick
  std::uint64_t max_step_ns;
  std::uint32_t reads;
  std::uint32_t steps;  // number of non-zero differences seen
};

// A kernel that publishes %globaltimer to the host continuously while it runs (instrument INST-02).
struct beacon {
  std::uint64_t start_ns;
  std::uint64_t end_ns;
  std::uint64_t now_ns;   // rewritten on every loop iteration, followed by a system fence
  std::uint32_t started;  // 1 once start_ns is valid
  std::uint32_t done;     // 1 once end_ns is valid
};

}  // namespace sc::kernels
