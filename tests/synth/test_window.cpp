// Tests of the windowed Z3 search (synth/z3/window.h): one window over everything is the whole
// problem (brute-force optimum), small windows improve a capped order, every result is a valid
// order no longer than the incumbent, runs are deterministic, and synthesize() uses windows where
// the whole encoding does not load in its budget.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "synth/bounds/dag_bounds.h"
#include "synth/dag/list_scheduler.h"
#include "synth/dag/op_dag.h"
#include "synth/synth_problems.h"
#include "synth/synthesize.h"
#include "synth/z3/window.h"

using namespace ps;
using pstest::HandProblem;
using pstest::make_hand_problem;

namespace {

// A weak incumbent: the list scheduler's first policy alone.
TimedOrder first_policy(const OpDag& dag) {
  HeuristicOptions ho;
  ho.portfolio = false;
  ho.justify_rounds = 0;
  Result<HeuristicResult> h = heuristic_schedule(dag, ho);
  REQUIRE(h.ok());
  return h->best;
}

WindowOptions window_budget(uint64_t rlimit, double max_load_s) {
  WindowOptions o;
  o.time_limit_s = 120;  // the rlimit decides, so runs are deterministic
  o.rlimit = rlimit;
  o.max_load_s = max_load_s;
  o.contexts = 2;
  return o;
}

HandProblem capped_plan(int devices, int microbatches) {
  HandProblem h;
  h.devices = devices;
  h.microbatches = microbatches;
  h.cap_microbatches = 2.5;
  h.stash_mb = 300;
  h.heterogeneous = true;
  return h;
}

}  // namespace

TEST_CASE("window search: a window over every op is the whole problem, and reaches the brute-force optimum") {
  for (const HandProblem& h : pstest::brute_force_sized_problems()) {
    Result<OpDag> dag = build_op_dag(make_hand_problem(h));
    REQUIRE(dag.ok());
    const int64_t optimum = pstest::brute_force_optimum(*dag, EdgeSet::kAll);
    const TimedOrder start = first_policy(*dag);
    Result<WindowResult> r = window_search(*dag, start, window_budget(20'000'000, 10.0));
    REQUIRE(r.ok());
    CAPTURE(r->status);
    CHECK(r->best.makespan == optimum);
    Result<TimedOrder> again = evaluate_order(*dag, r->best.order);
    REQUIRE(again.ok());
    CHECK(again->makespan == r->best.makespan);
  }
}

TEST_CASE("window search: small windows shorten a capped order, stay valid, and are deterministic") {
  Result<OpDag> dag = build_op_dag(make_hand_problem(capped_plan(4, 24)));
  REQUIRE(dag.ok());
  REQUIRE(dag->memory_limited());
  const TimedOrder start = first_policy(*dag);
  // Windows of a few dozen ops: far fewer than the plan's.
  const WindowOptions o = window_budget(6'000'000, 0.01);
  Result<WindowResult> a = window_search(*dag, start, o);
  Result<WindowResult> b = window_search(*dag, start, o);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CAPTURE(a->status);
  CHECK(a->windows > 2);
  CHECK(a->improving_windows > 0);
  CHECK(a->best.makespan < start.makespan);
  CHECK(a->best.makespan >= dag_lower_bound(*dag).units);
  // Valid on the whole DAG, caps included, with the timing it claims.
  Result<TimedOrder> again = evaluate_order(*dag, a->best.order, EdgeSet::kAll, true);
  REQUIRE(again.ok());
  CHECK(again->makespan == a->best.makespan);
  CHECK(a->best.order == b->best.order);
  CHECK(a->checks == b->checks);
  CHECK(a->rlimit_used == b->rlimit_used);
}

TEST_CASE("window search: warm-started windows (the incumbent as Z3's initial values) stay valid and deterministic") {
  Result<OpDag> dag = build_op_dag(make_hand_problem(capped_plan(4, 24)));
  REQUIRE(dag.ok());
  const TimedOrder start = first_policy(*dag);
  WindowOptions o = window_budget(6'000'000, 0.01);
  o.warm_start = true;
  Result<WindowResult> a = window_search(*dag, start, o);
  Result<WindowResult> b = window_search(*dag, start, o);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CAPTURE(a->status);
  CHECK(a->windows > 2);
  CHECK(a->best.makespan <= start.makespan);
  CHECK(a->best.makespan >= dag_lower_bound(*dag).units);
  Result<TimedOrder> again = evaluate_order(*dag, a->best.order, EdgeSet::kAll, true);
  REQUIRE(again.ok());
  CHECK(again->makespan == a->best.makespan);
  CHECK(a->best.order == b->best.order);
  CHECK(a->rlimit_used == b->rlimit_used);
  // With initial values (Z3 >= 4.13.1) the windows still find the shorter orders they find cold.
  if (warm_start_available()) CHECK(a->improving_windows > 0);
}

TEST_CASE("window search: an order no window can improve stands; a zero budget changes nothing") {
  Result<OpDag> dag = build_op_dag(make_hand_problem(capped_plan(4, 12)));
  REQUIRE(dag.ok());
  const TimedOrder start = first_policy(*dag);
  WindowOptions none = window_budget(0, 0.01);
  none.time_limit_s = 0;
  Result<WindowResult> r = window_search(*dag, start, none);
  REQUIRE(r.ok());
  CHECK(r->checks == 0);
  CHECK(r->best.order == start.order);
  // Converged: a second search from the first's result finds nothing with the same windows.
  Result<WindowResult> first = window_search(*dag, start, window_budget(20'000'000, 0.01));
  REQUIRE(first.ok());
  CAPTURE(first->status);
  REQUIRE(first->status.rfind("no window improves", 0) == 0);  // it ran out of improvements, not of budget
  Result<WindowResult> second = window_search(*dag, first->best, window_budget(20'000'000, 0.01));
  REQUIRE(second.ok());
  CHECK(second->improving_windows == 0);
  CHECK(second->best.makespan == first->best.makespan);
}

TEST_CASE("window search: each window's encoding is written as SMT-LIB2 with its target") {
  Result<OpDag> dag = build_op_dag(make_hand_problem(capped_plan(4, 12)));
  REQUIRE(dag.ok());
  WindowOptions o = window_budget(5'000'000, 0.01);
  o.dump_smt2 = "/tmp/pipesmith-test-window.smt2";
  o.max_dumps = 2;
  for (int n : {1, 2, 3}) std::remove(window_dump_path(o.dump_smt2, n).c_str());
  Result<WindowResult> r = window_search(*dag, first_policy(*dag), o);
  REQUIRE(r.ok());
  CHECK(window_dump_path(o.dump_smt2, 2) == "/tmp/pipesmith-test-window.w2.smt2");
  CHECK(r->smt2_written == 2);
  std::ifstream f(window_dump_path(o.dump_smt2, 1));
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(text.find("(check-sat)") != std::string::npos);
  CHECK(text.find("(<= C ") != std::string::npos);
  CHECK_FALSE(std::ifstream(window_dump_path(o.dump_smt2, 3)).good());  // at most max_dumps
}

TEST_CASE("synthesize: where the whole encoding does not load in its budget, Z3 works on windows") {
  const Problem p = make_hand_problem(capped_plan(4, 32));
  SynthOptions o;
  o.time_limit_s = 120;
  o.rlimit = 1'500'000;  // 0.375 s per context: the whole encoding needs more than a quarter of it
  Result<SynthResult> r = synthesize(p, o);
  REQUIRE(r.ok());
  CAPTURE(r->solver_status);
  CHECK(r->solver_status.rfind("windows: ", 0) == 0);
  CHECK(r->solve.windows > 0);
  CHECK(r->report.valid);
  const auto& extra = r->schedule.certificate->extra;
  CHECK(std::stoi(extra.at("z3_checks")) > 0);
  CHECK(r->solve.improving_windows > 0);
  CHECK(extra.at("schedule_method") == "z3");
  CHECK(std::stod(extra.at("z3_improved_ms")) > 0);
  // Verified as the user would: the certificate's claims hold.
  CHECK(r->makespan_ms <= std::stod(extra.at("before_z3_ms")) + 1e-6);
  // The time limit is the whole call's: what the DAG, the heuristic and the bounds took comes off
  // Z3's wall-clock cap.
  CHECK(r->solve.deadline_s <= o.time_limit_s + 1e-6);
  CHECK(r->solve.deadline_s > 0);
}
