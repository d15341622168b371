// The one reading of the plan words (synth/plan/plan_spec.h) that synth, bound and the baselines share:
// placement aliases, the stage count a placement names, Megatron layouts with and without a placement.
#include <doctest/doctest.h>

#include "synth/plan/plan_spec.h"
#include "synth/plan/placement.h"
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
  CHECK(v3.status().message() == "--placement v holds exactly 2 stages per device");
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
        "layout \"" + two_per + "\" has 8 stages, but --stages-per-device 3 on 4 devices needs 12");
  auto one_per = resolve_plan(spec, {"Et*8|t*8|t*8|t*8L", "sequential", 0});
  REQUIRE(one_per.ok());
  CHECK(one_per->placement == placement_sequential(4));
}

}  // namespace plan_spec_test
