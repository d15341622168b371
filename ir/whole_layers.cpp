// whole_layers.cpp — see whole_layers.h.
#include "ir/whole_layers.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace ps {

namespace {

// The Megatron kind word of a group (as synth/megatron_layout.h reads kinds and names).
std::string group_kind(const Model& m, int first, int end) {
  bool mtp = false, emb = false, head = false;
  for (int l = first; l < end; ++l) {
    const LayerType& t = m.type_of(l);
    for (const std::string* w : {&t.kind, &t.name}) {
      mtp = mtp || *w == "mtp" || *w == "mtp_projection";
      emb = emb || *w == "embedding";
      head = head || *w == "head" || *w == "loss" || *w == "lm_head";
    }
    mtp = mtp || m.layers[l].type == 'm';
    emb = emb || m.layers[l].type == 'E';
    head = head || m.layers[l].type == 'L';
  }
  return mtp ? "mtp" : emb ? "embedding" : head ? "head" : "";
}

}  // namespace

Result<WholeLayerModel> whole_layer_model(const Spec& spec) {
  const Model& m = spec.model;
  const int n = static_cast<int>(m.layers.size());
  WholeLayerModel w;
  w.spec = spec;
  Model& g = w.spec.model;
  g.layers.clear();
  for (int l = 0; l < n; ++l)
    if (l == 0 || !m.type_of(l - 1).joins_next) w.first.push_back(l);
  w.first.push_back(n);
  const int groups = static_cast<int>(w.first.size()) - 1;
  std::vector<int> group_of(n);
  for (int k = 0; k < groups; ++k)
    for (int l = w.first[k]; l < w.first[k + 1]; ++l) group_of[l] = k;
  // Members read after their group (through `inputs`): their outputs cross the group's boundary.
  std::vector<std::set<int>> read_after(groups);
  for (int l = 0; l < n; ++l)
    for (int u : m.layers[l].inputs)
      if (group_of[u] != group_of[l]) read_after[group_of[u]].insert(u);

  std::string free_symbols;
  for (char c = 33; c < 127; ++c)
    if (!m.types.count(c) && c != 'E' && c != 'L' && c != 'm') free_symbols += c;  // E, L, m: Megatron kinds
  std::map<std::string, char> symbol_of;  // pattern → its grouped type
  size_t next_free = 0;
  for (int k = 0; k < groups; ++k) {
    const int a = w.first[k], b = w.first[k + 1];
    Layer layer;
    layer.id = k;
    layer.loc = m.layers[a].loc;
    layer.modules = m.layers[a].modules;
    for (int l = a; l < b; ++l)
      for (int u : m.layers[l].inputs)
        if (group_of[u] != k) layer.inputs.push_back(group_of[u]);
    std::sort(layer.inputs.begin(), layer.inputs.end());
    layer.inputs.erase(std::unique(layer.inputs.begin(), layer.inputs.end()), layer.inputs.end());
    if (b - a == 1) {
      layer.type = m.layers[a].type;
      g.layers.push_back(std::move(layer));
      continue;
    }
    // One grouped type per symbol pattern and boundary output (a member read later through
    // `inputs` adds its output to the group's).
    double out = m.type_of(b - 1).output_mb;
    for (int u : read_after[k])
      if (u != b - 1) out += m.type_of(u).output_mb;
    std::string pattern;
    for (int l = a; l < b; ++l) pattern += m.layers[l].type;
    pattern += fmt::format("|{}", out);
    auto it = symbol_of.find(pattern);
    if (it == symbol_of.end()) {
      if (next_free == free_symbols.size())
        return Status::bad_input(fmt::format("model '{}': too many distinct joined-layer patterns to group ({} free symbols)",
                                             m.name, free_symbols.size()));
      LayerType t = summed_costs(m, a, b - 1);
      // A split W's walk counts the layers before each member in its stage, original layers, not
      // groups: the walks inside the group are in W already; each earlier group adds its own size
      // in layers, taken as this group's (exact where the groups before it are as large).
      t.weight_walk_ms *= b - a;
      t.symbol = free_symbols[next_free++];
      t.loc = m.type_of(a).loc;
      for (int l = a; l < b; ++l) {
        const LayerType& x = m.type_of(l);
        t.name += (l == a ? "" : "+") + x.name;
        t.vocab_shards = std::max(t.vocab_shards, x.vocab_shards);
      }
      t.output_mb = out;
      t.kind = group_kind(m, a, b);
      it = symbol_of.emplace(pattern, t.symbol).first;
      g.types[t.symbol] = t;
    }
    const char sym = it->second;
    layer.type = sym;
    g.layers.push_back(std::move(layer));
  }
  return w;
}

Partition refine_partition(const Partition& grouped, const WholeLayerModel& w) {
  Partition out;
  for (const LayerRange& r : grouped) out.push_back({w.first[r.first], w.first[r.last + 1] - 1});
  return out;
}

}  // namespace ps
