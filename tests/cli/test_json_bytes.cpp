// Names and paths that are not UTF-8 in the JSON pipesmith writes, through the command line: `lower
// --json`, `bound --json`, `verify --trace` and `export` write valid JSON (exit 0), each such byte as
// `\xNN`, instead of ending in the JSON library's exception.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_util.h"

using pstest::contains;
using pstest::fresh_dir;
using pstest::read_file;
using pstest::run_cli;

// A named namespace (not an anonymous one): the unity build joins this file with others.
namespace json_bytes_test {

// Parses `text` strictly (nlohmann refuses text that is not UTF-8); "" when it is valid JSON.
std::string json_error(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    (void)j;
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

// A model whose name and a layer type's name hold bytes that are not UTF-8 (Latin-1 text, a lone
// continuation byte), in a file whose own name is not UTF-8 either.
std::string latin1_model(const std::string& dir) {
  const std::string path = dir + "/mod\xe8le-\xff.yaml";
  std::ofstream(path) << "schema: 1\nmodel:\n  name: \"mod\xe8le\x80\"\n  layer_types:\n"
                         "    E: {name: \"emb\xe9\", forward_ms: 1, backward_input_ms: 0, backward_weight_ms: 1, "
                         "activation_mb: 5, wgrad_stash_mb: 1, output_mb: 1, params_m: 1}\n"
                         "    T: {name: block, forward_ms: 2, backward_input_ms: 2, backward_weight_ms: 2, "
                         "activation_mb: 10, wgrad_stash_mb: 4, output_mb: 1, params_m: 2}\n"
                         "  layers: ETTT\ncluster: {devices: 2, memory_gb: 0}\npipeline: {microbatches: 4}\n";
  return path;
}

TEST_CASE("cli json bytes: lower --json and bound --json escape bytes that are not UTF-8") {
  const std::string dir = fresh_dir("json-bytes-lower");
  const std::string model = latin1_model(dir);
  for (const char* cmd : {"lower", "bound"}) {
    CAPTURE(cmd);
    auto r = run_cli(fmt::format("{} '{}' --json", cmd, model));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(json_error(r.output) == "");
    CHECK(contains(r.output, "mod\\\\xe8le\\\\x80"));  // the name's bytes, escaped
  }
}

TEST_CASE("cli json bytes: verify --trace and export write valid JSON for such names") {
  const std::string dir = fresh_dir("json-bytes-export");
  const std::string model = latin1_model(dir);
  const std::string schedule = dir + "/s.yaml";
  auto r = run_cli(fmt::format("baseline '{}' --schedule 1f1b -o {}", model, schedule));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string trace = dir + "/trace.json";
  r = run_cli(fmt::format("verify {} --trace {}", schedule, trace));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(json_error(read_file(trace)) == "");
  r = run_cli(fmt::format("verify {} --json", schedule));
  CHECK(r.exit_code == 0);
  CHECK(json_error(r.output) == "");
  const std::string out = dir + "/export";
  r = run_cli(fmt::format("export {} --to pytorch -o {}", schedule, out));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const std::string plan = read_file(out + "/plan.json");
  CHECK(json_error(plan) == "");
  CHECK(contains(plan, "\\\\x"));
}

}  // namespace json_bytes_test
