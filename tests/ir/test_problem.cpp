// make_problem (stage aggregation, skip edges, partition/placement checks), unit_problem and
// boundary transfer times.
#include <doctest/doctest.h>

#include "ir/problem.h"

using namespace ps;

namespace {

// Layers E A A B A L; layer 5 (L) also reads layer 0 (E), like an MTP head reading the embedding.
// Output sizes: E 8, A 16, B 32, L 0. B cannot split its backward.
Spec small_spec() {
  const char* text = R"(model:
  name: small
  layer_types:
    E: {forward_ms: 0.5, backward_input_ms: 0, backward_weight_ms: 0.25, activation_mb: 1, wgrad_stash_mb: 0, output_mb: 8, params_m: 10}
    A: {forward_ms: 2, backward_input_ms: 3, backward_weight_ms: 1, activation_mb: 100, wgrad_stash_mb: 40, output_mb: 16, params_m: 20}
    B: {forward_ms: 4, backward_input_ms: 5, backward_weight_ms: 2, activation_mb: 300, wgrad_stash_mb: 50, output_mb: 32, params_m: 40, split_backward: false}
    L: {forward_ms: 6, backward_input_ms: 6, backward_weight_ms: 5, activation_mb: 700, wgrad_stash_mb: 60, output_mb: 0, params_m: 30}
  layers:
    - {type: E}
    - {type: A, repeat: 2}
    - {type: B}
    - {type: A}
    - {type: L, inputs: [0]}
cluster:
  devices: 4
  memory_gb: 80
  devices_per_node: 2
  link: {bandwidth_gb_per_s: 100, latency_us: 10}
  inter_node_link: {bandwidth_gb_per_s: 10, latency_us: 50}
pipeline: {microbatches: 6, bytes_per_param: 16}
)";
  Result<Spec> s = parse_spec(text, "small.yaml");
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  return *s;
}

}  // namespace

TEST_CASE("problem: stages sum their layers' costs; output_mb carries skip edges through") {
  Spec spec = small_spec();
  Result<Problem> p = make_problem(spec, {{0, 1}, {2, 3}, {4, 5}}, {0, 1, 2});
  REQUIRE_MESSAGE(p.ok(), p.status().str());
  CHECK(p->name == "small");
  CHECK(p->devices == 4);
  CHECK(p->microbatches == 6);
  CHECK(p->memory_gb == 80);
  CHECK(p->bytes_per_param == 16);
  CHECK(p->devices_per_node == 2);
  CHECK(p->link.bandwidth_gb_per_s == 100);
  CHECK(p->inter_node_link.latency_us == 50);
  CHECK_FALSE(p->unit_costs);
  REQUIRE(p->num_stages() == 3);

  const StageSpec& s0 = p->stages[0];  // E A
  CHECK(s0.first_layer == 0);
  CHECK(s0.last_layer == 1);
  CHECK(s0.device == 0);
  CHECK(s0.fwd_ms == 2.5);
  CHECK(s0.bwd_input_ms == 3);
  CHECK(s0.bwd_weight_ms == 1.25);
  CHECK(s0.bwd_ms() == 4.25);
  CHECK(s0.activation_mb == 101);
  CHECK(s0.wgrad_stash_mb == 40);
  CHECK(s0.params_m == 30);
  CHECK(s0.split_backward);
  // Crossing after layer 1: A's output (16) for layer 2, E's output (8) for layer 5.
  CHECK(s0.output_mb == 24);

  const StageSpec& s1 = p->stages[1];  // A B
  CHECK(s1.fwd_ms == 6);
  CHECK(s1.activation_mb == 400);
  CHECK_FALSE(s1.split_backward);  // B cannot split
  CHECK(s1.output_mb == 32 + 8);   // B's output and the carried embedding

  const StageSpec& s2 = p->stages[2];  // A L
  CHECK(s2.output_mb == 0);            // nothing after the last stage
  CHECK(s2.params_m == 50);
  CHECK(p->model_state_mb(StageId{2}) == 50 * 16);
}

TEST_CASE("problem: a chain's boundary carries only the last layer's output") {
  Spec spec = small_spec();
  spec.model.layers[5].inputs = {4};
  Result<Problem> p = make_problem(spec, {{0, 2}, {3, 5}}, {0, 0});
  REQUIRE(p.ok());
  CHECK(p->stages[0].output_mb == 16);
  // Whole model in one stage.
  Result<Problem> one = make_problem(spec, {{0, 5}}, {3});
  REQUIRE(one.ok());
  CHECK(one->stages[0].output_mb == 0);
  CHECK(one->stages[0].fwd_ms == 0.5 + 2 + 2 + 4 + 2 + 6);
}

TEST_CASE("problem: boundary transfer time by placement") {
  Spec spec = small_spec();
  Result<Problem> p = make_problem(spec, {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 5}}, {0, 0, 1, 2, 2});
  REQUIRE(p.ok());
  CHECK(p->boundary_transfer_ms(StageId{0}) == 0);  // both on device 0
  // Stage 1 (layer 1, A) -> stage 2 on device 1, same node: 10 us + (16 + 8 carried) MB / 100 GB/s.
  CHECK(p->stages[1].output_mb == 24);
  CHECK(p->boundary_transfer_ms(StageId{1}) == doctest::Approx(0.010 + 24.0 / 100));
  // Stage 2 (device 1) -> stage 3 (device 2): another node: 50 us + 24 MB / 10 GB/s.
  CHECK(p->boundary_transfer_ms(StageId{2}) == doctest::Approx(0.050 + 24.0 / 10));
  CHECK(p->boundary_transfer_ms(StageId{3}) == 0);  // same device
  CHECK(p->boundary_transfer_ms(StageId{4}) == 0);  // last stage
}

TEST_CASE("problem: partition and placement errors") {
  Spec spec = small_spec();
  struct Case {
    Partition partition;
    std::vector<int> placement;
    const char* message;
  };
  std::vector<Case> cases = {
      {{}, {}, "partition: no stages"},
      {{{1, 5}}, {0}, "partition: stage 0 starts at layer 1, expected 0"},
      {{{0, 2}, {4, 5}}, {0, 1}, "partition: stage 1 starts at layer 4, expected 3"},
      {{{0, 2}, {2, 5}}, {0, 1}, "partition: stage 1 starts at layer 2, expected 3"},
      {{{0, 2}, {3, 2}}, {0, 1}, "partition: stage 1 is empty"},
      {{{0, 2}, {3, 4}},
       {0, 1},
       "partition: the stages cover layers 0..4, but the model has layers 0..5"},
      {{{0, 6}}, {0}, "partition: stage 0 ends at layer 6, but the model has layers 0..5"},
      {{{0, 2}, {3, 5}}, {0}, "placement: 1 devices given for 2 stages"},
      {{{0, 2}, {3, 5}},
       {0, 4},
       "placement: stage 1 is on device 4, but the cluster has devices 0..3"},
      {{{0, 2}, {3, 5}}, {-1, 0}, "placement: stage 0 is on device -1"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    Result<Problem> p = make_problem(spec, c.partition, c.placement);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == ErrorCode::kBadInput);
    CHECK(p.status().message().find(c.message) == 0);
  }
  Spec bad = spec;
  bad.cluster.devices = 0;
  Result<Problem> p = make_problem(bad, {{0, 5}}, {0});
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("cluster.devices must be an integer in [1, 100000], got 0") != std::string::npos);
}

TEST_CASE("problem: unit_problem has F=I=W=1, 1 MB activations, no comm cost, no model states") {
  Problem p = unit_problem(2, 4, {0, 1, 1, 0});
  CHECK(p.unit_costs);
  CHECK(p.devices == 2);
  CHECK(p.microbatches == 4);
  CHECK(p.memory_gb == 0);
  REQUIRE(p.num_stages() == 4);
  for (int s = 0; s < 4; ++s) {
    CAPTURE(s);
    const StageSpec& st = p.stages[s];
    CHECK(st.fwd_ms == 1);
    CHECK(st.bwd_input_ms == 1);
    CHECK(st.bwd_weight_ms == 1);
    CHECK(st.bwd_ms() == 2);
    CHECK(st.activation_mb == 1);
    CHECK(st.params_m == 0);
    CHECK(st.first_layer == -1);
    CHECK(p.model_state_mb(StageId{s}) == 0);
    CHECK(p.boundary_transfer_ms(StageId{s}) == 0);
  }
  CHECK(p.device_of(StageId{2}) == 1);
}

TEST_CASE("problem: a split stage's W grows by each layer's weight_walk_ms per layer before it in the stage") {
  const char* text = R"(model:
  name: walk
  layer_types:
    E: {forward_ms: 0.5, backward_input_ms: 0, backward_weight_ms: 0.25, activation_mb: 1, wgrad_stash_mb: 0, output_mb: 8, params_m: 10}
    T: {forward_ms: 2, backward_input_ms: 3, backward_weight_ms: 1, backward_ms: 3.5, weight_walk_ms: 0.5, activation_mb: 100, wgrad_stash_mb: 40, output_mb: 16, params_m: 20}
    L: {forward_ms: 6, backward_input_ms: 6, backward_weight_ms: 5, activation_mb: 700, wgrad_stash_mb: 60, output_mb: 0, params_m: 30}
  layers:
    - {type: E}
    - {type: T, repeat: 4}
    - {type: L}
cluster: {devices: 2}
pipeline: {microbatches: 4}
)";
  Result<Spec> spec = parse_spec(text, "walk.yaml");
  REQUIRE_MESSAGE(spec.ok(), spec.status().str());
  CHECK(spec->model.types.at('T').weight_walk_ms == 0.5);
  Result<Problem> p = make_problem(*spec, {{0, 4}, {5, 5}}, {0, 1});
  REQUIRE_MESSAGE(p.ok(), p.status().str());
  // E then four T: the T at positions 1..4 of the stage pay 0.5 ms per layer before them.
  CHECK(p->stages[0].bwd_weight_ms == doctest::Approx(0.25 + 4 * 1 + 0.5 * (1 + 2 + 3 + 4)));
  CHECK(p->stages[0].bwd_input_ms == 12);
  CHECK(p->stages[0].bwd_ms() == doctest::Approx(0.25 + 4 * 3.5));  // B walks nothing twice
  CHECK(p->stages[1].bwd_weight_ms == 5);                            // one layer: no walk
  Result<Problem> one = make_problem(*spec, {{0, 0}, {1, 1}, {2, 2}, {3, 5}}, {0, 1, 0, 1});
  REQUIRE(one.ok());
  CHECK(one->stages[1].bwd_weight_ms == 1);  // a T alone in its stage
  CHECK(one->stages[3].bwd_weight_ms == doctest::Approx(1 + 1 + 0.5 + 5));
  // A negative walk is refused where it is written.
  std::string bad = text;
  bad.replace(bad.find("weight_walk_ms: 0.5"), 19, "weight_walk_ms: -1.");
  Result<Spec> b = parse_spec(bad, "walk.yaml");
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().str().find("walk.yaml:5:") != std::string::npos);
  CHECK(b.status().str().find("weight_walk_ms") != std::string::npos);
}
