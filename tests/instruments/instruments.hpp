// The Instruments fixture, shared by the family's translation units (one class per suite name).
#pragma once

#include "sc/fixtures/gpu_test.hpp"

namespace sc::families {
class Instruments : public GpuTest {};
}  // namespace sc::families
