// Every file pipesmith writes verifies, whatever the scale of the costs: `synth`, `baseline` and
// `export` on models whose layers take from microseconds to hours, and `verify` on what they wrote
// (the schedules with their certificates, whose claims are held at the precision they were written
// with, and the exported CSVs). Through the command line, as a user runs it.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"

using pstest::contains;
using pstest::fresh_dir;
using pstest::read_file;
using pstest::run_cli;

// A named namespace (not an anonymous one): the unity build joins this file with others.
namespace certificate_scales_test {

// Six layers of three uneven kinds (a heavy head), every time `scale` ms times a small factor, a
// transfer of 1 MB over a link of 200 GB/s with 5 us latency (fixed: the ratio to compute changes).
std::string scaled_model(const std::string& dir, double scale) {
  const std::string path = dir + fmt::format("/m-{:g}.yaml", scale);
  auto t = [&](double x) { return fmt::format("{:.17g}", x * scale); };
  std::ofstream(path) << "schema: 1\nmodel:\n  name: scaled\n  layer_types:\n"
                      << fmt::format("    E: {{forward_ms: {}, backward_input_ms: {}, backward_weight_ms: {}, "
                                     "activation_mb: 5, wgrad_stash_mb: 1, output_mb: 1, params_m: 1}}\n",
                                     t(0.3), t(0), t(0.1))
                      << fmt::format("    T: {{forward_ms: {}, backward_input_ms: {}, backward_weight_ms: {}, "
                                     "activation_mb: 10, wgrad_stash_mb: 4, output_mb: 1, params_m: 2}}\n",
                                     t(1.0), t(1.1), t(0.9))
                      << fmt::format("    L: {{forward_ms: {}, backward_input_ms: {}, backward_weight_ms: {}, "
                                     "activation_mb: 20, wgrad_stash_mb: 2, output_mb: 0, params_m: 3}}\n",
                                     t(2.3), t(2.1), t(1.7))
                      << "  layers: ETTTTL\ncluster: {devices: 2, memory_gb: 0}\npipeline: {microbatches: 4}\n";
  return path;
}

// synth (layer cuts), a baseline and the export of each: every command exits 0, and verify accepts
// every schedule file written.
void check_all_verify(const std::string& dir, const std::string& model, const std::string& tag) {
  const std::string synth = fmt::format("{}/{}-synth.yaml", dir, tag);
  INFO(tag);
  pstest::synth_and_verify(
      fmt::format("{} --cuts layers --devices 2 --microbatches 4 --evaluations 20 --time-limit 20 --quiet", model), synth);
  for (const char* kind : {"1f1b", "zb-h1"}) {
    const std::string base = fmt::format("{}/{}-{}.yaml", dir, tag, kind);
    auto b = run_cli(fmt::format("baseline {} --schedule {} --devices 2 --microbatches 4 -o {}", model, kind, base));
    INFO(kind, "\n", b.output);
    REQUIRE(b.exit_code == 0);
    auto vb = run_cli("verify " + base);
    INFO(vb.output);
    CHECK(vb.exit_code == 0);
    CHECK_FALSE(contains(vb.output, "certificate."));
  }
  const std::string out = fmt::format("{}/{}-export", dir, tag);
  auto e = run_cli(fmt::format("export {} --to pytorch -o {}", synth, out));
  INFO(e.output);
  CHECK(e.exit_code == 0);
  CHECK(std::filesystem::exists(out + "/plan.json"));
  // The exported CSVs verify too (costed by the model; PyTorch's order and the certified one).
  for (const char* csv : {"compute_only.csv", "compute_comms.csv"}) {
    auto vc = run_cli(fmt::format("verify {}/{} --model {} --microbatches 4", out, csv, model));
    INFO(csv, "\n", vc.output);
    CHECK(vc.exit_code == 0);
    CHECK(contains(vc.output, "VALID"));
  }
}

TEST_CASE("cli certificate: what synth, baseline and export write verifies, for layers from microseconds to hours") {
  const std::string dir = fresh_dir("cert-scales");
  // 1 us, 1 ms, 1 s and an hour per unit of the layer costs.
  for (double scale : {1e-3, 1.0, 1e3, 3.6e6}) check_all_verify(dir, scaled_model(dir, scale), fmt::format("{:g}", scale));
}

TEST_CASE("cli certificate: a hidden-64 Llama imported from its config verifies (an iteration well under 50 ms)") {
  // The bound_ms claim is written with 4 decimals; the gap it implies is held at that precision.
  const std::string dir = fresh_dir("cert-tiny");
  std::string cfg = read_file(pstest::data_path("hf_configs/llama-2-7b-hf.json"));
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"\"hidden_size\": 4096", "\"hidden_size\": 64"},
                                                        {"\"intermediate_size\": 11008", "\"intermediate_size\": 172"},
                                                        {"\"num_attention_heads\": 32", "\"num_attention_heads\": 4"},
                                                        {"\"num_key_value_heads\": 32", "\"num_key_value_heads\": 4"},
                                                        {"\"num_hidden_layers\": 32", "\"num_hidden_layers\": 4"}}) {
    const size_t at = cfg.find(from);
    REQUIRE(at != std::string::npos);
    cfg.replace(at, from.size(), to);
  }
  std::ofstream(dir + "/tiny-llama.json") << cfg;
  auto r = run_cli(fmt::format("import hf {0}/tiny-llama.json -o {0}/tiny-llama.yaml", dir));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  check_all_verify(dir, dir + "/tiny-llama.yaml", "tiny-llama");
}

}  // namespace certificate_scales_test
