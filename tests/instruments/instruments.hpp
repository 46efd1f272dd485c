// The Instruments fixture, shared by the family's translation units (one class per suite name), and the way
// an instrument's figures are written.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sc/fixtures/gpu_test.hpp"

namespace sc::families {
class Instruments : public GpuTest {};

// An instrument's figures: each one of `observed` goes to the observation file (sc::observe, its number,
// truth value or text as it is), and all of them, with `recorded_only`, to the instrument record
// (claim::record_instrument).
inline void record_figures(const claim& c, const nlohmann::json& observed,
                           const nlohmann::json& recorded_only = nlohmann::json::object()) {
  for (const auto& [key, value] : observed.items()) {
    if (value.is_boolean())
      observe(key, value.get<bool>());
    else if (value.is_number_unsigned())
      observe(key, value.get<unsigned long long>());
    else if (value.is_number_integer())
      observe(key, value.get<long long>());
    else if (value.is_number_float())
      observe(key, value.get<double>());
    else
      observe(key, value.get<std::string>());
  }
  nlohmann::json figures = observed;
  figures.update(recorded_only);
  c.record_instrument(figures);
}
}  // namespace sc::families
