// `pipesmith lower` through the command line, as a user runs it: every model config with and
// without every cluster config, text and JSON, overrides, --help, errors and determinism.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/model.h"
#include "test_util.h"

namespace {

const std::vector<std::string> kModels = {"llama2-7b",       "gemma-like",   "deepseek-like",
                                          "nemotron-h-like", "gpt-oss-like", "minimax-like"};
const std::vector<std::string> kClusters = {"", "8xh100-80gb", "8xh200", "2x8-h100"};

std::string model_path(const std::string& name) {
  return pstest::source_path("configs/models/" + name + ".yaml");
}
std::string cluster_path(const std::string& name) {
  return pstest::source_path("configs/clusters/" + name + ".yaml");
}

}  // namespace

TEST_CASE("cli lower: every model config, alone and with every cluster, in text and JSON") {
  // The configs directory holds exactly the models listed here (a new one must be added to the
  // list).
  size_t on_disk = 0;
  for (const auto& e : std::filesystem::directory_iterator(pstest::source_path("configs/models"))) {
    if (e.path().extension() == ".yaml") ++on_disk;
  }
  CHECK(on_disk == kModels.size());
  for (const std::string& m : kModels) {
    ps::Result<ps::Spec> spec = ps::load_spec(model_path(m));
    REQUIRE_MESSAGE(spec.ok(), spec.status().str());
    const int layers = static_cast<int>(spec->model.layers.size());
    for (const std::string& c : kClusters) {
      CAPTURE(m);
      CAPTURE(c);
      std::string args =
          "lower " + model_path(m) + (c.empty() ? "" : " --cluster " + cluster_path(c));
      pstest::CliResult text = pstest::run_cli(args);
      REQUIRE_MESSAGE(text.exit_code == 0, text.output);
      CHECK(text.output.find("model     " + spec->model.name) == 0);
      CHECK(text.output.find("Totals per type") != std::string::npos);
      CHECK(text.output.find("model-state memory") != std::string::npos);

      pstest::CliResult js = pstest::run_cli(args + " --json");
      REQUIRE_MESSAGE(js.exit_code == 0, js.output);
      nlohmann::json j = nlohmann::json::parse(js.output);
      CHECK(j["name"] == spec->model.name);
      CHECK(j["layers"] == layers);
      CHECK(j["layer_list"].size() == static_cast<size_t>(layers));
      CHECK(j["layer_string"].get<std::string>().size() == static_cast<size_t>(layers));
      CHECK(j["is_chain"] == (m != "deepseek-like"));
      int count = 0;
      double fwd = 0;
      for (const auto& t : j["layer_types"]) {
        count += t["count"].get<int>();
        fwd += t["count"].get<int>() * t["forward_ms"].get<double>();
        CHECK(t["wgrad_stash_mb"].get<double>() <= t["activation_mb"].get<double>());
      }
      CHECK(count == layers);
      CHECK(j["totals"]["forward_ms"].get<double>() == doctest::Approx(fwd));
      CHECK(j["model_state_gb"].get<double>() ==
            doctest::Approx(j["totals"]["params_m"].get<double>() * 18 / 1000));
      if (c == "2x8-h100") {
        CHECK(j["cluster"]["devices"] == 16);
        CHECK(j["cluster"]["devices_per_node"] == 8);
      } else if (c == "8xh200") {
        CHECK(j["cluster"]["memory_gb"] == 141);
      } else {
        CHECK(j["cluster"]["devices"] == 8);
      }
    }
  }
}

TEST_CASE("cli lower: the DAG model's extra inputs appear in text and JSON") {
  pstest::CliResult r = pstest::run_cli("lower " + model_path("deepseek-like"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("graph     DAG, 63 edges; layers with inputs besides the previous layer: "
                      "layer 57 <- 0, 54, 56") != std::string::npos);
  pstest::CliResult js = pstest::run_cli("lower " + model_path("deepseek-like") + " --json");
  REQUIRE(js.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(js.output);
  CHECK(j["layer_list"][57]["inputs"] == nlohmann::json({0, 54, 56}));
  CHECK(j["edges"] == 63);
}

TEST_CASE("cli lower: sublayers that join the next layer are named in text and JSON") {
  pstest::CliResult r = pstest::run_cli("lower " + model_path("gemma-like"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("sublayers: 'G', 'S' join the next layer") != std::string::npos);
  pstest::CliResult js = pstest::run_cli("lower " + model_path("gemma-like") + " --json");
  REQUIRE(js.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(js.output);
  int joined = 0;
  for (const auto& t : j["layer_types"]) joined += t["joins_next"].get<bool>() ? 1 : 0;
  CHECK(joined == 2);
}

TEST_CASE("cli lower: flags override the files") {
  pstest::CliResult r = pstest::run_cli(
      "lower " + model_path("llama2-7b") + " --cluster " + cluster_path("8xh100-80gb") +
      " --devices 4 --microbatches 12 --memory-limit-gb 40 --json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  nlohmann::json j = nlohmann::json::parse(r.output);
  CHECK(j["cluster"]["devices"] == 4);
  CHECK(j["cluster"]["memory_gb"] == 40);
  CHECK(j["pipeline"]["microbatches"] == 12);
  CHECK(j["cluster"]["name"] == "8xH100-80GB");
}

TEST_CASE(
    "cli lower: a cluster's hardware re-derives costs (H200's faster HBM speeds the embedding)") {
  auto fwd_of = [](const std::string& args, const char* sym) {
    pstest::CliResult r = pstest::run_cli(args + " --json");
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    nlohmann::json j = nlohmann::json::parse(r.output);
    for (const auto& t : j["layer_types"]) {
      if (t["symbol"] == sym) return t["forward_ms"].get<double>();
    }
    FAIL("no such type");
    return 0.0;
  };
  std::string base = "lower " + model_path("llama2-7b");
  double e100 = fwd_of(base + " --cluster " + cluster_path("8xh100-80gb"), "E");
  double e200 = fwd_of(base + " --cluster " + cluster_path("8xh200"), "E");
  CHECK(e200 == doctest::Approx(e100 * 3350 / 4800));
  double t100 = fwd_of(base + " --cluster " + cluster_path("8xh100-80gb"), "T");
  double t200 = fwd_of(base + " --cluster " + cluster_path("8xh200"), "T");
  CHECK(t200 == doctest::Approx(t100));  // compute-bound: same peak TFLOP/s
}

TEST_CASE("cli lower: --help, usage errors and bad input exit as documented") {
  pstest::CliResult help = pstest::run_cli("lower --help");
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("--cluster") != std::string::npos);
  CHECK(help.output.find("--memory-limit-gb") != std::string::npos);
  CHECK(help.output.find("--json") != std::string::npos);
  CHECK(help.output.find("dense_block") != std::string::npos);

  pstest::CliResult none = pstest::run_cli("lower");
  CHECK(none.exit_code == 1);
  pstest::CliResult notint =
      pstest::run_cli("lower " + model_path("llama2-7b") + " --devices many");
  CHECK(notint.exit_code == 1);
  pstest::CliResult zero = pstest::run_cli("lower " + model_path("llama2-7b") + " --devices 0");
  CHECK(zero.exit_code == 1);
  CHECK(zero.output.find("--devices: must be an integer in [1, 100000], got '0'") != std::string::npos);
  pstest::CliResult nomem =
      pstest::run_cli("lower " + model_path("llama2-7b") + " --memory-limit-gb -1");
  CHECK(nomem.exit_code == 1);
  pstest::CliResult missing = pstest::run_cli("lower /nonexistent/model.yaml");
  CHECK(missing.exit_code == 1);
  CHECK(missing.output.find("pipesmith: error: /nonexistent/model.yaml: cannot read model file") !=
        std::string::npos);
  pstest::CliResult badcluster = pstest::run_cli("lower " + model_path("llama2-7b") +
                                                 " --cluster " + model_path("gemma-like"));
  CHECK(badcluster.exit_code == 1);
  CHECK(badcluster.output.find("gemma-like.yaml:") != std::string::npos);
  CHECK(badcluster.output.find("cluster file: unknown key 'model'") != std::string::npos);
}

TEST_CASE("cli lower: output is deterministic") {
  for (const char* flags : {"", " --json"}) {
    std::string args =
        "lower " + model_path("nemotron-h-like") + " --cluster " + cluster_path("2x8-h100") + flags;
    pstest::CliResult a = pstest::run_cli(args);
    pstest::CliResult b = pstest::run_cli(args);
    REQUIRE(a.exit_code == 0);
    CHECK(a.output == b.output);
  }
}
