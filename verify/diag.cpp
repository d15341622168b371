// diag.cpp — see diag.h.
#include "verify/diag.h"

#include <fmt/format.h>

namespace ps::verify_detail {

std::string describe_op(int index, const Action& a) {
  std::string s = fmt::format("op {} '{}'", index, to_string(a));
  if (a.loc.valid()) s += fmt::format(" ({})", a.loc.str());
  return s;
}

std::string describe_op_on(int device, int index, const Action& a) {
  return fmt::format("device {}'s {}", device, describe_op(index, a));
}

Violation op_violation(std::string_view rule, int device, int index, const Action& a,
                       std::string message, std::vector<std::string> notes) {
  Violation v;
  v.rule = std::string(rule);
  if (device >= 0) v.device = DeviceId{device};
  v.op_index = index;
  v.action = to_string(a);
  v.message = std::move(message);
  v.loc = a.loc;
  v.notes = std::move(notes);
  return v;
}

Violation general_violation(std::string_view rule, int device, std::string message,
                            std::vector<std::string> notes, SourceLoc loc) {
  Violation v;
  v.rule = std::string(rule);
  if (device >= 0) v.device = DeviceId{device};
  v.message = std::move(message);
  v.notes = std::move(notes);
  v.loc = std::move(loc);
  return v;
}

}  // namespace ps::verify_detail
