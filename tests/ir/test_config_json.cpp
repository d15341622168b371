// The JSON reader of config files: values with their locations, the non-standard Infinity / NaN
// tokens, errors located, the bounds.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "ir/config_json.h"
#include "ir/limits.h"

using namespace ps;

TEST_CASE("config json: values carry their line:col; Infinity, -Infinity and NaN are numbers") {
  const std::string text =
      "{\n"
      "  \"a\": 1,\n"
      "  \"limit\": [0.0, Infinity],\n"
      "  \"neg\": -Infinity, \"nan\": NaN,\n"
      "  \"s\": \"Infinity NaN\",\n"
      "  \"o\": {\"k\": [true, null]}\n"
      "}\n";
  Result<JsonValue> j = parse_config_json(text, "c.json");
  REQUIRE_MESSAGE(j.ok(), j.status().str());
  CHECK(j->loc.str() == "c.json:1:1");
  const JsonValue* a = j->find("a");
  REQUIRE(a);
  CHECK(a->kind == JsonValue::Kind::kInt);
  CHECK(a->integer == 1);
  CHECK(a->loc.str() == "c.json:2:8");
  const JsonValue* lim = j->find("limit");
  REQUIRE(lim);
  REQUIRE(lim->items.size() == 2);
  CHECK(lim->loc.str() == "c.json:3:12");
  CHECK(lim->items[1].kind == JsonValue::Kind::kFloat);
  CHECK(std::isinf(lim->items[1].number));
  CHECK(lim->items[1].number > 0);
  CHECK(lim->items[1].loc.str() == "c.json:3:18");
  CHECK(std::isinf(j->find("neg")->number));
  CHECK(j->find("neg")->number < 0);
  CHECK(j->find("neg")->loc.str() == "c.json:4:10");
  CHECK(std::isnan(j->find("nan")->number));
  CHECK(j->find("nan")->loc.str() == "c.json:4:28");
  CHECK(j->find("s")->string == "Infinity NaN");  // inside a string: untouched
  const JsonValue* o = j->find("o");
  REQUIRE(o);
  CHECK(o->find("k")->items[1].kind == JsonValue::Kind::kNull);
  CHECK(o->find("k")->items[1].loc.str() == "c.json:6:21");
}

TEST_CASE("config json: syntax errors are located where the parser stopped") {
  Result<JsonValue> j = parse_config_json("{\n  \"a\": 1\n  \"b\": 2\n}\n", "c.json");
  REQUIRE_FALSE(j.ok());
  CHECK(j.status().str().rfind("c.json:3:3: JSON", 0) == 0);
  Result<JsonValue> inf = parse_config_json("{\"a\": Infinityx}", "c.json");  // not a whole token
  REQUIRE_FALSE(inf.ok());
  CHECK(inf.status().loc().line == 1);
  CHECK_FALSE(parse_config_json("", "c.json").ok());
  CHECK_FALSE(parse_config_json("{} {}", "c.json").ok());
}

TEST_CASE("config json: nesting and value counts are bounded") {
  std::string deep(limits::kMaxJsonDepth + 1, '[');
  deep += std::string(limits::kMaxJsonDepth + 1, ']');
  Result<JsonValue> j = parse_config_json(deep, "d.json");
  REQUIRE_FALSE(j.ok());
  CHECK(j.status().message().find("nested deeper than 64 levels") != std::string::npos);
  CHECK(j.status().loc().str() == "d.json:1:65");
  std::string ok(limits::kMaxJsonDepth, '[');
  ok += std::string(limits::kMaxJsonDepth, ']');
  CHECK(parse_config_json(ok, "d.json").ok());
  std::string many = "[";
  for (int64_t i = 0; i < limits::kMaxJsonValues; ++i) many += "0,";
  many += "0]";
  Result<JsonValue> m = parse_config_json(many, "m.json");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message().find("more than 1,000,000 JSON values") != std::string::npos);
}
