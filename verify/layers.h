// layers.h — the rule problem.layers: the stages' layer ranges partition the model's layers.
//
// Guarantees: runs on any schedule (no precondition) and gates nothing (costs and placement are
// checked as written). A schedule whose stages all record [-1, -1] (unknown, as a PyTorch CSV
// without a model) passes. Otherwise every stage records a range, stage 0 starts at layer 0, and
// stage s + 1 starts right after stage s ends: ranges in stage order, no overlap, no gap. The
// model's layer count is not in the file, so the last stage's end is not checked here (export with
// a model holds the ranges against its layers). One violation per offending stage, located at its
// `layers` value, with a note pointing at the neighbouring stage's.
#pragma once

#include <vector>

#include "ir/schedule.h"
#include "verify/report_types.h"

namespace ps::verify_detail {

void check_layers(const Schedule& s, std::vector<Violation>& out);

}  // namespace ps::verify_detail
