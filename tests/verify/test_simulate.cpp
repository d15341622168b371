// Timing simulation, memory, lower bounds and the pictures: closed forms, semantics-specific
// timing with transfers, memory curves, bound tightness, trace/JSON/SVG shape and determinism.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "builders.h"
#include "ir/partition.h"
#include "report/report.h"

using namespace vt;

TEST_CASE("GPipe and 1F1B with uniform costs: makespan (M+P-1)(F+B) equals the lower bound") {
  for (int P : {2, 3, 4}) {
    for (int M : {P, 2 * P + 1}) {
      Problem p = uniform_problem(P, M, sequential(P), 1.0, 1.5, 0.5);  // F = 1, B = 2
      for (auto& st : p.stages) st.split_backward = false;
      const double closed = (M + P - 1) * 3.0;
      for (const Schedule& s : {gpipe(p), one_f_one_b(p)}) {
        Report r = verify(s);
        INFO("P=", P, " M=", M, "\n", format_report(r));
        REQUIRE(r.valid);
        CHECK(r.sim->makespan_ms == doctest::Approx(closed));
        CHECK(r.lower_bound_ms == doctest::Approx(closed));  // the bound is tight here
        CHECK(r.sim->bubble_ratio == doctest::Approx(double(P - 1) / (M + P - 1)));
        for (int d = 0; d < P; ++d) {
          CHECK(r.sim->busy_ms[d] == doctest::Approx(3.0 * M));
          CHECK(r.sim->idle_ms[d] == doctest::Approx(closed - 3.0 * M));
        }
      }
      // Memory: GPipe holds all M activations; 1F1B holds P - d on device d.
      Report g = verify(gpipe(p)), o = verify(one_f_one_b(p));
      for (int d = 0; d < P; ++d) {
        CHECK(g.sim->peak_memory_mb[d] == doctest::Approx(2 + 100.0 * M));
        CHECK(o.sim->peak_memory_mb[d] == doctest::Approx(2 + 100.0 * std::min(M, P - d)));
      }
    }
  }
}

TEST_CASE("one microbatch over two devices with transfers: the exact chain") {
  Problem p = uniform_problem(2, 1, {0, 1}, 1.0, 2.0, 1.0, /*xfer_mb=*/0.5);  // 0.5 ms per transfer
  Report r = verify(from_strings(p, {"0F0 0I0 0W0", "1F0 1I0 1W0"}));
  REQUIRE(r.valid);
  // F0 [0,1], transfer [1,1.5], F1 [1.5,2.5], I1 [2.5,4.5], transfer [4.5,5], I0 [5,7], W0 [7,8].
  CHECK(r.sim->makespan_ms == doctest::Approx(8.0));
  CHECK(r.lower_bound_ms == doctest::Approx(8.0));  // critical path incl. both transfers
  const Schedule& c = r.checked;
  REQUIRE(c.programs[0].size() == 5);  // 0F0 0SEND_F0 0RECV_B0 0I0 0W0
  CHECK(to_string(c.programs[0][1]) == "0SEND_F0");
  CHECK(r.sim->times[0][1].start_ms == doctest::Approx(1.0));
  CHECK(r.sim->times[0][1].end_ms == doctest::Approx(1.5));
  CHECK(r.sim->times[0][3].start_ms == doctest::Approx(5.0));
}

TEST_CASE("semantics change timing: rendezvous serializes a device's transfers, buffered does not") {
  // Two sends back to back from device 0; each transfer takes 5 ms.
  Problem p = uniform_problem(2, 2, {0, 1}, 1.0, 1.0, 1.0, 5.0);
  for (auto& st : p.stages) st.split_backward = false;
  Schedule s = from_strings(p, {"0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1",
                                "1RECV_F0 1RECV_F1 1F0 1F1 1B0 1SEND_B0 1B1 1SEND_B1"});
  auto f1_start = [&](Semantics sem) {
    VerifyOptions o;
    o.semantics = sem;
    Report r = verify(s, o);
    INFO(format_report(r));
    REQUIRE(r.valid);
    return r.sim->times[1][3].start_ms;  // 1F1
  };
  // Rendezvous: pair F0 [1,6], pair F1 can start only when device 0's comm stream is free: [6,11].
  CHECK(f1_start(Semantics::kRendezvous) == doctest::Approx(11.0));
  // Buffered: SEND_F1 issued at 2, arrives at 7; 1F0 runs [6,7], so 1F1 starts at 7.
  CHECK(f1_start(Semantics::kBuffered) == doctest::Approx(7.0));
  // Grouped: device 1's two RECVs form one group, device 0's sends are separate groups: as rendezvous.
  CHECK(f1_start(Semantics::kGrouped) == doctest::Approx(11.0));
}

TEST_CASE("every valid schedule's makespan is at least the lower bound, which has three parts") {
  // A heavy head stage: the device-work bound dominates.
  Problem p = uniform_problem(3, 4, sequential(3));
  p.stages[2].fwd_ms = 10;
  Report r = verify(one_f_one_b(p));
  REQUIRE(r.valid);
  CHECK(r.lower_bound_ms >= 4 * 12.0);
  CHECK(r.sim->makespan_ms >= r.lower_bound_ms);
  // Lower bound parts are all valid bounds: every order of a tiny problem respects them.
  std::mt19937 rng(5);
  Problem q = uniform_problem(2, 3, {0, 1, 1, 0}, 1.0, 1.0, 1.0, 0.3);
  for (int i = 0; i < 50; ++i) {
    Report ri = verify(random_valid(q, rng));
    REQUIRE(ri.valid);
    CHECK(ri.sim->makespan_ms >= ri.lower_bound_ms - 1e-9);
  }
}

TEST_CASE("memory curve: allocations at F start, frees at backward end, peak op index") {
  Problem p = uniform_problem(1, 2, {0});
  Report r = verify(from_strings(p, {"0F0 0F1 0I0 0W0 0I1 0W1"}));
  REQUIRE(r.valid);
  const auto& m = r.sim->memory[0];
  // model states 2 MB; F +100; I frees 80 (stash 20 kept); W frees 20.
  REQUIRE(m.size() == 7);
  CHECK(m[0].mb == doctest::Approx(2));
  CHECK(m[2].mb == doctest::Approx(202));
  CHECK(m[3].mb == doctest::Approx(122));
  CHECK(m[3].time_ms == doctest::Approx(3.0));  // end of 0I0
  CHECK(m[6].mb == doctest::Approx(2));
  CHECK(r.sim->peak_op_index[0] == 1);
  CHECK(r.sim->peak_memory_mb[0] == doctest::Approx(202));
}

TEST_CASE("reports: JSON schema, Chrome trace tracks, SVG, all deterministic") {
  Problem p = uniform_problem(2, 4, {0, 1, 1, 0}, 1.0, 1.0, 1.0, 0.2);
  std::mt19937 rng(9);
  Schedule s = random_valid(p, rng);
  Report r = verify(s);
  REQUIRE(r.valid);

  auto j = nlohmann::json::parse(format_report_json(r));
  CHECK(j["valid"] == true);
  CHECK(j["semantics"] == "rendezvous");
  CHECK(j["violations"].empty());
  CHECK(j["makespan_ms"].get<double>() == r.sim->makespan_ms);
  CHECK(j["lower_bound_ms"].get<double>() == r.lower_bound_ms);
  CHECK(j["peak_memory_gb"].size() == 2);
  CHECK(j["safe_under"].size() == 4);
  CHECK(j["devices"].size() == 2);
  CHECK(j["comms_inserted"] == true);

  Report bad = verify(from_strings(uniform_problem(2, 1, {0, 1}), {"0B0 0F0", "1F0 1B0"}));
  auto jb = nlohmann::json::parse(format_report_json(bad));
  CHECK(jb["valid"] == false);
  REQUIRE(jb["violations"].size() == 1);
  auto v = jb["violations"][0];
  CHECK(v["rule"] == "dependency");
  CHECK(v["device"] == 0);
  CHECK(v["op_index"] == 0);
  CHECK(v["action"] == "0B0");
  CHECK(v["file"] == "test");
  CHECK(v["line"] == 1);
  CHECK(v["col"] == 1);
  CHECK(v["notes"].size() == 1);
  CHECK(jb["makespan_ms"].is_null());

  auto t = nlohmann::json::parse(format_chrome_trace(r));
  std::set<int> tids;
  size_t complete = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      tids.insert(e["tid"].get<int>());
      CHECK(e["dur"].get<double>() >= 0);
    }
  }
  CHECK(complete == r.checked.num_ops());
  CHECK(tids == std::set<int>{0, 1, 2, 3});  // compute and comm track per device

  const std::string svg = format_svg(r, "test chart");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("test chart") != std::string::npos);
  CHECK(svg.find("device 1") != std::string::npos);
  CHECK(svg.find("memory per device") != std::string::npos);
  CHECK(svg.find("</svg>") != std::string::npos);
  // Deterministic output.
  Report r2 = verify(s);
  CHECK(format_svg(r2, "test chart") == svg);
  CHECK(format_report_json(r2) == format_report_json(r));
  CHECK(format_chrome_trace(r2) == format_chrome_trace(r));
  CHECK(format_report(r2) == format_report(r));
  // Without a simulation the SVG says so instead of drawing.
  CHECK(format_svg(bad).find("no timing") != std::string::npos);
}

TEST_CASE("balanced partition: exact minimum of the max stage time") {
  Model m;
  m.name = "m";
  LayerType a;
  a.symbol = 'a';
  a.forward_ms = 1;
  LayerType b;
  b.symbol = 'b';
  b.forward_ms = 5;
  m.types['a'] = a;
  m.types['b'] = b;
  const std::string layers = "aaabaaaab";
  for (size_t i = 0; i < layers.size(); ++i) m.layers.push_back(Layer{static_cast<int>(i), layers[i], {}, {}});
  Spec spec;
  spec.model = m;
  auto p = balanced_partition(spec, 3);
  REQUIRE(p.ok());
  // Costs 1 1 1 5 1 1 1 1 5; brute force over all cut pairs gives the optimum.
  const int n = static_cast<int>(layers.size());
  auto cost = [&](int a, int b) {
    double c = 0;
    for (int i = a; i <= b; ++i) c += m.type_of(i).forward_ms;
    return c;
  };
  double best = 1e9;
  for (int c1 = 1; c1 < n; ++c1)
    for (int c2 = c1 + 1; c2 < n; ++c2)
      best = std::min(best, std::max({cost(0, c1 - 1), cost(c1, c2 - 1), cost(c2, n - 1)}));
  CHECK(best == doctest::Approx(7));
  double worst = 0;
  for (const auto& r : *p) {
    double c = 0;
    for (int i = r.first; i <= r.last; ++i) c += m.type_of(i).forward_ms;
    worst = std::max(worst, c);
  }
  CHECK(worst == doctest::Approx(best));
  CHECK((*p)[0].first == 0);
  CHECK((*p)[2].last == 8);
  CHECK_FALSE(balanced_partition(spec, 10).ok());
}
