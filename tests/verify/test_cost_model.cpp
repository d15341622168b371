// The cost model's fused-backward time (a layer type's backward_ms) and per-op overhead (the
// cluster's op_overhead_ms): what they do to simulated makespans, the lower bounds, the schedule
// file (round trip, byte-identical without them) and the readers' refusals with their locations.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <fstream>
#include <random>
#include <string>

#include "builders.h"
#include "ir/model.h"
#include "ir/schedule_io.h"
#include "report/report.h"
#include "synth/bounds/global_bound.h"
#include "test_util.h"

namespace test_cost_model {

using namespace vt;

// 1-based line and column of byte `pos` of `text`.
std::pair<int, int> line_col(const std::string& text, size_t pos) {
  const size_t bol = text.rfind('\n', pos == 0 ? 0 : pos - 1);
  const size_t start = bol == std::string::npos ? 0 : bol + 1;
  int line = 1;
  for (size_t i = 0; i < start; ++i) line += text[i] == '\n';
  return {line, static_cast<int>(pos - start) + 1};
}

// One layer type A (F 1, I 2, W 2) on `devices` devices, `layers` layers, M microbatches; `extra`
// is spliced into A's map and `cluster_extra` into the cluster's.
std::string spec_text(const std::string& extra, const std::string& cluster_extra = "", int devices = 1,
                      int layers = 1, int M = 3) {
  return fmt::format(R"(model:
  name: fused
  layer_types:
    A: {{forward_ms: 1, backward_input_ms: 2, backward_weight_ms: 2, activation_mb: 10, wgrad_stash_mb: 4, output_mb: 1, params_m: 1{}}}
  layers:
    - {{type: A, repeat: {}}}
cluster:
  devices: {}
  link: {{bandwidth_gb_per_s: 1, latency_us: 0}}{}
pipeline: {{microbatches: {}}}
)",
                     extra, layers, devices, cluster_extra, M);
}

Problem problem_of(const std::string& text, int devices = 1) {
  Result<Spec> spec = parse_spec(text, "m.yaml");
  REQUIRE_MESSAGE(spec.ok(), spec.status().str());
  Partition part;
  std::vector<int> placement;
  const int L = static_cast<int>(spec->model.layers.size());
  for (int s = 0; s < devices; ++s) {
    part.push_back({s * L / devices, (s + 1) * L / devices - 1});
    placement.push_back(s);
  }
  Result<Problem> p = make_problem(*spec, part, placement);
  REQUIRE_MESSAGE(p.ok(), p.status().str());
  return *p;
}

double makespan(const Schedule& s) {
  Report r = verify(s);
  INFO(format_report(r));
  REQUIRE(r.valid);
  CHECK(r.lower_bound_ms <= r.sim->makespan_ms + 1e-9);
  return r.sim->makespan_ms;
}

TEST_CASE("backward_ms: B takes it, so GPipe on one device is M x (I + W - B) faster") {
  const Problem split = problem_of(spec_text(""));
  const Problem fused = problem_of(spec_text(", backward_ms: 2.75"));
  REQUIRE_FALSE(split.stages[0].fused_bwd_ms);
  REQUIRE(fused.stages[0].fused_bwd_ms);
  CHECK(*fused.stages[0].fused_bwd_ms == 2.75);
  CHECK(fused.stages[0].bwd_ms() == 2.75);
  CHECK(fused.stages[0].split_bwd_ms() == 4);
  CHECK(compute_ms(fused, StageId{0}, OpType::B) == 2.75);
  CHECK(compute_ms(fused, StageId{0}, OpType::I) == 2);  // I and W keep their own times
  // One device, M = 3: F F F B B B, nothing waits: 3 x (1 + 4) = 15, and 3 x (1 + 2.75) = 11.25.
  CHECK(makespan(gpipe(split)) == 15);
  CHECK(makespan(gpipe(fused)) == 11.25);
  CHECK(makespan(gpipe(split)) - makespan(gpipe(fused)) == 3 * (4 - 2.75));
  // A split schedule does not use B: its time is unchanged.
  const char* split_order = "0F0 0F1 0F2 0I0 0W0 0I1 0W1 0I2 0W2";
  CHECK(makespan(from_strings(fused, {split_order})) == makespan(from_strings(split, {split_order})));
}

TEST_CASE("backward_ms sums over a stage's layers; layers without it count I + W") {
  const std::string text = R"(model:
  name: mixed
  layer_types:
    A: {forward_ms: 1, backward_input_ms: 2, backward_weight_ms: 2, activation_mb: 10, wgrad_stash_mb: 4, output_mb: 1, params_m: 1, backward_ms: 3}
    C: {forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 0.5, activation_mb: 10, wgrad_stash_mb: 4, output_mb: 1, params_m: 1}
  layers:
    - {type: A}
    - {type: C}
    - {type: C}
cluster: {devices: 2}
pipeline: {microbatches: 2}
)";
  Result<Spec> spec = parse_spec(text, "m.yaml");
  REQUIRE_MESSAGE(spec.ok(), spec.status().str());
  Result<Problem> p = make_problem(*spec, {{0, 1}, {2, 2}}, {0, 1});
  REQUIRE_MESSAGE(p.ok(), p.status().str());
  REQUIRE(p->stages[0].fused_bwd_ms);
  CHECK(*p->stages[0].fused_bwd_ms == 3 + 1.5);
  CHECK_FALSE(p->stages[1].fused_bwd_ms);  // no layer of it gives one
  CHECK(p->stages[1].bwd_ms() == 1.5);
}

TEST_CASE("op_overhead_ms adds exactly ops x overhead to a one-device schedule") {
  const Problem plain = problem_of(spec_text("", "", 1, 1, 3));
  const Problem slow = problem_of(spec_text("", "\n  op_overhead_ms: 0.25", 1, 1, 3));
  CHECK(plain.op_overhead_ms == 0);
  CHECK(slow.op_overhead_ms == 0.25);
  // 8 compute ops: three F, two I + W pairs, one B.
  const std::vector<std::string> order = {"0F0 0F1 0F2 0I0 0W0 0B1 0I2 0W2"};
  const double a = makespan(from_strings(plain, order)), b = makespan(from_strings(slow, order));
  CHECK(a == 3 * 1 + 3 * 4);
  CHECK(b - a == doctest::Approx(8 * 0.25));
  for (OpType t : {OpType::F, OpType::I, OpType::W, OpType::B})
    CHECK(compute_ms(slow, StageId{0}, t) == doctest::Approx(compute_ms(plain, StageId{0}, t) + 0.25));
  CHECK(compute_ms(slow, StageId{0}, OpType::SEND_F) == 0);  // transfers are the link's
}

TEST_CASE("lower bounds take the cheaper backward: never above the makespan with a cheap fused B") {
  // One stage: GPipe with B = 1.5 runs 3 x (1 + 1.5) = 7.5 ms; a bound counting I + W (3 x 5 = 15)
  // would exceed it.
  const Problem one = problem_of(spec_text(", backward_ms: 1.5"));
  Report r = verify(gpipe(one));
  REQUIRE(r.valid);
  CHECK(r.sim->makespan_ms == 7.5);
  CHECK(r.lower_bound_ms == 7.5);  // device work, with B: tight
  // A fused B cheaper than I alone: the critical path must not count I either.
  const Problem two = problem_of(spec_text(", backward_ms: 1.5", "", 2, 2, 1), 2);
  Report c = verify(gpipe(two));
  REQUIRE(c.valid);
  CHECK(c.lower_bound_ms <= c.sim->makespan_ms);
  CHECK(c.sim->makespan_ms == doctest::Approx(1 + 1 + 1 + 1.5 + 1 + 1.5));  // F, xfer, F, B, xfer, B
  // The model-level bound (over every partition) too.
  Result<Spec> spec = parse_spec(spec_text(", backward_ms: 1.5", "", 2, 2, 1), "m.yaml");
  REQUIRE(spec.ok());
  Result<GlobalBound> g = global_lower_bound(*spec, 2, 1, 0);
  REQUIRE(g.ok());
  CHECK(g->bound_ms <= c.sim->makespan_ms);
  // Random valid schedules, B and I + W mixed, B cheaper or dearer than I + W, with and without overhead.
  std::mt19937 rng(7);
  for (const char* extra : {", backward_ms: 0.5", ", backward_ms: 3.5", ", backward_ms: 6"}) {
    for (const char* over : {"", "\n  op_overhead_ms: 0.75"}) {
      const Problem p = problem_of(spec_text(extra, over, 2, 4, 4), 2);
      for (int k = 0; k < 40; ++k) {
        Report ri = verify(random_valid(p, rng));
        INFO(extra, over, "\n", format_report(ri));
        REQUIRE(ri.valid);
        CHECK(ri.sim->makespan_ms >= ri.lower_bound_ms - 1e-9);
      }
    }
  }
}

TEST_CASE("schedule file: bwd_ms and op_overhead_ms round-trip; files without them are unchanged") {
  Problem p = problem_of(spec_text(", backward_ms: 2.75", "\n  op_overhead_ms: 0.25"));
  const Schedule s = gpipe(p);
  const std::string text = format_schedule_yaml(s);
  CHECK(pstest::contains(text, "  op_overhead_ms: 0.25\n"));
  CHECK(pstest::contains(text, "bwd_weight_ms: 2, bwd_ms: 2.75, activation_mb: 10,"));
  const std::string path = pstest::temp_path("fused.yaml");
  REQUIRE(write_schedule_yaml(s, path).ok());
  Result<Schedule> back = read_schedule_yaml(path);
  REQUIRE_MESSAGE(back.ok(), back.status().str());
  CHECK(back->problem.op_overhead_ms == 0.25);
  REQUIRE(back->problem.stages[0].fused_bwd_ms);
  CHECK(*back->problem.stages[0].fused_bwd_ms == 2.75);
  CHECK(format_schedule_yaml(*back) == text);
  CHECK(pstest::contains(canonical_text(*back), " bwd_ms=2.75 "));
  CHECK(pstest::contains(canonical_text(*back), " op_overhead_ms=0.25\n"));

  // Without either (or with a fused time equal to I + W) the file is the one written before.
  const std::string plain = format_schedule_yaml(gpipe(problem_of(spec_text(""))));
  CHECK(format_schedule_yaml(gpipe(problem_of(spec_text(", backward_ms: 4")))) == plain);
  CHECK_FALSE(pstest::contains(plain, "bwd_ms:"));
  CHECK_FALSE(pstest::contains(plain, "op_overhead_ms"));
  CHECK(pstest::contains(plain,
                         "  - {id: 0, device: 0, layers: [0, 0], fwd_ms: 1, bwd_input_ms: 2, bwd_weight_ms: 2, "
                         "activation_mb: 10, wgrad_stash_mb: 4, output_mb: 0, params_m: 1, split_backward: true}\n"));
  CHECK(pstest::contains(plain, "  unit_costs: false\nstages:\n"));
  CHECK_FALSE(pstest::contains(canonical_text(gpipe(problem_of(spec_text("")))), "bwd_ms="));
}

TEST_CASE("bad backward_ms and op_overhead_ms are refused at their location") {
  // `after`: the text just before the bad value, whose location the error must carry.
  auto refused = [](const std::string& text, const std::string& after, const std::string& message) {
    Result<Spec> s = parse_spec(text, "m.yaml");
    REQUIRE_FALSE(s.ok());
    INFO(s.status().str());
    CHECK(pstest::contains(s.status().message(), message));
    const size_t at = text.find(after);
    REQUIRE(at != std::string::npos);
    const auto [line, col] = line_col(text, at + after.size());
    CHECK(s.status().loc().file == "m.yaml");
    CHECK(s.status().loc().line == line);
    CHECK(s.status().loc().col == col);
  };
  refused(spec_text(", backward_ms: -2"), "backward_ms: ", "layer type 'A': backward_ms must be >= 0, got -2");
  refused(spec_text(", backward_ms: .nan"), "backward_ms: ", "expected a finite number");
  refused(spec_text(", backward_ms: fast"), "backward_ms: ", "backward_ms");
  refused(spec_text("", "\n  op_overhead_ms: -0.5"), "op_overhead_ms: ", "cluster: op_overhead_ms must be >= 0, got -0.5");

  // The schedule file's fields.
  const std::string text = format_schedule_yaml(gpipe(problem_of(spec_text(", backward_ms: 2.75"))));
  auto bad_file = [&](const std::string& from, const std::string& to, const std::string& message) {
    std::string edited = text;
    const size_t at = edited.find(from);
    REQUIRE(at != std::string::npos);
    edited.replace(at, from.size(), to);
    const std::string path = pstest::temp_path("bad-fused.yaml");
    std::ofstream(path) << edited;
    Result<Schedule> r = read_schedule_yaml(path);
    REQUIRE_FALSE(r.ok());
    INFO(r.status().str());
    CHECK(pstest::contains(r.status().message(), message));
    // The location is the value's: the bad number after the last blank of `to`.
    const auto [line, col] = line_col(edited, at + to.rfind(' ') + 1);
    CHECK(r.status().loc().line == line);
    CHECK(r.status().loc().col == col);
  };
  bad_file("bwd_ms: 2.75", "bwd_ms: -1", "stage 0.bwd_ms: must be >= 0, got -1");
  bad_file("unit_costs: false", "unit_costs: false\n  op_overhead_ms: -3", "problem.op_overhead_ms: must be >= 0, got -3");
}

}  // namespace test_cost_model
