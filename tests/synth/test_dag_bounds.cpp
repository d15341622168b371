// Tests of the destructive lower bound (synth/bounds/dag_bounds.h): propagation never removes a start time
// that a schedule uses, the bound never passes an optimum proven by Z3 or by brute force and
// reaches it where the search completes, it is strictly stronger than the critical path and
// Jackson's bound where the cap binds, and it is deterministic under its work caps.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "synth/dag/list_scheduler.h"
#include "synth/bounds/dag_bounds.h"
#include "synth/dag/op_dag.h"
#include "synth/z3/solve.h"
#include "synth/synth_problems.h"
#include "synth/synthesize.h"

using namespace ps;
using pstest::HandProblem;
using pstest::make_hand_problem;

namespace {

OpDag dag_of(const HandProblem& h) {
  Result<OpDag> dag = build_op_dag(make_hand_problem(h));
  REQUIRE(dag.ok());
  return std::move(dag).value();
}

// The bound with a search budget far above what these small plans need, capped by the heuristic.
DestructiveBound full_bound(const OpDag& dag) { return pstest::heuristic_capped_bound(dag, 2'000'000'000).bound; }

// Z3's proven optimum on the DAG (symmetry, memory edges, memory sums).
int64_t z3_optimum(const OpDag& dag) {
  Result<HeuristicResult> h = heuristic_schedule(dag);
  REQUIRE(h.ok());
  SolveOptions so;
  so.time_limit_s = 120;
  so.rlimit = 100'000'000;
  Result<SolveResult> r = solve(dag, h->best, 0, so);  // from bound 0: Z3 proves it alone
  REQUIRE(r.ok());
  REQUIRE(r->optimal);
  return r->best.makespan;
}

// Every start time of `t` lies in the windows propagation leaves for makespan `c`.
void check_inside_windows(const OpDag& dag, const TimedOrder& t, int64_t c) {
  std::vector<int64_t> est, lct;
  bool refuted = true;
  const bool fixpoint = propagate_windows(dag, c, est, lct, &refuted);
  CHECK(fixpoint);
  CHECK_FALSE(refuted);
  int outside = 0;
  for (int i = 0; i < dag.num_ops(); ++i) {
    if (t.start[i] < est[i] || t.start[i] + dag.ops[i].dur > lct[i]) ++outside;
  }
  CHECK(outside == 0);
}

}  // namespace

TEST_CASE("destructive bound: propagation keeps every start time of a schedule (list schedules)") {
  std::vector<HandProblem> shapes;
  {
    HandProblem h;
    h.devices = 4;
    h.microbatches = 8;
    h.cap_microbatches = 4;
    h.heterogeneous = true;
    shapes.push_back(h);
    h.cap_microbatches = 0;
    shapes.push_back(h);
    h.cap_microbatches = 3;
    h.stash_mb = 300;  // W frees memory: memory edges through W
    shapes.push_back(h);
    HandProblem v;
    v.devices = 3;
    v.microbatches = 6;
    v.stages_per_device = 2;
    v.cap_microbatches = 4;
    v.heterogeneous = true;
    shapes.push_back(v);
    HandProblem fused = v;
    fused.stages_per_device = 1;
    fused.split_backward = false;
    shapes.push_back(fused);
  }
  int checked = 0;
  for (const HandProblem& h : shapes) {
    const OpDag dag = dag_of(h);
    for (ListPolicy pol : heuristic_policies(dag)) {
      for (uint64_t seed : {0u, 1u, 2u}) {
        pol.noise = seed == 0 ? 0.0 : 2.0;
        pol.seed = seed;
        Result<TimedOrder> t = list_schedule(dag, pol);
        if (!t.ok()) continue;
        CAPTURE(pol.name());
        CAPTURE(seed);
        check_inside_windows(dag, *t, t->makespan);       // tight: C = its own makespan
        check_inside_windows(dag, *t, t->makespan + 3);  // and with slack
        ++checked;
      }
    }
  }
  CHECK(checked > 50);
}

TEST_CASE("destructive bound: equals Z3's proven optimum on small plans, never above it") {
  int stronger = 0;
  for (int P : {2, 3, 4}) {
    for (double cap : {0.0, 2.0, 3.0}) {
      for (bool hetero : {false, true}) {
        HandProblem h;
        h.devices = P;
        h.microbatches = 6;
        h.cap_microbatches = cap;
        h.heterogeneous = hetero;
        h.split_backward = !(P == 3 && hetero);  // one fused shape
        CAPTURE(P);
        CAPTURE(cap);
        CAPTURE(hetero);
        const OpDag dag = dag_of(h);
        const int64_t opt = z3_optimum(dag);
        const DestructiveBound b = full_bound(dag);
        REQUIRE_FALSE(b.capped);
        CHECK(b.bound.units >= dag_lower_bound(dag).units);
        // One stage per device: the memory edges are the whole cap, so the complete search is exact.
        CHECK(b.bound.units == opt);
        if (b.order) {
          CHECK(b.order->makespan == opt);
          CHECK(evaluate_order(dag, b.order->order).ok());
        }
        if (b.bound.units > dag_lower_bound(dag).units) ++stronger;
      }
    }
  }
  CHECK(stronger > 0);
}

TEST_CASE("destructive bound: equals brute force over all orders; V-shape with a cap stays <= Z3") {
  for (const HandProblem& h : pstest::brute_force_sized_problems()) {
    CAPTURE(h.cap_microbatches);
    CAPTURE(h.split_backward);
    DagOptions no_sym;
    no_sym.symmetry = false;
    Result<OpDag> full = build_op_dag(make_hand_problem(h), no_sym);
    REQUIRE(full.ok());
    const int64_t brute = pstest::brute_force_optimum(*full, EdgeSet::kDataOnly);
    REQUIRE(brute > 0);
    const DestructiveBound b = full_bound(dag_of(h));
    CHECK(b.bound.units == brute);
  }
  // Two stages per device: the memory sums are stronger than the edges, so only "<=" holds.
  HandProblem v;
  v.devices = 2;
  v.microbatches = 4;
  v.stages_per_device = 2;
  v.cap_microbatches = 3;
  v.heterogeneous = true;
  const OpDag dag = dag_of(v);
  const DestructiveBound b = full_bound(dag);
  CHECK(b.bound.units <= z3_optimum(dag));
  CHECK(b.bound.units >= dag_lower_bound(dag).units);
}

TEST_CASE("destructive bound: strictly above the critical path and Jackson's bound under a cap") {
  // P = 4, M = 8, uniform costs (F = I = 4, W = 3, link 1), 4 microbatches of activation per device.
  HandProblem h;
  h.devices = 4;
  h.microbatches = 8;
  h.cap_microbatches = 4;
  const OpDag dag = dag_of(h);
  // Device 0 fills its 4 slots by t = 16 and idles until I(0,0) returns at 34 (the round trip
  // through 4 stages); Jackson's schedule of its 88 units of work then ends at 106.
  CHECK(dag_lower_bound(dag).units == 106);
  const DestructiveBound b = full_bound(dag);
  CHECK(b.bound.units == 108);
  CHECK(b.bound.reason.find("search") != std::string::npos);
  CHECK(z3_optimum(dag) == 108);  // independent proof
  REQUIRE(b.order.has_value());
  CHECK(b.order->makespan == 108);
}

TEST_CASE("[slow] destructive bound: P = 8, M = 16 with a cap is found and proven optimal without Z3") {
  // The hard capped case: the DAG bound is 218, the best list schedule 233 (229 justified), the
  // optimum 224 (Z3 alone needs ~18 s to prove it).
  HandProblem h;
  h.devices = 8;
  h.microbatches = 16;
  h.cap_microbatches = 8;
  const OpDag dag = dag_of(h);
  CHECK(dag_lower_bound(dag).units == 218);
  DestructiveOptions o;
  o.upper = 233;
  o.search_work = 400'000'000;
  const DestructiveBound b = destructive_lower_bound(dag, o);
  CHECK_FALSE(b.capped);
  CHECK(b.bound.units == 224);
  REQUIRE(b.order.has_value());
  CHECK(b.order->makespan == 224);
  CHECK(evaluate_order(dag, b.order->order).ok());
  // Propagation alone gets part of the way; the search does the rest.
  o.search_work = 0;
  const DestructiveBound p = destructive_lower_bound(dag, o);
  CHECK(p.bound.units > 218);
  CHECK(p.bound.units < 224);
  CHECK(p.nodes == 0);

  // End to end: the certified schedule is proven optimal with no Z3 check.
  SynthOptions so;
  so.time_limit_s = 60;
  so.rlimit = 20'000'000;
  Result<SynthResult> r = synthesize(make_hand_problem(h), so);
  REQUIRE(r.ok());
  CHECK(r->heuristic_ms == doctest::Approx(229));  // the list schedule's 233, justified
  CHECK(r->optimal);
  CHECK(r->makespan_ms == doctest::Approx(224));
  CHECK(r->bound_ms == doctest::Approx(224));
  CHECK(r->solve.checks == 0);
  CHECK(r->seed_source == "destructive-bound search");
  CHECK(r->solver_status == "destructive bound meets incumbent");
  REQUIRE(r->schedule.certificate.has_value());
  CHECK(r->schedule.certificate->extra.at("optimal") == "true");
  CHECK(r->schedule.certificate->extra.at("bound_proven_ms") == "224.0000");
}

TEST_CASE("destructive bound: deterministic, and a spent work cap still returns a valid bound") {
  HandProblem h;
  h.devices = 6;
  h.microbatches = 8;
  h.cap_microbatches = 5;
  const OpDag dag = dag_of(h);
  DestructiveOptions o;
  o.upper = 200;
  o.search_work = 50'000'000;
  const DestructiveBound a = destructive_lower_bound(dag, o);
  const DestructiveBound b = destructive_lower_bound(dag, o);
  CHECK(a.bound.units == b.bound.units);
  CHECK(a.work == b.work);
  CHECK(a.nodes == b.nodes);
  CHECK(a.trials == b.trials);
  REQUIRE(a.order.has_value());
  REQUIRE(b.order.has_value());
  CHECK(a.order->order == b.order->order);
  const int64_t opt = a.bound.units;
  CHECK(a.order->makespan == opt);  // small enough to finish: found and proven

  // Without a known schedule the trials stop at the DAG's serial length: same answer.
  DestructiveOptions open_ended;
  open_ended.search_work = o.search_work;
  CHECK(destructive_lower_bound(dag, open_ended).bound.units == opt);

  o.work_cap = 1000;  // not even one propagation
  o.search_work = 1000;
  const DestructiveBound c = destructive_lower_bound(dag, o);
  CHECK(c.capped);
  CHECK(c.bound.units >= dag_lower_bound(dag).units);
  CHECK(c.bound.units <= opt);
  CHECK(c.work < 1'000'000);
}

TEST_CASE("destructive bound: 1 us ops beside 1.7 s ops: positive cycles refuted at once, the caps kept, the trail small") {
  // A plan synth chose for 20 layers of 1 us and 1.7 s ops (bench/profile-sweep, P = 6, M = 6, free
  // links, no cap): device 4 holds three 1 us stages and a 1.7 s one. The search's decisions close
  // cycles of a few microseconds through the DAG's paths, which edge propagation would go round a
  // microsecond per lap until a window of seconds empties; it refutes them after n + 1 laps, keeps
  // to its work caps, and its undo trail keeps one change per window and decision (a trail of every
  // change held 65 M of them, 1.5 GB, and the laps took 214 M steps against a cap of 70 M).
  struct Stage {
    int device;
    double f, i, w;
  };
  const std::vector<Stage> stages = {
      {0, 1697.11, 1514.26, 84.9893}, {1, 1697.111, 1514.261796, 84.989436}, {2, 1697.11, 1514.26, 84.9893},
      {3, 1698.30062, 1515.35271, 86.06768}, {4, 0.001, 0.001796, 0.000136191}, {4, 0.001, 0.001796, 0.000136191},
      {0, 1698.30062, 1515.35271, 86.06768}, {1, 1698.30062, 1515.35271, 86.06768}, {2, 1697.111, 1514.261796, 84.989436},
      {4, 0.001, 0.001796, 0.000136191}, {4, 1699.49124, 1516.44542, 87.14606}, {5, 1697.111, 1514.261796, 84.989436}};
  Problem p;
  p.name = "us-beside-s";
  p.devices = 6;
  p.microbatches = 6;
  p.link.latency_us = 0;
  p.link.bandwidth_gb_per_s = 1e30;
  for (size_t s = 0; s < stages.size(); ++s) {
    StageSpec st;
    st.device = stages[s].device;
    st.fwd_ms = stages[s].f;
    st.bwd_input_ms = stages[s].i;
    st.bwd_weight_ms = stages[s].w;
    st.activation_mb = 100;
    st.output_mb = s + 1 < stages.size() ? 8 : 0;
    st.first_layer = st.last_layer = static_cast<int>(s);
    p.stages.push_back(st);
  }
  Result<OpDag> dag = build_op_dag(p);
  REQUIRE(dag.ok());
  const uint64_t search_work = 50'000'000;
  const pstest::HeuristicCappedBound capped = pstest::heuristic_capped_bound(*dag, search_work);
  const DestructiveBound& b = capped.bound;
  INFO("ops ", dag->num_ops(), ", search nodes ", b.nodes, ", steps ", b.work, ", trail peak ", b.trail_peak, ", bound ",
       b.bound.units, " (", b.bound.reason, "), critical path / Jackson ", dag_lower_bound(*dag).units, ", upper ",
       capped.upper);
  CHECK(b.nodes > 0);
  CHECK(b.bound.units > dag_lower_bound(*dag).units);
  CHECK(b.bound.units <= capped.upper);
  CHECK(b.trail_peak <= static_cast<size_t>(dag->num_ops()) * static_cast<size_t>(b.nodes + 1));
  // The steps keep to the caps (propagation's and the search's), give or take one poll's worth.
  CHECK(b.work <= DestructiveOptions{}.work_cap + search_work + 1'000'000);
}

TEST_CASE("plans of 10^5 ops: no reachability table, the bound keeps to its work cap, solve() skips at once") {
  // 8 stages in a V over 4 devices × 3000 microbatches: 72,000 compute ops and 36,000 transfers
  // (the V's turn stays on device 3). Its reachability table would take 1.5 GB; at M = 8192 on a
  // 12-stage plan, 28 GB (synth ended in std::bad_alloc).
  HandProblem h;
  h.devices = 4;
  h.stages_per_device = 2;
  h.microbatches = 3000;
  h.heterogeneous = true;
  const OpDag dag = dag_of(h);
  CHECK(dag.num_ops() == default_dag_ops(make_hand_problem(h)));
  CHECK(dag.num_ops() == 108000);
  CHECK_FALSE(DeviceReach::affordable(dag));
  CHECK(std::isinf(encoding_load_seconds(dag)));
  HeuristicOptions first;
  first.portfolio = false;
  Result<HeuristicResult> hr = heuristic_schedule(dag, first);
  REQUIRE(hr.ok());

  // Propagation stops near its cap: one resource's filter past it at most (10 M steps on 27,000
  // ops). It took 1,750 M steps when a round filtered every resource before looking at the cap and
  // the first sort of each resource's ops was an insertion sort (191 M with the first fix alone).
  // The pair search, which needs the table, does not run.
  DestructiveOptions o;
  o.upper = 2 * hr->best.makespan;  // above the DAG bound, which the list schedule meets here
  o.work_cap = 1'000'000;
  o.search_work = 50'000'000;
  const DestructiveBound b = destructive_lower_bound(dag, o);
  INFO("work " << b.work);
  CHECK(b.work < 30'000'000);
  CHECK(b.nodes == 0);
  CHECK(b.bound.units >= dag_lower_bound(dag).units);
  CHECK(b.bound.units <= hr->best.makespan);
  CHECK(b.trials >= 1);

  // solve(): skipped with the reason, the incumbent kept, no Z3 check.
  SolveOptions so;
  so.time_limit_s = 1000;
  Result<SolveResult> r = solve(dag, hr->best, 0, so);  // from bound 0: the heuristic never meets it
  REQUIRE(r.ok());
  INFO(r->status);
  CHECK(r->status.find("108000 ops are too many for the pair encoding") != std::string::npos);
  CHECK(r->best.makespan == hr->best.makespan);
  CHECK(r->checks == 0);
}

TEST_CASE("solve(): an encoding whose 4 units per op already exceed the budget is skipped before it is sized") {
  HandProblem h;
  h.devices = 4;
  h.microbatches = 1500;  // 27,000 ops: the table is affordable, the budget is not
  const OpDag dag = dag_of(h);
  REQUIRE(DeviceReach::affordable(dag));
  HeuristicOptions first;
  first.portfolio = false;
  Result<HeuristicResult> hr = heuristic_schedule(dag, first);
  REQUIRE(hr.ok());
  SolveOptions so;
  so.rlimit = 1'000'000;  // 0.5 s of one context; loading 27,000 ops takes at least 8 s
  Result<SolveResult> r = solve(dag, hr->best, 0, so);
  REQUIRE(r.ok());
  INFO(r->status);
  CHECK(r->status.find("skipped: an encoding of 27000 ops needs at least") != std::string::npos);
  CHECK(r->checks == 0);
  CHECK(r->best.makespan == hr->best.makespan);
}
