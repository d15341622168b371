// op_dag.h — the op DAG of a Problem: what every scheduler in synth/ works on.
//
// Guarantees:
//  * One node per compute op: F(s,m), R(s,m) on a stage that recomputes (StageSpec::recompute), and
//    either I(s,m)+W(s,m) or the fused B(s,m) (when the stage cannot split its backward). Ids are
//    dense and deterministic (stage-major, then microbatch: F, R, I, W). R(s,m) follows F(s,m) and
//    precedes I/B(s,m) (data edges); on a recomputing stage F allocates the kept part of the
//    activation and R the rest, so from R to I/B the whole activation is live (ir/schedule.h).
//  * Resources: compute op on device d uses resource d. With comm_streams (the default), every
//    cross-device boundary crossing is a transfer op (type SEND_F for F(s,m)'s output, stored at stage
//    s; SEND_B for I/B(s,m)'s input gradient, stored at stage s) that lasts the link time of
//    Problem::boundary_transfer_ms and occupies the comm streams of both devices (resources P + d
//    and P + peer) — exactly ir/schedule.h's two-stream model under rendezvous semantics, so the
//    checker's simulation of a schedule written with the order's comms equals its timing here.
//    Without comm_streams, the link time is a plain delay on the data edge (transfers never queue).
//  * Edges "u -> v, delay" mean start(v) >= start(u) + dur(u) + delay. Symmetry edges
//    (optional, delay 0) put the microbatches of one (stage, kind) in order: no optimum is lost
//    because microbatches are interchangeable (same costs, same memory). Memory edges (optional) are
//    precedences implied by the memory cap under that symmetry (see add_memory_edges).
//  * Time is integer: every duration and delay is a multiple of `ms_per_unit`. When the inputs are
//    not exactly representable (time_exact == false) durations and delays are rounded DOWN, so the
//    integer model is a relaxation and bounds proven on it stay valid lower bounds in ms.
//  * Memory is integer too (mem units of `mb_per_mem_unit`). When the numbers are not whole units
//    (mem_exact == false) they are rounded one of two ways (DagOptions::memory_rounding):
//      - kSafe (the default, for orders): allocations round up, frees down and caps shrink by one
//        unit per op, so an order that fits the integer caps fits the exact ones; a bound proven on
//        such a DAG (its memory edges, the destructive bound, a Z3 UNSAT) is only a bound for a
//        stricter problem.
//      - kRelaxed (for proofs): activations and stashes round down, the cap (less the model
//        states) rounds up to whole units and does not shrink, so every microbatch holds at most
//        its exact memory at every step and every order that fits the exact caps fits the integer
//        ones: bounds proven on it hold under the exact numbers. Its orders may overrun the exact
//        caps: time them on the kSafe DAG (same op ids, same time units) before using them.
//    bounds_are_proofs() says which case a DAG is in.
//  * head[i] (earliest start) and tail[i] (longest path from the end of i to the end of everything)
//    are longest paths over all edges present.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/status.h"

namespace ps {

struct DagOp {
  OpType type = OpType::F;  // F, R, I, W or B; SEND_F / SEND_B for a transfer
  int stage = 0;
  int mb = 0;
  int device = 0;           // compute: its device; transfer: the sender
  int peer = -1;            // transfer: the receiver; -1 for compute ops
  int64_t dur = 0;        // time units
  int64_t alloc_mem = 0;  // mem units allocated when the op runs (F and R only)
  int64_t free_mem = 0;   // mem units freed when it runs (I: act - stash, W: stash, B: act)

  bool is_transfer() const { return peer >= 0; }
};

enum class EdgeKind : unsigned char { kData, kSymmetry, kMemory };

// 16 bytes: the list scheduler walks these lists once per op placed.
struct DagEdge {
  int op = 0;         // the other end (successor in succ, predecessor in pred)
  EdgeKind kind = EdgeKind::kData;
  int64_t delay = 0;  // time units between the end of the predecessor and the start of the successor
};

// How memory numbers that are not whole units are rounded (see the header comment).
enum class MemoryRounding : unsigned char { kSafe, kRelaxed };

struct DagOptions {
  bool symmetry = true;      // microbatches in order per (stage, kind)
  bool memory_edges = true;  // add the precedences implied by the memory cap
  bool comm_streams = true;  // transfers as ops on the devices' comm streams (see above)
  MemoryRounding memory_rounding = MemoryRounding::kSafe;
};

struct OpDag {
  int devices = 0;
  int stages = 0;
  int microbatches = 0;
  double ms_per_unit = 1;      // one time unit in ms
  bool time_exact = true;      // durations/delays are exact multiples of ms_per_unit
  double mb_per_mem_unit = 1;  // one memory unit in MB
  bool mem_exact = true;
  MemoryRounding memory_rounding = MemoryRounding::kSafe;  // how inexact memory was rounded

  bool comm_streams = true;
  // Per stage: its data-parallel step (REDUCE_GRAD, ir/dp_ops.h) in units; 0 when it has none.
  std::vector<int64_t> reduce_dur;

  std::vector<DagOp> ops;
  std::vector<std::vector<DagEdge>> succ, pred;
  std::vector<std::vector<int>> device_ops;    // compute op ids of each device, ascending
  std::vector<std::vector<int>> resource_ops;  // per resource (devices, then comm streams), ascending
  // The successor lists in one array: succ[u] is succ_flat[succ_begin[u] .. succ_begin[u + 1]).
  // Built by recompute_paths(), cleared by add_edge() (code that edits succ in place rebuilds it
  // with recompute_paths(), as it must for topo, head and tail).
  std::vector<int> succ_begin;
  std::vector<DagEdge> succ_flat;
  // succ[u], read from the one array where it is built (the list scheduler, evaluate_order and
  // justification walk successors so, one op after another in no order of ids).
  std::span<const DagEdge> successors(int u) const {
    if (succ_begin.size() == ops.size() + 1)
      return {succ_flat.data() + succ_begin[u], succ_flat.data() + succ_begin[u + 1]};
    return succ[u];
  }
  std::vector<int> topo;                     // a topological order (deterministic)
  std::vector<int64_t> head, tail;           // longest paths (units)

  // Memory per device in mem units: model states, and the cap left for activations and stashes.
  bool mem_limited = false;        // false: no cap (cap_mem unused)
  std::vector<int64_t> state_mem;
  std::vector<int64_t> cap_mem;  // cap minus model states (negative: infeasible)
  bool memory_limited() const { return mem_limited; }
  // True when a lower bound proven on this DAG (memory edges, destructive bound, Z3 UNSAT under
  // its caps) holds under the problem's exact memory numbers: no cap, exact units, or kRelaxed.
  bool bounds_are_proofs() const {
    return !mem_limited || mem_exact || memory_rounding == MemoryRounding::kRelaxed;
  }

  // Op ids; -1 when absent (W of a fused stage, I of a fused stage returns the B).
  int f_op(int stage, int mb) const { return f_id_[stage * microbatches + mb]; }
  int bwd_op(int stage, int mb) const { return b_id_[stage * microbatches + mb]; }  // I or B
  int w_op(int stage, int mb) const { return w_id_[stage * microbatches + mb]; }
  int r_op(int stage, int mb) const { return r_id_[stage * microbatches + mb]; }  // -1: no recomputation
  // Ops that allocate memory when they run: F, and R on a recomputing stage.
  static bool allocates(OpType t) { return t == OpType::F || t == OpType::R; }
  // Transfer ops (-1 when the boundary stays on one device or comm_streams is off):
  // F(s,m)'s output to stage s+1, and I/B(s,m)'s input gradient to stage s-1.
  int send_f_op(int stage, int mb) const { return xf_id_[stage * microbatches + mb]; }
  int send_b_op(int stage, int mb) const { return xb_id_[stage * microbatches + mb]; }

  // devices (+ one comm stream per device with comm_streams).
  int num_resources() const { return comm_streams ? 2 * devices : devices; }
  // The resources an op occupies: returns how many (1 or 2) and writes them to r.
  int resources_of(int op, int r[2]) const;

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
  std::vector<int> f_id_, b_id_, w_id_, r_id_, xf_id_, xb_id_;
};

// Builds the DAG of `problem` (placement, costs, memory cap problem.memory_gb; 0 = unlimited).
// Errors: empty problem, negative costs (kBadInput); a cap that memory edges prove unreachable
// (kInfeasible, message names the device; infeasible.h gives the full explanation).
Result<OpDag> build_op_dag(const Problem& problem, const DagOptions& options = {});
// The same DAG built into `dag`, which it replaces whole, keeping the capacity of its buffers: a
// caller that builds many DAGs one after another (the tuner, one per candidate) reuses one OpDag and
// allocates little beyond the first. On an error `dag` holds no usable DAG.
Status rebuild_op_dag(OpDag& dag, const Problem& problem, const DagOptions& options = {});

// The ops build_op_dag(problem) would make with comm streams, without building it: F, I and W (or
// B) of every stage and microbatch, R where the stage recomputes, and a transfer each way across
// every boundary between devices.
int64_t default_dag_ops(const Problem& problem);

// Adds the precedences the memory cap implies when microbatches run in order per (stage, kind):
// before F(s,m) allocates, the live memory of stage s and of the stages of its device upstream of it
// (which cannot free a microbatch before stage s has run its I) must fit, which forces I(s, r-1)
// (and, through the stash, W(s, w-1)) to come first. Returns kInfeasible on a cycle.
Status add_memory_edges(OpDag& dag);

// A per-resource order of the ops with its earliest-start times: what schedulers produce and
// compare.
struct TimedOrder {
  std::vector<std::vector<int>> order;  // order[r] = op ids of resource r in run order (devices first)
  std::vector<int64_t> start;           // per op id, units
  int64_t makespan = 0;                 // units: max over ops of start + dur (first op at >= 0)
  std::vector<int64_t> peak_mem;        // per device: peak of activations + stashes (mem units)
};

// Earliest-start timing of a given order: each op starts when the previous op of each of its
// resources has ended and every predecessor (edges of the kinds allowed by `edges`) has ended plus
// its delay. `order` has one entry per resource, or one per device only: then the comm streams run
// their transfers first come, first served (by earliest possible start; ties by op id). Fails
// (kInvalidSchedule) if an op is missing, duplicated, on the wrong resource, or the order
// contradicts the edges (a wait cycle); fails (kInfeasible) if check_memory and a device's peak
// exceeds its cap.
// When the data-parallel streams end for ops started at `start` (units; 0 without data-parallel
// steps): per device, its stages' REDUCE_GRADs in the order their last backwards end (the rule of
// ir/dp_ops.h), each after that backward and the previous reduction. evaluate_order and the list
// scheduler fold it into the makespan, so the search weighs an exposed reduction as the checker does.
int64_t data_parallel_end(const OpDag& dag, const std::vector<int64_t>& start);

enum class EdgeSet : unsigned char { kAll, kDataOnly };
Result<TimedOrder> evaluate_order(const OpDag& dag, std::vector<std::vector<int>> order,
                                  EdgeSet edges = EdgeSet::kAll, bool check_memory = true);

// Transitive closure of the DAG: reaches(a, b) == there is a path a -> b (n² bits). Its users
// (the Z3 encoding, the destructive bound's pair search) only build it where `affordable(dag)`:
// beyond kMaxBytes (about 65,000 ops, e.g. 56 stages × 200 microbatches with their transfers) the
// table alone would take gigabytes and seconds to fill, and neither user could do anything useful
// with so many ops in a time limit anyway.
class DeviceReach {
 public:
  static constexpr size_t kMaxBytes = size_t{512} << 20;
  static size_t bytes_for(int ops) {
    const size_t words = (static_cast<size_t>(ops) + 63) / 64;
    return static_cast<size_t>(ops) * words * sizeof(uint64_t);
  }
  static bool affordable(int64_t ops) { return bytes_for(static_cast<int>(std::min<int64_t>(ops, 1 << 30))) <= kMaxBytes; }
  static bool affordable(const OpDag& dag) { return affordable(dag.num_ops()); }

  explicit DeviceReach(const OpDag& dag);
  bool reaches(int a, int b) const {
    return (bits_[static_cast<size_t>(a) * words_ + b / 64] >> (b % 64)) & 1;
  }

 private:
  size_t words_ = 0;  // 64-bit words per row
  std::vector<uint64_t> bits_;
};

}  // namespace ps
