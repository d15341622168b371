// Tests of the one-resource Z3 bound (synth/bounds/smt_bound.h) and of bounds proven under the
// exact memory numbers (op_dag.h, MemoryRounding): the relaxation bound is strictly above the DAG
// and destructive bounds where memory sums bind and equals brute force there, never passes a proven
// optimum on random small plans, is deterministic, keeps to its budget, and a DAG whose memory is
// rounded the safe way proves more than is true where the relaxed rounding does not.
#include <doctest/doctest.h>

#include <atomic>
#include <random>
#include <string>

#include "synth/bounds/dag_bounds.h"
#include "synth/bounds/smt_bound.h"
#include "synth/certify.h"
#include "synth/dag/list_scheduler.h"
#include "synth/dag/op_dag.h"
#include "synth/dag/schedule_order.h"
#include "synth/synth_problems.h"
#include "synth/synthesize.h"
#include "synth/z3/solve.h"

using namespace ps;
using pstest::HandProblem;
using pstest::make_hand_problem;

namespace {

OpDag smt_dag_of(const HandProblem& h, const DagOptions& o = {}) {
  Result<OpDag> dag = build_op_dag(make_hand_problem(h), o);
  REQUIRE(dag.ok());
  return std::move(dag).value();
}

int64_t heuristic_makespan(const OpDag& dag) {
  Result<HeuristicResult> h = heuristic_schedule(dag);
  REQUIRE(h.ok());
  return h->best.makespan;
}

// The destructive bound with a search budget far above what these plans need.
int64_t destructive(const OpDag& dag, int64_t upper) {
  DestructiveOptions o;
  o.upper = upper;
  o.search_work = 2'000'000'000;
  return destructive_lower_bound(dag, o).bound.units;
}

SmtBoundOptions generous() {
  SmtBoundOptions o;
  o.rlimit = 50'000'000;
  o.time_limit_s = 120;  // the rlimit decides
  return o;
}

// P = 3, M = 3, room for two activations per device, 400 of each 1000 MB stashed until W.
HandProblem stash_bound_plan() {
  HandProblem h;
  h.devices = 3;
  h.microbatches = 3;
  h.cap_microbatches = 2;
  h.stash_mb = 400;
  h.heterogeneous = true;
  return h;
}

}  // namespace

TEST_CASE("smt bound: strictly above the DAG and destructive bounds where the stash binds, equal to brute force") {
  const OpDag dag = smt_dag_of(stash_bound_plan());
  const int64_t upper = heuristic_makespan(dag);
  const int64_t dag_bound = dag_lower_bound(dag).units;
  const int64_t strong = destructive(dag, upper);
  // Device 0 holds two microbatches; the stashes of I'd microbatches keep it full until their W, which
  // the memory edges (one per F, from the cap alone) do not see.
  CHECK(dag_bound == 75);
  CHECK(strong == 75);
  Result<SmtBound> sb = smt_lower_bound(dag, strong, upper, generous());
  REQUIRE(sb.ok());
  CHECK(sb->raised);
  CHECK(sb->by_z3);
  CHECK(sb->device == 0);
  CHECK(sb->units == 78);
  CHECK(sb->reason.find("z3 relaxation: device 0 alone") == 0);
  CHECK(sb->reason.find("memory cap") != std::string::npos);
  // Every per-device order (microbatches in order per stage and kind, which loses no optimum),
  // comm streams first come, first served: at least the optimum, so 78 is exact.
  CHECK(pstest::brute_force_optimum(dag, EdgeSet::kAll) == 78);
  // Without the memory sums the relaxation does not see it.
  SmtBoundOptions no_mem = generous();
  no_mem.memory = false;
  Result<SmtBound> nm = smt_lower_bound(dag, strong, upper, no_mem);
  REQUIRE(nm.ok());
  CHECK(nm->units < 78);
}

TEST_CASE("smt bound: never above Z3's proven optimum on random small plans") {
  std::mt19937 rng(12345);
  int compared = 0, raised = 0;
  for (int trial = 0; trial < 14; ++trial) {
    HandProblem h;
    h.devices = 2 + static_cast<int>(rng() % 2);
    h.stages_per_device = 1 + static_cast<int>(rng() % 2);
    h.microbatches = 2 + static_cast<int>(rng() % (h.stages_per_device == 2 ? 2 : 3));
    h.heterogeneous = rng() % 2 == 0;
    h.split_backward = rng() % 4 != 0;
    h.stash_mb = 100.0 * static_cast<double>(rng() % 6);
    h.fwd_ms = 2 + static_cast<double>(rng() % 4);
    h.bwd_input_ms = 2 + static_cast<double>(rng() % 4);
    h.bwd_weight_ms = 1 + static_cast<double>(rng() % 3);
    const double caps[] = {0, 1.5, 2, 2.5, 3};
    h.cap_microbatches = caps[rng() % 5] * h.stages_per_device;
    CAPTURE(trial);
    CAPTURE(h.devices);
    CAPTURE(h.stages_per_device);
    CAPTURE(h.microbatches);
    CAPTURE(h.cap_microbatches);
    CAPTURE(h.stash_mb);
    Result<OpDag> dag = build_op_dag(make_hand_problem(h));
    if (!dag.ok()) continue;  // a cap below one microbatch per stage
    Result<HeuristicResult> heur = heuristic_schedule(*dag);
    REQUIRE(heur.ok());
    SolveOptions so;
    so.time_limit_s = 120;
    so.rlimit = 60'000'000;
    Result<SolveResult> z = solve(*dag, heur->best, 0, so);
    REQUIRE(z.ok());
    if (!z->optimal) continue;
    const int64_t lower = dag_lower_bound(*dag).units;
    for (bool windows : {true, false}) {
      SmtBoundOptions o = generous();
      o.windows = windows;
      Result<SmtBound> sb = smt_lower_bound(*dag, lower, heur->best.makespan, o);
      REQUIRE(sb.ok());
      CHECK(sb->units >= lower);
      CHECK(sb->units <= z->best.makespan);
      if (sb->units > lower) ++raised;
    }
    ++compared;
  }
  CHECK(compared >= 10);
  CHECK(raised > 0);
}

TEST_CASE("smt bound: static heads and tails, comm streams, and the bound stays between lower and upper") {
  const OpDag dag = smt_dag_of(stash_bound_plan());
  const int64_t upper = heuristic_makespan(dag);
  SmtBoundOptions o = generous();
  o.windows = false;  // [head, T - tail] only: weaker, still a bound
  Result<SmtBound> sb = smt_lower_bound(dag, 0, upper, o);
  REQUIRE(sb.ok());
  CHECK(sb->units >= dag_lower_bound(dag).units);
  CHECK(sb->units <= 78);
  // A lower bound at or above the upper one: nothing to do.
  Result<SmtBound> none = smt_lower_bound(dag, upper, upper, generous());
  REQUIRE(none.ok());
  CHECK_FALSE(none->raised);
  CHECK(none->units == upper);
  CHECK(none->checks == 0);
}

TEST_CASE("smt bound: deterministic for a seed and rlimit; a tiny budget skips, an interrupt stops") {
  HandProblem h;
  h.devices = 3;
  h.microbatches = 4;
  h.stages_per_device = 2;
  h.cap_microbatches = 4;
  h.stash_mb = 200;
  h.heterogeneous = true;
  const OpDag dag = smt_dag_of(h);
  const int64_t upper = heuristic_makespan(dag);
  const int64_t lower = dag_lower_bound(dag).units;
  SmtBoundOptions o = generous();
  o.rlimit = 3'000'000;
  Result<SmtBound> a = smt_lower_bound(dag, lower, upper, o);
  Result<SmtBound> b = smt_lower_bound(dag, lower, upper, o);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->raised);
  CHECK(a->units == b->units);
  CHECK(a->checks == b->checks);
  CHECK(a->trials == b->trials);
  CHECK(a->rlimit_used == b->rlimit_used);
  CHECK(a->reason == b->reason);
  CHECK(a->rlimit_used <= o.rlimit + o.rlimit / 8);

  SmtBoundOptions tiny = generous();
  tiny.rlimit = 1000;  // not enough to load any relaxation
  Result<SmtBound> t = smt_lower_bound(dag, lower, upper, tiny);
  REQUIRE(t.ok());
  CHECK_FALSE(t->raised);
  CHECK(t->units == lower);
  CHECK(t->checks == 0);
  CHECK(t->skipped > 0);

  std::atomic<bool> stop{true};
  SmtBoundOptions stopped = generous();
  stopped.interrupt = &stop;
  Result<SmtBound> s = smt_lower_bound(dag, lower, upper, stopped);
  REQUIRE(s.ok());
  CHECK(s->units == lower);
  CHECK(s->checks == 0);
}

TEST_CASE("inexact memory: the safe rounding proves a false bound, the relaxed one and synthesize() do not") {
  // Activations of 1000.0004 MB (not whole units of 0.001 MB) and a cap of 2000.001 MB: two
  // microbatches fit exactly (2000.0008 MB), but the safe rounding (allocations up, the cap shrunk
  // by a unit per op) lets only one be live, which serializes device 0.
  HandProblem h;
  h.devices = 2;
  h.microbatches = 4;
  h.act_mb = 1000.0004;
  Problem p = make_hand_problem(h);
  p.memory_gb = 2.000001;
  Result<OpDag> safe = build_op_dag(p);
  DagOptions ro;
  ro.memory_rounding = MemoryRounding::kRelaxed;
  Result<OpDag> relaxed = build_op_dag(p, ro);
  REQUIRE(safe.ok());
  REQUIRE(relaxed.ok());
  CHECK_FALSE(safe->mem_exact);
  CHECK_FALSE(safe->bounds_are_proofs());
  CHECK(relaxed->bounds_are_proofs());
  REQUIRE(relaxed->num_ops() == safe->num_ops());

  // A schedule with two microbatches live, from the relaxed DAG, passes the checker at the exact numbers.
  Result<HeuristicResult> hr = heuristic_schedule(*relaxed);
  REQUIRE(hr.ok());
  VerifyOptions vo;
  vo.semantics = Semantics::kRendezvous;
  Result<CertifiedSchedule> two_live = certify_schedule(order_to_schedule(p, *relaxed, hr->best, "test"), vo);
  REQUIRE(two_live.ok());
  REQUIRE(two_live->report.sim.has_value());
  const double real_ms = two_live->report.sim->makespan_ms;

  // The safe DAG's bound is above that schedule: not a proof. The relaxed DAG's is not.
  const int64_t safe_bound = destructive(*safe, heuristic_makespan(*safe));
  const int64_t relaxed_bound = destructive(*relaxed, hr->best.makespan);
  CHECK(safe->to_ms(safe_bound) > real_ms + 1);
  CHECK(relaxed->to_ms(relaxed_bound) <= real_ms);
  Result<SmtBound> sb = smt_lower_bound(*relaxed, relaxed_bound, hr->best.makespan, generous());
  REQUIRE(sb.ok());
  CHECK(relaxed->to_ms(sb->units) <= real_ms);
  // Z3 on the safe DAG finds nothing better than its serialized order and proves nothing.
  SolveOptions so;
  so.time_limit_s = 120;
  so.rlimit = 20'000'000;
  Result<HeuristicResult> hs = heuristic_schedule(*safe);
  REQUIRE(hs.ok());
  Result<SolveResult> z = solve(*safe, hs->best, 0, so);
  REQUIRE(z.ok());
  CHECK(z->bound == 0);
  CHECK_FALSE(z->optimal);

  // synthesize(): orders within the exact cap, every bound a proof under the exact numbers.
  SynthOptions opt;
  opt.time_limit_s = 120;
  opt.rlimit = 20'000'000;
  Result<SynthResult> r = synthesize(p, opt);
  REQUIRE(r.ok());
  CHECK(r->report.valid);
  CHECK(r->bound_ms <= real_ms + 1e-9);
  CHECK(r->dag_bound_ms <= real_ms + 1e-9);
  CHECK(r->bound_ms <= r->makespan_ms + 1e-9);
  REQUIRE(r->schedule.certificate.has_value());
  CHECK(std::stod(r->schedule.certificate->extra.at("bound_proven_ms")) <= real_ms + 1e-6);
}

TEST_CASE("synthesize: the one-resource bound raises the proof, and the certificate says 'z3 relaxation'") {
  SynthOptions opt;
  opt.time_limit_s = 120;
  opt.rlimit = 20'000'000;
  Result<SynthResult> r = synthesize(make_hand_problem(stash_bound_plan()), opt);
  REQUIRE(r.ok());
  CHECK(r->report.valid);
  CHECK(r->dag_bound_ms == doctest::Approx(78));
  CHECK(r->bound_ms == doctest::Approx(78));
  CHECK(r->makespan_ms == doctest::Approx(78));
  CHECK(r->optimal);
  REQUIRE(r->schedule.certificate.has_value());
  CHECK(r->schedule.certificate->extra.at("bound_method") == "z3 relaxation");
}
