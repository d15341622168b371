// Tests of the Z3 encoding and the anytime driver (synth/z3/encode.h, synth/z3/solve.h): Z3's optimum
// equals a brute-force optimum on tiny problems (so symmetry breaking and memory edges lose
// nothing), proofs of optimality on small ones, determinism under an rlimit budget.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "synth/z3/encode.h"
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

SolveResult solve_to_optimum(const OpDag& dag, uint64_t rlimit = 50'000'000, bool warm_start = false) {
  Result<HeuristicResult> h = heuristic_schedule(dag);
  REQUIRE(h.ok());
  SolveOptions so;
  so.time_limit_s = 120;
  so.rlimit = rlimit;
  so.warm_start = warm_start;
  // Force Z3 to run even where the heuristic meets the bound: start from a weak bound.
  Result<SolveResult> r = solve(dag, h->best, 0, so);
  REQUIRE(r.ok());
  return *r;
}

// The brute-force optimum over all orders (no symmetry breaking) and Z3's result with it.
struct BruteVsZ3 {
  int64_t brute = 0;
  SolveResult z3;
};
BruteVsZ3 brute_vs_z3(const Problem& p, bool warm_start = false) {
  DagOptions no_sym;
  no_sym.symmetry = false;
  Result<OpDag> full = build_op_dag(p, no_sym);
  Result<OpDag> sym = build_op_dag(p);
  REQUIRE(full.ok());
  REQUIRE(sym.ok());
  return {pstest::brute_force_optimum(*full, EdgeSet::kDataOnly), solve_to_optimum(*sym, 50'000'000, warm_start)};
}

}  // namespace

TEST_CASE("encode: Z3's optimum equals brute force over all orders, with and without symmetry/caps") {
  for (const HandProblem& h : pstest::brute_force_sized_problems()) {
    CAPTURE(h.cap_microbatches);
    CAPTURE(h.split_backward);
    const auto [brute, r] = brute_vs_z3(make_hand_problem(h));
    REQUIRE(brute > 0);
    CHECK(r.optimal);
    CHECK(r.best.makespan == brute);
    CHECK(r.bound == brute);
  }
}

TEST_CASE("encode: warm-started (the incumbent as Z3's initial values), Z3 still proves the brute-force optimum") {
  // Z3 >= 4.13.1 has initial values; the difference-logic solver answers "incomplete" under them, so a
  // warm start switches the arithmetic solver: the proofs must survive that.
  int major = 0, minor = 0, patch = 0;
  REQUIRE(std::sscanf(z3_version().c_str(), "%d.%d.%d", &major, &minor, &patch) == 3);
  CHECK(warm_start_available() == (std::make_tuple(major, minor, patch) >= std::make_tuple(4, 13, 1)));
  for (const HandProblem& h : pstest::brute_force_sized_problems()) {
    CAPTURE(h.cap_microbatches);
    CAPTURE(h.split_backward);
    const auto result = brute_vs_z3(make_hand_problem(h), true);
    const int64_t brute = result.brute;
    const SolveResult& r = result.z3;
    CAPTURE(r.status);
    CHECK(r.optimal);
    CHECK(r.best.makespan == brute);
    CHECK(r.bound == brute);
  }
}

TEST_CASE("encode: V-shape with two stages per device matches brute force") {
  HandProblem h;
  h.devices = 2;
  h.microbatches = 2;
  h.stages_per_device = 2;
  h.split_backward = false;  // keeps the brute force at 70 orders per device
  h.heterogeneous = true;
  h.cap_microbatches = 3;
  const auto [brute, r] = brute_vs_z3(make_hand_problem(h));
  CHECK(r.optimal);
  CHECK(r.best.makespan == brute);
}

TEST_CASE("encode: names, free pairs and pseudo-Boolean memory constraints") {
  HandProblem h;
  h.devices = 2;
  h.microbatches = 3;
  h.stages_per_device = 2;
  h.cap_microbatches = 3;
  h.stash_mb = 300;
  Result<OpDag> dag = build_op_dag(make_hand_problem(h));
  REQUIRE(dag.ok());
  DeviceReach reach(*dag);
  Result<std::unique_ptr<Encoding>> e = Encoding::create(*dag, reach);
  REQUIRE(e.ok());
  Encoding& enc = **e;
  CHECK(enc.num_free_pairs() > 0);
  CHECK(enc.num_memory_constraints() > 0);  // several stages per device: PB sums needed
  // Fixed pairs become constants; free ones share the two atoms.
  const int f0 = dag->f_op(0, 0), f1 = dag->f_op(0, 1);
  CHECK(enc.before(f0, f1).is_true());
  CHECK(enc.before(f1, f0).is_false());
  const std::string smt2 = enc.to_smt2();
  CHECK(smt2.find("start[F,s0,mb0]") != std::string::npos);
  CHECK(smt2.find("(check-sat)") != std::string::npos);
}

TEST_CASE("solve: proven optimal on P = 2..4, M = 4..8, uniform and capped, heterogeneous") {
  int z3_proofs = 0;
  for (int P : {2, 3, 4}) {
    for (int M : {4, 8}) {
      for (double cap : {0.0, 2.0}) {
        HandProblem h;
        h.devices = P;
        h.microbatches = M;
        h.cap_microbatches = cap;
        h.heterogeneous = true;
        CAPTURE(P);
        CAPTURE(M);
        CAPTURE(cap);
        Result<OpDag> dag = build_op_dag(make_hand_problem(h));
        REQUIRE(dag.ok());
        Result<HeuristicResult> heur = heuristic_schedule(*dag);
        REQUIRE(heur.ok());
        SolveOptions so;
        so.time_limit_s = 60;
        so.rlimit = 40'000'000;
        const int64_t lb = dag_lower_bound(*dag).units;
        Result<SolveResult> r = solve(*dag, heur->best, lb, so);
        REQUIRE(r.ok());
        CHECK(r->optimal);
        CHECK(r->best.makespan <= heur->best.makespan);
        CHECK(r->bound == r->best.makespan);
        CHECK(r->best.makespan >= lb);
        if (r->checks > 0 && r->best.makespan > lb) ++z3_proofs;  // UNSAT below the incumbent
        REQUIRE(evaluate_order(*dag, r->best.order).ok());
      }
    }
  }
  CHECK(z3_proofs > 0);  // some shapes need Z3's proof, not just the bound
}

namespace {

// P = 4, M = 8, heterogeneous costs, a cap of 4 microbatches: the heuristic is not optimal here.
HandProblem capped_hetero() {
  HandProblem h;
  h.devices = 4;
  h.microbatches = 8;
  h.cap_microbatches = 4;
  h.heterogeneous = true;
  return h;
}

}  // namespace

TEST_CASE("solve: Z3 improves on the heuristic where the cap binds, and is deterministic") {
  Result<OpDag> dag = build_op_dag(make_hand_problem(capped_hetero()));
  REQUIRE(dag.ok());
  Result<HeuristicResult> heur = heuristic_schedule(*dag);
  REQUIRE(heur.ok());
  SolveOptions so;
  so.time_limit_s = 120;
  so.rlimit = 3'000'000;
  so.seed = 7;
  Result<SolveResult> a = solve(*dag, heur->best, dag_lower_bound(*dag).units, so);
  Result<SolveResult> b = solve(*dag, heur->best, dag_lower_bound(*dag).units, so);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->best.order == b->best.order);
  CHECK(a->best.start == b->best.start);
  CHECK(a->rlimit_used == b->rlimit_used);
  CHECK(a->checks == b->checks);
  CHECK(a->best.makespan < heur->best.makespan);  // a strictly shorter order than the list scheduler's
}

TEST_CASE("solve: the budget bounds the work and the incumbent survives") {
  Result<OpDag> dag = build_op_dag(make_hand_problem(capped_hetero()));
  REQUIRE(dag.ok());
  Result<HeuristicResult> heur = heuristic_schedule(*dag);
  REQUIRE(heur.ok());
  SolveOptions so;
  so.time_limit_s = 60;
  so.rlimit = 1000;  // far too little to even load the encoding
  Result<SolveResult> r = solve(*dag, heur->best, 0, so);
  REQUIRE(r.ok());
  CHECK_FALSE(r->optimal);
  CHECK(r->best.makespan == heur->best.makespan);
  // Not built at all (the size check) or cancelled while loading: either way no Z3 answer.
  CHECK((r->status.find("skipped") != std::string::npos || r->status.find("stopped") != std::string::npos));
}

namespace {

// capped_hetero() at M = 16, which nothing proves optimal soon, and its heuristic order.
struct Capped16 {
  OpDag dag;
  HeuristicResult heur;
};
Capped16 capped_hetero_16() {
  HandProblem hp = capped_hetero();
  hp.microbatches = 16;
  Result<OpDag> dag = build_op_dag(make_hand_problem(hp));
  REQUIRE(dag.ok());
  Result<HeuristicResult> heur = heuristic_schedule(*dag);
  REQUIRE(heur.ok());
  return {std::move(*dag), std::move(*heur)};
}

}  // namespace

TEST_CASE("solve: an interrupt stops Z3 mid-check; the incumbent stands, valid") {
  // A budget of minutes, a weak starting bound (no proof comes soon), an interrupt after 0.3 s.
  const Capped16 c = capped_hetero_16();
  const OpDag* dag = &c.dag;
  const HeuristicResult* heur = &c.heur;
  std::atomic<bool> stop{false};
  SolveOptions so;
  so.time_limit_s = 300;
  so.rlimit = 1'000'000'000'000ull;
  so.contexts = 2;
  so.interrupt = &stop;
  std::thread timer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.store(true);
  });
  Result<SolveResult> r = solve(*dag, heur->best, 0, so);
  timer.join();
  REQUIRE(r.ok());
  CHECK(r->status == "stopped: interrupted");
  CHECK(r->seconds < 30);  // not the 300 s budget
  CHECK(r->checks >= 1);   // Z3 was under way
  CHECK(r->best.makespan <= heur->best.makespan);
  Result<TimedOrder> again = evaluate_order(*dag, r->best.order);
  REQUIRE(again.ok());
  CHECK(again->makespan == r->best.makespan);
  // Set before the call: nothing is loaded.
  Result<SolveResult> late = solve(*dag, heur->best, 0, so);
  REQUIRE(late.ok());
  CHECK(late->status == "stopped: interrupted");
  CHECK(late->checks == 0);
}

TEST_CASE("destructive bound: an interrupt ends it at once, with a valid bound") {
  const Capped16 c = capped_hetero_16();
  const OpDag* dag = &c.dag;
  const HeuristicResult* heur = &c.heur;
  const int64_t lb = dag_lower_bound(*dag).units;
  std::atomic<bool> stop{true};
  DestructiveOptions o;
  o.start = lb;
  o.upper = heur->best.makespan;
  o.search_work = 1'000'000'000;
  o.interrupt = &stop;
  DestructiveBound b = destructive_lower_bound(*dag, o);
  CHECK(b.bound.units >= lb);
  CHECK(b.bound.units <= heur->best.makespan);
  CHECK(b.work < 1'000'000);  // not the billion steps it was given
  CHECK(b.nodes == 0);
}

TEST_CASE("solve: a device hint (compute orders of a better order) is taken up in one check") {
  Result<OpDag> dag = build_op_dag(make_hand_problem(capped_hetero()));
  REQUIRE(dag.ok());
  Result<HeuristicResult> heur = heuristic_schedule(*dag);
  REQUIRE(heur.ok());
  SolveOptions full;
  full.time_limit_s = 60;
  full.rlimit = 40'000'000;
  Result<SolveResult> best = solve(*dag, heur->best, dag_lower_bound(*dag).units, full);
  REQUIRE(best.ok());
  REQUIRE(best->best.makespan < heur->best.makespan);  // there is something to hint at
  // Only the device lists of the better order: the comm streams are left to Z3.
  TimedOrder hint = best->best;
  hint.order.resize(static_cast<size_t>(dag->devices));
  SolveOptions so;
  so.time_limit_s = 60;
  so.lns_window = 0;
  so.device_hint = hint;
  std::vector<std::string> phases;
  so.progress = [&](const SolveProgress& p) { phases.push_back(p.phase); };
  // Enough for the guided and the hint check, far too little for the descent to find it alone.
  so.rlimit = 2'000'000;
  Result<SolveResult> r = solve(*dag, heur->best, dag_lower_bound(*dag).units, so);
  REQUIRE(r.ok());
  CHECK(std::find(phases.begin(), phases.end(), "hint") != phases.end());
  CHECK(r->best.makespan < heur->best.makespan);
  REQUIRE(evaluate_order(*dag, r->best.order).ok());
}

TEST_CASE("[slow] solve: on a large encoding it returns by its time limit and at once after an interrupt, "
          "the encodings' teardown included") {
  // Z3 frees a large encoding's terms in seconds, after the last check and uninterruptibly: solve()
  // keeps kTeardownPerLoad of the contexts' load estimates back from its limit for it, and after an
  // interrupt frees them on a thread of their own. The plan grows (V-shape on 8 devices, more
  // microbatches) until one context's load estimate is 8 s or more, where the teardown of two
  // contexts takes about half a second; the limit then leaves the guided check its time and ends the
  // descent at the clock (no proof comes: the starting bound is 0).
  HandProblem hp;
  hp.devices = 8;
  hp.stages_per_device = 2;
  hp.heterogeneous = true;
  hp.comm_ms = 0;
  std::optional<OpDag> dag;
  double load_s = 0;
  for (hp.microbatches = 16; hp.microbatches <= 96 && load_s < 8; hp.microbatches += 8) {
    Result<OpDag> d = build_op_dag(make_hand_problem(hp));
    REQUIRE(d.ok());
    load_s = encoding_load_seconds(*d);
    dag = std::move(*d);
  }
  REQUIRE(load_s >= 8);
  Result<HeuristicResult> heur = heuristic_schedule(*dag);
  REQUIRE(heur.ok());
  SolveOptions so;
  so.contexts = 2;
  so.time_limit_s = 2 * load_s + 2;
  so.rlimit = 1'000'000'000'000ull;  // the clock ends it
  const auto t0 = std::chrono::steady_clock::now();
  Result<SolveResult> r = solve(*dag, heur->best, 0, so);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.ok());
  CAPTURE(load_s);
  CAPTURE(r->status);
  CAPTURE(wall);
  CHECK(r->checks >= 2);             // loaded, and the descent under way at the limit
  CHECK(r->status == "time limit");  // ended by the clock, not by the budget or a proof
  CHECK(wall <= so.time_limit_s + 0.3);
  CHECK(r->best.makespan <= heur->best.makespan);

  // An interrupt once the guided check has loaded the encodings (set as it reports, so that it comes
  // between two checks, not while Z3 loads, which it does not stop for): solve() returns at once, not
  // after freeing them.
  std::atomic<bool> stop{false};
  so.interrupt = &stop;
  std::chrono::steady_clock::time_point stopped_at;
  so.progress = [&](const SolveProgress& p) {
    if (p.phase != "guided" || stop.load()) return;
    stopped_at = std::chrono::steady_clock::now();
    stop.store(true);
  };
  Result<SolveResult> ri = solve(*dag, heur->best, 0, so);
  const auto returned_at = std::chrono::steady_clock::now();
  REQUIRE(ri.ok());
  CAPTURE(ri->status);
  REQUIRE(stop.load());
  CHECK(ri->status == "stopped: interrupted");
  CHECK(ri->checks >= 2);  // both contexts loaded
  CHECK(std::chrono::duration<double>(returned_at - stopped_at).count() <= 0.3);
  CHECK(ri->best.makespan <= heur->best.makespan);
}
