// model.cpp — reading model / cluster / pipeline YAML (schema 1) into a Spec, and validating a
// Spec.
//
// Guarantees: every rejection is a bad-input Status located at the offending key or value
// (file:line:col, 1-based); yaml-cpp exceptions never escape; unknown keys are errors; a layer type
// with a `kind:` gets the numbers it does not give explicitly from ir/cost_model.h. docs/inputs.md
// is the user-facing description of everything accepted here.
#include "ir/model.h"
#include "ir/units.h"
#include "ir/yaml_util.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "ir/cost_model.h"
#include "ir/input_file.h"
#include "ir/limits.h"

namespace ps {

namespace {

constexpr int kSchemaVersion = 1;
constexpr long long kMaxLayers = limits::kMaxLayers;

// ---------------------------------------------------------------------------------------------
// YAML access with locations.

struct Ctx {
  std::string file;       // name used in messages
  std::string_view text;  // the source text (to locate symbols inside the layer string)
};

SourceLoc file_loc(const Ctx& c) {
  return SourceLoc{c.file, 0, 0};
}

SourceLoc loc_of(const Ctx& c, const YAML::Node& n, const SourceLoc& fallback) {
  return yamlu::loc_of(n, c.file, fallback.valid() ? fallback : SourceLoc{});
}

// What a node holds, in words, for "expected X, got Y" messages.
std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  std::string s = n.Scalar();
  if (s.size() > 40) s = s.substr(0, 40) + "...";
  return fmt::format("'{}'", s);
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const std::string& x : v) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

// Maps are read by the shared reader (ir/yaml_util.h): one wording for unknown and duplicate keys.
using yamlu::Entries;
using yamlu::Entry;

// Scalar fields, read by ir/yaml_util.h's conversions (the one strictness and wording of every YAML
// reader); messages name the field as `what.key` and point at the value.
std::string field_name(const Entry& e, const std::string& what) { return fmt::format("{}.{}", what, e.key); }

Result<double> get_number(const Entry& e, const std::string& what) {
  return yamlu::to_double(e.value, e.value_loc.file, field_name(e, what), e.value_loc);
}

Result<long long> get_int(const Entry& e, const std::string& what) {
  return yamlu::to_int(e.value, e.value_loc.file, field_name(e, what), e.value_loc);
}

Result<bool> get_bool(const Entry& e, const std::string& what) {
  return yamlu::to_bool(e.value, e.value_loc.file, field_name(e, what), e.value_loc);
}

Result<std::string> get_string(const Entry& e, const std::string& what) {
  Result<std::string> s = yamlu::to_string(e.value, e.value_loc.file, field_name(e, what), e.value_loc);
  if (s.ok() && s->empty())
    return Status::bad_input(fmt::format("{}: expected a non-empty string, got ''", field_name(e, what)), e.value_loc);
  return s;
}

// Number with a lower bound: strict (> min) or not (>= min).
Result<double> get_number_min(const Entry& e, const std::string& what, double min, bool strict) {
  Result<double> v = get_number(e, what);
  if (!v.ok()) return v;
  if (strict ? !(*v > min) : !(*v >= min)) {
    return Status::bad_input(fmt::format("{}: {} must be {} {}, got {}", what, e.key,
                                         strict ? ">" : ">=", min, e.value.Scalar()),
                             e.value_loc);
  }
  return v;
}

// An integer field that sizes the problem, checked against its entry of the options table (ir/limits.h).
Result<long long> get_option(const Entry& e, const std::string& what, const limits::IntOption& o) {
  Result<long long> v = get_int(e, what);
  if (!v.ok()) return v;
  if (Status st = limits::check_option(o, *v, field_name(e, what), e.value_loc); !st) return st;
  return v;
}

Result<long long> get_int_min(const Entry& e, const std::string& what, long long min) {
  Result<long long> v = get_int(e, what);
  if (!v.ok()) return v;
  if (*v < min) {
    return Status::bad_input(fmt::format("{}: {} must be >= {}, got {}", what, e.key, min, *v),
                             e.value_loc);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Analytic blocks.

struct ArchInt {
  const char* key;
  std::optional<long long> Architecture::*field;
  long long min;
};
const std::vector<ArchInt>& arch_ints() {
  static const std::vector<ArchInt> k = {
      {"hidden_size", &Architecture::hidden_size, 1},
      {"ffn_hidden_size", &Architecture::ffn_hidden_size, 1},
      {"num_attention_heads", &Architecture::num_attention_heads, 1},
      {"num_kv_heads", &Architecture::num_kv_heads, 1},
      {"head_dim", &Architecture::head_dim, 1},
      {"vocab_size", &Architecture::vocab_size, 1},
      {"vocab_shards", &Architecture::vocab_shards, 1},
      {"seq_length", &Architecture::seq_length, 1},
      {"micro_batch_size", &Architecture::micro_batch_size, 1},
      {"moe_num_experts", &Architecture::moe_num_experts, 1},
      {"moe_top_k", &Architecture::moe_top_k, 1},
      {"moe_ffn_hidden_size", &Architecture::moe_ffn_hidden_size, 1},
      {"moe_shared_experts", &Architecture::moe_shared_experts, 0},
      {"moe_shared_ffn_hidden_size", &Architecture::moe_shared_ffn_hidden_size, 0},
      {"q_lora_rank", &Architecture::q_lora_rank, 0},
      {"kv_lora_rank", &Architecture::kv_lora_rank, 1},
      {"qk_nope_head_dim", &Architecture::qk_nope_head_dim, 1},
      {"qk_rope_head_dim", &Architecture::qk_rope_head_dim, 1},
      {"v_head_dim", &Architecture::v_head_dim, 1},
      {"mamba_state_size", &Architecture::mamba_state_size, 1},
      {"mamba_num_heads", &Architecture::mamba_num_heads, 1},
      {"mamba_expand", &Architecture::mamba_expand, 1},
      {"mamba_head_dim", &Architecture::mamba_head_dim, 1},
      {"mamba_groups", &Architecture::mamba_groups, 1},
      {"mamba_conv_kernel", &Architecture::mamba_conv_kernel, 1},
      {"mamba_chunk_size", &Architecture::mamba_chunk_size, 1},
      {"attention_window", &Architecture::attention_window, 0},
      {"linear_attention_block", &Architecture::linear_attention_block, 1},
      {"deltanet_key_heads", &Architecture::deltanet_key_heads, 1},
      {"deltanet_value_heads", &Architecture::deltanet_value_heads, 1},
      {"deltanet_key_head_dim", &Architecture::deltanet_key_head_dim, 1},
      {"deltanet_value_head_dim", &Architecture::deltanet_value_head_dim, 1},
      {"deltanet_conv_kernel", &Architecture::deltanet_conv_kernel, 1},
      {"deltanet_chunk_size", &Architecture::deltanet_chunk_size, 1},
  };
  return k;
}
struct ArchBool {
  const char* key;
  std::optional<bool> Architecture::*field;
};
const std::vector<ArchBool>& arch_bools() {
  static const std::vector<ArchBool> k = {
      {"causal", &Architecture::causal},
      {"gated_mlp", &Architecture::gated_mlp},
      {"flash_attention", &Architecture::flash_attention},
      {"dropout", &Architecture::dropout},
      {"attention_output_gate", &Architecture::attention_output_gate},
      {"tied_embeddings", &Architecture::tied_embeddings},
  };
  return k;
}

Result<Architecture> parse_architecture(const Ctx& c, const Entry& e, const std::string& what) {
  std::vector<std::string_view> allowed;
  for (const ArchInt& f : arch_ints()) allowed.push_back(f.key);
  for (const ArchBool& f : arch_bools()) allowed.push_back(f.key);
  allowed.push_back("dtype_bytes");
  Result<Entries> m = yamlu::read_entries(e.value, allowed, c.file, what, e.value_loc);
  if (!m.ok()) return m.status();
  Architecture a;
  for (const Entry& x : m->entries) {
    bool done = false;
    for (const ArchInt& f : arch_ints()) {
      if (x.key != f.key) continue;
      Result<long long> v = get_int_min(x, what, f.min);
      if (!v.ok()) return v.status();
      a.*(f.field) = *v;
      done = true;
    }
    for (const ArchBool& f : arch_bools()) {
      if (x.key != f.key) continue;
      Result<bool> v = get_bool(x, what);
      if (!v.ok()) return v.status();
      a.*(f.field) = *v;
      done = true;
    }
    if (!done) {  // dtype_bytes
      Result<double> v = get_number_min(x, what, 0, true);
      if (!v.ok()) return v.status();
      a.dtype_bytes = *v;
    }
  }
  return a;
}

Result<Hardware> parse_hardware(const Ctx& c, const Entry& e, const std::string& what) {
  Result<Entries> m =
      yamlu::read_entries(e.value, {"peak_tflops", "achievable_fraction", "hbm_gb_per_s", "moe_achievable_fraction"},
                          c.file, what, e.value_loc);
  if (!m.ok()) return m.status();
  Hardware h;
  for (const Entry& x : m->entries) {
    Result<double> v = get_number_min(x, what, 0, true);
    if (!v.ok()) return v.status();
    bool fraction = x.key == "achievable_fraction" || x.key == "moe_achievable_fraction";
    if (fraction && *v > 1) {
      return Status::bad_input(
          fmt::format("{}: {} must be in (0, 1], got {}", what, x.key, x.value.Scalar()),
          x.value_loc);
    }
    if (x.key == "peak_tflops") h.peak_tflops = *v;
    if (x.key == "achievable_fraction") h.achievable_fraction = *v;
    if (x.key == "hbm_gb_per_s") h.hbm_gb_per_s = *v;
    if (x.key == "moe_achievable_fraction") h.moe_achievable_fraction = *v;
  }
  return h;
}

// ---------------------------------------------------------------------------------------------
// Drafts: what the files say, before derivation, overrides and validation.

struct CostField {
  const char* key;
  double LayerType::*field;
  double DerivedCosts::*derived;
};
constexpr int kNumCostFields = 7;
const std::array<CostField, kNumCostFields>& cost_fields() {
  static const std::array<CostField, kNumCostFields> k = {{
      {"forward_ms", &LayerType::forward_ms, &DerivedCosts::forward_ms},
      {"backward_input_ms", &LayerType::backward_input_ms, &DerivedCosts::backward_input_ms},
      {"backward_weight_ms", &LayerType::backward_weight_ms, &DerivedCosts::backward_weight_ms},
      {"activation_mb", &LayerType::activation_mb, &DerivedCosts::activation_mb},
      {"wgrad_stash_mb", &LayerType::wgrad_stash_mb, &DerivedCosts::wgrad_stash_mb},
      {"output_mb", &LayerType::output_mb, &DerivedCosts::output_mb},
      {"params_m", &LayerType::params_m, &DerivedCosts::params_m},
  }};
  return k;
}
constexpr int kActivationField = 3;
constexpr int kStashField = 4;

struct TypeDraft {
  LayerType type;
  std::array<std::optional<SourceLoc>, kNumCostFields> given;  // where each explicit number is
  std::vector<Component> components;                           // from `kind:`
  SourceLoc kind_loc;
  SourceLoc joins_next_loc;  // where `joins_next:` is
  Architecture arch;  // the type's own architecture block
  // The `recompute:` block: per option (0 full, 1 selective) the numbers given and where.
  struct RecomputeGiven {
    std::optional<double> ms, kept_mb;
    SourceLoc ms_loc, kept_loc;
  };
  std::array<RecomputeGiven, 2> recompute;
};

struct ClusterDraft {
  Cluster cluster;
  Hardware hw;
  bool devices_given = false;
  bool inter_node_link_given = false;
  ParallelInput parallel;  // the cluster file's `parallel:` section
};

struct Draft {
  Spec spec;
  std::vector<TypeDraft> types;  // in file order
  Architecture arch;
  Hardware model_hw;
  bool has_cluster = false;
  ClusterDraft cluster;
  bool microbatches_given = false;
  ParallelInput parallel;  // the model file's `parallel:` section
};

std::string type_what(char sym) {
  return fmt::format("layer type '{}'", sym);
}

// `recompute: {full: {ms: 3.1, kept_mb: 33.5}, selective: {ms: 0.4}}`: either option, either number.
Status parse_recompute_block(const Ctx& c, const Entry& e, const std::string& what,
                             std::array<TypeDraft::RecomputeGiven, 2>& out) {
  const std::string rwhat = what + " recompute";
  Result<Entries> m = yamlu::read_entries(e.value, {"full", "selective"}, c.file, rwhat, e.value_loc);
  if (!m.ok()) return m.status();
  for (const Entry& opt : m->entries) {
    TypeDraft::RecomputeGiven& g = out[opt.key == "full" ? 0 : 1];
    const std::string owhat = rwhat + " " + opt.key;
    Result<Entries> om = yamlu::read_entries(opt.value, {"ms", "kept_mb"}, c.file, owhat, opt.value_loc);
    if (!om.ok()) return om.status();
    for (const Entry& x : om->entries) {
      Result<double> v = get_number_min(x, owhat, 0, false);
      if (!v.ok()) return v.status();
      if (x.key == "ms") {
        g.ms = *v;
        g.ms_loc = x.value_loc;
      } else {
        g.kept_mb = *v;
        g.kept_loc = x.value_loc;
      }
    }
  }
  return Status::ok();
}

Result<TypeDraft> parse_layer_type(const Ctx& c, char sym, const Entry& e) {
  std::string what = type_what(sym);
  std::vector<std::string_view> allowed = {"name", "kind"};
  for (const CostField& f : cost_fields()) allowed.push_back(f.key);
  allowed.push_back("backward_ms");
  allowed.push_back("weight_walk_ms");
  allowed.push_back("split_backward");
  allowed.push_back("joins_next");
  allowed.push_back("architecture");
  allowed.push_back("recompute");
  Result<Entries> m = yamlu::read_entries(e.value, allowed, c.file, what, e.value_loc);
  if (!m.ok()) return m.status();
  TypeDraft d;
  d.type.symbol = sym;
  d.type.loc = e.key_loc;
  for (const Entry& x : m->entries) {
    if (x.key == "name") {
      Result<std::string> v = get_string(x, what);
      if (!v.ok()) return v.status();
      d.type.name = *v;
    } else if (x.key == "kind") {
      Result<std::string> v = get_string(x, what);
      if (!v.ok()) return v.status();
      Result<std::vector<Component>> k = parse_kind(*v);
      if (!k.ok())
        return Status::bad_input(fmt::format("{}: {}", what, k.status().message()), x.value_loc);
      d.type.kind = *v;
      d.components = *k;
      d.kind_loc = x.value_loc;
    } else if (x.key == "split_backward") {
      Result<bool> v = get_bool(x, what);
      if (!v.ok()) return v.status();
      d.type.split_backward = *v;
    } else if (x.key == "joins_next") {
      Result<bool> v = get_bool(x, what);
      if (!v.ok()) return v.status();
      d.type.joins_next = *v;
      d.joins_next_loc = x.value_loc;
    } else if (x.key == "architecture") {
      Result<Architecture> a = parse_architecture(c, x, what + " architecture");
      if (!a.ok()) return a.status();
      d.arch = *a;
    } else if (x.key == "recompute") {
      PS_RETURN_IF_ERROR(parse_recompute_block(c, x, what, d.recompute));
    } else if (x.key == "backward_ms") {
      Result<double> v = get_number_min(x, what, 0, false);
      if (!v.ok()) return v.status();
      d.type.backward_ms = *v;
    } else if (x.key == "weight_walk_ms") {
      Result<double> v = get_number_min(x, what, 0, false);
      if (!v.ok()) return v.status();
      d.type.weight_walk_ms = *v;
    } else {
      for (int i = 0; i < kNumCostFields; ++i) {
        if (x.key != cost_fields()[i].key) continue;
        Result<double> v = get_number_min(x, what, 0, false);
        if (!v.ok()) return v.status();
        d.type.*(cost_fields()[i].field) = *v;
        d.given[i] = x.value_loc;
      }
    }
  }
  if (d.type.name.empty()) d.type.name = d.type.kind.empty() ? std::string(1, sym) : d.type.kind;
  return d;
}

// Locations of the non-whitespace symbols of a layer string, found in the source text in one pass.
// Where the text cannot be matched (escapes, folding) the rest fall back to the scalar's own location.
std::vector<SourceLoc> symbol_locs(const Ctx& c, const YAML::Node& scalar, const std::string& symbols,
                                   const SourceLoc& fallback) {
  std::vector<SourceLoc> locs;
  locs.reserve(symbols.size());
  auto finish = [&] {
    locs.resize(symbols.size(), fallback);
    return locs;
  };
  YAML::Mark m = scalar.Mark();
  if (m.is_null() || m.pos < 0 || static_cast<size_t>(m.pos) >= c.text.size()) return finish();
  size_t pos = static_cast<size_t>(m.pos);
  int line = m.line + 1, col = m.column + 1;
  auto advance = [&] {
    if (c.text[pos] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    ++pos;
  };
  char quote = 0;
  if (c.text[pos] == '"' || c.text[pos] == '\'') {
    quote = c.text[pos];
    advance();
  } else if (c.text[pos] == '|' || c.text[pos] == '>') {
    while (pos < c.text.size() && c.text[pos] != '\n') advance();
  }
  while (pos < c.text.size() && locs.size() < symbols.size()) {
    char ch = c.text[pos];
    if (quote && ch == quote) break;
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      advance();
      continue;
    }
    if (ch != symbols[locs.size()]) break;
    locs.push_back(SourceLoc{c.file, line, col});
    advance();
  }
  return finish();
}

struct PendingInput {
  int layer;
  long long producer;
  SourceLoc loc;
};

std::string symbol_list(const Draft& d) {
  std::vector<std::string> syms;
  for (const TypeDraft& t : d.types) syms.push_back(std::string(1, t.type.symbol));
  return join(syms);
}

// A `module:` template: a framework module name of letters, digits, '_' and '.', in which "{i}"
// stands for how many earlier copies used the same template ("layers.{i}" → layers.0, layers.1, ...).
Status check_module_template(const std::string& t, const std::string& what, const SourceLoc& loc) {
  if (t.empty()) return Status::bad_input(fmt::format("{}: module must be a non-empty name", what), loc);
  for (size_t k = 0; k < t.size(); ++k) {
    const char ch = t[k];
    if (ch == '{') {
      if (t.compare(k, 3, "{i}") != 0)
        return Status::bad_input(
            fmt::format("{}: module '{}': the only placeholder is '{{i}}' (the copy number), got '{}'", what, t,
                        t.substr(k, std::min<size_t>(t.find('}', k) == std::string::npos ? t.size() - k
                                                                                        : t.find('}', k) - k + 1,
                                                     12))),
            loc);
      k += 2;
      continue;
    }
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.'))
      return Status::bad_input(fmt::format("{}: module '{}': character '{}' is not allowed (module names are "
                                           "letters, digits, '_' and '.', with '{{i}}' for the copy number)",
                                           what, t, ch),
                               loc);
  }
  if (t.front() == '.' || t.back() == '.' || t.find("..") != std::string::npos)
    return Status::bad_input(fmt::format("{}: module '{}' is not a dotted name (an empty part)", what, t), loc);
  return Status::ok();
}

// `module:` of a layer entry: one template, or a list of them (a layer made of several modules,
// e.g. [norm, output]).
Result<std::vector<std::string>> read_module_templates(const Ctx& c, const Entry& e, const std::string& what) {
  std::vector<std::string> out;
  if (e.value.IsScalar()) {
    out.push_back(e.value.Scalar());
    PS_RETURN_IF_ERROR(check_module_template(out.back(), what, e.value_loc));
    return out;
  }
  if (!e.value.IsSequence() || e.value.size() == 0)
    return Status::bad_input(fmt::format("{}: module must be a module name like \"layers.{{i}}\" or a non-empty "
                                         "list of names, got {}",
                                         what, describe(e.value)),
                             e.value_loc);
  for (const YAML::Node& n : e.value) {
    SourceLoc nloc = loc_of(c, n, e.value_loc);
    if (!n.IsScalar())
      return Status::bad_input(fmt::format("{}: module list entries must be names, got {}", what, describe(n)), nloc);
    out.push_back(n.Scalar());
    PS_RETURN_IF_ERROR(check_module_template(out.back(), what, nloc));
  }
  return out;
}

std::string expand_module(const std::string& t, int copy) {
  std::string out;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t.compare(k, 3, "{i}") == 0) {
      out += std::to_string(copy);
      k += 2;
    } else {
      out += t[k];
    }
  }
  return out;
}

// One module name on layers that are not consecutive would make two stages claim it.
Status check_module_runs(const std::vector<Layer>& layers, const std::vector<SourceLoc>& module_loc) {
  std::map<std::string, int> last_at;
  for (const Layer& l : layers)
    for (const std::string& m : l.modules) {
      auto it = last_at.find(m);
      if (it != last_at.end() && it->second < l.id - 1)
        return Status::bad_input(fmt::format("model.layers: module '{}' names layer {} and again layer {}; a module "
                                             "name may only cover consecutive layers (use '{{i}}' to number copies)",
                                             m, it->second, l.id),
                                 module_loc[l.id]);
      last_at[m] = l.id;
    }
  return Status::ok();
}

// The layers being read: the model's, and what is resolved once all are known.
struct LayersDraft {
  std::vector<Layer>& layers;
  std::vector<PendingInput> pending;         // extra inputs, checked once every layer is known
  std::vector<SourceLoc> module_loc;         // per layer: its entry's `module:`
  std::map<std::string, int> module_copies;  // template → copies numbered so far
};

// `layers: "EttttL"`: one layer per symbol.
Status parse_layer_string(const Ctx& c, const Entry& e, const Draft& d, LayersDraft& ld) {
  std::vector<Layer>& layers = ld.layers;
  auto known = [&](char s) { return d.spec.model.types.count(s) > 0; };
  std::string symbols;
  for (char ch : e.value.Scalar()) {
    if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') symbols.push_back(ch);
  }
  if (symbols.size() > static_cast<size_t>(kMaxLayers)) {
    return Status::bad_input(
        fmt::format("model.layers: at most {} layers are supported", kMaxLayers), e.value_loc);
  }
  const std::vector<SourceLoc> locs = symbol_locs(c, e.value, symbols, e.value_loc);
  for (size_t i = 0; i < symbols.size(); ++i) {
    const SourceLoc& sloc = locs[i];
    if (!known(symbols[i])) {
      return Status::bad_input(
          fmt::format("model.layers: unknown layer type '{}' at layer {} (defined "
                      "types: {})",
                      excerpt(std::string_view(&symbols[i], 1)), i, symbol_list(d)),
          sloc);
    }
    Layer l;
    l.id = static_cast<int>(i);
    l.type = symbols[i];
    l.loc = sloc;
    layers.push_back(l);
  }
  return Status::ok();
}

// One entry of `layers: [{type: X, repeat: N, inputs: [...], module: ...}, ...]`.
Status parse_layer_entry(const Ctx& c, const Entry& e, const YAML::Node& item, int index, const Draft& d,
                         LayersDraft& ld) {
  std::vector<Layer>& layers = ld.layers;
  auto known = [&](char s) { return d.spec.model.types.count(s) > 0; };
  std::string what = fmt::format("model.layers[{}]", index);
  SourceLoc iloc = loc_of(c, item, e.value_loc);
  Result<Entries> m = yamlu::read_entries(item, {"type", "repeat", "inputs", "module"}, c.file, what, iloc);
  if (!m.ok()) return m.status();
  const Entry* te = m->find("type");
  if (!te)
    return Status::bad_input(fmt::format("{}: missing 'type' (a layer type symbol)", what),
                             iloc);
  // One symbol, or a pattern of several ("AX": attention then MoE) that `repeat` copies whole.
  std::string pattern;
  if (te->value.IsScalar())
    for (char ch : te->value.Scalar())
      if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') pattern.push_back(ch);
  if (pattern.empty()) {
    return Status::bad_input(fmt::format("{}: type must be a layer type symbol or a pattern of symbols, got {}",
                                         what, describe(te->value)),
                             te->value_loc);
  }
  for (char sym : pattern) {
    if (!known(sym)) {
      return Status::bad_input(fmt::format("{}: unknown layer type '{}' (defined types: {})",
                                           what, sym, symbol_list(d)),
                               te->value_loc);
    }
  }
  long long repeat = 1;
  if (const Entry* re = m->find("repeat")) {
    Result<long long> r = get_int_min(*re, what, 1);
    if (!r.ok()) return r.status();
    if (*r > kMaxLayers) {
      return Status::bad_input(
          fmt::format("{}: repeat must be <= {}, got {}", what, kMaxLayers, *r), re->value_loc);
    }
    repeat = *r;
  }
  std::vector<std::pair<long long, SourceLoc>> extra;
  if (const Entry* ie = m->find("inputs")) {
    if (pattern.size() > 1) {
      return Status::bad_input(
          fmt::format("{}: inputs need a single layer type, not the pattern '{}' (give that layer its own entry)",
                      what, excerpt(pattern)),
          ie->value_loc);
    }
    if (!ie->value.IsSequence()) {
      return Status::bad_input(fmt::format("{}: inputs must be a list of layer indices, got {}",
                                           what, describe(ie->value)),
                               ie->value_loc);
    }
    for (const YAML::Node& u : ie->value) {
      Entry ue{"inputs", ie->key_node, u, ie->value_loc, loc_of(c, u, ie->value_loc)};
      Result<long long> v = get_int(ue, what);
      if (!v.ok()) {
        return Status::bad_input(
            fmt::format("{}: inputs must hold layer indices (integers), got {}", what,
                        describe(u)),
            ue.value_loc);
      }
      extra.emplace_back(*v, ue.value_loc);
    }
  }
  std::vector<std::string> templates;
  SourceLoc mloc = iloc;
  if (const Entry* me = m->find("module")) {
    Result<std::vector<std::string>> t = read_module_templates(c, *me, what);
    if (!t.ok()) return t.status();
    templates = *t;
    mloc = me->value_loc;
  }
  if (static_cast<long long>(layers.size()) + repeat * static_cast<long long>(pattern.size()) > kMaxLayers) {
    return Status::bad_input(
        fmt::format("{}: at most {} layers are supported", what, kMaxLayers), iloc);
  }
  for (long long r = 0; r < repeat; ++r) {
    std::vector<std::string> names;
    for (const std::string& t : templates) names.push_back(expand_module(t, ld.module_copies[t]++));
    for (char sym : pattern) {
      Layer l;
      l.id = static_cast<int>(layers.size());
      l.type = sym;
      l.loc = iloc;
      l.modules = names;
      ld.module_loc.resize(layers.size() + 1, iloc);
      ld.module_loc[l.id] = mloc;
      for (const auto& [u, uloc] : extra) ld.pending.push_back(PendingInput{l.id, u, uloc});
      layers.push_back(l);
    }
  }
  return Status::ok();
}

// The extra inputs, now that every layer is known: earlier layers only; the chain edge l-1 -> l
// added to every layer; each layer's inputs sorted and unique.
Status resolve_inputs(std::vector<Layer>& layers, const std::vector<PendingInput>& pending) {
  const long long n = static_cast<long long>(layers.size());
  for (Layer& l : layers) {
    if (l.id > 0) l.inputs.push_back(l.id - 1);
  }
  for (const PendingInput& p : pending) {
    Layer& l = layers[static_cast<size_t>(p.layer)];
    std::string what = fmt::format("layer {} (type '{}')", p.layer, l.type);
    if (p.producer < 0) {
      return Status::bad_input(
          fmt::format("{}: input {} is not a layer index (must be >= 0)", what, p.producer), p.loc);
    }
    if (p.producer == p.layer) {
      return Status::bad_input(fmt::format("{}: lists itself as an input (self edge)", what),
                               p.loc);
    }
    if (p.producer >= n) {
      return Status::bad_input(
          fmt::format("{}: input {} is an unknown producer (the model has layers 0..{})", what,
                      p.producer, n - 1),
          p.loc);
    }
    if (p.producer > p.layer) {
      return Status::bad_input(fmt::format("{}: input {} is a later layer; with the chain {} -> "
                                           "... -> {} that is a cycle (inputs "
                                           "must name earlier layers: a forward reference)",
                                           what, p.producer, p.layer, p.producer),
                               p.loc);
    }
    l.inputs.push_back(static_cast<int>(p.producer));
  }
  for (Layer& l : layers) {
    std::sort(l.inputs.begin(), l.inputs.end());
    l.inputs.erase(std::unique(l.inputs.begin(), l.inputs.end()), l.inputs.end());
  }
  return Status::ok();
}

Status parse_layers(const Ctx& c, const Entry& e, Draft& d) {
  LayersDraft ld{d.spec.model.layers, {}, {}, {}};
  if (e.value.IsScalar()) {
    PS_RETURN_IF_ERROR(parse_layer_string(c, e, d, ld));
  } else if (e.value.IsSequence()) {
    int index = 0;
    for (const YAML::Node& item : e.value) PS_RETURN_IF_ERROR(parse_layer_entry(c, e, item, index++, d, ld));
  } else {
    return Status::bad_input(
        fmt::format(
            "model.layers must be a string of layer type symbols or a list of {{type: X, repeat: "
            "N, inputs: [...]}} entries, got {}",
            describe(e.value)),
        e.value_loc);
  }
  if (ld.layers.empty()) {
    return Status::bad_input("model.layers is empty: a model needs at least one layer",
                             e.value_loc);
  }
  ld.module_loc.resize(ld.layers.size(), e.value_loc);
  PS_RETURN_IF_ERROR(check_module_runs(ld.layers, ld.module_loc));
  return resolve_inputs(ld.layers, ld.pending);
}

std::string file_stem(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

Status parse_model(const Ctx& c, const Entry& e, Draft& d) {
  Result<Entries> m = yamlu::read_entries(e.value, {"name", "architecture", "hardware", "layer_types", "layers"},
                                          c.file, "model", e.value_loc);
  if (!m.ok()) return m.status();
  Model& model = d.spec.model;
  model.loc = e.key_loc;
  model.name = file_stem(c.file);
  if (const Entry* x = m->find("name")) {
    Result<std::string> v = get_string(*x, "model");
    if (!v.ok()) return v.status();
    model.name = *v;
  }
  if (const Entry* x = m->find("architecture")) {
    Result<Architecture> a = parse_architecture(c, *x, "model.architecture");
    if (!a.ok()) return a.status();
    d.arch = *a;
    model.tied_embeddings = a->tied_embeddings.value_or(false);
  }
  if (const Entry* x = m->find("hardware")) {
    Result<Hardware> h = parse_hardware(c, *x, "model.hardware");
    if (!h.ok()) return h.status();
    d.model_hw = *h;
  }
  const Entry* types = m->find("layer_types");
  if (!types) {
    return Status::bad_input(
        "model: missing 'layer_types' (a map from one-character symbols to layer types)",
        e.key_loc);
  }
  if (!types->value.IsMap()) {
    return Status::bad_input(
        fmt::format("model.layer_types: expected a map from symbols to layer types, got {}",
                    describe(types->value)),
        types->value_loc);
  }
  // Symbols are free-form: checked here, not by yamlu::read_entries (which takes a list of names).
  for (auto it = types->value.begin(); it != types->value.end(); ++it) {
    const YAML::Node k = it->first;  // copies: operator-> yields a temporary pair
    const YAML::Node v = it->second;
    SourceLoc kloc = loc_of(c, k, types->value_loc);
    std::string key = k.IsScalar() ? k.Scalar() : "";
    if (key.size() != 1 || key[0] <= ' ' || key[0] > '~') {
      return Status::bad_input(
          fmt::format(
              "model.layer_types: a layer type symbol must be one printable character (quote "
              "symbols such as '*' or '-'), got {}",
              describe(k)),
          kloc);
    }
    char sym = key[0];
    if (model.types.count(sym)) {
      return Status::bad_input(
          fmt::format("model.layer_types: duplicate symbol '{}' (first defined at line {})", sym,
                      model.types.at(sym).loc.line),
          kloc);
    }
    Entry te{key, k, v, kloc, loc_of(c, v, kloc)};
    Result<TypeDraft> t = parse_layer_type(c, sym, te);
    if (!t.ok()) return t.status();
    model.types[sym] = t->type;
    d.types.push_back(*t);
  }
  if (d.types.empty()) {
    return Status::bad_input("model.layer_types is empty: define at least one layer type",
                             types->value_loc);
  }
  const Entry* layers = m->find("layers");
  if (!layers) {
    return Status::bad_input(
        "model: missing 'layers' (a string of layer type symbols, or a list of {type: X, "
        "repeat: N} entries)",
        e.key_loc);
  }
  return parse_layers(c, *layers, d);
}

}  // namespace

std::string link_field_error(std::string_view key, double value) {
  const bool bandwidth = key == "bandwidth_gb_per_s";
  if (!std::isfinite(value)) return fmt::format("must be finite, got {}", value);
  if (bandwidth ? !(value > 0) : !(value >= 0)) return fmt::format("must be {} 0, got {}", bandwidth ? ">" : ">=", value);
  return "";
}

namespace {

Result<LinkModel> parse_link(const Ctx& c, const Entry& e, const std::string& what) {
  Result<Entries> m = yamlu::read_entries(e.value, {"bandwidth_gb_per_s", "latency_us"}, c.file, what, e.value_loc);
  if (!m.ok()) return m.status();
  LinkModel link;
  for (const Entry& x : m->entries) {
    bool bw = x.key == "bandwidth_gb_per_s";
    Result<double> v = get_number(x, what);
    if (!v.ok()) return v.status();
    if (const std::string why = link_field_error(x.key, *v); !why.empty())
      return Status::bad_input(fmt::format("{}: {} {}", what, x.key, why), x.value_loc);
    (bw ? link.bandwidth_gb_per_s : link.latency_us) = *v;
  }
  if (!m->find("bandwidth_gb_per_s")) {
    return Status::bad_input(fmt::format("{}: missing 'bandwidth_gb_per_s'", what), m->loc);
  }
  return link;
}

Result<ClusterDraft> parse_cluster(const Ctx& c, const Entry& e) {
  Result<Entries> m = yamlu::read_entries(
      e.value,
      {"name", "devices", "memory_gb", "link", "devices_per_node", "inter_node_link", "hardware", "op_overhead_ms",
       "gpus", "gpus_per_node"},
      c.file, "cluster", e.value_loc);
  if (!m.ok()) return m.status();
  ClusterDraft d;
  Cluster& cl = d.cluster;
  cl.loc = e.key_loc;
  cl.name = file_stem(c.file);
  for (const Entry& x : m->entries) {
    if (x.key == "name") {
      Result<std::string> v = get_string(x, "cluster");
      if (!v.ok()) return v.status();
      cl.name = *v;
    } else if (x.key == "devices") {
      Result<long long> v = get_option(x, "cluster", limits::option::kDevices);
      if (!v.ok()) return v.status();
      cl.devices = static_cast<int>(*v);
      d.devices_given = true;
    } else if (x.key == "memory_gb") {
      Result<double> v = get_number_min(x, "cluster", 0, false);
      if (!v.ok()) return v.status();
      cl.memory_gb = *v;
    } else if (x.key == "op_overhead_ms") {
      Result<double> v = get_number_min(x, "cluster", 0, false);
      if (!v.ok()) return v.status();
      cl.op_overhead_ms = *v;
    } else if (x.key == "devices_per_node") {
      Result<long long> v = get_option(x, "cluster", limits::option::kDevicesPerNode);
      if (!v.ok()) return v.status();
      cl.devices_per_node = static_cast<int>(*v);
    } else if (x.key == "link" || x.key == "inter_node_link") {
      Result<LinkModel> l = parse_link(c, x, "cluster." + x.key);
      if (!l.ok()) return l.status();
      (x.key == "link" ? cl.link : cl.inter_node_link) = *l;
      if (x.key == "inter_node_link") d.inter_node_link_given = true;
    } else if (x.key == "hardware") {
      Result<Hardware> h = parse_hardware(c, x, "cluster.hardware");
      if (!h.ok()) return h.status();
      d.hw = *h;
    } else if (x.key == "gpus" || x.key == "gpus_per_node") {  // the mesh's GPUs (ir/mesh.h)
      Result<long long> v = get_option(
          x, "cluster", x.key == "gpus" ? limits::option::kMeshGpus : limits::option::kMeshGpusPerNode);
      if (!v.ok()) return v.status();
      if (x.key == "gpus") {
        cl.gpus = *v;
        cl.gpus_loc = x.value_loc;
      } else {
        cl.gpus_per_node = static_cast<int>(*v);
      }
    }
  }
  if (cl.devices_per_node > 0 && !m->find("inter_node_link")) {
    return Status::bad_input(
        "cluster: devices_per_node is set but inter_node_link is missing (give "
        "{bandwidth_gb_per_s, "
        "latency_us} of the link between nodes)",
        m->find("devices_per_node")->key_loc);
  }
  if (m->find("inter_node_link") && cl.devices_per_node == 0 && cl.gpus_per_node == 0) {
    return Status::bad_input("cluster: inter_node_link is given but devices_per_node (or gpus_per_node) is not",
                             m->find("inter_node_link")->key_loc);
  }
  return d;
}

Status parse_pipeline(const Entry& e, const Ctx& c, Draft& d) {
  Result<Entries> m =
      yamlu::read_entries(e.value, {"microbatches", "bytes_per_param"}, c.file, "pipeline", e.value_loc);
  if (!m.ok()) return m.status();
  PipelineConfig& p = d.spec.pipeline;
  p.loc = e.key_loc;
  for (const Entry& x : m->entries) {
    if (x.key == "microbatches") {
      Result<long long> v = get_option(x, "pipeline", limits::option::kMicrobatches);
      if (!v.ok()) return v.status();
      p.microbatches = static_cast<int>(*v);
      d.microbatches_given = true;
    } else {
      Result<double> v = get_number_min(x, "pipeline", 0, true);
      if (!v.ok()) return v.status();
      p.bytes_per_param = *v;
    }
  }
  return Status::ok();
}

// yaml-cpp 0.7's LoadAll can loop forever on some malformed input (a file holding just ','), so
// documents are read through yamlu::load_document, which counts them with the event parser.
Result<YAML::Node> load_yaml(const Ctx& c) { return yamlu::load_document(std::string(c.text), c.file); }

// Reads the top level of a model file (is_cluster_file = false) or of a cluster file.
Result<Entries> read_top(const Ctx& c, const YAML::Node& root, bool is_cluster_file) {
  SourceLoc at{c.file, 1, 1};
  if (!root.IsDefined() || root.IsNull()) {
    return Status::bad_input(is_cluster_file
                                 ? "empty file: expected a map with 'cluster:'"
                                 : "empty file: expected a map with 'model:' (and optionally "
                                   "'cluster:' and 'pipeline:')",
                             at);
  }
  std::vector<std::string_view> allowed =
      is_cluster_file ? std::vector<std::string_view>{"schema", "cluster", "parallel"}
                      : std::vector<std::string_view>{"schema", "model", "cluster", "pipeline", "parallel"};
  Result<Entries> m =
      yamlu::read_entries(root, allowed, c.file, is_cluster_file ? "cluster file" : "top level", at);
  if (!m.ok()) return m;
  if (const Entry* s = m->find("schema")) {
    Result<long long> v = get_int(*s, "top level");
    if (!v.ok()) return v.status();
    if (*v != kSchemaVersion) {
      return Status::bad_input(
          fmt::format("unsupported schema version {} (this pipesmith reads schema {})", *v,
                      kSchemaVersion),
          s->value_loc);
    }
  }
  return m;
}

Result<std::string> read_text(const std::string& path, const char* what) {
  std::string text;
  if (std::optional<InputFileError> why = read_input_file(path, text))
    return Status::bad_input(fmt::format("cannot read {} file: {}", what, why->reason), SourceLoc{path, 0, 0});
  return text;
}

// Loads `text` as one YAML document, reads its top-level map (as a cluster file or a model file)
// and hands it to `read`; a yaml-cpp exception becomes a located error (defensive: node types are
// checked before use).
template <class T, class Read>
Result<T> read_document(const std::string& text, const std::string& file, bool is_cluster_file, Read read) {
  Ctx c{file, text};
  Result<YAML::Node> root = load_yaml(c);
  if (!root.ok()) return root.status();
  try {
    Result<Entries> top = read_top(c, *root, is_cluster_file);
    if (!top.ok()) return top.status();
    return read(c, *top);
  } catch (const YAML::Exception& ex) {
    return Status::bad_input(fmt::format("cannot read YAML: {}", ex.what()), file_loc(c));
  }
}

Result<ClusterDraft> parse_cluster_text(const std::string& text, const std::string& file) {
  return read_document<ClusterDraft>(text, file, true, [&](const Ctx& c, const Entries& top) -> Result<ClusterDraft> {
    const Entry* ce = top.find("cluster");
    if (!ce) return Status::bad_input("cluster file: missing 'cluster:'", SourceLoc{file, 1, 1});
    Result<ClusterDraft> cl = parse_cluster(c, *ce);
    if (!cl.ok()) return cl;
    if (const Entry* pe = top.find("parallel")) {
      Result<ParallelInput> pi = read_parallel(pe->value, c.file, pe->key_loc);
      if (!pi.ok()) return pi.status();
      cl->parallel = *pi;
    }
    return cl;
  });
}

Result<Draft> parse_draft(const std::string& text, const std::string& file) {
  return read_document<Draft>(text, file, false, [&](const Ctx& c, const Entries& top) -> Result<Draft> {
    Draft d;
    const Entry* me = top.find("model");
    if (!me) {
      return Status::bad_input(
          "missing 'model:' section (a model file holds model:, and optionally cluster: "
          "and pipeline:)",
          SourceLoc{file, 1, 1});
    }
    PS_RETURN_IF_ERROR(parse_model(c, *me, d));
    if (const Entry* ce = top.find("cluster")) {
      Result<ClusterDraft> cl = parse_cluster(c, *ce);
      if (!cl.ok()) return cl.status();
      d.cluster = *cl;
      d.has_cluster = true;
    }
    if (const Entry* pe = top.find("pipeline")) PS_RETURN_IF_ERROR(parse_pipeline(*pe, c, d));
    if (const Entry* pe = top.find("parallel")) {
      Result<ParallelInput> pi = read_parallel(pe->value, c.file, pe->key_loc);
      if (!pi.ok()) return pi.status();
      d.parallel = *pi;
    }
    return d;
  });
}

// Fills a layer type's recompute options: the `recompute:` block's numbers, else derived from its
// kind (`dc`, when there is one), else full = {forward_ms, min(output_mb, activation_mb)} (a layer's
// input is the tensor that flows between layers) and selective = nothing to drop. A kept_mb above
// activation_mb is an error at the number.
Status fill_recompute(const TypeDraft& t, const std::optional<DerivedCosts>& dc, LayerType& lt) {
  lt.recompute_full = {lt.forward_ms, std::min(lt.output_mb, lt.activation_mb)};
  lt.recompute_selective = {0, lt.activation_mb};
  if (dc) {
    lt.recompute_full = {lt.forward_ms, std::min(dc->recompute_full_kept_mb, lt.activation_mb)};
    const double dropped = std::max(0.0, dc->activation_mb - dc->recompute_selective_kept_mb);
    lt.recompute_selective = {dc->recompute_selective_ms, std::max(0.0, lt.activation_mb - dropped)};
  }
  const char* names[2] = {"full", "selective"};
  RecomputeOption* opts[2] = {&lt.recompute_full, &lt.recompute_selective};
  for (int k = 0; k < 2; ++k) {
    const TypeDraft::RecomputeGiven& g = t.recompute[k];
    if (g.ms) opts[k]->ms = *g.ms;
    if (g.kept_mb) {
      if (*g.kept_mb > lt.activation_mb)
        return Status::bad_input(fmt::format("{}: recompute.{}.kept_mb ({}) must be <= activation_mb ({})",
                                             type_what(lt.symbol), names[k], *g.kept_mb, lt.activation_mb),
                                 g.kept_loc);
      opts[k]->kept_mb = *g.kept_mb;
    }
  }
  return Status::ok();
}

// Under a mesh: checks a type against the mesh and spreads the model states of one whose parameter
// count is given (explicit types hold given numbers per GPU, so only data parallelism spreads them).
Status spread_on_mesh(Draft& d, const TypeDraft& t, LayerType& lt) {
  const Mesh& m = *d.spec.mesh;
  const std::string what = type_what(lt.symbol);
  if (!t.components.empty()) {
    PS_RETURN_IF_ERROR(check_mesh_architecture(t.components, d.arch.merged_with(t.arch), m, what, t.kind_loc));
  } else if (m.tensor * m.context * m.expert * m.expert_tensor > 1) {
    return Status::bad_input(
        fmt::format("{} has no kind: the mesh's tensor, context and expert parallelism need the layer's structure to "
                    "spread it (give 'kind:' and an 'architecture:'), or use a mesh of data parallelism only",
                    what),
        lt.loc);
  }
  constexpr int kParamsField = 6;
  if (t.given[kParamsField] || !d.spec.mesh_types.count(lt.symbol)) {
    const MeshLayerCosts e = explicit_mesh_memory(lt.params_m, m, d.spec.pipeline.bytes_per_param);
    MeshLayerCosts& entry = d.spec.mesh_types.try_emplace(lt.symbol, e).first->second;
    entry.params_per_gpu_m = e.params_per_gpu_m;
    entry.weights_mb = e.weights_mb, entry.grads_mb = e.grads_mb, entry.optimizer_mb = e.optimizer_mb;
    entry.dense_grad_mb = e.dense_grad_mb, entry.expert_grad_mb = e.expert_grad_mb;
    entry.dense_weight_mb = e.dense_weight_mb, entry.expert_weight_mb = e.expert_weight_mb;
    entry.unsharded_mb = e.unsharded_mb;
    lt.params_m = e.gpu.params_m;
  }
  return Status::ok();
}

// Resolves the mesh (ir/mesh.h) when the files or the overrides give one; M follows a global batch.
Status resolve_draft_mesh(Draft& d, const SpecOverrides& o) {
  const Cluster& cl = d.cluster.cluster;
  const ParallelInput given = d.parallel.merged_with(d.cluster.parallel);
  if (!given.any() && !o.parallel.any() && cl.gpus == 0) return Status::ok();
  MeshContext ctx;
  ctx.pipeline_devices = o.devices ? *o.devices : cl.devices;
  if (ctx.pipeline_devices < 1) return Status::ok();  // finish reports the missing device count
  ctx.cluster_gpus = cl.gpus;
  ctx.cluster_gpus_loc = cl.gpus_loc;
  ctx.gpus_per_node = cl.gpus_per_node > 0 ? cl.gpus_per_node : cl.devices_per_node;
  ctx.architecture_micro_batch = static_cast<int>(d.arch.micro_batch_size.value_or(1));
  ctx.microbatches = o.microbatches ? *o.microbatches : d.spec.pipeline.microbatches;
  ctx.microbatches_overridden = o.microbatches.has_value();
  ctx.inter_node_link = d.cluster.inter_node_link_given;
  ctx.cluster_loc = d.has_cluster ? cl.loc : d.spec.model.loc;
  Result<Mesh> m = resolve_mesh(given, o.parallel, ctx);
  if (!m.ok()) return m.status();
  const Hardware hw = d.model_hw.merged_with(d.cluster.hw);
  m->peak_tflops = hw.peak_tflops.value_or(0);
  m->seq_length = d.arch.seq_length.value_or(0);
  if (given.global_batch || o.parallel.global_batch) {
    d.spec.pipeline.microbatches = mesh_microbatches(*m);
    d.microbatches_given = true;
  }
  d.spec.mesh = *m;
  return Status::ok();
}

// Fills the numbers a layer type does not give from its kind, and checks stash <= activation.
Status derive_types(Draft& d) {
  Hardware hw = d.model_hw.merged_with(d.cluster.hw);
  const std::optional<Mesh>& mesh = d.spec.mesh;
  const MeshLinks links{d.cluster.cluster.link.bandwidth_gb_per_s, d.cluster.cluster.link.latency_us,
                        d.cluster.cluster.inter_node_link.bandwidth_gb_per_s,
                        d.cluster.cluster.inter_node_link.latency_us};
  // The costs of a kind: the whole layer on one GPU, or under a mesh one GPU's share (ir/mesh.h).
  auto derive = [&](const TypeDraft& t) -> Result<DerivedCosts> {
    const Architecture arch = d.arch.merged_with(t.arch);
    if (!mesh) return derive_costs(t.components, arch, hw);
    Result<MeshLayerCosts> mc = derive_mesh_costs(t.components, arch, hw, *mesh, links, d.spec.pipeline.bytes_per_param);
    if (!mc.ok()) return mc.status();
    d.spec.mesh_types[t.type.symbol] = *mc;
    return mc->gpu;
  };
  for (TypeDraft& t : d.types) {
    LayerType& lt = d.spec.model.types.at(t.type.symbol);
    std::vector<std::string> missing;
    for (int i = 0; i < kNumCostFields; ++i) {
      if (!t.given[i]) missing.push_back(cost_fields()[i].key);
    }
    std::string what = type_what(lt.symbol);
    std::optional<DerivedCosts> derived;
    if (!missing.empty()) {
      if (t.components.empty()) {
        return Status::bad_input(
            fmt::format("{}: missing {} (give {}, or give 'kind:' plus an 'architecture:' and "
                        "'hardware:' block "
                        "to derive {})",
                        what, join(missing), missing.size() == 1 ? "it" : "them",
                        missing.size() == 1 ? "it" : "them"),
            lt.loc);
      }
      Result<DerivedCosts> dc = derive(t);
      if (!dc.ok()) {
        std::string msg = dc.status().message();
        if (msg.rfind("hardware.", 0) == 0)
          msg += " (add a 'hardware:' block to the model or the cluster)";
        return Status::bad_input(fmt::format("{} (kind {}): {}", what, lt.kind, msg), t.kind_loc);
      }
      for (int i = 0; i < kNumCostFields; ++i) {
        if (!t.given[i]) lt.*(cost_fields()[i].field) = (*dc).*(cost_fields()[i].derived);
      }
      derived = *dc;
    } else if (!t.components.empty()) {
      // Every number is given; the kind still yields the recompute options when it can be derived.
      Result<DerivedCosts> dc = derive(t);
      if (dc.ok()) derived = *dc;
    }
    if (mesh) PS_RETURN_IF_ERROR(spread_on_mesh(d, t, lt));
    if (lt.wgrad_stash_mb > lt.activation_mb) {
      auto origin = [&](int i) { return t.given[i] ? "" : ", derived"; };
      SourceLoc at = t.given[kStashField]        ? *t.given[kStashField]
                     : t.given[kActivationField] ? *t.given[kActivationField]
                                                 : lt.loc;
      return Status::bad_input(
          fmt::format("{}: wgrad_stash_mb ({}{}) must be <= activation_mb ({}{})", what,
                      lt.wgrad_stash_mb, origin(kStashField), lt.activation_mb,
                      origin(kActivationField)),
          at);
    }
    PS_RETURN_IF_ERROR(fill_recompute(t, derived, lt));
  }
  return Status::ok();
}

// A layer type that is one shard of a vocabulary-parallel head (vocab_shards: K > 1) must appear
// exactly K times, one run of consecutive layers: fewer would silently model part of the vocabulary.
Status check_vocab_shards(Draft& d) {
  for (const TypeDraft& t : d.types) {
    if (std::find(t.components.begin(), t.components.end(), Component::kHead) == t.components.end()) continue;
    const long long K = d.arch.merged_with(t.arch).vocab_shards.value_or(1);
    if (K <= 1) continue;
    const char sym = t.type.symbol;
    std::vector<int> at;
    for (const Layer& l : d.spec.model.layers)
      if (l.type == sym) at.push_back(l.id);
    const bool consecutive = !at.empty() && at.back() - at.front() + 1 == static_cast<int>(at.size());
    if (static_cast<long long>(at.size()) != K || !consecutive) {
      return Status::bad_input(
          fmt::format("{}: vocab_shards is {}, so the layers must hold exactly {} consecutive '{}' layers (one per "
                      "vocabulary shard); found {}{}",
                      type_what(sym), K, K, sym, at.size(), consecutive || at.empty() ? "" : " not consecutive"),
          t.type.loc);
    }
    d.spec.model.types.at(sym).vocab_shards = static_cast<int>(K);
  }
  return Status::ok();
}

// A layer that joins the next one (a sublayer) needs a next layer (which always reads it: every layer
// reads its predecessor).
Status check_joins_next(const Draft& d) {
  const std::vector<Layer>& layers = d.spec.model.layers;
  if (layers.empty()) return Status::ok();
  const Layer& last = layers.back();
  for (const TypeDraft& t : d.types) {
    if (t.type.joins_next && last.type == t.type.symbol) {
      return Status::bad_input(fmt::format("{} has joins_next: true, but layer {} of that type is the last layer",
                                           type_what(t.type.symbol), last.id),
                               last.loc.line > 0 ? last.loc : t.joins_next_loc);
    }
  }
  return Status::ok();
}

Status check_overrides(const SpecOverrides& o) {
  if (o.devices)
    PS_RETURN_IF_ERROR(limits::check_option(limits::option::kDevices, *o.devices, "the devices override"));
  if (o.microbatches)
    PS_RETURN_IF_ERROR(
        limits::check_option(limits::option::kMicrobatches, *o.microbatches, "the microbatches override"));
  if (o.memory_gb) {
    PS_RETURN_IF_ERROR(check_memory_limit_gb(*o.memory_gb, "the memory limit override"));
  }
  return Status::ok();
}

// Derives, applies overrides, checks that devices and microbatches came from somewhere, validates.
Result<Spec> finish(Draft d, const std::string& model_file, const SpecOverrides& o) {
  PS_RETURN_IF_ERROR(check_overrides(o));
  PS_RETURN_IF_ERROR(resolve_draft_mesh(d, o));
  PS_RETURN_IF_ERROR(derive_types(d));
  if (d.spec.mesh) {  // the model FLOPs of one token, for MFU: known when every layer type is derived
    double flops = 0;
    bool known = d.spec.mesh->seq_length > 0;
    for (const Layer& l : d.spec.model.layers) {
      const MeshLayerCosts& c = d.spec.mesh_types.at(l.type);
      known = known && c.derived;
      flops += c.model_flops;
    }
    const double tokens = static_cast<double>(d.spec.mesh->micro_batch) * static_cast<double>(d.spec.mesh->seq_length);
    d.spec.mesh->model_flops_per_token = known ? flops / tokens : 0.0;
  }
  PS_RETURN_IF_ERROR(check_vocab_shards(d));
  PS_RETURN_IF_ERROR(check_joins_next(d));
  d.spec.cluster = d.cluster.cluster;
  bool devices_given = d.cluster.devices_given;
  if (o.devices) {
    d.spec.cluster.devices = *o.devices;
    devices_given = true;
  }
  if (o.microbatches) {
    d.spec.pipeline.microbatches = *o.microbatches;
    d.microbatches_given = true;
  }
  if (o.memory_gb) d.spec.cluster.memory_gb = *o.memory_gb;
  if (d.spec.mesh) {  // the pipeline's devices are blocks of the mesh's GPUs: which boundaries cross nodes
    const Mesh& mesh = *d.spec.mesh;
    Cluster& c = d.spec.cluster;
    c.gpus = mesh.gpus;
    c.gpus_per_node = mesh.gpus_per_node;
    const long long block = mesh.gpus / mesh.pipeline;
    c.devices_per_node = mesh.gpus_per_node == 0          ? 0
                         : block >= mesh.gpus_per_node ? 1
                                                       : static_cast<int>(mesh.gpus_per_node / block);
  }
  if (!devices_given) {
    SourceLoc at = d.has_cluster ? d.cluster.cluster.loc : SourceLoc{model_file, 0, 0};
    return Status::bad_input(
        "the number of devices is not given: set 'devices:' under 'cluster:' (in the model file or "
        "the cluster file), or give it as an override (--devices; Python's load_spec(devices=...))",
        at);
  }
  if (!d.microbatches_given) {
    SourceLoc at = d.spec.pipeline.loc.valid() ? d.spec.pipeline.loc : SourceLoc{model_file, 0, 0};
    return Status::bad_input(
        "the number of microbatches is not given: set 'microbatches:' under 'pipeline:' in the "
        "model file, or give it as an override (--microbatches; Python's load_spec(microbatches=...))",
        at);
  }
  if (d.spec.cluster.name.empty()) d.spec.cluster.name = "cluster";
  PS_RETURN_IF_ERROR(validate(d.spec));
  // The smallest plan (one stage per device) within the limits; a count an override set is named so.
  const int P = d.spec.cluster.devices, M = d.spec.pipeline.microbatches;
  const std::string what = fmt::format("{} devices{}, {} microbatches{}", P, o.devices ? " (override)" : "", M,
                                       o.microbatches ? " (override)" : "");
  PS_RETURN_IF_ERROR(limits::check_plan_ops(P, M, what, o.microbatches || o.devices ? SourceLoc{} : d.spec.pipeline.loc));
  return d.spec;
}

Status check_cost(const std::string& what, const char* field, double v, const SourceLoc& loc) {
  if (!(v >= 0) || !std::isfinite(v)) {
    return Status::bad_input(fmt::format("{}: {} must be >= 0, got {}", what, field, v), loc);
  }
  return Status::ok();
}

Status check_link(const LinkModel& l, const char* what, const SourceLoc& loc) {
  if (!(l.bandwidth_gb_per_s > 0) || !std::isfinite(l.bandwidth_gb_per_s)) {
    return Status::bad_input(
        fmt::format("{}: bandwidth_gb_per_s must be > 0, got {}", what, l.bandwidth_gb_per_s), loc);
  }
  if (!(l.latency_us >= 0) || !std::isfinite(l.latency_us)) {
    return Status::bad_input(fmt::format("{}: latency_us must be >= 0, got {}", what, l.latency_us),
                             loc);
  }
  return Status::ok();
}

}  // namespace

Result<Spec> parse_spec(const std::string& yaml_text, const std::string& file_name) {
  Result<Draft> d = parse_draft(yaml_text, file_name);
  if (!d.ok()) return d.status();
  return finish(std::move(*d), file_name, {});
}

Result<Cluster> load_cluster(const std::string& path) {
  Result<std::string> text = read_text(path, "cluster");
  if (!text.ok()) return text.status();
  Result<ClusterDraft> d = parse_cluster_text(*text, path);
  if (!d.ok()) return d.status();
  if (!d->devices_given) {
    return Status::bad_input("cluster: missing 'devices' (the number of devices, >= 1)",
                             d->cluster.loc);
  }
  return d->cluster;
}

Result<Spec> load_spec(const std::string& model_path, const std::string& cluster_path,
                       const SpecOverrides& overrides) {
  Result<std::string> text = read_text(model_path, "model");
  if (!text.ok()) return text.status();
  Result<Draft> d = parse_draft(*text, model_path);
  if (!d.ok()) return d.status();
  if (!cluster_path.empty()) {
    Result<std::string> ctext = read_text(cluster_path, "cluster");
    if (!ctext.ok()) return ctext.status();
    Result<ClusterDraft> cl = parse_cluster_text(*ctext, cluster_path);
    if (!cl.ok()) return cl.status();
    d->cluster = *cl;  // a cluster file replaces the model file's cluster section
    d->has_cluster = true;
  }
  return finish(std::move(*d), model_path, overrides);
}

namespace {

// Every sum over an iteration — F/I/W time, activations, model states, transfers — stays within
// limits::kMaxIterationTotal, so per-stage, per-device and per-iteration figures are finite whatever
// the partition. The error names the layer at which a running total crosses the bound.
Status check_totals(const Spec& spec) {
  const Model& m = spec.model;
  const double M = spec.pipeline.microbatches;
  const double bw = std::min(spec.cluster.link.bandwidth_gb_per_s,
                             spec.cluster.devices_per_node > 0 ? spec.cluster.inter_node_link.bandwidth_gb_per_s
                                                               : spec.cluster.link.bandwidth_gb_per_s);
  const double lat_ms = std::max(spec.cluster.link.latency_us, spec.cluster.inter_node_link.latency_us) / 1000.0;
  double time_ms = 0, act_mb = 0, state_mb = 0, comm_ms = 0;
  for (const Layer& l : m.layers) {
    const LayerType& t = m.types.at(l.type);
    time_ms += M * (t.forward_ms + t.backward_input_ms + t.backward_weight_ms);
    if (t.backward_ms) time_ms += M * *t.backward_ms;
    time_ms += M * t.weight_walk_ms * l.id;  // at most every layer before it in its stage
    time_ms += M * 4 * spec.cluster.op_overhead_ms;  // at most one stage per layer: F, I, W, R
    act_mb += M * t.activation_mb;
    state_mb += t.params_m * spec.pipeline.bytes_per_param;
    comm_ms += 2 * M * (lat_ms + t.output_mb / bw);  // its output sent forward and its gradient back
    const char* over = limits::total_over_limit(time_ms, act_mb, state_mb, comm_ms);
    if (over) {
      return Status::bad_input(
          fmt::format("layer {} (type '{}', {}): the iteration's total {} over {} microbatches exceeds {:g} at this "
                      "layer; pipesmith needs every sum over an iteration to stay below it (docs/inputs.md, "
                      "\"Limits\")",
                      l.id, std::string(1, l.type), t.name, over, spec.pipeline.microbatches,
                      limits::kMaxIterationTotal),
          l.loc.valid() ? l.loc : t.loc);
    }
  }
  return Status::ok();
}

}  // namespace

Status check_layers_for_devices(const Spec& spec) {
  const size_t L = spec.model.layers.size();
  if (L >= static_cast<size_t>(spec.cluster.devices)) return Status::ok();
  return Status::bad_input(fmt::format("model '{}' has {} layers, fewer than the {} devices: every device needs at least one stage",
                                       spec.model.name, L, spec.cluster.devices));
}

Status validate(const Spec& spec) {
  const Model& m = spec.model;
  if (m.types.empty()) return Status::bad_input("model has no layer types", m.loc);
  if (m.layers.empty()) return Status::bad_input("model has no layers", m.loc);
  for (const auto& [sym, t] : m.types) {
    std::string what = type_what(sym);
    if (t.symbol != sym) {
      return Status::bad_input(fmt::format("{}: its symbol field says '{}'", what, t.symbol),
                               t.loc);
    }
    for (const CostField& f : cost_fields())
      PS_RETURN_IF_ERROR(check_cost(what, f.key, t.*(f.field), t.loc));
    if (t.backward_ms) PS_RETURN_IF_ERROR(check_cost(what, "backward_ms", *t.backward_ms, t.loc));
    PS_RETURN_IF_ERROR(check_cost(what, "weight_walk_ms", t.weight_walk_ms, t.loc));
    if (t.wgrad_stash_mb > t.activation_mb) {
      return Status::bad_input(fmt::format("{}: wgrad_stash_mb ({}) must be <= activation_mb ({})",
                                           what, t.wgrad_stash_mb, t.activation_mb),
                               t.loc);
    }
  }
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const Layer& l = m.layers[i];
    if (l.id != static_cast<int>(i)) {
      return Status::bad_input(
          fmt::format("layer at position {} has id {} (ids must be 0..n-1 in order)", i, l.id),
          l.loc);
    }
    if (!m.types.count(l.type)) {
      return Status::bad_input(fmt::format("layer {}: unknown layer type '{}'", l.id, l.type),
                               l.loc);
    }
    for (int u : l.inputs) {
      if (u < 0 || u >= l.id) {
        return Status::bad_input(
            fmt::format("layer {}: input {} must name an earlier layer (0..{})", l.id, u, l.id - 1),
            l.loc);
      }
    }
  }
  const Cluster& c = spec.cluster;
  PS_RETURN_IF_ERROR(limits::check_option(limits::option::kDevices, c.devices, "cluster.devices", c.loc));
  if (Status st = check_memory_limit_gb(c.memory_gb, "cluster: memory_gb"); !st)
    return Status::bad_input(st.message(), c.loc);
  PS_RETURN_IF_ERROR(check_cost("cluster", "op_overhead_ms", c.op_overhead_ms, c.loc));
  if (c.devices_per_node != 0)  // 0: one node
    PS_RETURN_IF_ERROR(limits::check_option(limits::option::kDevicesPerNode, c.devices_per_node,
                                            "cluster.devices_per_node", c.loc));
  PS_RETURN_IF_ERROR(check_link(c.link, "cluster.link", c.loc));
  if (c.devices_per_node > 0)
    PS_RETURN_IF_ERROR(check_link(c.inter_node_link, "cluster.inter_node_link", c.loc));
  const PipelineConfig& p = spec.pipeline;
  PS_RETURN_IF_ERROR(
      limits::check_option(limits::option::kMicrobatches, p.microbatches, "pipeline.microbatches", p.loc));
  if (!(p.bytes_per_param > 0) || !std::isfinite(p.bytes_per_param)) {
    return Status::bad_input(
        fmt::format("pipeline: bytes_per_param must be > 0, got {}", p.bytes_per_param), p.loc);
  }
  if (static_cast<int64_t>(m.layers.size()) > limits::kMaxLayers)
    return Status::bad_input(
        fmt::format("{} layers: at most {} are supported", m.layers.size(), limits::kMaxLayers), p.loc);
  return check_totals(spec);
}

LayerType summed_costs(const Model& m, int first, int last) {
  LayerType sum;
  bool any_fused = false;
  double fused_ms = 0;
  for (int i = first; i <= last; ++i) {
    const LayerType& t = m.type_of(i);
    sum.forward_ms += t.forward_ms;
    sum.backward_input_ms += t.backward_input_ms;
    sum.backward_weight_ms += t.backward_weight_ms + t.weight_walk_ms * (i - first);
    sum.weight_walk_ms += t.weight_walk_ms;
    if (t.backward_ms) any_fused = true;
    fused_ms += t.fused_backward_ms();
    sum.activation_mb += t.activation_mb;
    sum.wgrad_stash_mb += t.wgrad_stash_mb;
    sum.params_m += t.params_m;
    sum.recompute_full.ms += t.recompute_full.ms;
    sum.recompute_full.kept_mb += t.recompute_full.kept_mb;
    sum.recompute_selective.ms += t.recompute_selective.ms;
    sum.recompute_selective.kept_mb += t.recompute_selective.kept_mb;
    sum.split_backward = sum.split_backward && t.split_backward;
  }
  if (any_fused || sum.weight_walk_ms > 0) sum.backward_ms = fused_ms;  // B walks the graph once: no walk
  return sum;
}

}  // namespace ps
