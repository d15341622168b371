// whole_layers.h — a model seen at the granularity a module splitter can cut: every `joins_next`
// group (a model layer written as sublayers) becomes one layer, so any partition of the result cuts
// only between whole model layers (`pipesmith synth --cuts layers`).
//
// Guarantees: layer k of the result covers the original layers [first[k], first[k+1]); a group of
// one layer keeps its type; a group of several gets a type of its own per distinct symbol pattern
// (a symbol unused by the model) whose F/I/W times, activation, stash and parameters are the sums
// (weight_walk_ms: the members' sum times the group's size, the layers an earlier group of that
// size puts below each member),
// split_backward the conjunction, output_mb the bytes its members hand to layers after the group
// (the last member's output, plus any member read by a later layer through `inputs`), and whose
// name joins the members' names with '+'; `kind` is set to the Megatron kind word of the group
// (mtp, embedding or head) so Megatron-style partitions treat it as the original layers. Inputs
// are mapped to groups. refine_partition maps a partition of the result back to the original
// layers, which then cost the plan exactly (make_problem on the original spec).
#pragma once

#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/status.h"

namespace ps {

struct WholeLayerModel {
  Spec spec;               // the original spec with the grouped model
  std::vector<int> first;  // group k = original layers [first[k], first[k + 1]); first.back() = layer count
};

// Errors: more distinct multi-layer patterns than free one-character symbols.
Result<WholeLayerModel> whole_layer_model(const Spec& spec);

// A partition of the grouped model as a partition of the original layers.
Partition refine_partition(const Partition& grouped, const WholeLayerModel& w);

}  // namespace ps
