// Recomputation in the IR: the R action's text form, the stage fields of pipesmith-schedule/1 (read,
// written, digested only when present), the CSV reader and writer refusing R, the model's derived and
// overridden recompute options, and set_recompute summing them over a stage's layers.
#include <doctest/doctest.h>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/schedule_io.h"
#include "test_util.h"

namespace recompute_ir_test {

using namespace ps;

TEST_CASE("recompute: R parses as '3R1'; RECV_F/RECV_B still parse; junk is refused") {
  auto r = parse_action("3R1");
  REQUIRE(r.ok());
  CHECK(r->type == OpType::R);
  CHECK(r->stage == StageId{3});
  CHECK(r->mb == MicrobatchId{1});
  CHECK(to_string(*r) == "3R1");
  CHECK(is_compute(OpType::R));
  CHECK_FALSE(is_comm(OpType::R));
  auto rf = parse_action("2RECV_F0");
  REQUIRE(rf.ok());
  CHECK(rf->type == OpType::RECV_F);
  auto rb = parse_action("1RECV_B4");
  REQUIRE(rb.ok());
  CHECK(rb->type == OpType::RECV_B);
  for (const char* junk : {"3R", "R1", "3RX1", "3RR1", "3R1x", "3RECV1", "3 R1"}) {
    CAPTURE(junk);
    CHECK_FALSE(parse_action(junk).ok());
  }
  Problem p;
  StageSpec& st = p.stages.emplace_back();
  st.recompute = RecomputeMode::kFull;
  st.recompute_ms = 2.5;
  CHECK(compute_ms(p, StageId{0}, OpType::R) == 2.5);
}

Schedule two_stage_schedule() {
  Schedule s;
  s.problem.name = "rc";
  s.problem.devices = 2;
  s.problem.microbatches = 1;
  for (int d = 0; d < 2; ++d) {
    StageSpec st;
    st.first_layer = d;
    st.last_layer = d;
    st.device = d;
    st.fwd_ms = 1;
    st.bwd_input_ms = 1;
    st.bwd_weight_ms = 1;
    st.activation_mb = 100;
    st.wgrad_stash_mb = 20;
    s.problem.stages.push_back(st);
  }
  s.problem.stages[1].recompute = RecomputeMode::kSelective;
  s.problem.stages[1].recompute_ms = 0.25;
  s.problem.stages[1].recompute_kept_mb = 40;
  auto op = [](OpType t, int st) { return Action{t, StageId{st}, MicrobatchId{0}, {}}; };
  s.programs = {{op(OpType::F, 0), op(OpType::B, 0)}, {op(OpType::F, 1), op(OpType::R, 1), op(OpType::B, 1)}};
  return s;
}

TEST_CASE("recompute: schedule files carry the stage mode and R ops; the digest text names them only when set") {
  const Schedule s = two_stage_schedule();
  const std::string text = format_schedule_yaml(s);
  CHECK(pstest::contains(text, "split_backward: true}\n"));  // stage 0: no recompute fields
  CHECK(pstest::contains(text, "recompute: selective, recompute_ms: 0.25, recompute_kept_mb: 40}"));
  CHECK(pstest::contains(text, "ops: [1F0, 1R0, 1B0]"));
  auto back = parse_schedule_yaml(text, "rc.yaml");
  REQUIRE_MESSAGE(back.ok(), back.status().str());
  CHECK(back->problem.stages[0].recompute == RecomputeMode::kNone);
  CHECK(back->problem.stages[1].recompute == RecomputeMode::kSelective);
  CHECK(back->problem.stages[1].recompute_ms == 0.25);
  CHECK(back->problem.stages[1].recompute_kept_mb == 40);
  CHECK(back->programs[1][1].type == OpType::R);
  CHECK(format_schedule_yaml(*back) == text);
  const std::string canon = canonical_text(s);
  CHECK(pstest::contains(canon, "split_backward=true recompute=selective recompute_ms=0.25 recompute_kept_mb=40\n"));
  CHECK(pstest::contains(canon, "program 1 1F0 1R0 1B0\n"));
  // A problem without recomputation digests exactly as before: no recompute words at all.
  Schedule plain = s;
  plain.problem.stages[1].recompute = RecomputeMode::kNone;
  CHECK_FALSE(pstest::contains(canonical_text(plain), "recompute"));
  CHECK_FALSE(pstest::contains(format_schedule_yaml(plain), "recompute"));
}

TEST_CASE("recompute: a stage's recompute fields are checked where they are") {
  const std::string text = format_schedule_yaml(two_stage_schedule());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
    return parse_schedule_yaml(t, "rc.yaml");
  };
  auto bad_mode = with("recompute: selective", "recompute: partial");
  REQUIRE_FALSE(bad_mode.ok());
  CHECK(pstest::contains(bad_mode.status().message(), "expected full or selective"));
  CHECK(bad_mode.status().loc().line == 14);
  auto none_word = with("recompute: selective", "recompute: none");
  REQUIRE_FALSE(none_word.ok());
  auto missing_ms = with("recompute_ms: 0.25, ", "");
  REQUIRE_FALSE(missing_ms.ok());
  CHECK(pstest::contains(missing_ms.status().message(), "recompute_ms"));
  auto too_much = with("recompute_kept_mb: 40", "recompute_kept_mb: 101");
  REQUIRE_FALSE(too_much.ok());
  CHECK(pstest::contains(too_much.status().message(), "recompute_kept_mb (101) must be <= activation_mb (100)"));
  auto orphan = with("recompute: selective, ", "");
  REQUIRE_FALSE(orphan.ok());
  CHECK(pstest::contains(orphan.status().message(), "given without 'recompute: full|selective'"));
}

TEST_CASE("recompute: the PyTorch CSV reader refuses R; the CSV writer refuses a schedule with R") {
  auto r = parse_pytorch_csv("0F0,0R0,0B0\n", "x.csv");
  REQUIRE_FALSE(r.ok());
  CHECK(pstest::contains(r.status().message(), "unknown op type R"));
  CHECK(r.status().loc().line == 1);
  CHECK(r.status().loc().col == 5);
  auto overlapped = parse_pytorch_csv("0F0,(0R0;0B0)OVERLAP_F_B\n", "x.csv");
  REQUIRE_FALSE(overlapped.ok());
  Status st = check_pytorch_csv_exportable(two_stage_schedule());
  REQUIRE_FALSE(st.is_ok());
  CHECK(pstest::contains(st.message(), "device 1 runs '1R0'"));
  Schedule plain = two_stage_schedule();
  plain.programs[1].erase(plain.programs[1].begin() + 1);
  CHECK(check_pytorch_csv_exportable(plain).is_ok());
}

TEST_CASE("recompute: derived options per layer type (Korthikanti et al.'s 5·a·s²·b) and YAML overrides") {
  auto spec = load_spec(pstest::data_path("recompute/no-flash.yaml"));
  REQUIRE_MESSAGE(spec.ok(), spec.status().str());
  const auto& types = spec->model.types;
  const double input_mb = 512.0 * 1024 * 2 / 1e6;   // T × h × 2 bytes = 1.048576
  const double quadratic_mb = 5.0 * 8 * 512 * 512 / 1e6;  // 10.48576
  const double core_ms = 4.0 * 8 * 128 * (512.0 * 512 / 2) / (989e12 * 0.5 / 1e3);
  const LayerType& t = types.at('T');
  CHECK(t.recompute_full.ms == doctest::Approx(t.forward_ms));
  CHECK(t.recompute_full.kept_mb == doctest::Approx(input_mb));
  CHECK(t.recompute_selective.ms == doctest::Approx(core_ms));
  CHECK(t.recompute_selective.kept_mb == doctest::Approx(t.activation_mb - quadratic_mb));
  const LayerType& m = types.at('M');  // no attention: selective has nothing to drop
  CHECK(m.recompute_selective.ms == 0);
  CHECK(m.recompute_selective.kept_mb == doctest::Approx(m.activation_mb));
  CHECK(m.recompute_full.kept_mb == doctest::Approx(input_mb));
  const LayerType& e = types.at('E');  // the embedding's input is the token ids, 8 bytes each
  CHECK(e.recompute_full.kept_mb == doctest::Approx(8.0 * 512 / 1e6));
  const LayerType& o = types.at('O');
  CHECK(o.recompute_full.ms == 7);
  CHECK(o.recompute_full.kept_mb == 1);
  CHECK(o.recompute_selective.ms == 0.25);
  CHECK(o.recompute_selective.kept_mb == doctest::Approx(o.activation_mb - quadratic_mb));
  // With flash attention (llama2-7b) the scores are never stored: selective keeps everything.
  auto llama = load_spec(pstest::source_path("configs/models/llama2-7b.yaml"));
  REQUIRE(llama.ok());
  const LayerType& dec = llama->model.types.at('T');
  CHECK(dec.recompute_selective.ms == 0);
  CHECK(dec.recompute_selective.kept_mb == doctest::Approx(dec.activation_mb));
  CHECK(dec.recompute_full.kept_mb == doctest::Approx(4096.0 * 4096 * 2 / 1e6));

  auto bad = load_spec(pstest::data_path("recompute/bad-kept.yaml"));
  REQUIRE_FALSE(bad.ok());
  CHECK(pstest::contains(bad.status().message(), "recompute.full.kept_mb (11) must be <= activation_mb (10)"));
  CHECK(bad.status().loc().line == 5);
}

TEST_CASE("recompute: set_recompute sums the layers' options per stage; none clears them") {
  auto spec = load_spec(pstest::data_path("recompute/no-flash.yaml"));
  REQUIRE(spec.ok());
  auto p = make_problem(*spec, {{0, 2}, {3, 5}}, {0, 1});
  REQUIRE_MESSAGE(p.ok(), p.status().str());
  const auto& ty = spec->model.types;
  REQUIRE(set_recompute(*spec, *p, {RecomputeMode::kFull, RecomputeMode::kSelective}).is_ok());
  // Stage 0 = E T T: full keeps the three layers' inputs and recomputes their forwards.
  CHECK(p->stages[0].recompute == RecomputeMode::kFull);
  CHECK(p->stages[0].recompute_kept_mb ==
        doctest::Approx(ty.at('E').recompute_full.kept_mb + 2 * ty.at('T').recompute_full.kept_mb));
  CHECK(p->stages[0].recompute_ms == doctest::Approx(p->stages[0].fwd_ms));
  // Stage 1 = M O L: selective drops only O's scores.
  CHECK(p->stages[1].recompute_ms == doctest::Approx(0.25));
  CHECK(p->stages[1].recompute_kept_mb == doctest::Approx(p->stages[1].activation_mb - 5.0 * 8 * 512 * 512 / 1e6));
  CHECK(p->stages[1].fwd_alloc_mb() == doctest::Approx(p->stages[1].recompute_kept_mb));
  CHECK(p->stages[1].recompute_alloc_mb() == doctest::Approx(5.0 * 8 * 512 * 512 / 1e6));
  REQUIRE(set_recompute_all(*spec, *p, RecomputeMode::kNone).is_ok());
  CHECK_FALSE(p->stages[0].recomputes());
  CHECK(p->stages[0].recompute_ms == 0);
  CHECK(p->stages[0].fwd_alloc_mb() == p->stages[0].activation_mb);
  CHECK_FALSE(set_recompute(*spec, *p, {RecomputeMode::kFull}).is_ok());
}

}  // namespace recompute_ir_test
