// hf_import.cpp — see hf_import.h. One reader function per family of model_types; each reads the
// fields it needs through Fields (which keeps the first error, located) and fills an ImportedModel.
#include "ir/hf_import.h"

#include "ir/limits.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

namespace ps {

namespace {

// Reads the fields of one config object; the first problem is kept in `status`.
class Fields {
 public:
  Fields(const JsonValue& obj, std::string model_type) : obj_(obj), type_(std::move(model_type)) {
    // Fields that transformers' config class defaults and real configs leave out (Gemma 3's
    // text_config lists only what differs from Gemma3TextConfig).
    static const std::map<std::string, std::vector<std::pair<const char*, long long>>> kDefaults = {
        {"gemma3_text",
         {{"vocab_size", 262208}, {"num_attention_heads", 8}, {"num_key_value_heads", 4}, {"head_dim", 256},
          {"sliding_window", 4096}, {"hidden_size", 2304}, {"intermediate_size", 9216}, {"num_hidden_layers", 26}}},
        {"gemma2",
         {{"vocab_size", 256000}, {"num_attention_heads", 8}, {"num_key_value_heads", 4}, {"head_dim", 256},
          {"sliding_window", 4096}}},
    };
    const std::string cls = type_ == "gemma3" ? "gemma3_text" : type_;
    if (auto it = kDefaults.find(cls); it != kDefaults.end()) {
      for (const auto& [k, v] : it->second) {
        if (obj_.find(k)) continue;
        JsonValue d;
        d.kind = JsonValue::Kind::kInt;
        d.integer = v;
        d.number = static_cast<double>(v);
        d.loc = obj_.loc;
        defaults_.emplace(k, std::move(d));
      }
    }
  }

  const JsonValue* get(const char* key) const {
    const JsonValue* v = obj_.find(key);
    if (!v) {
      auto it = defaults_.find(key);
      return it == defaults_.end() ? nullptr : &it->second;
    }
    return v->kind != JsonValue::Kind::kNull ? v : nullptr;
  }
  // An absent field the config's other fields determine (`source` says from what), e.g. Nemotron-H's
  // num_hidden_layers, which transformers 5 derives from layers_block_type and does not save.
  void derive(const char* key, long long v, std::string from, const SourceLoc& loc) {
    if (obj_.find(key)) return;
    JsonValue d;
    d.kind = JsonValue::Kind::kInt;
    d.integer = v;
    d.number = static_cast<double>(v);
    d.loc = loc;
    defaults_[key] = std::move(d);
    derived_[key] = std::move(from);
  }
  // The source comment of a field: its name, or that the config class's default stood in.
  std::string source(const char* key) const {
    if (auto it = derived_.find(key); it != derived_.end() && !obj_.find(key))
      return fmt::format("{} ({})", key, it->second);
    if (!obj_.find(key) && defaults_.count(key))
      return fmt::format("{} (absent: the {} default)", key, type_ == "gemma3" ? "gemma3_text" : type_);
    return key;
  }
  bool has(const char* key) const { return get(key) != nullptr; }

  // An integer the model type cannot do without (>= min_value).
  long long need(const char* key, long long min_value = 1) {
    const JsonValue* v = get(key);
    if (!v) {
      fail(fmt::format("model_type {} needs '{}', which the config does not give", type_, key), obj_.loc);
      return 1;
    }
    return integer(*v, key, min_value);
  }
  // A count of layers (or modules), within the layers a model may have (ir/limits.h).
  long long layers(const char* key, bool needed) {
    const JsonValue* v = get(key);
    if (!v && !needed) return 0;
    const long long n = need(key, needed ? 1 : 0);
    if (n > limits::kMaxLayers) {
      fail(fmt::format("'{}' is {}; a model has at most {} layers (docs/inputs.md, \"Limits\")", key, n,
                       limits::with_commas(limits::kMaxLayers)),
           v->loc);
      return 1;
    }
    return n;
  }
  // The first of `keys` that is present, else `dflt` (nullopt: absent).
  std::optional<long long> opt(std::initializer_list<const char*> keys, long long min_value = 0) {
    for (const char* k : keys)
      if (const JsonValue* v = get(k)) return integer(*v, k, min_value);
    return std::nullopt;
  }
  // The value at `key` when it is of `kind` (`what` names the kind in the error); nullptr when absent
  // or, after a located error, of another kind.
  const JsonValue* of_kind(const char* key, JsonValue::Kind kind, const char* what) {
    const JsonValue* v = get(key);
    if (v && v->kind != kind) {
      fail(fmt::format("'{}' must be {}, got {}", key, what, v->kind_name()), v->loc);
      return nullptr;
    }
    return v;
  }
  std::optional<bool> flag(const char* key) {
    const JsonValue* v = of_kind(key, JsonValue::Kind::kBool, "true or false");
    return v ? std::optional<bool>(v->boolean) : std::nullopt;
  }
  std::optional<std::string> text(const char* key) {
    const JsonValue* v = of_kind(key, JsonValue::Kind::kString, "a string");
    return v ? std::optional<std::string>(v->string) : std::nullopt;
  }
  // An array, or nullptr when absent.
  const JsonValue* list(const char* key) { return of_kind(key, JsonValue::Kind::kArray, "an array"); }
  long long integer(const JsonValue& v, const std::string& what, long long min_value) {
    long long x = 0;
    if (v.kind == JsonValue::Kind::kInt) {
      x = v.integer;
    } else if (v.kind == JsonValue::Kind::kFloat && std::isfinite(v.number) && v.number == std::floor(v.number) &&
               std::fabs(v.number) < 9e15) {
      x = static_cast<long long>(v.number);
    } else {
      const bool non_finite = v.kind == JsonValue::Kind::kFloat && !std::isfinite(v.number);
      fail(fmt::format("'{}' must be an integer, got {}", what,
                       !non_finite        ? v.kind_name()
                       : std::isnan(v.number) ? "NaN"
                       : v.number > 0     ? "Infinity"
                                          : "-Infinity"),
           v.loc);
      return std::max<long long>(min_value, 1);
    }
    if (x < min_value) {
      fail(fmt::format("'{}' must be >= {}, got {}", what, min_value, x), v.loc);
      return std::max<long long>(min_value, 1);
    }
    return x;
  }
  void fail(std::string msg, const SourceLoc& loc) {
    if (status.is_ok()) status = Status::bad_input(std::move(msg), loc);
  }
  const JsonValue& object() const { return obj_; }
  const std::string& type() const { return type_; }
  Status status;

 private:
  const JsonValue& obj_;
  std::string type_;
  std::map<std::string, JsonValue> defaults_;
  std::map<std::string, std::string> derived_;
};

void arch(ImportedModel& m, const char* key, long long v, std::string source) {
  m.arch.push_back({key, std::to_string(v), std::move(source)});
}
void arch_bool(ImportedModel& m, const char* key, bool v, std::string source) {
  m.arch.push_back({key, v ? "true" : "false", std::move(source)});
}

ModuleNaming hf_naming(const std::string& prefix) {
  return {prefix + "embed_tokens", prefix + "layers.{i}", prefix + "norm", "lm_head", prefix + "layers.{i}"};
}

// Attention numbers every family shares: h, a, kv, d, V, and the tied head.
struct Common {
  long long h = 1, a = 1, kv = 1, d = 1, layers = 1;
};
Common read_common(Fields& f, ImportedModel& m, bool tie_default, const char* head_dim_key = "head_dim") {
  Common c;
  c.h = f.need("hidden_size");
  c.layers = f.layers("num_hidden_layers", true);
  c.a = f.need("num_attention_heads");
  arch(m, "hidden_size", c.h, f.source("hidden_size"));
  arch(m, "num_attention_heads", c.a, f.source("num_attention_heads"));
  if (std::optional<long long> kv = f.opt({"num_key_value_heads"}, 1)) {
    c.kv = *kv;
    arch(m, "num_kv_heads", c.kv, f.source("num_key_value_heads"));
  } else {
    c.kv = c.a;
    arch(m, "num_kv_heads", c.kv, "num_attention_heads (no num_key_value_heads)");
  }
  if (c.kv > c.a) f.fail(fmt::format("'num_key_value_heads' ({}) must be <= num_attention_heads ({})", c.kv, c.a),
                         f.get("num_key_value_heads") ? f.get("num_key_value_heads")->loc : f.object().loc);
  const char* dkey = f.has(head_dim_key) ? head_dim_key : "head_dim";
  if (std::optional<long long> d = f.opt({dkey}, 1)) {
    c.d = *d;
    arch(m, "head_dim", c.d, f.source(dkey));
  } else {
    c.d = c.h / c.a;
    if (c.d < 1)
      f.fail(fmt::format("'hidden_size' ({}) is smaller than num_attention_heads ({}) and no head_dim is given", c.h,
                         c.a),
             f.get("hidden_size") ? f.get("hidden_size")->loc : f.object().loc);
    arch(m, "head_dim", c.d, "hidden_size / num_attention_heads");
  }
  arch(m, "vocab_size", f.need("vocab_size"), f.source("vocab_size"));
  const std::optional<bool> tied = f.flag("tie_word_embeddings");
  if (tied.value_or(tie_default)) {
    arch_bool(m, "tied_embeddings", true,
              tied ? "tie_word_embeddings" : fmt::format("tie_word_embeddings (default true for {})", f.type()));
  }
  m.header.push_back(fmt::format("Embedding and head: {} (tie_word_embeddings{}).",
                                 tied.value_or(tie_default) ? "tied, the weight counted once" : "untied",
                                 tied ? "" : ", absent: the model type's default"));
  return c;
}

// Which decoder layers are sliding-window / linear, from `layer_types` (["sliding_attention",
// "full_attention", "linear_attention", ...]); empty when absent. Errors at the bad entry.
std::vector<std::string> read_layer_types(Fields& f, long long layers) {
  std::vector<std::string> out;
  const JsonValue* lt = f.list("layer_types");
  if (!lt) return out;
  if (static_cast<long long>(lt->items.size()) != layers) {
    f.fail(fmt::format("'layer_types' has {} entries, num_hidden_layers is {}", lt->items.size(), layers), lt->loc);
    return out;
  }
  for (const JsonValue& v : lt->items) {
    if (v.kind != JsonValue::Kind::kString) {
      f.fail(fmt::format("'layer_types' entries must be strings, got {}", v.kind_name()), v.loc);
      return {};
    }
    out.push_back(v.string);
  }
  return out;
}

// Each decoder layer's mixer from `layer_types`, whose entries name one of `known` (an unknown one
// is reported at its entry and left kAttention); false, `mixer` untouched, when read_layer_types
// gives nothing.
using LayerTypeNames = std::vector<std::pair<std::string, Sublayer>>;
bool read_layer_mixers(Fields& f, long long layers, const LayerTypeNames& known, std::vector<Sublayer>& mixer) {
  const std::vector<std::string> types = read_layer_types(f, layers);
  for (size_t i = 0; i < types.size(); ++i) {
    const auto it = std::find_if(known.begin(), known.end(), [&](const auto& k) { return k.first == types[i]; });
    if (it != known.end()) {
      mixer[i] = it->second;
      continue;
    }
    std::string names;
    for (const auto& [name, s] : known) names += (names.empty() ? "'" : ", '") + name + "'";
    f.fail(fmt::format("'layer_types' entry {} is '{}' (expected one of: {})", i, types[i], names),
           f.get("layer_types")->items[i].loc);
    mixer[i] = Sublayer::kAttention;
  }
  return !types.empty();
}
const LayerTypeNames kFullOrSliding = {{"full_attention", Sublayer::kAttention},
                                       {"sliding_attention", Sublayer::kSlidingAttention}};

// A sliding window: `sliding_window` (needed when some layer slides).
void add_window(Fields& f, ImportedModel& m) {
  const long long w = f.need("sliding_window");
  m.overrides[Sublayer::kSlidingAttention].push_back({"attention_window", std::to_string(w), f.source("sliding_window")});
}

// MoE numbers: experts, top-k, expert size; shared experts when given.
void read_moe(Fields& f, ImportedModel& m, std::initializer_list<const char*> experts_keys,
              std::initializer_list<const char*> topk_keys, const char* expert_ffn_key) {
  auto first_present = [&](std::initializer_list<const char*> keys) -> const char* {
    for (const char* k : keys)
      if (f.has(k)) return k;
    return *keys.begin();
  };
  const char* ek = first_present(experts_keys);
  const char* kk = first_present(topk_keys);
  arch(m, "moe_num_experts", f.need(ek), ek);
  arch(m, "moe_top_k", f.need(kk), kk);
  arch(m, "moe_ffn_hidden_size", f.need(expert_ffn_key), expert_ffn_key);
  m.moe = true;
}

// ----------------------------------------------------------------------------------------------
// Families.

// llama, mistral, qwen2, qwen3 (dense); mixtral, minimax_m2 (MoE everywhere); qwen2_moe, qwen3_moe
// (MoE by decoder_sparse_step and mlp_only_layers); gpt_oss (MoE, layer_types).
void read_decoder(Fields& f, ImportedModel& m) {
  const std::string& t = f.type();
  const bool moe_all = t == "mixtral" || t == "gpt_oss" || t == "minimax_m2";
  const bool moe_step = t == "qwen2_moe" || t == "qwen3_moe";
  Common c = read_common(f, m, false);
  bool dense_needed = !moe_all;
  std::vector<bool> is_moe(static_cast<size_t>(c.layers), moe_all);
  if (moe_all) {
    read_moe(f, m, {"num_local_experts"}, {"num_experts_per_tok", "experts_per_token"}, "intermediate_size");
    m.header.push_back(fmt::format("Every decoder layer is MoE ({}).", t));
  }
  if (moe_step) {
    const long long experts = f.opt({"num_experts"}).value_or(0);
    const long long step = f.opt({"decoder_sparse_step"}, 1).value_or(1);
    std::set<long long> dense_only;
    if (const JsonValue* l = f.list("mlp_only_layers"))
      for (const JsonValue& v : l->items) dense_only.insert(f.integer(v, "mlp_only_layers entry", 0));
    dense_needed = experts == 0 || !dense_only.empty() || step > 1;
    for (long long i = 0; i < c.layers; ++i)
      is_moe[i] = experts > 0 && !dense_only.count(i) && (i + 1) % step == 0;
    if (experts > 0) {
      read_moe(f, m, {"num_experts"}, {"num_experts_per_tok"}, "moe_intermediate_size");
      if (long long shared = f.opt({"shared_expert_intermediate_size"}).value_or(0); shared > 0)
        add_shared_experts(m, shared, "shared_expert_intermediate_size");
    }
    m.header.push_back(fmt::format("MoE layers: every layer i with (i+1) % decoder_sparse_step ({}) == 0, "
                                   "except mlp_only_layers ({} of them).",
                                   step, dense_only.size()));
  }
  if (dense_needed) arch(m, "ffn_hidden_size", f.need("intermediate_size"), "intermediate_size");

  // Which layers slide.
  std::vector<Sublayer> mixer(static_cast<size_t>(c.layers), Sublayer::kAttention);
  if (read_layer_mixers(f, c.layers, kFullOrSliding, mixer)) {
    m.header.push_back("Attention: sliding or full per layer_types.");
  } else if ((t == "mistral" || t == "mixtral") && f.has("sliding_window")) {
    std::fill(mixer.begin(), mixer.end(), Sublayer::kSlidingAttention);
    m.header.push_back("Attention: every layer within sliding_window.");
  } else if ((t == "qwen2" || t == "qwen3" || t == "qwen2_moe" || t == "qwen3_moe") &&
             f.flag("use_sliding_window").value_or(false) && f.has("sliding_window")) {
    const long long from = f.opt({"max_window_layers"}).value_or(c.layers);
    for (long long i = from; i < c.layers; ++i) mixer[i] = Sublayer::kSlidingAttention;
    m.header.push_back("Attention: sliding (use_sliding_window) from layer max_window_layers on.");
  }
  if (std::count(mixer.begin(), mixer.end(), Sublayer::kSlidingAttention) > 0) add_window(f, m);
  for (long long i = 0; i < c.layers; ++i)
    m.layers.push_back({{mixer[i], is_moe[i] ? Sublayer::kMoe : Sublayer::kMlp}});
  m.names = hf_naming("model.");
}

// gemma2, gemma3, gemma3_text: GeGLU MLPs, tied embeddings, sliding layers by pattern.
void read_gemma(Fields& f, ImportedModel& m) {
  const std::string& t = f.type();
  Common c = read_common(f, m, true);
  arch(m, "ffn_hidden_size", f.need("intermediate_size"), f.source("intermediate_size"));
  std::vector<Sublayer> mixer(static_cast<size_t>(c.layers), Sublayer::kAttention);
  if (read_layer_mixers(f, c.layers, kFullOrSliding, mixer)) {
    m.header.push_back("Attention: sliding or full per layer_types.");
  } else if (t == "gemma2") {
    for (long long i = 0; i < c.layers; i += 2) mixer[i] = Sublayer::kSlidingAttention;
    m.header.push_back("Attention: even layers sliding, odd layers full (Gemma 2).");
  } else {
    const long long pattern = f.opt({"sliding_window_pattern"}, 1).value_or(6);
    for (long long i = 0; i < c.layers; ++i)
      if ((i + 1) % pattern != 0) mixer[i] = Sublayer::kSlidingAttention;
    m.header.push_back(fmt::format("Attention: every sliding_window_pattern-th ({}) layer full, the others sliding.",
                                   pattern));
  }
  if (std::count(mixer.begin(), mixer.end(), Sublayer::kSlidingAttention) > 0) add_window(f, m);
  for (long long i = 0; i < c.layers; ++i) m.layers.push_back({{mixer[i], Sublayer::kMlp}});
  m.names = hf_naming(m.names.layer.empty() ? "model." : m.names.layer);
}

// deepseek_v2, deepseek_v3, kimi_k2: MLA, dense-first MoE with shared experts, MTP.
void read_deepseek(Fields& f, ImportedModel& m) {
  Common c;
  c.h = f.need("hidden_size");
  c.layers = f.layers("num_hidden_layers", true);
  c.a = f.need("num_attention_heads");
  arch(m, "hidden_size", c.h, "hidden_size");
  arch(m, "num_attention_heads", c.a, "num_attention_heads");
  arch(m, "vocab_size", f.need("vocab_size"), "vocab_size");
  const bool tied = f.flag("tie_word_embeddings").value_or(false);
  if (tied) arch_bool(m, "tied_embeddings", true, "tie_word_embeddings");
  arch(m, "q_lora_rank", f.opt({"q_lora_rank"}).value_or(0),
       f.has("q_lora_rank") ? "q_lora_rank" : "q_lora_rank (null: Q not compressed)");
  arch(m, "kv_lora_rank", f.need("kv_lora_rank"), "kv_lora_rank");
  arch(m, "qk_nope_head_dim", f.need("qk_nope_head_dim"), "qk_nope_head_dim");
  arch(m, "qk_rope_head_dim", f.need("qk_rope_head_dim"), "qk_rope_head_dim");
  arch(m, "v_head_dim", f.need("v_head_dim"), "v_head_dim");
  arch(m, "ffn_hidden_size", f.need("intermediate_size"), "intermediate_size");
  const bool has_moe = f.has("n_routed_experts");
  long long first_dense = 0, freq = 1;
  if (has_moe) {
    read_moe(f, m, {"n_routed_experts"}, {"num_experts_per_tok"}, "moe_intermediate_size");
    if (long long shared = f.opt({"n_shared_experts"}).value_or(0); shared > 0)
      arch(m, "moe_shared_experts", shared, "n_shared_experts");
    first_dense = f.opt({"first_k_dense_replace"}).value_or(0);
    freq = f.opt({"moe_layer_freq"}, 1).value_or(1);
    m.header.push_back(fmt::format("MoE layers: i >= first_k_dense_replace ({}) with i % moe_layer_freq ({}) == 0; "
                                   "the others dense.",
                                   first_dense, freq));
  }
  for (long long i = 0; i < c.layers; ++i) {
    const bool moe = has_moe && i >= first_dense && i % freq == 0;
    m.layers.push_back({{Sublayer::kMla, moe ? Sublayer::kMoe : Sublayer::kMlp}});
  }
  m.mtp_modules = static_cast<int>(f.layers("num_nextn_predict_layers", false));
  m.mtp_source = "num_nextn_predict_layers";
  if (const JsonValue* v = f.get("num_nextn_predict_layers")) m.mtp_loc = v->loc;
  m.mtp_block = {{Sublayer::kMla, has_moe ? Sublayer::kMoe : Sublayer::kMlp}};
  if (m.mtp_modules > 0)
    m.header.push_back(fmt::format("MTP: {} module(s) (num_nextn_predict_layers), each a projection, one MLA + MoE "
                                   "block and its own head (the checkpoint's shared_head), reading the embedding "
                                   "and the last hidden state; their embedding copy is not counted.",
                                   m.mtp_modules));
  m.header.push_back(fmt::format("Embedding and head: {} (tie_word_embeddings).",
                                 tied ? "tied, the weight counted once" : "untied"));
  m.names = hf_naming("model.");
}

// qwen3_next: gated DeltaNet layers with a full (gated) attention layer every full_attention_interval.
void read_qwen3_next(Fields& f, ImportedModel& m) {
  Common c = read_common(f, m, false);
  const long long experts = f.opt({"num_experts"}).value_or(0);
  const long long step = f.opt({"decoder_sparse_step"}, 1).value_or(1);
  std::set<long long> dense_only;
  if (const JsonValue* l = f.list("mlp_only_layers"))
    for (const JsonValue& v : l->items) dense_only.insert(f.integer(v, "mlp_only_layers entry", 0));
  if (experts == 0 || !dense_only.empty() || step > 1)
    arch(m, "ffn_hidden_size", f.need("intermediate_size"), "intermediate_size");
  if (experts > 0) {
    read_moe(f, m, {"num_experts"}, {"num_experts_per_tok"}, "moe_intermediate_size");
    if (long long shared = f.opt({"shared_expert_intermediate_size"}).value_or(0); shared > 0)
      add_shared_experts(m, shared, "shared_expert_intermediate_size");
  }
  arch(m, "deltanet_key_heads", f.need("linear_num_key_heads"), "linear_num_key_heads");
  arch(m, "deltanet_value_heads", f.need("linear_num_value_heads"), "linear_num_value_heads");
  arch(m, "deltanet_key_head_dim", f.need("linear_key_head_dim"), "linear_key_head_dim");
  arch(m, "deltanet_value_head_dim", f.need("linear_value_head_dim"), "linear_value_head_dim");
  if (std::optional<long long> k = f.opt({"linear_conv_kernel_dim"}, 1))
    arch(m, "deltanet_conv_kernel", *k, "linear_conv_kernel_dim");
  m.overrides[Sublayer::kAttention].push_back({"attention_output_gate", "true", "Qwen3-Next gates its attention output"});
  std::vector<Sublayer> mixer(static_cast<size_t>(c.layers), Sublayer::kGatedDeltaNet);
  if (read_layer_mixers(f, c.layers, {{"full_attention", Sublayer::kAttention}, {"linear_attention", Sublayer::kGatedDeltaNet}},
                        mixer)) {
    m.header.push_back("Mixers: gated DeltaNet or full attention per layer_types.");
  } else {
    const long long interval = f.opt({"full_attention_interval"}, 1).value_or(4);
    for (long long i = 0; i < c.layers; ++i)
      if ((i + 1) % interval == 0) mixer[i] = Sublayer::kAttention;
    m.header.push_back(fmt::format("Mixers: every full_attention_interval-th ({}) layer full attention, the others "
                                   "gated DeltaNet.",
                                   interval));
  }
  for (long long i = 0; i < c.layers; ++i) {
    const bool moe = experts > 0 && !dense_only.count(i) && (i + 1) % step == 0;
    m.layers.push_back({{mixer[i], moe ? Sublayer::kMoe : Sublayer::kMlp}});
  }
  m.names = hf_naming("model.");
  // mtp_num_hidden_layers: the checkpoint's MTP weights, which transformers' Qwen3-Next does not build
  // (it skips them on load), are not imported: the model is the one a config.json describes.
  if (f.opt({"mtp_num_hidden_layers"}).value_or(0) > 0)
    m.header.push_back("MTP: the checkpoint's MTP module (mtp_num_hidden_layers) is not imported: transformers' "
                       "Qwen3-Next does not build it (about 1.6 B parameters).");
}

// minimax, minimax_m1, minimax_text_01: lightning attention with a softmax layer every few (attn_type_list
// or layer_types), MoE everywhere.
void read_minimax(Fields& f, ImportedModel& m) {
  Common c = read_common(f, m, false);
  read_moe(f, m, {"num_local_experts"}, {"num_experts_per_tok"}, "intermediate_size");
  if (long long shared = f.opt({"shared_intermediate_size"}).value_or(0); shared > 0)
    add_shared_experts(m, shared, "shared_intermediate_size");
  // Lightning attention projects K and V for every head and gates its output (MiniMax-01, section 2.2).
  m.overrides[Sublayer::kLinearAttention] = {
      {"num_kv_heads", std::to_string(c.a), "lightning attention: K and V for all num_attention_heads"},
      {"attention_output_gate", "true", "lightning attention's output gate"}};
  std::vector<Sublayer> mixer(static_cast<size_t>(c.layers), Sublayer::kAttention);
  if (const JsonValue* l = f.list("attn_type_list")) {
    if (static_cast<long long>(l->items.size()) != c.layers) {
      f.fail(fmt::format("'attn_type_list' has {} entries, num_hidden_layers is {}", l->items.size(), c.layers), l->loc);
    } else {
      for (size_t i = 0; i < l->items.size(); ++i) {
        const long long v = f.integer(l->items[i], "attn_type_list entry", 0);
        if (v > 1) f.fail(fmt::format("'attn_type_list' entries are 0 (lightning) or 1 (softmax), got {}", v), l->items[i].loc);
        mixer[i] = v == 0 ? Sublayer::kLinearAttention : Sublayer::kAttention;
      }
    }
    m.header.push_back("Attention: attn_type_list (0 lightning, 1 softmax).");
  } else {
    if (!read_layer_mixers(f, c.layers,
                           {{"full_attention", Sublayer::kAttention}, {"linear_attention", Sublayer::kLinearAttention}},
                           mixer)) {
      f.fail(fmt::format("model_type {} needs 'attn_type_list' or 'layer_types', which the config does not give",
                         f.type()),
             f.object().loc);
    }
    m.header.push_back("Attention: layer_types (linear = lightning, full = softmax).");
  }
  for (long long i = 0; i < c.layers; ++i) m.layers.push_back({{mixer[i], Sublayer::kMoe}});
  m.names = hf_naming("model.");
}

// nemotron_h: one sublayer per character of hybrid_override_pattern (configs saved by transformers 4 and
// Megatron) or per entry of layers_block_type (transformers 5, which saves no num_hidden_layers).
std::optional<std::string> nemotron_pattern(Fields& f) {
  if (!f.has("hybrid_override_pattern") && f.has("layers_block_type")) {
    const JsonValue* l = f.list("layers_block_type");
    if (!l) return std::nullopt;
    static const std::map<std::string, char> kBlock = {{"mamba", 'M'}, {"linear_attention", 'M'}, {"mlp", '-'},
                                                       {"attention", '*'}, {"full_attention", '*'}, {"moe", 'E'}};
    std::string p;
    for (const JsonValue& v : l->items) {
      auto it = v.kind == JsonValue::Kind::kString ? kBlock.find(v.string) : kBlock.end();
      if (it == kBlock.end()) {
        f.fail(fmt::format("'layers_block_type' entry {} is {} (expected mamba / linear_attention, mlp, attention / "
                           "full_attention, moe)",
                           p.size(), v.kind == JsonValue::Kind::kString ? "'" + v.string + "'" : v.kind_name()),
               v.loc);
        return std::nullopt;
      }
      p += it->second;
      if (static_cast<long long>(p.size()) > limits::kMaxLayers) break;  // refused below, by length
    }
    f.derive("num_hidden_layers", static_cast<long long>(l->items.size()), "the length of layers_block_type", l->loc);
    return p;
  }
  return f.text("hybrid_override_pattern");
}

void read_nemotron_h(Fields& f, ImportedModel& m) {
  const std::optional<std::string> pattern = nemotron_pattern(f);
  if (!f.status.is_ok()) return;
  Common c = read_common(f, m, false, "attention_head_dim");
  if (!pattern) {
    if (f.status.is_ok())
      f.fail("model_type nemotron_h needs 'hybrid_override_pattern' or 'layers_block_type', which the config does "
             "not give",
             f.object().loc);
    return;
  }
  const bool listed = !f.has("hybrid_override_pattern");
  const char* pkey = listed ? "layers_block_type" : "hybrid_override_pattern";
  const SourceLoc ploc = f.get(pkey)->loc;
  if (static_cast<long long>(pattern->size()) > limits::kMaxLayers) {
    f.fail(fmt::format("'{}' has {} {}; a model has at most {} layers (docs/inputs.md, \"Limits\")", pkey,
                       listed ? f.get(pkey)->items.size() : pattern->size(), listed ? "entries" : "characters",
                       limits::with_commas(limits::kMaxLayers)),
           ploc);
    return;
  }
  if (static_cast<long long>(pattern->size()) != c.layers) {
    f.fail(fmt::format("'{}' has {} {}, num_hidden_layers is {}", pkey, pattern->size(),
                       listed ? "entries" : "characters", c.layers),
           ploc);
  }
  bool mamba = false, mlp = false, moe = false;
  for (size_t i = 0; i < pattern->size(); ++i) {
    const char ch = (*pattern)[i];
    Sublayer s = Sublayer::kMamba;
    switch (ch) {
      case 'M':
        s = Sublayer::kMamba, mamba = true;
        break;
      case '-':
        s = Sublayer::kMlp, mlp = true;
        break;
      case '*':
        s = Sublayer::kAttention;
        break;
      case 'E':
        s = Sublayer::kMoe, moe = true;
        break;
      default: {
        SourceLoc at = ploc;
        at.col += static_cast<int>(i) + 1;  // past the opening quote
        f.fail(fmt::format("'hybrid_override_pattern' character {} is '{}' (expected M Mamba-2, - MLP, * attention, "
                           "E MoE)",
                           i, std::string(1, ch)),
               at);
        return;
      }
    }
    m.layers.push_back({{s}});
  }
  const std::string act = f.text("mlp_hidden_act").value_or("relu2");
  const bool gated = act != "relu2" && act != "relu" && act != "gelu";
  if (mlp) arch(m, "ffn_hidden_size", f.need("intermediate_size"), "intermediate_size");
  if (mlp || moe) arch_bool(m, "gated_mlp", gated, fmt::format("mlp_hidden_act {}", act));
  if (moe) {
    read_moe(f, m, {"n_routed_experts"}, {"num_experts_per_tok"}, "moe_intermediate_size");
    // moe_shared_expert_intermediate_size is all shared experts' hidden units (n_shared_experts of them).
    if (long long shared = f.opt({"moe_shared_expert_intermediate_size"}).value_or(0); shared > 0)
      add_shared_experts(m, shared, "moe_shared_expert_intermediate_size");
  }
  if (mamba) {
    arch(m, "mamba_state_size", f.need("ssm_state_size"), "ssm_state_size");
    arch(m, "mamba_num_heads", f.need("mamba_num_heads"), "mamba_num_heads");
    arch(m, "mamba_head_dim", f.need("mamba_head_dim"), "mamba_head_dim");
    arch(m, "mamba_groups", f.opt({"n_groups"}, 1).value_or(8), f.has("n_groups") ? "n_groups" : "n_groups (default 8)");
    if (std::optional<long long> k = f.opt({"conv_kernel"}, 1)) arch(m, "mamba_conv_kernel", *k, "conv_kernel");
    if (std::optional<long long> q = f.opt({"chunk_size"}, 1)) arch(m, "mamba_chunk_size", *q, "chunk_size");
  }
  m.header.push_back(listed ? "Layers: one per entry of layers_block_type (mamba, mlp, attention, moe), as Megatron's "
                              "hybrid models count them."
                            : "Layers: one per character of hybrid_override_pattern (M Mamba-2, - MLP, * attention, E "
                              "MoE), as Megatron's hybrid models count them.");
  // transformers 5's NemotronHForCausalLM names its modules model.*; checkpoints store them as
  // backbone.* and transformers renames them on load.
  m.names = {"model.embeddings", "model.layers.{i}", "model.norm_f", "lm_head", "model.layers.{i}"};
  m.header.push_back("Module names: transformers' NemotronHForCausalLM (model.embeddings, model.layers.N, "
                     "model.norm_f, lm_head); its checkpoints store them as backbone.embeddings, backbone.layers.N, "
                     "backbone.norm_f, which transformers renames on load.");
  if (f.opt({"num_nextn_predict_layers"}).value_or(0) > 0)
    m.header.push_back("MTP: num_nextn_predict_layers MTP layers are not imported: transformers' NemotronHForCausalLM "
                       "does not build them.");
}

// Gemma 3's SigLIP vision tower (vision_config): num_hidden_layers non-causal pre-norm blocks of
// attention + GELU MLP over (image_size / patch_size)^2 patches of one image per sequence. The patch
// embedding, position embeddings and the projector (together ~0.2 % of Gemma-3-4B) are not modelled.
Status read_vision(const JsonValue& vc, ImportedModel& m) {
  Fields f(vc, "siglip_vision_model");
  const long long h = f.opt({"hidden_size"}, 1).value_or(1152);
  const long long a = f.opt({"num_attention_heads"}, 1).value_or(16);
  const long long ffn = f.opt({"intermediate_size"}, 1).value_or(4304);
  const long long n = f.has("num_hidden_layers") ? f.layers("num_hidden_layers", true) : 27;
  const long long img = f.opt({"image_size"}, 1).value_or(896);
  const long long patch = f.opt({"patch_size"}, 1).value_or(14);
  if (!f.status.is_ok()) return f.status;
  const long long side = img / patch;  // patches along an image side
  if (side < 1 || side > 100'000)
    return Status::bad_input(fmt::format("vision_config: image_size / patch_size is {} / {}; expected 1 .. 100,000 "
                                         "patches a side",
                                         img, patch),
                             vc.loc);
  if (h % a != 0)
    return Status::bad_input(fmt::format("vision_config: hidden_size ({}) must be a multiple of num_attention_heads ({})", h, a), vc.loc);
  m.vision_layers = static_cast<int>(n);
  m.vision_arch = {{"hidden_size", std::to_string(h), ""},      {"num_attention_heads", std::to_string(a), ""},
                   {"num_kv_heads", std::to_string(a), ""},     {"head_dim", std::to_string(h / a), ""},
                   {"ffn_hidden_size", std::to_string(ffn), ""}, {"gated_mlp", "false", ""},
                   {"causal", "false", ""},                     {"seq_length", std::to_string(side * side), ""}};
  m.vision_module = "model.vision_tower.vision_model.encoder.layers.{i}";
  m.header.push_back(fmt::format("Vision: {} SigLIP encoder layers (vision_config: hidden_size {}, {} heads, MLP {}, "
                                 "non-causal) over ({} / {})^2 = {} patches, one image per sequence, feeding the text "
                                 "embedding; patch embedding and projector not modelled.",
                                 n, h, a, ffn, img, patch, side * side));
  return Status::ok();
}

// Fields that change a model's parameters or FLOPs in a way the analytic model cannot express: present
// with anything but null or 0, they are refused by name (importing without them would write a model
// of another size without a word).
struct Unmodelled {
  const char* key;
  const char* model_type;  // nullptr: every model type
  const char* what;
};
constexpr Unmodelled kUnmodelled[] = {
    {"moe_latent_size", nullptr, "LatentMoE: routed experts that compute in a smaller latent space"},
    {"num_nextn_predict_layers", "nemotron_h", "multi-token-prediction layers, which the import builds for "
                                               "DeepSeek-style models only"},
};

Status refuse_unmodelled(const JsonValue& obj, const std::string& type) {
  for (const Unmodelled& u : kUnmodelled) {
    if (u.model_type && type != u.model_type) continue;
    const JsonValue* v = obj.find(u.key);
    if (!v || v->kind == JsonValue::Kind::kNull || (v->is_number() && v->number == 0)) continue;
    return Status::bad_input(fmt::format("'{}' changes the model's parameters and FLOPs ({}), which the analytic "
                                         "model does not describe; write the model YAML by hand (docs/inputs.md)",
                                         u.key, u.what),
                             v->loc);
  }
  return Status::ok();
}

struct Family {
  std::vector<const char*> types;
  std::function<void(Fields&, ImportedModel&)> read;
};
const std::vector<Family>& families() {
  static const std::vector<Family> k = {
      {{"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gpt_oss", "minimax_m2"},
       read_decoder},
      {{"qwen3_next"}, read_qwen3_next},
      {{"gemma2", "gemma3", "gemma3_text"}, read_gemma},
      {{"deepseek_v2", "deepseek_v3", "kimi_k2"}, read_deepseek},
      {{"minimax", "minimax_m1", "minimax_text_01"}, read_minimax},
      {{"nemotron_h"}, read_nemotron_h},
  };
  return k;
}

}  // namespace

std::string hf_model_types() {
  std::string s;
  for (const Family& f : families())
    for (const char* t : f.types) s += (s.empty() ? "" : ", ") + std::string(t);
  return s;
}

Result<ImportedModel> hf_model(const JsonValue& config, const std::string& name) {
  if (config.kind != JsonValue::Kind::kObject)
    return Status::bad_input(fmt::format("a config.json holds an object, got {}", config.kind_name()), config.loc);
  const JsonValue* mt = config.find("model_type");
  if (!mt || mt->kind != JsonValue::Kind::kString) {
    return Status::bad_input(
        fmt::format("{} (supported: {}; docs/inputs.md, \"Import\"; other models: write the model YAML by hand, "
                    "docs/inputs.md)",
                    mt ? fmt::format("'model_type' must be a string, got {}", mt->kind_name())
                       : std::string("the config has no 'model_type'"),
                    hf_model_types()),
        mt ? mt->loc : config.loc);
  }
  // A multimodal Gemma 3 config holds the language model in text_config (the vision tower is not
  // imported).
  const JsonValue* obj = &config;
  std::string type = mt->string;
  std::string prefix;
  if (type == "gemma3") {
    // Objects, or null (transformers' Gemma3Config then takes the defaults); anything else is refused
    // at the value rather than read as the defaults.
    for (const char* key : {"text_config", "vision_config"}) {
      const JsonValue* v = config.find(key);
      if (v && v->kind != JsonValue::Kind::kObject && v->kind != JsonValue::Kind::kNull)
        return Status::bad_input(fmt::format("'{}' must be an object, got {}", key, v->kind_name()), v->loc);
    }
    if (const JsonValue* tc = config.find("text_config"); tc && tc->kind == JsonValue::Kind::kObject) {
      obj = tc;
      prefix = "model.language_model.";
    }
  }
  const Family* fam = nullptr;
  for (const Family& f : families())
    for (const char* t : f.types)
      if (type == t) fam = &f;
  if (!fam) {
    return Status::bad_input(
        fmt::format("model_type '{}' is not one pipesmith imports (supported: {}); write the model YAML by hand "
                    "(docs/inputs.md)",
                    type, hf_model_types()),
        mt->loc);
  }
  ImportedModel m;
  m.name = name;
  std::string arch_names;
  if (const JsonValue* a = config.find("architectures"); a && a->kind == JsonValue::Kind::kArray)
    for (const JsonValue& v : a->items)
      if (v.kind == JsonValue::Kind::kString) arch_names += (arch_names.empty() ? "" : ", ") + v.string;
  m.header.push_back(fmt::format("{}: imported by `pipesmith import hf` from {} (model_type {}{}).", name,
                                 std::filesystem::path(mt->loc.file.str()).filename().string(), type,
                                 arch_names.empty() ? "" : ", " + arch_names));
  if (obj != &config) m.header.push_back("The language model of a multimodal config is its text_config.");
  m.header.push_back("Each architecture number names the config field it came from; seq_length and micro_batch_size "
                     "are the import's (a config.json has no training shape).");
  m.header.push_back("Approximated (docs/inputs.md, \"Import\"): biases, q/k norms, attention sinks, router score "
                     "biases and softcaps are not modelled (well under 1 % of parameters and FLOPs); bf16 throughout.");
  Fields f(*obj, type);
  if (!prefix.empty()) m.names.layer = prefix;
  fam->read(f, m);
  if (!f.status.is_ok()) return f.status;
  PS_RETURN_IF_ERROR(refuse_unmodelled(*obj, type));
  if (obj != &config) {
    if (const JsonValue* vc = config.find("vision_config"); vc && vc->kind == JsonValue::Kind::kObject) {
      Status st = read_vision(*vc, m);
      if (!st.is_ok()) return st;
    }
  }
  return m;
}

Result<std::string> import_hf_config(const std::string& config_path, const ImportOptions& opt) {
  Result<JsonValue> j = load_config_json(config_path);
  if (!j.ok()) return j.status();
  std::string name = std::filesystem::path(config_path).stem().string();
  // YAML-safe: letters, digits, '-', '_', '.'.
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
  if (name.empty()) name = "model";
  Result<ImportedModel> m = hf_model(*j, name);
  if (!m.ok()) return m.status();
  return write_imported_model(*m, opt);
}

}  // namespace ps
