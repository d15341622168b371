// Reading model / cluster / pipeline YAML (schema 1): forms, defaults, overrides, derived costs,
// and located errors. configs/invalid is covered by test_invalid_configs.cpp.
#include <doctest/doctest.h>

#include <fstream>

#include "ir/model.h"
#include "ir/schedule_io.h"
#include "test_util.h"

using namespace ps;

namespace {

const char* kTypes = R"(
  layer_types:
    E: {name: embedding, forward_ms: 0.5, backward_input_ms: 0, backward_weight_ms: 0.2, activation_mb: 8, wgrad_stash_mb: 0, output_mb: 32, params_m: 100}
    M: {name: mamba, forward_ms: 3.73, backward_input_ms: 5.68, backward_weight_ms: 1.62, activation_mb: 900, wgrad_stash_mb: 120, output_mb: 32, params_m: 210}
    '*': {name: attention, forward_ms: 4, backward_input_ms: 6, backward_weight_ms: 2, activation_mb: 500, wgrad_stash_mb: 100, output_mb: 32, params_m: 60, split_backward: false}
    '-': {name: mlp, forward_ms: 2, backward_input_ms: 2, backward_weight_ms: 2, activation_mb: 400, wgrad_stash_mb: 200, output_mb: 32, params_m: 180}
    L: {name: head, forward_ms: 9, backward_input_ms: 9, backward_weight_ms: 8, activation_mb: 2000, wgrad_stash_mb: 30, output_mb: 0, params_m: 500}
)";

std::string model_yaml(
    const std::string& layers,
    const std::string& rest = "cluster: {devices: 4}\npipeline: {microbatches: 8}\n") {
  return std::string("schema: 1\nmodel:\n  name: tiny\n") + kTypes + "  layers: " + layers + "\n" +
         rest;
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = pstest::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("model: a layer string, whitespace ignored, chain inputs by default") {
  Result<Spec> s = parse_spec(model_yaml("\"EM-M *\n   -L\""), "m.yaml");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  const Model& m = s->model;
  CHECK(m.name == "tiny");
  REQUIRE(m.layers.size() == 7);
  std::string syms;
  for (const Layer& l : m.layers) syms.push_back(l.type);
  CHECK(syms == "EM-M*-L");
  CHECK(m.layers[0].inputs.empty());
  for (int i = 1; i < 7; ++i) CHECK(m.layers[i].inputs == std::vector<int>{i - 1});
  const LayerType& mamba = m.types.at('M');
  CHECK(mamba.name == "mamba");
  CHECK(mamba.forward_ms == 3.73);
  CHECK(mamba.backward_input_ms == 5.68);
  CHECK(mamba.backward_weight_ms == 1.62);
  CHECK(mamba.activation_mb == 900);
  CHECK(mamba.wgrad_stash_mb == 120);
  CHECK(mamba.output_mb == 32);
  CHECK(mamba.params_m == 210);
  CHECK(mamba.split_backward);
  CHECK_FALSE(m.types.at('*').split_backward);
  CHECK(mamba.loc.file == "m.yaml");
  CHECK(mamba.loc.line == 7);
  CHECK(s->cluster.devices == 4);
  CHECK(s->pipeline.microbatches == 8);
  CHECK(s->pipeline.bytes_per_param == 18);  // documented default
  CHECK(s->cluster.memory_gb == 0);          // documented default: unlimited
  CHECK(s->cluster.link.bandwidth_gb_per_s == 200);
}

TEST_CASE("model: the list form with repeat and extra inputs") {
  std::string layers = R"(
    - {type: E}
    - {type: M, repeat: 3}
    - {type: '*', inputs: [0]}
    - {type: L, inputs: [0, 1, 4, 1]})";
  Result<Spec> s = parse_spec(model_yaml(layers), "m.yaml");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  const Model& m = s->model;
  REQUIRE(m.layers.size() == 6);
  CHECK(m.layers[3].type == 'M');
  CHECK(m.layers[4].type == '*');
  CHECK(m.layers[4].inputs == std::vector<int>{0, 3});
  CHECK(m.layers[5].inputs ==
        std::vector<int>{0, 1, 4});  // sorted, duplicates and the default merged
  CHECK(m.layers[4].loc.line == 14);
}

TEST_CASE("model: a pattern entry repeats several types; joins_next marks sublayers") {
  std::string types = std::string(kTypes) +
                      "    A: {name: attn, forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, "
                      "activation_mb: 8, wgrad_stash_mb: 0, output_mb: 32, params_m: 1, joins_next: true}\n";
  std::string text = std::string("schema: 1\nmodel:\n  name: tiny\n") + types +
                     "  layers:\n    - {type: E}\n    - {type: 'A-', repeat: 3}\n    - {type: L}\n"
                     "cluster: {devices: 4}\npipeline: {microbatches: 8}\n";
  Result<Spec> s = parse_spec(text, "m.yaml");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  std::string syms;
  for (const Layer& l : s->model.layers) syms += l.type;
  CHECK(syms == "EA-A-A-L");
  CHECK(s->model.types.at('A').joins_next);
  CHECK(!s->model.types.at('-').joins_next);
  CHECK(s->model.layers[6].inputs == std::vector<int>{5});
}

TEST_CASE("model: unknown symbols are located at the symbol, also inside block scalars") {
  Result<Spec> s = parse_spec(model_yaml("\"EMM  MXL\""), "m.yaml");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("unknown layer type 'X' at layer 4") != std::string::npos);
  CHECK(s.status().loc().line == 11);
  CHECK(s.status().loc().col == 18);  // `  layers: "EMM  MXL"`: X is the 18th character

  Result<Spec> b = parse_spec(model_yaml("|\n    EMM\n    M-Q\n    L"), "m.yaml");
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().loc().line == 13);
  CHECK(b.status().loc().col == 7);
}

TEST_CASE("model: devices and microbatches must come from somewhere; overrides supply them") {
  std::string path = write_temp("nodev.yaml", model_yaml("EML", ""));
  Result<Spec> s = load_spec(path);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == ErrorCode::kBadInput);
  CHECK(s.status().message().find("or give it as an override (--devices; Python's load_spec(devices=...))") != std::string::npos);
  CHECK(s.status().loc().file == path);

  SpecOverrides o;
  o.devices = 3;
  Result<Spec> s2 = load_spec(path, "", o);
  REQUIRE_FALSE(s2.ok());
  CHECK(s2.status().message().find("or give it as an override (--microbatches; Python's load_spec(microbatches=...))") != std::string::npos);

  o.microbatches = 5;
  o.memory_gb = 40;
  Result<Spec> s3 = load_spec(path, "", o);
  REQUIRE_MESSAGE(s3.ok(), s3.status().str());
  CHECK(s3->cluster.devices == 3);
  CHECK(s3->pipeline.microbatches == 5);
  CHECK(s3->cluster.memory_gb == 40);
  CHECK(s3->model.name == "tiny");

  o.devices = 0;
  Result<Spec> bad = load_spec(path, "", o);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "the devices override must be an integer in [1, 100000], got 0");
  std::remove(path.c_str());
}

TEST_CASE("model: a cluster file replaces the model file's cluster; flags override both") {
  std::string model = write_temp("withcl.yaml", model_yaml("EML"));
  std::string cluster_path = pstest::source_path("configs/clusters/2x8-h100.yaml");
  Result<Spec> s = load_spec(model, cluster_path);
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  CHECK(s->cluster.devices == 16);
  CHECK(s->cluster.devices_per_node == 8);
  CHECK(s->cluster.memory_gb == 80);
  CHECK(s->cluster.link_between(0, 7).bandwidth_gb_per_s == 360);
  CHECK(s->cluster.link_between(7, 8).bandwidth_gb_per_s == 40);
  CHECK(s->cluster.loc.file == cluster_path);
  SpecOverrides o;
  o.devices = 8;
  o.memory_gb = 60;
  Result<Spec> s2 = load_spec(model, cluster_path, o);
  REQUIRE(s2.ok());
  CHECK(s2->cluster.devices == 8);
  CHECK(s2->cluster.memory_gb == 60);
  std::remove(model.c_str());
}

TEST_CASE("model: load_cluster reads every cluster config") {
  for (const char* name : {"8xh100-80gb", "8xh200", "2x8-h100"}) {
    CAPTURE(name);
    Result<Cluster> c =
        load_cluster(pstest::source_path(std::string("configs/clusters/") + name + ".yaml"));
    REQUIRE_MESSAGE(c.ok(), c.status().str());
    CHECK(c->devices >= 8);
    CHECK(c->memory_gb >= 80);
    CHECK(c->link.bandwidth_gb_per_s > 0);
  }
  std::string nodev = write_temp("nodev-cluster.yaml", "cluster: {memory_gb: 80}\n");
  Result<Cluster> c = load_cluster(nodev);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().find("missing 'devices'") != std::string::npos);
  CHECK(c.status().loc().line == 1);
  std::remove(nodev.c_str());
  Result<Cluster> missing = load_cluster("/nonexistent/cluster.yaml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().str().find("/nonexistent/cluster.yaml: cannot read cluster file") == 0);
}

TEST_CASE("model: analytic kinds fill what is not given; explicit numbers win") {
  const char* text = R"(schema: 1
model:
  architecture: {hidden_size: 1024, ffn_hidden_size: 4096, num_attention_heads: 8, vocab_size: 32000, seq_length: 2048}
  hardware: {peak_tflops: 1000, achievable_fraction: 0.5, hbm_gb_per_s: 2000}
  layer_types:
    E: {kind: embedding}
    T: {name: block, kind: dense_block, forward_ms: 1.5}
    W: {name: windowed, kind: attention+mlp, architecture: {attention_window: 256}}
    L: {kind: head, activation_mb: 5000}
  layers: ETWL
cluster: {devices: 2}
pipeline: {microbatches: 4, bytes_per_param: 16}
)";
  Result<Spec> s = parse_spec(text, "dir/derived.yaml");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  const Model& m = s->model;
  CHECK(m.name == "derived");                  // default: the file's stem
  CHECK(m.types.at('E').name == "embedding");  // default: the kind
  CHECK(m.types.at('T').kind == "dense_block");
  CHECK(m.types.at('T').forward_ms == 1.5);
  const LayerType& t = m.types.at('T');
  const LayerType& w = m.types.at('W');
  CHECK(w.forward_ms < t.backward_weight_ms * 2);
  CHECK(w.backward_weight_ms == doctest::Approx(t.backward_weight_ms));  // same matmuls
  CHECK(w.backward_input_ms < t.backward_input_ms);                      // fewer score pairs
  CHECK(w.params_m == doctest::Approx(t.params_m));
  CHECK(m.types.at('L').activation_mb == 5000);
  CHECK(m.types.at('L').output_mb == 0);
  CHECK(s->pipeline.bytes_per_param == 16);
  // (1024*(3*1024) + 1024*1024) + 1024 norm + 3*1024*4096 + 1024 norm
  CHECK(t.params_m == doctest::Approx((4.0 * 1024 * 1024 + 3.0 * 1024 * 4096 + 2048) / 1e6));
}

TEST_CASE("model: a cluster's hardware block re-derives analytic costs") {
  std::string model = write_temp("hw.yaml", R"(model:
  architecture: {hidden_size: 4096, vocab_size: 32000, seq_length: 4096}
  hardware: {peak_tflops: 989, achievable_fraction: 0.5, hbm_gb_per_s: 3350}
  layer_types:
    E: {kind: embedding}
  layers: E
pipeline: {microbatches: 4}
)");
  SpecOverrides o;
  o.devices = 1;
  Result<Spec> h100 = load_spec(model, pstest::source_path("configs/clusters/8xh100-80gb.yaml"));
  Result<Spec> h200 = load_spec(model, pstest::source_path("configs/clusters/8xh200.yaml"));
  Result<Spec> own = load_spec(model, "", o);
  REQUIRE(h100.ok());
  REQUIRE(h200.ok());
  REQUIRE(own.ok());
  CHECK(h100->model.types.at('E').forward_ms ==
        doctest::Approx(own->model.types.at('E').forward_ms));
  CHECK(h200->model.types.at('E').forward_ms ==
        doctest::Approx(own->model.types.at('E').forward_ms * 3350 / 4800));
  std::remove(model.c_str());
}

TEST_CASE("model: a single-file example (model, cluster and pipeline) reads as written") {
  const char* text = R"(model:
  name: nemotron-h-like
  layer_types:            # one-character symbols, as in Megatron's hybrid layer patterns
    E: {name: embedding, forward_ms: 1.35, backward_input_ms: 0.0, backward_weight_ms: 0.4,
        activation_mb: 64, wgrad_stash_mb: 0, output_mb: 32, params_m: 1074}
    M: {name: mamba, forward_ms: 3.73, backward_input_ms: 5.68, backward_weight_ms: 1.62,
        activation_mb: 900, wgrad_stash_mb: 120, output_mb: 32, params_m: 210}
    L: {name: head, forward_ms: 9, backward_input_ms: 9, backward_weight_ms: 8,
        activation_mb: 2000, wgrad_stash_mb: 30, output_mb: 0, params_m: 1074}
  layers: "EMMML"
cluster:
  devices: 8
  memory_gb: 80
  link: {bandwidth_gb_per_s: 200, latency_us: 5}     # p2p time = latency + bytes / bandwidth
pipeline:
  microbatches: 16
  bytes_per_param: 18        # weights+grads+fp32 master+Adam, for the model-state memory
)";
  Result<Spec> s = parse_spec(text, "layer-string.yaml");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  CHECK(s->model.layers.size() == 5);
  CHECK(s->model.types.at('E').params_m == 1074);
  CHECK(s->cluster.link.transfer_ms(32) == doctest::Approx(0.005 + 32.0 / 200));
}

TEST_CASE("model: located errors for values and keys") {
  struct Case {
    std::string yaml;
    int line, col;
    const char* message;
  };
  std::vector<Case> cases = {
      {model_yaml("EML",
                  "cluster: {devices: 4, link: {bandwidth_gb_per_s: 10, latency: 5}}\npipeline: "
                  "{microbatches: 8}\n"),
       12, 54,
       "cluster.link: unknown key 'latency' (did you mean 'latency_us'?); allowed keys: "
       "bandwidth_gb_per_s, latency_us"},
      {model_yaml("EML", "cluster: {devices: -2}\npipeline: {microbatches: 8}\n"), 12, 20,
       "cluster.devices must be an integer in [1, 100000], got -2"},
      // The cluster's counts are checked against the options table (ir/limits.h), one wording for all.
      {model_yaml("EML", "cluster: {devices: 2, devices_per_node: 0}\npipeline: {microbatches: 8}\n"), 12, 41,
       "cluster.devices_per_node must be an integer in [1, 100000], got 0"},
      {model_yaml("EML", "cluster: {devices: 2, gpus: 2000000}\npipeline: {microbatches: 8}\n"), 12, 29,
       "cluster.gpus must be an integer in [1, 1048576], got 2000000"},
      {model_yaml("EML", "cluster: {devices: 2, gpus_per_node: 0}\npipeline: {microbatches: 8}\n"), 12, 38,
       "cluster.gpus_per_node must be an integer in [1, 1048576], got 0"},
      {model_yaml("EML", "cluster: {devices: 2, memory_gb: lots}\npipeline: {microbatches: 8}\n"),
       12, 34, "cluster.memory_gb: expected a finite number, got 'lots'"},
      {model_yaml("EML",
                  "cluster: {devices: 2}\npipeline: {microbatches: 8, bytes_per_param: 0}\n"),
       13, 46, "pipeline: bytes_per_param must be > 0, got 0"},
      {model_yaml("[{type: E}, {type: M, repeat: two}]"), 11, 41,
       "model.layers[1].repeat: expected an integer, got 'two'"},
      {model_yaml("[{type: E}, {typ: M}]"), 11, 24, "model.layers[1]: unknown key 'typ'"},
      {model_yaml("[{type: E}, {type: M, inputs: 0}]"), 11, 41,
       "inputs must be a list of layer indices"},
      {model_yaml("{E: 1}"), 11, 11,
       "model.layers must be a string of layer type symbols or a list"},
      {"model: [1, 2]\n", 1, 8, "model: expected a map, got a sequence"},
      {"", 1, 1, "empty file"},
      {"- a\n- b\n", 1, 1, "top level: expected a map, got a sequence"},
      {"schema: 1\n", 1, 1, "missing 'model:' section"},
      {"model: {layers: E}\n", 1, 1, "model: missing 'layer_types'"},
      {"a: 1\n---\nb: 2\n", 2, 1, "expected one YAML document"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    Result<Spec> s = parse_spec(c.yaml, "m.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == ErrorCode::kBadInput);
    CHECK(s.status().message().find(c.message) != std::string::npos);
    CHECK(s.status().loc().file == "m.yaml");
    CHECK(s.status().loc().line == c.line);
    CHECK(s.status().loc().col == c.col);
  }
}

TEST_CASE("model: a mesh of more GPUs than the options table allows is refused in its wording") {
  // pipeline 2 x tensor 1,048,576: every degree is within its row, their product is not.
  Result<Spec> s = parse_spec(model_yaml("EML", "cluster: {devices: 2}\npipeline: {microbatches: 8}\n"
                                                "parallel: {tensor: 1048576}\n"),
                              "m.yaml");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message() ==
        "the GPUs, pipeline devices (2) x tensor (1048576) x context (1) = 2097152, must be an integer in "
        "[1, 1048576], got 2097152");
  CHECK(s.status().loc().file == "m.yaml");
}

TEST_CASE("model: validate() checks programmatic specs") {
  Result<Spec> ok = parse_spec(model_yaml("EML"), "m.yaml");
  REQUIRE(ok.ok());
  CHECK(validate(*ok).is_ok());
  Spec s = *ok;
  s.model.types['M'].wgrad_stash_mb = 1000;
  Status st = validate(s);
  REQUIRE_FALSE(st.is_ok());
  CHECK(st.message() == "layer type 'M': wgrad_stash_mb (1000) must be <= activation_mb (900)");
  CHECK(st.loc().line == 7);
  s = *ok;
  s.model.types['E'].forward_ms = -1;
  CHECK(validate(s).message() == "layer type 'E': forward_ms must be >= 0, got -1");
  s = *ok;
  s.model.layers[1].type = 'Z';
  CHECK(validate(s).message() == "layer 1: unknown layer type 'Z'");
  s = *ok;
  s.model.layers[1].inputs = {2};
  CHECK(validate(s).message() == "layer 1: input 2 must name an earlier layer (0..0)");
  s = *ok;
  s.cluster.devices = 0;
  CHECK(validate(s).message() == "cluster.devices must be an integer in [1, 100000], got 0");
  s = *ok;
  s.pipeline.microbatches = 0;
  CHECK(validate(s).message() == "pipeline.microbatches must be an integer in [1, 1000000], got 0");
  s = *ok;
  s.model.layers.clear();
  CHECK(validate(s).message() == "model has no layers");
}

TEST_CASE("model: the complete example in docs/inputs.md reads as documented") {
  std::string doc = pstest::read_file(pstest::source_path("docs/inputs.md"));
  size_t start = doc.find("```yaml\nschema: 1");
  REQUIRE(start != std::string::npos);
  start += 8;
  size_t end = doc.find("```", start);
  REQUIRE(end != std::string::npos);
  Result<Spec> s = parse_spec(doc.substr(start, end - start), "docs/inputs.md");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  CHECK(s->model.name == "nemotron-h-like");
  CHECK(s->model.layers.size() == 16);
  CHECK(s->model.types.at('M').backward_input_ms == 5.68);
  CHECK(s->cluster.devices == 8);
  CHECK(s->pipeline.microbatches == 16);
}

TEST_CASE("model: module names per entry, '{i}' numbered per template across entries") {
  Result<Spec> s = parse_spec(model_yaml("\n"
                                         "    - {type: E, module: tok_embeddings}\n"
                                         "    - {type: M, repeat: 2, module: \"layers.{i}\"}\n"
                                         "    - {type: '*-', repeat: 2, module: \"layers.{i}\"}\n"
                                         "    - {type: M}\n"
                                         "    - {type: L, module: [norm, output]}"),
                              "m.yaml");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  const auto& l = s->model.layers;
  REQUIRE(l.size() == 9);
  CHECK(l[0].modules == std::vector<std::string>{"tok_embeddings"});
  CHECK(l[1].modules == std::vector<std::string>{"layers.0"});
  CHECK(l[2].modules == std::vector<std::string>{"layers.1"});
  // A pattern copy is one module: both of its layers carry it; the count goes on from 2.
  CHECK(l[3].modules == std::vector<std::string>{"layers.2"});
  CHECK(l[4].modules == std::vector<std::string>{"layers.2"});
  CHECK(l[5].modules == std::vector<std::string>{"layers.3"});
  CHECK(l[6].modules == std::vector<std::string>{"layers.3"});
  CHECK(l[7].modules.empty());
  CHECK(l[8].modules == std::vector<std::string>{"norm", "output"});
}

TEST_CASE("model: bad module names are located errors") {
  auto err = [](const std::string& layers) {
    Result<Spec> s = parse_spec(model_yaml(layers), "m.yaml");
    REQUIRE(!s.ok());
    return s.status().str();
  };
  CHECK(pstest::contains(err("[{type: E, module: \"layers[0]\"}, {type: L}]"), "m.yaml:11:"));
  CHECK(pstest::contains(err("[{type: E, module: \"layers[0]\"}, {type: L}]"), "character '[' is not allowed"));
  CHECK(pstest::contains(err("[{type: E, module: \"layers.{n}\"}, {type: L}]"), "the only placeholder is '{i}'"));
  CHECK(pstest::contains(err("[{type: E, module: \"layers..x\"}, {type: L}]"), "not a dotted name"));
  CHECK(pstest::contains(err("[{type: E, module: []}, {type: L}]"), "non-empty list of names"));
  CHECK(pstest::contains(err("[{type: E, module: [a, {b: 1}]}, {type: L}]"), "module list entries must be names"));
  // One name may cover consecutive layers (a module written as several), not layers apart.
  CHECK(parse_spec(model_yaml("[{type: E}, {type: M, repeat: 3, module: block}, {type: L}]"), "m.yaml").ok());
  const std::string apart = err("[{type: M, module: block}, {type: E}, {type: M, module: block}, {type: L}]");
  CHECK(pstest::contains(apart, "module 'block' names layer 0 and again layer 2"));
  CHECK(pstest::contains(apart, "m.yaml:11:"));
}

// One field reader (ir/yaml_util.h) for model, cluster and schedule files: the same text is accepted
// or refused the same way, in the same words, located at the value.
namespace yaml_reader_test {

const char* kSchedule =
    "format: pipesmith-schedule/1\n"
    "problem:\n"
    "  name: tiny\n"
    "  devices: 1\n"
    "  microbatches: 1\n"
    "  unit_costs: true\n"
    "stages:\n"
    "  - {id: 0, device: 0, layers: [0, 0], fwd_ms: 1, bwd_input_ms: 1, bwd_weight_ms: 1}\n"
    "programs:\n"
    "  - device: 0\n"
    "    ops: [0F0, 0I0, 0W0]\n";

std::string swap(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

void expect_refused(const Status& st, const std::string& file, int line, int col, const std::string& message) {
  CHECK_MESSAGE(st.code() == ErrorCode::kBadInput, st.str());
  CHECK_MESSAGE(st.loc().file == file, st.str());
  CHECK_MESSAGE(st.loc().line == line, st.str());
  CHECK_MESSAGE(st.loc().col == col, st.str());
  CHECK_MESSAGE(st.message() == message, st.str());
}

TEST_CASE("yaml reader: the shipped files read as before, the strict forms are refused alike in every file") {
  // The accepted forms.
  REQUIRE(parse_spec(model_yaml("EML", "cluster: {devices: 4}\npipeline: {microbatches: 8}\n"), "m.yaml").ok());
  REQUIRE(parse_schedule_yaml(kSchedule, "s.yaml").ok());

  // "+4": an integer with a sign '+' is refused in a model file, a cluster file and a schedule file.
  Result<Spec> m = parse_spec(model_yaml("EML", "cluster: {devices: +4}\npipeline: {microbatches: 8}\n"), "m.yaml");
  REQUIRE_FALSE(m.ok());
  expect_refused(m.status(), "m.yaml", 12, 20, "cluster.devices: expected an integer, got '+4'");
  const std::string cluster = write_temp("yaml-reader-cluster.yaml", "schema: 1\ncluster: {devices: +4}\n");
  Result<Cluster> c = load_cluster(cluster);
  REQUIRE_FALSE(c.ok());
  expect_refused(c.status(), cluster, 2, 20, "cluster.devices: expected an integer, got '+4'");
  Result<Schedule> s = parse_schedule_yaml(swap(kSchedule, "devices: 1", "devices: +1"), "s.yaml");
  REQUIRE_FALSE(s.ok());
  expect_refused(s.status(), "s.yaml", 4, 12, "problem.devices: expected an integer, got '+1'");

  // "+1.5" as a number.
  Result<Spec> mem = parse_spec(model_yaml("EML", "cluster: {devices: 4, memory_gb: +80}\npipeline: {microbatches: 8}\n"),
                                "m.yaml");
  REQUIRE_FALSE(mem.ok());
  expect_refused(mem.status(), "m.yaml", 12, 34, "cluster.memory_gb: expected a finite number, got '+80'");
  Result<Schedule> fwd = parse_schedule_yaml(swap(kSchedule, "fwd_ms: 1,", "fwd_ms: +1.5,"), "s.yaml");
  REQUIRE_FALSE(fwd.ok());
  CHECK_MESSAGE(fwd.status().message().find("fwd_ms: expected a finite number, got '+1.5'") != std::string::npos, fwd.status().str());

  // "True": a flag is true or false only.
  Result<Spec> b = parse_spec(swap(model_yaml("EML"), "split_backward: false", "split_backward: True"), "m.yaml");
  REQUIRE_FALSE(b.ok());
  CHECK_MESSAGE(b.status().message().find("split_backward: expected true or false, got 'True'") != std::string::npos,
                b.status().str());
  Result<Schedule> sb = parse_schedule_yaml(swap(kSchedule, "unit_costs: true", "unit_costs: True"), "s.yaml");
  REQUIRE_FALSE(sb.ok());
  expect_refused(sb.status(), "s.yaml", 6, 15, "problem.unit_costs: expected true or false, got 'True'");

  // An unknown key: the same wording (suggestion, then the allowed keys), located at the key.
  Result<Spec> k = parse_spec(model_yaml("EML", "cluster: {devices: 4, memroy_gb: 8}\npipeline: {microbatches: 8}\n"),
                              "m.yaml");
  REQUIRE_FALSE(k.ok());
  CHECK(k.status().loc().line == 12);
  CHECK_MESSAGE(k.status().message().rfind("cluster: unknown key 'memroy_gb' (did you mean 'memory_gb'?); allowed keys: ", 0) == 0,
                k.status().str());
  Result<Schedule> sk = parse_schedule_yaml(swap(kSchedule, "  unit_costs: true\n", "  unit_costs: true\n  memroy_gb: 8\n"),
                                            "s.yaml");
  REQUIRE_FALSE(sk.ok());
  CHECK(sk.status().loc().line == 7);
  CHECK_MESSAGE(sk.status().message().rfind("problem: unknown key 'memroy_gb' (did you mean 'memory_gb'?); allowed keys: ", 0) == 0,
                sk.status().str());
}

}  // namespace yaml_reader_test
