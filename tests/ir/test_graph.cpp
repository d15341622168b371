// Lowering to the layer DAG (Boost.Graph) and the `pipesmith lower` summary.
#include <doctest/doctest.h>

#include "ir/graph.h"
#include "test_util.h"

using namespace ps;

namespace {

LayerType make_type(char sym, double fwd, double out_mb, double params_m) {
  LayerType t;
  t.symbol = sym;
  t.name = std::string(1, sym);
  t.forward_ms = fwd;
  t.backward_input_ms = 2 * fwd;
  t.backward_weight_ms = fwd;
  t.activation_mb = 100;
  t.wgrad_stash_mb = 10;
  t.output_mb = out_mb;
  t.params_m = params_m;
  return t;
}

// A chain "EAAL" with output sizes E:8, A:16, L:0, at source lines 1..4.
Model chain_model(const std::string& layers = "EAAL") {
  Model m;
  m.name = std::string("g");  // not = "g": GCC 12 -Wrestrict false positive at -O2
  m.types['E'] = make_type('E', 0.5, 8, 10);
  m.types['A'] = make_type('A', 2, 16, 20);
  m.types['L'] = make_type('L', 4, 0, 30);
  for (size_t i = 0; i < layers.size(); ++i) {
    Layer l;
    l.id = static_cast<int>(i);
    l.type = layers[i];
    if (i > 0) l.inputs = {static_cast<int>(i) - 1};
    l.loc = SourceLoc{"g.yaml", static_cast<int>(i) + 1, 3};
    m.layers.push_back(l);
  }
  return m;
}

}  // namespace

TEST_CASE("graph: a chain lowers to n vertices, n-1 edges carrying the producer's output") {
  Result<LoweredModel> r = lower(chain_model());
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  const LayerGraph& g = r->graph;
  CHECK(boost::num_vertices(g) == 4);
  CHECK(boost::num_edges(g) == 3);
  CHECK(r->is_chain);
  CHECK(r->topo_order == std::vector<int>{0, 1, 2, 3});
  CHECK(g[0].type == 'E');
  CHECK(g[3].layer == 3);
  auto [e01, found] = boost::edge(0, 1, g);
  REQUIRE(found);
  CHECK(g[e01].bytes_mb == 8);
  auto [e12, found12] = boost::edge(1, 2, g);
  REQUIRE(found12);
  CHECK(g[e12].bytes_mb == 16);
}

TEST_CASE("graph: extra inputs make a DAG (an MTP-like layer reading the embedding)") {
  Model m = chain_model("EAALA");
  m.layers[4].inputs = {0, 2, 3};
  Result<LoweredModel> r = lower(m);
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  CHECK_FALSE(r->is_chain);
  CHECK(boost::num_edges(r->graph) == 6);
  CHECK(boost::in_degree(4, r->graph) == 3);
  CHECK(boost::out_degree(0, r->graph) == 2);
  auto [e, found] = boost::edge(0, 4, r->graph);
  REQUIRE(found);
  CHECK(r->graph[e].bytes_mb == 8);
  CHECK(r->topo_order == std::vector<int>{0, 1, 2, 3, 4});

  Spec spec;
  spec.model = m;
  spec.pipeline.bytes_per_param = 18;
  ModelSummary s = summarize(spec, *r);
  CHECK(s.edges == 6);
  CHECK_FALSE(s.is_chain);
}

TEST_CASE("graph: a layer with no inputs besides layer 0 is not a chain") {
  Model m = chain_model("EAA");
  m.layers[2].inputs = {0};  // skips layer 1
  Result<LoweredModel> r = lower(m);
  REQUIRE(r.ok());
  CHECK_FALSE(r->is_chain);
  CHECK(boost::num_edges(r->graph) == 2);
}

TEST_CASE("graph: rejects cycles, self edges, unknown producers and types, with locations") {
  {
    Model m = chain_model("EAAAL");
    m.layers[1].inputs = {0, 3};  // 1 <- 3 <- 2 <- 1
    Result<LoweredModel> r = lower(m);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "the layer inputs form a cycle: 1 -> 2 -> 3 -> 1");
    CHECK(r.status().loc().line == 2);
  }
  {
    Model m = chain_model();
    m.layers[2].inputs = {1, 2};
    Result<LoweredModel> r = lower(m);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "layer 2: lists itself as an input (self edge)");
    CHECK(r.status().loc().str() == "g.yaml:3:3");
  }
  {
    Model m = chain_model();
    m.layers[3].inputs = {2, 7};
    Result<LoweredModel> r = lower(m);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          "layer 3: input 7 is an unknown producer (the model has layers 0..3)");
    CHECK(r.status().loc().line == 4);
  }
  {
    Model m = chain_model();
    m.layers[1].type = 'Q';
    Result<LoweredModel> r = lower(m);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "layer 1: unknown layer type 'Q'");
  }
  {
    Model m = chain_model();
    m.layers[2].inputs = {1, 1};
    Result<LoweredModel> r = lower(m);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "layer 2: input 1 is listed twice");
  }
  {
    // Acyclic, but not in topological order: layer 0 reads layer 2, which reads nothing.
    Model m = chain_model("EAA");
    m.layers[0].inputs = {2};
    m.layers[1].inputs = {};
    m.layers[2].inputs = {};
    Result<LoweredModel> r = lower(m);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("layer 0: input 2 is a later layer") == 0);
  }
  {
    Model m;
    Result<LoweredModel> r = lower(m);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "model has no layers");
  }
}

TEST_CASE("graph: summary totals per type and model-state memory") {
  Model m = chain_model("EAAAL");
  m.types['Z'] = make_type('Z', 1, 1, 1);  // defined but unused: listed with count 0
  Spec spec;
  spec.model = m;
  spec.pipeline.bytes_per_param = 18;
  Result<LoweredModel> r = lower(m);
  REQUIRE(r.ok());
  ModelSummary s = summarize(spec, *r);
  CHECK(s.name == "g");
  CHECK(s.layers == 5);
  CHECK(s.edges == 4);
  CHECK(s.is_chain);
  CHECK(s.layer_string == "EAAAL");
  REQUIRE(s.per_type.size() == 4);
  std::string order;
  for (const TypeTotals& t : s.per_type) order.push_back(t.symbol);
  CHECK(order == "AELZ");  // sorted by symbol
  const TypeTotals& a = s.per_type[0];
  CHECK(a.count == 3);
  CHECK(a.fwd_ms == 6);
  CHECK(a.bwd_input_ms == 12);
  CHECK(a.bwd_weight_ms == 6);
  CHECK(a.params_m == 60);
  CHECK(a.activation_mb == 300);
  CHECK(s.per_type[3].count == 0);
  CHECK(s.total_fwd_ms == 0.5 + 6 + 4);
  CHECK(s.total_bwd_input_ms == 1 + 12 + 8);
  CHECK(s.total_params_m == 10 + 60 + 30);
  CHECK(s.total_activation_mb == 500);
  CHECK(s.model_state_gb == doctest::Approx(100 * 18 / 1000.0));
}

TEST_CASE("graph: every model config lowers; deepseek-like is a DAG, the others chains") {
  for (const char* name : {"llama2-7b", "gemma-like", "deepseek-like", "nemotron-h-like",
                           "gpt-oss-like", "minimax-like"}) {
    CAPTURE(name);
    Result<Spec> spec =
        load_spec(pstest::source_path(std::string("configs/models/") + name + ".yaml"));
    REQUIRE_MESSAGE(spec.ok(), spec.status().str());
    Result<LoweredModel> r = lower(spec->model);
    REQUIRE_MESSAGE(r.ok(), r.status().str());
    CHECK(r->is_chain == (std::string(name) != "deepseek-like"));
    ModelSummary s = summarize(*spec, *r);
    CHECK(s.layers == static_cast<int>(spec->model.layers.size()));
    CHECK(s.layers >= 28);
    CHECK(s.total_fwd_ms > 0);
  }
}
