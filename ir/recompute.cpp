#include "ir/recompute.h"

#include <fmt/format.h>

namespace ps {

const char* recompute_mode_name(RecomputeMode m) {
  switch (m) {
    case RecomputeMode::kNone: return "none";
    case RecomputeMode::kSelective: return "selective";
    case RecomputeMode::kFull: return "full";
  }
  return "?";
}

std::optional<RecomputeMode> parse_recompute_mode(std::string_view text) {
  for (RecomputeMode m : {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull})
    if (text == recompute_mode_name(m)) return m;
  return std::nullopt;
}

const char* recompute_choice_name(RecomputeChoice c) {
  switch (c) {
    case RecomputeChoice::kSearch: return "search";
    case RecomputeChoice::kNone: return "none";
    case RecomputeChoice::kSelective: return "selective";
    case RecomputeChoice::kFull: return "full";
  }
  return "unknown";
}

std::optional<RecomputeChoice> parse_recompute_choice(std::string_view text) {
  for (RecomputeChoice c : {RecomputeChoice::kSearch, RecomputeChoice::kNone, RecomputeChoice::kSelective,
                            RecomputeChoice::kFull})
    if (text == recompute_choice_name(c)) return c;
  return std::nullopt;
}

Result<RecomputeMode> read_recompute_mode(std::string_view text, std::string_view option) {
  if (auto m = parse_recompute_mode(text)) return *m;
  return Status::bad_input(fmt::format("{}: expected none, selective or full, got '{}'", option, text));
}

Result<RecomputeChoice> read_recompute_choice(std::string_view text, std::string_view option) {
  if (auto c = parse_recompute_choice(text)) return *c;
  return Status::bad_input(fmt::format("{}: expected search, none, selective or full, got '{}'", option, text));
}

}  // namespace ps
