// The one model-YAML writer (ir/model_write.h): its layout, written exactly, and that what it writes
// loads as the model described (quoted symbols, extra inputs, cluster links, the parallel block).
#include <doctest/doctest.h>

#include <string>

#include "ir/model.h"
#include "ir/model_write.h"
#include "ir/yaml_util.h"

using namespace ps;

TEST_CASE("model writer: the layout, and the file loads as the model described") {
  ModelDocument d;
  d.header = "# written by the test\n";
  d.name = "tiny";
  d.architecture = {{"hidden_size", "64", "hidden_size"}, {"num_attention_heads", "4", ""},
                    {"ffn_hidden_size", "128", "intermediate_size"}, {"vocab_size", "100", ""},
                    {"seq_length", "32", ""}};
  d.hardware = {{"peak_tflops", "989"}, {"achievable_fraction", "0.5"}, {"hbm_gb_per_s", "3350"}};
  d.layer_types = {{"E", format_flow_map({{"name", "embedding"}, {"kind", "embedding"}})},
                   {yamlu::quote_scalar("-"), format_flow_map({{"name", "mlp"}, {"kind", "mlp"},
                                                               {"forward_ms", "1.5"}}),
                    "a quoted symbol"},
                   {"L", format_flow_map({{"name", "head"}, {"kind", "head"}})}};
  d.layer_entries = {{{"type", "E"}, {"module", "embed"}},
                     {{"type", "\"-\""}, {"repeat", "2"}, {"module", "\"layers.{i}\""}},
                     {{"type", "L"}, {"inputs", "[0]"}, {"module", "[norm, head]"}}};
  d.cluster_note = "# the cluster\n";
  d.cluster = {{"name", "two"}, {"devices", "2"}, {"memory_gb", "80"},
               {"link", format_flow_map({{"bandwidth_gb_per_s", "450"}, {"latency_us", "5"}})}};
  d.cluster_comment = "two GPUs";
  d.pipeline = {{"microbatches", "4"}, {"bytes_per_param", "18"}};
  d.parallel = {{"tensor", "2", "--tensor-model-parallel-size"}};
  const std::string y = format_model_yaml(d);
  CHECK(y ==
        "# written by the test\n"
        "schema: 1\n"
        "model:\n"
        "  name: tiny\n"
        "  architecture:\n"
        "    hidden_size: 64                     # hidden_size\n"
        "    num_attention_heads: 4\n"
        "    ffn_hidden_size: 128                # intermediate_size\n"
        "    vocab_size: 100\n"
        "    seq_length: 32\n"
        "  hardware: {peak_tflops: 989, achievable_fraction: 0.5, hbm_gb_per_s: 3350}\n"
        "  layer_types:\n"
        "    E: {name: embedding, kind: embedding}\n"
        "    \"-\": {name: mlp, kind: mlp, forward_ms: 1.5}  # a quoted symbol\n"
        "    L: {name: head, kind: head}\n"
        "  layers:\n"
        "    - {type: E, module: embed}\n"
        "    - {type: \"-\", repeat: 2, module: \"layers.{i}\"}\n"
        "    - {type: L, inputs: [0], module: [norm, head]}\n"
        "# the cluster\n"
        "cluster: {name: two, devices: 2, memory_gb: 80, link: {bandwidth_gb_per_s: 450, latency_us: 5}}  # two GPUs\n"
        "pipeline:\n"
        "  microbatches: 4\n"
        "  bytes_per_param: 18\n"
        "parallel:\n"
        "  tensor: 2  # --tensor-model-parallel-size\n");
  Result<Spec> s = parse_spec(y, "tiny.yaml");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  REQUIRE(s->model.layers.size() == 4);
  CHECK(s->model.layers[1].type == '-');
  CHECK(s->model.layers[2].modules == std::vector<std::string>{"layers.1"});
  CHECK(s->model.types.at('-').forward_ms == 1.5);
  CHECK(s->cluster.devices == 2);
  CHECK(s->cluster.link.bandwidth_gb_per_s == 450);

  // The layers as one string of symbols.
  d.layer_entries.clear();
  d.layer_string = yamlu::double_quoted("E--L");
  d.parallel.clear();
  const std::string chain = format_model_yaml(d);
  CHECK(chain.find("  layers: \"E--L\"\n# the cluster\n") != std::string::npos);
  Result<Spec> c = parse_spec(chain, "chain.yaml");
  REQUIRE_MESSAGE(c.ok(), c.status().str());
  CHECK(c->model.layers.size() == 4);
}
