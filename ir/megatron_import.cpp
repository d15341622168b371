// megatron_import.cpp — see megatron_import.h. Tokens with their locations, then the flags read in
// the order the Hugging Face import writes the architecture (so the two imports write the same YAML).
#include "ir/megatron_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "ir/input_file.h"
#include "ir/limits.h"
#include "ir/mesh.h"

namespace ps {

namespace {

struct Token {
  std::string text;
  SourceLoc loc;
};

// Splits a shell-like argument text into tokens (quotes removed, comments and continuations skipped).
std::vector<Token> tokenize(const std::string& text, const std::string& file) {
  std::vector<Token> out;
  int line = 1, col = 1;
  size_t i = 0;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n && i < text.size(); ++k, ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') advance(1);
      continue;
    }
    if (c == '\\' && (i + 1 >= text.size() || text[i + 1] == '\n' || text[i + 1] == '\r')) {
      advance(1);
      continue;
    }
    Token t;
    t.loc = SourceLoc{file, line, col};
    char quote = 0;
    while (i < text.size()) {
      const char d = text[i];
      if (quote) {
        if (d == quote) quote = 0;
        else t.text += d;
      } else if (d == '"' || d == '\'') {
        quote = d;
      } else if (std::isspace(static_cast<unsigned char>(d))) {
        break;
      } else {
        t.text += d;
      }
      advance(1);
    }
    out.push_back(std::move(t));
  }
  return out;
}

struct Arg {
  std::string value;  // "" for a flag without a value
  bool has_value = false;
  SourceLoc loc;      // the flag's
  SourceLoc value_loc;
  int more_values = 0;  // values after the first before the next flag (argparse's nargs='+')
};

// The flags of a token list (the last occurrence wins, as argparse's does).
std::map<std::string, Arg> read_flags(const std::vector<Token>& toks) {
  std::map<std::string, Arg> flags;
  for (size_t i = 0; i < toks.size(); ++i) {
    const std::string& t = toks[i].text;
    if (t.rfind("--", 0) != 0) continue;  // a value (or the command before the flags)
    Arg a;
    a.loc = toks[i].loc;
    std::string name = t;
    if (size_t eq = t.find('='); eq != std::string::npos) {
      name = t.substr(0, eq);
      a.value = t.substr(eq + 1);
      a.has_value = true;
      a.value_loc = a.loc;
      a.value_loc.col += static_cast<int>(eq) + 1;
    } else if (i + 1 < toks.size() && toks[i + 1].text.rfind("--", 0) != 0) {
      a.value = toks[i + 1].text;
      a.has_value = true;
      a.value_loc = toks[i + 1].loc;
      for (size_t j = i + 2; j < toks.size() && toks[j].text.rfind("--", 0) != 0; ++j) ++a.more_values;
    }
    flags[name] = a;
  }
  return flags;
}

class Flags {
 public:
  Flags(std::map<std::string, Arg> f, std::string file) : f_(std::move(f)), file_(std::move(file)) {}

  bool has(const char* name) const { return f_.count(name) > 0; }
  long long need(const char* name) {
    auto it = f_.find(name);
    if (it == f_.end()) {
      fail(fmt::format("the model needs {}, which the arguments do not give", name), SourceLoc{file_, 0, 0});
      return 1;
    }
    return integer(name, it->second);
  }
  std::optional<long long> opt(const char* name) {
    auto it = f_.find(name);
    if (it == f_.end()) return std::nullopt;
    return integer(name, it->second);
  }
  std::optional<std::string> text(const char* name) {
    auto it = f_.find(name);
    if (it == f_.end()) return std::nullopt;
    if (!it->second.has_value) {
      fail(fmt::format("{} needs a value", name), it->second.loc);
      return std::nullopt;
    }
    return it->second.value;
  }
  const Arg* arg(const char* name) const {
    auto it = f_.find(name);
    return it == f_.end() ? nullptr : &it->second;
  }
  void fail(std::string msg, const SourceLoc& loc) {
    if (status.is_ok()) status = Status::bad_input(std::move(msg), loc);
  }
  Status status;

 private:
  long long integer(const char* name, const Arg& a) {
    const std::string& v = a.value;
    const bool digits = !v.empty() && v.size() < 16 && std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!a.has_value || !digits || std::stoll(v) < 1) {
      fail(fmt::format("{} must be an integer >= 1, got '{}'", name, excerpt(v)), a.has_value ? a.value_loc : a.loc);
      return 1;
    }
    return std::stoll(v);
  }

  std::map<std::string, Arg> f_;
  std::string file_;
};

void arch(ImportedModel& m, const char* key, long long v, std::string source) {
  m.arch.push_back({key, std::to_string(v), std::move(source)});
}

// --moe-layer-freq: an integer N (every N-th layer, from layer 0) or a Python list expression
// "[0]*3+[1]*58" / "([1,0]*4)" of one 0/1 per layer.
std::vector<bool> moe_pattern(Flags& f, long long layers) {
  std::vector<bool> moe(static_cast<size_t>(layers), true);
  const Arg* a = f.arg("--moe-layer-freq");
  if (!a) return moe;
  std::string v;
  for (char c : a->value)
    if (!std::isspace(static_cast<unsigned char>(c)) && c != '(' && c != ')') v += c;
  if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
    const long long n = f.opt("--moe-layer-freq").value_or(1);
    for (long long i = 0; i < layers; ++i) moe[i] = i % n == 0;
    return moe;
  }
  std::vector<bool> out;
  size_t i = 0;
  auto bad = [&] {
    f.fail(fmt::format("--moe-layer-freq must be an integer or a list such as [0]*3+[1]*58, got '{}'", excerpt(a->value)),
           a->value_loc);
    return moe;
  };
  while (i < v.size()) {
    if (v[i] != '[') return bad();
    const size_t close = v.find(']', i);
    if (close == std::string::npos) return bad();
    std::vector<bool> items;
    for (const TextField& x : split_trimmed(std::string_view(v).substr(i + 1, close - i - 1), ',')) {
      if (x.text != "0" && x.text != "1") return bad();
      items.push_back(x.text == "1");
    }
    i = close + 1;
    long long times = 1;
    if (i < v.size() && v[i] == '*') {
      size_t j = i + 1;
      while (j < v.size() && std::isdigit(static_cast<unsigned char>(v[j]))) ++j;
      if (j == i + 1 || j - i > 8) return bad();
      times = std::stoll(v.substr(i + 1, j - i - 1));
      i = j;
    }
    for (long long t = 0; t < times && static_cast<long long>(out.size()) <= layers; ++t) out.insert(out.end(), items.begin(), items.end());
    if (i < v.size()) {
      if (v[i] != '+') return bad();
      ++i;
    }
  }
  if (static_cast<long long>(out.size()) != layers) {
    f.fail(fmt::format("--moe-layer-freq lists {} layers, --num-layers is {}", out.size(), layers), a->value_loc);
    return moe;
  }
  return out;
}

}  // namespace

namespace {

// The mesh (ir/mesh.h) the arguments train with: the pipeline degree as the cluster's devices, the
// rest as `parallel:`; the interleaved schedule's stage size as a note to compare with.
void read_mesh_args(Flags& f, ImportedModel& m) {
  m.pipeline_devices = f.opt("--pipeline-model-parallel-size");
  const std::pair<const char*, const char*> degrees[] = {
      {"--tensor-model-parallel-size", "tensor"},     {"--context-parallel-size", "context"},
      {"--expert-model-parallel-size", "expert"},     {"--expert-tensor-parallel-size", "expert_tensor"},
      {"--global-batch-size", "global_batch"}};
  for (const auto& [flag, key] : degrees)
    if (std::optional<long long> v = f.opt(flag)) m.parallel.push_back({key, std::to_string(*v), flag});
  if (f.has("--sequence-parallel")) m.parallel.push_back({"sequence_parallel", "true", "--sequence-parallel"});
  if (f.has("--use-distributed-optimizer"))
    m.parallel.push_back({"optimizer", "distributed", "--use-distributed-optimizer"});
  // --cp-comm-type: one value for every layer (Megatron also takes one per layer).
  if (std::optional<std::string> v = f.text("--cp-comm-type")) {
    const Arg* a = f.arg("--cp-comm-type");
    if (a->more_values > 0)
      f.fail("--cp-comm-type: one value per layer is not supported; give one value for every layer", a->value_loc);
    else if (!parse_cp_comm(*v))
      f.fail(fmt::format("--cp-comm-type: '{}' is not modelled (expected p2p, the K/V ring, or all_gather)",
                         excerpt(*v)),
             a->value_loc);
    else
      m.parallel.push_back({"cp_comm_type", *v, "--cp-comm-type"});
  }
  if (std::optional<long long> v = f.opt("--num-layers-per-virtual-pipeline-stage"))
    m.header.push_back(fmt::format("Megatron's interleaved schedule (--num-layers-per-virtual-pipeline-stage {}): "
                                   "compare with `pipesmith synth MODEL.yaml --partition even --stages-per-device V`, "
                                   "V = the decoder layers / ({} x --pipeline-model-parallel-size).",
                                   *v, *v));
}

// The MTP modules (--mtp-num-layers), located at the value, within the layers limit.
void read_mtp_args(Flags& f, ImportedModel& m) {
  if (std::optional<long long> n = f.opt("--mtp-num-layers")) {
    const Arg* a = f.arg("--mtp-num-layers");
    m.mtp_source = "--mtp-num-layers";
    m.mtp_loc = a->has_value ? a->value_loc : a->loc;
    if (*n > limits::kMaxLayers)
      f.fail(fmt::format("--mtp-num-layers is {}; a model has at most {} layers (docs/inputs.md, \"Limits\")", *n,
                         limits::with_commas(limits::kMaxLayers)),
             m.mtp_loc);
    else
      m.mtp_modules = static_cast<int>(*n);
  }
}

}  // namespace

Result<ImportedModel> megatron_model(const std::string& text, const std::string& file_name, const std::string& name) {
  Flags f(read_flags(tokenize(text, file_name)), file_name);
  ImportedModel m;
  m.name = name;
  m.header.push_back(fmt::format("{}: imported by `pipesmith import megatron` from {} (Megatron-LM arguments).", name,
                                 std::filesystem::path(file_name).filename().string()));
  m.header.push_back("Each architecture number names the argument it came from.");

  const long long h = f.need("--hidden-size");
  const long long a = f.need("--num-attention-heads");
  const bool mla = f.has("--multi-latent-attention");
  arch(m, "hidden_size", h, "--hidden-size");
  arch(m, "num_attention_heads", a, "--num-attention-heads");
  if (!mla) {
    if (f.has("--group-query-attention") || f.has("--num-query-groups")) {
      arch(m, "num_kv_heads", f.need("--num-query-groups"), "--num-query-groups");
    } else {
      arch(m, "num_kv_heads", a, "--num-attention-heads (no --group-query-attention)");
    }
    if (std::optional<long long> d = f.opt("--kv-channels")) arch(m, "head_dim", *d, "--kv-channels");
    else if (h / a >= 1) arch(m, "head_dim", h / a, "--hidden-size / --num-attention-heads");
    else if (f.has("--hidden-size"))  // (a missing --hidden-size is reported already)
      f.fail(fmt::format("--hidden-size ({}) is smaller than --num-attention-heads ({})", h, a), f.arg("--hidden-size")->value_loc);
  }
  const char* vocab_flag = f.has("--padded-vocab-size") ? "--padded-vocab-size" : "--vocab-size";
  arch(m, "vocab_size", f.need(vocab_flag), vocab_flag);
  const bool tied = !f.has("--untie-embeddings-and-output-weights");
  if (tied) m.arch.push_back({"tied_embeddings", "true", "no --untie-embeddings-and-output-weights"});
  m.header.push_back(fmt::format("Embedding and head: {}.", tied ? "tied (Megatron's default), the weight counted once"
                                                                 : "untied (--untie-embeddings-and-output-weights)"));
  if (mla) {
    arch(m, "q_lora_rank", f.opt("--q-lora-rank").value_or(0), f.has("--q-lora-rank") ? "--q-lora-rank" : "no --q-lora-rank: Q not compressed");
    arch(m, "kv_lora_rank", f.need("--kv-lora-rank"), "--kv-lora-rank");
    arch(m, "qk_nope_head_dim", f.need("--qk-head-dim"), "--qk-head-dim");
    arch(m, "qk_rope_head_dim", f.need("--qk-pos-emb-head-dim"), "--qk-pos-emb-head-dim");
    arch(m, "v_head_dim", f.need("--v-head-dim"), "--v-head-dim");
  }

  // Flags that change the parameters and FLOPs in ways the analytic model does not describe: refused
  // by name rather than skipped (the model written would be of another size).
  if (const Arg* lat = f.arg("--moe-latent-size"))
    f.fail("--moe-latent-size changes the model's parameters and FLOPs (LatentMoE: routed experts that compute in a "
           "smaller latent space), which the analytic model does not describe; write the model YAML by hand "
           "(docs/inputs.md)",
           lat->loc);
  for (const char* ratio : {"--hybrid-attention-ratio", "--hybrid-mlp-ratio"}) {
    const Arg* r = f.arg(ratio);
    if (r && !f.has("--hybrid-override-pattern") && r->value.find_first_not_of("0.") != std::string::npos)
      f.fail(fmt::format("{} makes Megatron place attention or MLP layers among Mamba layers by a ratio, which the "
                         "import does not reproduce; give the layers as --hybrid-override-pattern",
                         ratio),
             r->loc);
  }

  // The layers: a hybrid pattern, or --num-layers transformer layers (MoE by --moe-layer-freq).
  const std::optional<std::string> pattern = f.text("--hybrid-override-pattern");
  const long long experts = f.opt("--num-experts").value_or(0);
  const Sublayer mixer = mla ? Sublayer::kMla : Sublayer::kAttention;
  bool any_mlp = false, any_moe = false, any_mamba = false;
  if (pattern) {
    const Arg* pa = f.arg("--hybrid-override-pattern");
    if (static_cast<long long>(pattern->size()) > limits::kMaxLayers)
      return Status::bad_input(fmt::format("--hybrid-override-pattern has {} characters; a model has at most {} layers",
                                           pattern->size(), limits::with_commas(limits::kMaxLayers)),
                               pa->value_loc);
    for (size_t i = 0; i < pattern->size(); ++i) {
      const char c = (*pattern)[i];
      Sublayer s = c == 'M' ? Sublayer::kMamba : c == '-' ? Sublayer::kMlp : c == '*' ? mixer : Sublayer::kMoe;
      if (c != 'M' && c != '-' && c != '*' && c != 'E') {
        f.fail(fmt::format("--hybrid-override-pattern character {} is '{}' (expected M Mamba-2, - MLP, * attention, E MoE)", i,
                           std::string(1, c)),
               pa->value_loc);
        break;
      }
      any_mlp |= s == Sublayer::kMlp;
      any_moe |= s == Sublayer::kMoe;
      any_mamba |= s == Sublayer::kMamba;
      m.layers.push_back({{s}});
    }
    if (std::optional<long long> n = f.opt("--num-layers"); n && *n != static_cast<long long>(pattern->size()))
      f.fail(fmt::format("--hybrid-override-pattern has {} characters, --num-layers is {}", pattern->size(), *n),
             pa->value_loc);
    m.header.push_back("Layers: one per character of --hybrid-override-pattern (M Mamba-2, - MLP, * attention, E MoE).");
  } else {
    const long long layers = f.need("--num-layers");
    if (layers > limits::kMaxLayers) {
      f.fail(fmt::format("--num-layers is {}; a model has at most {} layers (docs/inputs.md, \"Limits\")", layers,
                         limits::with_commas(limits::kMaxLayers)),
             f.arg("--num-layers")->value_loc);
      return f.status;
    }
    std::vector<bool> moe = experts > 0 ? moe_pattern(f, layers) : std::vector<bool>(static_cast<size_t>(layers), false);
    for (long long i = 0; i < layers; ++i) {
      m.layers.push_back({{mixer, moe[i] ? Sublayer::kMoe : Sublayer::kMlp}});
      any_moe |= moe[i];
      any_mlp |= !moe[i];
    }
  }
  // --ffn-hidden-size, else Megatron's default: 4h, or with --swiglu 2/3 of that rounded down to 64.
  const bool gated = f.has("--swiglu");
  std::pair<long long, std::string> ffn{4 * h, "Megatron's default 4 x --hidden-size"};
  if (gated) ffn = {(4 * h * 2 / 3) / 64 * 64, "Megatron's default with --swiglu: 8/3 x --hidden-size, a multiple of 64"};
  if (std::optional<long long> given = f.opt("--ffn-hidden-size")) ffn = {*given, "--ffn-hidden-size"};
  if (any_moe) {
    arch(m, "moe_num_experts", f.need("--num-experts"), "--num-experts");
    arch(m, "moe_top_k", f.opt("--moe-router-topk").value_or(2), f.has("--moe-router-topk") ? "--moe-router-topk" : "Megatron's default --moe-router-topk 2");
    if (std::optional<long long> fe = f.opt("--moe-ffn-hidden-size")) arch(m, "moe_ffn_hidden_size", *fe, "--moe-ffn-hidden-size");
    else arch(m, "moe_ffn_hidden_size", ffn.first, ffn.second + " (no --moe-ffn-hidden-size)");
    if (std::optional<long long> fs = f.opt("--moe-shared-expert-intermediate-size"))
      add_shared_experts(m, *fs, "--moe-shared-expert-intermediate-size");
    m.moe = true;
  }
  if (any_mlp) arch(m, "ffn_hidden_size", ffn.first, ffn.second);
  if (!gated && (any_mlp || any_moe)) m.arch.push_back({"gated_mlp", "false", "no --swiglu"});
  if (any_mamba) {
    arch(m, "mamba_state_size", f.opt("--mamba-state-dim").value_or(128), f.has("--mamba-state-dim") ? "--mamba-state-dim" : "Megatron's default --mamba-state-dim 128");
    if (std::optional<long long> nh = f.opt("--mamba-num-heads")) arch(m, "mamba_num_heads", *nh, "--mamba-num-heads");
    arch(m, "mamba_head_dim", f.opt("--mamba-head-dim").value_or(64), f.has("--mamba-head-dim") ? "--mamba-head-dim" : "Megatron's default --mamba-head-dim 64");
    arch(m, "mamba_groups", f.opt("--mamba-num-groups").value_or(8), f.has("--mamba-num-groups") ? "--mamba-num-groups" : "Megatron's default --mamba-num-groups 8");
    arch(m, "mamba_conv_kernel", 4, "Megatron's Mamba mixer: d_conv 4");
    arch(m, "mamba_chunk_size", 128, "Megatron's Mamba mixer: chunk_size 128");
  }
  if (std::optional<long long> s = f.opt("--seq-length")) {
    m.seq_length = *s;
    m.seq_length_source = "--seq-length";
  }
  if (std::optional<long long> b = f.opt("--micro-batch-size")) {
    m.micro_batch_size = *b;
    m.micro_batch_size_source = "--micro-batch-size";
  }
  read_mesh_args(f, m);
  read_mtp_args(f, m);
  m.mtp_block = {{mixer, any_moe ? Sublayer::kMoe : Sublayer::kMlp}};
  if (std::optional<std::string> layout = f.text("--pipeline-model-parallel-layout")) {
    m.header.push_back(fmt::format("Megatron layout (--pipeline-model-parallel-layout): compare the searched plan with "
                                   "`pipesmith synth MODEL.yaml --partition '{}'`.",
                                   *layout));
  }
  m.names = {"embedding", "decoder.layers.{i}", "decoder.final_layernorm", "output_layer", "mtp.layers.{j}"};
  if (!f.status.is_ok()) return f.status;
  return m;
}

Result<std::string> import_megatron_args(const std::string& args_path, const ImportOptions& opt) {
  std::string text;
  if (std::optional<InputFileError> why = read_input_file(args_path, text))
    return Status::bad_input(fmt::format("cannot read argument file: {}", why->reason), SourceLoc{args_path, 0, 0});
  std::string name = std::filesystem::path(args_path).stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
  if (name.empty()) name = "model";
  Result<ImportedModel> m = megatron_model(text, args_path, name);
  if (!m.ok()) return m.status();
  return write_imported_model(*m, opt);
}

}  // namespace ps
