#include "runtime/exec_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace ps::rt {

const char* block_kind_name(BlockKind k) {
  switch (k) {
    case BlockKind::kEmbedding: return "embedding";
    case BlockKind::kMlp: return "mlp";
    case BlockKind::kHead: return "head";
  }
  return "?";
}

namespace {

uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d);
}

// Uniform in [-1, 1) from 24 random bits (exactly representable in fp32).
float unit_uniform(uint64_t h) {
  return static_cast<float>(static_cast<double>(h >> 40) / static_cast<double>(1ull << 23) - 1.0);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// By name ("embedding", "lm_head", "loss"), else by the analytic kind's first/last component
// ("embedding+...", "...+head"; the alias "mtp" = mtp_projection+attention+moe+head, docs/inputs.md).
BlockKind kind_of_type_impl(const LayerType& t) {
  const std::string n = lower(t.name), k = lower(t.kind);
  if (n.find("embed") != std::string::npos || k.rfind("embedding", 0) == 0) return BlockKind::kEmbedding;
  if (n.find("head") != std::string::npos || n.find("loss") != std::string::npos) return BlockKind::kHead;
  if (k == "mtp" || (k.size() >= 4 && k.compare(k.size() - 4, 4, "head") == 0)) return BlockKind::kHead;
  return BlockKind::kMlp;
}

BlockKind kind_of_type(const LayerType& t) { return kind_of_type_impl(t); }

int scaled(int base, double scale) {
  return std::max(4, static_cast<int>(std::lround(base * scale)));
}

}  // namespace

BlockKind block_kind_of(const LayerType& type) { return kind_of_type_impl(type); }

Result<ExecModel> build_exec_model(const Problem& problem, const Model* model,
                                   const ExecModelOptions& opt) {
  if (problem.num_stages() <= 0) return Status::bad_input("cannot build a model: the problem has no stages");
  if (!(opt.scale > 0) || opt.scale > 64)
    return Status::bad_input(fmt::format("scale must be in (0, 64], got {}", opt.scale));
  if (problem.microbatches <= 0)
    return Status::bad_input(fmt::format("cannot run {} microbatches", problem.microbatches));
  ExecModel m;
  m.tokens = std::max(1, opt.tokens);
  m.d_model = scaled(opt.d_model, opt.scale);
  m.vocab_in = scaled(opt.vocab, opt.scale);
  m.vocab_out = m.vocab_in;
  m.microbatches = problem.microbatches;
  m.seed = opt.seed;
  const int hidden0 = scaled(opt.hidden, opt.scale);
  const int S = problem.num_stages();
  m.stages.resize(S);
  auto clamp_ratio = [&](double r) {
    if (!(r > 0) || !std::isfinite(r)) return 1.0;
    return std::clamp(r, 1.0, opt.max_width_ratio);
  };

  bool with_layers = model != nullptr && !model->layers.empty();
  for (const StageSpec& st : problem.stages)
    if (st.first_layer < 0 || st.last_layer < st.first_layer) with_layers = false;
  if (model != nullptr && !with_layers)
    m.notes.push_back("the schedule's stages carry no layer ranges: one MLP block per stage");
  if (with_layers) {
    const int n_layers = static_cast<int>(model->layers.size());
    int expect = 0;
    for (int s = 0; s < S; ++s) {
      const StageSpec& st = problem.stages[s];
      if (st.first_layer != expect || st.last_layer >= n_layers)
        return Status::bad_input(fmt::format(
            "stage {} covers layers {}..{}, but the model '{}' has layers 0..{} and stage {} must "
            "start at layer {}",
            s, st.first_layer, st.last_layer, model->name, n_layers - 1, s, expect));
      expect = st.last_layer + 1;
    }
    if (expect != n_layers)
      return Status::bad_input(fmt::format("the stages cover layers 0..{}, but model '{}' has {} layers",
                                           expect - 1, model->name, n_layers));
    double min_mlp_ms = std::numeric_limits<double>::infinity();
    double min_any_ms = std::numeric_limits<double>::infinity();
    for (const auto& [sym, t] : model->types) {
      if (t.forward_ms > 0) min_any_ms = std::min(min_any_ms, t.forward_ms);
      if (kind_of_type(t) == BlockKind::kMlp && t.forward_ms > 0) min_mlp_ms = std::min(min_mlp_ms, t.forward_ms);
    }
    if (!std::isfinite(min_mlp_ms)) min_mlp_ms = min_any_ms;
    // The vocabulary-parallel head: the run of consecutive layers of the last layer's type, when that
    // type is a head (layers head_first..n_layers-1; a run of one is an ordinary head). Only one type:
    // a different head type before the last layer (DeepSeek's main head before its MTP head) is not a
    // shard of it.
    int head_first = n_layers;
    if (auto last = model->types.find(model->layers.back().type);
        last != model->types.end() && kind_of_type(last->second) == BlockKind::kHead) {
      head_first = n_layers - 1;
      while (head_first > 0 && model->layers[head_first - 1].type == model->layers.back().type) --head_first;
    }
    const int head_shards = n_layers - head_first;
    int class_offset = 0;
    for (int s = 0; s < S; ++s) {
      for (int l = problem.stages[s].first_layer; l <= problem.stages[s].last_layer; ++l) {
        auto it = model->types.find(model->layers[l].type);
        if (it == model->types.end())
          return Status::bad_input(fmt::format("layer {} has unknown type '{}'", l, model->layers[l].type),
                                   model->layers[l].loc);
        const LayerType& t = it->second;
        BlockSpec b;
        b.layer = l;
        b.type = t.symbol == '?' ? model->layers[l].type : t.symbol;
        b.kind = kind_of_type(t);
        const double ratio = clamp_ratio(t.forward_ms / min_mlp_ms);
        if (b.kind == BlockKind::kEmbedding && l != 0) {
          m.notes.push_back(fmt::format("layer {} ('{}' {}) is not the first layer: run as an MLP block", l,
                                        b.type, t.name));
          b.kind = BlockKind::kMlp;
        }
        if (b.kind == BlockKind::kHead && l >= head_first) {
          b.shard = l - head_first;
          b.shards = head_shards;
        } else if (b.kind == BlockKind::kHead && l != n_layers - 1) {
          m.notes.push_back(fmt::format("layer {} ('{}' {}) is not the last layer: run as an MLP block", l,
                                        b.type, t.name));
          b.kind = BlockKind::kMlp;
        }
        if (opt.widths_from_params) {
          const double per_col = t.params_m * 1e6 / m.d_model;  // elements per activation column
          const double width = b.kind == BlockKind::kMlp ? per_col / 2.0 : per_col;
          if (!(width >= 1.0) || width > 1 << 20)
            return Status::bad_input(
                fmt::format("layer type '{}' ({}): params_m {} gives a block width of {:.6g} at d_model {}; widths "
                            "from params are for models written by the profiler (runtime/profile.h) at the same scale",
                            b.type, t.name, t.params_m, width, m.d_model),
                t.loc);
          if (b.kind == BlockKind::kMlp) b.hidden = static_cast<int>(std::lround(width));
          if (b.kind == BlockKind::kEmbedding) m.vocab_in = b.classes = static_cast<int>(std::lround(width));
          if (b.kind == BlockKind::kHead) b.classes = static_cast<int>(std::lround(width));
        } else {
          if (b.kind == BlockKind::kMlp) b.hidden = std::max(4, static_cast<int>(std::lround(hidden0 * ratio)));
          if (b.kind == BlockKind::kEmbedding) b.classes = m.vocab_in;
          if (b.kind == BlockKind::kHead)
            b.classes = std::max(m.vocab_in, static_cast<int>(std::lround(2.0 * hidden0 * ratio)));
        }
        if (b.kind == BlockKind::kHead) {  // the global vocabulary is the sum over the shards
          b.class_offset = class_offset;
          class_offset += b.classes;
          m.vocab_out = class_offset;
        }
        m.stages[s].push_back(b);
      }
    }
    if (head_shards > 1) {
      const LayerType& t = model->types.at(model->layers.back().type);
      m.notes.push_back(fmt::format("layers {}..{} ('{}' {}): one vocabulary-parallel head ({}; {} classes in all)",
                                    head_first, n_layers - 1, t.symbol == '?' ? model->layers.back().type : t.symbol,
                                    t.name, m.describe_sharded_head(), m.vocab_out));
    }
  } else {
    double min_ms = std::numeric_limits<double>::infinity();
    for (const StageSpec& st : problem.stages)
      if (st.fwd_ms > 0) min_ms = std::min(min_ms, st.fwd_ms);
    for (int s = 0; s < S; ++s) {
      BlockSpec b;
      b.kind = BlockKind::kMlp;
      b.hidden = std::max(4, static_cast<int>(std::lround(hidden0 * clamp_ratio(problem.stages[s].fwd_ms / min_ms))));
      m.stages[s].push_back(b);
    }
  }
  if (m.stages.front().front().kind != BlockKind::kEmbedding) {
    BlockSpec e;
    e.kind = BlockKind::kEmbedding;
    e.classes = m.vocab_in;
    m.stages.front().insert(m.stages.front().begin(), e);
    m.notes.push_back("stage 0 starts with an embedding added by the runtime (token ids → vectors)");
  }
  if (m.stages.back().back().kind != BlockKind::kHead) {
    BlockSpec h;
    h.kind = BlockKind::kHead;
    h.classes = m.vocab_out;
    m.stages.back().push_back(h);
    m.notes.push_back(fmt::format("stage {} ends with a head added by the runtime (softmax cross-entropy)", S - 1));
  }
  int index = 0;
  for (auto& blocks : m.stages)
    for (BlockSpec& b : blocks) b.index = index++;
  return m;
}

std::vector<ParamSpec> ExecModel::block_params(int stage, int block) const {
  const BlockSpec& b = stages.at(stage).at(block);
  const std::string p = fmt::format("s{}.b{}.", stage, block);
  switch (b.kind) {
    case BlockKind::kEmbedding: return {{p + "table", b.classes, d_model}};
    case BlockKind::kMlp: return {{p + "w1", b.hidden, d_model}, {p + "w2", d_model, b.hidden}};
    case BlockKind::kHead: return {{p + "w", b.classes, d_model}};
  }
  return {};
}

size_t ExecModel::boundary_count(int stage) const {
  const BlockSpec& last = stages.at(stage).back();
  const size_t carries = last.is_head_shard() && !last.is_loss() ? 2 * static_cast<size_t>(tokens) : 0;
  return boundary_count() + carries;
}

int ExecModel::head_shards() const {
  if (stages.empty() || stages.back().empty()) return 1;
  const BlockSpec& last = stages.back().back();
  return last.kind == BlockKind::kHead ? last.shards : 1;
}

std::string ExecModel::describe_sharded_head() const {
  int first = -1, last = -1;
  for (int s = 0; s < num_stages(); ++s)
    for (const BlockSpec& b : stages[s])
      if (b.is_head_shard()) {
        if (first < 0) first = s;
        last = s;
      }
  const std::string where = first == last ? fmt::format("stage {}", first) : fmt::format("stages {}–{}", first, last);
  return fmt::format("{} shards, {}", head_shards(), where);
}

std::vector<ParamSpec> ExecModel::stage_params(int stage) const {
  std::vector<ParamSpec> out;
  for (int b = 0; b < static_cast<int>(stages.at(stage).size()); ++b)
    for (ParamSpec& p : block_params(stage, b)) out.push_back(std::move(p));
  return out;
}

size_t ExecModel::stage_param_count(int stage) const {
  size_t n = 0;
  for (const ParamSpec& p : stage_params(stage)) n += p.count();
  return n;
}

std::string ExecModel::describe() const {
  std::string out;
  for (int s = 0; s < num_stages(); ++s) {
    out += fmt::format("stage {}:", s);
    for (const BlockSpec& b : stages[s]) {
      std::string what;
      if (b.kind == BlockKind::kMlp) what = fmt::format("mlp(h={}", b.hidden);
      if (b.kind == BlockKind::kEmbedding) what = fmt::format("embedding(rows={}", b.classes);
      if (b.kind == BlockKind::kHead)
        what = b.is_head_shard() ? fmt::format("head(shard {}/{}, classes={}", b.shard, b.shards, b.classes)
                                 : fmt::format("head(classes={}", b.classes);
      if (b.layer >= 0) what += fmt::format(", layer {} '{}'", b.layer, b.type);
      out += " " + what + ")";
    }
    out += "\n";
  }
  return out;
}

std::string ExecModel::stage_summary(int stage) const {
  int mlps = 0, hmin = 0, hmax = 0;
  int shard_first = -1, shard_last = -1, shard_classes = 0;
  std::string head, emb;
  for (const BlockSpec& b : stages.at(stage)) {
    if (b.kind == BlockKind::kEmbedding) emb = fmt::format("embedding ({} rows)", b.classes);
    if (b.kind == BlockKind::kHead && !b.is_head_shard()) head = fmt::format("head ({} classes)", b.classes);
    if (b.is_head_shard()) {
      if (shard_first < 0) shard_first = b.shard;
      shard_last = b.shard;
      shard_classes += b.classes;
      head = fmt::format("head shard{} {} of {} ({} classes)", shard_first == shard_last ? "" : "s",
                         shard_first == shard_last ? std::to_string(shard_first)
                                                   : fmt::format("{}-{}", shard_first, shard_last),
                         b.shards, shard_classes);
    }
    if (b.kind == BlockKind::kMlp) {
      hmin = mlps == 0 ? b.hidden : std::min(hmin, b.hidden);
      hmax = mlps == 0 ? b.hidden : std::max(hmax, b.hidden);
      ++mlps;
    }
  }
  std::string out = emb;
  if (mlps > 0)
    out += fmt::format("{}{} mlp (h {})", out.empty() ? "" : ", ", mlps,
                       hmin == hmax ? std::to_string(hmin) : fmt::format("{}-{}", hmin, hmax));
  if (!head.empty()) out += (out.empty() ? "" : ", ") + head;
  return out;
}

std::vector<float> init_param(const ExecModel& m, const BlockSpec& block, int param_index,
                              const ParamSpec& spec) {
  // Uniform(-a, a) with a = 1/sqrt(fan_in) (fan_in = cols of a [out × in] matrix); embeddings a = 1.
  const double a = block.kind == BlockKind::kEmbedding ? 1.0 : 1.0 / std::sqrt(static_cast<double>(spec.cols));
  std::vector<float> v(spec.count());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(a) * unit_uniform(hash4(m.seed, 0x9a7a0000ull + block.index,
                                                      static_cast<uint64_t>(param_index), i));
  return v;
}

std::vector<int32_t> microbatch_tokens(const ExecModel& m, int mb) {
  std::vector<int32_t> t(m.tokens);
  for (int i = 0; i < m.tokens; ++i)
    t[i] = static_cast<int32_t>(hash4(m.seed, 0x70c0ull, static_cast<uint64_t>(mb), i) % m.vocab_in);
  return t;
}

std::vector<int32_t> microbatch_targets(const ExecModel& m, int mb) {
  std::vector<int32_t> t(m.tokens);
  for (int i = 0; i < m.tokens; ++i)
    t[i] = static_cast<int32_t>(hash4(m.seed, 0x7a60ull, static_cast<uint64_t>(mb), i) % m.vocab_out);
  return t;
}

}  // namespace ps::rt
