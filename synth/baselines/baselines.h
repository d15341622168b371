// baselines.h — the pipeline schedules users run today, as compute-only pipesmith schedules.
//
// Each generator is a pure function of the Problem: it reads only the shape (devices P, stages S,
// placement, microbatches M, which stages may split their backward) and never the costs, so the
// orders are exactly the published ones while the timings come from the checker's simulator.
// docs/baselines.md gives the source and the bubble formula of each.
//
//   gpipe             all F, then all B                                    S = P, sequential
//   1f1b              Megatron's non-interleaved 1F1B, warm-up P−r−1       S = P, sequential
//   interleaved-1f1b  Megatron's interleaved 1F1B (groups of P microbatches
//                     per virtual stage, warm-up 2(P−r−1)+(V−1)P)          S = V·P, looped, P | M
//   zb-h1             Zero Bubble ZB-H1: 1F1B with I/W split, W deferred   S = P, sequential
//   zb-h2             Zero Bubble ZB-H2: more warm-up F, W deferred        S = P, sequential
//   zbv               Zero Bubble ZB-V (as PyTorch's ScheduleZBVZeroBubble) S = 2P, V-shape
//   dualpipev         DeepSeek's DualPipeV (as PyTorch's ScheduleDualPipeV) S = 2P, V-shape, M ≥ 2P
//
// Recomputation: make_baseline keeps each published order and adds R(s,m) just before I/B(s,m) on
// the stages whose Problem sets a recompute mode (set it with ps::set_recompute first).
//
// Guarantees: a returned Schedule has no comm ops, holds every (stage, microbatch) F exactly once
// and either one B or one I and one W (B wherever the stage has split_backward = false, and in
// gpipe / 1f1b / interleaved-1f1b), and each device runs only its own stages. Shapes a schedule
// does not support are refused with a Status (kBadInput) that says what it needs. Programs are free
// of data-flow cycles; comms are inserted and everything is re-checked by verify() (see
// synth/certify.h), never trusted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/problem.h"
#include "ir/recompute_ops.h"
#include "ir/schedule.h"
#include "ir/status.h"
#include "synth/plan/placement.h"

namespace ps {

enum class BaselineKind { kGPipe, k1F1B, kInterleaved1F1B, kZBH1, kZBH2, kZBV, kDualPipeV };

// All kinds, in the order above.
const std::vector<BaselineKind>& all_baseline_kinds();
// "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "zbv", "dualpipev".
const char* baseline_name(BaselineKind kind);
std::optional<BaselineKind> parse_baseline_kind(const std::string& name);
// "gpipe|1f1b|..." for help texts.
std::string baseline_names_joined(const char* sep = "|");

// The stage count and placement a baseline runs on.
struct BaselineShape {
  int stages_per_device = 1;  // V
  PlacementKind placement = PlacementKind::kSequential;
};
// requested_v = 0 picks the default (2 for interleaved-1f1b). Refuses e.g. V = 3 for zbv.
Result<BaselineShape> baseline_shape(BaselineKind kind, int requested_v = 0);
// The placement vector of a shape on P devices.
std::vector<int> baseline_placement(const BaselineShape& shape, int devices);

struct BaselineOptions {
  // Reserved for knobs that keep the published order (none yet); kept so callers need not change.
};

// Checks that `problem` has the shape `kind` needs (stage count, placement, microbatches).
Status check_baseline_shape(const Problem& problem, BaselineKind kind);

// The published order of `kind`, with insert_recompute_ops (ir/recompute_ops.h) applied (a no-op unless some stage of
// `problem` recomputes).
Result<Schedule> make_baseline(const Problem& problem, BaselineKind kind,
                               const BaselineOptions& options = {});

Result<Schedule> make_gpipe(const Problem& problem);
Result<Schedule> make_1f1b(const Problem& problem);
Result<Schedule> make_interleaved_1f1b(const Problem& problem);
Result<Schedule> make_zb_h1(const Problem& problem);
Result<Schedule> make_zb_h2(const Problem& problem);
Result<Schedule> make_zbv(const Problem& problem);
Result<Schedule> make_dualpipev(const Problem& problem);

}  // namespace ps
