// problem.h — a pipeline problem at stage granularity: what a schedule is checked against.
//
// A Problem is self-contained (a schedule file embeds it): per-stage costs and memory, the
// stage → device placement, device count, microbatches, per-device memory and the link model.
// Stage s feeds stage s+1 (the stage graph is a chain). Tensors that skip stages in a DAG model are
// carried through the intermediate stages, so their bytes are added to each boundary they cross.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ids.h"
#include "ir/model.h"
#include "ir/recompute.h"
#include "ir/status.h"

namespace ps {

// Activation recomputation of a stage (docs/inputs.md, "Recomputation"):
//   none       F keeps its whole activation until the backward.
//   selective  F drops the attention cores' quadratic activations; R recomputes those cores.
//   full       F keeps only the layers' inputs; R recomputes the whole forward.

// A contiguous range of layers [first_layer, last_layer] with its aggregated costs.
struct StageSpec {
  int first_layer = -1;          // -1: unknown (e.g. a PyTorch CSV without a model)
  int last_layer = -1;
  int device = 0;                // placement
  double fwd_ms = 0;             // F time
  double bwd_input_ms = 0;       // I time
  double bwd_weight_ms = 0;      // W time
  std::optional<double> fused_bwd_ms;  // 11.2: B time when measured apart (layers' backward_ms);
                                       // none: B takes bwd_input_ms + bwd_weight_ms
  double activation_mb = 0;      // allocated by F, per microbatch
  double wgrad_stash_mb = 0;     // kept by I until W
  double output_mb = 0;          // sent to stage s+1 (and the gradient back from it)
  double params_m = 0;           // millions of parameters
  bool split_backward = true;    // false: only fused B is allowed
  RecomputeMode recompute = RecomputeMode::kNone;  // kNone: no R ops; the two fields below unused
  double recompute_ms = 0;       // R time (recomputing: its share of the forward again)
  double recompute_kept_mb = 0;  // kept by F when recomputing (<= activation_mb); R allocates the rest
  bool reduces_grad = false;     // true: the stage has a data-parallel step (one REDUCE_GRAD op)
  double reduce_grad_ms = 0;     // its data-parallel step (reduction, optimizer update, the distributed
                                 // optimizer's gather) on the device's data-parallel stream (0 when !reduces_grad)
  bool fsdp = false;             // true: FSDP shards the stage (one UNSHARD and one RESHARD op)
  double unshard_ms = 0;         // UNSHARD's time on the data-parallel stream (the gather)
  double unsharded_mb = 0;       // held from UNSHARD to RESHARD: gathered weights and full gradients

  double split_bwd_ms() const { return bwd_input_ms + bwd_weight_ms; }       // I + W
  double bwd_ms() const { return fused_bwd_ms ? *fused_bwd_ms : split_bwd_ms(); }  // B
  bool recomputes() const { return recompute != RecomputeMode::kNone; }
  // Memory F(s,m) allocates, MB: the kept part when the stage recomputes, else the whole activation.
  double fwd_alloc_mb() const { return recomputes() ? recompute_kept_mb : activation_mb; }
  // Memory R(s,m) allocates, MB (0 on a stage that does not recompute).
  double recompute_alloc_mb() const { return recomputes() ? activation_mb - recompute_kept_mb : 0.0; }
};

struct Problem {
  std::string name;               // model name
  int devices = 0;
  int microbatches = 0;
  double memory_gb = 0;           // per device; 0 = unlimited
  double bytes_per_param = 18;
  LinkModel link;
  int devices_per_node = 0;       // 0 = one node
  LinkModel inter_node_link;
  std::vector<StageSpec> stages;  // stage id = index
  bool unit_costs = false;        // true when costs are the F=I=W=1 defaults (CSV without model)
  double op_overhead_ms = 0;      // 0.4: added to every compute op's time (the runtime's own work per action)
  MeshThroughput mesh;            // the mesh's throughput inputs (ir/mesh.h); gpus 0: no mesh

  int num_stages() const { return static_cast<int>(stages.size()); }
  int device_of(StageId stage) const { return stages.at(stage.value()).device; }
  // Model-state memory of one stage, MB.
  double model_state_mb(StageId stage) const { return stages.at(stage.value()).params_m * bytes_per_param; }
  // The most model-state memory a stage holds at once, MB: its model states, plus on a stage FSDP
  // shards its gathered weights and gradients (held from UNSHARD to RESHARD). The search plans with it.
  double held_state_mb(StageId stage) const {
    const StageSpec& st = stages.at(stage.value());
    return model_state_mb(stage) + (st.fsdp ? st.unsharded_mb : 0.0);
  }
  // Transfer time between stage s and s+1 (either direction), ms. Zero on the same device.
  double boundary_transfer_ms(StageId stage) const;
  // The least time one microbatch's backward of stage s takes, overheads included: its B, or its I
  // and W when the stage splits and that is cheaper (lower bounds use it: a schedule picks either).
  double least_backward_ms(StageId stage) const;
};

// The limits (ir/limits.h) a problem read from a file must meet: its stages × microbatches within the
// plan-ops limit, and every sum over an iteration (F+I+W time, activations, model states, transfers)
// within limits::kMaxIterationTotal, so every derived figure is finite. stage_locs[s], when given, is
// where stage s was read.
Status check_limits(const Problem& p, const std::vector<SourceLoc>& stage_locs = {});

// A partition: stage → [first, last] layer range, contiguous and covering all layers in order.
struct LayerRange {
  int first = 0;
  int last = 0;
};
using Partition = std::vector<LayerRange>;

// Aggregates layer costs into stages. placement[s] is the device of stage s (size == partition size).
// Errors: ranges not contiguous/covering, placement out of range.
Result<Problem> make_problem(const Spec& spec, const Partition& partition,
                             const std::vector<int>& placement);

// Sets stage s's recomputation to modes[s] (modes.size() == the stage count), filling recompute_ms
// and recompute_kept_mb from the model's per-layer options summed over the stage's layers
// (LayerType::recompute_full / recompute_selective); kNone clears them. Errors: a size mismatch, a
// stage without a layer range.
Status set_recompute(const Spec& spec, Problem& problem, const std::vector<RecomputeMode>& modes);
// The same mode on every stage.
Status set_recompute_all(const Spec& spec, Problem& problem, RecomputeMode mode);
// The stages that recompute, by mode, as ranges: "full 0-3,7; selective 5"; "" when none does.
std::string recompute_ranges(const Problem& problem);
// The marked stages as ranges, "0-3,5" ("" when none is marked).
std::string stage_ranges(const std::vector<char>& marked);

// A problem with unit costs (F=I=W=1, B=2, comm 0, activation 1 MB, no model states): used for
// schedules that come without a model (PyTorch CSV).
Problem unit_problem(int devices, int microbatches, const std::vector<int>& placement);

}  // namespace ps
