// plan_spec.h — the words that name a plan, read in one place.
//
// A plan is named by a partition (a method of partition.h — balanced, balanced-memory, even — or a
// Megatron-LM pipeline layout string, megatron_layout.h), a placement (sequential; interleaved or
// looped; v, vshape or v-shape; or an explicit stage → device list such as 0,1,1,0) and a stage count
// per device. synthesize_model, the `bound` command and the baselines resolve them here, so a word
// means the same everywhere and a library user gets the same reading as the command line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/model.h"
#include "ir/partition.h"
#include "ir/status.h"
#include "synth/plan/megatron_layout.h"
#include "synth/plan/placement.h"

namespace ps {

struct PlanSpec {
  std::string partition = "balanced";    // a partition method or a Megatron layout string
  std::string placement = "sequential";  // a placement word or list (aliases as above)
  int stages_per_device = 0;             // 0: as the placement (or the layout) has it
};

// A plan the words fix, with words for summaries: the method name, or `Megatron layout "…"`.
struct NamedPlan {
  Partition partition;
  std::vector<int> placement;
  std::string desc;
};

// A stage count per device V (0: not given) on the spec's P devices: V >= 1, and V·P stages (counted
// in 64 bits) must not exceed the model's layers (a stage holds at least one layer). Messages name V
// by `name` (the caller's word for it: "--stages-per-device", "stages_per_device").
Status check_stages_per_device(const Spec& spec, int stages_per_device, std::string_view name = "stages_per_device");

// Whether `partition` is read as a Megatron layout string rather than a method name.
bool is_layout_partition(const std::string& partition);

// A Megatron layout string matched against the spec's model and cut over its devices, with the
// layout's own (looped) placement.
Result<LayoutPlan> layout_plan(const Spec& spec, const std::string& layout);

// The stage count the placement names on `devices` devices: sequential P, looped V·P (V default 2),
// vshape 2P, a list its length. Refuses a stage count per device the placement cannot hold.
Result<int> placement_stage_count(const PlanSpec& plan, int devices);

// The placement the words fix, over placement_stage_count stages.
Result<std::vector<int>> resolve_placement(const PlanSpec& plan, int devices);

// The partition the words fix when the placement is left open: a layout's own stages, or the method
// over stages_per_device × P stages (P when stages_per_device is 0).
Result<Partition> resolve_partition(const Spec& spec, const PlanSpec& plan);

// Partition and placement both fixed. A layout keeps its own placement unless another one than
// sequential is named (a layout of P stages is sequential anyway).
Result<NamedPlan> resolve_plan(const Spec& spec, const PlanSpec& plan);

}  // namespace ps
