#include "ir/units.h"

#include <fmt/format.h>

#include <cmath>

#include "ir/limits.h"

namespace ps {

bool memory_limit_ok(double gb) { return gb >= 0 && gb <= limits::kMaxIterationTotal; }

std::string memory_limit_rule() {
  return fmt::format("a finite number of GB in [0, {:g}] (0 = unlimited)", limits::kMaxIterationTotal);
}

Status check_memory_limit_gb(double gb, std::string_view what) {
  if (memory_limit_ok(gb)) return Status::ok();
  return Status::bad_input(fmt::format("{} must be {}, got {}", what, memory_limit_rule(), gb));
}

}  // namespace ps
