// Claims the checker cannot back: layer ranges that overlap or leave gaps (problem.layers), certificate
// figures its own computation rules out (certificate.claim), and bounds it cannot recheck (unchecked
// claims, reported but not failed). One minimal broken input per case, asserting the rule, the
// message and the file:line:col of the field.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "builders.h"
#include "ir/schedule_io.h"
#include "report/report.h"
#include "verify/digest.h"
#include "test_util.h"

using namespace vt;

// A named namespace (not an anonymous one) so that the unity build's other test files' helpers of the
// same names stay out of these tests' lookup.
namespace claims_test {

constexpr const char* kFile = "claims.yaml";

Schedule certified(const Schedule& in) {
  Report r = verify(in);
  REQUIRE_MESSAGE(r.valid, format_report(r));
  Schedule out = r.checked;
  out.certificate = make_certificate(out, r);
  return out;
}

// Writes the schedule as YAML and reads it back, so that every field has its location.
Schedule round_trip(const Schedule& s, std::string* text = nullptr) {
  const std::string yaml = format_schedule_yaml(s);
  if (text) *text = yaml;
  auto back = parse_schedule_yaml(yaml, kFile);
  REQUIRE_MESSAGE(back.ok(), back.status().str());
  return *back;
}

// 1-based line and column of the first character after `after` on the first line holding `line_part`.
std::pair<int, int> position(const std::string& text, const std::string& line_part, const std::string& after) {
  const size_t at = text.find(line_part);
  REQUIRE_MESSAGE(at != std::string::npos, line_part);
  const size_t bol = text.rfind('\n', at) + 1;  // npos + 1 == 0 on the first line
  const size_t v = text.find(after, at);
  REQUIRE(v != std::string::npos);
  int line = 1;
  for (size_t i = 0; i < bol; ++i) line += text[i] == '\n';
  return {line, static_cast<int>(v + after.size() - bol) + 1};
}

void check_loc(const SourceLoc& loc, std::pair<int, int> want) {
  CHECK(loc.file == kFile);
  CHECK(loc.line == want.first);
  CHECK(loc.col == want.second);
}

std::vector<const Violation*> of_rule(const Report& r, const std::string& rule) {
  std::vector<const Violation*> out;
  for (const Violation& v : r.violations)
    if (v.rule == rule) out.push_back(&v);
  return out;
}

// A gap between the makespan and the checker's bound, so that there is room to lie.
Problem problem() { return uniform_problem(3, 5, {0, 1, 2, 2, 1, 0}, 1.25, 1.5, 0.75, 0.3); }

Schedule with_extras(std::map<std::string, std::string> extra, unsigned seed = 5) {
  std::mt19937 rng(seed);
  Schedule s = certified(random_valid(problem(), rng));
  for (auto& [k, v] : extra) s.certificate->extra[k] = v;
  seal_certificate(s);
  return s;
}

Schedule two_stages(std::pair<int, int> a, std::pair<int, int> b) {
  Problem p = uniform_problem(2, 2, {0, 1});
  p.stages[0].first_layer = a.first;
  p.stages[0].last_layer = a.second;
  p.stages[1].first_layer = b.first;
  p.stages[1].last_layer = b.second;
  return one_f_one_b(p);
}


TEST_CASE("problem.layers: stage ranges in order from layer 0, no overlap, no gap") {
  for (auto [a, b] : {std::pair{std::pair{0, 15}, std::pair{16, 33}}, std::pair{std::pair{-1, -1}, std::pair{-1, -1}},
                      std::pair{std::pair{0, 0}, std::pair{1, 1}}}) {
    Report r = verify(round_trip(two_stages(a, b)));
    CHECK_MESSAGE(r.valid, format_report(r));
  }

  std::string text;
  Report r = verify(round_trip(two_stages({0, 15}, {0, 33}), &text));
  INFO(format_report(r));
  CHECK_FALSE(r.valid);
  auto v = of_rule(r, "problem.layers");
  REQUIRE(v.size() == 1);
  CHECK(v[0]->message ==
        "stage 1 holds layers 0-33, which overlap stage 0's layers 0-15: stage 1 must start at layer 16, right "
        "after stage 0 ends");
  check_loc(v[0]->loc, position(text, "- {id: 1,", "layers: "));
  const auto s0 = position(text, "- {id: 0,", "layers: ");
  REQUIRE(v[0]->notes.size() == 1);
  CHECK(v[0]->notes[0] == fmt::format("stage 0 holds layers 0-15 ({}:{}:{})", kFile, s0.first, s0.second));
  // It gates nothing: the schedule is still analysed and simulated.
  CHECK(r.violations.size() == 1);
  CHECK(r.sim.has_value());
  CHECK(r.lower_bound_ms > 0);

  Report gap = verify(round_trip(two_stages({0, 15}, {20, 33})));
  REQUIRE(of_rule(gap, "problem.layers").size() == 1);
  CHECK(pstest::contains(of_rule(gap, "problem.layers")[0]->message, "layers 16-19 belong to no stage"));

  Report late = verify(round_trip(two_stages({2, 15}, {16, 33}), &text));
  REQUIRE(of_rule(late, "problem.layers").size() == 1);
  CHECK(pstest::contains(of_rule(late, "problem.layers")[0]->message,
                         "stage 0 holds layers 2-15, but the stages must cover the model from layer 0"));
  check_loc(of_rule(late, "problem.layers")[0]->loc, position(text, "- {id: 0,", "layers: "));

  Report reversed = verify(round_trip(two_stages({16, 33}, {0, 15})));
  CHECK(of_rule(reversed, "problem.layers").size() == 2);  // stage 0 not from 0, stage 1 overlaps it

  Report mixed = verify(round_trip(two_stages({0, 15}, {-1, -1})));
  REQUIRE(of_rule(mixed, "problem.layers").size() == 1);
  CHECK(pstest::contains(of_rule(mixed, "problem.layers")[0]->message,
                         "stage 1 does not record its layers ([-1, -1]), but stage 0 does"));

  // Built in memory (no file): reported without a location.
  Report mem = verify(two_stages({0, 15}, {10, 33}));
  REQUIRE(of_rule(mem, "problem.layers").size() == 1);
  CHECK_FALSE(of_rule(mem, "problem.layers")[0]->loc.valid());
}

TEST_CASE("certificate.claim: a negative figure, at the field's location; a non-finite one is a mismatch") {
  std::string text;
  Report r = verify(round_trip(with_extras({{"bound_proven_ms", "-5"}}), &text));
  INFO(format_report(r));
  CHECK_FALSE(r.valid);
  auto v = of_rule(r, "certificate.claim");
  REQUIRE(v.size() == 1);
  CHECK(v[0]->message ==
        "certificate field 'extra.bound_proven_ms' claims -5, a negative figure: times, bounds, ratios and counts "
        "are never negative");
  check_loc(v[0]->loc, position(text, "bound_proven_ms:", "bound_proven_ms: "));
  CHECK(r.unchecked_claims.empty());

  for (const char* f : {"bound_ms", "gap", "heuristic_ms", "global_lower_bound_ms", "optimal_up_to_ms", "time_unit_ms",
                        "before_z3_ms", "z3_improved_ms", "bound_before_z3_ms", "z3_checks"}) {
    CAPTURE(f);
    Report n = verify(round_trip(with_extras({{f, "-0.5"}})));
    REQUIRE(of_rule(n, "certificate.claim").size() == 1);
    CHECK(pstest::contains(of_rule(n, "certificate.claim")[0]->message, fmt::format("'extra.{}' claims -0.5", f)));
  }

  Report nan = verify(round_trip(with_extras({{"bound_proven_ms", "nan"}}), &text));
  auto m = of_rule(nan, "certificate.mismatch");
  REQUIRE(m.size() == 1);
  CHECK(m[0]->message == "certificate field 'extra.bound_proven_ms' claims 'nan' but the checker requires a finite number");
  check_loc(m[0]->loc, position(text, "bound_proven_ms:", "bound_proven_ms: "));

  // A schedule that cannot be simulated: its figures are not compared, but a negative one is wrong anyway.
  std::mt19937 rng(4);
  Schedule broken = certified(random_valid(problem(), rng));
  broken.programs[0].pop_back();
  broken.certificate->makespan_ms = -3;
  Report b = verify(round_trip(broken, &text));
  auto bv = of_rule(b, "certificate.claim");
  REQUIRE(bv.size() == 1);
  CHECK(bv[0]->message == "certificate field 'makespan_ms' claims -3, a negative figure: times, ratios and memory are "
                          "never negative");
  check_loc(bv[0]->loc, position(text, "  makespan_ms:", "makespan_ms: "));
}

TEST_CASE("certificate.claim: a makespan the producer achieved, below the checker's lower bound") {
  std::mt19937 rng(5);
  const Schedule base = certified(random_valid(problem(), rng));
  const double lb = base.certificate->lower_bound_ms;
  auto report = [&](std::map<std::string, std::string> extra, std::string* text = nullptr) {
    Schedule s = base;
    for (auto& [k, v] : extra) s.certificate->extra[k] = v;
    seal_certificate(s);
    return verify(round_trip(s, text));
  };

  std::string text;
  const std::string low = fmt::format("{:.4f}", lb * 0.8);
  Report r = report({{"heuristic_ms", low}}, &text);
  INFO(format_report(r));
  CHECK_FALSE(r.valid);
  auto v = of_rule(r, "certificate.claim");
  REQUIRE(v.size() == 1);
  CHECK(v[0]->message == fmt::format("certificate field 'extra.heuristic_ms' claims a makespan of {} ms, below the "
                                     "checker's lower bound {} ms: no order of this partition and placement is that fast",
                                     low, lb));
  check_loc(v[0]->loc, position(text, "heuristic_ms:", "heuristic_ms: "));

  // At the bound, printed to 4 decimals (rounded either way): consistent.
  CHECK(report({{"heuristic_ms", fmt::format("{:.4f}", lb)}, {"before_z3_ms", fmt::format("{:.4f}", lb)}}).valid);
  CHECK(report({{"heuristic_ms", fmt::format("{}", lb * 3)}}).valid);  // a slower heuristic: fine

  Report z = report({{"before_z3_ms", fmt::format("{}", lb / 2)}});
  REQUIRE(of_rule(z, "certificate.claim").size() == 1);
  CHECK(pstest::contains(of_rule(z, "certificate.claim")[0]->message, "'extra.before_z3_ms' claims a makespan"));
  Report bb = report({{"best_baseline", fmt::format("1f1b {:.4f} ms", lb / 2)}});
  REQUIRE(of_rule(bb, "certificate.claim").size() == 1);
  CHECK(pstest::contains(of_rule(bb, "certificate.claim")[0]->message, "'extra.best_baseline' claims a makespan"));

  // A grid of time_unit_ms that does not divide the stage times (1.25, 1.5, 0.75 ms; 0.3 ms
  // transfers) rounds them down: a little below the bound is an unchecked claim when the rounding
  // is large against the bound (up to ~8.8 ms here), far below it a violation.
  const std::string just_below = fmt::format("{:.4f}", lb - 0.1);
  Report g = report({{"time_unit_ms", "0.02"}, {"heuristic_ms", just_below}});
  CHECK_MESSAGE(g.valid, format_report(g));
  REQUIRE(g.unchecked_claims.size() == 1);
  CHECK(g.unchecked_claims[0].field == "extra.heuristic_ms");
  CHECK(pstest::contains(g.unchecked_claims[0].message,
                         fmt::format("certificate claims heuristic_ms {} ms, below the checker's own bound {} ms, a grid "
                                     "timing (time_unit_ms 0.02 does not divide the stage times",
                                     just_below, lb)));
  CHECK(pstest::contains(g.unchecked_claims[0].message, "the claim is not rechecked"));
  CHECK_FALSE(report({{"time_unit_ms", "0.02"}, {"heuristic_ms", fmt::format("{:.4f}", lb / 2)}}).valid);
  // A fine grid (3e-6 ms: rounding at most ~1.3e-3 ms here, within 0.1% of the bound): accepted as is,
  // as synth's files are.
  Report fine = report({{"time_unit_ms", "0.000003"}, {"heuristic_ms", fmt::format("{:.4f}", lb - 0.001)}});
  CHECK_MESSAGE(fine.valid, format_report(fine));
  CHECK(fine.unchecked_claims.empty());
  // A grid that divides them all (0.05 ms) rounds nothing: the bound holds exactly.
  Report exact = report({{"time_unit_ms", "0.05"}, {"heuristic_ms", just_below}});
  CHECK_FALSE(exact.valid);
  CHECK(of_rule(exact, "certificate.claim").size() == 1);
}

TEST_CASE("unchecked claims: a proven bound above the checker's own is reported, never passed in silence") {
  std::mt19937 rng(5);
  Schedule s = certified(random_valid(problem(), rng));
  const double mk = s.certificate->makespan_ms, lb = s.certificate->lower_bound_ms;
  REQUIRE(lb < mk * 0.99);
  const std::string mk_text = fmt::format("{}", mk);
  auto& x = s.certificate->extra;
  x["optimal"] = "true";
  x["bound_proven_ms"] = mk_text;  // raised to the makespan: a proof the file does not carry
  x["solver_status"] = "optimal";
  seal_certificate(s);
  std::string text;
  Report r = verify(round_trip(s, &text));
  INFO(format_report(r));
  CHECK(r.valid);  // consistent: the verdict does not rest on it
  REQUIRE(r.unchecked_claims.size() == 1);
  const UncheckedClaim& c = r.unchecked_claims[0];
  CHECK(c.field == "extra.bound_proven_ms");
  CHECK(c.message == fmt::format("certificate claims bound_proven_ms {} ms (optimal: true); the checker's own bound is "
                                 "{} ms: the claim is not rechecked",
                                 mk_text, lb));
  const auto at = position(text, "bound_proven_ms:", "bound_proven_ms: ");
  check_loc(c.loc, at);

  const std::string report = format_report(r);
  CHECK(report.rfind("VALID under rendezvous semantics, with 1 unchecked claim (see below)\n", 0) == 0);
  CHECK(pstest::contains(report, fmt::format("  {}:{}:{}: UNCHECKED CLAIM: {}\n", kFile, at.first, at.second, c.message)));
  auto j = nlohmann::json::parse(format_report_json(r));
  CHECK(j["valid"] == true);
  REQUIRE(j["unchecked_claims"].size() == 1);
  CHECK(j["unchecked_claims"][0]["field"] == "extra.bound_proven_ms");
  CHECK(j["unchecked_claims"][0]["message"] == c.message);
  CHECK(j["unchecked_claims"][0]["line"] == at.first);
  CHECK(j["unchecked_claims"][0]["col"] == at.second);

  // Every bound above the checker's is listed, each at its own field.
  Schedule all = s;
  all.certificate->extra["bound_ms"] = mk_text;
  all.certificate->extra["gap"] = "0.000000";
  all.certificate->extra["bound_before_z3_ms"] = fmt::format("{}", (lb + mk) / 2);
  all.certificate->extra["global_lower_bound_ms"] = fmt::format("{}", lb / 2);  // below: rechecked
  seal_certificate(all);
  Report ra = verify(round_trip(all));
  CHECK(ra.valid);
  std::vector<std::string> fields;
  for (const UncheckedClaim& u : ra.unchecked_claims) fields.push_back(u.field);
  CHECK(fields == std::vector<std::string>{"extra.bound_proven_ms", "extra.bound_ms", "extra.bound_before_z3_ms"});
  CHECK(format_report(ra).rfind("VALID under rendezvous semantics, with 3 unchecked claims (see below)\n", 0) == 0);

  // A bound at the checker's own is rechecked: nothing to report.
  Schedule weak = s;
  weak.certificate->extra["optimal"] = "false";
  weak.certificate->extra["solver_status"] = "no Z3 run";
  weak.certificate->extra["bound_proven_ms"] = fmt::format("{:.4f}", lb);
  seal_certificate(weak);
  Report rw = verify(round_trip(weak));
  CHECK(rw.valid);
  CHECK(rw.unchecked_claims.empty());
  CHECK(pstest::contains(format_report(rw), "UNCHECKED") == false);
  CHECK(nlohmann::json::parse(format_report_json(rw))["unchecked_claims"].empty());

  // optimal: true where the checker's own bound meets the makespan (uniform 1F1B, fused B) is fully rechecked.
  Problem fused = uniform_problem(3, 6, sequential(3));
  for (StageSpec& st : fused.stages) st.split_backward = false;
  Schedule tight = certified(one_f_one_b(fused));
  REQUIRE(tight.certificate->lower_bound_ms == doctest::Approx(tight.certificate->makespan_ms));
  tight.certificate->extra["optimal"] = "true";
  tight.certificate->extra["bound_proven_ms"] = fmt::format("{}", tight.certificate->makespan_ms);
  seal_certificate(tight);
  Report rt = verify(round_trip(tight));
  CHECK(rt.valid);
  CHECK(rt.unchecked_claims.empty());

  // Above the makespan is a contradiction, not an unchecked claim, and the message says "at most".
  Schedule over = s;
  over.certificate->extra["bound_proven_ms"] = fmt::format("{}", mk * 1.5);
  seal_certificate(over);
  Report ro = verify(round_trip(over));
  CHECK_FALSE(ro.valid);
  CHECK(ro.unchecked_claims.empty());
  const Violation* m = find_rule(ro, "certificate.mismatch");
  REQUIRE(m != nullptr);
  CHECK(m->message == fmt::format("certificate field 'extra.bound_proven_ms' claims {} ms but the checker requires a "
                                  "bound at most the makespan {} ms",
                                  mk * 1.5, mk));
}

TEST_CASE("certificate.mismatch points at the field it names") {
  std::mt19937 rng(3);
  Schedule s = certified(random_valid(problem(), rng));
  s.certificate->makespan_ms *= 0.9;
  seal_certificate(s);
  std::string text;
  Report r = verify(round_trip(s, &text));
  const Violation* v = find_rule(r, "certificate.mismatch");
  REQUIRE(v != nullptr);
  CHECK(pstest::contains(v->message, "certificate field 'makespan_ms'"));
  check_loc(v->loc, position(text, "  makespan_ms:", "makespan_ms: "));
}

}  // namespace claims_test
