// The executable model: mapping from layer costs to block sizes, deterministic init/data, and the
// F/I/W math checked against central finite differences of the loss.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "runtime/exec_model.h"
#include "runtime/host_ops.h"
#include "runtime/memory_rule.h"
#include "runtime/stage_compute.h"
#include "toy_schedules.h"

using namespace ps;
using namespace ps::rt;

namespace {

Model hybrid_model() {
  return pstest::toy_model("hybrid", {{'E', "embedding", 0.5}, {'M', "mamba", 2.0}, {'-', "mlp", 1.0}, {'L', "head", 4.0}},
                           "EM-M-L");
}

Problem two_stage_problem() {
  Problem p = pstest::toy_problem(2, 3, {0, 1});
  p.stages[0].first_layer = 0;
  p.stages[0].last_layer = 2;
  p.stages[1].first_layer = 3;
  p.stages[1].last_layer = 5;
  return p;
}

// Mean loss over microbatches with the given parameter override (stage, index, values).
double objective(const ExecModel& model, int stage, int index, const std::vector<float>& values) {
  HostOps ops;
  StageCompute sc(model, ops);
  for (int s = 0; s < model.num_stages(); ++s) REQUIRE(sc.add_stage(s).is_ok());
  REQUIRE(sc.set_parameter(stage, index, values).is_ok());
  double total = 0;
  for (int m = 0; m < model.microbatches; ++m) {
    Tensor x;
    for (int s = 0; s < model.num_stages(); ++s) {
      auto y = sc.forward(s, m, std::move(x));
      REQUIRE(y.ok());
      x = std::move(*y);
    }
    total += *sc.loss(m);
  }
  return total / model.microbatches;
}

}  // namespace

TEST_CASE("exec model: block kinds and widths follow the layer types' costs") {
  Model model = hybrid_model();
  ExecModelOptions o;
  o.scale = 0.25;  // d_model 16, hidden 64, vocab 64
  auto m = build_exec_model(two_stage_problem(), &model, o);
  REQUIRE_MESSAGE(m.ok(), m.status().str());
  CHECK(m->d_model == 16);
  REQUIRE(m->stages.size() == 2);
  REQUIRE(m->stages[0].size() == 3);
  CHECK(m->stages[0][0].kind == BlockKind::kEmbedding);
  CHECK(m->stages[0][1].kind == BlockKind::kMlp);
  CHECK(m->stages[0][1].hidden == 128);  // mamba: 2 × the cheapest MLP type
  CHECK(m->stages[0][2].hidden == 64);   // mlp: the cheapest
  CHECK(m->stages[1][2].kind == BlockKind::kHead);
  CHECK(m->stages[1][2].classes == 512);  // 2 · 64 · (4 / 1)
  CHECK(m->vocab_out == 512);
  CHECK(m->notes.empty());
  CHECK(m->describe().find("stage 1: mlp(h=128, layer 3 'M') mlp(h=64, layer 4 '-') head(classes=512, layer 5 'L')") !=
        std::string::npos);
  // Parameters: E table, M w1/w2, - w1/w2 | M, -, L.
  CHECK(m->stage_params(0).size() == 5);
  CHECK(m->stage_params(1).size() == 5);
}

TEST_CASE("exec model: stage-level problems get one MLP per stage plus embedding and head") {
  Problem p = pstest::toy_problem(2, 2, {0, 1}, {1.0, 3.0});
  ExecModelOptions o;
  o.scale = 0.25;
  auto m = build_exec_model(p, nullptr, o);
  REQUIRE(m.ok());
  CHECK(m->stages[0].size() == 2);
  CHECK(m->stages[0][1].hidden == 64);
  CHECK(m->stages[1][0].hidden == 192);
  CHECK(m->stages[1][1].kind == BlockKind::kHead);
  CHECK(m->notes.size() == 2);
  Model model = hybrid_model();
  Problem bad = two_stage_problem();
  bad.stages[1].last_layer = 4;  // does not cover the model
  auto e = build_exec_model(bad, &model, o);
  CHECK_FALSE(e.ok());
  CHECK(e.status().message().find("cover layers 0..4, but model 'hybrid' has 6 layers") != std::string::npos);
  o.scale = 0;
  CHECK_FALSE(build_exec_model(p, nullptr, o).ok());
}

TEST_CASE("exec model: init and data are deterministic and in range") {
  Problem p = pstest::toy_problem(1, 4, {0});
  ExecModelOptions o;
  o.scale = 0.125;
  ExecModel m = *build_exec_model(p, nullptr, o);
  const auto specs = m.stage_params(0);
  auto a = init_param(m, m.stages[0][1], 0, m.block_params(0, 1)[0]);
  auto b = init_param(m, m.stages[0][1], 0, m.block_params(0, 1)[0]);
  CHECK(a == b);
  auto c = init_param(m, m.stages[0][1], 1, m.block_params(0, 1)[1]);
  CHECK(a != std::vector<float>(c.begin(), c.begin() + static_cast<long>(std::min(a.size(), c.size()))));
  const float bound = 1.0f / std::sqrt(static_cast<float>(m.d_model));
  for (float v : a) CHECK(std::fabs(v) <= bound);
  auto t0 = microbatch_tokens(m, 0), t1 = microbatch_tokens(m, 1);
  CHECK(t0 != t1);
  CHECK(t0 == microbatch_tokens(m, 0));
  for (int v : t0) CHECK((v >= 0 && v < m.vocab_in));
  for (int v : microbatch_targets(m, 3)) CHECK((v >= 0 && v < m.vocab_out));
}

TEST_CASE("stage math: F/I/W gradients match central finite differences of the loss") {
  Model model = hybrid_model();
  ExecModelOptions o;
  o.scale = 0.125;  // d 8, hidden 32
  o.tokens = 4;
  ExecModel m = *build_exec_model(two_stage_problem(), &model, o);
  // Analytic gradients through the split I/W path.
  HostOps ops;
  StageCompute sc(m, ops);
  for (int s = 0; s < m.num_stages(); ++s) REQUIRE(sc.add_stage(s).is_ok());
  for (int mb = 0; mb < m.microbatches; ++mb) {
    Tensor x;
    for (int s = 0; s < m.num_stages(); ++s) x = *sc.forward(s, mb, std::move(x));
    Tensor dy;
    for (int s = m.num_stages() - 1; s >= 0; --s) dy = *sc.backward_input(s, mb, std::move(dy));
    for (int s = 0; s < m.num_stages(); ++s) REQUIRE(sc.backward_weight(s, mb).is_ok());
  }
  CHECK(sc.held_bytes() == 0);
  int checked = 0;
  for (int s = 0; s < m.num_stages(); ++s) {
    auto grads = *sc.gradients(s);
    auto params = sc.parameters(s);
    const auto specs = m.stage_params(s);
    for (size_t p = 0; p < grads.size(); ++p) {
      CAPTURE(specs[p].name);
      // The three largest-magnitude gradient entries of this parameter.
      std::vector<size_t> idx(grads[p].size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::partial_sort(idx.begin(), idx.begin() + 3, idx.end(),
                        [&](size_t a, size_t b) { return std::fabs(grads[p][a]) > std::fabs(grads[p][b]); });
      for (int k = 0; k < 3; ++k) {
        const size_t i = idx[k];
        const float h = 1e-2f;
        auto plus = params[p], minus = params[p];
        plus[i] += h;
        minus[i] -= h;
        const double fd = (objective(m, s, static_cast<int>(p), plus) - objective(m, s, static_cast<int>(p), minus)) /
                          (2.0 * h);
        const double g = grads[p][i];
        CAPTURE(i);
        CAPTURE(fd);
        CAPTURE(g);
        CHECK(std::fabs(fd - g) <= 0.01 * std::fabs(g) + 3e-5);
        ++checked;
      }
    }
  }
  CHECK(checked == 30);
}

TEST_CASE("stage math: held bytes follow the memory rule's per-slot sizes") {
  Model model = hybrid_model();
  ExecModelOptions o;
  o.scale = 0.125;
  o.tokens = 4;
  ExecModel m = *build_exec_model(two_stage_problem(), &model, o);
  HostOps ops;
  StageCompute sc(m, ops);
  REQUIRE(sc.add_stage(0).is_ok());
  REQUIRE(sc.add_stage(1).is_ok());
  const StageBytes b0 = stage_slot_bytes(m, 0), b1 = stage_slot_bytes(m, 1);
  Tensor y = *sc.forward(0, 0, Tensor());
  CHECK(sc.held_bytes() == b0.after_forward);
  CHECK(sc.forward(1, 0, y).ok());
  CHECK(sc.held_bytes() == b0.after_forward + b1.after_forward);
  Tensor dy = *sc.backward_input(1, 0, Tensor());
  CHECK(sc.held_bytes() == b0.after_forward + b1.after_input);
  CHECK(sc.backward_input(0, 0, dy).ok());
  CHECK(sc.held_bytes() == b0.after_input + b1.after_input);
  CHECK(sc.backward_weight(1, 0).ok());
  CHECK(sc.held_bytes() == b0.after_input);
  CHECK(sc.backward_weight(0, 0).ok());
  CHECK(sc.held_bytes() == 0);
  // Misuse is an error, not a crash.
  CHECK(sc.backward_weight(0, 0).message().find("W(0,0) runs before I(0,0)") != std::string::npos);
  CHECK_FALSE(sc.forward(0, 0, Tensor()).ok());  // F twice
  CHECK(sc.forward(1, 1, Tensor()).status().message().find("has no input activation") != std::string::npos);
}
