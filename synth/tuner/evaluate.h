// evaluate.h — one point of the tuner's search space and how it is scored.
//
// A Candidate is a partition (cut points), a placement (stage → device) and a way to order the ops:
// four screening list-scheduling policies (policy_set 0, the inner loop's fast score), the lean
// portfolio (policy_set 1: the heuristic portfolio without W-eager and lowest-stage-first policies,
// one random restart, plus an extended portfolio), the whole portfolio (policy_set 2: the heuristic
// portfolio with 32 random restarts, plus the extended one), or a published baseline's own order.
// evaluate_candidate() builds the Problem and its op DAG with the per-device memory cap, orders the
// ops and times the order on that DAG (eval_dag_options says how transfers are modelled). It also
// measures the timeline the way OctoPipe's tuner reads it: per device, busy time, boundary idle
// (before its first op and after its last op: warm-up and cool-down) and residual idle (gaps in
// between).
// Guarantees: pure function of (spec, candidate) — thread-safe and deterministic; an infeasible
// candidate (memory) comes back with feasible = false and, per device, by how much the smallest
// possible footprint (model states + one microbatch of every stage's activations) exceeds the cap.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/status.h"
#include "synth/dag/op_dag.h"

namespace ps::tuner_detail {

enum class MoveKind : unsigned char { kSeed, kBaseline, kPartition, kPlacement, kSchedule, kKick, kMemory, kRecompute, kBackward };
const char* move_kind_name(MoveKind k);

struct Candidate {
  std::vector<int> cuts;       // S+1 entries: stage s = layers [cuts[s], cuts[s+1]); cuts[0] = 0
  std::vector<int> placement;  // S entries, stage → device
  int policy_set = 0;          // 0: screening policies; 1: lean portfolio; 2: whole portfolio
  int baseline = -1;           // BaselineKind as int: that baseline's order; -1: heuristic
  std::vector<RecomputeMode> recompute;  // per stage; empty: no stage recomputes
  // Per stage, 1: the stage runs its fused backward B, not I and W, although it could split (chosen
  // where B is cheaper than I + W: StageSpec::split_backward = false). Empty: every stage that can
  // split does.
  std::vector<char> fused;
  MoveKind kind = MoveKind::kSeed;
  std::string origin;          // "seed balanced S=16 looped", "shift layer 12 to stage 3", ...

  int stages() const { return static_cast<int>(placement.size()); }
  Partition partition() const;
  // Stable identity for the history set and for tie-breaking: cuts, placement, policy set, order,
  // the recompute modes when some stage recomputes, and the fused stages when some stage is.
  std::string key() const;
};

Candidate make_candidate(const Partition& p, std::vector<int> placement, MoveKind kind, std::string origin);

// Renames devices in order of first use (stage 0 on device 0, ...). On one node with identical
// devices and links, this maps equivalent placements to one representative.
std::vector<int> canonical_placement(const std::vector<int>& placement);

struct Evaluation {
  bool feasible = false;
  std::string why;  // infeasible or failed: the reason
  double makespan_ms = std::numeric_limits<double>::infinity();
  std::string policy;           // winning list policy, or the baseline's name
  TimedOrder order;             // on build_op_dag(dag_problem(...), eval_dag_options(candidate))
  bool order_on_full_dag = true;
  bool fused_backward = false;  // the order uses B on every stage (1F1B, interleaved 1F1B)
  std::vector<double> load_ms;           // per device: F+I+W of its stages, one microbatch
  std::vector<double> state_mb;          // per device: model states
  std::vector<double> min_footprint_mb;  // per device: states + one microbatch of every stage
  std::vector<double> busy_ms, boundary_idle_ms, residual_idle_ms;  // per device, on the timeline
  double excess_mb = 0;                  // max over devices of min_footprint − cap (> 0: infeasible)
  // Per device, under a cap: the order's peak leaves no room for one more microbatch of the
  // device's largest stage activation (F's allocation). Recomputation moves look only there.
  std::vector<char> memory_tight;
  double seconds = 0;                    // wall time of this evaluation (statistics only)
  bool stopped = false;                  // `stop` cut it short: not an evaluation, discard it
  int64_t ops = 0;                       // default_dag_ops of its problem
};

// The problem of a candidate: make_problem(spec, partition, placement) with its recompute modes and
// split_backward = false on its fused stages.
Result<Problem> candidate_problem(const Spec& spec, const Candidate& c);
// The problem a candidate's order refers to: candidate_problem, with split_backward = false on every
// stage when fused_backward (baselines that run B, not I + W).
Result<Problem> dag_problem(const Spec& spec, const Candidate& c, bool fused_backward);

// The DAG options a candidate is evaluated with. The screening policies (policy set 0) time
// transfers as plain delays on the data edges (DagOptions::comm_streams = false: 2-5x fewer ops
// and a much faster list scheduler; with NVLink-class links the makespans agree); the full
// portfolio and the baselines use the default DAG, whose comm-stream transfer ops model the
// checker's rendezvous semantics exactly. On a cluster of several nodes (p.devices_per_node < P)
// every candidate uses the default DAG: transfers on the slow inter-node link queue.
DagOptions eval_dag_options(const Candidate& c, const Problem& p);

// The order of an evaluated candidate on the DEFAULT op DAG `to` of its problem (same problem as
// `from`, the DAG the order was made on): compute ops matched by (type, stage, microbatch), each
// device's sequence kept, transfers on the comm streams first come first served. `on_full_dag`
// tells whether the order respects every edge of `to` (else it was timed on data edges only).
Result<TimedOrder> retime_on(const OpDag& from, const TimedOrder& order, const OpDag& to, bool* on_full_dag);

// Buffers one thread reuses from one evaluation to the next (the op DAG's lists: building them anew
// for every candidate cost a fifth of the search). Holds nothing an evaluation reads.
struct EvalScratch {
  OpDag dag;
};

// `spec` already carries the devices, microbatches and memory cap the tuner works with. `stop` is
// checked before each list-scheduling policy; once it returns true the evaluation ends with
// `stopped` set (on plans of 10^5+ ops one evaluation takes seconds: a deadline must not wait for it).
// `scratch` (optional; one per thread) only saves allocations: the evaluation is the same without it.
Evaluation evaluate_candidate(const Spec& spec, const Candidate& c, const std::function<bool()>& stop = {},
                              EvalScratch* scratch = nullptr);

}  // namespace ps::tuner_detail
