// graph.cpp — lowering a Model to the layer DAG, and the summary `pipesmith lower` prints.
//
// Guarantees: lower() accepts exactly the models whose layers reference known types and whose
// inputs name existing, distinct, earlier layers; any other model is rejected with the layer's
// location (a cycle is reported with its layers in order). Output is independent of container
// addresses: vertices are layer ids, edges are added in (consumer, producer) order.
#include "ir/graph.h"
#include "ir/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>

namespace ps {

namespace {

// Finds a cycle among `remaining` vertices (all with in-degree > 0 after Kahn's algorithm) and
// returns its layers in edge order, starting from the smallest id on it.
std::vector<int> find_cycle(const LayerGraph& g, const std::vector<int>& indegree) {
  const int n = static_cast<int>(boost::num_vertices(g));
  // Walk backwards along in-edges from a remaining vertex: every remaining vertex has a remaining
  // producer, so the walk must revisit a vertex.
  int start = -1;
  for (int v = 0; v < n && start < 0; ++v) {
    if (indegree[v] > 0) start = v;
  }
  if (start < 0) return {};
  std::vector<int> seen_at(n, -1), walk;
  int v = start;
  while (seen_at[v] < 0) {
    seen_at[v] = static_cast<int>(walk.size());
    walk.push_back(v);
    int next = -1;
    for (auto [it, end] = boost::in_edges(v, g); it != end; ++it) {
      int u = static_cast<int>(boost::source(*it, g));
      if (indegree[u] > 0 && (next < 0 || u < next)) next = u;
    }
    PS_ASSERT(next >= 0, "a vertex left by Kahn's algorithm has a remaining producer");
    v = next;
  }
  std::vector<int> cycle(walk.begin() + seen_at[v], walk.end());
  std::reverse(cycle.begin(), cycle.end());  // producer -> consumer order
  auto smallest = std::min_element(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), smallest, cycle.end());
  return cycle;
}

}  // namespace

Result<LoweredModel> lower(const Model& model) {
  const int n = static_cast<int>(model.layers.size());
  if (n == 0) return Status::bad_input("model has no layers", model.loc);
  LoweredModel out;
  LayerGraph& g = out.graph;
  for (int i = 0; i < n; ++i) {
    const Layer& l = model.layers[i];
    if (l.id != i) {
      return Status::bad_input(
          fmt::format("layer at position {} has id {} (ids must be 0..n-1 in order)", i, l.id),
          l.loc);
    }
    if (!model.types.count(l.type)) {
      return Status::bad_input(fmt::format("layer {}: unknown layer type '{}'", i, l.type), l.loc);
    }
    boost::add_vertex(LayerVertex{i, l.type}, g);
  }
  for (int v = 0; v < n; ++v) {
    const Layer& l = model.layers[v];
    std::vector<int> inputs = l.inputs;
    std::sort(inputs.begin(), inputs.end());
    for (size_t k = 0; k < inputs.size(); ++k) {
      int u = inputs[k];
      if (u < 0 || u >= n) {
        return Status::bad_input(
            fmt::format("layer {}: input {} is an unknown producer (the model has layers 0..{})", v,
                        u, n - 1),
            l.loc);
      }
      if (u == v)
        return Status::bad_input(fmt::format("layer {}: lists itself as an input (self edge)", v),
                                 l.loc);
      if (k > 0 && inputs[k - 1] == u) {
        return Status::bad_input(fmt::format("layer {}: input {} is listed twice", v, u), l.loc);
      }
      boost::add_edge(u, v, TensorEdge{model.type_of(u).output_mb}, g);
    }
  }
  // Kahn's algorithm, smallest ready id first: the order is 0..n-1 whenever inputs name earlier
  // layers.
  std::vector<int> indegree(n, 0);
  for (int v = 0; v < n; ++v) indegree[v] = static_cast<int>(boost::in_degree(v, g));
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int v = 0; v < n; ++v) {
    if (indegree[v] == 0) ready.push(v);
  }
  while (!ready.empty()) {
    int u = ready.top();
    ready.pop();
    out.topo_order.push_back(u);
    for (auto [it, end] = boost::out_edges(u, g); it != end; ++it) {
      int v = static_cast<int>(boost::target(*it, g));
      if (--indegree[v] == 0) ready.push(v);
    }
  }
  if (static_cast<int>(out.topo_order.size()) != n) {
    std::vector<int> cycle = find_cycle(g, indegree);
    std::string path;
    for (int v : cycle) path += fmt::format("{} -> ", v);
    path += std::to_string(cycle.front());
    return Status::bad_input(fmt::format("the layer inputs form a cycle: {}", path),
                             model.layers[cycle.front()].loc);
  }
  for (int v = 0; v < n; ++v) {
    for (int u : model.layers[v].inputs) {
      if (u > v) {
        return Status::bad_input(
            fmt::format(
                "layer {}: input {} is a later layer (layers must be listed in topological order)",
                v, u),
            model.layers[v].loc);
      }
    }
    const std::vector<int>& in = model.layers[v].inputs;
    bool chain_input = v == 0 ? in.empty() : (in.size() == 1 && in[0] == v - 1);
    if (!chain_input) out.is_chain = false;
  }
  return out;
}

ModelSummary summarize(const Spec& spec, const LoweredModel& lowered) {
  const Model& m = spec.model;
  ModelSummary s;
  s.name = m.name;
  s.layers = static_cast<int>(m.layers.size());
  s.edges = static_cast<int>(boost::num_edges(lowered.graph));
  s.is_chain = lowered.is_chain;
  std::map<char, TypeTotals> per;
  for (const auto& [sym, t] : m.types) {
    TypeTotals& tt = per[sym];
    tt.symbol = sym;
    tt.name = t.name;
  }
  for (const Layer& l : m.layers) {
    const LayerType& t = m.types.at(l.type);
    TypeTotals& tt = per[l.type];
    tt.count += 1;
    tt.fwd_ms += t.forward_ms;
    tt.bwd_input_ms += t.backward_input_ms;
    tt.bwd_weight_ms += t.backward_weight_ms;
    tt.params_m += t.params_m;
    tt.activation_mb += t.activation_mb;
    s.layer_string.push_back(l.type);
  }
  for (const auto& [sym, tt] : per) {  // std::map: sorted by symbol
    s.per_type.push_back(tt);
    s.total_fwd_ms += tt.fwd_ms;
    s.total_bwd_input_ms += tt.bwd_input_ms;
    s.total_bwd_weight_ms += tt.bwd_weight_ms;
    s.total_params_m += tt.params_m;
    s.total_activation_mb += tt.activation_mb;
    if (tt.name.rfind("mtp", 0) == 0) s.mtp_params_m += tt.params_m;
  }
  s.model_state_gb = mb_to_gb(s.total_params_m * spec.pipeline.bytes_per_param);
  return s;
}

}  // namespace ps
