// The PrioritySched fixture: the block-level scheduling harness (sc::SchedTest, sc/fixtures/sched.hpp) with
// this family's claim on it: every test's records are checked against the device's residency limits, and a
// test that judges something claims that check (SCHED-13, residency_verdict).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sc/fixtures/blocks.hpp"
#include "sc/fixtures/sched.hpp"

namespace sc::families {

// The harness's words, under the names this family's tests have always used.
using sc::chart_grid;
using sc::decided;
using sc::kArrangementAttempts;
using sc::kBlockSpinNs;
using sc::kFillSpinNs;
using sc::kWaveDeadline;
using sc::sched_grid;
using sc::sched_latch;
using sc::within_residency_limits;
using sc::write_block_chart;

class PrioritySched : public SchedTest {
 protected:
  // SCHED-13: residency_verdict on the test's grids, under the key "residency".
  ::testing::AssertionResult check_residency(const std::vector<residency_input>& grids) override;
};

// SCHED-13: the residency check against maxBlocksPerMultiProcessor, claimed (with its mutation) where the test
// claims an observed or documented behavior; a test of recorded values alone makes the check without the claim.
::testing::AssertionResult residency_verdict(const std::vector<residency_input>& grids,
                                             const cudaDeviceProp& properties, const std::string& key);

}  // namespace sc::families
