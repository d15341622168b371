// program_builder.h — private helpers shared by the baseline generators (synth/baselines/*.cpp).
//
// ProgramBuilder collects one device's ops; finish_baseline turns the per-device lists into a
// Schedule, replacing I by B and dropping W on stages whose backward cannot be split.
#pragma once

#include <string>
#include <vector>

#include "ir/schedule.h"
#include "synth/baselines/baselines.h"

namespace ps::baseline_detail {

struct ProgramBuilder {
  std::vector<Action> ops;
  void add(OpType t, int stage, int mb) {
    Action a;
    a.type = t;
    a.stage = StageId{stage};
    a.mb = MicrobatchId{mb};
    ops.push_back(a);
  }
  void F(int s, int m) { add(OpType::F, s, m); }
  void B(int s, int m) { add(OpType::B, s, m); }
  void I(int s, int m) { add(OpType::I, s, m); }
  void W(int s, int m) { add(OpType::W, s, m); }
};

// Builds the Schedule: programs[d] = builders[d].ops, with I→B and W dropped on stages that have
// split_backward = false. `kind` names the generator ("pipesmith baseline 1f1b").
Schedule finish_baseline(const Problem& problem, BaselineKind kind,
                         std::vector<ProgramBuilder> builders);

}  // namespace ps::baseline_detail
