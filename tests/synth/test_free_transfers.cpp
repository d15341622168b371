// Tests of synthesize() where every transfer takes 0 time units (free links): the comm-stream
// phase is skipped, the no-queue phase gets the whole Z3 budget, and the skip loses nothing — any
// compute order times the same with and without comm streams, proofs and orders stay optimal.
#include <doctest/doctest.h>

#include <random>

#include "ir/schedule_io.h"
#include "synth/dag/op_dag.h"
#include "synth/synth_problems.h"
#include "synth/synthesize.h"
#include "verify/verify.h"

using namespace ps;
using pstest::HandProblem;
using pstest::make_hand_problem;

namespace {

SynthOptions budget(uint64_t rlimit) {
  SynthOptions o;
  o.time_limit_s = 120;  // the rlimit decides, so runs are deterministic
  o.rlimit = rlimit;
  return o;
}

// A plan whose gap the tests' budgets do not close: V-shape, heterogeneous costs, M = 2P, a cap of
// two stages' microbatches. 3·10⁶ rlimit units load the whole encoding with free links (6·10⁶ with
// 1 ms links, whose comm streams add to it) and leave the gap open.
HandProblem open_plan(double comm_ms) {
  return HandProblem{.devices = 4, .microbatches = 8, .stages_per_device = 2, .comm_ms = comm_ms, .stash_mb = 200,
                     .cap_microbatches = 2, .heterogeneous = true};
}

// Device lists of a random topological order of the compute ops of `dag` (all edges).
std::vector<std::vector<int>> random_device_order(const OpDag& dag, std::mt19937& rng) {
  std::vector<int> missing(dag.num_ops(), 0);
  for (int i = 0; i < dag.num_ops(); ++i) missing[i] = static_cast<int>(dag.pred[i].size());
  std::vector<int> ready;
  for (int i = 0; i < dag.num_ops(); ++i)
    if (missing[i] == 0) ready.push_back(i);
  std::vector<std::vector<int>> order(dag.devices);
  while (!ready.empty()) {
    const size_t k = std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
    const int op = ready[k];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(k));
    if (!dag.ops[op].is_transfer()) order[dag.ops[op].device].push_back(op);
    for (const DagEdge& e : dag.succ[op])
      if (--missing[e.op] == 0) ready.push_back(e.op);
  }
  return order;
}

}  // namespace

TEST_CASE("free transfers: every compute order times the same with and without comm streams") {
  // The reason the comm-stream phase may be skipped: first come, first served on the comm streams
  // starts every zero-length transfer when its producer ends. Not so with a real link (the check
  // below that some order differs keeps this test from passing on DAGs that never differ).
  std::mt19937 rng(7);
  for (int spd : {1, 2}) {
    for (double comm : {0.0, 1.0}) {
      HandProblem h = open_plan(comm);
      h.stages_per_device = spd;
      h.cap_microbatches = 0;  // random orders need not fit a cap
      const Problem p = make_hand_problem(h);
      Result<OpDag> streams = build_op_dag(p);
      DagOptions nq;
      nq.comm_streams = false;
      Result<OpDag> plain = build_op_dag(p, nq);
      REQUIRE(streams.ok());
      REQUIRE(plain.ok());
      REQUIRE(streams->ms_per_unit == plain->ms_per_unit);
      int transfers = 0, crossings = 0;
      for (const DagOp& o : streams->ops) transfers += o.is_transfer() ? 1 : 0;
      for (size_t s = 0; s + 1 < p.stages.size(); ++s) crossings += p.stages[s].device != p.stages[s + 1].device ? 1 : 0;
      CHECK(transfers == 2 * crossings * h.microbatches);
      int differ = 0;
      for (int k = 0; k < 200; ++k) {
        const std::vector<std::vector<int>> order = random_device_order(*plain, rng);
        Result<TimedOrder> a = evaluate_order(*streams, order);
        Result<TimedOrder> b = evaluate_order(*plain, order);
        REQUIRE(a.ok());
        REQUIRE(b.ok());
        if (comm == 0) {
          CAPTURE(k);
          CHECK(a->makespan == b->makespan);
          for (int op = 0; op < plain->num_ops(); ++op) CHECK(a->start[op] == b->start[op]);
        }
        differ += a->makespan != b->makespan ? 1 : 0;
      }
      CAPTURE(spd);
      if (comm > 0) CHECK(differ > 0);  // with V-shape's shared links a queue forms somewhere
    }
  }
}

TEST_CASE("free transfers: the comm-stream phase is skipped and says so; with a link it runs") {
  const Problem free_p = make_hand_problem(open_plan(0));
  Result<SynthResult> r = synthesize(free_p, budget(3'000'000));
  REQUIRE(r.ok());
  CAPTURE(r->solver_status);
  CAPTURE(r->makespan_ms);
  CAPTURE(r->bound_ms);
  REQUIRE_FALSE(r->optimal);  // the budget leaves a gap, so the status lists the phases
  CHECK(r->solver_status.rfind("no-queue: ", 0) == 0);
  CHECK(r->solver_status.find("; comm-stream: skipped (every transfer takes 0 time units)") != std::string::npos);
  REQUIRE(r->schedule.certificate.has_value());
  CHECK(r->schedule.certificate->extra.at("solver_status") == r->solver_status);
  // The file a user gets verifies, its status included (verify's list of statuses).
  Result<Schedule> back = parse_schedule_yaml(format_schedule_yaml(r->schedule), "synth.yaml");
  REQUIRE(back.ok());
  Report rep = verify(*back);
  CHECK(rep.valid);
  CHECK(rep.violations.empty());

  // The same plan with 1 ms links: both phases run.
  Result<SynthResult> l = synthesize(make_hand_problem(open_plan(1)), budget(6'000'000));
  REQUIRE(l.ok());
  CAPTURE(l->solver_status);
  REQUIRE_FALSE(l->optimal);
  CHECK(l->solver_status.rfind("no-queue: ", 0) == 0);
  CHECK(l->solver_status.find("comm-stream: ") != std::string::npos);
  CHECK(l->solver_status.find("skipped") == std::string::npos);
}

TEST_CASE("free transfers: same seed and budget give byte-identical files") {
  const Problem p = make_hand_problem(open_plan(0));
  SynthOptions o = budget(3'000'000);
  o.seed = 5;
  pstest::check_same_run_same_file(p, o);
}

TEST_CASE("free transfers: the no-queue phase alone still finds and proves the optimum") {
  // Tiny plans, brute force over every compute order (timed with comm streams, first come, first
  // served): the order written is optimal and proven so, without the comm-stream phase.
  for (HandProblem h : pstest::brute_force_sized_problems()) {
    h.comm_ms = 0;
    const Problem p = make_hand_problem(h);
    Result<OpDag> dag = build_op_dag(p);
    REQUIRE(dag.ok());
    const int64_t best = pstest::brute_force_optimum(*dag, EdgeSet::kAll);
    REQUIRE(best > 0);
    Result<SynthResult> r = synthesize(p, budget(30'000'000));
    REQUIRE(r.ok());
    CAPTURE(h.cap_microbatches);
    CAPTURE(h.split_backward);
    CAPTURE(r->solver_status);
    CHECK(r->optimal);
    CHECK(r->makespan_ms == doctest::Approx(dag->to_ms(best)));
    CHECK(r->report.valid);
  }
}


TEST_CASE("free transfers: where the whole encoding does not load, the windows work on the no-queue model") {
  // P = 8, V-shape, M = 8: 3·10⁶ rlimit units are too few to load the whole encoding.
  HandProblem h = open_plan(0);
  h.devices = 8;
  h.cap_microbatches = 0;
  const Problem p = make_hand_problem(h);
  Result<SynthResult> r = synthesize(p, budget(3'000'000));
  REQUIRE(r.ok());
  CAPTURE(r->solver_status);
  CHECK(r->solver_status.rfind("windows: ", 0) == 0);
  CHECK(r->solver_status.find("; on the no-queue model: every transfer takes 0 time units)") != std::string::npos);
  CHECK(r->solve.windows > 0);
  // The windows' order, re-timed with comm streams, is what is written and certified.
  CHECK(r->report.valid);
  REQUIRE(r->schedule.certificate.has_value());
  pstest::check_written_file(*r);
  CHECK(r->makespan_ms <= std::stod(r->schedule.certificate->extra.at("before_z3_ms")) + 1e-9);
}

