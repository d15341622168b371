// model_import.cpp — see model_import.h: symbols and names of the layer types, the layer list with
// its repeat runs, MTP modules, and the check that the written YAML loads.
#include "ir/model_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "ir/limits.h"
#include "ir/model.h"
#include "ir/model_write.h"

namespace ps {

namespace {

struct SublayerInfo {
  Sublayer s;
  char symbol;       // as a layer of its own (sublayers, hybrid layers)
  const char* name;  // the layer type's name
  const char* kind;  // its analytic kind
};
const std::vector<SublayerInfo>& sublayer_table() {
  static const std::vector<SublayerInfo> k = {
      {Sublayer::kAttention, 'A', "attention", "attention"},
      {Sublayer::kSlidingAttention, 'S', "sliding-attention", "attention"},
      {Sublayer::kMla, 'C', "mla", "mla"},
      {Sublayer::kLinearAttention, 'N', "lightning-attention", "linear_attention"},
      {Sublayer::kGatedDeltaNet, 'G', "gated-deltanet", "gated_deltanet"},
      {Sublayer::kMamba, 'M', "mamba", "mamba"},
      {Sublayer::kMlp, 'F', "mlp", "mlp"},
      {Sublayer::kMoe, 'X', "moe", "moe"},
  };
  return k;
}
const SublayerInfo& info(Sublayer s) {
  for (const SublayerInfo& i : sublayer_table())
    if (i.s == s) return i;
  PS_ASSERT(false, "sublayer without a table row");
}

// Symbols of whole decoder layers (mixer + MLP/MoE), by their sublayers' symbols.
char combo_symbol(const std::string& parts) {
  static const std::vector<std::pair<const char*, char>> k = {
      {"AF", 'T'}, {"AX", 'U'}, {"SF", 'V'}, {"SX", 'W'}, {"CF", 'D'},
      {"CX", 'K'}, {"NF", 'O'}, {"NX", 'P'}, {"GF", 'R'}, {"GX", 'H'},
  };
  for (const auto& [p, c] : k)
    if (parts == p) return c;
  return 0;
}

// One layer type of the YAML.
struct TypeOut {
  char symbol = 0;
  std::string name, kind;
  std::vector<ArchEntry> arch;  // its own architecture block
  bool joins_next = false;
  std::string comment;
};

class Writer {
 public:
  Writer(const ImportedModel& m, const ImportOptions& o) : m_(m), o_(o) {}

  Result<std::string> run() {
    PS_RETURN_IF_ERROR(check());
    build_types();
    if (!status_.is_ok()) return status_;
    build_layers();
    std::string body = yaml();
    // The written model must load; its parameter count goes into the header.
    Result<Spec> spec = parse_spec(header({}) + body, m_.name + ".yaml");
    if (!spec.ok()) {
      return Status::bad_input(
          fmt::format("the imported model does not load: {}", spec.status().str()));
    }
    return header(*spec) + body;
  }

 private:
  Status check() const {
    if (m_.layers.empty()) return Status::bad_input("the model has no decoder layers");
    PS_RETURN_IF_ERROR(limits::check_option(limits::option::kImportVocabShards, o_.vocab_shards, "vocab_shards"));
    for (const DecoderLayer& l : m_.layers)
      if (l.parts.empty() || l.parts.size() > 2) return Status::bad_input("a decoder layer has 1 or 2 sublayers");
    return check_layer_count();
  }

  // The layers the YAML will list, counted before any is built (the MTP modules' heads and the shards
  // multiply): within limits::kMaxLayers.
  Status check_layer_count() const {
    long long decoder = 0;
    for (const DecoderLayer& l : m_.layers)
      decoder += o_.sublayers ? static_cast<long long>(l.parts.size()) : 1;
    const long long shards = o_.vocab_shards;
    const long long per_mtp = 1 + (o_.sublayers ? static_cast<long long>(m_.mtp_block.parts.size()) : 0) + shards;
    const long long base = m_.vision_layers + 1 + decoder + shards;
    const long long mtp = static_cast<long long>(std::max(0, m_.mtp_modules)) * per_mtp;
    if (base + mtp <= limits::kMaxLayers) return Status::ok();
    if (base <= limits::kMaxLayers) {
      return Status::bad_input(
          fmt::format("{} is {}: {} MTP modules of {} layers each (projection{}, {} head layer{}) make the model {} "
                      "layers; a model has at most {} (docs/inputs.md, \"Limits\")",
                      mtp_what(), m_.mtp_modules, m_.mtp_modules, per_mtp, o_.sublayers ? ", block sublayers" : " and block",
                      shards, shards > 1 ? "s (vocabulary shards)" : "", limits::with_commas(base + mtp),
                      limits::with_commas(limits::kMaxLayers)),
          m_.mtp_loc);
    }
    return Status::bad_input(fmt::format("the imported model would have {} layers; a model has at most {} "
                                         "(docs/inputs.md, \"Limits\")",
                                         limits::with_commas(base + mtp), limits::with_commas(limits::kMaxLayers)));
  }

  std::string mtp_what() const { return m_.mtp_source.empty() ? "the number of MTP modules" : m_.mtp_source; }

  std::vector<ArchEntry> overrides_of(const std::vector<Sublayer>& parts) const {
    std::vector<ArchEntry> out;
    for (Sublayer s : parts) {
      auto it = m_.overrides.find(s);
      if (it != m_.overrides.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    }
    return out;
  }

  std::string parts_symbols(const std::vector<Sublayer>& parts) const {
    std::string s;
    for (Sublayer p : parts) s += info(p).symbol;
    return s;
  }

  std::string parts_name(const std::vector<Sublayer>& parts, const char* sep) const {
    std::string s;
    for (Sublayer p : parts) s += (s.empty() ? "" : sep) + std::string(info(p).name);
    return s;
  }

  std::string parts_kind(const std::vector<Sublayer>& parts) const {
    std::string s;
    for (Sublayer p : parts) s += (s.empty() ? "" : "+") + std::string(info(p).kind);
    return s;
  }

  // A symbol no type has yet (0: none left).
  char free_symbol() const {
    for (char c : std::string(kFreeSymbols))
      if (!used_.count(c)) return c;
    return 0;
  }
  // `preferred` when free, else any free symbol; when none is left, the first error is kept in
  // status_ (a general one: the MTP heads, the only types whose number the input sets, say more).
  char claim(char preferred) {
    const char c = preferred && !used_.count(preferred) ? preferred : free_symbol();
    if (!c) {
      if (status_.is_ok())
        status_ = Status::bad_input(fmt::format("the model needs more than {} layer types, more than the one-character "
                                                "symbols of a model YAML",
                                                types_.size()));
      return '?';
    }
    used_.insert(c);
    return c;
  }
  static constexpr const char* kFreeSymbols = "abcdefghijklnopqrstuvwxz0123456789";

  void add_type(TypeOut t) { types_.push_back(std::move(t)); }

  // The type symbols of one decoder layer (one symbol, or one per sublayer).
  std::string layer_symbols(const DecoderLayer& l) {
    const bool split = o_.sublayers && l.parts.size() > 1;
    if (!split) {
      const std::string key = parts_symbols(l.parts);
      auto it = whole_.find(key);
      if (it != whole_.end()) return std::string(1, it->second);
      TypeOut t;
      t.symbol = claim(l.parts.size() == 1 ? info(l.parts[0]).symbol : combo_symbol(key));
      t.name = parts_name(l.parts, "+");
      t.kind = parts_kind(l.parts);
      t.arch = overrides_of(l.parts);
      whole_[key] = t.symbol;
      add_type(std::move(t));
      return std::string(1, whole_[key]);
    }
    std::string out;
    for (size_t i = 0; i < l.parts.size(); ++i) {
      const bool joins = i + 1 < l.parts.size();
      const std::string key = std::string(1, info(l.parts[i]).symbol) + (joins ? "+" : "");
      auto it = split_.find(key);
      if (it == split_.end()) {
        TypeOut t;
        t.symbol = claim(info(l.parts[i]).symbol);
        t.name = info(l.parts[i]).name;
        t.kind = info(l.parts[i]).kind;
        t.arch = overrides_of({l.parts[i]});
        t.joins_next = joins;
        it = split_.emplace(key, t.symbol).first;
        add_type(std::move(t));
      }
      out += it->second;
    }
    return out;
  }

  std::vector<ArchEntry> head_arch() const {
    std::vector<ArchEntry> a;
    if (o_.vocab_shards > 1) a.push_back({"vocab_shards", std::to_string(o_.vocab_shards), "import option"});
    return a;
  }

  void build_types() {
    used_ = {'E', 'L', 'm', 'Y'};
    if (m_.vision_layers > 0) {
      TypeOut v;
      v.symbol = 'Y';
      v.name = "vision-encoder";
      v.kind = "attention+mlp";
      v.arch = m_.vision_arch;
      v.comment = "vision_config";
      add_type(v);
    }
    TypeOut e;
    e.symbol = 'E';
    e.name = "embedding";
    e.kind = "embedding";
    add_type(e);
    for (const DecoderLayer& l : m_.layers) layer_symbols_.push_back(layer_symbols(l));
    TypeOut h;
    h.symbol = 'L';
    h.name = o_.vocab_shards > 1 ? "head-shard" : "head";
    h.kind = "head";
    h.arch = head_arch();
    if (o_.vocab_shards > 1) h.comment = fmt::format("1/{} of the vocabulary", o_.vocab_shards);
    add_type(h);
    if (m_.mtp_modules == 0) return;
    // MTP: the projection (with the block, or the block's sublayers after it) joins its head.
    TypeOut p;
    p.symbol = 'm';
    p.joins_next = true;
    if (o_.sublayers) {
      p.name = "mtp-projection";
      p.kind = "mtp_projection";
      add_type(p);
      for (Sublayer s : m_.mtp_block.parts) {
        TypeOut b;
        b.symbol = claim(s == Sublayer::kMoe || s == Sublayer::kMlp ? 'y' : 'b');
        b.name = std::string("mtp-") + info(s).name;
        b.kind = info(s).kind;
        b.arch = overrides_of({s});
        b.joins_next = true;
        mtp_symbols_ += b.symbol;
        add_type(b);
      }
    } else {
      p.name = "mtp-projection+" + parts_name(m_.mtp_block.parts, "+");
      p.kind = "mtp_projection+" + parts_kind(m_.mtp_block.parts);
      p.arch = overrides_of(m_.mtp_block.parts);
      add_type(p);
    }
    // Each MTP module's head; sharded heads need a type each (K consecutive layers of one type).
    const int head_types = o_.vocab_shards > 1 ? m_.mtp_modules : 1;
    for (int j = 0; j < head_types; ++j) {
      TypeOut q;
      const char preferred = j == 0 ? 'Q' : j == 1 ? 'J' : j == 2 ? 'I' : 0;
      if ((!preferred || used_.count(preferred)) && !free_symbol()) {
        status_ = Status::bad_input(
            fmt::format("{} is {}: with the head in {} vocabulary shards each MTP module's head is a layer type of its "
                        "own, and the one-character type symbols of a model YAML run out after {} modules; import at "
                        "most {} MTP modules, or their heads unsharded (vocab_shards 1)",
                        mtp_what(), m_.mtp_modules, o_.vocab_shards, j, j),
            m_.mtp_loc);
        return;
      }
      q.symbol = claim(preferred);
      q.name = o_.vocab_shards > 1 ? "mtp-head-shard" : "mtp-head";
      q.kind = "head";
      q.arch = head_arch();
      mtp_heads_ += q.symbol;
      add_type(q);
    }
  }

  void build_layers() {
    if (m_.vision_layers > 0)
      entries_.push_back({{"type", "Y"},
                          {"repeat", std::to_string(m_.vision_layers)},
                          {"module", fmt::format("\"{}\"", m_.vision_module)}});
    const int embedding = m_.vision_layers;  // the text embedding's index
    entries_.push_back({{"type", "E"}, {"module", m_.names.embedding}});
    int index = embedding + 1;  // YAML layer index of the next layer
    const size_t n = m_.layers.size();
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;
      while (j < n && layer_symbols_[j] == layer_symbols_[i]) ++j;
      const std::string& sym = layer_symbols_[i];
      const size_t run = j - i;
      std::vector<YamlItem> entry = {{"type", sym}};
      if (run > 1) entry.push_back({"repeat", std::to_string(run)});
      entry.push_back({"module", fmt::format("\"{}\"", m_.names.layer)});
      entries_.push_back(std::move(entry));
      const std::string tname = types_by_symbols(sym);
      auto it = std::find_if(counts_.begin(), counts_.end(), [&](const auto& c) { return c.first == tname; });
      if (it == counts_.end()) counts_.emplace_back(tname, run);
      else it->second += run;
      index += static_cast<int>(run * sym.size());
      i = j;
    }
    int last_hidden = index - 1;  // the last decoder layer
    const std::string shards(static_cast<size_t>(o_.vocab_shards), 'L');
    entries_.push_back({{"type", shards}, {"module", fmt::format("[{}, {}]", m_.names.final_norm, m_.names.head)}});
    index += static_cast<int>(shards.size());
    for (int j = 0; j < m_.mtp_modules; ++j) {
      std::string name = m_.names.mtp;
      if (size_t at = name.find("{i}"); at != std::string::npos)
        name.replace(at, 3, std::to_string(m_.layers.size() + j));  // after the decoder layers (HF)
      if (size_t at = name.find("{j}"); at != std::string::npos) name.replace(at, 3, std::to_string(j));
      const char head = mtp_heads_[mtp_heads_.size() == 1 ? 0 : j];
      entries_.push_back(
          {{"type", "m"}, {"inputs", fmt::format("[{}, {}]", embedding, last_hidden)}, {"module", name}});
      index += 1;
      const std::string rest = mtp_symbols_ + std::string(static_cast<size_t>(o_.vocab_shards), head);
      entries_.push_back({{"type", rest}, {"module", name}});
      last_hidden = index + static_cast<int>(mtp_symbols_.size()) - 1;
      index += static_cast<int>(rest.size());
    }
  }

  std::string types_by_symbols(const std::string& syms) const {
    std::string s;
    for (char c : syms)
      for (const TypeOut& t : types_)
        if (t.symbol == c) s += (s.empty() ? "" : " / ") + t.name;
    return s;
  }

  // The architecture block in one order (docs/inputs.md's table), whichever order a source gave it.
  static std::vector<ArchEntry> canonical(std::vector<ArchEntry> arch) {
    static const std::vector<std::string> kOrder = {
        "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_kv_heads", "head_dim", "vocab_size",
        "tied_embeddings", "moe_num_experts", "moe_top_k", "moe_ffn_hidden_size", "moe_shared_experts",
        "moe_shared_ffn_hidden_size", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
        "v_head_dim", "mamba_state_size", "mamba_num_heads", "mamba_expand", "mamba_head_dim", "mamba_groups",
        "mamba_conv_kernel", "mamba_chunk_size", "deltanet_key_heads", "deltanet_value_heads",
        "deltanet_key_head_dim", "deltanet_value_head_dim", "deltanet_conv_kernel", "deltanet_chunk_size",
        "gated_mlp"};
    auto rank = [&](const ArchEntry& a) {
      auto it = std::find(kOrder.begin(), kOrder.end(), a.key);
      return it - kOrder.begin();
    };
    std::stable_sort(arch.begin(), arch.end(), [&](const ArchEntry& x, const ArchEntry& y) { return rank(x) < rank(y); });
    return arch;
  }

  // The model YAML, without the header (format_model_yaml's layout: ir/model_write.h).
  std::string yaml() const {
    ModelDocument d;
    d.name = m_.name;
    for (const ArchEntry& a : canonical(m_.arch)) d.architecture.push_back({a.key, a.value, a.source});
    const long long s = o_.seq_length.value_or(m_.seq_length.value_or(kDefaultImportSeqLength));
    const std::string s_src = o_.seq_length                ? "import option"
                              : m_.seq_length              ? m_.seq_length_source
                                                           : fmt::format("import default ({})", kDefaultImportSeqLength);
    d.architecture.push_back({"seq_length", std::to_string(s), s_src});
    const long long b = o_.micro_batch_size.value_or(m_.micro_batch_size.value_or(1));
    const std::string b_src = o_.micro_batch_size ? "import option"
                              : m_.micro_batch_size ? m_.micro_batch_size_source
                                                    : "import default (1)";
    d.architecture.push_back({"micro_batch_size", std::to_string(b), b_src});
    d.hardware = {{"peak_tflops", "989"}, {"achievable_fraction", "0.5"}, {"hbm_gb_per_s", "3350"}};
    if (m_.moe) d.hardware.push_back({"moe_achievable_fraction", "0.25"});
    for (const TypeOut& t : types_) {
      std::vector<YamlItem> fields = {{"name", t.name}, {"kind", t.kind}};
      if (!t.arch.empty()) {
        std::vector<YamlItem> arch;
        for (const ArchEntry& a : t.arch) arch.push_back({a.key, a.value});
        fields.push_back({"architecture", format_flow_map(arch)});
      }
      if (t.joins_next) fields.push_back({"joins_next", "true"});
      std::string why = t.comment;
      for (const ArchEntry& a : t.arch)
        if (!a.source.empty() && a.source != "import option")
          why += (why.empty() ? "" : "; ") + a.key + ": " + a.source;
      d.layer_types.push_back({std::string(1, t.symbol), format_flow_map(fields), why});
    }
    d.layer_entries = entries_;
    d.cluster_note = "# Defaults so that `pipesmith lower` works on this file alone; --cluster replaces the cluster.\n";
    const long long devices = m_.pipeline_devices.value_or(8);
    d.cluster = {{"name", fmt::format("default-{}-gpus", devices)}, {"devices", std::to_string(devices)},
                 {"memory_gb", "80"}};
    if (m_.pipeline_devices)  // the source's pipeline degree (Megatron's --pipeline-model-parallel-size)
      d.cluster_comment = "--pipeline-model-parallel-size";
    d.pipeline = {{"microbatches", "16"}, {"bytes_per_param", "18"}};
    for (const ArchEntry& a : m_.parallel) d.parallel.push_back({a.key, a.value, a.source});  // the source's mesh
    return format_model_yaml(d);
  }

  // A comment paragraph, wrapped at 110 columns (continuation lines indented).
  static std::string comment(const std::string& text) {
    std::string out, line = "#";
    size_t i = 0;
    while (i < text.size()) {
      size_t j = text.find(' ', i);
      if (j == std::string::npos) j = text.size();
      const std::string word = text.substr(i, j - i);
      if (line.size() + 1 + word.size() > 110 && line.size() > 3) {
        out += line + "\n";
        line = "#  ";
      }
      line += " " + word;
      i = j + 1;
    }
    return out + line + "\n";
  }

  std::string header(const std::optional<Spec>& spec) const {
    std::string h;
    for (const std::string& line : m_.header) h += comment(line);
    std::string counts;
    for (const auto& [name, n] : counts_) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, name);
    h += comment(fmt::format("Layer list: {}embedding, {} decoder layers ({}), head{}{}.",
                             m_.vision_layers > 0 ? fmt::format("{} vision encoder layers, ", m_.vision_layers) : "",
                             m_.layers.size(), counts,
                             o_.vocab_shards > 1 ? fmt::format(" in {} vocabulary shards", o_.vocab_shards) : "",
                             m_.mtp_modules > 0 ? fmt::format(", {} MTP module(s)", m_.mtp_modules) : ""));
    if (o_.sublayers) h += comment("Sublayers: each decoder layer's mixer and MLP/MoE are two layers (joins_next).");
    h += comment(fmt::format("Costs: derived by the analytic model (docs/inputs.md) on an H100 SXM at 50% of its dense "
                             "peak{} (assumed; a profile or a cluster's hardware: block replaces it).",
                             m_.moe ? ", expert GEMMs at 25%" : ""));
    if (spec) {
      double total = 0, mtp = 0;
      for (const Layer& l : spec->model.layers) {
        const double p = spec->model.types.at(l.type).params_m;
        total += p;
        const char t = l.type;
        if (t == 'm' || mtp_symbols_.find(t) != std::string::npos || mtp_heads_.find(t) != std::string::npos) mtp += p;
      }
      if (m_.mtp_modules > 0) {
        h += fmt::format("# Parameters (analytic): {:.1f} M, {:.1f} M without the MTP module(s).\n", total,
                         total - mtp);
      } else {
        h += fmt::format("# Parameters (analytic): {:.1f} M.\n", total);
      }
    }
    return h;
  }

  const ImportedModel& m_;
  const ImportOptions& o_;
  Status status_;  // the first type that found no symbol
  std::set<char> used_;
  std::vector<TypeOut> types_;
  std::map<std::string, char> whole_, split_;
  std::vector<std::string> layer_symbols_;
  std::string mtp_symbols_, mtp_heads_;
  std::vector<std::vector<YamlItem>> entries_;  // model.layers, each a flow map
  std::vector<std::pair<std::string, size_t>> counts_;  // decoder layers per type, in order of appearance
};

}  // namespace

const char* sublayer_name(Sublayer s) { return info(s).name; }

void add_shared_experts(ImportedModel& m, long long shared_ffn, const std::string& source) {
  long long fe = 0;
  for (const ArchEntry& a : m.arch)
    if (a.key == "moe_ffn_hidden_size") fe = std::stoll(a.value);
  if (fe > 0 && shared_ffn % fe == 0) {
    m.arch.push_back({"moe_shared_experts", std::to_string(shared_ffn / fe),
                      fmt::format("{} / the expert size ({} / {})", source, shared_ffn, fe)});
    return;
  }
  m.arch.push_back({"moe_shared_experts", "1", fmt::format("{} > 0: one shared expert", source)});
  m.arch.push_back({"moe_shared_ffn_hidden_size", std::to_string(shared_ffn), source});
}

Result<std::string> write_imported_model(const ImportedModel& m, const ImportOptions& opt) {
  return Writer(m, opt).run();
}

}  // namespace ps
