#include "priority_sched.hpp"

#include <optional>

#include "sc/fixtures/observe.hpp"

namespace sc::families {

::testing::AssertionResult PrioritySched::check_residency(const std::vector<residency_input>& grids) {
  return residency_verdict(grids, properties(), "residency");
}

::testing::AssertionResult residency_verdict(const std::vector<residency_input>& grids,
                                             const cudaDeviceProp& properties, const std::string& key) {
  // SCHED-13 is claimed by a test that judges something; one of recorded values alone checks its records the
  // same way (wrong records still fail it) and stays recorded.
  std::optional<claim> sched13;
  if (sc::has_claim_of_kind(verdict_kind::observed) || sc::has_claim_of_kind(verdict_kind::documented))
    sched13.emplace("SCHED-13", verdict_kind::documented,
                    "RT cudaDeviceProp maxThreadsPerMultiProcessor, maxBlocksPerMultiProcessor");
  // Mutation SCHED-13 (expectation): the limit taken as one block per SM.
  const bool mutated = sched13 && sched13->mutated(mutation_kind::expectation);
  return within_residency_limits(grids, properties, key, mutated ? 1 : properties.maxBlocksPerMultiProcessor);
}

}  // namespace sc::families
