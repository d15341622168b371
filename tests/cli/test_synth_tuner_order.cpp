// `pipesmith synth` writing the search's own order (it simulates faster than synthesize()'s result):
// the certificate still carries synthesize()'s solver block, and the file verifies.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "ir/schedule_io.h"
#include "test_util.h"

using pstest::contains;
using pstest::run_cli;
using pstest::source_path;
using pstest::temp_path;

TEST_CASE("synth: the tuner's order keeps synthesize()'s solver block") {
  // Gemma-like at P = 8, M = 8 with an 80-candidate search and no Z3 budget: the search's order (a
  // looped plan with its own policy) simulates faster than synthesize()'s heuristic on that plan.
  const std::string out = temp_path("synth-tuner-order.yaml");
  auto r = run_cli("synth " + source_path("configs/models/gemma-like.yaml") + " --cluster " +
                   source_path("configs/clusters/8xh100-80gb.yaml") +
                   " --devices 8 --microbatches 8 --evaluations 80 --rlimit 1 --time-limit 0.5 --search-threads 1 "
                   "--quiet -o " +
                   out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(contains(r.output, "proven optimal"));
  auto s = ps::read_schedule_yaml(out);
  REQUIRE(s.ok());
  REQUIRE(s->certificate);
  const auto& extra = s->certificate->extra;
  REQUIRE(extra.count("schedule_method"));
  CHECK(extra.at("schedule_method") == "tuner");
  CHECK(contains(extra.at("output"), "tuner order"));
  for (const char* key : {"z3_checks", "before_z3_ms", "z3_improved_ms", "bound_before_z3_ms", "bound_proven_ms",
                          "bound_ms", "bound_method", "solver_status", "heuristic_ms", "seeded_by"}) {
    INFO(key);
    CHECK(extra.count(key) == 1);
  }
  CHECK(extra.count("optimal_up_to_ms") == 0);
  // The written order is the faster one: below the best order synthesize() had before Z3.
  REQUIRE(extra.count("before_z3_ms"));
  CHECK(s->certificate->makespan_ms < std::strtod(extra.at("before_z3_ms").c_str(), nullptr));
  auto v = run_cli("verify " + out);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(contains(v.output, "VALID"));
}
