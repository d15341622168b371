// ir/whole_layers.h: joins_next groups as single layers, and partitions mapped back.
#include <doctest/doctest.h>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/whole_layers.h"
#include "test_util.h"

using namespace ps;

TEST_CASE("whole layers: each joins_next group becomes one layer with summed costs") {
  auto spec = parse_spec(R"(schema: 1
model:
  name: grouped
  layer_types:
    E: {name: embedding, forward_ms: 1, backward_input_ms: 0, backward_weight_ms: 1, activation_mb: 10, wgrad_stash_mb: 0, output_mb: 4, params_m: 1}
    A: {name: attention, forward_ms: 1, backward_input_ms: 2, backward_weight_ms: 1, activation_mb: 10, wgrad_stash_mb: 2, output_mb: 4, params_m: 3, joins_next: true}
    F: {name: mlp, forward_ms: 2, backward_input_ms: 2, backward_weight_ms: 2, activation_mb: 20, wgrad_stash_mb: 5, output_mb: 4, params_m: 5, split_backward: false}
    P: {name: mtp, forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, activation_mb: 1, wgrad_stash_mb: 0, output_mb: 0, params_m: 1}
  layers:
    - {type: E, module: emb}
    - {type: AF, repeat: 3, module: "layers.{i}"}
    - {type: P, inputs: [1]}
cluster: {devices: 2}
pipeline: {microbatches: 4}
)",
                         "g.yaml");
  REQUIRE_MESSAGE(spec.ok(), spec.status().str());
  auto w = whole_layer_model(*spec);
  REQUIRE(w.ok());
  const Model& g = w->spec.model;
  CHECK(w->first == std::vector<int>{0, 1, 3, 5, 7, 8});
  REQUIRE(g.layers.size() == 5);
  CHECK(g.layers[0].type == 'E');
  CHECK(g.layers[4].type == 'P');
  CHECK(g.layers[4].inputs == std::vector<int>{1, 3});  // layer 1 (an attention) is in group 1
  CHECK(g.layers[2].modules == std::vector<std::string>{"layers.1"});
  // Group 1 hands on the MLP's output and the attention output layer 7 reads: its own type.
  const LayerType& g1 = g.type_of(1);
  const LayerType& g2 = g.type_of(2);
  CHECK(g1.name == "attention+mlp");
  CHECK(g1.forward_ms == 3);
  CHECK(g1.backward_input_ms == 4);
  CHECK(g1.backward_weight_ms == 3);
  CHECK(g1.activation_mb == 30);
  CHECK(g1.wgrad_stash_mb == 7);
  CHECK(g1.params_m == 8);
  CHECK_FALSE(g1.split_backward);
  CHECK_FALSE(g1.joins_next);
  CHECK(g1.output_mb == 8);
  CHECK(g2.output_mb == 4);
  CHECK(g.layers[1].type != g.layers[2].type);
  CHECK(g.layers[2].type == g.layers[3].type);
  CHECK(g.types.count('E') == 1);

  // A partition of the groups is one of the layers that never cuts a group, and costs the same.
  Partition grouped = {{0, 1}, {2, 4}};
  Partition fine = refine_partition(grouped, *w);
  REQUIRE(fine.size() == 2);
  CHECK(fine[0].first == 0);
  CHECK(fine[0].last == 2);
  CHECK(fine[1].first == 3);
  CHECK(fine[1].last == 7);
  auto a = make_problem(w->spec, grouped, {0, 1});
  auto b = make_problem(*spec, fine, {0, 1});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (int s = 0; s < 2; ++s) {
    CHECK(a->stages[s].fwd_ms == b->stages[s].fwd_ms);
    CHECK(a->stages[s].activation_mb == b->stages[s].activation_mb);
    CHECK(a->stages[s].output_mb == b->stages[s].output_mb);
  }
}

TEST_CASE("whole layers: a split W's walk counts original layers, not groups") {
  auto spec = parse_spec(R"(schema: 1
model:
  name: walked
  layer_types:
    E: {name: embedding, forward_ms: 1, backward_input_ms: 0, backward_weight_ms: 1, activation_mb: 1, wgrad_stash_mb: 0, output_mb: 1, params_m: 1}
    A: {name: attention, forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, activation_mb: 1, wgrad_stash_mb: 1, output_mb: 1, params_m: 1, weight_walk_ms: 0.5, joins_next: true}
    F: {name: moe, forward_ms: 2, backward_input_ms: 2, backward_weight_ms: 3, activation_mb: 1, wgrad_stash_mb: 1, output_mb: 1, params_m: 1, weight_walk_ms: 0.25}
  layers:
    - {type: E}
    - {type: AF, repeat: 4}
cluster: {devices: 2}
pipeline: {microbatches: 4}
)",
                         "w.yaml");
  REQUIRE_MESSAGE(spec.ok(), spec.status().str());
  auto w = whole_layer_model(*spec);
  REQUIRE(w.ok());
  const LayerType& af = w->spec.model.type_of(1);
  CHECK(af.weight_walk_ms == doctest::Approx(1.5));  // (0.5 + 0.25) x 2 layers a group
  CHECK(af.backward_weight_ms == doctest::Approx(4.25));  // 1 + 3 + the MoE's walk over the attention
  // A stage of whole groups: W as the original layers cost it.
  Partition grouped = {{0, 0}, {1, 4}};
  auto a = make_problem(w->spec, grouped, {0, 1});
  auto b = make_problem(*spec, refine_partition(grouped, *w), {0, 1});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->stages[1].bwd_weight_ms == doctest::Approx(b->stages[1].bwd_weight_ms));
  CHECK(b->stages[1].bwd_weight_ms == doctest::Approx(4 * 4.0 + 0.5 * (0 + 2 + 4 + 6) + 0.25 * (1 + 3 + 5 + 7)));
  CHECK(a->stages[1].bwd_ms() == doctest::Approx(b->stages[1].bwd_ms()));
}
