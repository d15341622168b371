// structure.h — the structural rules: structure.index, structure.stage-placement,
// structure.duplicate, structure.missing, structure.backward-mix.
//
// Guarantees: runs on any schedule (no precondition); reports every violation, in device/op order
// (missing ops in stage/microbatch order). When it reports nothing, every (stage, mb) has exactly
// one F and either one B or one I and one W, all on the stage's device, and comm ops are in range
// and on their stage's device — what every later analysis assumes.
#pragma once

#include <vector>

#include "ir/schedule.h"
#include "verify/op_table.h"
#include "verify/report_types.h"

namespace ps::verify_detail {

void check_structure(const Schedule& s, const OpTable& t, std::vector<Violation>& out);

}  // namespace ps::verify_detail
