// Partitioning and placement helpers: exactness of the balanced partition against brute force,
// Megatron's even split, placements and their parsing.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "synth/plan/partition.h"
#include "synth/plan/placement.h"

using namespace ps;

namespace {

// A model with one layer type per layer: symbols 'a', 'b', ... (up to 26 layers), plus optional
// leading 'E' and trailing 'L' layers with the given times.
// A layer type of F+I+W = time_ms (F and W a quarter each, I half), 10 MB of activation.
LayerType quarter_type(char sym, const std::string& name, double time_ms, double params_m) {
  LayerType t;
  t.symbol = sym;
  t.name = name;
  t.forward_ms = time_ms / 4;
  t.backward_input_ms = time_ms / 2;
  t.backward_weight_ms = time_ms / 4;
  t.activation_mb = 10;
  t.params_m = params_m;
  return t;
}

Spec chain_spec(const std::vector<double>& time_ms, const std::vector<double>& params_m = {}) {
  Spec spec;
  spec.model.name = "test-chain";
  spec.pipeline.bytes_per_param = 2;
  for (size_t l = 0; l < time_ms.size(); ++l) {
    char sym = static_cast<char>('a' + l);
    spec.model.types[sym] =
        quarter_type(sym, std::string("layer-") + sym, time_ms[l], l < params_m.size() ? params_m[l] : 1);
    Layer layer;
    layer.id = static_cast<int>(l);
    layer.type = sym;
    if (l > 0) layer.inputs = {static_cast<int>(l) - 1};
    spec.model.layers.push_back(layer);
  }
  return spec;
}

// Model with named symbols, e.g. "EttttttL" (types E, t, L with the given times).
Spec symbol_spec(const std::string& layers) {
  Spec spec;
  spec.model.name = "test-symbols";
  for (char c : layers) {
    if (!spec.model.types.count(c)) {
      LayerType t;
      t.symbol = c;
      t.name = c == 'E' ? "embedding" : c == 'L' ? "head" : std::string("type-") + c;
      t.forward_ms = 1;
      t.backward_input_ms = 1;
      t.backward_weight_ms = 1;
      spec.model.types[c] = t;
    }
    Layer l;
    l.id = static_cast<int>(spec.model.layers.size());
    l.type = c;
    spec.model.layers.push_back(l);
  }
  return spec;
}

// All contiguous partitions of n layers into k non-empty stages.
void for_each_partition(int n, int k, const std::function<void(const Partition&)>& f) {
  Partition p;
  std::function<void(int, int)> rec = [&](int start, int left) {
    if (left == 1) {
      p.push_back({start, n - 1});
      f(p);
      p.pop_back();
      return;
    }
    for (int end = start; end <= n - left; ++end) {
      p.push_back({start, end});
      rec(end + 1, left - 1);
      p.pop_back();
    }
  };
  rec(0, k);
}

double max_time(const Spec& spec, const Partition& p) {
  double m = 0;
  for (const auto& r : p) m = std::max(m, range_time_ms(spec.model, r));
  return m;
}

double max_memory(const Spec& spec, const Partition& p) {
  double m = 0;
  for (const auto& r : p) {
    double s = 0;
    for (int l = r.first; l <= r.last; ++l) s += layer_memory_mb(spec, LayerId{l});
    m = std::max(m, s);
  }
  return m;
}

}  // namespace

TEST_CASE("balanced partition is exact: equals brute force on random chains") {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> cost(1, 20);
  std::uniform_int_distribution<int> nlayers(1, 9);
  for (int trial = 0; trial < 200; ++trial) {
    int n = nlayers(rng);
    std::vector<double> t(n), params(n);
    for (int l = 0; l < n; ++l) {
      t[l] = cost(rng) * 0.37;  // non-integers: sums in floating point
      params[l] = cost(rng);
    }
    Spec spec = chain_spec(t, params);
    for (int k = 1; k <= std::min(n, 5); ++k) {
      double best_time = 1e300;
      for_each_partition(
          n, k, [&](const Partition& p) { best_time = std::min(best_time, max_time(spec, p)); });
      double best_mem = 1e300;
      for_each_partition(n, k, [&](const Partition& p) {
        if (max_time(spec, p) <= best_time * (1 + 1e-9))
          best_mem = std::min(best_mem, max_memory(spec, p));
      });
      auto bal = balanced_partition(spec, k, PartitionCost::kTime);
      REQUIRE(bal.ok());
      REQUIRE(check_partition(*bal, n).is_ok());
      CHECK(bal->size() == static_cast<size_t>(k));
      CHECK(max_time(spec, *bal) == doctest::Approx(best_time).epsilon(1e-12));
      auto mem = balanced_partition(spec, k, PartitionCost::kTimeThenMemory);
      REQUIRE(mem.ok());
      REQUIRE(check_partition(*mem, n).is_ok());
      CHECK(max_time(spec, *mem) == doctest::Approx(best_time).epsilon(1e-12));
      CHECK(max_memory(spec, *mem) == doctest::Approx(best_mem).epsilon(1e-12));
    }
  }
}

TEST_CASE("balanced partition beats a greedy cut and is deterministic") {
  // Greedy "fill up to total/k" would cut [6,1] [1,1,6] ...; the optimum is max 7.
  Spec spec = chain_spec({6, 1, 1, 1, 6, 1});
  auto p = balanced_partition(spec, 3);
  REQUIRE(p.ok());
  CHECK(max_time(spec, *p) == doctest::Approx(7));
  auto again = balanced_partition(spec, 3);
  REQUIRE(again.ok());
  for (size_t s = 0; s < p->size(); ++s) {
    CHECK((*p)[s].first == (*again)[s].first);
    CHECK((*p)[s].last == (*again)[s].last);
  }
}

TEST_CASE("memory tie-breaker moves a heavy-parameter layer when time allows") {
  // Times 2,2,2,2 into 2 stages: only [0-1][2-3] reaches max time 4, whatever the memory.
  // Times 1,1,1,1,4 into 2 stages: max time 4 forces [0-3][4]; then into 3 stages the optimum time
  // is 4 and several cuts reach it; the memory tie-break must pick the one with the lightest max.
  Spec spec = chain_spec({1, 1, 1, 1, 4}, {100, 1, 1, 1, 1});
  auto t = balanced_partition(spec, 3, PartitionCost::kTime);
  auto m = balanced_partition(spec, 3, PartitionCost::kTimeThenMemory);
  REQUIRE(t.ok());
  REQUIRE(m.ok());
  CHECK(max_time(spec, *m) == doctest::Approx(4));
  // Layer 0 (200 MB states) should be alone in its stage.
  CHECK((*m)[0].first == 0);
  CHECK((*m)[0].last == 0);
  CHECK(max_memory(spec, *m) <= max_memory(spec, *t));
}

TEST_CASE("even partition never cuts inside a layer made of joined sublayers") {
  // Four decoder layers, each attention 'A' + MLP 'M'; the balanced partition may cut between them.
  Spec spec = symbol_spec("EAMAMAMAML");
  spec.model.types.at('A').joins_next = true;
  auto p = even_partition(spec, 2);
  REQUIRE(p.ok());
  REQUIRE(p->size() == 2);
  CHECK((*p)[0].last == 4);  // E AM AM
  CHECK((*p)[1].first == 5);
  CHECK((*p)[1].last == 9);  // AM AM L
  auto three = even_partition(spec, 3);
  REQUIRE(three.ok());
  for (const auto& r : *three) CHECK(spec.model.layers[r.last].type != 'A');
  // 5 Megatron layers (E, 4 decoders, the head counted with the last stage) but 8 stages asked.
  auto too_many = even_partition(spec, 8);
  REQUIRE(!too_many.ok());
  CHECK(too_many.status().message().find("counting joined sublayers as one") != std::string::npos);
}

TEST_CASE("balanced partition refuses impossible stage counts") {
  Spec spec = chain_spec({1, 2, 3});
  auto too_many = balanced_partition(spec, 4);
  REQUIRE(!too_many.ok());
  CHECK(too_many.status().code() == ErrorCode::kBadInput);
  CHECK(too_many.status().message().find("only 3 layers") != std::string::npos);
  CHECK(!balanced_partition(spec, 0).ok());
}

TEST_CASE("even partition keeps embedding and head with the end stages (Megatron default)") {
  Spec spec = symbol_spec("EttttttttL");  // 8 decoders
  auto p = even_partition(spec, 4);
  REQUIRE(p.ok());
  REQUIRE(p->size() == 4);
  CHECK((*p)[0].first == 0);
  CHECK((*p)[0].last == 2);  // E t t
  CHECK((*p)[1].first == 3);
  CHECK((*p)[1].last == 4);
  CHECK((*p)[2].first == 5);
  CHECK((*p)[2].last == 6);
  CHECK((*p)[3].first == 7);
  CHECK((*p)[3].last == 9);  // t t L

  // 7 decoders over 3 stages: 3, 2, 2 (the first stages take the remainder).
  Spec odd = symbol_spec("EtttttttL");
  auto q = even_partition(odd, 3);
  REQUIRE(q.ok());
  CHECK((*q)[0].last == 3);  // E t t t
  CHECK((*q)[1].last == 5);
  CHECK((*q)[2].last == 8);

  // Fewer decoders than stages: all layers split evenly.
  Spec small = symbol_spec("EttL");
  auto r = even_partition(small, 4);
  REQUIRE(r.ok());
  for (int s = 0; s < 4; ++s) CHECK((*r)[s].first == s);
  CHECK(!even_partition(small, 5).ok());

  // A head in 4 shards stays whole on the last stage, as Megatron keeps its head; more stages than
  // Megatron layers (E, 2 decoders, the head) is an error, not a partition that spreads the shards.
  Spec sharded = symbol_spec("EttLLLL");
  auto two = even_partition(sharded, 2);
  REQUIRE(two.ok());
  CHECK((*two)[1].first == 2);
  CHECK((*two)[1].last == 6);
  auto four = even_partition(sharded, 4);
  REQUIRE(four.ok());
  CHECK((*four)[3].first == 3);
  CHECK((*four)[3].last == 6);
  auto five = even_partition(sharded, 5);
  REQUIRE(!five.ok());
  CHECK(five.status().message().find("4 layers counting joined sublayers as one (7 without)") !=
        std::string::npos);
}

TEST_CASE("partition_by_name") {
  Spec spec = symbol_spec("EttttL");
  CHECK(partition_by_name(spec, 2, "balanced").ok());
  CHECK(partition_by_name(spec, 2, "balanced-memory").ok());
  CHECK(partition_by_name(spec, 2, "even").ok());
  auto bad = partition_by_name(spec, 2, "greedy");
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("unknown partition 'greedy'") != std::string::npos);
}

TEST_CASE("named placements") {
  CHECK(placement_sequential(4) == std::vector<int>{0, 1, 2, 3});
  CHECK(placement_looped(8, 4) == std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3});
  CHECK(placement_vshape(4) == std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0});
  CHECK(classify_placement({0, 1, 2, 3}, 4) == PlacementKind::kSequential);
  CHECK(classify_placement({0, 1, 0, 1}, 2) == PlacementKind::kLooped);
  CHECK(classify_placement({0, 1, 1, 0}, 2) == PlacementKind::kVShape);
  CHECK(classify_placement({1, 0, 1, 0}, 2) == PlacementKind::kExplicit);
}

TEST_CASE("parse_placement accepts names and lists, rejects bad ones precisely") {
  auto v = parse_placement("vshape", 6, 3);
  REQUIRE(v.ok());
  CHECK(*v == std::vector<int>{0, 1, 2, 2, 1, 0});
  auto list = parse_placement("1,0,0,1", 4, 2);
  REQUIRE(list.ok());
  CHECK(*list == std::vector<int>{1, 0, 0, 1});

  auto wrong_count = parse_placement("vshape", 4, 3);
  REQUIRE(!wrong_count.ok());
  CHECK(wrong_count.status().message().find("needs 2·P = 6 stages, got 4") != std::string::npos);
  auto seq = parse_placement("sequential", 8, 4);
  REQUIRE(!seq.ok());
  CHECK(seq.status().message().find("as many stages as devices") != std::string::npos);
  auto out_of_range = parse_placement("0,1,2", 3, 2);
  REQUIRE(!out_of_range.ok());
  CHECK(out_of_range.status().message().find("stage 2 on device 2") != std::string::npos);
  auto unused = parse_placement("0,0,0", 3, 2);
  REQUIRE(!unused.ok());
  CHECK(unused.status().message().find("device 1 without a stage") != std::string::npos);
  auto junk = parse_placement("0,x", 2, 2);
  REQUIRE(!junk.ok());
  CHECK(junk.status().message().find("column 3") != std::string::npos);
  auto short_list = parse_placement("0,1", 3, 2);
  REQUIRE(!short_list.ok());
  CHECK(short_list.status().message().find("lists 2 devices but there are 3 stages") !=
        std::string::npos);
}

TEST_CASE("balanced partition of 3,000 layers: optimal, and the memory tie-break keeps the time") {
  // Above 1024 layers the partition uses prefix sums and a binary search per (stages, layers)
  // instead of the O(k·n²) table (a 5,000-layer model took minutes). Costs are multiples of 4 ms
  // (F, I and W are exact quarters and halves), so every sum below is exact.
  const int n = 3000;
  Spec spec;
  spec.model.name = "long-chain";
  spec.pipeline.bytes_per_param = 2;
  const double times[] = {4, 8, 12, 16, 40, 4, 4, 24};
  const double params[] = {1, 30, 2, 1, 5, 60, 3, 1};
  std::mt19937 rng(7);
  for (int k = 0; k < 8; ++k) {
    const char sym = static_cast<char>('a' + k);
    spec.model.types[sym] = quarter_type(sym, std::string("type-") + sym, times[k], params[k]);
  }
  std::vector<double> cost(n);
  for (int l = 0; l < n; ++l) {
    Layer layer;
    layer.id = l;
    layer.type = static_cast<char>('a' + rng() % 8);
    if (l > 0) layer.inputs = {l - 1};
    spec.model.layers.push_back(layer);
    cost[l] = layer_time_ms(spec.model, LayerId{l});
  }
  // The fewest stages of cost <= T (greedy, which is optimal for this).
  auto stages_needed = [&](double T) {
    int parts = 1;
    double acc = 0;
    for (double c : cost) {
      if (c > T) return n + 1;
      if (acc + c > T) ++parts, acc = 0;
      acc += c;
    }
    return parts;
  };
  for (int S : {8, 64, 255}) {
    INFO("S = " << S);
    Result<Partition> p = balanced_partition(spec, S, PartitionCost::kTime);
    REQUIRE(p.ok());
    REQUIRE(check_partition(*p, n).is_ok());
    REQUIRE(static_cast<int>(p->size()) == S);
    double worst = 0;
    for (const LayerRange& r : *p) worst = std::max(worst, range_time_ms(spec.model, r));
    CHECK(stages_needed(worst) <= S);
    CHECK(stages_needed(worst - 1) > S);  // costs are multiples of 4: nothing between
    // Time, then memory: the same worst time, and no more memory on the worst stage.
    Result<Partition> pm = balanced_partition(spec, S, PartitionCost::kTimeThenMemory);
    REQUIRE(pm.ok());
    REQUIRE(check_partition(*pm, n).is_ok());
    double worst_m = 0, mem_t = 0, mem_m = 0;
    for (const LayerRange& r : *pm) worst_m = std::max(worst_m, range_time_ms(spec.model, r));
    auto stage_mem = [&](const LayerRange& r) {
      double m = 0;
      for (int l = r.first; l <= r.last; ++l) m += layer_memory_mb(spec, LayerId{l});
      return m;
    };
    for (const LayerRange& r : *p) mem_t = std::max(mem_t, stage_mem(r));
    for (const LayerRange& r : *pm) mem_m = std::max(mem_m, stage_mem(r));
    CHECK(worst_m == worst);
    CHECK(mem_m <= mem_t);
  }
}
