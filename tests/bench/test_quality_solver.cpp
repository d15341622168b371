// The arithmetic of bench/quality's solver table and summary (bench/quality_solver.h): the solver
// block read by key from a certificate's extras, the median and the counts.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "bench/quality_solver.h"

using ps::bench::median;
using ps::bench::solver_case;
using ps::bench::SolverCase;
using ps::bench::summarize;

namespace {

// A solver block as synthesize() writes it (strings, keyed by name).
std::map<std::string, std::string> block(const std::string& before, const std::string& bound_before,
                                         const std::string& proven, const std::string& improved,
                                         const std::string& gap, const std::string& checks) {
  return {{"before_z3_ms", before},      {"bound_before_z3_ms", bound_before},
          {"bound_proven_ms", proven},   {"bound_ms", proven},
          {"z3_improved_ms", improved},  {"gap", gap},
          {"z3_checks", checks},         {"time_unit_ms", "1e-05"},
          {"schedule_method", "z3"},     {"bound_method", "destructive bound"},
          {"solver_status", "no-queue: sat"}};
}

}  // namespace

TEST_CASE("bench quality: a solver block read by key, figures derived from it") {
  const SolverCase c = solver_case(block("110.0000", "100.0000", "104.0000", "5.0000", "0.014423", "7"), 105.0, 1000);
  CHECK(c.before_z3_ms == doctest::Approx(110));
  CHECK(c.gap_before() == doctest::Approx(0.10));
  CHECK(c.bound_raise_ms() == doctest::Approx(4));
  CHECK(c.gap == doctest::Approx(0.014423));
  CHECK(c.z3_checks == 7);
  CHECK(c.tolerance_ms == doctest::Approx(0.01));  // 1000 ops × 1e-5 ms
  CHECK(c.schedule_method == "z3");
  CHECK(c.bound_method == "destructive bound");
  CHECK(c.solver_status == "no-queue: sat");
  CHECK(c.improved());
  CHECK_FALSE(c.slower_than_before());
}

TEST_CASE("bench quality: absent or unreadable keys count nowhere") {
  std::map<std::string, std::string> extra = block("110", "100", "100", "0", "0.1", "0");
  extra.erase("before_z3_ms");
  extra["z3_checks"] = "many";
  extra.erase("bound_method");
  const SolverCase c = solver_case(extra, 111.0, 10);
  CHECK(std::isnan(c.before_z3_ms));
  CHECK(std::isnan(c.gap_before()));
  CHECK(std::isnan(c.z3_checks));
  CHECK(c.bound_method.empty());
  CHECK_FALSE(c.slower_than_before());
  const auto s = summarize({c});
  CHECK(s.cases == 1);
  CHECK(s.over_tenth == 0);
  CHECK(s.over_one == 0);
  CHECK(std::isnan(s.median_before));
  // A bound before Z3 of 0: no gap before Z3 (not an infinite one).
  CHECK(std::isnan(solver_case(block("5", "0", "0", "0", "0", "0"), 5, 1).gap_before()));
}

TEST_CASE("bench quality: slower than before Z3 only beyond the DAG's rounding") {
  // 100 ops × 1e-5 ms: the checker may simulate up to 0.001 ms above the DAG timing of the same order.
  CHECK_FALSE(solver_case(block("407.8247", "400", "400", "0", "0", "0"), 407.8256, 100).slower_than_before());
  CHECK(solver_case(block("407.8247", "400", "400", "0", "0", "0"), 407.8260, 100).slower_than_before());
}

TEST_CASE("bench quality: median") {
  CHECK(std::isnan(median({})));
  CHECK(median({3}) == 3);
  CHECK(median({4, 1, 3}) == 3);
  CHECK(median({4, 1, 3, 2}) == doctest::Approx(2.5));
  CHECK(median({NAN, 2, 8}) == doctest::Approx(5));  // NaN left out
}

TEST_CASE("bench quality: the summary's counts") {
  const std::vector<SolverCase> cases = {
      // gap before 0.05 %: below both thresholds.
      solver_case(block("100.05", "100", "100", "0", "0.0005", "0"), 100.05, 10),
      // 0.5 %, Z3 checked but did not improve.
      solver_case(block("100.5", "100", "100", "0", "0.005", "3"), 100.5, 10),
      // 2 %: Z3 shortened the order by 1 ms.
      solver_case(block("102", "100", "100", "1", "0.01", "4"), 101, 10),
      // 4 %: Z3 raised the bound by 2 ms only.
      solver_case(block("104", "100", "102", "0", "0.019608", "9"), 104, 10),
      // 6 %, no checks, nothing changed; the result simulates 1 ms slower than before Z3.
      solver_case(block("106", "100", "100", "0", "0.07", "0"), 107, 10),
  };
  const auto s = summarize(cases);
  CHECK(s.cases == 5);
  CHECK(s.over_tenth == 4);
  CHECK(s.over_tenth_checked == 3);
  CHECK(s.over_one == 3);
  CHECK(s.over_one_improved == 2);
  CHECK(s.median_before == doctest::Approx(0.04));
  CHECK(s.median_after == doctest::Approx(0.019608));
  CHECK(s.slower == 1);
}

TEST_CASE("bench quality: the best order before Z3 is the shorter of synthesize()'s and the search's") {
  // The search's order (101 ms) beats synthesize()'s best before Z3 (104 ms) and is written.
  const SolverCase c = solver_case(block("104", "100", "100", "0", "0.01", "0"), 101, 10, 101);
  CHECK(c.best_before_ms() == doctest::Approx(101));
  CHECK(c.gap_before() == doctest::Approx(0.01));
  CHECK_FALSE(c.slower_than_before());
  // A result slower than the search's order counts as slower, though not slower than before_z3_ms.
  CHECK(solver_case(block("104", "100", "100", "0", "0.03", "0"), 103, 10, 101).slower_than_before());
  // No search: synthesize()'s order alone.
  CHECK(solver_case(block("104", "100", "100", "0", "0.04", "0"), 104, 10).gap_before() == doctest::Approx(0.04));
}

TEST_CASE("bench quality: ours over the global and plan bounds per shape class (P, M/P)") {
  using ps::bench::ShapeCase;
  using ps::bench::shape_classes;
  const double nan = ps::bench::kNoValue;
  // P = 8, M = 8 twice, P = 8, M = 16 once, P = 4, M = 8 (M/P 2) once with no search (no global bound).
  const std::vector<ShapeCase> cases = {
      {8, 8, 110, 100, 105}, {8, 8, 121, 100, 110}, {8, 16, 100, 100, 100}, {4, 8, 103, nan, 101}};
  const auto k = shape_classes(cases);
  REQUIRE(k.size() == 3);
  // Sorted by P, then M/P: (4, 2), (8, 1), (8, 2).
  CHECK(k[0].P == 4);
  CHECK(k[0].m_per_p == 2);
  CHECK(k[0].cases == 1);
  CHECK(std::isnan(k[0].geo_global));
  CHECK(std::isnan(k[0].max_global));
  CHECK(k[0].geo_plan == doctest::Approx(103.0 / 101));
  CHECK(k[1].P == 8);
  CHECK(k[1].m_per_p == 1);
  CHECK(k[1].cases == 2);
  CHECK(k[1].geo_global == doctest::Approx(std::sqrt(1.10 * 1.21)));  // 1.1537
  CHECK(k[1].max_global == doctest::Approx(1.21));
  CHECK(k[1].geo_plan == doctest::Approx(std::sqrt(110.0 / 105 * 1.10)));
  CHECK(k[1].max_plan == doctest::Approx(1.10));
  CHECK(k[2].m_per_p == 2);
  CHECK(k[2].geo_global == doctest::Approx(1.0));
  CHECK(k[2].max_plan == doctest::Approx(1.0));
  CHECK(k[1].above == 1);  // 1.21 > 1.15, 1.10 not
  CHECK(k[2].above == 0);
  // Every case as one class: three with a global bound (1.10, 1.21, 1.00), four with a plan bound.
  const auto all = ps::bench::shape_all(cases);
  CHECK(all.cases == 4);
  CHECK(all.geo_global == doctest::Approx(std::cbrt(1.10 * 1.21 * 1.00)));
  CHECK(all.max_global == doctest::Approx(1.21));
  CHECK(all.above == 1);
  CHECK(ps::bench::shape_all(cases, 1.05).above == 2);
  CHECK(all.max_plan == doctest::Approx(1.10));
  CHECK(shape_classes({}).empty());
  CHECK(ps::bench::shape_all({}).cases == 0);
  // A bound of 0 is no bound (not an infinite ratio).
  CHECK(std::isnan(ps::bench::bound_ratio(100, 0)));
}
