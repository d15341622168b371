// Megatron --pipeline-model-parallel-layout strings: parsing (Megatron's documented syntax) and
// mapping onto a pipesmith model.
#include <doctest/doctest.h>

#include "synth/plan/megatron_layout.h"

using namespace ps;

namespace {

// One type per distinct symbol; 'E' is an embedding, 'L' a head, 'P' an MTP type (by name).
Model model_of(const std::string& layers) {
  Model m;
  m.name = "layout-test";
  for (char c : layers) {
    if (!m.types.count(c)) {
      LayerType t;
      t.symbol = c;
      t.name = c == 'E'   ? "embedding"
               : c == 'L' ? "head"
               : c == 'P' ? "mtp"
                          : std::string("dec-") + c;
      t.forward_ms = 1;
      m.types[c] = t;
    }
    Layer l;
    l.id = static_cast<int>(m.layers.size());
    l.type = c;
    m.layers.push_back(l);
  }
  return m;
}

std::string error_of(const std::string& layout) {
  auto r = parse_megatron_layout(layout);
  REQUIRE(!r.ok());
  CHECK(r.status().code() == ErrorCode::kBadInput);
  return r.status().message();
}

}  // namespace

TEST_CASE("Megatron's documented DeepSeek-V3 example expands to 32 stages") {
  auto r = parse_megatron_layout("Et*3|(tt|)*29,m|L");
  REQUIRE(r.ok());
  REQUIRE(r->stages.size() == 32);
  CHECK(r->stages[0] == "Ettt");
  for (int s = 1; s <= 29; ++s) CHECK(r->stages[s] == "tt");
  CHECK(r->stages[30] == "m");
  CHECK(r->stages[31] == "L");
}

TEST_CASE("layout syntax: repeats, groups, commas, repeated separators, empty stages") {
  auto a = parse_megatron_layout("E,t*2|t(t|)*2L");
  REQUIRE(a.ok());
  CHECK(a->stages == std::vector<std::string>{"Ett", "tt", "t", "L"});
  auto b = parse_megatron_layout("E|*2tL");  // '|' repeated like any character
  REQUIRE(b.ok());
  CHECK(b->stages == std::vector<std::string>{"E", "", "tL"});
  auto c = parse_megatron_layout("E||t|L");  // empty stage: legal syntax (rejected when applied)
  REQUIRE(c.ok());
  CHECK(c->stages.size() == 4);
  CHECK(c->stages[1].empty());
  auto d = parse_megatron_layout("Et*12|t*10L");  // multi-digit counts
  REQUIRE(d.ok());
  CHECK(d->stages[0].size() == 13);
  CHECK(d->stages[1].size() == 11);
}

TEST_CASE("layout syntax errors name the column") {
  CHECK(error_of("Etx|L").find("column 3: unexpected 'x'") != std::string::npos);
  CHECK(error_of("E(tt|L").find("column 2: '(' is never closed") != std::string::npos);
  CHECK(error_of("E((t)*2)*2|L").find("column 3: groups do not nest") != std::string::npos);
  CHECK(error_of("Et*|L").find("column 3: '*' must be followed by a repeat count") !=
        std::string::npos);
  CHECK(error_of("E(tt)|L").find("must be followed by *N") != std::string::npos);
  CHECK(error_of("*3E").find("column 1") != std::string::npos);
  CHECK(error_of("Et)L").find("column 3: ')' without a matching '('") != std::string::npos);
  CHECK(error_of("Et t|L").find("column 3: unexpected ' '") != std::string::npos);
  CHECK(error_of("t*99999999").find("expands to more than") != std::string::npos);
  CHECK(!parse_megatron_layout("").ok());
}

TEST_CASE("looks_like_megatron_layout tells layouts from method names") {
  CHECK(looks_like_megatron_layout("Et*3|(tt|)*29,m|L"));
  CHECK(looks_like_megatron_layout("EttL"));
  CHECK(!looks_like_megatron_layout("balanced"));
  CHECK(!looks_like_megatron_layout("even"));
  CHECK(!looks_like_megatron_layout(""));
}

TEST_CASE("a layout becomes a partition and a looped placement") {
  Model m = model_of("EMMMMMML");  // 6 decoders of type M
  auto layout = parse_megatron_layout("Et|tt|tt|tL");
  REQUIRE(layout.ok());
  auto plan = apply_megatron_layout(*layout, m, 2);
  REQUIRE(plan.ok());
  CHECK(plan->stages_per_device == 2);
  REQUIRE(plan->partition.size() == 4);
  CHECK(plan->partition[0].first == 0);
  CHECK(plan->partition[0].last == 1);
  CHECK(plan->partition[1].first == 2);
  CHECK(plan->partition[1].last == 3);
  CHECK(plan->partition[3].first == 6);
  CHECK(plan->partition[3].last == 7);
  CHECK(plan->placement == std::vector<int>{0, 1, 0, 1});

  auto one = apply_megatron_layout(*parse_megatron_layout("Ettt|tttL"), m, 2);
  REQUIRE(one.ok());
  CHECK(one->stages_per_device == 1);
  CHECK(one->placement == std::vector<int>{0, 1});
}

TEST_CASE("layout/model mismatches are explained") {
  Model m = model_of("EMMMMMML");
  auto count = apply_megatron_layout(*parse_megatron_layout("Ett|ttL"), m, 2);
  REQUIRE(!count.ok());
  CHECK(count.status().message().find("has 4 decoder layer(s) ('t'), model 'layout-test' has 6") !=
        std::string::npos);

  auto not_multiple = apply_megatron_layout(*parse_megatron_layout("Ett|tt|ttL"), m, 2);
  REQUIRE(!not_multiple.ok());
  CHECK(not_multiple.status().message().find(
            "3 stages, not a multiple of the pipeline size P = 2") != std::string::npos);

  auto empty = apply_megatron_layout(*parse_megatron_layout("Ettt||tttL|"), m, 2);
  REQUIRE(!empty.ok());
  CHECK(empty.status().message().find("stage 1 (rank 1, virtual chunk 0) is empty") !=
        std::string::npos);

  // MTP after the head in the model (as in configs/models/deepseek-like.yaml), Megatron's usual
  // "m|L" order in the layout: same counts, wrong order.
  Model mtp = model_of("EMMMLP");
  auto order = apply_megatron_layout(*parse_megatron_layout("Ett|tmL"), mtp, 2);
  REQUIRE(!order.ok());
  CHECK(order.status().message().find(
            "stage 1 expects a MTP layer ('m') at model layer 4, but the model "
            "has 'L' (head, a loss layer) there") != std::string::npos);
  auto ok = apply_megatron_layout(*parse_megatron_layout("Ett|tLm"), mtp, 2);
  CHECK(ok.ok());
}

TEST_CASE("sublayers joined by joins_next are one Megatron layer") {
  // E, then three decoder layers as attention 'A' (joins its MLP 'M'), then the head.
  Model m = model_of("EAMAMAML");
  m.types.at('A').joins_next = true;
  const MegatronLayers ml = megatron_layers(m);
  CHECK(ml.kinds == "EtttL");
  CHECK(ml.first == std::vector<int>{0, 1, 3, 5, 7});
  CHECK(ml.end(3, 8) == 7);

  auto plan = apply_megatron_layout(*parse_megatron_layout("Et|ttL"), m, 2);
  REQUIRE_MESSAGE(plan.ok(), plan.status().str());
  REQUIRE(plan->partition.size() == 2);
  CHECK(plan->partition[0].first == 0);
  CHECK(plan->partition[0].last == 2);  // E A M: the layout's 't' covers both sublayers
  CHECK(plan->partition[1].first == 3);
  CHECK(plan->partition[1].last == 7);

  // Counting sublayers as layers would be 6 't'; the message says how the model counts.
  auto count = apply_megatron_layout(*parse_megatron_layout("Ettt|tttL"), m, 2);
  REQUIRE(!count.ok());
  CHECK(count.status().message().find("model 'layout-test' has 3 (of 5 layers, 8 with sublayers)") !=
        std::string::npos);

  // An MTP module split into a projection (kind mtp_projection), a block and a head is one 'm'.
  Model mtp = model_of("EAMLPBQ");
  mtp.types.at('A').joins_next = true;
  mtp.types.at('P').name = "mtp-projection";
  mtp.types.at('P').kind = "mtp_projection";
  mtp.types.at('P').joins_next = true;
  mtp.types.at('B').joins_next = true;
  mtp.types.at('Q').name = "head";
  CHECK(megatron_layers(mtp).kinds == "EtLm");
}

TEST_CASE("the shards of a vocabulary-sharded head are one Megatron loss layer") {
  // Two decoder layers, then a head in 4 shards: Megatron has one 'L', which a layout names once.
  Model m = model_of("EttLLLL");
  const MegatronLayers ml = megatron_layers(m);
  CHECK(ml.kinds == "EttL");
  CHECK(ml.first == std::vector<int>{0, 1, 2, 3});
  CHECK(ml.end(3, 7) == 7);
  auto plan = apply_megatron_layout(*parse_megatron_layout("Et|tL"), m, 2);
  REQUIRE_MESSAGE(plan.ok(), plan.status().str());
  CHECK(plan->partition[1].first == 2);
  CHECK(plan->partition[1].last == 6);  // t and all four shards
  CHECK(!apply_megatron_layout(*parse_megatron_layout("Et|tLLLL"), m, 2).ok());

  // DeepSeek's shape: a sharded main head, then an MTP module whose own sharded head ends the
  // model: the main head's shards are one 'L', the MTP head's shards stay in the 'm'.
  Model mtp = model_of("EtLLPBQQ");
  mtp.types.at('P').kind = "mtp_projection";
  mtp.types.at('P').joins_next = true;
  mtp.types.at('B').joins_next = true;
  mtp.types.at('Q').kind = "head";
  const MegatronLayers mm = megatron_layers(mtp);
  CHECK(mm.kinds == "EtLm");
  CHECK(mm.first == std::vector<int>{0, 1, 2, 4});
}
