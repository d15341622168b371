// `pipesmith import hf` and `pipesmith import megatron` through the command line, on the real
// config.json files in tests/data/hf_configs (SOURCES.md there): the layer list each config implies,
// the parameter count against the published total, a certified `synth` schedule for each, the
// options, determinism, the Megatron import against the HF one, and bad input located.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "test_util.h"

using pstest::contains;
using pstest::data_path;
using pstest::read_file;
using pstest::run_cli;
using pstest::temp_path;

// A named namespace (not an anonymous one): the unity build joins this file with others.
namespace import_test {

struct Case {
  std::string file;         // in tests/data/hf_configs
  double published_b;       // the model card's total, billions (without MTP modules)
  bool fits_2x8_h100;       // model states at 18 B/param fit 16 x 80 GB with pipeline parallelism alone
                            // (the others run in a mesh with expert parallelism and the distributed optimizer)
};
const std::vector<Case> kCases = {
    {"llama-2-7b-hf", 6.74, true},       {"mixtral-8x7b-v0.1", 46.7, true},
    {"qwen3-30b-a3b", 30.5, true},       {"deepseek-v3", 671, false},
    {"gpt-oss-20b", 20.9, true},         {"nemotron-h-56b-base-8k", 56, true},
    {"minimax-m1", 456, false},
};

std::string config_path(const std::string& name) { return data_path("hf_configs/" + name + ".json"); }

// The layer string the config implies, written out from its fields here (independently of the
// importer): E, one symbol per decoder layer, L, then the MTP modules (m Q).
std::string expected_layers(const std::string& name) {
  std::ifstream in(config_path(name));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  text = std::regex_replace(text, std::regex("\\bInfinity\\b"), "1e308");
  const nlohmann::json c = nlohmann::json::parse(text);
  const int n = c["num_hidden_layers"];
  const std::string t = c["model_type"];
  std::string s = "E";
  for (int i = 0; i < n; ++i) {
    if (t == "llama") s += 'T';                                         // attention + MLP
    if (t == "mixtral") s += 'U';                                       // attention + MoE
    if (t == "qwen3_moe") s += (i + 1) % int(c["decoder_sparse_step"]) == 0 ? 'U' : 'T';
    if (t == "deepseek_v3") s += i >= int(c["first_k_dense_replace"]) ? 'K' : 'D';  // MLA + MoE / MLP
    if (t == "gpt_oss") s += c["layer_types"][i] == "sliding_attention" ? 'W' : 'U';  // sliding / full + MoE
    if (t == "minimax_m1") s += c["attn_type_list"][i] == 0 ? 'P' : 'U';  // lightning / softmax + MoE
    if (t == "nemotron_h") {
      const char p = std::string(c["hybrid_override_pattern"])[i];
      s += p == 'M' ? 'M' : p == '-' ? 'F' : 'A';
    }
  }
  s += 'L';
  for (int j = 0; j < c.value("num_nextn_predict_layers", 0); ++j) s += "mQ";
  return s;
}

// Imports `name` (with `flags`) into a temporary YAML; returns its path.
std::string import(const std::string& name, const std::string& flags = "") {
  const std::string out = temp_path("import-" + name + ".yaml");
  auto r = run_cli(fmt::format("import hf {} -o {} {}", config_path(name), out, flags));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return out;
}

nlohmann::json lower_json(const std::string& yaml) {
  auto r = run_cli("lower " + yaml + " --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output);
}

// Millions of parameters of the layers whose symbols are not in `skip`.
double params_m(const nlohmann::json& low, const std::string& skip = "") {
  std::map<std::string, double> per;
  for (const auto& t : low["layer_types"]) per[t["symbol"]] = t["params_m"];
  double total = 0;
  for (char c : std::string(low["layer_string"]))
    if (skip.find(c) == std::string::npos) total += per.at(std::string(1, c));
  return total;
}

// The YAML without comments, the model's name and module names (what differs between the HF and the
// Megatron import of one model).
std::string model_only(const std::string& yaml) {
  std::string out;
  std::istringstream in(yaml);
  for (std::string line; std::getline(in, line);) {
    line = std::regex_replace(line, std::regex("\\s*#.*$"), "");
    line = std::regex_replace(line, std::regex(", module: (\\[[^\\]]*\\]|\"[^\"]*\"|[A-Za-z0-9_.]+)"), "");
    if (line.empty() || line.rfind("  name:", 0) == 0) continue;
    out += line + "\n";
  }
  return out;
}


TEST_CASE("cli import hf: every real config imports; its layer list and parameter count match the config and the "
          "published total") {
  size_t on_disk = 0;
  for (const auto& e : std::filesystem::directory_iterator(data_path("hf_configs")))
    on_disk += e.path().extension() == ".json";
  CHECK(on_disk == kCases.size());
  for (const Case& c : kCases) {
    CAPTURE(c.file);
    const nlohmann::json low = lower_json(import(c.file));
    CHECK(low["layer_string"] == expected_layers(c.file));
    const double main_b = params_m(low, "mQ") / 1e3;  // without the MTP module
    INFO("parameters ", main_b, " B, published ", c.published_b, " B");
    CHECK(std::fabs(main_b - c.published_b) / c.published_b < 0.01);
  }
  // DeepSeek-V3 with its MTP module: 671 B + 14 B published (the checkpoint's MTP layer also holds copies
  // of the embedding, which the model does not count twice, and of the head, which it does).
  const double with_mtp_b = double(lower_json(import("deepseek-v3"))["totals"]["params_m"]) / 1e3;
  CHECK(std::fabs(with_mtp_b - 685) / 685 < 0.01);
  // lower says both figures, in its text and its JSON.
  const std::string ds = import("deepseek-v3");
  const double mtp_b = double(lower_json(ds)["totals"]["mtp_params_m"]) / 1e3;
  CHECK(std::fabs((with_mtp_b - mtp_b) - 671) / 671 < 0.01);
  auto text = run_cli("lower " + ds);
  REQUIRE(text.exit_code == 0);
  CHECK(contains(text.output, fmt::format("parameters  {:.1f} M in all; {:.1f} M without the MTP modules",
                                          with_mtp_b * 1e3, (with_mtp_b - mtp_b) * 1e3)));
}

TEST_CASE("cli import hf: the model types the real files do not show (configs written from published numbers)") {
  struct Written {
    std::string file, layers;
    double published_b;
    std::string skip;  // symbols left out of the count compared with the published total
    std::string mesh = "";  // what it needs beyond a pipeline of 8 devices to fit 80 GB
  };
  auto rep = [](const std::string& unit, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += unit;
    return s;
  };
  const std::vector<Written> cases = {
      // Gemma 2: even layers sliding (V), odd full (T); tied head.
      {"gemma-2-2b", "E" + rep("VT", 13) + "L", 2.61, ""},
      // Gemma 3: the vision tower (Y) feeds the text embedding; every 6th layer full.
      {"gemma-3-4b", rep("Y", 27) + "E" + rep("VVVVVT", 5) + "VVVVL", 4.3, ""},
      // DeepSeek-V2-Lite: MLA without Q compression, 1 dense layer first.
      {"deepseek-v2-lite", "ED" + rep("K", 26) + "L", 15.7, ""},
      // Qwen3-Next: gated DeltaNet (H) with full attention every 4th layer (U), all MoE (its checkpoint's
      // MTP module, which transformers does not build, is not imported).
      {"qwen3-next-80b-a3b", "E" + rep("HHHU", 12) + "L", 80, "", "--data-parallel 8 --expert-parallel 8 --optimizer distributed"},
  };
  for (const Written& w : cases) {
    CAPTURE(w.file);
    const std::string out = temp_path("import-written-" + w.file + ".yaml");
    auto r = run_cli(fmt::format("import hf {} -o {}", data_path("hf_configs_written/" + w.file + ".json"), out));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json low = lower_json(out);
    CHECK(low["layer_string"] == w.layers);
    const double b = params_m(low, w.skip) / 1e3;
    INFO("parameters ", b, " B, published ", w.published_b, " B");
    CHECK(std::fabs(b - w.published_b) / w.published_b < 0.01);
    auto s = run_cli(fmt::format("synth {} --devices 8 {} --microbatches 8 --partition balanced "
                                 "--placement sequential --time-limit 2 --quiet -o {}.sched.yaml",
                                 out, w.mesh, out));
    INFO(s.output);
    CHECK(s.exit_code == 0);
    CHECK(contains(s.output, "valid under rendezvous semantics"));
  }
  const std::string q = temp_path("import-written-qwen3-next-80b-a3b.yaml");
  CHECK(contains(read_file(q), "MTP: the checkpoint's MTP module (mtp_num_hidden_layers) is not imported"));
  CHECK(contains(read_file(q), "deltanet_value_heads: 32"));
  CHECK(contains(read_file(q), "attention_output_gate: true"));
  CHECK(contains(read_file(temp_path("import-written-gemma-3-4b.yaml")),
                 "num_attention_heads: 8              # num_attention_heads (absent: the gemma3_text default)"));
}

TEST_CASE("[slow] cli import hf: pipesmith synth certifies a schedule for every imported model") {
  for (const Case& c : kCases) {
    CAPTURE(c.file);
    const std::string yaml = import(c.file);
    const std::string out = temp_path("import-synth-" + c.file + ".yaml");
    // DeepSeek-V3 and MiniMax-M1 need expert parallelism and sharded optimizer states to fit 80 GB devices
    // (one MoE layer's model states alone are 11.3 B x 18 bytes): their pipeline runs in a mesh of data 16 x
    // expert 16 with the distributed optimizer.
    auto r = run_cli(fmt::format("synth {} --cluster {} {} --partition balanced-memory --placement sequential "
                                 "--microbatches 8 --time-limit 2 --quiet -o {}",
                                 yaml, pstest::source_path("configs/clusters/2x8-h100.yaml"),
                                 c.fits_2x8_h100 ? "" : "--data-parallel 16 --expert-parallel 16 --optimizer distributed",
                                 out));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.output, "valid under rendezvous semantics"));
    auto v = run_cli("verify " + out);
    INFO(v.output);
    CHECK(v.exit_code == 0);
  }
  // A searched partition too (bounded by evaluations: the same plan on any machine).
  auto r = run_cli(fmt::format("synth {} --cluster {} --microbatches 8 --evaluations 10 --time-limit 2 --quiet -o {}",
                               import("gpt-oss-20b"), pstest::source_path("configs/clusters/2x8-h100.yaml"),
                               temp_path("import-synth-searched.yaml")));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "valid under rendezvous semantics"));
}

TEST_CASE("cli import hf: the options, sublayers and vocabulary shards; the output is deterministic") {
  const std::string a = read_file(import("deepseek-v3"));
  CHECK(a == read_file(import("deepseek-v3")));  // byte for byte
  CHECK(contains(a, "# deepseek-v3: imported by `pipesmith import hf` from deepseek-v3.json"));
  CHECK(contains(a, "kv_lora_rank: 512"));
  CHECK(contains(a, "seq_length: 4096"));
  CHECK(contains(a, "{type: m, inputs: [0, 61], module: model.layers.61}"));

  const std::string opt = import("deepseek-v3", "--seq-length 8192 --micro-batch-size 2 --vocab-shards 2 --sublayers");
  const std::string b = read_file(opt);
  CHECK(contains(b, "seq_length: 8192"));
  CHECK(contains(b, "micro_batch_size: 2"));
  const nlohmann::json low = lower_json(opt);
  // Each decoder layer as mixer + MLP/MoE; the head and the MTP head in 2 shards; the MTP module as its
  // projection, MLA and MoE sublayers.
  std::string expected = "E";
  for (int i = 0; i < 61; ++i) expected += i < 3 ? "CF" : "CX";
  expected += "LLmbyQQ";
  CHECK(low["layer_string"] == expected);
  // The same parameters however the layers are cut (each shard repeats the final norm: + h).
  CHECK(params_m(low) == doctest::Approx(params_m(lower_json(import("deepseek-v3"))) + 2 * 7168 / 1e6));
  // The MTP projection reads the embedding and the last decoder sublayer.
  const nlohmann::json& mtp = low["layer_list"][1 + 2 * 61 + 2];
  CHECK(mtp["type"] == "m");
  std::set<int> inputs(mtp["inputs"].begin(), mtp["inputs"].end());
  CHECK(inputs == std::set<int>{0, 122, 124});  // + the head's last shard (the chain)

  // A hybrid model's layers are sublayers already: --sublayers changes nothing.
  CHECK(lower_json(import("nemotron-h-56b-base-8k", "--sublayers"))["layer_string"] ==
        expected_layers("nemotron-h-56b-base-8k"));
  // gpt-oss as sublayers: sliding (S) or full (A) attention joined to its MoE (X).
  std::string gpt = "E";
  for (int i = 0; i < 12; ++i) gpt += "SXAX";
  CHECK(lower_json(import("gpt-oss-20b", "--sublayers"))["layer_string"] == gpt + "L");

  auto help = run_cli("import hf --help");
  CHECK(help.exit_code == 0);
  CHECK(contains(help.output, "nemotron_h"));
  CHECK(contains(help.output, "--sublayers"));
  auto mhelp = run_cli("import megatron --help");
  CHECK(mhelp.exit_code == 0);
  CHECK(contains(mhelp.output, "ARGS_FILE"));
}

TEST_CASE("cli import megatron: the arguments of Llama-2-7B and Mixtral-8x7B give the HF import's model") {
  const std::string dir = pstest::fresh_dir("import-megatron");
  struct M {
    std::string hf, args;
  };
  const std::vector<M> models = {
      {"llama-2-7b-hf",
       "# Llama-2-7B as a Megatron-LM training script passes it\n"
       "torchrun pretrain_gpt.py \\\n  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 11008 \\\n"
       "  --num-attention-heads 32 --seq-length 4096 --micro-batch-size 1 --swiglu \\\n"
       "  --untie-embeddings-and-output-weights --padded-vocab-size 32000 --normalization RMSNorm \\\n"
       "  --pipeline-model-parallel-layout \"Et*8|t*8|t*8|t*8L\" --lr 3e-4\n"},
      {"mixtral-8x7b-v0.1",
       "--num-layers=32 --hidden-size=4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
       "--group-query-attention --num-query-groups 8 --num-experts 8 --moe-router-topk 2 --swiglu "
       "--untie-embeddings-and-output-weights --vocab-size 32000 --seq-length 4096\n"},
      {"deepseek-v3",
       "GPT_ARGS=(\n  --num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432 --num-attention-heads 128\n"
       "  --multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128\n"
       "  --qk-pos-emb-head-dim 64 --v-head-dim 128 --swiglu --untie-embeddings-and-output-weights\n"
       "  --num-experts 256 --moe-router-topk 8 --moe-ffn-hidden-size 2048\n"
       "  --moe-shared-expert-intermediate-size 2048 --moe-layer-freq '([0]*3+[1]*58)'\n"
       "  --mtp-num-layers 1 --padded-vocab-size 129280 --seq-length 4096 --micro-batch-size 1\n)\n"},
      {"nemotron-h-56b-base-8k",
       "--hybrid-override-pattern M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-"
       "M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M- --num-layers 118 --hidden-size 8192 --ffn-hidden-size 32768 "
       "--num-attention-heads 64 --group-query-attention --num-query-groups 8 --kv-channels 128 "
       "--mamba-state-dim 256 --mamba-num-heads 256 --mamba-head-dim 64 --mamba-num-groups 8 --squared-relu "
       "--untie-embeddings-and-output-weights --padded-vocab-size 131072 --seq-length 4096\n"},
  };
  for (const M& m : models) {
    CAPTURE(m.hf);
    const std::string args = dir + "/" + m.hf + ".args";
    std::ofstream(args) << m.args;
    const std::string out = dir + "/" + m.hf + "-megatron.yaml";
    auto r = run_cli(fmt::format("import megatron {} -o {}", args, out));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const std::string mg = read_file(out), hf = read_file(import(m.hf));
    CHECK(model_only(mg) == model_only(hf));
    CHECK(contains(mg, "module: \"decoder.layers.{i}\""));  // Megatron's module names
    CHECK(lower_json(out)["totals"] == lower_json(import(m.hf))["totals"]);
  }
  CHECK(contains(read_file(dir + "/llama-2-7b-hf-megatron.yaml"), "--partition 'Et*8|t*8|t*8|t*8L'"));

  // A flag the model needs, and a bad value, are named at their place.
  std::ofstream(dir + "/bad.args") << "--num-layers 32\n--num-attention-heads 32 --padded-vocab-size 32000\n";
  auto missing = run_cli(fmt::format("import megatron {}/bad.args", dir));
  CHECK(missing.exit_code == 1);
  CHECK(contains(missing.output, "bad.args: the model needs --hidden-size"));
  std::ofstream(dir + "/bad2.args") << "--num-layers 32 --hidden-size 4096\n  --num-attention-heads x32\n";
  auto bad = run_cli(fmt::format("import megatron {}/bad2.args", dir));
  CHECK(bad.exit_code == 1);
  CHECK(contains(bad.output, "bad2.args:2:25: --num-attention-heads must be an integer >= 1, got 'x32'"));
}

TEST_CASE("cli import hf: bad input is a located error, exit 1") {
  const std::string dir = pstest::fresh_dir("import-bad");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  // An unknown model_type names the supported ones and the docs, at the value.
  auto r = run_cli("import hf " + write("bert.json", "{\n  \"model_type\": \"bert\",\n  \"hidden_size\": 768\n}\n"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "bert.json:2:17: model_type 'bert' is not one pipesmith imports (supported: llama,"));
  CHECK(contains(r.output, "nemotron_h"));
  CHECK(contains(r.output, "docs/inputs.md"));
  // A field the type needs, absent: named, at the object.
  std::string llama = read_file(config_path("llama-2-7b-hf"));
  std::string no_hidden = std::regex_replace(llama, std::regex("\"hidden_size\": 4096,"), "");
  r = run_cli("import hf " + write("nohidden.json", no_hidden));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "nohidden.json:1:1: model_type llama needs 'hidden_size', which the config does not give"));
  // Of the wrong type: at the value.
  r = run_cli("import hf " + write("str.json", std::regex_replace(llama, std::regex("\"hidden_size\": 4096"),
                                                                  "\"hidden_size\": \"4096\"")));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "str.json:9:18: 'hidden_size' must be an integer, got a string"));
  // Broken JSON: where the parser stopped.
  r = run_cli("import hf " + write("broken.json", "{\n  \"model_type\": \"llama\"\n  \"hidden_size\": 1\n}\n"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "broken.json:3:3: JSON"));
  // A bad layer-type entry, at the entry.
  std::string gpt = read_file(config_path("gpt-oss-20b"));
  r = run_cli("import hf " + write("lt.json", std::regex_replace(gpt, std::regex("\"full_attention\""), "\"chunked\"",
                                                                 std::regex_constants::format_first_only)));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "lt.json:17:5: 'layer_types' entry 1 is 'chunked' (expected one of: 'full_attention', "
                           "'sliding_attention')"));
  // A pattern character no layer kind has: at the character (column 32 + 3 of the 3rd character).
  std::string nem = read_file(config_path("nemotron-h-56b-base-8k"));
  r = run_cli("import hf " + write("pat.json", std::regex_replace(nem, std::regex("\"M-M-M-M\\*"), "\"M-X-M-M*")));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "pat.json:19:35: 'hybrid_override_pattern' character 2 is 'X' (expected M Mamba-2, - MLP, "
                           "* attention, E MoE)"));
  // A layer-type list of the wrong length, at the list.
  r = run_cli("import hf " + write("short.json", std::regex_replace(gpt, std::regex("\"sliding_attention\",\n"), "",
                                                                    std::regex_constants::format_first_only)));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "short.json:15:18: 'layer_types' has 23 entries, num_hidden_layers is 24"));
  // Infinity where a count is needed: named, not an integer.
  r = run_cli("import hf " + write("inf.json", std::regex_replace(llama, std::regex("\"num_hidden_layers\": 32"),
                                                                  "\"num_hidden_layers\": Infinity")));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "inf.json:15:24: 'num_hidden_layers' must be an integer, got Infinity"));
  // More layers than a model may have: refused before anything is built.
  r = run_cli("import hf " + write("huge.json", std::regex_replace(llama, std::regex("\"num_hidden_layers\": 32"),
                                                                   "\"num_hidden_layers\": 1000000000")));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "huge.json:15:24: 'num_hidden_layers' is 1000000000; a model has at most 100,000 layers"));
  // The output may not be the input; a file past the input cap is refused, not read.
  const std::string in = write("in.json", llama);
  r = run_cli(fmt::format("import hf {} -o {}", in, in));
  CHECK(r.exit_code == 1);
  CHECK(read_file(in) == llama);
  r = run_cli("import hf /dev/zero");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "larger than"));
}

TEST_CASE("cli import hf: Nemotron-H as transformers 5 saves it (layers_block_type), with transformers' names") {
  const std::string dir = pstest::fresh_dir("import-nemotron5");
  // What NemotronHConfig(...).save_pretrained writes: layers_block_type, head_dim, no num_hidden_layers
  // and no hybrid_override_pattern (the fields the import reads, and one it does not).
  const std::string cfg = R"({
  "model_type": "nemotron_h",
  "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
  "vocab_size": 256, "intermediate_size": 96, "mlp_hidden_act": "relu2",
  "layers_block_type": ["mamba", "mlp", "attention", "moe"],
  "mamba_num_heads": 4, "mamba_head_dim": 16, "ssm_state_size": 8, "n_groups": 1, "conv_kernel": 4,
  "chunk_size": 64, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
  "time_step_limit": [0.0, {"__float__": "Infinity"}],
  "tie_word_embeddings": false
}
)";
  std::ofstream(dir + "/config.json") << cfg;
  auto r = run_cli(fmt::format("import hf {0}/config.json -o {0}/m.yaml", dir));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string yaml = read_file(dir + "/m.yaml");
  CHECK(contains(yaml, "module: model.embeddings}"));
  CHECK(contains(yaml, "module: \"model.layers.{i}\""));
  CHECK(contains(yaml, "module: [model.norm_f, lm_head]"));
  CHECK_FALSE(contains(yaml, "backbone.embeddings}"));
  CHECK(contains(yaml, "Layers: one per entry of layers_block_type"));
  CHECK(contains(yaml, "its checkpoints store them as backbone.embeddings, backbone.layers.N, backbone.norm_f"));
  // One layer per entry, in order: embedding, Mamba, MLP, attention, MoE, head.
  auto low = run_cli(fmt::format("lower {}/m.yaml --json", dir));
  REQUIRE(low.exit_code == 0);
  CHECK(nlohmann::json::parse(low.output)["layer_string"] == "EMFAXL");
  // An entry the import does not know is refused at the entry.
  std::ofstream(dir + "/bad.json") << std::regex_replace(cfg, std::regex("\"moe\"\\]"), "\"retnet\"]");
  auto bad = run_cli(fmt::format("import hf {}/bad.json", dir));
  CHECK(bad.exit_code == 1);
  CHECK(contains(bad.output, "bad.json:5:54: 'layers_block_type' entry 3 is 'retnet' (expected mamba / "
                             "linear_attention, mlp, attention / full_attention, moe)"));
}

}  // namespace import_test
