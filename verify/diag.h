// diag.h — how the checker words its diagnostics: op descriptions and Violation construction.
//
// Guarantees: every message refers to an op the same way ("op 5 '1SEND_B0' (f.csv:2:12)"), so
// users and tests can grep for it; a Violation built here always carries the op's location.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/schedule.h"
#include "verify/report_types.h"

namespace ps::verify_detail {

// "op 5 '1SEND_B0' (f.csv:2:12)".
std::string describe_op(int index, const Action& a);
// "device 1's op 5 '1SEND_B0' (f.csv:2:12)".
std::string describe_op_on(int device, int index, const Action& a);

// A violation about op `index` of `device` (its action string and location filled from `a`).
Violation op_violation(std::string_view rule, int device, int index, const Action& a,
                       std::string message, std::vector<std::string> notes = {});
// A violation that is not about one op (op_index -1, no action); loc optional.
Violation general_violation(std::string_view rule, int device, std::string message,
                            std::vector<std::string> notes = {}, SourceLoc loc = {});

}  // namespace ps::verify_detail
