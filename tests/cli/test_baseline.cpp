// `pipesmith baseline` and `pipesmith bound` through the command line, as a user runs them.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "ir/schedule_io.h"
#include "test_util.h"
#include "report/report.h"
#include "verify/verify.h"

using pstest::contains;
using pstest::read_file;
using pstest::run_cli;
using pstest::source_path;
using pstest::temp_path;

namespace {

// 8 identical layers (F = I = W = 1 ms), free links: closed forms can be read off the summary.
std::string uniform_model_path() {
  std::string path = temp_path("uniform8.yaml");
  std::ofstream(path) << R"(schema: 1
model:
  name: uniform8
  layer_types:
    T: {name: block, forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, activation_mb: 10,
        wgrad_stash_mb: 4, output_mb: 0, params_m: 0}
  layers: "TTTTTTTT"
cluster: {name: ideal, devices: 4, memory_gb: 0, link: {bandwidth_gb_per_s: 1000, latency_us: 0}}
pipeline: {microbatches: 8, bytes_per_param: 18}
)";
  return path;
}

const std::string kLlama = source_path("configs/models/llama2-7b.yaml");

}  // namespace

TEST_CASE("cli baseline: closed forms on a uniform model with free links") {
  const std::string model = uniform_model_path();
  // P = 4, M = 8; each device holds 2 layers: F = I = W = 2 ms per device.
  struct Row {
    const char* schedule;
    const char* iteration;
  };
  const Row rows[] = {
      {"gpipe", "66.000 ms"},             // (M+P-1)(F+B) = 11 * 6
      {"1f1b", "66.000 ms"},              // same
      {"interleaved-1f1b", "57.000 ms"},  // M(F+B) + (P-1)(F+B)/V = 48 + 9
      {"zb-h1", "54.000 ms"},             // M(F+I+W) + (P-1)(F+I-W) = 48 + 6
      {"zb-h2", "54.000 ms"},             // no worse than ZB-H1
      {"zbv", "51.000 ms"},               // no worse than ZB-H1
  };
  for (const Row& r : rows) {
    auto res = run_cli(fmt::format("baseline {} --schedule {}", model, r.schedule));
    INFO(r.schedule, "\n", res.output);
    CHECK(res.exit_code == 0);
    CHECK(contains(res.output, std::string("iteration     ") + r.iteration));
  }
}

TEST_CASE("cli baseline: writes a certified schedule that the checker accepts, plus CSV and SVG") {
  const std::string out = temp_path("llama-zbv.yaml"), csv = temp_path("llama-zbv.csv"),
                    svg = temp_path("llama-zbv.svg");
  auto res = run_cli(
      fmt::format("baseline {} --schedule zbv --devices 4 --microbatches 8 -o {} --csv {} --svg {}",
                  kLlama, out, csv, svg));
  INFO(res.output);
  REQUIRE(res.exit_code == 0);
  for (const char* field :
       {"iteration", "lower bound", "bubble ratio", "peak memory", "valid under rendezvous"})
    CHECK(contains(res.output, field));
  CHECK(contains(res.output, "stages        8 (2 per device, vshape placement)"));

  auto sched = ps::read_schedule_yaml(out);
  REQUIRE(sched.ok());
  CHECK(sched->generator == "pipesmith baseline zbv");
  CHECK(sched->has_comms());
  REQUIRE(sched->certificate.has_value());
  ps::Report rep = ps::verify(*sched);  // recomputes and compares the certificate
  INFO(ps::format_report(rep));
  CHECK(rep.valid);

  auto v = run_cli("verify " + out);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  auto vc = run_cli(fmt::format("verify {} --model {} --microbatches 8", csv, kLlama));
  INFO(vc.output);
  CHECK(vc.exit_code == 0);
  std::string svg_text = read_file(svg);
  CHECK(contains(svg_text, "<svg"));
  CHECK(contains(svg_text, "zbv"));
}

TEST_CASE("cli baseline: output is byte-identical across runs") {
  const std::string a = temp_path("det-a.yaml"), b = temp_path("det-b.yaml");
  for (const std::string& path : {a, b}) {
    auto res = run_cli(fmt::format(
        "baseline {} --schedule zb-h2 --devices 4 --microbatches 8 -o {}", kLlama, path));
    REQUIRE(res.exit_code == 0);
  }
  CHECK(read_file(a) == read_file(b));
  CHECK(!read_file(a).empty());
}

TEST_CASE("cli baseline: Megatron layouts and partition choices") {
  auto res =
      run_cli(fmt::format("baseline {} --schedule interleaved-1f1b --devices 4 --microbatches 8 "
                          "--partition \"Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4L\"",
                          kLlama));
  INFO(res.output);
  CHECK(res.exit_code == 0);
  CHECK(contains(res.output, "0-4 | 5-8 | 9-12 | 13-16 | 17-20 | 21-24 | 25-28 | 29-33"));
  CHECK(contains(res.output, "2 per device, looped placement"));

  auto even =
      run_cli(fmt::format("baseline {} --schedule 1f1b --devices 4 --partition even", kLlama));
  INFO(even.output);
  CHECK(even.exit_code == 0);
  CHECK(contains(even.output, "0-8 | 9-16 | 17-24 | 25-33"));  // E + 8, 8, 8, 8 + L

  auto count = run_cli(
      fmt::format("baseline {} --schedule 1f1b --devices 2 --partition \"Et*15|t*16L\"", kLlama));
  CHECK(count.exit_code == 1);
  CHECK(contains(count.output, "has 31 decoder layer(s) ('t'), model 'llama2-7b' has 32"));

  auto v_mismatch = run_cli(fmt::format(
      "baseline {} --schedule 1f1b --devices 2 --partition \"Et*8|t*8|t*8|t*8L\"", kLlama));
  CHECK(v_mismatch.exit_code == 1);
  CHECK(contains(v_mismatch.output, "2 per device on P = 2, but 1f1b runs 1 per device"));

  auto syntax = run_cli(
      fmt::format("baseline {} --schedule 1f1b --devices 2 --partition \"Et*16|(t*16L\"", kLlama));
  CHECK(syntax.exit_code == 1);
  CHECK(contains(syntax.output, "column 7: '(' is never closed"));

  auto unknown = run_cli(fmt::format("baseline {} --schedule 1f1b --partition greedy", kLlama));
  CHECK(unknown.exit_code == 1);
  CHECK(contains(unknown.output, "unknown partition 'greedy'"));

  // A vocabulary-sharded head is one Megatron layer: Gemma-like's 16 shards (layers 53-68) stay on
  // the last stage, and 32 stages of its 28 Megatron layers are refused, not made by spreading
  // them.
  const std::string gemma = source_path("configs/models/gemma-like.yaml");
  auto sharded =
      run_cli(fmt::format("baseline {} --schedule 1f1b --devices 8 --partition even", gemma));
  INFO(sharded.output);
  CHECK(sharded.exit_code == 0);
  CHECK(contains(sharded.output, "| 47-68\n"));
  auto spread = run_cli(fmt::format(
      "baseline {} --schedule interleaved-1f1b --devices 16 --microbatches 32 --partition even",
      gemma));
  CHECK(spread.exit_code == 1);
  CHECK(contains(
      spread.output,
      "32 stages but the model has 28 layers counting joined sublayers as one (69 without)"));
}

TEST_CASE("cli baseline: refusals and exit codes") {
  auto unknown = run_cli(fmt::format("baseline {} --schedule zb-h3", kLlama));
  CHECK(unknown.exit_code == 1);
  CHECK(contains(unknown.output, "unknown schedule 'zb-h3'"));

  auto dual =
      run_cli(fmt::format("baseline {} --schedule dualpipev --devices 4 --microbatches 7", kLlama));
  CHECK(dual.exit_code == 1);
  CHECK(contains(dual.output, "dualpipev needs at least 2P = 8 microbatches"));

  auto inter = run_cli(
      fmt::format("baseline {} --schedule interleaved-1f1b --devices 4 --microbatches 6", kLlama));
  CHECK(inter.exit_code == 1);
  CHECK(contains(inter.output, "multiple of P = 4"));

  auto v3 = run_cli(fmt::format("baseline {} --schedule zbv --stages-per-device 3", kLlama));
  CHECK(v3.exit_code == 1);
  CHECK(contains(v3.output, "exactly 2 stages per device"));

  auto memory = run_cli(fmt::format("baseline {} --schedule gpipe --memory-limit-gb 30", kLlama));
  CHECK(memory.exit_code == 2);
  CHECK(contains(memory.output, "does not fit the memory limit"));
  CHECK(contains(memory.output, "above the limit of 30.000 GB"));

  auto devices = run_cli(fmt::format("baseline {} --schedule 1f1b --devices 0", kLlama));
  CHECK(devices.exit_code == 1);
  CHECK(contains(devices.output, "--devices: must be an integer in [1, 100000], got '0'"));

  auto too_many = run_cli(fmt::format("baseline {} --schedule zbv --devices 20", kLlama));
  CHECK(too_many.exit_code == 1);
  CHECK(contains(too_many.output, "has only 34 layers"));

  auto missing = run_cli("baseline /nonexistent/model.yaml --schedule 1f1b");
  CHECK(missing.exit_code == 1);

  auto no_schedule = run_cli("baseline " + kLlama);
  CHECK(no_schedule.exit_code == 1);
}

TEST_CASE("cli bound: terms, JSON, a plan's bound, memory infeasibility") {
  auto text = run_cli(fmt::format("bound {} --devices 8 --microbatches 16", kLlama));
  INFO(text.output);
  CHECK(text.exit_code == 0);
  CHECK(contains(text.output, "=> bound"));
  CHECK(contains(text.output, "total work / P"));
  CHECK(contains(text.output, "model states 121.29 GB"));

  auto js = run_cli(fmt::format(
      "bound {} --devices 4 --microbatches 8 --partition even --placement sequential --json",
      kLlama));
  INFO(js.output);
  REQUIRE(js.exit_code == 0);
  auto j = nlohmann::json::parse(js.output);
  double bound = j["bound_ms"].get<double>();
  for (const auto& [name, v] : j["terms_ms"].items()) CHECK(v.get<double>() <= bound + 1e-9);
  CHECK(j["memory_feasible"].get<bool>());
  REQUIRE(j.contains("plan"));
  CHECK(j["plan"]["placement"] == nlohmann::json::array({0, 1, 2, 3}));
  CHECK(j["plan"]["bound_ms"].get<double>() > 0);

  // 34 layers on 16 devices: some device carries two decoder layers and the head, more than the
  // total work spread evenly; the bound says so and names the term.
  auto packed = run_cli(fmt::format("bound {} --devices 16 --microbatches 64 --json", kLlama));
  INFO(packed.output);
  REQUIRE(packed.exit_code == 0);
  auto pj = nlohmann::json::parse(packed.output);
  // The release times with whole layers (global_bound.h) add 0.02 ms to the layer packing: the
  // busiest device's layers wait for the embedding's forward.
  CHECK(pj["binding"] == "release_packing");
  CHECK(pj["bound_ms"].get<double>() >= pj["terms_ms"]["layer_packing"].get<double>());
  CHECK(pj["bound_ms"].get<double>() <= pj["terms_ms"]["layer_packing"].get<double>() + 0.03);
  CHECK(pj["terms_ms"]["layer_packing"].get<double>() >
        1.2 * pj["terms_ms"]["total_work"].get<double>());

  // The bound never exceeds what a schedule achieves.
  auto sched = run_cli(fmt::format("baseline {} --schedule zbv --devices 4 --microbatches 8 -o {}",
                                   kLlama, temp_path("bound-zbv.yaml")));
  REQUIRE(sched.exit_code == 0);
  auto written = ps::read_schedule_yaml(temp_path("bound-zbv.yaml"));
  REQUIRE(written.ok());
  CHECK(written->certificate->makespan_ms >= bound);

  auto infeasible = run_cli(fmt::format("bound {} --devices 1 --memory-limit-gb 80", kLlama));
  CHECK(infeasible.exit_code == 2);
  CHECK(contains(infeasible.output, "at least 2 devices, only 1 given"));

  auto layer_too_big = run_cli(fmt::format("bound {} --devices 8 --memory-limit-gb 1", kLlama));
  CHECK(layer_too_big.exit_code == 2);
  CHECK(contains(layer_too_big.output, "alone needs"));

  auto bad_placement =
      run_cli(fmt::format("bound {} --devices 4 --placement vshape --stages-per-device 3", kLlama));
  CHECK(bad_placement.exit_code == 1);
  CHECK(contains(bad_placement.output, "placement vshape holds exactly 2 stages per device, got stages_per_device 3"));
  // bound reads the plan words as synth does (synth/plan/plan_spec.h): the same refusal there.
  auto synth_placement = run_cli(
      fmt::format("synth {} --devices 4 --placement vshape --stages-per-device 3 --evaluations 1", kLlama));
  CHECK(synth_placement.exit_code == 1);
  CHECK(contains(synth_placement.output, "placement vshape holds exactly 2 stages per device, got stages_per_device 3"));
}
