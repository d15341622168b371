// `pipesmith profile`: the written model YAML is valid input (load_spec / pipesmith lower), carries
// positive measured times and the blocks' exact sizes, and closes the loop profile → baseline → run
// (with --widths params the run uses exactly the profiled blocks).
#include <doctest/doctest.h>

#include <cmath>

#include "ir/model.h"
#include "runtime/exec_model.h"
#include "test_util.h"

using pstest::run_cli;

TEST_CASE("pipesmith profile → baseline → run --widths params") {
  const std::string model = pstest::source_path("configs/models/nemotron-h-like.yaml");
  const std::string out = pstest::temp_path("profiled.yaml");
  // An output it could not write is refused before anything is measured.
  auto bad = run_cli("profile " + model + " --backend host --scale 0.125 --tokens 8 -o /nonexistent/profiled.yaml");
  CHECK(bad.exit_code == 1);
  CHECK_MESSAGE(bad.output.find("cannot write '/nonexistent/profiled.yaml' (-o): directory '/nonexistent' does not "
                                "exist") != std::string::npos,
                bad.output);
  auto r = run_cli("profile " + model + " --backend host --scale 0.125 --tokens 8 --repeats 3 -o " + out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("wrote " + out) != std::string::npos);
  auto spec = ps::load_spec(out);
  REQUIRE_MESSAGE(spec.ok(), spec.status().str());
  auto orig = ps::load_spec(model);
  REQUIRE(orig.ok());
  CHECK(spec->model.name == "nemotron-h-like-profiled");
  CHECK(spec->model.layers.size() == orig->model.layers.size());
  CHECK(spec->model.types.size() == orig->model.types.size());
  for (const auto& [symbol, t] : spec->model.types) {
    const char sym = symbol;  // (clang 14 cannot capture a structured binding)
    CAPTURE(sym);
    CHECK(t.forward_ms > 0);
    CHECK(t.backward_weight_ms > 0);
    CHECK(t.params_m > 0);
    CHECK(t.activation_mb >= t.wgrad_stash_mb);
    CHECK(t.wgrad_stash_mb > 0);
  }
  // d_model 8 at scale 0.125: an MLP block of hidden h has 2·8·h parameters.
  const ps::LayerType& mlp = spec->model.types.at('-');
  const double hidden = mlp.params_m * 1e6 / 16.0;
  CHECK(hidden == doctest::Approx(std::round(hidden)));
  CHECK(spec->model.types.at('L').output_mb == 0.0);
  // Its blocks, rebuilt with --widths params, are the profiled ones.
  ps::rt::ExecModelOptions o;
  o.scale = 0.125;
  o.tokens = 8;
  o.widths_from_params = true;
  ps::Problem whole;
  whole.devices = 1;
  whole.microbatches = 1;
  ps::StageSpec st;
  st.first_layer = 0;
  st.last_layer = static_cast<int>(spec->model.layers.size()) - 1;
  whole.stages.push_back(st);
  auto em = ps::rt::build_exec_model(whole, &spec->model, o);
  REQUIRE(em.ok());
  o.widths_from_params = false;
  auto em_cost = ps::rt::build_exec_model(whole, &orig->model, o);
  REQUIRE(em_cost.ok());
  REQUIRE(em->stages[0].size() == em_cost->stages[0].size());
  for (size_t b = 0; b < em->stages[0].size(); ++b) {
    CHECK(em->stages[0][b].hidden == em_cost->stages[0][b].hidden);
    CHECK(em->stages[0][b].classes == em_cost->stages[0][b].classes);
  }
  r = run_cli("lower " + out);
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  const std::string sched = pstest::temp_path("profiled-zbv.yaml");
  r = run_cli("baseline " + out + " --schedule zbv --devices 2 --microbatches 4 -o " + sched);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_cli("run " + sched + " --model " + out + " --widths params --scale 0.125 --tokens 8 --check-gradients");
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("OK (within 1e-05 relative)") != std::string::npos);
  // --widths params on a model that was not profiled at this scale is refused with the reason.
  r = run_cli("run " + sched + " --model " + model + " --widths params --scale 0.125");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("widths from params are for models written by the profiler (runtime/profile.h) at the same scale") != std::string::npos);
  r = run_cli("profile " + model + " --backend gpu");
  CHECK(r.exit_code == 1);
  std::remove(out.c_str());
  std::remove(sched.c_str());
}
