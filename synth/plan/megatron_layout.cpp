#include "synth/plan/megatron_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace ps {

namespace {

constexpr size_t kMaxExpanded = 1'000'000;  // symbols after expansion (guards "t*99999999")

bool is_symbol(char c) {
  return c == 'E' || c == 't' || c == 'm' || c == 'L';
}

const char* kind_name(char k) {
  switch (k) {
    case 'E':
      return "embedding";
    case 't':
      return "decoder";
    case 'm':
      return "MTP";
    case 'L':
      return "loss";
  }
  return "?";
}

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Result<std::string> run() {
    std::string out;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ',') {
        ++pos_;
        continue;
      }
      if (c == ')') return fail(pos_, "')' without a matching '('");
      if (c == '*') return fail(pos_, "'*' must follow a symbol, '|' or a ')'");
      if (c == '(') {
        size_t open = pos_++;
        std::string group;
        bool closed = false;
        while (pos_ < text_.size()) {
          char g = text_[pos_];
          if (g == ')') {
            closed = true;
            ++pos_;
            break;
          }
          if (g == '(')
            return fail(pos_, "groups do not nest (Megatron's syntax has no nested '(')");
          if (g == ',') {
            ++pos_;
            continue;
          }
          auto atom = parse_atom();
          if (!atom.ok()) return atom.status();
          group += *atom;
          if (group.size() > kMaxExpanded) return too_long();
        }
        if (!closed) return fail(open, "'(' is never closed");
        if (pos_ >= text_.size() || text_[pos_] != '*')
          return fail(pos_ > 0 ? pos_ - 1 : 0, "a group '(...)' must be followed by *N");
        auto n = parse_count();
        if (!n.ok()) return n.status();
        if (group.size() * static_cast<size_t>(*n) + out.size() > kMaxExpanded) return too_long();
        for (int i = 0; i < *n; ++i) out += group;
        continue;
      }
      auto atom = parse_atom();
      if (!atom.ok()) return atom.status();
      out += *atom;
      if (out.size() > kMaxExpanded) return too_long();
    }
    return out;
  }

 private:
  // A symbol or '|', optionally followed by *N.
  Result<std::string> parse_atom() {
    char c = text_[pos_];
    if (!is_symbol(c) && c != '|')
      return fail(pos_, fmt::format("unexpected '{}' (expected E, t, m, L, '|', ',', '(...)*N' or "
                                    "x*N)",
                                    c));
    ++pos_;
    int n = 1;
    if (pos_ < text_.size() && text_[pos_] == '*') {
      auto r = parse_count();
      if (!r.ok()) return r.status();
      n = *r;
    }
    if (static_cast<size_t>(n) > kMaxExpanded) return too_long();
    return std::string(static_cast<size_t>(n), c);
  }

  // At '*': reads "*N" and returns N.
  Result<int> parse_count() {
    size_t star = pos_++;
    size_t start = pos_;
    long long v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      v = v * 10 + (text_[pos_] - '0');
      if (v > static_cast<long long>(kMaxExpanded)) return too_long();
      ++pos_;
    }
    if (pos_ == start) return fail(star, "'*' must be followed by a repeat count");
    return static_cast<int>(v);
  }

  Status fail(size_t at, const std::string& why) const {
    return Status::bad_input(
        fmt::format("pipeline layout \"{}\", column {}: {}", text_, at + 1, why));
  }
  Status too_long() const {
    return Status::bad_input(
        fmt::format("pipeline layout \"{}\" expands to more than {} symbols", text_, kMaxExpanded));
  }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

Result<MegatronLayout> parse_megatron_layout(const std::string& text) {
  if (text.empty()) return Status::bad_input("pipeline layout is empty");
  Parser parser(text);
  auto flat = parser.run();
  if (!flat.ok()) return flat.status();
  MegatronLayout layout;
  layout.text = text;
  layout.stages.emplace_back();
  for (char c : *flat) {
    if (c == '|')
      layout.stages.emplace_back();
    else
      layout.stages.back() += c;
  }
  return layout;
}

bool looks_like_megatron_layout(const std::string& text) {
  if (text.empty()) return false;
  if (text.find('|') != std::string::npos) return true;
  for (char c : text)
    if (!is_symbol(c) && c != '*' && c != '(' && c != ')' && c != ',' &&
        !std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

char megatron_kind(const Model& model, int layer) {
  const Layer& l = model.layers.at(layer);
  if (l.type == 'E' || l.type == 'L' || l.type == 'm') return l.type;
  auto it = model.types.find(l.type);
  if (it != model.types.end()) {
    for (const std::string* word : {&it->second.kind, &it->second.name}) {
      if (*word == "embedding") return 'E';
      if (*word == "head" || *word == "loss" || *word == "lm_head") return 'L';
      if (*word == "mtp" || *word == "mtp_projection") return 'm';
    }
  }
  return 't';
}

MegatronLayers megatron_layers(const Model& model) {
  MegatronLayers ml;
  const int n = static_cast<int>(model.layers.size());
  for (int l = 0; l < n; ++l) {
    // A vocabulary-sharded head (a run of one head type) is one loss layer to Megatron, as to the
    // runtime: its shards stay together, as the unsharded head would.
    const bool next_shard = l > 0 && model.layers[l].type == model.layers[l - 1].type &&
                            megatron_kind(model, l) == 'L';
    const bool starts = l == 0 || !(model.type_of(l - 1).joins_next || next_shard);
    if (starts) {
      ml.first.push_back(l);
      ml.kinds.push_back('t');
    }
    char& k = ml.kinds.back();
    const char own = megatron_kind(model, l);
    auto rank = [](char c) { return c == 'm' ? 3 : c == 'E' ? 2 : c == 'L' ? 1 : 0; };
    if (rank(own) > rank(k)) k = own;
  }
  return ml;
}

Result<LayoutPlan> apply_megatron_layout(const MegatronLayout& layout, const Model& model,
                                         int devices) {
  int num_stages = static_cast<int>(layout.stages.size());
  if (devices <= 0)
    return Status::bad_input(fmt::format("layout needs devices > 0, got {}", devices));
  if (num_stages % devices != 0)
    return Status::bad_input(fmt::format(
        "pipeline layout \"{}\" has {} stages, not a multiple of the pipeline size P = {} "
        "(Megatron requires stages = P × virtual stages)",
        layout.text, num_stages, devices));
  for (int s = 0; s < num_stages; ++s)
    if (layout.stages[s].empty())
      return Status::bad_input(fmt::format(
          "pipeline layout \"{}\": stage {} (rank {}, virtual chunk {}) is empty; pipesmith "
          "stages need at least one layer",
          layout.text, s, s % devices, s / devices));

  // Count kinds on both sides first: the most useful message when they differ.
  const int n = static_cast<int>(model.layers.size());
  const MegatronLayers ml = megatron_layers(model);
  const std::string& model_kinds = ml.kinds;
  std::string layout_kinds;
  for (const auto& st : layout.stages) layout_kinds += st;
  for (char k : std::string("EtmL")) {
    auto cm = std::count(model_kinds.begin(), model_kinds.end(), k);
    auto cl = std::count(layout_kinds.begin(), layout_kinds.end(), k);
    if (cm != cl)
      return Status::bad_input(fmt::format(
          "pipeline layout \"{}\" has {} {} layer(s) ('{}'), model '{}' has {} (of {} layers{})",
          layout.text, cl, kind_name(k), k, model.name, cm, ml.size(),
          ml.size() == n ? "" : fmt::format(", {} with sublayers", n)));
  }
  // Same counts: now the order must agree position by position.
  LayoutPlan plan;
  int unit = 0;
  for (int s = 0; s < num_stages; ++s) {
    const int first = ml.first[unit];
    for (char k : layout.stages[s]) {
      if (model_kinds[unit] != k) {
        const int layer = ml.first[unit];
        const Layer& l = model.layers[layer];
        auto it = model.types.find(l.type);
        std::string tname = it != model.types.end() ? it->second.name : "?";
        return Status::bad_input(fmt::format(
            "pipeline layout \"{}\": stage {} expects a {} layer ('{}') at model layer {}, but the "
            "model has '{}' ({}, a {} layer) there",
            layout.text, s, kind_name(k), k, layer, l.type, tname, kind_name(model_kinds[unit])));
      }
      ++unit;
    }
    plan.partition.push_back({first, ml.end(unit - 1, n) - 1});
    plan.placement.push_back(s % devices);
  }
  plan.stages_per_device = num_stages / devices;
  return plan;
}

}  // namespace ps
