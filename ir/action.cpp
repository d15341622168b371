#include <fmt/format.h>

#include <cctype>

#include "ir/schedule.h"

namespace ps {

const char* op_type_name(OpType t) {
  switch (t) {
    case OpType::F: return "F";
    case OpType::I: return "I";
    case OpType::W: return "W";
    case OpType::B: return "B";
    case OpType::SEND_F: return "SEND_F";
    case OpType::RECV_F: return "RECV_F";
    case OpType::SEND_B: return "SEND_B";
    case OpType::RECV_B: return "RECV_B";
    case OpType::R: return "R";
    case OpType::REDUCE_GRAD: return "REDUCE_GRAD";
    case OpType::UNSHARD: return "UNSHARD";
    case OpType::RESHARD: return "RESHARD";
  }
  return "?";
}

std::string to_string(const Action& a) {
  if (is_data_parallel(a.type)) return fmt::format("{}{}", a.stage, op_type_name(a.type));
  return fmt::format("{}{}{}", a.stage, op_type_name(a.type), a.mb);
}

namespace {
// Reads a non-negative decimal integer at text[pos...]; returns false if none or it overflows.
bool read_int(std::string_view text, size_t& pos, int& out) {
  size_t start = pos;
  long long v = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    v = v * 10 + (text[pos] - '0');
    if (v > 1'000'000'000) return false;
    ++pos;
  }
  if (pos == start) return false;
  out = static_cast<int>(v);
  return true;
}
}  // namespace

Result<Action> parse_action(std::string_view text, const SourceLoc& loc) {
  auto fail = [&](const std::string& why) -> Result<Action> {
    return Status::bad_input(
        fmt::format("bad action '{}': {} (expected STAGE TYPE MICROBATCH, e.g. '3F1' or "
                    "'0SEND_B2'; TYPE one of F I W B R SEND_F RECV_F SEND_B RECV_B; or STAGE REDUCE_GRAD|UNSHARD|RESHARD)",
                    excerpt(text), why),
        loc);
  };
  size_t pos = 0;
  Action a;
  a.loc = loc;
  int stage = 0;
  if (!read_int(text, pos, stage)) return fail("missing or too large stage number");
  a.stage = StageId{stage};
  static constexpr std::pair<std::string_view, OpType> kTypes[] = {
      {"REDUCE_GRAD", OpType::REDUCE_GRAD}, {"UNSHARD", OpType::UNSHARD}, {"RESHARD", OpType::RESHARD},
      {"SEND_F", OpType::SEND_F}, {"RECV_F", OpType::RECV_F},
      {"SEND_B", OpType::SEND_B},           {"RECV_B", OpType::RECV_B}, {"F", OpType::F},
      {"I", OpType::I},                     {"W", OpType::W},           {"B", OpType::B},
      {"R", OpType::R}};
  bool found = false;
  for (const auto& [name, type] : kTypes) {
    if (text.substr(pos, name.size()) == name) {
      a.type = type;
      pos += name.size();
      found = true;
      break;
    }
  }
  if (!found) return fail("unknown op type");
  if (is_data_parallel(a.type)) {  // one per stage: no microbatch
    if (pos != text.size())
      return fail(fmt::format("{} takes no microbatch (it reduces all of them), but '{}' follows it", op_type_name(a.type),
                              excerpt(text.substr(pos), 40)));
    return a;
  }
  int mb = 0;
  if (!read_int(text, pos, mb)) return fail("missing or too large microbatch number");
  a.mb = MicrobatchId{mb};
  if (pos != text.size()) return fail(fmt::format("unexpected text '{}' after the microbatch", excerpt(text.substr(pos), 40)));
  return a;
}

Action partner_action(const Action& a) {
  switch (a.type) {
    case OpType::SEND_F: return Action{OpType::RECV_F, StageId{a.stage.value() + 1}, a.mb, {}};
    case OpType::RECV_F: return Action{OpType::SEND_F, StageId{a.stage.value() - 1}, a.mb, {}};
    case OpType::SEND_B: return Action{OpType::RECV_B, StageId{a.stage.value() - 1}, a.mb, {}};
    case OpType::RECV_B: return Action{OpType::SEND_B, StageId{a.stage.value() + 1}, a.mb, {}};
    default: return a;
  }
}

namespace {
constexpr std::string_view kOverlapSuffix = ")OVERLAP_F_B";
}  // namespace

bool looks_like_overlap(std::string_view t) {
  return (!t.empty() && t.front() == '(') || t.find("OVERLAP_F_B") != std::string_view::npos;
}

Result<std::vector<Action>> parse_overlap(std::string_view t, const std::function<SourceLoc(size_t)>& loc_at) {
  if (t.empty() || t.front() != '(' || t.size() < kOverlapSuffix.size() + 1 ||
      t.substr(t.size() - kOverlapSuffix.size()) != kOverlapSuffix) {
    return Status::bad_input(
        fmt::format("bad action '{}': an overlapped action is written '(A;B)OVERLAP_F_B', e.g. '(0F1;1B0)OVERLAP_F_B'",
                    excerpt(t)),
        loc_at(0));
  }
  std::string_view inner = t.substr(1, t.size() - 1 - kOverlapSuffix.size());
  std::vector<Action> subs;
  for (const TextField& f : split_trimmed(inner, ';')) {
    SourceLoc sub_loc = loc_at(1 + f.offset);
    std::string_view sub = f.text;
    if (sub.empty()) return Status::bad_input(fmt::format("bad action '{}': empty sub-action in OVERLAP_F_B", excerpt(t)), sub_loc);
    auto act = parse_action(sub, sub_loc);
    if (!act) return Status::bad_input(fmt::format("in '{}': {}", excerpt(t), act.status().message()), sub_loc);
    if (!is_compute(act->type))
      return Status::bad_input(fmt::format("in '{}': sub-action '{}' is a {}; OVERLAP_F_B overlaps compute actions "
                                           "(F, I, W, B, R)",
                                           excerpt(t), excerpt(sub), op_type_name(act->type)),
                               sub_loc);
    subs.push_back(std::move(*act));
  }
  if (subs.size() < 2)
    return Status::bad_input(fmt::format("bad action '{}': OVERLAP_F_B needs at least two sub-actions '(A;B)'", excerpt(t)),
                             loc_at(0));
  for (size_t k = 0; k + 1 < subs.size(); ++k) subs[k].overlap_next = true;
  return subs;
}

std::string overlap_text(const std::vector<Action>& ops, size_t first, size_t last) {
  if (first == last) return to_string(ops[first]);
  std::string inner;
  for (size_t k = first; k <= last; ++k) inner += (k == first ? "" : ";") + to_string(ops[k]);
  return "(" + inner + ")OVERLAP_F_B";
}

bool Schedule::has_comms() const {
  for (const auto& p : programs)
    for (const auto& a : p)
      if (is_comm(a.type)) return true;
  return false;
}

size_t Schedule::num_ops() const {
  size_t n = 0;
  for (const auto& p : programs) n += p.size();
  return n;
}

}  // namespace ps
