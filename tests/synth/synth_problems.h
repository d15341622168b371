// synth_problems.h — hand-built Problems for the synthesizer's tests (no YAML involved), a
// brute-force optimum for tiny ones, and the determinism check every synthesizer path shares.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include <doctest/doctest.h>

#include "ir/problem.h"
#include "ir/schedule_io.h"
#include "synth/bounds/dag_bounds.h"
#include "synth/dag/list_scheduler.h"
#include "synth/dag/op_dag.h"
#include "synth/synthesize.h"
#include "verify/verify.h"

namespace pstest {

struct HandProblem {
  int devices = 4;
  int microbatches = 4;
  int stages_per_device = 1;  // 1: sequential; 2: V-shape
  double fwd_ms = 4, bwd_input_ms = 4, bwd_weight_ms = 3;
  double comm_ms = 1;         // transfer time of every cross-device boundary
  double act_mb = 1000, stash_mb = 0;
  double states_mb = 0;       // model states per stage
  double cap_microbatches = 0;  // memory limit in activations of one stage beyond the states; 0 = none
  bool split_backward = true;
  bool heterogeneous = false;   // per-stage costs vary (deterministically)
};

// Plans small enough for brute force over all orders: 2 devices, 2 microbatches, heterogeneous
// costs, with no cap and two caps, split and fused backward.
// The destructive bound on `dag` with `search_work` steps of search, its trials capped by the list
// scheduler's best order, whose makespan is `upper`.
struct HeuristicCappedBound {
  ps::DestructiveBound bound;
  int64_t upper = 0;
};
inline HeuristicCappedBound heuristic_capped_bound(const ps::OpDag& dag, uint64_t search_work) {
  ps::Result<ps::HeuristicResult> h = ps::heuristic_schedule(dag);
  REQUIRE(h.ok());
  ps::DestructiveOptions o;
  o.upper = h->best.makespan;
  o.search_work = search_work;
  return {ps::destructive_lower_bound(dag, o), o.upper};
}

inline std::vector<HandProblem> brute_force_sized_problems() {
  std::vector<HandProblem> out;
  for (double cap : {0.0, 1.0, 1.5}) {
    for (bool split : {true, false}) {
      HandProblem h;
      h.devices = 2;
      h.microbatches = 2;
      h.cap_microbatches = cap;
      h.stash_mb = 400;
      h.split_backward = split;
      h.heterogeneous = true;
      out.push_back(h);
    }
  }
  return out;
}

inline ps::Problem make_hand_problem(const HandProblem& h) {
  ps::Problem p;
  p.name = "hand";
  p.devices = h.devices;
  p.microbatches = h.microbatches;
  p.bytes_per_param = 1;
  p.link.latency_us = h.comm_ms * 1000;
  p.link.bandwidth_gb_per_s = 100;  // output_mb = 0 below: transfer_ms = latency only
  const int S = h.devices * h.stages_per_device;
  for (int s = 0; s < S; ++s) {
    ps::StageSpec st;
    st.device = h.stages_per_device == 1 ? s : (s < h.devices ? s : 2 * h.devices - 1 - s);
    st.fwd_ms = h.fwd_ms;
    st.bwd_input_ms = h.bwd_input_ms;
    st.bwd_weight_ms = h.bwd_weight_ms;
    if (h.heterogeneous) {
      st.fwd_ms += (s * 7) % 4;
      st.bwd_input_ms += (s * 5) % 3;
      st.bwd_weight_ms += (s * 3) % 2;
    }
    st.activation_mb = h.act_mb;
    st.wgrad_stash_mb = h.stash_mb;
    st.output_mb = 0;
    st.params_m = h.states_mb;  // bytes_per_param = 1: params_m MB of model states
    st.split_backward = h.split_backward;
    st.first_layer = s;
    st.last_layer = s;
    p.stages.push_back(st);
  }
  if (h.cap_microbatches > 0) {
    p.memory_gb = (h.states_mb * h.stages_per_device + h.cap_microbatches * h.act_mb) / 1000.0;
  }
  return p;
}

// Minimum makespan over every per-device order that respects the DAG's edges and memory caps, by
// enumerating each device's linear extensions (tiny DAGs only).
inline int64_t brute_force_optimum(const ps::OpDag& dag, ps::EdgeSet edges) {
  // Per device: all orders consistent with same-device edges of the chosen kinds.
  std::vector<std::vector<std::vector<int>>> per_device(dag.devices);
  for (int d = 0; d < dag.devices; ++d) {
    const auto& ops = dag.device_ops[d];
    std::vector<int> cur;
    std::vector<bool> used(dag.num_ops(), false);
    std::function<void()> rec = [&]() {
      if (cur.size() == ops.size()) {
        per_device[d].push_back(cur);
        return;
      }
      for (int op : ops) {
        if (used[op]) continue;
        bool ok = true;
        for (const ps::DagEdge& e : dag.pred[op]) {
          if (edges == ps::EdgeSet::kDataOnly && e.kind != ps::EdgeKind::kData) continue;
          if (dag.ops[e.op].device == d && !used[e.op]) ok = false;
        }
        if (!ok) continue;
        used[op] = true;
        cur.push_back(op);
        rec();
        cur.pop_back();
        used[op] = false;
      }
    };
    rec();
  }
  int64_t best = -1;
  std::vector<size_t> idx(dag.devices, 0);
  for (;;) {
    std::vector<std::vector<int>> order(dag.devices);
    for (int d = 0; d < dag.devices; ++d) order[d] = per_device[d][idx[d]];
    auto t = ps::evaluate_order(dag, order, edges, true);
    if (t.ok() && (best < 0 || t->makespan < best)) best = t->makespan;
    int d = 0;
    while (d < dag.devices && ++idx[d] == per_device[d].size()) idx[d++] = 0;
    if (d == dag.devices) break;
  }
  return best;
}

// Two synthesize() calls with the same problem, seed and budget: the same solver status and a
// byte-identical schedule file.
inline void check_same_run_same_file(const ps::Problem& p, const ps::SynthOptions& o) {
  ps::Result<ps::SynthResult> a = ps::synthesize(p, o);
  ps::Result<ps::SynthResult> b = ps::synthesize(p, o);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->solver_status == b->solver_status);
  CHECK(ps::format_schedule_yaml(a->schedule) == ps::format_schedule_yaml(b->schedule));
}

// The file a user gets: written, read back and checked by the checker alone, its makespan the
// result's. Returns the checker's report (for the memory checks).
inline ps::Report check_written_file(const ps::SynthResult& r) {
  ps::Result<ps::Schedule> back = ps::parse_schedule_yaml(ps::format_schedule_yaml(r.schedule), "synth.yaml");
  INFO((back.ok() ? std::string() : back.status().message()));
  REQUIRE(back.ok());
  ps::Report rep = ps::verify(*back);
  CHECK(rep.valid);
  CHECK(rep.violations.empty());
  REQUIRE(rep.sim.has_value());
  CHECK(rep.sim->makespan_ms == doctest::Approx(r.makespan_ms));
  return rep;
}

}  // namespace pstest
