// bench/quality_solver.h — what Z3 did in one bench/quality case, read from the solver block of the
// certificate synthesize_model() seals (docs/synth.md, "certificate extras"), and the summary over
// the cases; and each case's iteration over its global and plan bounds, per shape class (P, M/P).
// Header-only: bench/quality.cpp and tests/bench include it.
//
// Each figure is read by its key, as written; a key the certificate lacks reads as NaN (a label as
// ""), prints as "-" and is counted in no summary figure.
//
//   best before Z3  the shorter of before_z3_ms (synthesize()'s best order before Z3) and the search's
//                   own order (the checker's simulation; synthesize_model() writes it when it is faster)
//   gap before Z3   (best before Z3 − bound_before_z3_ms) / bound_before_z3_ms
//   certified gap   extra "gap": (makespan − bound_ms) / bound_ms after Z3
//   bound raise     bound_proven_ms − bound_before_z3_ms
//   improved        z3_improved_ms > 0 or bound raise > 0
//   slower          the checker's makespan above the best before Z3 by more than the DAG's rounding
//                   (time_unit_ms per op of the schedule: the DAG rounds durations down)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <utility>
#include <string>
#include <vector>

namespace ps::bench {

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

struct SolverCase {
  double makespan_ms = kNoValue;         // the checker's simulated iteration of the result
  double tolerance_ms = 0;               // time_unit_ms × ops: the DAG timing's rounding
  double before_z3_ms = kNoValue;        // synthesize()'s best order before Z3 (DAG timing)
  double tuner_ms = kNoValue;            // the search's own order (checker), when a search ran
  double bound_before_z3_ms = kNoValue;  // best bound before Z3
  double bound_proven_ms = kNoValue;     // best proven bound after Z3
  double bound_ms = kNoValue;
  double z3_improved_ms = kNoValue;      // how much Z3 shortened the order
  double gap = kNoValue;                 // certified, a fraction (0.012 = 1.2 %)
  double z3_checks = kNoValue;           // Z3 check() calls
  std::string schedule_method, bound_method, solver_status;

  double best_before_ms() const { return std::fmin(before_z3_ms, tuner_ms); }  // NaN only when both are
  double gap_before() const {
    return bound_before_z3_ms > 0 ? (best_before_ms() - bound_before_z3_ms) / bound_before_z3_ms : kNoValue;
  }
  double bound_raise_ms() const { return bound_proven_ms - bound_before_z3_ms; }
  bool improved() const { return z3_improved_ms > 0 || bound_raise_ms() > 0; }
  bool slower_than_before() const { return makespan_ms > best_before_ms() + tolerance_ms; }
};

// A number written in full ("407.8247", "0.000002"); anything else (absent, text) is NaN.
inline double extra_number(const std::map<std::string, std::string>& extra, const std::string& key) {
  const auto it = extra.find(key);
  if (it == extra.end() || it->second.empty()) return kNoValue;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  return *end == '\0' ? v : kNoValue;
}

inline std::string extra_label(const std::map<std::string, std::string>& extra, const std::string& key) {
  const auto it = extra.find(key);
  return it == extra.end() ? "" : it->second;
}

// The solver block of a certificate; `makespan_ms` the checker's, `ops` the schedule's op count,
// `tuner_ms` the search's order (NaN: no search).
inline SolverCase solver_case(const std::map<std::string, std::string>& extra, double makespan_ms, size_t ops,
                              double tuner_ms = kNoValue) {
  SolverCase c;
  c.makespan_ms = makespan_ms;
  c.tuner_ms = tuner_ms;
  const double unit_ms = extra_number(extra, "time_unit_ms");
  c.tolerance_ms = std::isnan(unit_ms) ? 0 : unit_ms * static_cast<double>(ops);
  c.before_z3_ms = extra_number(extra, "before_z3_ms");
  c.bound_before_z3_ms = extra_number(extra, "bound_before_z3_ms");
  c.bound_proven_ms = extra_number(extra, "bound_proven_ms");
  c.bound_ms = extra_number(extra, "bound_ms");
  c.z3_improved_ms = extra_number(extra, "z3_improved_ms");
  c.gap = extra_number(extra, "gap");
  c.z3_checks = extra_number(extra, "z3_checks");
  c.schedule_method = extra_label(extra, "schedule_method");
  c.bound_method = extra_label(extra, "bound_method");
  c.solver_status = extra_label(extra, "solver_status");
  return c;
}

// The median of the numbers in `v` (NaNs left out); NaN when none.
inline double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return kNoValue;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct SolverSummary {
  int cases = 0;                  // cases with a certified schedule
  int over_tenth = 0;             // gap before Z3 > 0.1 %
  int over_tenth_checked = 0;     //   of them, z3_checks > 0
  int over_one = 0;               // gap before Z3 > 1 %
  int over_one_improved = 0;      //   of them, improved()
  double median_before = kNoValue;  // median gap before Z3 over the > 1 % cases
  double median_after = kNoValue;   // median certified gap over the same cases
  int slower = 0;                 // slower_than_before()
};

inline SolverSummary summarize(const std::vector<SolverCase>& cases) {
  SolverSummary s;
  std::vector<double> before, after;
  for (const SolverCase& c : cases) {
    ++s.cases;
    const double g = c.gap_before();
    if (g > 0.001) {
      ++s.over_tenth;
      if (c.z3_checks > 0) ++s.over_tenth_checked;
    }
    if (g > 0.01) {
      ++s.over_one;
      if (c.improved()) ++s.over_one_improved;
      before.push_back(g);
      after.push_back(c.gap);
    }
    if (c.slower_than_before()) ++s.slower;
  }
  s.median_before = median(before);
  s.median_after = median(after);
  return s;
}

// One case's iteration against its two bounds, for the table per shape class: `global_bound_ms`
// the bound over every partition, placement and order (synth/bounds/global_bound.h; NaN when no
// search ran), `plan_bound_ms` the certificate's bound_ms (the chosen plan's best bound).
struct ShapeCase {
  int P = 0, M = 0;
  double makespan_ms = kNoValue;
  double global_bound_ms = kNoValue;
  double plan_bound_ms = kNoValue;
};

// One shape class (P, M/P): over its cases, ours / global bound and ours / plan bound, geometric
// mean and max (cases whose ratio is missing count in no figure of that ratio; NaN when none has it).
// `above` counts the cases whose ours / global bound exceeds the threshold shape_summary was given.
struct ShapeClass {
  int P = 0;
  double m_per_p = 0;         // M / P (M is a multiple of P in bench/quality's cases)
  int cases = 0;
  double geo_global = kNoValue, max_global = kNoValue;
  double geo_plan = kNoValue, max_plan = kNoValue;
  int above = 0;
};

// The ratio to the global bound above which the shape table counts a case (pipesmith's own target
// at M ≈ P: no case above it, geometric mean at most 1.02).
inline constexpr double kShapeAbove = 1.15;

// A ratio makespan / bound when both are positive numbers; NaN otherwise.
inline double bound_ratio(double makespan_ms, double bound_ms) {
  return makespan_ms > 0 && bound_ms > 0 ? makespan_ms / bound_ms : kNoValue;
}

// The figures of ShapeClass over `members` (P and m_per_p left to the caller).
inline ShapeClass shape_summary(const std::vector<const ShapeCase*>& members, double above_ratio) {
  ShapeClass k;
  k.cases = static_cast<int>(members.size());
  auto fold = [&](auto ratio_of, double& geo, double& max) {
    double log_sum = 0;
    int n = 0;
    for (const ShapeCase* c : members) {
      const double r = ratio_of(*c);
      if (std::isnan(r)) continue;
      log_sum += std::log(r);
      max = n == 0 ? r : std::max(max, r);
      ++n;
    }
    if (n > 0) geo = std::exp(log_sum / n);
  };
  fold([](const ShapeCase& c) { return bound_ratio(c.makespan_ms, c.global_bound_ms); }, k.geo_global, k.max_global);
  fold([](const ShapeCase& c) { return bound_ratio(c.makespan_ms, c.plan_bound_ms); }, k.geo_plan, k.max_plan);
  for (const ShapeCase* c : members)
    if (bound_ratio(c->makespan_ms, c->global_bound_ms) > above_ratio) ++k.above;
  return k;
}

// The classes, sorted by P then M/P.
inline std::vector<ShapeClass> shape_classes(const std::vector<ShapeCase>& cases,
                                             double above_ratio = kShapeAbove) {
  std::map<std::pair<int, double>, std::vector<const ShapeCase*>> by_class;
  for (const ShapeCase& c : cases)
    if (c.P > 0) by_class[{c.P, static_cast<double>(c.M) / c.P}].push_back(&c);
  std::vector<ShapeClass> out;
  for (const auto& [key, members] : by_class) {
    ShapeClass k = shape_summary(members, above_ratio);
    k.P = key.first;
    k.m_per_p = key.second;
    out.push_back(k);
  }
  return out;
}

// Every case of `cases` as one class (P = 0, m_per_p = 0).
inline ShapeClass shape_all(const std::vector<ShapeCase>& cases, double above_ratio = kShapeAbove) {
  std::vector<const ShapeCase*> members;
  for (const ShapeCase& c : cases)
    if (c.P > 0) members.push_back(&c);
  return shape_summary(members, above_ratio);
}

}  // namespace ps::bench
