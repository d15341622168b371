// encode.h — the Z3 encoding of "order the ops of every device under the memory caps".
//
// Guarantees (what the solver sees; docs/synth.md gives the derivations):
//  * One Int start[...] per op (named "start[F,s2,mb5]") and one Int "C" (makespan), in time units.
//  * Every DAG edge u -> v:   start[v] - start[u] >= dur[u] + delay   (data, symmetry, memory edges).
//  * Windows: start[i] >= head[i] and start[i] + dur[i] + tail[i] <= C.
//  * No-overlap: for every pair (a, b) on one resource (a device, or a comm stream: transfers
//    occupy the streams of both ends) that the DAG does not already order, the atoms
//    before(a,b) := start[a] + dur[a] <= start[b] and before(b,a); assert before(a,b) or before(b,a).
//    These atoms are the order literals: nothing else decides the order. Every arithmetic atom is a
//    difference x - y <= k, so Z3 runs its difference-logic solver (smt.arith.solver = 1).
//  * Memory: before F(f) allocates on device d, live activations + stashes <= cap (model states
//    already subtracted): a pseudo-Boolean sum over the same order literals with positive
//    coefficients (an F before f adds its activation; an I/W/B after f adds back what it frees).
//  * Every model decodes (schedule_order.h) into a per-device order whose earliest-start timing is no later
//    than the model's C and respects the caps.
// All Z3 calls are wrapped: z3::exception becomes a Status at this boundary.
#pragma once

#include <z3++.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/status.h"
#include "synth/dag/op_dag.h"

namespace ps {

struct EncodeOptions {
  bool memory = true;      // encode the caps (when the DAG has them)
  unsigned seed = 0;       // smt.random_seed
  bool name_vars = true;   // readable names (start[F,s2,mb5]); false is slightly faster
};

class Encoding {
 public:
  // Builds the context, solver, variables and constraints. `reach` must come from the same DAG.
  static Result<std::unique_ptr<Encoding>> create(const OpDag& dag, const DeviceReach& reach,
                                                  const EncodeOptions& options = {});

  z3::context& ctx() { return *ctx_; }
  z3::solver& solver() { return *solver_; }
  const OpDag& dag() const { return dag_; }
  const z3::expr& makespan() const { return *c_; }
  const z3::expr& start(int op) const { return starts_[op]; }

  // "a runs before b" (a resource in common): the shared atom, or true/false when the DAG fixes it.
  z3::expr before(int a, int b);
  // True when the DAG leaves the order of a and b open (a Z3 decides).
  bool is_free(int a, int b) const { return pair_index(a, b) >= 0; }
  int num_free_pairs() const { return static_cast<int>(pair_a_.size()); }
  int num_memory_constraints() const { return memory_constraints_; }

  // Literals that pin the free pairs to the order of `t`, restricted to pairs for which
  // keep(a, b) is true.
  z3::expr_vector orientation(const TimedOrder& t, const std::function<bool(int, int)>& keep);

  // Warm start: Z3's initial values (Z3_solver_set_initial_value, Z3 4.13.1 and newer) set to `t` —
  // every start (where t has starts for this DAG's ops), C at t's makespan, and every open pair's
  // order literals as t orders the pair. Z3's search begins there instead of at its default phases;
  // it constrains nothing. It also moves the solver from difference logic to Z3's general arithmetic
  // solver (the difference-logic one answers "incomplete" under initial values), which costs more
  // than the warm start gains on the windows measured (docs/synth.md, "Which Z3"): off by default.
  // A no-op where Z3 lacks the call (solve.h's warm_start_available()).
  Status warm_start(const TimedOrder& t);

  // Per-check limits (0 = none).
  Status set_limits(unsigned timeout_ms, uint64_t rlimit);

  // The problem as SMT-LIB2 (current assertions, then (check-sat)).
  std::string to_smt2();

  // Reads the order of the current model (sorted by start, then op id) and times it.
  Result<TimedOrder> decode_model();
  // The current model's start of every op (units).
  Result<std::vector<int64_t>> model_starts();

 private:
  Encoding(const OpDag& dag, const DeviceReach& reach) : dag_(dag), reach_(reach) {}
  Status build(const EncodeOptions& options);
  int pair_index(int a, int b) const;  // index into pair_a_/atoms (a<b orientation at 2k, b<a at 2k+1); -1: fixed

  const OpDag& dag_;
  const DeviceReach& reach_;
  std::unique_ptr<z3::context> ctx_;
  std::unique_ptr<z3::solver> solver_;
  std::vector<z3::expr> starts_;
  std::optional<z3::expr> c_;
  std::unordered_map<uint64_t, int> pair_of_;  // (min op, max op) -> pair index
  std::vector<int> pair_a_, pair_b_, pair_r_;  // pair k = (pair_a_[k] < pair_b_[k]) on resource pair_r_[k]
  std::unique_ptr<z3::expr_vector> atoms_; // 2k: before(a,b), 2k+1: before(b,a)
  int memory_constraints_ = 0;
};

// How the DAG orders an op g against an F f of the same device: a path fixes it either way, or the
// pair is open and an order literal decides.
enum class PairOrder { kOpen, kBeforeF, kAfterF };

// One F's memory cap (the "Memory" guarantee above) as a pseudo-Boolean constraint. `kind` says
// what came out: the sum cannot exceed the cap (kSlack, nothing to assert), no order fits (kInfeasible:
// assert false), a coefficient or the bound exceeds Z3's int (kTooLarge: the caller decides), or
// `constraint` holds the sum.
struct MemorySum {
  enum Kind { kSlack, kInfeasible, kTooLarge, kConstraint } kind = kSlack;
  std::optional<z3::expr> constraint;
};

// Builds the memory sum of `f` (an op that allocates: F, or R on a recomputing stage) over the compute ops `device_ops` of its device (f among them), under
// `cap` (units, model states already subtracted). Ops are the caller's indices: `op(i)` gives the
// DagOp, `order(g)` how the DAG orders g against f, `before(a, b)` the literal "a runs before b" of
// an open pair. Shared by the whole encoding and the relaxation bounds (synth/bounds/smt_bound.h).
MemorySum memory_sum(z3::context& c, int f, const std::vector<int>& device_ops, int64_t cap,
                     const std::function<const DagOp&(int)>& op, const std::function<PairOrder(int)>& order,
                     const std::function<z3::expr(int, int)>& before);

// Each resource's ops sorted by `start` (ties by topological position: never against an edge).
std::vector<std::vector<int>> order_by_starts(const OpDag& dag, const std::vector<int64_t>& start);

}  // namespace ps
