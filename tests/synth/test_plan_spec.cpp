// The one reading of the plan words (synth/plan/plan_spec.h) that synth, bound and the baselines share:
// placement aliases, the stage count a placement names, Megatron layouts with and without a placement.
#include <doctest/doctest.h>

#include "synth/mesh_plan.h"
#include "synth/plan/plan_spec.h"
#include "synth/plan/placement.h"
#include "synth/synthesize_model.h"
#include "test_util.h"

using namespace ps;

// A named namespace (not an anonymous one): the unity build joins this file with others.
namespace plan_spec_test {

Spec llama_on(int devices) {
  SpecOverrides o;
  o.devices = devices;
  auto s = load_spec(pstest::source_path("configs/models/llama2-7b.yaml"), "", o);
  REQUIRE(s.ok());
  return *s;
}

TEST_CASE("plan words: every placement alias reads as its canonical name, in parse_placement too") {
  CHECK(canonical_placement_word("interleaved") == "looped");
  CHECK(canonical_placement_word("looped") == "looped");
  for (const char* v : {"v", "vshape", "v-shape"}) CHECK(canonical_placement_word(v) == "vshape");
  CHECK(canonical_placement_word("0,1,1,0") == "0,1,1,0");
  for (const char* w : {"v", "vshape", "v-shape"}) {
    auto p = parse_placement(w, 8, 4);
    REQUIRE(p.ok());
    CHECK(*p == placement_vshape(4));
  }
  CHECK(*parse_placement("interleaved", 8, 4) == placement_looped(8, 4));
}

TEST_CASE("plan words: the stage count a placement names, and what it refuses") {
  CHECK(*placement_stage_count({"balanced", "sequential", 0}, 4) == 4);
  CHECK(*placement_stage_count({"balanced", "interleaved", 0}, 4) == 8);
  CHECK(*placement_stage_count({"balanced", "looped", 3}, 4) == 12);
  CHECK(*placement_stage_count({"balanced", "v", 0}, 4) == 8);
  CHECK(*placement_stage_count({"balanced", "0,1,1,0,2,3", 0}, 4) == 6);
  auto seq = placement_stage_count({"balanced", "sequential", 2}, 4);
  REQUIRE(!seq.ok());
  CHECK(seq.status().message().find("puts one stage on each device") != std::string::npos);
  auto v3 = placement_stage_count({"balanced", "v-shape", 3}, 4);
  REQUIRE(!v3.ok());
  CHECK(v3.status().message() == "placement vshape holds exactly 2 stages per device, got stages_per_device 3");
}

TEST_CASE("plan words: a method with a placement, and Megatron layouts with and without one") {
  const Spec spec = llama_on(4);
  auto inter = resolve_plan(spec, {"balanced", "interleaved", 0});
  REQUIRE(inter.ok());
  CHECK(inter->partition.size() == 8);
  CHECK(inter->placement == placement_looped(8, 4));
  CHECK(inter->desc == "balanced");
  auto part = resolve_partition(spec, {"even", "sequential", 2});
  REQUIRE(part.ok());
  CHECK(part->size() == 8);

  // A layout of 2P stages keeps its own looped placement under the default word, or takes a V.
  const std::string two_per = "Et*4|(t*4|)*6t*4L";
  auto own = resolve_plan(spec, {two_per, "sequential", 0});
  REQUIRE(own.ok());
  CHECK(own->partition.size() == 8);
  CHECK(own->placement == placement_looped(8, 4));
  CHECK(own->desc == "Megatron layout \"" + two_per + "\"");
  auto v = resolve_plan(spec, {two_per, "v", 0});
  REQUIRE(v.ok());
  CHECK(v->placement == placement_vshape(4));
  auto layout_part = resolve_partition(spec, {two_per, "sequential", 0});
  REQUIRE(layout_part.ok());
  REQUIRE(layout_part->size() == own->partition.size());
  for (size_t s = 0; s < layout_part->size(); ++s) {
    CHECK((*layout_part)[s].first == own->partition[s].first);
    CHECK((*layout_part)[s].last == own->partition[s].last);
  }
  auto wrong_v = resolve_plan(spec, {two_per, "sequential", 3});
  REQUIRE(!wrong_v.ok());
  CHECK(wrong_v.status().message() ==
        "layout \"" + two_per + "\" has 8 stages, but stages_per_device 3 on 4 devices needs 12");
  auto one_per = resolve_plan(spec, {"Et*8|t*8|t*8|t*8L", "sequential", 0});
  REQUIRE(one_per.ok());
  CHECK(one_per->placement == placement_sequential(4));
}

TEST_CASE("plan choices: the words read to typed choices, and the choices' words read back to them") {
  auto even = parse_partition_choice("even");
  REQUIRE(even.ok());
  CHECK(even->method == PartitionMethod::kEven);
  auto layout = parse_partition_choice("Et*8|t*8|t*8|t*8L");
  REQUIRE(layout.ok());
  CHECK(layout->method == PartitionMethod::kMegatronLayout);
  CHECK(layout->layout == "Et*8|t*8|t*8|t*8L");
  auto bad = parse_partition_choice("greedy");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().rfind("unknown partition 'greedy': expected balanced, balanced-memory, even", 0) == 0);

  auto looped = parse_placement_choice("looped");
  REQUIRE(looped.ok());
  CHECK(looped->kind == PlacementKind::kLooped);
  CHECK(parse_placement_choice("v")->kind == PlacementKind::kVShape);
  auto list = parse_placement_choice("0,1,1,0");
  REQUIRE(list.ok());
  CHECK(list->kind == PlacementKind::kExplicit);
  CHECK(list->devices == std::vector<int>{0, 1, 1, 0});
  auto junk = parse_placement_choice("0,x");
  REQUIRE_FALSE(junk.ok());
  CHECK(junk.status().message().find("at column 3") != std::string::npos);

  for (const char* w : {"balanced", "balanced-memory", "even", "Et*8|t*8|t*8|t*8L"})
    CHECK(partition_choice_word(*parse_partition_choice(w)) == w);
  for (const char* w : {"sequential", "interleaved", "vshape", "0,1,1,0"})
    CHECK(placement_choice_word(*parse_placement_choice(w)) == w);

  // Typed choices resolve as their words do (synthesize_model passes them typed).
  const Spec spec = llama_on(4);
  auto same = [](const NamedPlan& a, const NamedPlan& b) {
    REQUIRE(a.partition.size() == b.partition.size());
    for (size_t i = 0; i < a.partition.size(); ++i) {
      CHECK(a.partition[i].first == b.partition[i].first);
      CHECK(a.partition[i].last == b.partition[i].last);
    }
    CHECK(a.placement == b.placement);
    CHECK(a.desc == b.desc);
  };
  struct Case {
    PartitionChoice partition;
    PlacementChoice placement;
    int stages_per_device;
    PlanSpec words;
  };
  const std::vector<Case> cases = {
      {*even, *looped, 2, {"even", "interleaved", 2}},
      {*layout, PlacementChoice{}, 0, {"Et*8|t*8|t*8|t*8L", "sequential", 0}},
      {*parse_partition_choice("Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4L"), *parse_placement_choice("v"), 0,
       {"Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4L", "v", 0}},
      {*parse_partition_choice("balanced-memory"), *list, 0, {"balanced-memory", "0,1,1,0", 0}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.words.partition);
    auto typed = resolve_plan(spec, c.partition, c.placement, c.stages_per_device);
    auto words = resolve_plan(spec, c.words);
    REQUIRE(typed.ok() == words.ok());
    if (!typed.ok()) {
      CHECK(typed.status().message() == words.status().message());
      continue;
    }
    same(*typed, *words);
    auto part = resolve_partition(spec, c.partition, c.stages_per_device);
    REQUIRE(part.ok());
    CHECK(part->size() == resolve_partition(spec, c.words)->size());
  }
  // A typed placement that cannot hold the stage count is refused as the words are.
  auto typed_bad = resolve_placement(*parse_placement_choice("v"), 3, 4);
  REQUIRE_FALSE(typed_bad.ok());
  CHECK(typed_bad.status().message() == resolve_placement({"balanced", "v", 3}, 4).status().message());
}

TEST_CASE("plan words: refusals name the library's options, not command-line flags") {
  auto seq = placement_stage_count({"balanced", "sequential", 2}, 4);
  REQUIRE_FALSE(seq.ok());
  CHECK(seq.status().message() ==
        "placement sequential puts one stage on each device; for stages_per_device 2 use placement interleaved or vshape");
  auto v3 = placement_stage_count({"balanced", "v", 3}, 4);
  REQUIRE_FALSE(v3.ok());
  CHECK(v3.status().message() == "placement vshape holds exactly 2 stages per device, got stages_per_device 3");
  CHECK(seq.status().message().find("--") == std::string::npos);
}

TEST_CASE("synthesize_model: typed plan options, refusals in the options' names, the stop reason as an enum") {
  const Spec spec = llama_on(4);
  ModelSynthOptions bad;
  bad.time_limit_s = 0;
  auto zero = synthesize_model(spec, bad);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().message() == "time_limit_s must be a number of seconds > 0 ('inf' for no limit), got 0");
  // The library is where the options are checked, against the table (ir/limits.h): the CLI and the
  // bindings pass them on.
  ModelSynthOptions threads;
  threads.z3_threads = 0;
  auto no_threads = synthesize_model(spec, threads);
  REQUIRE_FALSE(no_threads.ok());
  CHECK(no_threads.status().message() == "z3_threads must be an integer in [1, 64], got 0");
  ModelSynthOptions many;
  many.search_threads = 257;
  CHECK(synthesize_model(spec, many).status().message() == "search_threads must be an integer in [1, 256], got 257");
  ModelSynthOptions negative;
  negative.evaluations = -1;
  CHECK(synthesize_model(spec, negative).status().message() ==
        "evaluations must be an integer in [1, 1000000000], got -1");

  ModelSynthOptions both;
  both.partition = *parse_partition_choice("balanced");
  both.placement = *parse_placement_choice("sequential");
  both.evaluations = 5;
  auto budget = synthesize_model(spec, both);
  REQUIRE_FALSE(budget.ok());
  CHECK(budget.status().message().rfind("evaluations budgets the search of the partition and placement", 0) == 0);
  CHECK(budget.status().message().find("--") == std::string::npos);

  // The placement fixed (typed), the partition searched with a budget in candidates.
  ModelSynthOptions o;
  o.placement = *parse_placement_choice("sequential");
  o.evaluations = 6;
  o.time_limit_s = 4;
  o.rlimit = 20000;
  o.search_threads = 1;
  o.z3_threads = 1;
  auto m = synthesize_model(spec, o);
  REQUIRE_MESSAGE(m.ok(), m.status().str());
  REQUIRE(m->tuned.has_value());
  CHECK(m->placement == std::vector<int>{0, 1, 2, 3});
  CHECK(m->plan_desc.rfind("searched for the given placement sequential (", 0) == 0);
  const SearchStop stop = m->tuned->stats.stop_reason;
  CHECK(stop != SearchStop::kTimeLimit);
  CHECK(stop != SearchStop::kInterrupted);
  const std::string& search = m->result.schedule.certificate->extra.at("search");
  CHECK_MESSAGE(search.size() > std::string(search_stop_name(stop)).size(), search);
  CHECK_MESSAGE(search.substr(search.size() - std::string(search_stop_name(stop)).size()) == search_stop_name(stop), search);
  CHECK(std::string(search_stop_name(SearchStop::kEvaluationBudget)) == "evaluation budget");
  CHECK(std::string(search_stop_name(SearchStop::kReachedBound)) == "reached the lower bound");
}

TEST_CASE("baseline_plan: a baseline's plan from a typed partition") {
  const Spec spec = llama_on(4);
  auto inter = baseline_plan(spec, BaselineKind::kInterleaved1F1B, *parse_partition_choice("even"), 0);
  REQUIRE_MESSAGE(inter.ok(), inter.status().str());
  CHECK(inter->partition.size() == 8);
  CHECK(inter->placement == placement_looped(8, 4));
  CHECK(inter->desc == "even");
  const std::string two_per = "Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4L";
  auto v = baseline_plan(spec, BaselineKind::kZBV, *parse_partition_choice(two_per), 0);
  REQUIRE_MESSAGE(v.ok(), v.status().str());
  CHECK(v->placement == placement_vshape(4));
  CHECK(v->desc == "Megatron layout \"" + two_per + "\"");
  REQUIRE(v->notes.size() == 1);
  auto one = baseline_plan(spec, BaselineKind::k1F1B, *parse_partition_choice(two_per), 0);
  REQUIRE_FALSE(one.ok());
  CHECK(one.status().message() == "pipeline layout \"" + two_per + "\" gives 8 stages = 2 per device on P = 4, but 1f1b runs 1 per device");
}

}  // namespace plan_spec_test

TEST_CASE("plan words as a front end gives them: read_plan_given and set_plan_words hold the shared rules") {
  using namespace plan_spec_test;
  const Spec spec = llama_on(4);
  // A stage count per device alone fixes the placement: interleaved for V > 1, sequential for 1.
  auto v2 = read_plan_given(spec, PlanGiven{std::nullopt, std::nullopt, 2});
  REQUIRE(v2.ok());
  CHECK(v2->placement == std::optional<std::string>("interleaved"));
  CHECK_FALSE(v2->partition.has_value());
  CHECK(v2->stages_per_device == 2);
  auto v1 = read_plan_given(spec, PlanGiven{std::nullopt, std::nullopt, 1});
  REQUIRE(v1.ok());
  CHECK(v1->placement == std::optional<std::string>("sequential"));
  // A Megatron layout places its stages itself: V with it fixes the word "sequential", never interleaved.
  auto layout = read_plan_given(spec, PlanGiven{std::string("Et*8|t*8|t*8|t*8L"), std::nullopt, 2});
  REQUIRE(layout.ok());
  CHECK(layout->placement == std::optional<std::string>("sequential"));
  // Nothing given: everything open; a given 0 or a count the model cannot hold is refused by name.
  auto open = read_plan_given(spec, PlanGiven{});
  REQUIRE(open.ok());
  CHECK_FALSE(open->partition.has_value());
  CHECK_FALSE(open->placement.has_value());
  auto zero = read_plan_given(spec, PlanGiven{std::nullopt, std::nullopt, 0}, "--stages-per-device");
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().message() == "--stages-per-device must be an integer in [1, 100000], got 0");
  CHECK_FALSE(read_plan_given(spec, PlanGiven{std::nullopt, std::nullopt, 1000}).ok());

  // set_plan_words: the typed options synthesize_model takes, the same for every front end.
  ModelSynthOptions o;
  REQUIRE(set_plan_words(o, spec, PlanGiven{std::string("even"), std::nullopt, 2}).is_ok());
  REQUIRE(o.partition.has_value());
  CHECK(o.partition->method == PartitionMethod::kEven);
  REQUIRE(o.placement.has_value());
  CHECK(o.placement->kind == PlacementKind::kLooped);
  CHECK(o.stages_per_device == 2);
  CHECK(set_plan_words(o, spec, PlanGiven{std::nullopt, std::string("zigzag?"), std::nullopt}).code() ==
        ErrorCode::kBadInput);
}

TEST_CASE("plan_meshes: its options are checked against the table, before any file is read") {
  MeshPlanOptions o;
  o.pinned.gpus = 8;
  o.pinned.global_batch = 8;
  o.top = 0;
  CHECK(plan_meshes("no-such-model.yaml", "", o).status().message() == "top must be an integer in [1, 1000], got 0");
  o.top = 1;
  o.evaluations = 0;
  CHECK(plan_meshes("no-such-model.yaml", "", o).status().message() ==
        "evaluations must be an integer in [1, 1000000], got 0");
  o.evaluations = 1;
  o.pipeline = 0;
  CHECK(plan_meshes("no-such-model.yaml", "", o).status().message() ==
        "pipeline must be an integer in [1, 100000], got 0");
  o.pipeline.reset();
  o.time_limit_s = 0;
  CHECK(plan_meshes("no-such-model.yaml", "", o).status().message() ==
        "time_limit_s must be a number of seconds > 0 ('inf' for no limit), got 0");
}
