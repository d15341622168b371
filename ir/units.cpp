#include "ir/units.h"

#include <fmt/format.h>

#include <cmath>

namespace ps {

Status check_memory_limit_gb(double gb, std::string_view what) {
  if (gb >= 0 && std::isfinite(gb)) return Status::ok();
  return Status::bad_input(fmt::format("{} must be a finite number of GB >= 0 (0 = unlimited), got {}", what, gb));
}

}  // namespace ps
