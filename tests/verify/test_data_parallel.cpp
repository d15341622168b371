// The data-parallel step (REDUCE_GRAD) in the checker: the action's text, the placement rule when a
// schedule places none, the rules (structure.data-parallel, dependency), the data-parallel stream's
// timing, the lower bound, and the file round trip. Times are worked out by hand in the comments.
#include <doctest/doctest.h>

#include <random>

#include "builders.h"
#include "ir/dp_ops.h"
#include "ir/schedule_io.h"
#include "report/report.h"
#include "test_util.h"
#include "verify/rules.h"

namespace data_parallel_test {

using namespace vt;

// Two stages on two devices, F = I = W = 1 ms (B = 2), no transfer time, M microbatches; every stage
// with a data-parallel step of `reduce_ms` (and stage s's own when `per_stage` is given).
Problem dp_problem(int mbs, std::vector<double> reduce_ms, std::vector<int> placement = {0, 1}, int devices = 2) {
  Problem p = uniform_problem(devices, mbs, placement);
  for (size_t s = 0; s < reduce_ms.size(); ++s) {
    if (reduce_ms[s] < 0) continue;  // no step
    p.stages[s].reduces_grad = true;
    p.stages[s].reduce_grad_ms = reduce_ms[s];
  }
  return p;
}

std::vector<std::string> program_texts(const Schedule& s) {
  std::vector<std::string> out;
  for (const auto& prog : s.programs) {
    std::string t;
    for (const Action& a : prog) t += (t.empty() ? "" : " ") + to_string(a);
    out.push_back(t);
  }
  return out;
}

TEST_CASE("REDUCE_GRAD, UNSHARD, RESHARD: their text has no microbatch") {
  auto a = parse_action("2REDUCE_GRAD");
  REQUIRE(a.ok());
  CHECK(a->type == OpType::REDUCE_GRAD);
  CHECK(a->stage == StageId{2});
  CHECK(a->mb == MicrobatchId{0});
  CHECK(to_string(*a) == "2REDUCE_GRAD");
  auto with_mb = parse_action("2REDUCE_GRAD1");
  REQUIRE_FALSE(with_mb.ok());
  CHECK(pstest::contains(with_mb.status().message(), "takes no microbatch"));
  CHECK(parse_action("0UNSHARD")->type == OpType::UNSHARD);
  CHECK(parse_action("0RESHARD")->type == OpType::RESHARD);
  CHECK(to_string(*parse_action("3RESHARD")) == "3RESHARD");
  CHECK_FALSE(parse_action("0UNSHARD0").ok());
  // R and RECV still parse: REDUCE_GRAD is matched before its prefix R.
  CHECK(parse_action("1R0")->type == OpType::R);
  CHECK(parse_action("1RECV_F0")->type == OpType::RECV_F);
}

TEST_CASE("data-parallel: a schedule without REDUCE_GRAD gets one per stage after its last backward") {
  // Device 0: 0F0 [0,1] 0F1 [1,2]; device 1: 1F0 [1,2] 1B0 [2,4] 1F1 [4,5] 1B1 [5,7];
  // device 0: 0B0 [4,6] 0B1 [7,9]. Reductions: stage 1 after 7 → [7,10]; stage 0 after 9 → [9,12].
  const Problem p = dp_problem(2, {3, 3});
  Report r = verify(from_strings(p, {"0F0 0F1 0B0 0B1", "1F0 1B0 1F1 1B1"}));
  REQUIRE_MESSAGE(r.valid, format_report(r));
  REQUIRE(r.sim.has_value());
  // Without the step the iteration ends with the last backward, and the programs are those plus the
  // reductions.
  Report none = verify(from_strings(dp_problem(2, {-1, -1}), {"0F0 0F1 0B0 0B1", "1F0 1B0 1F1 1B1"}));
  REQUIRE(none.sim.has_value());
  CHECK(none.sim->makespan_ms == doctest::Approx(9));
  CHECK(none.sim->exposed_data_parallel_ms == doctest::Approx(0));
  CHECK(program_texts(without_data_parallel_ops(r.checked)) == program_texts(none.checked));
  const auto texts = program_texts(r.checked);
  CHECK(pstest::contains(texts[0], "0B1 0REDUCE_GRAD"));
  CHECK(pstest::contains(texts[1], "1B1 1REDUCE_GRAD"));
  bool noted = false;
  for (const std::string& n : r.notes) noted = noted || pstest::contains(n, "ir/dp_ops.h");
  CHECK(noted);
  CHECK(r.sim->makespan_ms == doctest::Approx(12));
  CHECK(r.sim->exposed_data_parallel_ms == doctest::Approx(3));
  // Busy time is compute only: 2 × (1 + 2) per device.
  CHECK(r.sim->busy_ms[0] == doctest::Approx(6));
  // The same order written with the reductions in place times the same.
  Report placed = verify(from_strings(p, {"0F0 0F1 0B0 0B1 0REDUCE_GRAD", "1F0 1B0 1F1 1B1 1REDUCE_GRAD"}));
  REQUIRE_MESSAGE(placed.valid, format_report(placed));
  CHECK(placed.sim->makespan_ms == doctest::Approx(12));
}

TEST_CASE("data-parallel: one device's reductions share its stream, in program order") {
  // Stages 0 and 1 both on device 0 (M = 1): 0F0 [0,1] 1F0 [1,2] 1B0 [2,4] 0B0 [4,6]. The stream
  // runs 1REDUCE_GRAD after 4 → [4,8], then 0REDUCE_GRAD after max(8, 6) → [8,9]: makespan 9.
  const Problem p = dp_problem(1, {1, 4}, {0, 0}, 1);
  Report r = verify(from_strings(p, {"0F0 1F0 1B0 1REDUCE_GRAD 0B0 0REDUCE_GRAD"}));
  REQUIRE_MESSAGE(r.valid, format_report(r));
  CHECK(r.sim->makespan_ms == doctest::Approx(9));
  CHECK(r.sim->exposed_data_parallel_ms == doctest::Approx(3));
  // Stage 1's long reduction placed last waits for stage 0's: [6,7] then [7,11].
  Report late = verify(from_strings(p, {"0F0 1F0 1B0 0B0 0REDUCE_GRAD 1REDUCE_GRAD"}));
  REQUIRE_MESSAGE(late.valid, format_report(late));
  CHECK(late.sim->makespan_ms == doctest::Approx(11));
}

TEST_CASE("dependency: a REDUCE_GRAD before its stage's last backward is a located violation") {
  Report r = verify(from_strings(dp_problem(2, {3, 3}), {"0F0 0F1 0I0 0I1 0W0 0REDUCE_GRAD 0W1", "1F0 1B0 1F1 1B1 1REDUCE_GRAD"}));
  INFO(format_report(r));
  REQUIRE_FALSE(r.valid);
  const Violation* v = find_rule(r, std::string(rules::kDependency));
  REQUIRE(v != nullptr);
  CHECK(v->device == ps::DeviceId{0});
  CHECK(v->op_index == 5);
  CHECK(v->action == "0REDUCE_GRAD");
  CHECK(v->loc.line == 1);
  CHECK(v->loc.col == 6);
  CHECK(pstest::contains(v->message, "'0W1'"));
}

TEST_CASE("structure.data-parallel: REDUCE_GRAD without a step, and a schedule that places only some") {
  {
    Report r = verify(from_strings(dp_problem(1, {-1, 3}), {"0F0 0B0 0REDUCE_GRAD", "1F0 1B0 1REDUCE_GRAD"}));
    INFO(format_report(r));
    const Violation* v = find_rule(r, std::string(rules::kDataParallel));
    REQUIRE(v != nullptr);
    CHECK(v->device == ps::DeviceId{0});
    CHECK(v->op_index == 2);
    CHECK(pstest::contains(v->message, "no data-parallel step"));
  }
  {
    Report r = verify(from_strings(dp_problem(1, {3, 3}), {"0F0 0B0", "1F0 1B0 1REDUCE_GRAD"}));
    INFO(format_report(r));
    const Violation* v = find_rule(r, std::string(rules::kDataParallel));
    REQUIRE(v != nullptr);
    CHECK(v->device == ps::DeviceId{0});
    CHECK(pstest::contains(v->message, "'0REDUCE_GRAD' is missing"));
  }
  {
    Report r = verify(from_strings(dp_problem(1, {3, 3}), {"0F0 0B0 0REDUCE_GRAD 0REDUCE_GRAD", "1F0 1B0 1REDUCE_GRAD"}));
    const Violation* v = find_rule(r, std::string(rules::kDuplicate));
    REQUIRE(v != nullptr);
    CHECK(v->op_index == 3);
  }
}

TEST_CASE("lower bound: the data-parallel step after the last backward; never above a valid schedule") {
  // dp_problem(2, {3, 3}): device work 6 + least step 3 = 9; head + work + step of device 1: 1 + 6 +
  // 3 = 10; critical path 5 + 3 = 8. Without steps: 7 (head + work of device 1).
  CHECK(lower_bound_ms(dp_problem(2, {3, 3})) == doctest::Approx(10));
  CHECK(lower_bound_ms(dp_problem(2, {-1, -1})) == doctest::Approx(7));
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    const int S = 2 + static_cast<int>(rng() % 4), D = 1 + static_cast<int>(rng() % S);
    std::vector<int> placement(S);
    for (int s = 0; s < S; ++s) placement[s] = s % D;
    std::vector<double> red(S);
    for (double& x : red) x = (rng() % 5 == 0) ? -1 : 0.5 * static_cast<double>(rng() % 12);
    Problem p = dp_problem(1 + static_cast<int>(rng() % 4), red, placement, D);
    for (StageSpec& st : p.stages) st.output_mb = 0.25 * static_cast<double>(rng() % 4);
    const Schedule s = random_valid(p, rng);
    for (Semantics sem : {Semantics::kRendezvous, Semantics::kGrouped, Semantics::kBuffered, Semantics::kPosted}) {
      VerifyOptions o;
      o.semantics = sem;
      Report r = verify(s, o);
      if (!r.valid || !r.sim) continue;
      INFO("trial ", trial, " ", semantics_name(sem));
      CHECK(r.sim->makespan_ms >= r.lower_bound_ms - 1e-9);
    }
  }
}

TEST_CASE("data-parallel: the file keeps reduce_grad_ms and the ops, and reads back the same") {
  Report r = verify(from_strings(dp_problem(2, {3, -1}), {"0F0 0F1 0B0 0B1", "1F0 1B0 1F1 1B1"}));
  REQUIRE(r.valid);
  const std::string text = format_schedule_yaml(r.checked);
  CHECK(pstest::contains(text, "reduce_grad_ms: 3"));
  CHECK(pstest::contains(text, "0REDUCE_GRAD"));
  CHECK_FALSE(pstest::contains(text, "1REDUCE_GRAD"));
  auto back = parse_schedule_yaml(text, "round-trip.yaml");
  REQUIRE_MESSAGE(back.ok(), back.status().str());
  CHECK(back->problem.stages[0].reduces_grad);
  CHECK(back->problem.stages[0].reduce_grad_ms == 3);
  CHECK_FALSE(back->problem.stages[1].reduces_grad);
  CHECK(format_schedule_yaml(*back) == text);
  CHECK(canonical_text(*back) == canonical_text(r.checked));
  Report again = verify(*back);
  REQUIRE(again.valid);
  CHECK(again.sim->makespan_ms == doctest::Approx(r.sim->makespan_ms));
  // An FSDP stage's fields come together: one without the other is refused with its location.
  std::string half = text;
  const size_t at = half.find("reduce_grad_ms: 3");
  half.replace(at, std::string("reduce_grad_ms: 3").size(), "reduce_grad_ms: 3, unshard_ms: 2");
  auto refused = parse_schedule_yaml(half, "fsdp.yaml");
  REQUIRE_FALSE(refused.ok());
  CHECK(pstest::contains(refused.status().str(), "fsdp.yaml:"));
  CHECK(pstest::contains(refused.status().message(), "unsharded_mb"));
}

// dp_problem with every stage sharded by FSDP: a 2 ms gather of 50 MB (weights and gradients).
Problem fsdp_problem(int mbs, std::vector<double> reduce_ms) {
  Problem p = dp_problem(mbs, std::move(reduce_ms));
  for (StageSpec& st : p.stages) {
    st.fsdp = true;
    st.unshard_ms = 2;
    st.unsharded_mb = 50;
  }
  return p;
}

TEST_CASE("FSDP: UNSHARD before the stage's first op, RESHARD after its REDUCE_GRAD; gather time and memory") {
  // Device 0: 0UNSHARD [0,2] 0F0 [2,3] 0F1 [3,4]; device 1: 1UNSHARD [0,2] 1F0 [3,4] 1B0 [4,6] 1F1 [6,7]
  // 1B1 [7,9]; device 0: 0B0 [6,8] 0B1 [9,11]. Stream 1: 1REDUCE_GRAD [9,12] 1RESHARD 12; stream 0:
  // 0REDUCE_GRAD [11,14] 0RESHARD 14. Memory of device 0: 2 (states) + 50 (gathered) + 2 x 100.
  Report r = verify(from_strings(fsdp_problem(2, {3, 3}), {"0F0 0F1 0B0 0B1", "1F0 1B0 1F1 1B1"}));
  REQUIRE_MESSAGE(r.valid, format_report(r));
  const auto texts = program_texts(r.checked);
  CHECK(texts[0].rfind("0UNSHARD 0F0", 0) == 0);
  CHECK(pstest::contains(texts[0], "0B1 0REDUCE_GRAD 0RESHARD"));
  CHECK(pstest::contains(texts[1], "1B1 1REDUCE_GRAD 1RESHARD"));
  CHECK(r.sim->makespan_ms == doctest::Approx(14));
  CHECK(r.sim->exposed_data_parallel_ms == doctest::Approx(3));
  CHECK(r.sim->peak_memory_mb[0] == doctest::Approx(252));
  // Bound 1 on device 0: the least gather 2 + work 6 + the least reduction 3.
  CHECK(lower_bound_ms(fsdp_problem(2, {3, 3})) == doctest::Approx(11));
  // The gathered memory counts against the limit: 252 MB > 220 MB.
  Problem tight = fsdp_problem(2, {3, 3});
  tight.memory_gb = 0.22;
  Report over = verify(from_strings(tight, {"0F0 0F1 0B0 0B1", "1F0 1B0 1F1 1B1"}));
  REQUIRE(find_rule(over, std::string(rules::kMemoryLimit)) != nullptr);
  // A later gather (one op ahead of the stage's second forward) delays its compute: 0F1 waits for it.
  Problem late = fsdp_problem(1, {-1, -1});
  Report shifted = verify(from_strings(late, {"0UNSHARD 0F0 0B0 0RESHARD", "1F0 1UNSHARD 1B0 1RESHARD"}));
  INFO(format_report(shifted));
  const Violation* v = find_rule(shifted, std::string(rules::kDependency));
  REQUIRE(v != nullptr);
  CHECK(v->device == ps::DeviceId{1});
  CHECK(v->op_index == 0);
  CHECK(pstest::contains(v->message, "gathers the weights"));
}

TEST_CASE("dependency: RESHARD before the stage's REDUCE_GRAD") {
  Report r = verify(from_strings(fsdp_problem(1, {3, 3}), {"0UNSHARD 0F0 0B0 0RESHARD 0REDUCE_GRAD",
                                                          "1UNSHARD 1F0 1B0 1REDUCE_GRAD 1RESHARD"}));
  INFO(format_report(r));
  const Violation* v = find_rule(r, std::string(rules::kDependency));
  REQUIRE(v != nullptr);
  CHECK(v->action == "0RESHARD");
  CHECK(pstest::contains(v->message, "reduces the gradients RESHARD frees"));
}

}  // namespace data_parallel_test
