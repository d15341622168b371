// Tests of polish_order's critical-chain block moves (synth/dag/order_polish.h): never longer than
// the order it starts from, valid under every edge and cap, deterministic, and on a fine, irregular
// plan at M = P (Gemma-like, one sublayer per stage) shorter than the moves of one op along its
// resource alone (docs/synth.md, "The gap at M ≈ P").
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ir/model.h"
#include "synth/certify.h"
#include "synth/dag/list_scheduler.h"
#include "synth/dag/op_dag.h"
#include "synth/dag/order_polish.h"
#include "synth/dag/schedule_order.h"
#include "synth/synth_problems.h"
#include "synth/synthesize.h"

using namespace ps;
using pstest::HandProblem;
using pstest::make_hand_problem;

namespace {

// Re-times `t`'s lists (every resource) on `dag`: the same start times, within every cap.
void check_valid(const OpDag& dag, const TimedOrder& t) {
  Result<TimedOrder> again = evaluate_order(dag, t.order);
  REQUIRE(again.ok());
  CHECK(again->makespan == t.makespan);
  CHECK(again->start == t.start);
  if (dag.mem_limited)
    for (int d = 0; d < dag.devices; ++d) CHECK(again->peak_mem[d] <= dag.cap_mem[d]);
}

// Gemma-like (configs/models/gemma-like.yaml) at P = M = 8 with free links and no memory cap, cut
// into 64 stages: one layer entry (an attention or an MLP sublayer, a head shard) per stage, the
// embedding with the first attention and four pairs of head shards joined; each device holds one
// stage of every round of 8 stages, the rounds dealt so that the devices' loads are even.
Problem gemma_fine_plan() {
  SpecOverrides ov;
  ov.devices = 8;
  ov.microbatches = 8;
  ov.memory_gb = 0.0;
  Result<Spec> spec = load_spec(std::string(PIPESMITH_SOURCE_DIR) + "/configs/models/gemma-like.yaml",
                                std::string(PIPESMITH_SOURCE_DIR) + "/configs/clusters/8xh100-80gb.yaml", ov);
  REQUIRE(spec.ok());
  spec->cluster.link = LinkModel{1e30, 0};  // bench/quality --free-links
  spec->cluster.inter_node_link = spec->cluster.link;
  spec->cluster.devices_per_node = 0;
  REQUIRE(validate(*spec).is_ok());
  Partition part{{0, 1}};
  for (int l = 2; l <= 52; ++l) part.push_back({l, l});
  for (int l = 53; l <= 59; l += 2) part.push_back({l, l + 1});
  for (int l = 61; l <= 68; ++l) part.push_back({l, l});
  const std::vector<int> placement = {5, 0, 6, 1, 4, 2, 7, 3, 2, 1, 6, 0, 3, 4, 7, 5, 4, 2, 0, 3, 5, 7,
                                      1, 6, 2, 4, 7, 5, 3, 0, 6, 1, 0, 7, 4, 6, 1, 2, 5, 3, 2, 4, 7,
                                      5, 3, 0, 6, 1, 1, 4, 0, 5, 7, 2, 3, 6, 1, 0, 4, 5, 7, 2, 3, 6};
  REQUIRE(part.size() == placement.size());
  Result<Problem> p = make_problem(*spec, part, placement);
  REQUIRE(p.ok());
  return std::move(p).value();
}

}  // namespace

TEST_CASE("polish_order: the critical chain's block moves shorten a fine, irregular plan that one-op moves leave") {
  const Problem p = gemma_fine_plan();
  Result<OpDag> dag = build_op_dag(p);
  REQUIRE(dag.ok());
  Result<HeuristicResult> h = heuristic_schedule(*dag);
  REQUIRE(h.ok());
  const TimedOrder& start = h->best;
  constexpr int64_t kEvaluations = 2000;
  const PolishResult one_op = polish_order(*dag, start, 4, kEvaluations, 1, nullptr, false);
  const PolishResult blocks = polish_order(*dag, start, 4, kEvaluations, 1, nullptr, true);
  CAPTURE(dag->to_ms(start.makespan));
  CAPTURE(dag->to_ms(one_op.order.makespan));
  CAPTURE(dag->to_ms(blocks.order.makespan));
  CHECK(one_op.evaluations <= kEvaluations);
  CHECK(blocks.evaluations <= kEvaluations);
  CHECK(one_op.order.makespan <= start.makespan);
  // Where one-op moves gain at most 0.1 %, the block moves take off more than 0.3 % in the same budget.
  CHECK(static_cast<double>(one_op.order.makespan) >= 0.999 * static_cast<double>(start.makespan));
  CHECK(static_cast<double>(blocks.order.makespan) < 0.997 * static_cast<double>(one_op.order.makespan));
  check_valid(*dag, blocks.order);
  // The checker's simulation of the written schedule (comms inserted) takes as long, up to the op
  // DAG's time units (durations rounded down to them: op_dag.h).
  Result<CertifiedSchedule> cert = certify_schedule(order_to_schedule(p, *dag, blocks.order, "test"));
  REQUIRE(cert.ok());
  REQUIRE(cert->report.sim.has_value());
  const double checked_ms = cert->report.sim->makespan_ms;
  CAPTURE(checked_ms);
  CHECK(checked_ms >= dag->to_ms(blocks.order.makespan));
  CHECK(checked_ms <= dag->to_ms(blocks.order.makespan) + 0.001);
  CHECK(checked_ms < dag->to_ms(one_op.order.makespan));
  // Deterministic.
  const PolishResult again = polish_order(*dag, start, 4, kEvaluations, 1, nullptr, true);
  CHECK(again.order.order == blocks.order.order);
  CHECK(again.evaluations == blocks.evaluations);
}

TEST_CASE("[slow] synthesize on a fine plan: the block moves' order, set aside before Z3, is the result where Z3 does not beat it") {
  // 2,528 ops and a budget of 5 s (rlimit 10^7, one context): the local search's share (about
  // 3,000 evaluations) holds no whole pass of one-op moves, so only the block moves run, beside Z3.
  const Problem p = gemma_fine_plan();
  SynthOptions so;
  so.time_limit_s = 600;  // the rlimit ends Z3, not the clock
  so.rlimit = 10'000'000;
  so.contexts = 1;
  Result<SynthResult> r = synthesize(p, so);
  REQUIRE(r.ok());
  CAPTURE(r->makespan_ms);
  CAPTURE(r->heuristic_ms);
  CAPTURE(r->solver_status);
  REQUIRE(r->schedule.certificate.has_value());
  const auto& extra = r->schedule.certificate->extra;
  CHECK(r->report.valid);
  // The list scheduler's 365.941 ms; Z3's windows alone do not shorten it in this budget, the block
  // moves take it to 364.9 ms or less.
  CHECK(r->makespan_ms < r->heuristic_ms - 1.0);
  CHECK(extra.at("schedule_method") == "local search");
  CHECK(extra.at("seeded_by").find(" + polished") != std::string::npos);
  CHECK(std::stod(extra.at("before_z3_ms")) == doctest::Approx(r->makespan_ms).epsilon(1e-5));
}

TEST_CASE("polish_order with block moves: never longer than its start, valid within the caps and the comm streams") {
  std::vector<HandProblem> shapes;
  for (int v : {1, 2}) {
    for (double cap : {0.0, 1.5}) {
      HandProblem h;
      h.devices = 4;
      h.microbatches = 6;
      h.stages_per_device = v;
      h.heterogeneous = true;
      h.stash_mb = 300;
      h.cap_microbatches = cap * v * h.devices / 2;
      shapes.push_back(h);
    }
  }
  int shorter = 0;
  for (const HandProblem& h : shapes) {
    Result<OpDag> dag = build_op_dag(make_hand_problem(h));
    REQUIRE(dag.ok());
    for (const ListPolicy& policy : heuristic_policies(*dag)) {
      Result<TimedOrder> t = list_schedule(*dag, policy);
      if (!t.ok()) continue;  // stuck on the cap
      CAPTURE(policy.name());
      for (int64_t budget : {int64_t{0}, int64_t{50}, int64_t{400}}) {
        const PolishResult r = polish_order(*dag, *t, 2, budget, 3, nullptr, true);
        CHECK(r.evaluations <= budget);
        CHECK(r.order.makespan <= t->makespan);
        if (budget == 0) CHECK(r.order.order == t->order);
        check_valid(*dag, r.order);
        shorter += r.order.makespan < t->makespan;
      }
    }
  }
  CHECK(shorter > 0);  // the moves are not idle on these shapes
}
