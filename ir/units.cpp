#include "ir/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ir/limits.h"

namespace ps {

bool memory_limit_ok(double gb) { return gb >= 0 && gb <= limits::kMaxIterationTotal; }

std::string memory_limit_rule() {
  return fmt::format("a finite number of GB in [0, {:g}] (0 = unlimited)", limits::kMaxIterationTotal);
}

bool time_limit_ok(double s) { return s > 0; }

std::string time_limit_rule() { return "a number of seconds > 0 ('inf' for no limit)"; }

Result<double> read_time_limit_s(double s, std::string_view what) {
  if (!time_limit_ok(s)) return Status::bad_input(fmt::format("{} must be {}, got {}", what, time_limit_rule(), s));
  return std::min(s, limits::kMaxTimeLimitS);
}

Status check_memory_limit_gb(double gb, std::string_view what) {
  if (memory_limit_ok(gb)) return Status::ok();
  return Status::bad_input(fmt::format("{} must be {}, got {}", what, memory_limit_rule(), gb));
}

}  // namespace ps
