// graph.h — the layer DAG (Boost.Graph), lowered from a Model.
//
// Vertices are layers (vertex id == layer id); an edge u → v carries layer u's output (output_mb) to v.
// Lowering rejects cycles, unknown producers and self-edges. The common case is a chain.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/status.h"

namespace ps {

struct LayerVertex {
  int layer = 0;
  char type = '?';
};
struct TensorEdge {
  double bytes_mb = 0;  // size of the tensor crossing this edge
};
using LayerGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                         LayerVertex, TensorEdge>;

struct LoweredModel {
  LayerGraph graph;
  std::vector<int> topo_order;  // layer ids in a topological order (== 0..n-1 for valid input)
  bool is_chain = true;         // every layer's only input is the previous one
};

Result<LoweredModel> lower(const Model& model);

// Summary for `pipesmith lower`: layers, per-type costs, totals per type, model-state memory.
struct TypeTotals {
  char symbol = '?';
  std::string name;
  int count = 0;
  double fwd_ms = 0, bwd_input_ms = 0, bwd_weight_ms = 0, params_m = 0, activation_mb = 0;
};
struct ModelSummary {
  std::string name;
  int layers = 0;
  int edges = 0;
  bool is_chain = true;
  std::vector<TypeTotals> per_type;  // sorted by symbol
  double total_fwd_ms = 0, total_bwd_input_ms = 0, total_bwd_weight_ms = 0;
  double total_params_m = 0, total_activation_mb = 0;
  // Parameters of the multi-token-prediction modules: the layer types named "mtp…" (as `pipesmith
  // import` names them). Published totals often leave them out (DeepSeek-V3: 671 B, 685 B with MTP).
  double mtp_params_m = 0;
  double model_state_gb = 0;         // total_params_m * bytes_per_param / 1000
  std::string layer_string;          // "EM-M-M*-L"
};
ModelSummary summarize(const Spec& spec, const LoweredModel& lowered);

}  // namespace ps
