// `pipesmith synth` and `pipesmith bound` on profiled per-layer costs (tests/data/synth/profiles: free
// links, no memory cap), as a user runs them: the schedule is written and verifies, and its iteration
// is at least every bound printed for it — the plan's, and the global one, which synth and bound
// must give as the same number.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "ir/schedule_io.h"
#include "test_util.h"

using pstest::contains;
using pstest::data_path;
using pstest::run_cli;
using pstest::temp_path;

namespace {

// A figure of the certificate's extras, as written.
double extra_ms(const ps::Certificate& c, const std::string& key) {
  const auto it = c.extra.find(key);
  REQUIRE_MESSAGE(it != c.extra.end(), key);
  return std::stod(it->second);
}

// How far a figure written with four decimals (the extras' bounds) may lie above the value it stands for.
constexpr double kFourDecimals = 0.5e-4;

// `pipesmith synth` on a small profile with a fixed budget, what it wrote verified (synth_and_verify); the
// summary and the written schedule, its certificate present.
struct Synthesized {
  std::string output;
  ps::Schedule schedule;
};
Synthesized synth_small_verified(const std::string& name) {
  const std::string model = data_path(fmt::format("synth/profiles/{}.yaml", name));
  const std::string out = temp_path(fmt::format("synth-profile-{}.yaml", name));
  const pstest::CliResult r =
      pstest::synth_and_verify(fmt::format("{} --evaluations 20 --rlimit 100000 --threads 1 --search-threads 1", model), out);
  ps::Result<ps::Schedule> s = ps::read_schedule_yaml(out);
  REQUIRE(s.ok());
  REQUIRE(s->certificate.has_value());
  return {r.output, std::move(*s)};
}

}  // namespace

TEST_CASE("cli synth profiles: iteration >= the plan bound and the global bound >= 0, synth's global bound is bound's, "
          "the file verifies") {
  for (const char* name : {"llama-like", "hybrid-mix", "fused-backward", "random-12"}) {
    CAPTURE(name);
    const std::string model = data_path(fmt::format("synth/profiles/{}.yaml", name));
    const std::string out = temp_path(fmt::format("synth-profile-{}.yaml", name));
    // A fixed budget (candidates, Z3 units): the same run on any machine, a few seconds in all.
    auto r = run_cli(fmt::format("synth {} --evaluations 200 --rlimit 500000 --threads 1 --search-threads 1 "
                                 "--time-limit 30 -o {}",
                                 model, out));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.output, "synth: ["));  // progress lines
    CHECK(contains(r.output, "valid under rendezvous semantics"));
    CHECK_FALSE(contains(r.output, "+-"));  // a figure below another is printed with its own sign

    auto v = run_cli("verify " + out);
    INFO(v.output);
    CHECK(v.exit_code == 0);

    ps::Result<ps::Schedule> s = ps::read_schedule_yaml(out);
    REQUIRE(s.ok());
    REQUIRE(s->certificate.has_value());
    const ps::Certificate& c = *s->certificate;
    const double iteration = c.makespan_ms;
    const double plan_bound = extra_ms(c, "bound_ms");
    const double global = extra_ms(c, "global_lower_bound_ms");
    CHECK(iteration > 0);
    CHECK(global >= 0);
    CHECK(global <= iteration * (1 + 1e-9));
    CHECK(plan_bound <= iteration * (1 + 1e-9) + kFourDecimals);
    CHECK(c.lower_bound_ms <= iteration * (1 + 1e-9));
    // The certificate's gap is what its numbers say (both written to 6 and 4 decimals).
    CHECK(std::fabs(extra_ms(c, "gap") - std::max(0.0, (iteration - plan_bound) / plan_bound)) <= 2e-6);

    // The global bound synth prints and writes is the one `pipesmith bound` gives.
    auto b = run_cli(fmt::format("bound {} --json", model));
    INFO(b.output);
    REQUIRE(b.exit_code == 0);
    const double bound_cli = nlohmann::json::parse(b.output)["bound_ms"].get<double>();
    CHECK(bound_cli == doctest::Approx(global).epsilon(1e-12));
    CHECK(bound_cli <= iteration * (1 + 1e-9));
  }
}

TEST_CASE("cli synth profiles: fewer layers than devices: synth and bound refuse it in the same words") {
  const std::string model = data_path("synth/profiles/random-12.yaml");
  const std::string said = "model 'random-12' has 12 layers, fewer than the 16 devices: every device needs at least one stage";
  pstest::check_refused("synth " + model + " --devices 16 --evaluations 10 -o " + temp_path("few_layers.yaml"), said);
  pstest::check_refused("bound " + model + " --devices 16", said);
  pstest::check_refused("bound " + model + " --devices 16 --json", said);
  const pstest::CliResult ok = run_cli("bound " + model + " --devices 12");  // one layer a device: a bound
  CHECK(ok.exit_code == 0);
}

TEST_CASE("cli synth profiles: ops of 1e-7 ms: the schedule's certificate verifies") {
  // Every op lies within 1e-6 of a whole 1 ms unit (of 0); timed as zeros, the order was "proven"
  // optimal (solver_status "heuristic meets bound") at a makespan the checker finds above it.
  const Synthesized r = synth_small_verified("nano-costs");
  const ps::Certificate& c = *r.schedule.certificate;
  CHECK(c.makespan_ms == doctest::Approx(3e-7).epsilon(1e-6));
  CHECK(extra_ms(c, "global_lower_bound_ms") <= c.makespan_ms * (1 + 1e-9));
}

TEST_CASE("cli synth profiles: ops of no cost: no gap is stated, the progress has a best, the file verifies") {
  // The makespan and the bounds are float noise (the free links' transfers, 1e-30 ms each): a gap
  // taken as their quotient read "100 %" beside "proven optimal", and the search's progress said no
  // candidate fit the memory (its best was 0 ms).
  const Synthesized r = synth_small_verified("zero-costs");
  INFO(r.output);
  CHECK(contains(r.output, "(proven optimal)"));
  CHECK(contains(r.output, "(gap 0.00%)"));
  CHECK(contains(r.output, "any partition and placement; gap 0.00%"));
  CHECK_FALSE(contains(r.output, "none fits the memory"));
  CHECK(contains(r.output, "best 0.000 ms, bound 0.000 ms, gap 0.00%"));
  CHECK(extra_ms(*r.schedule.certificate, "gap") == 0);
}
