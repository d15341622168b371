// The model YAML an import writes (ir/model_import.h): type symbols, repeat runs, module names, MTP
// inputs, sublayers, a vision encoder first, shared experts in one form, determinism.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "ir/model.h"
#include "ir/model_import.h"

using namespace ps;

namespace {

// 2 dense layers, 3 MoE layers, a sliding-window MoE layer, one MTP module.
ImportedModel small_model() {
  ImportedModel m;
  m.name = "small";
  m.arch = {{"vocab_size", "100", "vocab_size"},  // out of the table's order on purpose
            {"hidden_size", "64", "hidden_size"},
            {"num_attention_heads", "4", ""},
            {"ffn_hidden_size", "128", ""},
            {"moe_num_experts", "4", ""},
            {"moe_top_k", "2", ""},
            {"moe_ffn_hidden_size", "32", ""}};
  m.overrides[Sublayer::kSlidingAttention] = {{"attention_window", "16", "sliding_window"}};
  const DecoderLayer dense{{Sublayer::kAttention, Sublayer::kMlp}}, moe{{Sublayer::kAttention, Sublayer::kMoe}},
      sliding{{Sublayer::kSlidingAttention, Sublayer::kMoe}};
  m.layers = {dense, dense, moe, moe, moe, sliding};
  m.mtp_modules = 1;
  m.mtp_block = moe;
  m.moe = true;
  m.names = {"model.embed_tokens", "model.layers.{i}", "model.norm", "lm_head", "model.layers.{i}"};
  return m;
}

Spec load(const std::string& yaml) {
  Result<Spec> s = parse_spec(yaml, "small.yaml");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  return *s;
}

std::string layer_string(const Spec& s) {
  std::string out;
  for (const Layer& l : s.model.layers) out += l.type;
  return out;
}

}  // namespace

TEST_CASE("model import: whole decoder layers, repeat runs, module names and the MTP module's inputs") {
  ImportOptions o;
  o.seq_length = 128;
  Result<std::string> y = write_imported_model(small_model(), o);
  REQUIRE_MESSAGE(y.ok(), y.status().str());
  CHECK(*y == *write_imported_model(small_model(), o));  // deterministic
  CHECK(y->find("{type: T, repeat: 2, module: \"model.layers.{i}\"}") != std::string::npos);
  CHECK(y->find("{type: U, repeat: 3, module: \"model.layers.{i}\"}") != std::string::npos);
  CHECK(y->find("W: {name: sliding-attention+moe, kind: attention+moe, architecture: {attention_window: 16}}") !=
        std::string::npos);
  // The architecture block in the table's order, whatever order the source gave.
  CHECK(y->find("hidden_size: 64") < y->find("vocab_size: 100"));
  CHECK(y->find("seq_length: 128") != std::string::npos);
  CHECK(y->find("moe_achievable_fraction: 0.25") != std::string::npos);
  const Spec s = load(*y);
  CHECK(layer_string(s) == "ETTUUUWLmQ");
  CHECK(s.model.layers[6].modules == std::vector<std::string>{"model.layers.5"});
  CHECK(s.model.layers[7].modules == std::vector<std::string>{"model.norm", "lm_head"});
  // The MTP projection reads the embedding and the last decoder layer, and is named after the decoder layers.
  CHECK(std::set<int>(s.model.layers[8].inputs.begin(), s.model.layers[8].inputs.end()) == std::set<int>{0, 6, 7});
  CHECK(s.model.layers[8].modules == std::vector<std::string>{"model.layers.6"});
  CHECK(s.model.types.at('m').joins_next);
  CHECK(y->find("# Parameters (analytic): ") != std::string::npos);
}

TEST_CASE("model import: sublayers, vocabulary shards and a vision encoder before the embedding") {
  ImportedModel m = small_model();
  m.vision_layers = 2;
  m.vision_arch = {{"hidden_size", "32", ""}, {"num_attention_heads", "2", ""}, {"ffn_hidden_size", "64", ""},
                   {"causal", "false", ""},   {"gated_mlp", "false", ""},       {"seq_length", "256", ""}};
  m.vision_module = "vision.layers.{i}";
  ImportOptions o;
  o.sublayers = true;
  o.vocab_shards = 2;
  Result<std::string> y = write_imported_model(m, o);
  REQUIRE_MESSAGE(y.ok(), y.status().str());
  const Spec s = load(*y);
  CHECK(layer_string(s) == "YYEAFAFAXAXAXSXLLmbyQQ");
  CHECK(s.model.types.at('A').joins_next);
  CHECK(s.model.types.at('S').joins_next);
  CHECK_FALSE(s.model.types.at('X').joins_next);
  CHECK(s.model.types.at('b').joins_next);
  CHECK(s.model.types.at('y').joins_next);
  CHECK(s.model.types.at('L').vocab_shards == 2);
  CHECK(s.model.types.at('Q').vocab_shards == 2);
  // Both sublayers of a decoder layer are its module; the MTP projection reads the embedding (2) and the
  // last decoder sublayer (14).
  CHECK(s.model.layers[3].modules == s.model.layers[4].modules);
  CHECK(s.model.layers[17].type == 'm');
  CHECK(std::set<int>(s.model.layers[17].inputs.begin(), s.model.layers[17].inputs.end()) == std::set<int>{2, 14, 16});
  CHECK(s.model.layers[0].modules == std::vector<std::string>{"vision.layers.0"});
}

TEST_CASE("model import: shared experts in one form, whichever source gave them") {
  ImportedModel m = small_model();
  add_shared_experts(m, 64, "n");  // two experts of moe_ffn_hidden_size 32
  CHECK(m.arch.back().key == "moe_shared_experts");
  CHECK(m.arch.back().value == "2");
  ImportedModel odd = small_model();
  add_shared_experts(odd, 48, "n");  // not a multiple: one expert of its own size
  CHECK(odd.arch[odd.arch.size() - 2].value == "1");
  CHECK(odd.arch.back().key == "moe_shared_ffn_hidden_size");
  CHECK(odd.arch.back().value == "48");
  REQUIRE(write_imported_model(odd, {}).ok());

  ImportedModel empty = small_model();
  empty.layers.clear();
  CHECK_FALSE(write_imported_model(empty, {}).ok());
}
