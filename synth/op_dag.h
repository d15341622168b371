// op_dag.h — the op DAG of a Problem: what every scheduler in synth/ works on.
//
// Guarantees:
//  * One node per compute op: F(s,m), and either I(s,m)+W(s,m) or the fused B(s,m) (when the stage
//    cannot split its backward). Ids are dense and deterministic (stage-major, then microbatch).
//  * Edges "u -> v, delay" mean start(v) >= start(u) + dur(u) + delay. Data edges carry the link time
//    of Problem::boundary_transfer_ms on cross-device boundaries (0 on one device). Symmetry edges
//    (optional, delay 0) put the microbatches of one (stage, kind) in order: no optimum is lost
//    because microbatches are interchangeable (same costs, same memory). Memory edges (optional) are
//    precedences implied by the memory cap under that symmetry (see add_memory_edges).
//  * Time is integer: every duration and delay is a multiple of `ms_per_unit`. When the inputs are
//    not exactly representable (time_exact == false) durations and delays are rounded DOWN, so the
//    integer model is a relaxation and bounds proven on it stay valid lower bounds in ms.
//  * Memory is integer too (mem units of `mb_per_mem_unit`); when inexact, allocations round up,
//    frees round down and caps shrink by one unit per op: integer-feasible implies truly feasible.
//  * head[i] (earliest start) and tail[i] (longest path from the end of i to the end of everything)
//    are longest paths over all edges present.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/status.h"

namespace ps {

struct DagOp {
  OpType type = OpType::F;  // F, I, W or B
  int stage = 0;
  int mb = 0;
  int device = 0;
  int64_t dur = 0;        // time units
  int64_t alloc_mem = 0;  // mem units allocated when the op runs (F only)
  int64_t free_mem = 0;   // mem units freed when it runs (I: act - stash, W: stash, B: act)
};

enum class EdgeKind : unsigned char { kData, kSymmetry, kMemory };

struct DagEdge {
  int op = 0;         // the other end (successor in succ, predecessor in pred)
  int64_t delay = 0;  // time units between the end of the predecessor and the start of the successor
  EdgeKind kind = EdgeKind::kData;
};

struct DagOptions {
  bool symmetry = true;     // microbatches in order per (stage, kind)
  bool memory_edges = true; // add the precedences implied by the memory cap
};

struct OpDag {
  int devices = 0;
  int stages = 0;
  int microbatches = 0;
  double ms_per_unit = 1;      // one time unit in ms
  bool time_exact = true;      // durations/delays are exact multiples of ms_per_unit
  double mb_per_mem_unit = 1;  // one memory unit in MB
  bool mem_exact = true;

  std::vector<DagOp> ops;
  std::vector<std::vector<DagEdge>> succ, pred;
  std::vector<std::vector<int>> device_ops;  // op ids of each device, ascending
  std::vector<int> topo;                     // a topological order (deterministic)
  std::vector<int64_t> head, tail;           // longest paths (units)

  // Memory per device in mem units: model states, and the cap left for activations and stashes.
  bool mem_limited = false;        // false: no cap (cap_mem unused)
  std::vector<int64_t> state_mem;
  std::vector<int64_t> cap_mem;  // cap minus model states (negative: infeasible)
  bool memory_limited() const { return mem_limited; }

  // Op ids; -1 when absent (W of a fused stage, I of a fused stage returns the B).
  int f_op(int stage, int mb) const { return f_id_[stage * microbatches + mb]; }
  int bwd_op(int stage, int mb) const { return b_id_[stage * microbatches + mb]; }  // I or B
  int w_op(int stage, int mb) const { return w_id_[stage * microbatches + mb]; }

  int num_ops() const { return static_cast<int>(ops.size()); }
  int64_t to_units(double ms) const;  // rounded down
  double to_ms(int64_t units) const { return static_cast<double>(units) * ms_per_unit; }
  double mem_to_mb(int64_t units) const { return static_cast<double>(units) * mb_per_mem_unit; }
  // Total compute time of a device (units).
  int64_t device_work(int device) const;
  // max over ops of head + dur + tail: the longest path (units).
  int64_t critical_path() const;
  // "F(s2,m5)" for messages and Z3 names.
  std::string op_name(int op) const;

  // Adds an edge (kept unique per (from,to,kind)); callers must recompute_paths() afterwards.
  void add_edge(int from, int to, int64_t delay, EdgeKind kind);
  // Recomputes topo, head and tail. Fails (kInfeasible) if the edges form a cycle.
  Status recompute_paths();

  // internal: id tables
  std::vector<int> f_id_, b_id_, w_id_;
};

// Builds the DAG of `problem` (placement, costs, memory cap problem.memory_gb; 0 = unlimited).
// Errors: empty problem, negative costs (kBadInput); a cap that memory edges prove unreachable
// (kInfeasible, message names the device; infeasible.h gives the full explanation).
Result<OpDag> build_op_dag(const Problem& problem, const DagOptions& options = {});

// Adds the precedences the memory cap implies when microbatches run in order per (stage, kind):
// before F(s,m) allocates, the live memory of stage s and of the stages of its device upstream of it
// (which cannot free a microbatch before stage s has run its I) must fit, which forces I(s, r-1)
// (and, through the stash, W(s, w-1)) to come first. Returns kInfeasible on a cycle.
Status add_memory_edges(OpDag& dag);

// A per-device order of the ops with its earliest-start times: what schedulers produce and compare.
struct TimedOrder {
  std::vector<std::vector<int>> order;  // order[d] = op ids of device d in run order
  std::vector<int64_t> start;           // per op id, units
  int64_t makespan = 0;                 // units: max over ops of start + dur (first op at >= 0)
  std::vector<int64_t> peak_mem;        // per device: peak of activations + stashes (mem units)
};

// Earliest-start timing of a given order: each op starts when its device's previous op has ended and
// every predecessor (edges of the kinds allowed by `edge_kinds`) has ended plus its delay. Fails
// (kInvalidSchedule) if an op is missing, duplicated, on the wrong device, or the order contradicts
// the edges (a wait cycle); fails (kInfeasible) if check_memory and a device's peak exceeds its cap.
enum class EdgeSet : unsigned char { kAll, kDataOnly };
Result<TimedOrder> evaluate_order(const OpDag& dag, std::vector<std::vector<int>> order,
                                  EdgeSet edges = EdgeSet::kAll, bool check_memory = true);

// Transitive closure restricted to pairs on one device: reach(a, b) == there is a path a -> b.
class DeviceReach {
 public:
  explicit DeviceReach(const OpDag& dag);
  bool reaches(int a, int b) const;  // a and b on the same device

 private:
  std::vector<int> local_;              // op -> index on its device
  std::vector<int> words_;              // per device: 64-bit words per row
  std::vector<size_t> row_base_;        // op -> offset of its row
  std::vector<uint64_t> bits_;
};

}  // namespace ps
