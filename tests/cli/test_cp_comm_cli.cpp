// Context parallelism's K/V exchange (parallel.cp_comm_type, --cp-comm-type) as a user runs it:
// lower's split and JSON, synth's iteration, the Megatron import, plan's --fix and its framework
// settings, and the refusals, located.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace {

// A dense model with 8k sequences on nodes of 8 GPUs, so that CP 2 x TP 8 spans two nodes.
std::string cp_model(const std::string& parallel) {
  return "schema: 1\n"
         "model:\n"
         "  name: cp-dense\n"
         "  architecture:\n"
         "    hidden_size: 2048\n"
         "    ffn_hidden_size: 8192\n"
         "    num_attention_heads: 16\n"
         "    num_kv_heads: 8\n"
         "    vocab_size: 32000\n"
         "    seq_length: 8192\n"
         "  hardware: {peak_tflops: 989, achievable_fraction: 0.5, hbm_gb_per_s: 3350}\n"
         "  layer_types:\n"
         "    E: {name: embedding, kind: embedding}\n"
         "    T: {name: decoder, kind: dense_block}\n"
         "    L: {name: head, kind: head}\n"
         "  layers:\n"
         "    - {type: E}\n"
         "    - {type: T, repeat: 8}\n"
         "    - {type: L}\n"
         "cluster:\n"
         "  devices: 2\n"
         "  memory_gb: 80\n"
         "  gpus_per_node: 8\n"
         "  link: {bandwidth_gb_per_s: 360, latency_us: 10}\n"
         "  inter_node_link: {bandwidth_gb_per_s: 40, latency_us: 20}\n"
         "pipeline: {microbatches: 8}\n" +
         parallel;
}

std::string cp_write(const std::string& name, const std::string& text) {
  const std::string path = pstest::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

nlohmann::json cp_lower(const std::string& args) {
  pstest::CliResult r = pstest::run_cli("lower " + args + " --json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  return nlohmann::json::parse(r.output);
}

double decoder_cp_ms(const nlohmann::json& j) {
  for (const auto& t : j["mesh_layer_types"])
    if (t["symbol"] == "T") return t["cp_ms"].get<double>();
  FAIL("no decoder (T) row in mesh_layer_types");
  return 0;
}

}  // namespace

TEST_CASE("cli cp_comm_type: all_gather's exposed gathers in lower and synth, the flag over the file, refusals located") {
  const std::string model = cp_write("cp-model.yaml", cp_model("parallel: {tensor: 8, context: 2, sequence_parallel: true}\n"));
  const std::string mesh = " --gpus 32";
  const nlohmann::json p2p = cp_lower(model + mesh);
  const nlohmann::json ag = cp_lower(model + mesh + " --cp-comm-type all_gather");
  CHECK(p2p["mesh"]["cp_comm_type"] == "p2p");
  CHECK(ag["mesh"]["cp_comm_type"] == "all_gather");
  // CP 2 over two nodes (TP 8 fills one): K and V of 8192 tokens, 8 KV heads of 128 over TP 8, bf16,
  // gathered by a ring of 2 over the inter-node link, once in F and twice in I.
  const double gathered = 2.0 * 8192 * 2 * (8.0 / 8) * 128;
  const double gather_ms = 0.020 + 0.5 * gathered / 40e6;
  CHECK(decoder_cp_ms(ag) == doctest::Approx(3 * gather_ms));
  CHECK(decoder_cp_ms(ag) > decoder_cp_ms(p2p));
  pstest::CliResult text = pstest::run_cli("lower " + model + mesh + " --cp-comm-type all_gather");
  REQUIRE(text.exit_code == 0);
  CHECK(pstest::contains(text.output, "x context 2 (all_gather) x tensor 8"));

  // The file's word, and the flag over it; synth's iteration grows by the exposed gathers.
  const std::string in_file =
      cp_write("cp-model-ag.yaml",
               cp_model("parallel: {tensor: 8, context: 2, sequence_parallel: true, cp_comm_type: all_gather}\n"));
  CHECK(cp_lower(in_file + mesh)["mesh"]["cp_comm_type"] == "all_gather");
  CHECK(cp_lower(in_file + mesh + " --cp-comm-type p2p")["mesh"]["cp_comm_type"] == "p2p");
  const std::string dir = pstest::fresh_dir("cp-comm");
  double iteration[2] = {0, 0};
  const char* words[2] = {"p2p", "all_gather"};
  for (int k = 0; k < 2; ++k) {
    pstest::CliResult s = pstest::run_cli("synth " + model + mesh + " --cp-comm-type " + words[k] +
                                          " --evaluations 5 --quiet -o " + dir + "/" + words[k] + ".yaml");
    REQUIRE_MESSAGE(s.exit_code == 0, s.output);
    pstest::CliResult v = pstest::run_cli("verify --json " + dir + "/" + words[k] + ".yaml");
    REQUIRE_MESSAGE(v.exit_code == 0, v.output);
    iteration[k] = nlohmann::json::parse(v.output)["makespan_ms"].get<double>();
  }
  CHECK(iteration[1] > iteration[0]);

  // Refusals: the file's value located at it, the flag by CLI11, Megatron's all-to-all kinds by name.
  const std::string a2a = cp_write("cp-a2a.yaml", cp_model("parallel: {tensor: 8, context: 2, cp_comm_type: a2a}\n"));
  pstest::CliResult bad = pstest::run_cli("lower " + a2a + mesh);
  CHECK(bad.exit_code == 1);
  CHECK(pstest::contains(bad.output, a2a + ":27:"));  // the parallel: line
  CHECK(pstest::contains(bad.output, "parallel.cp_comm_type: 'a2a' (the all-to-all context parallelism) is not modelled"));
  bad = pstest::run_cli("lower " + model + mesh + " --cp-comm-type ring");
  CHECK(bad.exit_code == 1);
  CHECK(pstest::contains(bad.output, "--cp-comm-type"));
}

TEST_CASE("cli cp_comm_type: import megatron reads --cp-comm-type; plan pins it and writes it to Megatron's arguments") {
  const std::string dir = pstest::fresh_dir("cp-comm-megatron");
  const std::string base =
      "--num-layers 8 --hidden-size 2048 --ffn-hidden-size 8192 --num-attention-heads 16 --group-query-attention\n"
      "--num-query-groups 8 --swiglu --untie-embeddings-and-output-weights --padded-vocab-size 32000\n"
      "--seq-length 8192 --micro-batch-size 1 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2\n"
      "--context-parallel-size 2 --sequence-parallel --use-distributed-optimizer --global-batch-size 16\n";
  const std::string args = cp_write("cp.args", base + "--cp-comm-type all_gather\n");
  pstest::CliResult r = pstest::run_cli("import megatron " + args + " -o " + dir + "/m.yaml");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(pstest::contains(pstest::read_file(dir + "/m.yaml"), "  cp_comm_type: all_gather  # --cp-comm-type\n"));
  // One value per layer, and the all-to-all kinds, are refused at the value.
  r = pstest::run_cli("import megatron " + cp_write("cp-list.args", base + "--cp-comm-type p2p all_gather\n") +
                      " -o " + dir + "/l.yaml");
  CHECK(r.exit_code == 1);
  CHECK(pstest::contains(r.output, ":5:16: "));
  CHECK(pstest::contains(r.output, "one value per layer is not supported"));
  r = pstest::run_cli("import megatron " + cp_write("cp-a2a.args", base + "--cp-comm-type a2a\n") + " -o " + dir +
                      "/a.yaml");
  CHECK(r.exit_code == 1);
  CHECK(pstest::contains(r.output, "--cp-comm-type: 'a2a' is not modelled"));

  // plan --fix cp_comm_type=all_gather: every row says so, and the best's Megatron arguments carry it.
  const std::string model = cp_write("cp-plan.yaml", cp_model(""));
  const std::string plan = "plan " + model + " --gpus 32 --global-batch 16 --fix tensor=8 --fix context=2 --top 1 "
                           "--evaluations 3 --quiet";
  r = pstest::run_cli(plan + " --fix cp_comm_type=all_gather --json -o " + dir + "/best.yaml");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const nlohmann::json rows = nlohmann::json::parse(r.output)["rows"];
  REQUIRE_FALSE(rows.empty());
  for (const auto& row : rows) CHECK(row["cp_comm_type"] == "all_gather");
  CHECK(pstest::contains(pstest::read_file(dir + "/best.yaml.megatron.args"), "--cp-comm-type all_gather"));
  CHECK(pstest::contains(pstest::read_file(dir + "/best.yaml.torchtitan.toml"), "rotate method (\"allgather\")"));
  r = pstest::run_cli(plan + " --fix cp_comm_type=a2a");
  CHECK(r.exit_code == 1);
  CHECK(pstest::contains(r.output, "--fix cp_comm_type=a2a: expected p2p or all_gather"));
}
