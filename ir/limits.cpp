#include "ir/limits.h"

#include <fmt/format.h>

namespace ps::limits {

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

int64_t max_microbatches_for(int64_t stages) { return stages <= 0 ? kMaxMicrobatches : kMaxPlanOps / (3 * stages); }

Status check_plan_ops(int64_t stages, int64_t microbatches, const std::string& what, const SourceLoc& loc) {
  // Both factors are at most about 2^31 here, so the product fits in 64 bits.
  if (stages < 0 || microbatches < 0 || stages > (int64_t{1} << 31) || microbatches > (int64_t{1} << 31) ||
      3 * stages * microbatches > kMaxPlanOps) {
    return Status::bad_input(
        fmt::format("{}: a plan of {} stages x {} microbatches has {} F/I/W ops, more than the {} pipesmith plans "
                    "and checks (docs/inputs.md, \"Limits\"); with {} stages at most {} microbatches",
                    what, stages, microbatches, with_commas(3 * stages * microbatches), with_commas(kMaxPlanOps),
                    stages, with_commas(max_microbatches_for(stages))),
        loc);
  }
  return Status::ok();
}

}  // namespace ps::limits
