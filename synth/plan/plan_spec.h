// plan_spec.h — the words that name a plan, read in one place.
//
// A plan is named by a partition (a method of partition.h — balanced, balanced-memory, even — or a
// Megatron-LM pipeline layout string, megatron_layout.h), a placement (sequential; interleaved or
// looped; v, vshape or v-shape; or an explicit stage → device list such as 0,1,1,0) and a stage count
// per device. synthesize_model, the `bound` command and the baselines resolve them here, so a word
// means the same everywhere and a library user gets the same reading as the command line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/model.h"
#include "ir/partition.h"
#include "ir/status.h"
#include "synth/baselines/baselines.h"
#include "synth/plan/megatron_layout.h"
#include "synth/plan/placement.h"

namespace ps {

struct PlanSpec {
  std::string partition = "balanced";    // a partition method or a Megatron layout string
  std::string placement = "sequential";  // a placement word or list (aliases as above)
  int stages_per_device = 0;             // 0: as the placement (or the layout) has it
};

// The same choices, typed: what a library caller passes (ModelSynthOptions), and what the words read to.
enum class PartitionMethod {
  kBalanced,        // min max stage F+I+W (partition.h)
  kBalancedMemory,  // the same, ties broken by memory
  kEven,            // Megatron-LM's default: layers split evenly
  kMegatronLayout,  // a Megatron-LM pipeline layout string (`layout`)
};
struct PartitionChoice {
  PartitionMethod method = PartitionMethod::kBalanced;
  std::string layout;  // kMegatronLayout only: "Et*3|(tt|)*29,m|L"
};
struct PlacementChoice {
  PlacementKind kind = PlacementKind::kSequential;  // placement.h: sequential, looped, vshape, explicit
  std::vector<int> devices;                         // kExplicit only: stage -> device, {0, 1, 1, 0}
};

// Reads a partition word (a method name or a Megatron layout string); refuses anything else.
Result<PartitionChoice> parse_partition_choice(const std::string& word);
// Reads a placement word (any alias above) or a device list; refuses anything else.
Result<PlacementChoice> parse_placement_choice(const std::string& word);
// The canonical word of a choice, for summaries: balanced, balanced-memory, even or the layout string;
// sequential, interleaved, vshape or the list "0,1,1,0". It reads back to the same choice.
std::string partition_choice_word(const PartitionChoice& c);
std::string placement_choice_word(const PlacementChoice& c);
// The words of typed choices (the word forms of resolve_* below read them back to the same plan).
PlanSpec plan_words(const PartitionChoice& partition, const PlacementChoice& placement, int stages_per_device);

// A plan the words fix, with words for summaries: the method name, or `Megatron layout "…"`.
struct NamedPlan {
  Partition partition;
  std::vector<int> placement;
  std::string desc;
  std::vector<std::string> notes;  // how the plan departs from what the words alone say (for summaries)
};

// A stage count per device V (0: not given) on the spec's P devices: V >= 1, and V·P stages (counted
// in 64 bits) must not exceed the model's layers (a stage holds at least one layer). Messages name V
// by `name` (the caller's word for it: "--stages-per-device", "stages_per_device").
Status check_stages_per_device(const Spec& spec, int stages_per_device, std::string_view name = "stages_per_device");

// What a front end (the command's flags, the Python keywords) was given for the plan, in words;
// unset: left to the search.
struct PlanGiven {
  std::optional<std::string> partition;
  std::optional<std::string> placement;
  std::optional<int> stages_per_device;
};
// The plan the words fix, by the rules every front end shares: a given stage count per device is
// checked (check_stages_per_device, named by `stages_name`); a stage count per device alone fixes the
// placement — interleaved (looped) with V stages per device, or sequential for V = 1 and for a
// Megatron layout partition, which places its stages itself. Unset fields stay open for the search; what
// the words fix is checked where it is resolved (placement_stage_count: a placement that cannot hold
// V; synthesize_model: an evaluations budget with nothing left to search).
struct PlanFixed {
  std::optional<std::string> partition;
  std::optional<std::string> placement;
  int stages_per_device = 0;
};
Result<PlanFixed> read_plan_given(const Spec& spec, const PlanGiven& given,
                                  std::string_view stages_name = "stages_per_device");

// Whether `partition` is read as a Megatron layout string rather than a method name.
bool is_layout_partition(const std::string& partition);

// A Megatron layout string matched against the spec's model and cut over its devices, with the
// layout's own (looped) placement.
Result<LayoutPlan> layout_plan(const Spec& spec, const std::string& layout);

// The stage count the placement names on `devices` devices: sequential P, looped V·P (V default 2),
// vshape 2P, a list its length. Refuses a stage count per device the placement cannot hold.
Result<int> placement_stage_count(const PlacementChoice& placement, int stages_per_device, int devices);

// The placement fixed, over placement_stage_count stages.
Result<std::vector<int>> resolve_placement(const PlacementChoice& placement, int stages_per_device, int devices);

// The partition fixed when the placement is left open: a layout's own stages, or the method over
// stages_per_device × P stages (P when stages_per_device is 0).
Result<Partition> resolve_partition(const Spec& spec, const PartitionChoice& partition, int stages_per_device);

// Partition and placement both fixed. A layout keeps its own placement unless another one than
// sequential is named (a layout of P stages is sequential anyway).
Result<NamedPlan> resolve_plan(const Spec& spec, const PartitionChoice& partition, const PlacementChoice& placement,
                               int stages_per_device);

// The same four on words (PlanSpec): each word read by parse_partition_choice / parse_placement_choice
// (a word that names nothing is refused there), then the typed function.
Result<int> placement_stage_count(const PlanSpec& plan, int devices);
Result<std::vector<int>> resolve_placement(const PlanSpec& plan, int devices);
Result<Partition> resolve_partition(const Spec& spec, const PlanSpec& plan);
Result<NamedPlan> resolve_plan(const Spec& spec, const PlanSpec& plan);

// The plan a published baseline runs (synth/baselines/baselines.h) with `partition` cut over its
// shape (stages_per_device: 0 for the schedule's default): a method over the baseline's stage count,
// or a layout whose stage count per device the baseline runs (a V-shaped baseline places the layout's
// stages in a V, and says so in `notes`).
Result<NamedPlan> baseline_plan(const Spec& spec, BaselineKind kind, const PartitionChoice& partition,
                                int stages_per_device);

}  // namespace ps
