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
  }
  return "?";
}

std::string to_string(const Action& a) {
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
                    "'0SEND_B2'; TYPE one of F I W B SEND_F RECV_F SEND_B RECV_B)",
                    excerpt(text), why),
        loc);
  };
  size_t pos = 0;
  Action a;
  a.loc = loc;
  if (!read_int(text, pos, a.stage)) return fail("missing or too large stage number");
  static constexpr std::pair<std::string_view, OpType> kTypes[] = {
      {"SEND_F", OpType::SEND_F}, {"RECV_F", OpType::RECV_F}, {"SEND_B", OpType::SEND_B},
      {"RECV_B", OpType::RECV_B}, {"F", OpType::F},           {"I", OpType::I},
      {"W", OpType::W},           {"B", OpType::B}};
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
  if (!read_int(text, pos, a.mb)) return fail("missing or too large microbatch number");
  if (pos != text.size()) return fail(fmt::format("unexpected text '{}' after the microbatch", excerpt(text.substr(pos), 40)));
  return a;
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
