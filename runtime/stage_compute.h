// stage_compute.h — F, I and W of the executable model's stages on one device, with the
// per-(stage, microbatch) buffers the schedule semantics talk about.
//
// Guarantees:
//  * F(s,m) keeps exactly the tensors its backward needs ("activation"); I(s,m) drops everything
//    but what W needs ("stash") and adds the gradients W needs; W(s,m) drops the stash. B = I then W.
//    held_bytes() is the footprint of those buffers (each storage counted once), so it follows the
//    memory rule of ir/schedule.h with this model's real sizes (runtime/memory_rule.h predicts it).
//  * I and W are separate computations: I produces the input gradient only, W the weight gradients only.
//  * W(s,m) writes its weight gradients into buffers of its own (one set per microbatch); the
//    per-stage gradient is their sum in microbatch order 0..M-1, so it does not depend on the order in
//    which a schedule runs the W ops.
//  * Recomputation: F(s,m) with `drop` set keeps only its input message (none for a stage that starts
//    with the embedding: its token ids and targets go back to the prefetched data) and drops the
//    rest; R(s,m) runs the same forward again from that input, rebuilding exactly the tensors F would
//    have kept (the ops are deterministic, so the gradients are bit-identical), and drops the kept
//    input. The executable model has no attention cores, so a stage with selective recomputation
//    runs R like full. recompute_kept_bytes predicts what F keeps.
//  * Misuse (F twice, I before F, W before I, R without a dropping F, missing input) returns a
//    kRuntime Status; no crash.
#pragma once

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "runtime/exec_model.h"
#include "runtime/ops.h"

namespace ps::rt {

class StageCompute {
 public:
  StageCompute(const ExecModel& model, Ops& ops) : model_(model), ops_(ops) {}

  // Allocates and initialises the parameters of `stage` (deterministic, see exec_model.h) and
  // uploads its microbatch data (token ids for an embedding, targets for a head).
  Status add_stage(int stage);
  bool has_stage(int stage) const { return params_.count(stage) > 0; }

  // F(s,m). `input` is empty for stage 0 (token ids are generated from m), else the message from
  // stage s-1: the activation [tokens × d_model], followed by the carries (L, t) [2 × tokens] when the
  // boundary falls inside a vocabulary-sharded head (ExecModel::boundary_count). Returns the output
  // message (empty for the last stage).
  Result<Tensor> forward(int stage, int mb, Tensor input, bool drop = false);
  // R(s,m): recomputes what a dropping F(s,m) dropped.
  Status recompute(int stage, int mb);
  // I(s,m). `grad_output` is empty for the last stage, else d loss / d output message (same layout:
  // [dx | dL | dt] inside a sharded head). Returns the input gradient (empty for stage 0).
  Result<Tensor> backward_input(int stage, int mb, Tensor grad_output);
  // W(s,m).
  Status backward_weight(int stage, int mb);

  // Bytes held by the activations and stashes of all live (stage, microbatch) slots.
  size_t held_bytes() const;
  // Adds the storages of live slots to `seen` (to count buffers shared with other holders once).
  void collect_storages(std::set<const Storage*>& seen, size_t& bytes) const;
  // Live slots as "F(2,3)" / "I(2,3)" (what ran last on them); empty when drained.
  std::vector<std::string> live_slots() const;

  // Per parameter of `stage` (order of ExecModel::stage_params): the gradient summed over
  // microbatches 0..M-1 in that order. Error if some microbatch has no W yet.
  Result<std::vector<std::vector<float>>> gradients(int stage);
  // Loss of microbatch m (mean over its tokens); needs F(last, m) to have run here.
  Result<double> loss(int mb);
  // Current parameter values of `stage` (for tests and the profiler).
  std::vector<std::vector<float>> parameters(int stage);
  // Overwrites one parameter of `stage` (index in stage_params order; size must match).
  Status set_parameter(int stage, int index, const std::vector<float>& values);

 private:
  enum class Phase { kForward, kInput, kDropped };
  struct Slot {
    Phase phase = Phase::kForward;
    std::vector<std::vector<Tensor>> blocks;  // per block: saved tensors (after F) or stash (after I)
  };
  using Key = std::pair<int, int>;  // (stage, microbatch)

  Status check_stage(int stage, const char* op, int mb) const;

  const ExecModel& model_;
  Ops& ops_;
  std::map<int, std::vector<Tensor>> params_;          // stage → parameters in stage_params order
  std::map<Key, Slot> slots_;
  std::map<Key, std::vector<Tensor>> mb_grads_;        // (stage, mb) → weight gradients
  std::map<int, Tensor> losses_;                       // mb → per-token loss
  // Token ids / targets of every microbatch, uploaded by add_stage (like a prefetching data loader)
  // so that no op has to wait for a host transfer; F moves them into its slot.
  std::map<Key, Tensor> tokens_, targets_;
};

}  // namespace ps::rt
