// `pipesmith synth` with the one-resource Z3 bound (synth/bounds/smt_bound.h), as a user runs it:
// the bound it proves goes into the certificate with bound_method "z3 relaxation", above the bound
// of the steps before it, and the file is the same for the same seed and --rlimit.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <regex>
#include <string>

#include "test_util.h"

using pstest::contains;
using pstest::data_path;
using pstest::read_file;
using pstest::run_cli;
using pstest::source_path;
using pstest::temp_path;

namespace {

const std::string kFixedPlan = " --partition balanced --placement sequential";

// The ms figure of the first progress line that starts with `tag` ("synth: [bound] 59.000 ms: ...").
double progress_ms(const std::string& output, const std::string& tag) {
  const std::regex re("synth: \\[" + tag + "\\] ([0-9.]+) ms");
  std::smatch m;
  REQUIRE(std::regex_search(output, m, re));
  return std::stod(m[1].str());
}

// A quoted figure of the certificate ("bound_proven_ms: \"62.0000\"").
double extra_ms(const std::string& text, const std::string& key) {
  const std::regex re(key + ": \"([0-9.]+)\"");
  std::smatch m;
  REQUIRE(std::regex_search(text, m, re));
  return std::stod(m[1].str());
}

}  // namespace

TEST_CASE("cli synth: the one-resource Z3 bound proves the optimum of a memory-bound plan; verify accepts the label") {
  const std::string out = temp_path("smt-bound.yaml");
  auto r = run_cli(fmt::format("synth {}{} --time-limit 60 --rlimit 4000000 -o {}", data_path("synth/memory-bound.yaml"),
                               kFixedPlan, out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The destructive bound stops at the critical path (59 ms); device 0 alone with its memory sums
  // refutes 61 ms, and the heuristic's 62 ms order is then proven optimal with no whole-plan Z3 check.
  CHECK(progress_ms(r.output, "bound") == doctest::Approx(59));
  CHECK(progress_ms(r.output, "smt-bound") == doctest::Approx(62));
  CHECK(contains(r.output, "[smt-bound] 62.000 ms: z3 relaxation: device 0 alone"));
  CHECK(contains(r.output, "(proven optimal)"));
  const std::string text = read_file(out);
  CHECK(contains(text, "bound_method: \"z3 relaxation\""));
  CHECK(contains(text, "optimal: \"true\""));
  CHECK(extra_ms(text, "bound_proven_ms") == doctest::Approx(62));
  auto v = run_cli("verify " + out);
  INFO(v.output);
  CHECK(v.exit_code == 0);
}

TEST_CASE("cli synth: Gemma-like on 4 GPUs with a tight cap, the relaxation raises the bound; same seed and rlimit, same file") {
  const std::string a = temp_path("smt-gemma-a.yaml"), b = temp_path("smt-gemma-b.yaml");
  const std::string args =
      fmt::format("synth {} --cluster {} --devices 4 --microbatches 8 --memory-limit-gb 40{} --time-limit 120 --rlimit 3000000",
                  source_path("configs/models/gemma-like.yaml"), source_path("configs/clusters/8xh100-80gb.yaml"), kFixedPlan);
  auto ra = run_cli(args + " -o " + a);
  INFO(ra.output);
  REQUIRE(ra.exit_code == 0);
  const double before = progress_ms(ra.output, "bound");
  const double after = progress_ms(ra.output, "smt-bound");
  CHECK(after > before + 10);  // 737.9 -> 793.9 ms
  const std::string text = read_file(a);
  CHECK(extra_ms(text, "bound_proven_ms") >= after - 1e-3);
  // The relaxation is Z3's work: the bound before Z3 is the destructive bound's.
  CHECK(extra_ms(text, "bound_before_z3_ms") == doctest::Approx(before).epsilon(1e-6));
  CHECK(contains(text, "bound_method: \"z3 relaxation\""));
  auto rb = run_cli(args + " --quiet -o " + b);
  INFO(rb.output);
  REQUIRE(rb.exit_code == 0);
  CHECK(read_file(a) == read_file(b));
}

TEST_CASE("cli synth: memory not in whole units — Z3's optimum under the rounded caps is proven again under the exact ones") {
  // Gemma-like's activations are not whole units of 1 KB: the DAG the orders are found on rounds them
  // up, so its UNSATs prove nothing; the last step proves the order optimal on the relaxed rounding.
  const std::string out = temp_path("smt-exact-memory.yaml");
  auto r = run_cli(fmt::format("synth {} --cluster {} --devices 8 --microbatches 8 --memory-limit-gb 23.3{} "
                               "--time-limit 120 --rlimit 20000000 -o {}",
                               source_path("configs/models/gemma-like.yaml"),
                               source_path("configs/clusters/8xh100-80gb.yaml"), kFixedPlan, out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "no better order under the rounded memory caps (not a proof"));
  CHECK(contains(r.output, "[exact-memory proof]"));
  CHECK(contains(r.output, "proof under the exact memory numbers: optimal"));
  CHECK(contains(r.output, "(proven optimal)"));
  const std::string text = read_file(out);
  CHECK(contains(text, "optimal: \"true\""));
  auto v = run_cli("verify " + out);
  INFO(v.output);
  CHECK(v.exit_code == 0);
}
