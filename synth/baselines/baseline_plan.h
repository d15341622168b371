// baseline_plan.h — `pipesmith baseline` as a library call: a published schedule (baselines.h) on the
// user's model, its plan chosen as the schedule needs it, checked and certified.
//
// The plan is synth/plan/plan_spec.h's baseline_plan: `partition` is a method (balanced,
// balanced-memory, even) over the shape's V·P stages, or a Megatron layout, which must give the stage
// count per device the schedule runs; the placement is the schedule's own (looped for
// interleaved-1f1b, a V for zbv and dualpipev, where a layout's stages are placed in a V, with a
// note). Guarantees: the returned schedule passed the checker under rendezvous semantics (comms
// inserted by the shared rule) and carries its certificate; errors are kBadInput with the reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/status.h"
#include "synth/baselines/baselines.h"
#include "synth/bounds/global_bound.h"
#include "synth/plan/plan_spec.h"
#include "verify/verify.h"

namespace ps {

struct BaselineRequest {
  BaselineKind kind = BaselineKind::k1F1B;
  int stages_per_device = 0;          // 0: the schedule's default
  PartitionChoice partition;           // plan_spec.h: a method or a Megatron layout
  RecomputeMode recompute = RecomputeMode::kNone;  // every stage's (R just before each backward)
};

struct BaselineRun {
  Schedule schedule;  // checked, with comms, predicted times and certificate
  Report report;      // the checker's report on it
  Partition partition;
  std::vector<int> placement;
  std::string desc;                // the partition in words: "balanced", "Megatron layout \"…\""
  std::vector<std::string> notes;  // how the plan was adapted to the schedule
  std::optional<GlobalBound> global;  // the bound over all plans (absent when it cannot be computed)
};

Result<BaselineRun> run_baseline(const Spec& spec, const BaselineRequest& request);

}  // namespace ps
