// `pipesmith synth` choosing B over I and W per stage where B is cheaper: the summary names the
// stages, the schedule file declares them as running B only, and `verify` and `export --to pytorch`
// take the file as written.
#include <doctest/doctest.h>

#include <fstream>

#include "ir/schedule_io.h"
#include "test_util.h"

namespace backward_cli_test {

using pstest::run_cli;

TEST_CASE("cli synth: stages run B where the model's fused backward is cheaper; verify and export accept it") {
  const std::string model = pstest::data_path("fused/cheap-fused-b.yaml");
  const std::string out = pstest::temp_path("fused-b-synth.yaml");
  auto r = run_cli("synth " + model + " --evaluations 30 --seed 0 -o " + out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(pstest::contains(r.output, "  backward      B on stages "));
  auto s = ps::read_schedule_yaml(out);
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  int fused = 0;
  for (const auto& st : s->problem.stages) fused += st.split_backward ? 0 : 1;
  CHECK(fused > 0);
  for (const auto& prog : s->programs)
    for (const auto& a : prog)
      if (!ps::at(s->problem.stages, a.stage).split_backward) CHECK(a.type != ps::OpType::W);
  auto v = run_cli("verify " + out);
  CHECK_MESSAGE(v.exit_code == 0, v.output);
  CHECK(pstest::contains(v.output, "VALID under rendezvous semantics"));
  auto e = run_cli("export " + out + " --to pytorch -o " + pstest::temp_path("fused-b-pt") + " --model " + model);
  CHECK_MESSAGE(e.exit_code == 0, e.output);

  // Same input and seed: the same file, byte for byte.
  const std::string again = pstest::temp_path("fused-b-synth-again.yaml");
  auto r2 = run_cli("synth " + model + " --evaluations 30 --seed 0 -o " + again);
  REQUIRE_MESSAGE(r2.exit_code == 0, r2.output);
  CHECK(pstest::read_file(out) == pstest::read_file(again));
}

TEST_CASE("cli synth: a W that grows with its stage (weight_walk_ms) makes stages of several decoders run B") {
  const std::string model = pstest::data_path("fused/walked-w.yaml");
  const std::string out = pstest::temp_path("walked-w-synth.yaml");
  auto r = run_cli("synth " + model + " --partition 'Et*4|t*4|t*4|t*4L' --evaluations 30 --seed 0 -o " + out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(pstest::contains(r.output, "  backward      B on stages "));
  auto s = ps::read_schedule_yaml(out);
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  for (const auto& st : s->problem.stages) CHECK_FALSE(st.split_backward);  // 4 or more decoders each
  auto lowered = run_cli("lower " + model + " --json");
  REQUIRE(lowered.exit_code == 0);
  CHECK(pstest::contains(lowered.output, "\"weight_walk_ms\": 1.5"));

  // A negative walk is refused, located at its value, exit 1.
  std::string text = pstest::read_file(model);
  text.replace(text.find("weight_walk_ms: 1.5"), 19, "weight_walk_ms: -1.");
  const std::string bad = pstest::temp_path("walked-w-bad.yaml");
  std::ofstream(bad) << text;
  auto b = run_cli("lower " + bad);
  CHECK(b.exit_code == 1);
  CHECK_MESSAGE(pstest::contains(b.output, "walked-w-bad.yaml:10:106: layer type 'T': weight_walk_ms must be >= 0"), b.output);
  CHECK(pstest::contains(b.output, "weight_walk_ms"));
}

}  // namespace backward_cli_test
