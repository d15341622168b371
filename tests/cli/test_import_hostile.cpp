// `pipesmith import hf` / `import megatron` on hostile input, through the command line: no input may
// reach an assertion (MTP modules and vocabulary shards that need more layer types than a model YAML
// has symbols), the JSON is strict but for the documented Infinity / -Infinity / NaN, a value of the
// wrong type is refused at the value, and a field that changes the model's size without the analytic
// model describing it is refused by name, not skipped.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <string>

#include "test_util.h"

using pstest::contains;
using pstest::data_path;
using pstest::read_file;
using pstest::run_cli;

// A named namespace (not an anonymous one): the unity build joins this file with others.
namespace import_hostile_test {

std::string real_config(const std::string& name) { return read_file(data_path("hf_configs/" + name + ".json")); }

struct Dir {
  std::string path;
  explicit Dir(const std::string& name) : path(pstest::fresh_dir(name)) {}
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name) << text;
    return path + "/" + name;
  }
};

// `text` with the first match of `pattern` replaced (the match must exist).
std::string edit(const std::string& text, const std::string& pattern, const std::string& with) {
  const std::regex re(pattern);
  REQUIRE(std::regex_search(text, re));
  return std::regex_replace(text, re, with, std::regex_constants::format_first_only);
}

TEST_CASE("cli import hostile: MTP modules and vocabulary shards past the type symbols are a located error") {
  const Dir dir("import-mtp");
  const std::string ds = real_config("deepseek-v3");
  // Each sharded MTP head is a layer type of its own: 40 of them do not fit the one-character symbols.
  const std::string many = dir.write("mtp40.json", edit(ds, "\"num_nextn_predict_layers\": 1",
                                                        "\"num_nextn_predict_layers\": 40"));
  auto r = run_cli(fmt::format("import hf {} --vocab-shards 2 -o {}/out.yaml", many, dir.path));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "mtp40.json:33:31: num_nextn_predict_layers is 40: with the head in 2 vocabulary shards "
                           "each MTP module's head is a layer type of its own"));
  CHECK(!contains(r.output, "internal"));
  CHECK(!std::ifstream(dir.path + "/out.yaml"));
  // With sublayers too (the MTP block's sublayers take symbols of their own).
  r = run_cli(fmt::format("import hf {} --vocab-shards 3 --sublayers", many));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "mtp40.json:33:31: num_nextn_predict_layers is 40"));
  // Unsharded, the heads share one type: 40 MTP modules import.
  r = run_cli(fmt::format("import hf {} -o {}/ok.yaml", many, dir.path));
  CHECK(r.exit_code == 0);
  CHECK(contains(read_file(dir.path + "/ok.yaml"), "40 MTP module(s)"));
  // As many as fit do import, sharded: the limit the message names is the real one.
  auto limit = run_cli(fmt::format("import hf {} --vocab-shards 2", many));
  std::smatch m;
  const std::string out = limit.output;
  REQUIRE(std::regex_search(out, m, std::regex("import at most (\\d+) MTP modules")));
  const std::string fit = m[1];
  const std::string fitting = dir.write("fit.json", edit(ds, "\"num_nextn_predict_layers\": 1",
                                                         "\"num_nextn_predict_layers\": " + fit));
  r = run_cli(fmt::format("import hf {} --vocab-shards 2 -o {}/fit.yaml", fitting, dir.path));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const std::string over = dir.write("over.json", edit(ds, "\"num_nextn_predict_layers\": 1",
                                                       "\"num_nextn_predict_layers\": " + std::to_string(std::stoi(fit) + 1)));
  r = run_cli(fmt::format("import hf {} --vocab-shards 2", over));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "over.json:33:31: num_nextn_predict_layers is " + std::to_string(std::stoi(fit) + 1)));
  // Modules whose layers pass the model's layer limit: refused before the YAML is built, at the field.
  const std::string huge = dir.write("mtp-huge.json", edit(ds, "\"num_nextn_predict_layers\": 1",
                                                           "\"num_nextn_predict_layers\": 99000"));
  r = run_cli(fmt::format("import hf {}", huge));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "mtp-huge.json:33:31: num_nextn_predict_layers is 99000: 99000 MTP modules of 2 layers "
                           "each"));
  CHECK(contains(r.output, "a model has at most 100,000"));
}

TEST_CASE("cli import hostile: Megatron's --mtp-num-layers with vocabulary shards is a located error too") {
  const Dir dir("import-mtp-megatron");
  const std::string args =
      "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --swiglu --num-experts 8 --moe-router-topk 2\n"
      "--padded-vocab-size 32000 --mtp-num-layers 40\n";
  const std::string file = dir.write("mtp.args", args);
  auto r = run_cli(fmt::format("import megatron {} --vocab-shards 4 -o {}/out.yaml", file, dir.path));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "mtp.args:2:44: --mtp-num-layers is 40: with the head in 4 vocabulary shards"));
  CHECK(!std::ifstream(dir.path + "/out.yaml"));
  // Past the layer limit: refused at the value, not clamped.
  const std::string huge = dir.write("huge.args", edit(args, "--mtp-num-layers 40", "--mtp-num-layers 5000000"));
  r = run_cli(fmt::format("import megatron {}", huge));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "huge.args:2:44: --mtp-num-layers is 5000000; a model has at most 100,000 layers"));
  // Without shards, 40 modules import.
  r = run_cli(fmt::format("import megatron {} -o {}/ok.yaml", file, dir.path));
  CHECK(r.exit_code == 0);
}

TEST_CASE("cli import hostile: only the bare Infinity, -Infinity and NaN extend JSON; a sign before them is refused") {
  const Dir dir("import-json");
  const std::string ds = real_config("deepseek-v3");
  // -NaN and --Infinity were read as 0 (first_k_dense_replace 0: 61 MoE layers instead of 3 dense + 58).
  for (const char* bad : {"-NaN", "--Infinity", "+Infinity", "- NaN", "+NaN"}) {
    CAPTURE(bad);
    const std::string file =
        dir.write("sign.json", edit(ds, "\"first_k_dense_replace\": 3", std::string("\"first_k_dense_replace\": ") + bad));
    auto r = run_cli(fmt::format("import hf {} -o {}/out.yaml", file, dir.path));
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, fmt::format("sign.json:15:28: JSON: '{}' is not a number", bad)));
    CHECK(!std::ifstream(dir.path + "/out.yaml"));
  }
  // The bare tokens are numbers, and a count that is one is refused at the value, by what it is.
  for (const char* tok : {"NaN", "Infinity", "-Infinity"}) {
    CAPTURE(tok);
    const std::string file =
        dir.write("bare.json", edit(ds, "\"first_k_dense_replace\": 3", std::string("\"first_k_dense_replace\": ") + tok));
    auto r = run_cli(fmt::format("import hf {}", file));
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, fmt::format("bare.json:15:28: 'first_k_dense_replace' must be an integer, got {}", tok)));
  }
  // Not at a value (a key, inside a word): the parser refuses it where it stands.
  auto r = run_cli("import hf " + dir.write("key.json", "{\"model_type\": \"llama\", NaN: 1}"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "key.json:1:25: JSON"));
  // Inside strings nothing changes; Nemotron-H's bare Infinity still imports.
  r = run_cli(fmt::format("import hf {} -o {}/nem.yaml", data_path("hf_configs/nemotron-h-56b-base-8k.json"), dir.path));
  CHECK(r.exit_code == 0);
  // DeepSeek-V3 as published: 3 dense + 58 MoE decoder layers.
  r = run_cli(fmt::format("import hf {} -o {}/ds.yaml", data_path("hf_configs/deepseek-v3.json"), dir.path));
  REQUIRE(r.exit_code == 0);
  CHECK(contains(read_file(dir.path + "/ds.yaml"), "61 decoder layers (3 mla+mlp, 58 mla+moe)"));
}

TEST_CASE("cli import hostile: a Gemma 3 text_config or vision_config of the wrong type is refused at the value") {
  const Dir dir("import-gemma");
  const std::string gemma = read_file(data_path("hf_configs_written/gemma-3-4b.json"));
  // text_config as an array, a string, a number: refused, not replaced by Gemma3TextConfig's defaults.
  for (const char* bad : {"[1, 2]", "\"gemma\"", "7"}) {
    CAPTURE(bad);
    const std::string file = dir.write("g.json", std::regex_replace(gemma, std::regex("\"text_config\": \\{[^}]*\\}[^}]*\\},"),
                                                                    std::string("\"text_config\": ") + bad + ","));
    REQUIRE(read_file(file) != gemma);
    auto r = run_cli(fmt::format("import hf {} -o {}/out.yaml", file, dir.path));
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, "g.json:6:18: 'text_config' must be an object, got"));
    CHECK(!std::ifstream(dir.path + "/out.yaml"));
  }
  const std::string file = dir.write("v.json", std::regex_replace(gemma, std::regex("\"vision_config\": \\{[^}]*\\}"),
                                                                  "\"vision_config\": true"));
  auto r = run_cli(fmt::format("import hf {}", file));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "v.json:17:20: 'vision_config' must be an object, got a boolean"));
  // As written, it imports (the text model from text_config, the vision tower before the embedding).
  r = run_cli(fmt::format("import hf {} -o {}/ok.yaml", data_path("hf_configs_written/gemma-3-4b.json"), dir.path));
  CHECK(r.exit_code == 0);
}

TEST_CASE("cli import hostile: a field that changes the model's size and is not modelled is refused by name") {
  const Dir dir("import-unmodelled");
  // LatentMoE's moe_latent_size shrinks every routed expert; importing without it writes experts
  // hidden_size / moe_latent_size times too large.
  const std::string nem = real_config("nemotron-h-56b-base-8k");
  std::string moe = edit(nem, "\"M-M-M-M\\*", "\"MEM-M-M*");
  moe = edit(moe, "\"n_groups\": 8,", "\"n_groups\": 8,\n  \"n_routed_experts\": 64, \"num_experts_per_tok\": 4, "
                                       "\"moe_intermediate_size\": 2048, \"moe_latent_size\": 1024,");
  auto r = run_cli("import hf " + dir.write("latent.json", moe));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "latent.json:32:103: 'moe_latent_size' changes the model's parameters and FLOPs (LatentMoE: "
                           "routed experts that compute in a smaller latent space)"));
  // null (the field's default) is no latent space: the same config imports.
  r = run_cli("import hf " + dir.write("nolatent.json", edit(moe, "\"moe_latent_size\": 1024", "\"moe_latent_size\": null")));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  // Nemotron-H's MTP layers are refused by name too (0 is none: imports).
  r = run_cli("import hf " + dir.write("mtp.json", edit(nem, "\"n_groups\": 8,", "\"n_groups\": 8, \"num_nextn_predict_layers\": 1,")));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "'num_nextn_predict_layers' changes the model's parameters and FLOPs (multi-token-prediction"));
  r = run_cli("import hf " + dir.write("mtp0.json", edit(nem, "\"n_groups\": 8,", "\"n_groups\": 8, \"num_nextn_predict_layers\": 0,")));
  CHECK(r.exit_code == 0);
  // Megatron's flag likewise, and a hybrid layer ratio the import cannot reproduce.
  r = run_cli("import megatron " + dir.write("latent.args", "--num-layers 4 --hidden-size 256 --num-attention-heads 4 "
                                                            "--num-experts 8 --padded-vocab-size 32000\n"
                                                            "--moe-latent-size 64\n"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "latent.args:2:1: --moe-latent-size changes the model's parameters and FLOPs (LatentMoE"));
  r = run_cli("import megatron " + dir.write("ratio.args", "--num-layers 4 --hidden-size 256 --num-attention-heads 4 "
                                                           "--padded-vocab-size 32000 --hybrid-attention-ratio 0.25\n"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "ratio.args:1:84: --hybrid-attention-ratio makes Megatron place attention or MLP layers"));
}

}  // namespace import_hostile_test
