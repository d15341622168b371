// Recomputation in the synthesizer: R ops in the op DAG (synth/dag/op_dag.h), ordered by the list
// scheduler and Z3 (synthesize()), certified by the checker; and the tuner choosing modes per stage
// (synth/tuner/tuner.h RecomputeChoice) through the library entry point.
#include <doctest/doctest.h>

#include <algorithm>

#include "ir/model.h"
#include "report/report.h"
#include "synth/dag/list_scheduler.h"
#include "synth/dag/op_dag.h"
#include "synth/synth_problems.h"
#include "synth/synthesize.h"
#include "synth/synthesize_model.h"
#include "synth/z3/infeasible.h"
#include "test_util.h"
#include "verify/verify.h"

namespace recompute_synth_test {

using namespace ps;

// Every stage recomputes fully: F keeps 100 MB of its 1000 MB, R takes the forward's time again.
Problem recomputing(Problem p) {
  for (StageSpec& st : p.stages) {
    st.recompute = RecomputeMode::kFull;
    st.recompute_ms = st.fwd_ms;
    st.recompute_kept_mb = 100;
  }
  return p;
}

// Two devices, V-shape (stages 0 and 3 on device 0), room for 1.5 activations: without
// recomputation device 0 holds F(s0,m0) and F(s3,m0) (2000 MB) before any backward.
pstest::HandProblem v_shape_tight() {
  pstest::HandProblem h;
  h.devices = 2;
  h.microbatches = 4;
  h.stages_per_device = 2;
  h.stash_mb = 400;
  h.cap_microbatches = 1.5;
  return h;
}

int count_ops(const Schedule& s, OpType t) {
  int n = 0;
  for (const auto& prog : s.programs)
    n += static_cast<int>(std::count_if(prog.begin(), prog.end(), [t](const Action& a) { return a.type == t; }));
  return n;
}

TEST_CASE("op dag: R(s,m) between F(s,m) and I(s,m); F allocates the kept part, R the rest, I frees all but the stash") {
  Problem p = pstest::make_hand_problem(v_shape_tight());
  p.memory_gb = 0;
  p.stages[1] = recomputing(p).stages[1];
  auto dag = build_op_dag(p);
  REQUIRE_MESSAGE(dag.ok(), dag.status().message());
  CHECK(dag->r_op(0, 0) == -1);
  for (int m = 0; m < p.microbatches; ++m) {
    const int f = dag->f_op(1, m), r = dag->r_op(1, m), i = dag->bwd_op(1, m);
    REQUIRE(r >= 0);
    CHECK(dag->ops[r].type == OpType::R);
    CHECK(dag->ops[r].device == p.stages[1].device);
    CHECK(dag->to_ms(dag->ops[r].dur) == doctest::Approx(4));
    CHECK(dag->mem_to_mb(dag->ops[f].alloc_mem) == doctest::Approx(100));
    CHECK(dag->mem_to_mb(dag->ops[r].alloc_mem) == doctest::Approx(900));
    CHECK(dag->mem_to_mb(dag->ops[i].free_mem) == doctest::Approx(600));
    auto has_edge = [&](int a, int b) {
      return std::any_of(dag->succ[a].begin(), dag->succ[a].end(), [b](const DagEdge& e) { return e.op == b; });
    };
    CHECK(has_edge(f, r));
    CHECK(has_edge(r, i));
    if (m + 1 < p.microbatches) CHECK(has_edge(r, dag->r_op(1, m + 1)));
  }
  CHECK(default_dag_ops(p) == dag->num_ops());
}

TEST_CASE("device_memory_needs: kept parts of the device's stages up to s plus R(s)'s allocation, at the worst s") {
  const Problem plain = pstest::make_hand_problem(v_shape_tight());
  const Problem rc = recomputing(plain);
  // Device 0 holds stages 0 and 3: 2 x 1000 MB without recomputation; with it at most
  // max(100 + 900, 100 + 100 + 900) = 1100 MB, within the 1500 MB cap.
  CHECK(device_memory_needs(plain)[0].need_mb == doctest::Approx(2000));
  CHECK(device_memory_needs(rc)[0].need_mb == doctest::Approx(1100));
  CHECK_FALSE(explain_infeasibility(plain).empty());
  CHECK(explain_infeasibility(rc).empty());
  Problem tighter = rc;
  tighter.memory_gb = 1.05;
  const std::string why = explain_infeasibility(tighter);
  CHECK_MESSAGE(why.find("needs at least 1.1 GB") != std::string::npos, why);
  CHECK_MESSAGE(why.find("R of stage 3 restores its whole activation") != std::string::npos, why);
}

TEST_CASE("list_schedule: an R filling a gap leaves room for the forwards of the device's later stages") {
  // Device 0 holds stages 0 and 3 (V-shape); F keeps 400 of 1000 MB. The serial schedule peaks at
  // 400 + 400 + 600 = 1400 MB. An R(s0,m0) run in the gap before F(s3,m0) (room left for one more R,
  // 1600 MB) would leave F(s3,m0) no room under 1700 MB (2000 MB), and nothing could free it.
  Problem p = recomputing(pstest::make_hand_problem(v_shape_tight()));
  for (StageSpec& st : p.stages) st.recompute_kept_mb = 400;
  p.memory_gb = 1.7;
  auto dag = build_op_dag(p);
  REQUIRE_MESSAGE(dag.ok(), dag.status().message());
  ListPolicy serial;
  serial.serial = true;
  auto t = list_schedule(*dag, serial);
  REQUIRE_MESSAGE(t.ok(), t.status().message());
  for (int d = 0; d < p.devices; ++d) CHECK(t->peak_mem[d] <= dag->cap_mem[d]);
  auto h = heuristic_schedule(*dag);
  REQUIRE_MESSAGE(h.ok(), h.status().message());
  CHECK(h->failed < h->tried);
}

TEST_CASE("synthesize: a plan that fits only with recomputation gets a certified schedule with R ops inside the cap") {
  const Problem plain = pstest::make_hand_problem(v_shape_tight());
  SynthOptions so;
  so.time_limit_s = 5;
  so.rlimit = 2'000'000;
  auto none = synthesize(plain, so);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == ErrorCode::kInfeasible);

  const Problem rc = recomputing(plain);
  auto dag = build_op_dag(rc);
  REQUIRE_MESSAGE(dag.ok(), dag.status().message());
  auto h = heuristic_schedule(*dag);
  REQUIRE_MESSAGE(h.ok(), h.status().message());
  for (int d = 0; d < rc.devices; ++d) CHECK(h->best.peak_mem[d] <= dag->cap_mem[d]);

  auto res = synthesize(rc, so);
  REQUIRE_MESSAGE(res.ok(), res.status().message());
  CHECK(count_ops(res->schedule, OpType::R) == rc.num_stages() * rc.microbatches);
  Report rep = verify(res->schedule, VerifyOptions{});
  CHECK_MESSAGE(rep.valid, format_report(rep));
  REQUIRE(rep.sim);
  CHECK(rep.sim->makespan_ms == doctest::Approx(res->makespan_ms));
  REQUIRE(res->schedule.certificate);
  for (double gb : res->schedule.certificate->peak_memory_gb) CHECK(gb <= rc.memory_gb + 1e-9);
  // The bound is proven on the DAG with the R ops: never above what was found.
  CHECK(res->bound_ms <= res->makespan_ms + 1e-9);
}

Spec needs_recompute() {
  auto spec = load_spec(pstest::source_path("tests/data/recompute/needs-recompute.yaml"), "");
  REQUIRE_MESSAGE(spec.ok(), spec.status().message());
  return *spec;
}

ModelSynthOptions budgeted(RecomputeChoice rc) {
  ModelSynthOptions o;
  o.evaluations = 40;
  o.time_limit_s = 10;
  o.rlimit = 2'000'000;
  o.search_threads = 2;
  o.recompute = rc;
  return o;
}

TEST_CASE("synthesize_model: the search gives stages recomputation where no plan fits without it") {
  const Spec spec = needs_recompute();
  auto none = synthesize_model(spec, budgeted(RecomputeChoice::kNone));
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == ErrorCode::kInfeasible);

  auto m = synthesize_model(spec, budgeted(RecomputeChoice::kSearch));
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  const Problem& p = m->problem;
  CHECK(std::any_of(p.stages.begin(), p.stages.end(), [](const StageSpec& st) { return st.recomputes(); }));
  CHECK(m->result.schedule.problem.num_stages() == p.num_stages());
  for (int s = 0; s < p.num_stages(); ++s) CHECK(m->result.schedule.problem.stages[s].recompute == p.stages[s].recompute);
  Report rep = verify(m->result.schedule, VerifyOptions{});
  CHECK_MESSAGE(rep.valid, format_report(rep));
  REQUIRE(m->tuned);
  CHECK(m->tuned->stats.moves_recompute > 0);
}

TEST_CASE("synthesize_model: where memory does not bind, search and none give the same schedule") {
  Spec spec = needs_recompute();
  spec.cluster.memory_gb = 100;  // far above what any plan holds
  auto a = synthesize_model(spec, budgeted(RecomputeChoice::kSearch));
  auto b = synthesize_model(spec, budgeted(RecomputeChoice::kNone));
  REQUIRE_MESSAGE(a.ok(), a.status().message());
  REQUIRE_MESSAGE(b.ok(), b.status().message());
  for (const StageSpec& st : a->problem.stages) CHECK_FALSE(st.recomputes());
  CHECK(a->result.makespan_ms == b->result.makespan_ms);
  CHECK(a->tuned->stats.moves_recompute == 0);
  CHECK(count_ops(a->result.schedule, OpType::R) == 0);
}

}  // namespace recompute_synth_test
