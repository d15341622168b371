// schedule.h — the schedule IR.
//
// SEMANTICS (normative; docs/schedule-format.md repeats it for users)
//
// A schedule is a Problem (stages with their costs, stage → device placement, microbatch count,
// memory and links) plus, for every device, a *program*: the ordered list of ops that device runs.
//
// Ops. For stage s and microbatch m:
//   F(s,m)  forward.                        Needs the output of F(s-1,m) (s > 0).
//   I(s,m)  backward for inputs.            Needs F(s,m) and, unless s is last, I/B(s+1,m).
//   W(s,m)  backward for weights.           Needs I(s,m).
//   B(s,m)  fused backward = I then W.      Same inputs as I(s,m). Takes the stage's fused_bwd_ms
//                                           when it has one (a fused backward can cost less than
//                                           its I + W), else I + W.
//   R(s,m)  recomputation of F(s,m).        Only on a stage that recomputes (StageSpec::recompute
//                                           is selective or full); runs after F(s,m) and before
//                                           I/B(s,m), on the stage's device.
// A (stage, microbatch) uses either B, or both I and W — never a mix. A recomputing stage has
// exactly one R per microbatch; any other stage has none.
//   REDUCE_GRAD(s)  the data-parallel step of stage s: its gradients, summed over its microbatches,
//                   reduced over the stage's data-parallel group (reduce-scatter with a distributed
//                   optimizer, all-reduce when replicated; ir/mesh.h prices it). Only on a stage with a
//                   data-parallel step (StageSpec::reduces_grad), exactly once, after every backward (B or
//                   W) of s in its device's program. It has no microbatch: written "2REDUCE_GRAD".
//                   The optimizer step follows it.
//   UNSHARD(s)      FSDP's parameter gather of stage s (its stage has StageSpec::fsdp): exactly once,
//                   before every compute op of s in its device's program. Allocates unsharded_mb(s)
//                   (the gathered weights and full gradients) and takes unshard_ms(s).
//   RESHARD(s)      frees them: exactly once, after every backward of s and after REDUCE_GRAD(s).
//                   Written "2UNSHARD", "2RESHARD".
// Communication, when stage s and s+1 sit on different devices:
//   SEND_F(s,m) on device(s) sends F(s,m)'s output;   RECV_F(s+1,m) on device(s+1) receives it.
//   SEND_B(s,m) on device(s) sends I/B(s,m)'s input-gradient; RECV_B(s-1,m) on device(s-1) receives it.
// Text form is PyTorch's action syntax: STAGE TYPE MICROBATCH, e.g. "3F1", "0SEND_B2", "2RECV_F0",
// "3R1" (R is pipesmith's; PyTorch's CSV has no such action), and STAGE TYPE for "2REDUCE_GRAD".
//
// Time. Each device has one compute stream and one comm stream. Compute ops (F, R, I, W, B; R takes
// the stage's recompute_ms; every compute op also takes the problem's op_overhead_ms) run one at a
// time in program order; a compute op starts when the
// previous compute op on its device has ended and the tensors it needs are there (local producers
// have ended, received tensors have arrived). Comm ops run in program order on the comm stream; a
// SEND is ready when its producing compute has ended. Under
// *rendezvous* semantics a SEND/RECV pair transfers only when both sides have reached it on their comm
// streams: it starts at the later of the two and takes latency + bytes / bandwidth; both complete then.
// *grouped*: consecutive comm ops between two computes form a group issued together (like an NCCL group
// or batch_isend_irecv); the next group starts when the whole group has completed. *buffered*: a SEND
// completes as soon as it is issued (the transfer proceeds in the background); a RECV completes when
// the data has arrived. *posted* (PyTorch's pipelining runtime): SEND and RECV are posted without
// holding the comm stream; a RECV completes when its data has arrived, and the compute op consuming it
// waits for that.
//
// Data-parallel ops (REDUCE_GRAD, UNSHARD, RESHARD) run in program order on the device's
// data-parallel stream (the data-parallel group's communicator, apart from the pipeline's
// point-to-point stream): one starts when the previous one on that stream has ended and, for
// REDUCE_GRAD and RESHARD, the last backward of its stage has ended, for UNSHARD the compute op
// before it in the program (it is issued there); it takes the stage's reduce_grad_ms, unshard_ms or
// nothing. A compute op of an FSDP stage waits for its UNSHARD; nothing else waits for the stream.
// The iteration ends when the last op of any stream ends, so a reduction that starts late is exposed
// at the end. A schedule without data-parallel ops gets them by one rule (ir/dp_ops.h).
//
// Memory. Each device holds the model states of its stages (params_m * bytes_per_param MB) for the
// whole iteration (an FSDP stage's sharded part; its UNSHARD adds unsharded_mb until its RESHARD).
// F(s,m) allocates activation_mb(s); I(s,m) frees all but wgrad_stash_mb(s); W(s,m)
// frees the stash; B(s,m) frees all. On a recomputing stage F(s,m) allocates only
// recompute_kept_mb(s) (the rest is dropped when F ends) and R(s,m) allocates activation_mb(s) −
// recompute_kept_mb(s), so from R to I/B the whole activation is live and I, W, B free as above.
// Memory changes in compute program order, so a device's peak is a property of its program, not of
// timing. Comm buffers are not counted separately (the activation of a stage includes its input).
//
// Compute-only schedules (no SEND/RECV) get comms inserted by one rule (ir/comm_insert.h), shared by
// the checker and the runtime.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ids.h"
#include "ir/problem.h"
#include "ir/status.h"

namespace ps {

enum class OpType : unsigned char { F, I, W, B, SEND_F, RECV_F, SEND_B, RECV_B, R, REDUCE_GRAD, UNSHARD, RESHARD };
// Number of op types (dense tables over type × stage × microbatch use it).
inline constexpr int kNumOpTypes = 12;

inline bool is_compute(OpType t) {
  return t == OpType::F || t == OpType::I || t == OpType::W || t == OpType::B || t == OpType::R;
}
inline bool is_send(OpType t) { return t == OpType::SEND_F || t == OpType::SEND_B; }
inline bool is_recv(OpType t) { return t == OpType::RECV_F || t == OpType::RECV_B; }
// A point-to-point op of the pipeline (SEND/RECV).
inline bool is_comm(OpType t) { return is_send(t) || is_recv(t); }
// An op of the data-parallel stream (REDUCE_GRAD, UNSHARD, RESHARD): one per stage, no microbatch
// (Action::mb is 0).
inline bool is_data_parallel(OpType t) {
  return t == OpType::REDUCE_GRAD || t == OpType::UNSHARD || t == OpType::RESHARD;
}
const char* op_type_name(OpType t);  // "F", "SEND_B", "R", "REDUCE_GRAD", ...

// The one op-duration rule: how long compute op `t` of stage `stage` takes, ms: the stage's F, I, W
// or R time, B's fused_bwd_ms when the stage has one (else I + W), each plus the problem's
// op_overhead_ms. Comm ops take no compute time (transfers are timed by the link model, ir/problem.h).
inline double compute_ms(const Problem& p, StageId stage, OpType t) {
  const StageSpec& st = at(p.stages, stage);
  switch (t) {
    case OpType::F: return st.fwd_ms + p.op_overhead_ms;
    case OpType::I: return st.bwd_input_ms + p.op_overhead_ms;
    case OpType::W: return st.bwd_weight_ms + p.op_overhead_ms;
    case OpType::B: return st.bwd_ms() + p.op_overhead_ms;
    case OpType::R: return st.recompute_ms + p.op_overhead_ms;
    default: return 0.0;
  }
}
// How long data-parallel op `t` of stage `stage` takes on its stream, ms (0 for any other op).
inline double data_parallel_ms(const Problem& p, StageId stage, OpType t) {
  if (t == OpType::REDUCE_GRAD) return at(p.stages, stage).reduce_grad_ms;
  return t == OpType::UNSHARD ? at(p.stages, stage).unshard_ms : 0.0;
}

struct Action {
  OpType type = OpType::F;
  StageId stage{0};    // 3
  MicrobatchId mb{0};  // 1
  SourceLoc loc;  // where it was read from (not part of equality)
  bool overlap_next = false;  // this compute op and the next one form a PyTorch OVERLAP_F_B cell
                              // (run as its sub-actions in order; not part of equality)

  bool operator==(const Action& o) const { return type == o.type && stage == o.stage && mb == o.mb; }
};

// "3F1", "0SEND_B2", "2REDUCE_GRAD", "2UNSHARD".
std::string to_string(const Action& a);
// The action a comm op's partner would be ("1RECV_F3" for "0SEND_F3"), even if it cannot exist;
// a compute op itself.
Action partner_action(const Action& a);
// Parses one action, matching the whole text (rejects "2BW0", "F1", "3F"). `loc` is attached to the
// result and used in errors.
Result<Action> parse_action(std::string_view text, const SourceLoc& loc = {});
// PyTorch's overlapped cell "(A;B)OVERLAP_F_B" (two or more compute sub-actions, blanks around each
// allowed): true if `text` is written as one (starts with '(' or mentions OVERLAP_F_B).
bool looks_like_overlap(std::string_view text);
// Parses it into its sub-actions, in order, each but the last with overlap_next set. `loc_at(k)`
// gives the location of byte k of `text` (errors point at the sub-action).
Result<std::vector<Action>> parse_overlap(std::string_view text,
                                          const std::function<SourceLoc(size_t)>& loc_at);
// "(0F1;1B0)OVERLAP_F_B" for ops[first..last] (last > first); to_string(op) when first == last.
std::string overlap_text(const std::vector<Action>& ops, size_t first, size_t last);

// The certificate written by the checker (verify/certificate.h fills it). Figures are recomputed by
// the checker on read; `extra` holds what the synthesizer adds (optimal, solver status, seed, ...).
struct Certificate {
  std::string verdict;                 // "valid"
  std::string semantics;               // "rendezvous"
  double makespan_ms = 0;
  double lower_bound_ms = 0;
  double bubble_ratio = 0;
  std::vector<double> peak_memory_gb;  // per device
  std::string digest;                  // "sha256:<hex>" of the canonical schedule
  std::map<std::string, std::string> extra;  // "optimal": "true", "z3_version": "4.8.12", ...
  SourceLoc loc;                             // the `certificate:` key
  // Where each field's value was read: "makespan_ms", "extra.bound_proven_ms", ... (not a claim;
  // empty for a certificate built in memory).
  std::map<std::string, SourceLoc> field_loc;
};

// Optional predicted times per op (same shape as Schedule::programs).
struct OpTime {
  double start_ms = 0;
  double end_ms = 0;
};

struct Schedule {
  Problem problem;
  std::vector<std::vector<Action>> programs;  // programs[d] = ordered ops of device d
  std::optional<Certificate> certificate;
  std::vector<std::vector<OpTime>> predicted;  // empty, or same shape as programs
  std::string source;                          // file it came from (for messages)
  std::string generator;                       // "pipesmith baseline 1f1b", "pytorch-csv", ...
  // Per stage, where its `layers` value (or, without one, its entry) was read; empty when the
  // stages were not read from a YAML file.
  std::vector<SourceLoc> stage_loc;

  int num_devices() const { return static_cast<int>(programs.size()); }
  bool has_comms() const;  // any SEND/RECV in any program
  size_t num_ops() const;
};

}  // namespace ps
