#include "ir/limits.h"

#include <fmt/format.h>

#include <cstdint>

#include "ir/mesh.h"

namespace ps::limits {

static_assert(option::kMaxMeshGpus == kMaxGpus, "the mesh options' bound is ir/mesh.h's kMaxGpus");

std::string with_commas(int64_t v) {
  const uint64_t magnitude = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits = std::to_string(magnitude), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string range_text(const IntOption& o) { return fmt::format("[{}, {}]", o.lo, o.hi); }

Status check_option(const IntOption& o, int64_t v, std::string_view spelling, const SourceLoc& loc) {
  if (in_range(o, v)) return Status::ok();
  return Status::bad_input(fmt::format("{} must be an integer in {}, got {}", spelling.empty() ? o.name : spelling,
                                       range_text(o), v), loc);
}

int64_t max_microbatches_for(int64_t stages) {
  return stages <= 0 ? kMaxMicrobatches : stages > kMaxPlanOps ? 0 : kMaxPlanOps / (3 * stages);
}

Status check_plan_ops(int64_t stages, int64_t microbatches, const std::string& what, const SourceLoc& loc) {
  // Each factor is checked alone first, so the product below cannot overflow.
  if (stages >= 0 && microbatches >= 0 && stages <= kMaxPlanOps && microbatches <= kMaxPlanOps &&
      3 * stages * microbatches <= kMaxPlanOps)
    return Status::ok();
  // 3·S·M for the message: exact while it fits in 64 bits unsigned, else "more than 10^19".
  const bool exact = stages >= 0 && microbatches >= 0 && stages <= (int64_t{1} << 31) && microbatches <= (int64_t{1} << 31);
  const uint64_t ops = exact ? 3 * static_cast<uint64_t>(stages) * static_cast<uint64_t>(microbatches) : 0;
  std::string ops_text = exact ? std::to_string(ops) : std::string("more than 10^19");
  if (exact) {
    std::string grouped;
    for (size_t i = 0; i < ops_text.size(); ++i) {
      if (i > 0 && (ops_text.size() - i) % 3 == 0) grouped += ',';
      grouped += ops_text[i];
    }
    ops_text = grouped;
  }
  return Status::bad_input(
      fmt::format("{}: a plan of {} stages x {} microbatches has {} F/I/W ops, more than the {} pipesmith plans "
                  "and checks (docs/inputs.md, \"Limits\"); with {} stages at most {} microbatches",
                  what, stages, microbatches, ops_text, with_commas(kMaxPlanOps), stages,
                  with_commas(max_microbatches_for(stages))),
      loc);
}

}  // namespace ps::limits
