// The co-optimizer (synth/tuner/tuner.h): its result passes the checker, is never slower than the
// baselines and seeds it starts from, is deterministic for a seed, respects memory caps, reports
// progress, honours a fixed partition/placement, and rejects bad fixed inputs; the moves keep
// their invariants (moves.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "report/report.h"
#include "synth/baselines/baselines.h"
#include "synth/dag/schedule_order.h"
#include "synth/dag/list_scheduler.h"
#include "synth/dag/op_dag.h"
#include "synth/plan/partition.h"
#include "synth/plan/placement.h"
#include "synth/tuner/tuner.h"
#include "synth/bounds/packing_bound.h"
#include "synth/tuner/evaluate.h"
#include "synth/tuner/moves.h"
#include "verify/verify.h"
#include "test_util.h"

using namespace ps;

namespace {

// tests/data/synth/tiny-hetero.yaml: 11 layers (embedding, dense, MoE, a head 4.5x a dense layer),
// P = 4, M = 8; model states 85.3 GB in all.
Spec tiny_spec(double memory_gb = 0) {
  const std::string path = pstest::data_path("synth/tiny-hetero.yaml");
  Result<Spec> s = parse_spec(pstest::read_file(path), path);
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  s->cluster.memory_gb = memory_gb;
  return *s;
}

// The tuner's search space over tiny_spec's 11 layers on 4 devices, one layer per stage at most.
tuner_detail::SearchSpace tiny_space(const Spec& spec) {
  tuner_detail::SearchSpace sp;
  sp.spec = &spec;
  sp.devices = 4;
  sp.layers = 11;
  sp.max_stages = 11;
  for (int l = 0; l < 11; ++l) {
    sp.layer_ms.push_back(layer_time_ms(spec.model, LayerId{l}));
    sp.layer_mb.push_back(layer_memory_mb(spec, LayerId{l}));
  }
  return sp;
}

TuneOptions quick_options() {
  TuneOptions o;
  o.time_limit_s = 20;        // a safety net; the evaluation budget ends the search first
  o.max_evaluations = 300;
  o.threads = 2;
  o.seed = 7;
  return o;
}

Report check(const Schedule& s) {
  VerifyOptions vo;
  vo.semantics = Semantics::kRendezvous;
  return verify(s, vo);
}

// Simulated iteration time of a baseline on a partition (nullopt when it does not apply or fit).
std::optional<double> baseline_ms(const Spec& spec, BaselineKind kind, bool even) {
  Result<BaselineShape> shape = baseline_shape(kind, 0);
  if (!shape.ok()) return std::nullopt;
  const int P = spec.cluster.devices;
  const int S = shape->stages_per_device * P;
  Result<Partition> part = even ? even_partition(spec, S) : balanced_partition(spec, S);
  if (!part.ok()) return std::nullopt;
  Result<Problem> pb = make_problem(spec, *part, baseline_placement(*shape, P));
  if (!pb.ok() || !check_baseline_shape(*pb, kind).is_ok()) return std::nullopt;
  Result<Schedule> s = make_baseline(*pb, kind);
  if (!s.ok()) return std::nullopt;
  Report r = check(*s);
  if (!r.valid || !r.sim) return std::nullopt;
  return r.sim->makespan_ms;
}

}  // namespace

TEST_CASE("tuner: result passes the checker and beats or ties every baseline and seed") {
  const Spec spec = tiny_spec();
  Result<TuneResult> r = cooptimize(spec, quick_options());
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  Report rep = check(r->schedule);
  REQUIRE_MESSAGE(rep.valid, format_report(rep));
  REQUIRE(rep.sim);
  CHECK(rep.sim->makespan_ms == doctest::Approx(r->simulated_ms));
  CHECK(r->simulated_ms >= r->lower_bound_ms - 1e-9);
  CHECK(r->problem.num_stages() == static_cast<int>(r->partition.size()));
  CHECK(r->stats.evaluated > 10);
  CHECK(r->stats.evaluated <= 300 + 4);  // the budget, plus the final polish of the best few
  CHECK(r->stats.verified >= 1);
  int compared = 0;
  for (BaselineKind k : {BaselineKind::k1F1B, BaselineKind::kInterleaved1F1B, BaselineKind::kZBH1, BaselineKind::kZBV}) {
    for (bool even : {true, false}) {
      std::optional<double> b = baseline_ms(spec, k, even);
      if (!b) continue;
      ++compared;
      CHECK_MESSAGE(r->simulated_ms <= *b + 1e-9, baseline_name(k), even ? " (even)" : " (balanced)");
    }
  }
  CHECK(compared >= 6);
  // The balanced sequential seed, list-scheduled: the tuner is at least as good.
  Result<Partition> bal = balanced_partition(spec, 4);
  REQUIRE(bal.ok());
  Result<Problem> pb = make_problem(spec, *bal, placement_sequential(4));
  REQUIRE(pb.ok());
  Result<OpDag> dag = build_op_dag(*pb);
  REQUIRE(dag.ok());
  Result<HeuristicResult> h = heuristic_schedule(*dag);
  REQUIRE(h.ok());
  Report seed = check(order_to_schedule(*pb, *dag, h->best, "seed"));
  REQUIRE(seed.valid);
  CHECK(r->simulated_ms <= seed.sim->makespan_ms + 1e-9);
}

TEST_CASE("[slow] tuner: same seed and budget, same plan and schedule") {
  const Spec spec = tiny_spec(40);
  TuneOptions o = quick_options();
  o.max_evaluations = 150;
  Result<TuneResult> a = cooptimize(spec, o);
  Result<TuneResult> b = cooptimize(spec, o);
  REQUIRE_MESSAGE(a.ok(), a.status().str());
  REQUIRE(b.ok());
  CHECK(a->placement == b->placement);
  REQUIRE(a->partition.size() == b->partition.size());
  for (size_t s = 0; s < a->partition.size(); ++s) {
    CHECK(a->partition[s].first == b->partition[s].first);
    CHECK(a->partition[s].last == b->partition[s].last);
  }
  CHECK(a->simulated_ms == b->simulated_ms);
  CHECK(a->schedule.programs == b->schedule.programs);
  CHECK(a->stats.evaluated == b->stats.evaluated);
  // One thread: the same again (results are reduced by candidate index, not finishing order).
  o.threads = 1;
  Result<TuneResult> c = cooptimize(spec, o);
  REQUIRE(c.ok());
  CHECK(c->placement == a->placement);
  CHECK(c->simulated_ms == a->simulated_ms);
}

TEST_CASE("tuner: memory caps are respected, change the plan, or make it infeasible") {
  const Spec free_spec = tiny_spec(0);
  Result<TuneResult> unlimited = cooptimize(free_spec, quick_options());
  REQUIRE(unlimited.ok());
  double peak_gb = 0;
  {
    Report rep = check(unlimited->schedule);
    REQUIRE(rep.sim);
    for (double mb : rep.sim->peak_memory_mb) peak_gb = std::max(peak_gb, mb / 1000);
  }
  // A cap a little below the unlimited plan's peak: the tuner must find another plan that fits.
  const double cap_gb = std::floor(peak_gb * 0.9);
  REQUIRE(cap_gb > 85.32 / 4);
  Result<TuneResult> capped = cooptimize(tiny_spec(cap_gb), quick_options());
  REQUIRE_MESSAGE(capped.ok(), capped.status().str());
  CHECK(capped->problem.memory_gb == cap_gb);
  Report rep = check(capped->schedule);
  REQUIRE_MESSAGE(rep.valid, format_report(rep));
  for (double mb : rep.sim->peak_memory_mb) CHECK(mb <= cap_gb * 1000 + 1e-6);
  const bool changed = capped->placement != unlimited->placement ||
                       capped->partition.size() != unlimited->partition.size() ||
                       capped->simulated_ms != unlimited->simulated_ms || capped->schedule.programs != unlimited->schedule.programs;
  CHECK(changed);
  // The override in TuneOptions wins over the spec's memory.
  TuneOptions o = quick_options();
  o.memory_gb = 15;  // below 85.3 GB of model states / 4 devices
  Result<TuneResult> none = cooptimize(free_spec, o);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == ErrorCode::kInfeasible);
}

TEST_CASE("tuner: Z3 on the best candidates never makes the result worse") {
  const Spec spec = tiny_spec();
  TuneOptions o = quick_options();
  o.max_evaluations = 100;
  o.time_limit_s = 8;
  Result<TuneResult> plain = cooptimize(spec, o);
  REQUIRE(plain.ok());
  o.z3_candidates = 2;
  o.z3_time_fraction = 0.25;
  Result<TuneResult> z = cooptimize(spec, o);
  REQUIRE_MESSAGE(z.ok(), z.status().str());
  CHECK(z->stats.z3_runs == 2);
  CHECK(z->simulated_ms <= plain->simulated_ms + 1e-9);
  CHECK(check(z->schedule).valid);
  if (z->z3_used) CHECK(z->policy.find("z3") != std::string::npos);
}

TEST_CASE("tuner: progress is reported while it searches") {
  TuneOptions o = quick_options();
  std::vector<TuneProgress> seen;
  o.progress = [&](const TuneProgress& p) { seen.push_back(p); };
  Result<TuneResult> r = cooptimize(tiny_spec(), o);
  REQUIRE(r.ok());
  REQUIRE(seen.size() >= 2);
  CHECK(seen.front().phase == "seeds");
  CHECK(seen.back().phase == "verify");
  for (size_t i = 1; i < seen.size(); ++i) {
    CHECK(seen[i].evaluated >= seen[i - 1].evaluated);
    if (seen[i - 1].best_ms > 0) CHECK(seen[i].best_ms <= seen[i - 1].best_ms + 1e-9);
  }
  CHECK(seen.back().best_ms > 0);
  CHECK(seen.back().lower_bound_ms > 0);
  CHECK(seen.back().gap >= 0);
  CHECK_FALSE(seen.back().best_desc.empty());
}

TEST_CASE("tuner: a fixed partition or placement is kept; bad ones are rejected") {
  const Spec spec = tiny_spec();
  TuneOptions o = quick_options();
  o.max_evaluations = 80;
  Partition part = {{0, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}};
  o.partition = part;
  Result<TuneResult> r = cooptimize(spec, o);
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  REQUIRE(r->partition.size() == 5);
  for (size_t s = 0; s < 5; ++s) CHECK(r->partition[s].last == part[s].last);
  CHECK(check(r->schedule).valid);

  TuneOptions q = quick_options();
  q.max_evaluations = 80;
  q.placement = std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0};
  Result<TuneResult> v = cooptimize(spec, q);
  REQUIRE_MESSAGE(v.ok(), v.status().str());
  CHECK(v->placement == *q.placement);
  CHECK(check(v->schedule).valid);

  q.partition = part;  // 5 stages vs 8 in the placement
  Result<TuneResult> bad = cooptimize(spec, q);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::kBadInput);
  CHECK(bad.status().message().find("placement names 8 stages, the partition has 5") != std::string::npos);

  TuneOptions w = quick_options();
  w.placement = std::vector<int>{0, 1, 2, 7};
  Result<TuneResult> out_of_range = cooptimize(spec, w);
  REQUIRE_FALSE(out_of_range.ok());
  CHECK(out_of_range.status().code() == ErrorCode::kBadInput);

  TuneOptions g = quick_options();
  g.partition = Partition{{0, 3}, {5, 10}};
  Result<TuneResult> gap = cooptimize(spec, g);
  REQUIRE_FALSE(gap.ok());
  CHECK(gap.status().code() == ErrorCode::kBadInput);
}

TEST_CASE("tuner: orders and compute-only schedules convert both ways") {
  const Spec spec = tiny_spec();
  Result<Problem> pb = make_problem(spec, *balanced_partition(spec, 8), placement_looped(8, 4));
  REQUIRE(pb.ok());
  Result<OpDag> dag = build_op_dag(*pb);
  REQUIRE(dag.ok());
  Result<HeuristicResult> h = heuristic_schedule(*dag);
  REQUIRE(h.ok());
  Schedule s = order_to_schedule(*pb, *dag, h->best, "test");
  // Keep the compute ops (schedule_order.h also writes the transfers as SEND/RECV).
  size_t dag_compute = 0;
  for (const DagOp& o : dag->ops) dag_compute += is_compute(o.type) ? 1 : 0;
  for (auto& prog : s.programs) prog.erase(std::remove_if(prog.begin(), prog.end(), [](const Action& a) { return is_comm(a.type); }), prog.end());
  s.predicted.clear();
  CHECK(s.num_ops() == dag_compute);
  Result<std::vector<std::vector<int>>> back = schedule_to_dag_order(*dag, s);
  REQUIRE_MESSAGE(back.ok(), back.status().str());
  REQUIRE(back->size() == 4u);
  for (int d = 0; d < 4; ++d) CHECK((*back)[d] == h->best.order[d]);
  s.programs[0][0].mb = MicrobatchId{99};
  Result<std::vector<std::vector<int>>> bad = schedule_to_dag_order(*dag, s);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("out of range") != std::string::npos);
}

TEST_CASE("tuner moves: diagnosis, rebalance and every move keep the invariants") {
  using namespace ps::tuner_detail;
  const Spec spec = tiny_spec();
  tuner_detail::SearchSpace sp = tiny_space(spec);
  // All the MoE layers on device 1: a clear imbalance.
  Candidate c;
  c.cuts = {0, 2, 9, 10, 11};
  c.placement = {0, 1, 2, 3};
  Evaluation e = evaluate_candidate(spec, c);
  REQUIRE(e.feasible);
  CHECK(diagnose(sp, c, e) == Diagnosis::kImbalance);
  std::vector<int> rb = rebalance_cuts(sp, c.cuts, c.placement, false);
  auto max_load = [&](const std::vector<int>& cuts) {
    std::vector<double> l(4, 0);
    for (int s = 0; s < 4; ++s)
      for (int k = cuts[s]; k < cuts[s + 1]; ++k) l[c.placement[s]] += sp.layer_ms[k];
    return *std::max_element(l.begin(), l.end());
  };
  CHECK(max_load(rb) < max_load(c.cuts));
  std::vector<Candidate> moves = bubble_moves(sp, c, e, true);
  REQUIRE(moves.size() > 5);
  std::set<std::string> kinds;
  for (Candidate& m : moves) {
    kinds.insert(move_kind_name(m.kind));
    REQUIRE(m.cuts.front() == 0);
    REQUIRE(m.cuts.back() == 11);
    for (int s = 0; s < m.stages(); ++s) CHECK(m.cuts[s + 1] > m.cuts[s]);
    std::set<int> used(m.placement.begin(), m.placement.end());
    CHECK(used.size() == 4u);
  }
  CHECK(kinds.count("partition") == 1);
  CHECK(kinds.count("placement") == 1);
  CHECK(kinds.count("schedule") == 1);
  // A better plan is among the partition moves.
  bool better = false;
  for (const Candidate& m : moves) {
    Evaluation me = evaluate_candidate(spec, m);
    if (me.feasible && me.makespan_ms < e.makespan_ms) better = true;
  }
  CHECK(better);
  // Fixed partition: no move changes the cuts.
  sp.fixed_partition = true;
  for (const Candidate& m : bubble_moves(sp, c, e, true)) CHECK(m.cuts == c.cuts);
  std::mt19937_64 rng(1);
  for (const Candidate& m : kick_moves(sp, c, rng, 8)) CHECK(m.cuts == c.cuts);
}

TEST_CASE("tuner plan floor: a lower bound for every move's schedule, from the forward heads and loads") {
  using namespace ps::tuner_detail;
  const Spec spec = tiny_spec();
  tuner_detail::SearchSpace sp = tiny_space(spec);
  sp.head_ms = forward_heads_ms(spec.model);
  // A chain: each layer starts after the forward times of all the layers before it.
  double prefix = 0;
  for (int l = 0; l < sp.layers; ++l) {
    CHECK(sp.head_ms[l] == doctest::Approx(prefix));
    prefix += spec.model.type_of(l).forward_ms;
  }
  Candidate c;
  c.cuts = {0, 2, 9, 10, 11};
  c.placement = {0, 1, 2, 3};
  const int M = spec.pipeline.microbatches;
  double expect = 0;
  for (int s = 0; s < 4; ++s) {
    double load = 0;
    for (int l = c.cuts[s]; l < c.cuts[s + 1]; ++l) load += sp.layer_ms[l];
    expect = std::max(expect, sp.head_ms[c.cuts[s]] + M * load);
  }
  CHECK(plan_floor_ms(sp, c) == doctest::Approx(expect));
  Evaluation e = evaluate_candidate(spec, c);
  REQUIRE(e.feasible);
  std::vector<Candidate> all = bubble_moves(sp, c, e, true);
  for (const Candidate& s : seed_candidates(sp, nullptr, nullptr)) all.push_back(s);
  int n = 0;
  for (Candidate m : all) {
    if (m.baseline >= 0) continue;
    for (int set : {0, 1, 2}) {
      m.policy_set = set;
      Evaluation me = evaluate_candidate(spec, m);
      if (!me.feasible) continue;
      ++n;
      CHECK(me.makespan_ms >= plan_floor_ms(sp, m) - 1e-6);
      if (set == 1) CHECK(me.policy.find("eager") == std::string::npos);  // the lean portfolio
    }
  }
  CHECK(n > 20);
}

TEST_CASE("tuner bound: layer packing sees that layers cannot be split") {
  // 9 equal layers (F+I+W = 6 ms) and a head of 3 ms on 4 devices, 10 microbatches: some device
  // holds 3 of the 9 big layers (pigeonhole over the 9 largest = 2·4+1), so at least 18 ms per
  // microbatch, while total work / 4 is only 14.25 ms.
  Result<Spec> s = parse_spec(R"(schema: 1
model:
  name: packing
  layer_types:
    T: {forward_ms: 2, backward_input_ms: 2, backward_weight_ms: 2, activation_mb: 1, wgrad_stash_mb: 0, output_mb: 1, params_m: 1}
    L: {forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, activation_mb: 1, wgrad_stash_mb: 0, output_mb: 0, params_m: 1}
  layers: "TTTTTTTTTL"
cluster: {devices: 4}
pipeline: {microbatches: 10}
)", "packing.yaml");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  CHECK(layer_packing_bound_ms(s->model, 4, 10) == doctest::Approx(180));
  CHECK(layer_packing_bound_ms(s->model, 10, 10) == doctest::Approx(60));  // the heaviest layer
  CHECK(layer_packing_bound_ms(s->model, 3, 10) == doctest::Approx(210));  // 10 layers: one device has 4
  CHECK(layer_packing_bound_ms(s->model, 0, 10) == 0);
  // The tuner reports it as its bound, and respects it. The global bound's total work says 142.5 ms;
  // its terms with whole layers (the ramp, the release times) see the packing too, and reach 180 ms
  // at most (the ramp's bisection stops 10⁻⁶ short of it).
  TuneOptions o;
  o.time_limit_s = 20;
  o.max_evaluations = 400;
  Result<TuneResult> r = cooptimize(*s, o);
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  CHECK(r->lower_bound_ms == doctest::Approx(180));
  CHECK(r->global_bound_ms <= 180 + 1e-9);
  CHECK(r->global_bound_ms > 179.9);
  CHECK(r->simulated_ms >= 180 - 1e-9);
}

TEST_CASE("tuner bound: the exact packing search beats the pigeonhole bound") {
  // 5 5 5 4 4 4 on 2 devices: the pigeonhole bound sees 5+4+4 = 13 (3 of the 5 largest share a
  // device), the mean is 13.5, but every split of the six puts 14 on one device.
  PackingBound b = packing_bound({5, 5, 5, 4, 4, 4}, 2);
  CHECK(b.pigeonhole_ms == doctest::Approx(13));
  CHECK(b.decided);
  CHECK(b.exact_ms == doctest::Approx(14).epsilon(1e-5));
  CHECK(b.exact_ms < 14);  // proven infeasible capacities only: 14 itself fits
  CHECK(b.packing_ms == doctest::Approx(14).epsilon(1e-5));
  // Already tight: three devices take 5+4 each.
  b = packing_bound({5, 5, 5, 4, 4, 4}, 3);
  CHECK(b.exact_ms == doctest::Approx(9));
  CHECK(b.packing_ms == doctest::Approx(9));
  // Nemotron-H 8B's sublayers (F+I+W ms: 24 MLP, 24 Mamba-2, 4 attention, 4 head shards and a free
  // embedding) on 16 devices: the mean is 48.56 ms, the pigeonhole bound 44.88 (four Mamba); the best
  // packing is one MLP and three Mamba layers, 51.174 ms: whole sublayers force 5.1 % of idle time.
  std::vector<double> nemotron(1, 0.0);
  for (int i = 0; i < 24; ++i) nemotron.push_back(17.511), nemotron.push_back(11.221);
  for (int i = 0; i < 4; ++i) nemotron.push_back(7.504), nemotron.push_back(14.303);
  b = packing_bound(nemotron, 16);
  CHECK(b.decided);
  CHECK(b.pigeonhole_ms == doctest::Approx(4 * 11.221));
  CHECK(b.exact_ms == doctest::Approx(17.511 + 3 * 11.221).epsilon(1e-5));
  CHECK(b.packing_ms >= b.exact_ms);
  // The shipped file splits each MLP into two chained halves (8.756 ms): then the best packing is
  // within 0.5 % of the mean, and the bound proves no more than that.
  std::vector<double> halves(1, 0.0);
  for (int i = 0; i < 24; ++i) halves.push_back(17.511 / 2), halves.push_back(17.511 / 2), halves.push_back(11.221);
  for (int i = 0; i < 4; ++i) halves.push_back(7.504), halves.push_back(14.303);
  const double mean = std::accumulate(halves.begin(), halves.end(), 0.0) / 16;
  b = packing_bound(halves, 16);
  CHECK(b.decided);
  CHECK(b.exact_ms >= mean - 1e-9);
  CHECK(b.packing_ms <= 1.005 * mean);
  CHECK(b.exact_ms <= b.packing_ms);
  // Twelve types of five layers each: the search is bounded by its work cap and stays valid (at
  // least the pigeonhole bound and the mean, at most the packing it found).
  std::vector<double> twelve;
  for (int t = 0; t < 12; ++t)
    for (int i = 0; i < 5; ++i) twelve.push_back(1.0 + 0.37 * t);
  b = packing_bound(twelve, 7);
  double sum = 0;
  for (double x : twelve) sum += x;
  CHECK(b.exact_ms >= std::max(b.pigeonhole_ms, sum / 7) - 1e-9);
  CHECK(b.exact_ms <= b.packing_ms + 1e-9);
  // Many distinct costs: no exact search, the pigeonhole bound stands.
  std::vector<double> ramp;
  for (int i = 0; i < 40; ++i) ramp.push_back(1 + 0.01 * i);
  b = packing_bound(ramp, 8);
  CHECK_FALSE(b.decided);
  CHECK(b.exact_ms >= b.pigeonhole_ms);
}

namespace {
// The device of layer l in candidate c.
int device_of(const ps::tuner_detail::Candidate& c, int l) {
  int s = 0;
  while (c.cuts[s + 1] <= l) ++s;
  return c.placement[s];
}
}  // namespace

TEST_CASE("tuner seeds: layers packed in order balance device loads; per node the chain crosses nodes only between pieces") {
  using namespace ps::tuner_detail;
  Spec spec = tiny_spec();
  spec.cluster.devices_per_node = 2;  // two nodes of two devices
  tuner_detail::SearchSpace sp = tiny_space(spec);
  sp.canonical = false;  // as the tuner sets it on several nodes: device names matter
  const double total = std::accumulate(sp.layer_ms.begin(), sp.layer_ms.end(), 0.0);
  const double biggest = *std::max_element(sp.layer_ms.begin(), sp.layer_ms.end());
  // Ramp-aware seeds count a device's start (the forward prefix of its first layer, over M) as load.
  std::vector<double> ramp(sp.layers, 0.0);
  for (int l = 1; l < sp.layers; ++l)
    ramp[l] = ramp[l - 1] + spec.model.type_of(l - 1).forward_ms / spec.pipeline.microbatches;
  int whole = 0, per_node = 0, zigzag = 0, vee = 0, ramp_aware = 0, banded = 0, warm_up_aware = 0;
  for (const Candidate& c : seed_candidates(sp, nullptr, nullptr)) {
    if (c.origin.find("layers packed in order") == std::string::npos) continue;
    CAPTURE(c.origin);
    const bool on_nodes = c.origin.find("per node") != std::string::npos;
    const bool refined = c.origin.find("node cuts refined") != std::string::npos;
    const bool with_ramp = c.origin.find("ramp-aware") != std::string::npos;
    if (c.origin.find("in bands") != std::string::npos) {
      // Dealt in bands: one layer of every band of `per node` layers per device, and the polish
      // swaps one for one, so the devices of a node hold as many layers as each other, +-1.
      ++banded;
      std::vector<int> count(4, 0);
      for (int s = 0; s < c.stages(); ++s) count[c.placement[s]] += c.cuts[s + 1] - c.cuts[s];
      const int k = on_nodes ? 2 : 4;
      for (int d = 0; d < 4; ++d)
        for (int e = d / k * k; e < d / k * k + k; ++e) CHECK(std::abs(count[d] - count[e]) <= 1);
      for (int s = 0; s + 1 < c.stages(); ++s) CHECK(c.placement[s] != c.placement[s + 1]);
      continue;
    }
    if (c.origin.find("warm-up-aware") != std::string::npos) {
      // A device's cost is its load plus its estimated warm-up wait: the forward-weighted mean of
      // its layers' ramps. The polish stops when no move or swap off a node's costliest device
      // lowers the larger cost of the pair, first layers of each node's list pinned (they define
      // the starts); so no single move or swap may do it here.
      ++warm_up_aware;
      const int k = on_nodes ? 2 : 4;
      std::vector<double> base(4, 0), f(4, 0), fa(4, 0);
      std::vector<int> dev(sp.layers), seen(4 / k, 0);
      std::vector<char> pinned(sp.layers, 0);
      for (int s = 0; s < c.stages(); ++s)
        for (int l = c.cuts[s]; l < c.cuts[s + 1]; ++l) dev[l] = c.placement[s];
      for (int l = 0; l < sp.layers; ++l)
        if (seen[dev[l] / k]++ < k) pinned[l] = 1;
      auto add = [&](int l, int d, double sign) {
        base[d] += sign * sp.layer_ms[l];
        f[d] += sign * spec.model.type_of(l).forward_ms;
        fa[d] += sign * spec.model.type_of(l).forward_ms * ramp[l];
      };
      for (int l = 0; l < sp.layers; ++l) add(l, dev[l], 1);
      auto cost = [&](int d) { return base[d] + (f[d] > 0 ? fa[d] / f[d] : 0.0); };
      for (int node = 0; node < 4 / k; ++node) {
        int hi = node * k;
        for (int d = node * k; d < node * k + k; ++d)
          if (cost(d) > cost(hi) + 1e-9) hi = d;
        const double top = cost(hi);
        for (int a = 0; a < sp.layers; ++a) {
          if (dev[a] != hi || pinned[a]) continue;
          for (int to = node * k; to < node * k + k; ++to) {
            if (to == hi) continue;
            add(a, hi, -1), add(a, to, 1);  // move a
            CHECK_FALSE((cost(hi) < top - 1e-9 && cost(to) < top - 1e-9));
            for (int b = 0; b < sp.layers; ++b) {  // swap a with b
              if (dev[b] != to || pinned[b]) continue;
              add(b, to, -1), add(b, hi, 1);
              CHECK_FALSE((cost(hi) < top - 1e-9 && cost(to) < top - 1e-9));
              add(b, hi, -1), add(b, to, 1);
            }
            add(a, to, -1), add(a, hi, 1);
          }
        }
      }
      continue;
    }
    ramp_aware += with_ramp;
    std::vector<double> load(4, 0), start(4, 0);  // start: what a pinned first layer adds (ramp-aware)
    std::vector<int> first(4, -1);
    for (int s = 0; s < c.stages(); ++s)
      for (int l = c.cuts[s]; l < c.cuts[s + 1]; ++l) {
        const int d = c.placement[s];
        if (first[d] < 0) {
          first[d] = l;
          if (with_ramp) load[d] += ramp[l];
        }
        load[d] += sp.layer_ms[l];
      }
    for (int d = 0; d < 4; ++d) start[d] = with_ramp ? ramp[first[d]] + sp.layer_ms[first[d]] : 0.0;
    const double total_load = std::accumulate(load.begin(), load.end(), 0.0);
    for (int s = 0; s + 1 < c.stages(); ++s) CHECK(c.placement[s] != c.placement[s + 1]);  // neighbours merged
    int crossings = 0;
    for (int s = 0; s + 1 < c.stages(); ++s) crossings += (c.placement[s] / 2) != (c.placement[s + 1] / 2);
    if (!on_nodes) {
      whole += !with_ramp;
      // No single move or swap lowers the maximum: within one layer of the mean (or a device holds
      // only its pinned first layer).
      CHECK(*std::max_element(load.begin(), load.end()) <=
            std::max(total_load / 4 + biggest, *std::max_element(start.begin(), start.end())) + 1e-9);
      if (with_ramp) {
        // The first four layers, one per device, in chain order.
        for (int l = 0; l < 4; ++l) CHECK(device_of(c, l) == l);
      }
      continue;
    }
    // Within a node, within one layer of the node's mean.
    for (int node = 0; node < 2; ++node) {
      const double node_total = load[2 * node] + load[2 * node + 1];
      CHECK(std::max(load[2 * node], load[2 * node + 1]) <=
            std::max(node_total / 2 + biggest, std::max(start[2 * node], start[2 * node + 1])) + 1e-9);
    }
    CHECK(c.placement.front() / 2 == 0);
    if (c.origin.find("zigzag") != std::string::npos) {
      ++zigzag;
      const int pieces = std::stoi(c.origin.substr(c.origin.find("node, ") + 6));
      CHECK(crossings >= 1);
      CHECK(crossings <= pieces - 1);
    } else if (c.origin.find("V over the nodes with 2-layer fronts") != std::string::npos) {
      CHECK(crossings == 2);  // node 0, node 1, back to node 0 (which holds the end of the chain)
      CHECK(c.placement.back() / 2 == 0);
      if (refined) continue;  // the cuts between pieces moved for the device loads
      vee += !with_ramp;
      // The fronts: layers 0-1 on node 0, 2-3 on node 1.
      for (int l = 0; l < 4; ++l) CHECK(device_of(c, l) / 2 == l / 2);
      // The back pieces even out the node totals to within a layer.
      CHECK(std::abs(load[0] + load[1] - total / 2) <= biggest + 1e-9);
    } else {
      per_node += !refined && !with_ramp;
      CHECK(crossings == 1);
    }
  }
  CHECK(whole == 1);
  CHECK(per_node == 1);
  CHECK(zigzag >= 2);
  CHECK(vee == 1);
  CHECK(ramp_aware >= 4);
  CHECK(banded >= 2);
  CHECK(warm_up_aware >= 4);
}

TEST_CASE("tuner seeds: paced fronts give every device one front group of about equal forward time") {
  using namespace ps::tuner_detail;
  Spec spec = tiny_spec();
  spec.cluster.devices_per_node = 2;  // two nodes of two devices
  SearchSpace sp = tiny_space(spec);
  sp.canonical = false;
  sp.head_ms = forward_heads_ms(spec.model);
  const int P = sp.devices;
  std::vector<double> fwd(sp.layers);
  for (int l = 0; l < sp.layers; ++l) fwd[l] = spec.model.type_of(l).forward_ms;
  const double pace = std::accumulate(fwd.begin(), fwd.end(), 0.0) / (kPacedFrontRounds * P);
  const double share = std::accumulate(sp.layer_ms.begin(), sp.layer_ms.end(), 0.0) / P;
  int light = 0;
  for (double t : sp.layer_ms) light += t > share / 2 + 1e-9;
  REQUIRE(light < P);
  // The front groups, from the chain alone: the first `light` one layer each, then each as near
  // the pace as a layer more or less would make it.
  std::vector<int> starts{0};
  for (int g = 0; g < P; ++g) {
    int end = starts.back() + 1;
    double f = fwd[starts.back()];
    while (g >= light && end < sp.layers && std::abs(f + fwd[end] - pace) < std::abs(f - pace)) f += fwd[end++];
    starts.push_back(end);
  }
  REQUIRE(starts.back() < sp.layers);
  CHECK(starts.back() > P);  // some group holds more than one layer
  const std::vector<Candidate> seeds = paced_front_seeds(sp);
  REQUIRE(seeds.size() >= 2);
  int vee = 0;
  for (const Candidate& c : seeds) {
    CAPTURE(c.origin);
    CHECK(c.origin.find("paced front") != std::string::npos);
    std::vector<int> dev(sp.layers);
    for (int s = 0; s < c.stages(); ++s)
      for (int l = c.cuts[s]; l < c.cuts[s + 1]; ++l) dev[l] = c.placement[s];
    // Every group stays whole on one device; neighbours on one device are one stage.
    for (int g = 0; g < P; ++g)
      for (int l = starts[g]; l < starts[g + 1]; ++l) CHECK(dev[l] == dev[starts[g]]);
    for (int s = 0; s + 1 < c.stages(); ++s) CHECK(c.placement[s] != c.placement[s + 1]);
    // The V over the nodes with one front group per device: node 0's devices take the first
    // groups, node 1's the next, each device one (pinned), so every device starts on its group.
    // (Refining the node cuts may move a group to the other node.)
    if (c.origin.find("V over the nodes with 2-layer fronts") != std::string::npos &&
        c.origin.find("refined") == std::string::npos) {
      ++vee;
      std::set<int> used;
      for (int g = 0; g < P; ++g) {
        CHECK(dev[starts[g]] / 2 == g / 2);
        used.insert(dev[starts[g]]);
      }
      CHECK(static_cast<int>(used.size()) == P);
    }
  }
  CHECK(vee >= 1);
  // One node: no paced seeds (the gate and the seeds are for multi-node plans).
  spec.cluster.devices_per_node = 4;
  CHECK(paced_front_seeds(sp).empty());
}

// The wave seeds' objective, recomputed here from its definition (moves.h): every layer's ops on
// the ideal schedule (microbatch j's forward at a_l + j·delta, its input gradient at c_l + j·delta),
// the time two layers on one device overlap there, plus kWaveBalance times each device's work
// (M x F+I+W) above the mean; on nodes of `per_node` devices (> 0), plus kWaveCrossWeight times the
// inter-node transfers (M forward, M back) of each boundary whose two layers sit on two nodes.
double wave_objective(const Spec& spec, const std::vector<int>& dev, int P, double delta, int per_node = 0,
                      double stage_cost = 0) {
  const int L = static_cast<int>(dev.size()), M = spec.pipeline.microbatches;
  std::vector<double> f(L), b(L), a(L, 0.0), c(L, 0.0), load(P, 0.0);
  double total = 0;
  for (int l = 0; l < L; ++l) {
    const LayerType& t = spec.model.type_of(l);
    f[l] = t.forward_ms;
    b[l] = t.backward_input_ms;
    if (l > 0) a[l] = a[l - 1] + f[l - 1];
    const double w = M * layer_time_ms(spec.model, LayerId{l});
    load[dev[l]] += w;
    total += w;
  }
  c[L - 1] = a[L - 1] + f[L - 1];
  for (int l = L - 2; l >= 0; --l) c[l] = c[l + 1] + b[l + 1];
  double obj = 0;
  for (int x = 0; x < L; ++x)
    for (int y = x + 1; y < L; ++y) {
      if (dev[x] != dev[y]) continue;
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < M; ++j)
          for (const auto& [sx, lx] : {std::pair{a[x] + i * delta, f[x]}, std::pair{c[x] + i * delta, b[x]}})
            for (const auto& [sy, ly] : {std::pair{a[y] + j * delta, f[y]}, std::pair{c[y] + j * delta, b[y]}})
              obj += std::max(0.0, std::min(sx + lx, sy + ly) - std::max(sx, sy));
    }
  for (int d = 0; d < P; ++d) obj += tuner_detail::kWaveBalance * std::max(0.0, load[d] - total / P);
  for (int l = 0; l + 1 < L; ++l) obj += dev[l] != dev[l + 1] ? stage_cost : 0;
  if (per_node > 0)
    for (int l = 0; l + 1 < L; ++l)
      if (dev[l] / per_node != dev[l + 1] / per_node)
        obj += tuner_detail::kWaveCrossWeight * 2 * M *
               spec.cluster.inter_node_link.transfer_ms(spec.model.type_of(l).output_mb);
  return obj;
}

TEST_CASE("tuner seeds: wave seeds place the layers where their ideal waves meet little at M <= 2P") {
  using namespace ps::tuner_detail;
  Spec spec = tiny_spec();  // 11 layers, P = 4, M = 8
  SearchSpace sp = tiny_space(spec);
  sp.canonical = false;
  const int P = sp.devices;
  // One node, and two of two devices whose link is slow (the chain should cross it rarely).
  for (int per_node : {0, 2}) {
  CAPTURE(per_node);
  spec.cluster.devices_per_node = per_node;
  spec.cluster.inter_node_link = LinkModel{5, 20};
  const std::vector<Candidate> seeds = wave_seeds(sp, 3);
  REQUIRE(seeds.size() == std::size(kWaveFactors) * kWaveSeedsPerFactor);
  double longest = 0;
  for (int l = 0; l < sp.layers; ++l)
    longest = std::max({longest, spec.model.type_of(l).forward_ms, spec.model.type_of(l).backward_input_ms});
  for (size_t i = 0; i < seeds.size(); ++i) {
    const Candidate& c = seeds[i];
    CAPTURE(c.origin);
    CHECK(c.origin.find("wave x") != std::string::npos);
    // Neighbours on one device are one stage.
    for (int s = 0; s + 1 < c.stages(); ++s) CHECK(c.placement[s] != c.placement[s + 1]);
    std::vector<int> dev(sp.layers);
    for (int s = 0; s < c.stages(); ++s)
      for (int l = c.cuts[s]; l < c.cuts[s + 1]; ++l) dev[l] = c.placement[s];
    // The local search ends where no single move or swap lowers the objective.
    const double delta = kWaveFactors[i / kWaveSeedsPerFactor] * longest;
    const double here = wave_objective(spec, dev, P, delta, per_node);
    for (int l = 0; l < sp.layers; ++l) {
      for (int d = 0; d < P; ++d) {
        if (d == dev[l]) continue;
        std::vector<int> moved = dev;
        moved[l] = d;
        if (std::set<int>(moved.begin(), moved.end()).size() < static_cast<size_t>(P)) continue;
        CHECK_MESSAGE(wave_objective(spec, moved, P, delta, per_node) >= here - 1e-6, "layer ", l, " to device ", d);
      }
      for (int m = l + 1; m < sp.layers; ++m) {
        if (dev[m] == dev[l]) continue;
        std::vector<int> swapped = dev;
        std::swap(swapped[l], swapped[m]);
        CHECK_MESSAGE(wave_objective(spec, swapped, P, delta, per_node) >= here - 1e-6, "swap ", l, " and ", m);
      }
    }
    if (per_node > 0) {
      int crossings = 0;
      for (int l = 0; l + 1 < sp.layers; ++l) crossings += dev[l] / per_node != dev[l + 1] / per_node;
      CHECK(crossings >= 1);
      CHECK(crossings <= 2);
    }
  }
  // Deterministic in the seed.
  const std::vector<Candidate> again = wave_seeds(sp, 3);
  REQUIRE(again.size() == seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) {
    CHECK(again[i].cuts == seeds[i].cuts);
    CHECK(again[i].placement == seeds[i].placement);
  }
  }
  spec.cluster.devices_per_node = 0;
  // Room for 5 stages only: dealt again with a cost per stage boundary (the longest op, doubled),
  // so every seed fits, and each is a local optimum of the objective with one of those costs.
  sp.max_stages = 5;
  double longest = 0;
  for (int l = 0; l < sp.layers; ++l)
    longest = std::max({longest, spec.model.type_of(l).forward_ms, spec.model.type_of(l).backward_input_ms});
  const std::vector<Candidate> few = wave_seeds(sp, 3);
  CHECK(few.size() == std::size(kWaveFactors) * kWaveSeedsPerFactor);
  for (size_t i = 0; i < few.size(); ++i) {
    const Candidate& c = few[i];
    CAPTURE(c.origin);
    CHECK(c.stages() <= 5);
    std::vector<int> dev(sp.layers);
    for (int s = 0; s < c.stages(); ++s)
      for (int l = c.cuts[s]; l < c.cuts[s + 1]; ++l) dev[l] = c.placement[s];
    CHECK(std::set<int>(dev.begin(), dev.end()).size() == static_cast<size_t>(P));
    const double delta = kWaveFactors[i / kWaveSeedsPerFactor] * longest;
    bool some_cost = false;
    for (int t = 1; t <= kWaveStageCostDoublings && !some_cost; ++t) {
      const double cost = longest * std::pow(2.0, t - 1);
      const double here = wave_objective(spec, dev, P, delta, 0, cost);
      bool local = true;
      for (int l = 0; l < sp.layers && local; ++l)
        for (int m = l + 1; m < sp.layers && local; ++m) {
          std::vector<int> swapped = dev;
          std::swap(swapped[l], swapped[m]);
          local = dev[l] == dev[m] || wave_objective(spec, swapped, P, delta, 0, cost) >= here - 1e-6;
        }
      some_cost = local;
    }
    CHECK(some_cost);
  }
  sp.max_stages = 11;
  // None above M = 2P or with the placement fixed.
  spec.pipeline.microbatches = 2 * P + 1;
  CHECK(wave_seeds(sp, 3).empty());
  spec.pipeline.microbatches = 8;
  sp.fixed_placement = true;
  CHECK(wave_seeds(sp, 3).empty());
}

TEST_CASE("tuner: wave seeds are tried at M <= 2P on one node and the result stays certified") {
  Spec spec = tiny_spec();
  TuneOptions o = quick_options();
  o.max_evaluations = 120;
  Result<TuneResult> r = cooptimize(spec, o);
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  CHECK(r->stats.wave_seeds > 0);  // the distinct ones (some seeds may coincide)
  CHECK(check(r->schedule).valid);
  CHECK(r->simulated_ms >= r->lower_bound_ms - 1e-6);
  spec.pipeline.microbatches = 16;  // M = 4P: none
  Result<TuneResult> long_run = cooptimize(spec, o);
  REQUIRE_MESSAGE(long_run.ok(), long_run.status().str());
  CHECK(long_run->stats.wave_seeds == 0);
  CHECK_FALSE(long_run->stats.wave_admitted);
}

TEST_CASE("tuner: under a memory cap the wave seeds' search is part of the search without recomputation") {
  // 35 GB on 4 devices: some plans need recomputation, so the search runs in two phases; the
  // wave seeds get their search in the first, the recompute phase still runs after it.
  const Spec spec = tiny_spec(35);
  TuneOptions o = quick_options();
  o.max_evaluations = 120;
  Result<TuneResult> r = cooptimize(spec, o);
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  CHECK(r->stats.wave_seeds > 0);
  CHECK(r->stats.wave_admitted);
  CHECK(r->stats.moves_recompute > 0);
  // The first phase's budget, then as many evaluations again for the recompute phase.
  CHECK(r->stats.evaluated > o.max_evaluations);
  CHECK(r->stats.stop_reason == SearchStop::kEvaluationBudget);
  const Report rep = check(r->schedule);
  CHECK_MESSAGE(rep.valid, format_report(rep));
  CHECK(rep.memory_limit_gb == 35);
  CHECK(r->simulated_ms >= r->lower_bound_ms - 1e-6);
  Result<TuneResult> again = cooptimize(spec, o);
  REQUIRE(again.ok());
  CHECK(again->simulated_ms == r->simulated_ms);
  CHECK(again->stats.evaluated == r->stats.evaluated);
}

TEST_CASE("tuner: where several searches run, the stop reported is the one that says most") {
  using S = SearchStop;
  const S order[] = {S::kInterrupted, S::kTimeLimit, S::kEvaluationBudget, S::kReachedBound, S::kConverged,
                     S::kFixed};
  for (size_t i = 0; i < std::size(order); ++i)
    for (size_t j = 0; j < std::size(order); ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(binding_stop(order[i], order[j]) == order[std::min(i, j)]);
    }
}

TEST_CASE("[slow] tuner: paced-front seeds start the search only when their best beats every other seed") {
  // Nemotron-H on two nodes of 8 at M = 64: the lean portfolio ranks its best paced seed 1.5 %
  // ahead of the best plain one (docs/tuner.md), so they are admitted. An evaluation budget keeps
  // it deterministic on any machine. (tests/cli/test_synth.cpp has a case where they lose.)
  SpecOverrides ov;
  ov.devices = 16;
  ov.microbatches = 64;
  Result<Spec> spec = load_spec(std::string(PIPESMITH_SOURCE_DIR) + "/configs/models/nemotron-h-like.yaml",
                                std::string(PIPESMITH_SOURCE_DIR) + "/configs/clusters/2x8-h100.yaml", ov);
  REQUIRE_MESSAGE(spec.ok(), spec.status().str());
  TuneOptions o;
  o.max_evaluations = 150;
  o.time_limit_s = 600;  // a safety net; the budget ends the search
  o.include_baselines = false;
  Result<TuneResult> r = cooptimize(*spec, o);
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  CHECK(r->stats.paced_seeds > 0);
  CHECK(r->stats.paced_admitted);
  Report rep = check(r->schedule);
  CHECK_MESSAGE(rep.valid, format_report(rep));
  // One node of 16: no paced seeds at all.
  spec->cluster.devices_per_node = 16;
  o.max_evaluations = 40;
  Result<TuneResult> one = cooptimize(*spec, o);
  REQUIRE_MESSAGE(one.ok(), one.status().str());
  CHECK(one->stats.paced_seeds == 0);
  CHECK_FALSE(one->stats.paced_admitted);
}

TEST_CASE("tuner: well-balanced plans the screening ranks low get the whole portfolio") {
  const Spec spec = tiny_spec();
  TuneOptions o = quick_options();
  o.max_evaluations = 200;
  o.full_portfolio_by_floor = false;
  Result<TuneResult> off = cooptimize(spec, o);
  o.full_portfolio_by_floor = true;
  Result<TuneResult> on = cooptimize(spec, o);
  REQUIRE_MESSAGE(off.ok(), off.status().str());
  REQUIRE_MESSAGE(on.ok(), on.status().str());
  CHECK(off->stats.floor_portfolios == 0);
  // Such evaluations are asked for, and the result stays certified.
  CHECK(on->stats.floor_portfolios > 0);
  CHECK(check(on->schedule).valid);
  CHECK(on->simulated_ms >= on->lower_bound_ms - 1e-6);
}

TEST_CASE("tuner: at M >= 4P the search re-scores with the lean portfolio, and the end with the whole one") {
  Spec spec = tiny_spec();  // 4 devices
  TuneOptions o = quick_options();
  o.max_evaluations = 150;
  spec.pipeline.microbatches = 16;  // M = 4P
  Result<TuneResult> lean = cooptimize(spec, o);
  REQUIRE_MESSAGE(lean.ok(), lean.status().str());
  CHECK(lean->stats.lean_evaluations > 0);
  CHECK(lean->stats.whole_evaluations > 0);  // the polish before the checker
  CHECK(check(lean->schedule).valid);
  o.lean_search = false;
  Result<TuneResult> whole = cooptimize(spec, o);
  REQUIRE_MESSAGE(whole.ok(), whole.status().str());
  CHECK(whole->stats.lean_evaluations == 0);
  CHECK(whole->stats.whole_evaluations > 0);
  o.lean_search = true;
  spec.pipeline.microbatches = 8;  // M = 2P: the ramp's order matters more
  Result<TuneResult> few = cooptimize(spec, o);
  REQUIRE_MESSAGE(few.ok(), few.status().str());
  CHECK(few->stats.lean_evaluations == 0);
  CHECK(check(few->schedule).valid);
}

TEST_CASE("tuner evaluation: a stop that turns true ends it between policies, marked stopped, not scored") {
  using namespace ps::tuner_detail;
  const Spec spec = tiny_spec();
  Candidate c;
  c.cuts = {0, 2, 9, 10, 11};
  c.placement = {0, 1, 2, 3};
  for (int set : {0, 1, 2}) {
    c.policy_set = set;
    INFO("policy set " << set);
    const Evaluation whole = evaluate_candidate(spec, c);
    REQUIRE(whole.feasible);
    CHECK_FALSE(whole.stopped);
    CHECK(whole.ops == default_dag_ops(*make_problem(spec, c.partition(), c.placement)));
    const Evaluation at_once = evaluate_candidate(spec, c, [] { return true; });
    CHECK(at_once.stopped);
    CHECK_FALSE(at_once.feasible);
    CHECK(at_once.order.order.empty());
    // A stop after the first policy: still stopped (the portfolio was cut short), never scored.
    int calls = 0;
    const Evaluation later = evaluate_candidate(spec, c, [&] { return ++calls > 1; });
    CHECK(later.stopped);
    CHECK_FALSE(later.feasible);
    // A stop that never fires changes nothing.
    const Evaluation never = evaluate_candidate(spec, c, [] { return false; });
    CHECK(never.makespan_ms == whole.makespan_ms);
    CHECK(never.policy == whole.policy);
  }
}
