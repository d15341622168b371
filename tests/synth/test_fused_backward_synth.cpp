// The search choosing, per stage, the fused backward B over I and W where B is cheaper (a measured
// backward_ms below I + W, the cluster's op_overhead_ms): synthesize_model through the library entry
// point, on costs shaped like PyTorch's (tests/data/fused/cheap-fused-b.yaml).
#include <doctest/doctest.h>

#include <algorithm>

#include "ir/model.h"
#include "ir/schedule_io.h"
#include "report/report.h"
#include "synth/plan/plan_spec.h"
#include "synth/synthesize.h"
#include "synth/synthesize_model.h"
#include "test_util.h"
#include "verify/verify.h"

namespace fused_backward_synth_test {

using namespace ps;

Spec cheap_fused() {
  auto spec = load_spec(pstest::data_path("fused/cheap-fused-b.yaml"), "");
  REQUIRE_MESSAGE(spec.ok(), spec.status().message());
  return *spec;
}

ModelSynthOptions budgeted() {
  ModelSynthOptions o;
  o.evaluations = 40;
  o.time_limit_s = 10;
  o.rlimit = 2'000'000;
  o.search_threads = 2;
  return o;
}

// Ops of `type` on stage s in the schedule.
int ops_of(const Schedule& sched, OpType type, int s) {
  int n = 0;
  for (const auto& prog : sched.programs)
    n += static_cast<int>(std::count_if(prog.begin(), prog.end(), [&](const Action& a) { return a.type == type && a.stage == StageId{s}; }));
  return n;
}

TEST_CASE("synthesize_model: stages run B where it is cheaper than I + W, and the plan is shorter for it") {
  const Spec spec = cheap_fused();
  auto m = synthesize_model(spec, budgeted());
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  const Problem& p = m->problem;
  REQUIRE(m->fused_by_choice.size() == p.stages.size());
  REQUIRE(std::count(m->fused_by_choice.begin(), m->fused_by_choice.end(), 1) > 0);
  const int M = p.microbatches;
  for (int s = 0; s < p.num_stages(); ++s) {
    // The problem says what the plan runs, and the schedule runs exactly that.
    CHECK(p.stages[s].split_backward == !m->fused_by_choice[s]);
    if (m->fused_by_choice[s]) {
      CHECK(ops_of(m->result.schedule, OpType::B, s) == M);
      CHECK(ops_of(m->result.schedule, OpType::I, s) == 0);
      CHECK(ops_of(m->result.schedule, OpType::W, s) == 0);
    }
  }
  Report rep = verify(m->result.schedule, VerifyOptions{});
  REQUIRE_MESSAGE(rep.valid, format_report(rep));
  REQUIRE(rep.sim);
  CHECK(rep.sim->makespan_ms == doctest::Approx(m->result.makespan_ms));
  REQUIRE(m->tuned);
  CHECK(m->tuned->stats.moves_backward > 0);

  // The same partition and placement with every stage splitting: synthesize() orders it, and it is
  // slower than the plan the search chose.
  Problem split = p;
  for (StageSpec& st : split.stages) st.split_backward = true;
  SynthOptions so;
  so.time_limit_s = 5;
  so.rlimit = 2'000'000;
  auto s = synthesize(split, so, &spec);
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(ops_of(s->schedule, OpType::W, 1) == M);
  CHECK(m->result.makespan_ms < s->makespan_ms);
}

TEST_CASE("synthesize_model: where B is dearer than I + W and ops cost nothing extra, no stage runs B") {
  Spec spec = cheap_fused();
  spec.cluster.op_overhead_ms = 0;
  for (auto& [sym, t] : spec.model.types) t.backward_ms = t.backward_input_ms + t.backward_weight_ms + 1;
  auto m = synthesize_model(spec, budgeted());
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  CHECK(std::count(m->fused_by_choice.begin(), m->fused_by_choice.end(), 1) == 0);
  for (const StageSpec& st : m->problem.stages) CHECK(st.split_backward);
  CHECK(m->tuned->stats.moves_backward == 0);
  CHECK(ops_of(m->result.schedule, OpType::W, 1) == m->problem.microbatches);
}

TEST_CASE("synthesize_model: the per-op overhead alone makes B the cheaper, and the search tries it") {
  Spec spec = cheap_fused();
  for (auto& [sym, t] : spec.model.types) t.backward_ms.reset();  // B = I + W
  auto m = synthesize_model(spec, budgeted());
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  CHECK(m->tuned->stats.moves_backward > 0);
  Report rep = verify(m->result.schedule, VerifyOptions{});
  CHECK_MESSAGE(rep.valid, format_report(rep));
}

TEST_CASE("synthesize_model: a split W that grows with its stage (weight_walk_ms) alone makes B the cheaper") {
  auto spec = load_spec(pstest::data_path("fused/walked-w.yaml"), "");
  REQUIRE_MESSAGE(spec.ok(), spec.status().message());
  // Four stages of four decoders (unconstrained, the search avoids the walk with one-layer stages).
  ModelSynthOptions o = budgeted();
  auto layout = parse_partition_choice("Et*4|t*4|t*4|t*4L");
  REQUIRE(layout.ok());
  o.partition = *layout;
  auto m = synthesize_model(*spec, o);
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  const Problem& p = m->problem;
  // B = I + W per layer and no overhead: only the walk can make a stage run B, and every stage of
  // several decoders does (split, it would pay 1.5 ms per decoder before each decoder, per microbatch).
  REQUIRE(std::count(m->fused_by_choice.begin(), m->fused_by_choice.end(), 1) > 0);
  for (int s = 0; s < p.num_stages(); ++s) {
    const StageSpec& st = p.stages[s];
    int decoders = 0;
    for (int l = st.first_layer; l <= st.last_layer; ++l) decoders += spec->model.type_of(l).symbol == 'T';
    if (decoders >= 3) CHECK_MESSAGE(m->fused_by_choice[s] == 1, "stage ", s, " of ", decoders, " decoders splits");
    if (m->fused_by_choice[s]) CHECK(ops_of(m->result.schedule, OpType::W, s) == 0);
  }
  Report rep = verify(m->result.schedule, VerifyOptions{});
  REQUIRE_MESSAGE(rep.valid, format_report(rep));
  CHECK(m->tuned->stats.moves_backward > 0);
  // Without the walk nothing favours B, and the search keeps every stage split.
  Spec flat = *spec;
  flat.model.types.at('T').weight_walk_ms = 0;
  auto f = synthesize_model(flat, o);
  REQUIRE(f.ok());
  CHECK(f->result.makespan_ms < m->result.makespan_ms);  // the walk costs even the best plan
  CHECK(std::count(f->fused_by_choice.begin(), f->fused_by_choice.end(), 1) == 0);
}

TEST_CASE("synthesize_model: the fused-backward choice is deterministic (same input and seed, same file)") {
  const Spec spec = cheap_fused();
  auto a = synthesize_model(spec, budgeted());
  auto b = synthesize_model(spec, budgeted());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->fused_by_choice == b->fused_by_choice);
  CHECK(format_schedule_yaml(a->result.schedule) == format_schedule_yaml(b->result.schedule));
}

}  // namespace fused_backward_synth_test
