// Baseline generators: structure (every op once, per-device data-flow order, B where the backward
// cannot split), refusals, closed forms of the simulated iteration time under uniform costs and
// zero comm, and the checker's verdict (rendezvous semantics, comms inserted).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "report/report.h"
#include "synth/certify.h"
#include "synth/baselines/baselines.h"
#include "synth/bounds/global_bound.h"
#include "synth/plan/partition.h"
#include "synth/plan/placement.h"
#include "verify/digest.h"
#include "verify/verify.h"

using namespace ps;

namespace {

// S stages with identical costs; zero-cost links (latency 0, no bytes) so that the simulated time
// is pure compute. Activation 10 MB, stash 4 MB, no model states.
Problem uniform_problem(int P, const std::vector<int>& placement, int M, double F, double I,
                        double W) {
  Problem p;
  p.name = "uniform";
  p.devices = P;
  p.microbatches = M;
  p.memory_gb = 0;
  p.link.latency_us = 0;
  p.link.bandwidth_gb_per_s = 1e12;
  p.inter_node_link = p.link;
  for (size_t s = 0; s < placement.size(); ++s) {
    StageSpec st;
    st.first_layer = static_cast<int>(s);
    st.last_layer = static_cast<int>(s);
    st.device = placement[s];
    st.fwd_ms = F;
    st.bwd_input_ms = I;
    st.bwd_weight_ms = W;
    st.activation_mb = 10;
    st.wgrad_stash_mb = 4;
    st.output_mb = 0;
    p.stages.push_back(st);
  }
  return p;
}

Problem shaped_problem(BaselineKind kind, int P, int M, int V, double F, double I, double W) {
  auto shape = baseline_shape(kind, V);
  REQUIRE(shape.ok());
  // Per-device costs F, I, W are spread over the device's stages.
  double v = shape->stages_per_device;
  return uniform_problem(P, baseline_placement(*shape, P), M, F / v, I / v, W / v);
}

// Structural invariants every generated schedule must hold (independent of the checker).
void check_structure(const Schedule& s) {
  const Problem& p = s.problem;
  REQUIRE(s.num_devices() == p.devices);
  CHECK(!s.has_comms());
  std::map<std::tuple<int, int, int>, int> seen;  // (type, stage, mb) -> count
  for (int d = 0; d < s.num_devices(); ++d) {
    std::set<std::tuple<int, int, int>> done;  // on this device so far
    for (const Action& a : s.programs[d]) {
      INFO("device ", d, " op ", to_string(a));
      const int stage = a.stage.value(), mb = a.mb.value();
      REQUIRE(stage >= 0);
      REQUIRE(stage < p.num_stages());
      REQUIRE(mb >= 0);
      REQUIRE(mb < p.microbatches);
      CHECK(p.device_of(a.stage) == d);
      CHECK(is_compute(a.type));
      ++seen[{static_cast<int>(a.type), stage, mb}];
      auto here = [&](OpType t, int st) { return done.count({static_cast<int>(t), st, mb}) > 0; };
      bool split = p.stages[stage].split_backward;
      if (!split) CHECK(a.type != OpType::I);
      if (!split) CHECK(a.type != OpType::W);
      switch (a.type) {
        case OpType::F:
          if (stage > 0 && p.device_of(StageId{stage - 1}) == d) CHECK(here(OpType::F, stage - 1));
          break;
        case OpType::I:
        case OpType::B:
          CHECK(here(OpType::F, stage));
          if (stage + 1 < p.num_stages() && p.device_of(StageId{stage + 1}) == d)
            CHECK((here(OpType::I, stage + 1) || here(OpType::B, stage + 1)));
          break;
        case OpType::W:
          CHECK(here(OpType::I, stage));
          break;
        default:
          break;
      }
      done.insert({static_cast<int>(a.type), stage, mb});
    }
  }
  for (int st = 0; st < p.num_stages(); ++st) {
    for (int m = 0; m < p.microbatches; ++m) {
      INFO("stage ", st, " microbatch ", m);
      auto count = [&](OpType t) {
        auto it = seen.find({static_cast<int>(t), st, m});
        return it == seen.end() ? 0 : it->second;
      };
      CHECK(count(OpType::F) == 1);
      bool fused = count(OpType::B) == 1 && count(OpType::I) == 0 && count(OpType::W) == 0;
      bool split = count(OpType::B) == 0 && count(OpType::I) == 1 && count(OpType::W) == 1;
      CHECK((fused || split));
    }
  }
}

// Data-flow simulation of the compute-only programs (zero comm), independent of the checker:
// returns the makespan, or -1 if the programs wait on each other in a cycle.
double dataflow_makespan(const Schedule& s) {
  const Problem& p = s.problem;
  std::map<std::tuple<int, int, int>, double> end;  // (0=F 1=I/B 2=W, stage, mb) -> end time
  std::vector<size_t> pc(s.num_devices(), 0);
  std::vector<double> t(s.num_devices(), 0);
  size_t done = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int d = 0; d < s.num_devices(); ++d) {
      while (pc[d] < s.programs[d].size()) {
        const Action& a = s.programs[d][pc[d]];
        const int stage = a.stage.value(), mb = a.mb.value();
        const StageSpec& st = p.stages[stage];
        double ready = t[d], dur = 0;
        bool ok = true;
        auto need = [&](int kind, int from) {
          auto it = end.find({kind, from, mb});
          if (it == end.end())
            ok = false;
          else
            ready = std::max(ready, it->second);
        };
        int kind = 0;
        if (a.type == OpType::F) {
          if (stage > 0) need(0, stage - 1);
          dur = st.fwd_ms;
        } else if (a.type == OpType::W) {
          need(1, stage);
          dur = st.bwd_weight_ms;
          kind = 2;
        } else {
          need(0, stage);
          if (stage + 1 < p.num_stages()) need(1, stage + 1);
          dur = a.type == OpType::B ? st.bwd_ms() : st.bwd_input_ms;
          kind = 1;
        }
        if (!ok) break;
        t[d] = ready + dur;
        end[{kind, stage, mb}] = t[d];
        ++pc[d];
        ++done;
        progress = true;
      }
    }
  }
  if (done != s.num_ops()) return -1;
  return *std::max_element(t.begin(), t.end());
}

// Generates, checks the structure and verifies; returns the checker's simulated makespan.
double checked_makespan(const Problem& p, BaselineKind kind, Report* out = nullptr) {
  auto s = make_baseline(p, kind);
  INFO(baseline_name(kind), " P=", p.devices, " M=", p.microbatches, " S=", p.num_stages());
  if (!s.ok()) FAIL(s.status().message());
  check_structure(*s);
  double dataflow = dataflow_makespan(*s);
  CHECK(dataflow >= 0);
  Report r = verify(*s);
  INFO(format_report(r));
  REQUIRE(r.valid);
  REQUIRE(r.sim.has_value());
  CHECK(r.comms_inserted);
  // With free comm the checker's simulation and the plain data-flow one must agree.
  CHECK(r.sim->makespan_ms == doctest::Approx(dataflow).epsilon(1e-9));
  double mk = r.sim->makespan_ms;
  if (out) *out = std::move(r);
  return mk;
}

struct Costs {
  double F, I, W;
};
const Costs kCosts[] = {{1, 1, 1}, {1, 2, 1}, {2, 3, 1}, {1.5, 1.5, 0.5}, {1, 1.5, 1.2}, {1, 1, 2}};

}  // namespace

TEST_CASE("baseline names round-trip") {
  for (BaselineKind k : all_baseline_kinds()) {
    auto back = parse_baseline_kind(baseline_name(k));
    REQUIRE(back.has_value());
    CHECK(*back == k);
  }
  CHECK(!parse_baseline_kind("zb-h3").has_value());
  CHECK(baseline_names_joined("|") == "gpipe|1f1b|interleaved-1f1b|zb-h1|zb-h2|zbv|dualpipev");
}

TEST_CASE("every baseline is structurally sound and data-flow deadlock-free on many shapes") {
  for (BaselineKind kind : all_baseline_kinds()) {
    for (int P : {1, 2, 3, 4, 5, 8}) {
      for (int M = 1; M <= 2 * P + 2; ++M) {
        int V = kind == BaselineKind::kInterleaved1F1B ? 2 + (M % 2) : 0;
        Problem p = shaped_problem(kind, P, M, V, 1, 1, 1);
        if (!check_baseline_shape(p, kind).is_ok()) continue;  // refusals are tested below
        auto s = make_baseline(p, kind);
        INFO(baseline_name(kind), " P=", P, " M=", M, " V=", V);
        REQUIRE(s.ok());
        check_structure(*s);
        CHECK(dataflow_makespan(*s) > 0);
        CHECK(s->generator == std::string("pipesmith baseline ") + baseline_name(kind));
        // Deterministic: same input, same programs.
        auto again = make_baseline(p, kind);
        REQUIRE(again.ok());
        CHECK(again->programs == s->programs);
      }
    }
  }
}

TEST_CASE("orders are the published ones whatever the costs (only timings change)") {
  for (BaselineKind kind : all_baseline_kinds()) {
    Problem uniform = shaped_problem(kind, 4, 8, 0, 1, 1, 1);
    Problem skewed = uniform;
    for (size_t s = 0; s < skewed.stages.size(); ++s) {
      skewed.stages[s].fwd_ms = 0.5 + 0.7 * static_cast<double>(s % 3);
      skewed.stages[s].bwd_input_ms = 2.0 - 0.3 * static_cast<double>(s % 2);
      skewed.stages[s].bwd_weight_ms = 0.1 * static_cast<double>(s + 1);
      skewed.stages[s].output_mb = 50;
    }
    skewed.link.latency_us = 30;
    skewed.link.bandwidth_gb_per_s = 50;
    auto a = make_baseline(uniform, kind);
    auto b = make_baseline(skewed, kind);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->programs == b->programs);
    Report r = verify(*b);
    INFO(baseline_name(kind), "\n", format_report(r));
    CHECK(r.valid);
  }
}

TEST_CASE("closed form: GPipe and 1F1B take (M+P-1)(F+B)") {
  for (const Costs& c : kCosts) {
    for (int P : {1, 2, 4, 8}) {
      for (int M : {1, 2, P, 2 * P + 1, 4 * P}) {
        double expect = (M + P - 1) * (c.F + c.I + c.W);
        CAPTURE(P);
        CAPTURE(M);
        CHECK(checked_makespan(shaped_problem(BaselineKind::kGPipe, P, M, 0, c.F, c.I, c.W),
                               BaselineKind::kGPipe) == doctest::Approx(expect));
        CHECK(checked_makespan(shaped_problem(BaselineKind::k1F1B, P, M, 0, c.F, c.I, c.W),
                               BaselineKind::k1F1B) == doctest::Approx(expect));
      }
    }
  }
}

TEST_CASE("closed form: interleaved 1F1B takes M(F+B) + (P-1)(F+B)/V") {
  for (const Costs& c : {kCosts[0], kCosts[2], kCosts[4]}) {
    for (int P : {2, 3, 4, 8}) {
      for (int V : {2, 3, 4}) {
        for (int M : {P, 2 * P, 3 * P}) {
          double B = c.I + c.W;
          double expect = M * (c.F + B) + (P - 1) * (c.F + B) / V;
          CAPTURE(P);
          CAPTURE(V);
          CAPTURE(M);
          Problem p = shaped_problem(BaselineKind::kInterleaved1F1B, P, M, V, c.F, c.I, c.W);
          CHECK(checked_makespan(p, BaselineKind::kInterleaved1F1B) == doctest::Approx(expect));
        }
      }
    }
  }
}

TEST_CASE("closed form: ZB-H1 takes M(F+I+W) + (P-1)(F+I-W) when W <= F (M >= P)") {
  // The Zero Bubble paper's formula assumes W <= F (it is drawn for F = I = W). In general the
  // order gives M(F+I+W) + (P-1)·max(F+I-W, I): rank 0 holds only P microbatches before its first
  // I (1F1B memory) and so must idle (P-1)·I waiting for it, which no order can avoid.
  for (const Costs& c : kCosts) {
    for (int P : {1, 2, 3, 4, 8}) {
      for (int M : {P, P + 1, 2 * P, 4 * P}) {
        CAPTURE(c.F);
        CAPTURE(c.I);
        CAPTURE(c.W);
        CAPTURE(P);
        CAPTURE(M);
        double got = checked_makespan(shaped_problem(BaselineKind::kZBH1, P, M, 0, c.F, c.I, c.W),
                                      BaselineKind::kZBH1);
        double paper = M * (c.F + c.I + c.W) + (P - 1) * (c.F + c.I - c.W);
        double general = M * (c.F + c.I + c.W) + (P - 1) * std::max(c.F + c.I - c.W, c.I);
        CHECK(got == doctest::Approx(general));
        if (c.W <= c.F) CHECK(got == doctest::Approx(paper));
      }
    }
  }
}

TEST_CASE("ZB-H2 and ZB-V are never slower than ZB-H1; ZB-H2 reaches (P-1)F + M(F+I+W)") {
  for (const Costs& c : kCosts) {
    for (int P : {2, 3, 4, 8}) {
      for (int M : {1, P, 2 * P, 3 * P + 1}) {
        CAPTURE(c.F);
        CAPTURE(c.I);
        CAPTURE(c.W);
        CAPTURE(P);
        CAPTURE(M);
        double h1 = checked_makespan(shaped_problem(BaselineKind::kZBH1, P, M, 0, c.F, c.I, c.W),
                                     BaselineKind::kZBH1);
        double h2 = checked_makespan(shaped_problem(BaselineKind::kZBH2, P, M, 0, c.F, c.I, c.W),
                                     BaselineKind::kZBH2);
        double zbv = checked_makespan(shaped_problem(BaselineKind::kZBV, P, M, 0, c.F, c.I, c.W),
                                      BaselineKind::kZBV);
        CHECK(h2 <= h1 + 1e-9);
        CHECK(zbv <= h1 + 1e-9);
        // No schedule beats (P-1)F + M(F+I+W): the last device starts after P-1 forwards.
        double floor = (P - 1) * c.F + M * (c.F + c.I + c.W);
        CHECK(h2 >= floor - 1e-9);
        // With enough microbatches and W >= F, ZB-H2's deferred W's cover the drain: it reaches
        // the floor, which ZB-H1 (rank 0 idles (P-1)·I first) cannot when I > F.
        if (c.W >= c.F && M >= 2 * P) CHECK(h2 == doctest::Approx(floor));
      }
    }
  }
}

TEST_CASE(
    "closed form: ZB-V (M >= 2P-1) and DualPipeV (M >= 2P) take M(F+I+W) + (P-1)F/2 when F = I = "
    "W") {
  // The Zero Bubble paper's regime (F = I = W per device, each V stage half of it): the only idle
  // time is the fill of the first P-1 half-stages before the last device starts, which no schedule
  // on a V placement can avoid (the floor).
  for (double F : {1.0, 2.5}) {
    for (int P : {1, 2, 3, 4, 8}) {
      for (int M : {2 * P - 1, 2 * P, 3 * P + 1, 4 * P}) {
        if (M < 1) continue;
        CAPTURE(F);
        CAPTURE(P);
        CAPTURE(M);
        double expect = M * 3 * F + (P - 1) * F / 2;
        CHECK(checked_makespan(shaped_problem(BaselineKind::kZBV, P, M, 0, F, F, F),
                               BaselineKind::kZBV) == doctest::Approx(expect));
        if (M >= 2 * P)
          CHECK(checked_makespan(shaped_problem(BaselineKind::kDualPipeV, P, M, 0, F, F, F),
                                 BaselineKind::kDualPipeV) == doctest::Approx(expect));
      }
    }
  }
}

TEST_CASE("DualPipeV is valid on every accepted shape") {
  for (const Costs& c : kCosts) {
    for (int P : {1, 2, 4, 8}) {
      for (int M : {2 * P, 2 * P + 1, 3 * P}) {
        CAPTURE(P);
        CAPTURE(M);
        double mk =
            checked_makespan(shaped_problem(BaselineKind::kDualPipeV, P, M, 0, c.F, c.I, c.W),
                             BaselineKind::kDualPipeV);
        CHECK(mk >= M * (c.F + c.I + c.W) - 1e-9);
      }
    }
  }
}

TEST_CASE("memory: ZB-H1 and ZB-V stay within 1F1B's peak, ZB-H2 within about twice") {
  for (int P : {2, 4, 8}) {
    for (int M : {P, 2 * P, 4 * P}) {
      Report r1, rh1, rh2, rv;
      checked_makespan(shaped_problem(BaselineKind::k1F1B, P, M, 0, 1, 1, 1), BaselineKind::k1F1B,
                       &r1);
      checked_makespan(shaped_problem(BaselineKind::kZBH1, P, M, 0, 1, 1, 1), BaselineKind::kZBH1,
                       &rh1);
      checked_makespan(shaped_problem(BaselineKind::kZBH2, P, M, 0, 1, 1, 1), BaselineKind::kZBH2,
                       &rh2);
      // ZB-V: stages are half a device's layers, so each holds 5 MB per microbatch (2 MB stash).
      Problem v = shaped_problem(BaselineKind::kZBV, P, M, 0, 1, 1, 1);
      for (auto& st : v.stages) {
        st.activation_mb = 5;
        st.wgrad_stash_mb = 2;
      }
      checked_makespan(v, BaselineKind::kZBV, &rv);
      auto peak = [](const Report& r) {
        return *std::max_element(r.sim->peak_memory_mb.begin(), r.sim->peak_memory_mb.end());
      };
      CAPTURE(P);
      CAPTURE(M);
      // 1F1B: rank 0 holds P activations of 10 MB.
      CHECK(peak(r1) == doctest::Approx(10.0 * std::min(P, M)));
      CHECK(peak(rh1) <= peak(r1) + 1e-9);
      CHECK(peak(rh2) <= 2 * peak(r1) + 1e-9);
      if (M >= 2 * P) CHECK(peak(rh2) > peak(r1));  // it does buy its speed with memory
      CHECK(peak(rv) <= peak(r1) + 1e-9);
    }
  }
}

TEST_CASE("stages that cannot split their backward get B, also in ZB schedules") {
  for (BaselineKind kind :
       {BaselineKind::kZBH1, BaselineKind::kZBH2, BaselineKind::kZBV, BaselineKind::kDualPipeV}) {
    Problem p = shaped_problem(kind, 4, 8, 0, 1, 1, 1);
    p.stages[1].split_backward = false;
    p.stages.back().split_backward = false;
    auto s = make_baseline(p, kind);
    REQUIRE(s.ok());
    check_structure(*s);  // asserts B (never I/W) on those stages
    int b_ops = 0;
    for (const auto& prog : s->programs)
      for (const Action& a : prog)
        if (a.type == OpType::B && (a.stage == StageId{1} || a.stage == StageId{p.num_stages() - 1})) ++b_ops;
    CHECK(b_ops == 2 * 8);
    Report r = verify(*s);
    INFO(format_report(r));
    CHECK(r.valid);
  }
}

TEST_CASE("unsupported shapes are refused with a clear message") {
  auto msg = [](const Problem& p, BaselineKind k) {
    auto s = make_baseline(p, k);
    REQUIRE(!s.ok());
    CHECK(s.status().code() == ErrorCode::kBadInput);
    return s.status().message();
  };
  // Interleaved: M must be a multiple of P (Megatron).
  CHECK(msg(shaped_problem(BaselineKind::kInterleaved1F1B, 4, 6, 2, 1, 1, 1),
            BaselineKind::kInterleaved1F1B)
            .find("multiple of P = 4") != std::string::npos);
  // DualPipeV: M >= 2P.
  CHECK(msg(shaped_problem(BaselineKind::kDualPipeV, 4, 7, 0, 1, 1, 1), BaselineKind::kDualPipeV)
            .find("at least 2P = 8 microbatches") != std::string::npos);
  // Wrong stage counts / placements.
  Problem seq = shaped_problem(BaselineKind::k1F1B, 4, 8, 0, 1, 1, 1);
  CHECK(msg(seq, BaselineKind::kZBV).find("2 stages per device in a V") != std::string::npos);
  CHECK(msg(seq, BaselineKind::kInterleaved1F1B).find("V >= 2 stages per device") !=
        std::string::npos);
  Problem vee = shaped_problem(BaselineKind::kZBV, 4, 8, 0, 1, 1, 1);
  CHECK(msg(vee, BaselineKind::k1F1B).find("one stage per device") != std::string::npos);
  CHECK(msg(vee, BaselineKind::kInterleaved1F1B).find("looped") != std::string::npos);
  // Shapes from the stages-per-device flag.
  CHECK(!baseline_shape(BaselineKind::kZBV, 3).ok());
  CHECK(!baseline_shape(BaselineKind::k1F1B, 2).ok());
  CHECK(!baseline_shape(BaselineKind::kInterleaved1F1B, 1).ok());
  auto v4 = baseline_shape(BaselineKind::kInterleaved1F1B, 4);
  REQUIRE(v4.ok());
  CHECK(v4->stages_per_device == 4);
}

TEST_CASE("certify_schedule returns the checked schedule with comms, times and a certificate") {
  Problem p = shaped_problem(BaselineKind::kZBV, 4, 8, 0, 1, 1, 1);
  p.link.latency_us = 20;
  p.link.bandwidth_gb_per_s = 100;
  for (auto& st : p.stages) st.output_mb = 16;
  auto s = make_baseline(p, BaselineKind::kZBV);
  REQUIRE(s.ok());
  auto c = certify_schedule(*s);
  REQUIRE(c.ok());
  CHECK(c->schedule.has_comms());
  REQUIRE(c->schedule.certificate.has_value());
  CHECK(c->schedule.certificate->verdict == "valid");
  CHECK(c->schedule.certificate->semantics == "rendezvous");
  CHECK(c->schedule.certificate->makespan_ms == doctest::Approx(c->report.sim->makespan_ms));
  CHECK(c->schedule.certificate->digest == certificate_digest(c->schedule, *c->schedule.certificate));
  REQUIRE(c->schedule.predicted.size() == c->schedule.programs.size());
  for (size_t d = 0; d < c->schedule.programs.size(); ++d)
    CHECK(c->schedule.predicted[d].size() == c->schedule.programs[d].size());
  // The checker accepts what was written, certificate included.
  Report again = verify(c->schedule);
  INFO(format_report(again));
  CHECK(again.valid);

  // A schedule the checker rejects for anything but memory is a generator bug: kRuntime (exit 4)
  // with the report.
  auto broken =
      make_baseline(shaped_problem(BaselineKind::k1F1B, 2, 2, 0, 1, 1, 1), BaselineKind::k1F1B);
  REQUIRE(broken.ok());
  std::swap(broken->programs[1][0], broken->programs[1][1]);  // device 1: B0 before F0
  auto cb = certify_schedule(*broken);
  REQUIRE(!cb.ok());
  CHECK(cb.status().code() == ErrorCode::kRuntime);
  CHECK(cb.status().message().find(
            "the checker rejected a schedule generated by 'pipesmith baseline 1f1b'") !=
        std::string::npos);
  CHECK(cb.status().message().find("dependency") != std::string::npos);

  // Memory over the limit is infeasibility (exit 2), not a generator bug.
  Problem tight = p;
  tight.memory_gb = 0.02;  // 20 MB < the activations ZB-V keeps live
  auto t = make_baseline(tight, BaselineKind::kZBV);
  REQUIRE(t.ok());
  auto ct = certify_schedule(*t);
  REQUIRE(!ct.ok());
  CHECK(ct.status().code() == ErrorCode::kInfeasible);
  CHECK(ct.status().message().find("does not fit the memory limit") != std::string::npos);
}

TEST_CASE("restate_optimality: another order of the plan keeps only the claims the checker accepts") {
  // A 1F1B order certified (above the checker's bound: its bubble), then given synthesize()'s solver
  // block as if it had replaced the order that block was about (pipesmith synth writing the search's
  // faster order).
  auto s = make_baseline(shaped_problem(BaselineKind::k1F1B, 4, 8, 0, 1, 1, 1), BaselineKind::k1F1B);
  REQUIRE(s.ok());
  auto c = certify_schedule(*s);
  REQUIRE(c.ok());
  Schedule base = c->schedule;
  const double mk = base.certificate->makespan_ms;
  const double lb = base.certificate->lower_bound_ms;
  REQUIRE(lb < mk);
  auto with_block = [&](double proven_ms, const std::string& status) {
    Schedule x = base;
    auto& e = x.certificate->extra;
    const double best = std::max(proven_ms, lb);
    e["bound_proven_ms"] = fmt::format("{:.4f}", proven_ms);
    e["bound_ms"] = fmt::format("{:.4f}", best);
    e["gap"] = fmt::format("{:.6f}", std::max(0.0, (mk - best) / best));
    e["solver_status"] = status;
    e["optimal"] = "false";
    return x;
  };
  auto valid_after = [](Schedule x) {
    seal_certificate(x);
    Report r = verify(x);
    INFO(format_report(r));
    return r.valid;
  };
  const double below = mk - 0.25 * (mk - lb);  // a proven bound under this order's makespan
  // A proof of the replaced order (on its integer DAG), the new order above the bound, nothing
  // restated: the status claims a proof that `optimal` denies, and the checker refuses it.
  Schedule stale = with_block(below, "destructive bound meets incumbent");
  CHECK_FALSE(valid_after(stale));
  // Restated: the optimum lies between the bound and this order, optimal_up_to_ms apart.
  OptimalityClaim claim = restate_optimality(*stale.certificate, mk, true);
  CHECK_FALSE(claim.optimal);
  CHECK(claim.up_to_ms == doctest::Approx(mk - std::stod(stale.certificate->extra.at("bound_proven_ms"))));
  CHECK(stale.certificate->extra.at("optimal") == "false");
  CHECK(stale.certificate->extra.count("optimal_up_to_ms") == 1);
  CHECK(valid_after(stale));
  // A bound that reaches the makespan: optimal, whether or not the replaced order was proven.
  Schedule reached = with_block(mk, "windows: budget exhausted (3 windows, 0 improved the order)");
  claim = restate_optimality(*reached.certificate, mk, false);
  CHECK(claim.optimal);
  CHECK(claim.up_to_ms == 0);
  CHECK(reached.certificate->extra.at("optimal") == "true");
  CHECK(reached.certificate->extra.count("optimal_up_to_ms") == 0);
  CHECK(valid_after(reached));
  // No proof and a bound below: neither claim (an optimal_up_to_ms left from before is dropped).
  Schedule open = with_block(below, "no Z3 run");
  open.certificate->extra["optimal_up_to_ms"] = "0.5";
  claim = restate_optimality(*open.certificate, mk, false);
  CHECK_FALSE(claim.optimal);
  CHECK(claim.up_to_ms == 0);
  CHECK(open.certificate->extra.count("optimal_up_to_ms") == 0);
  CHECK(valid_after(open));
}

TEST_CASE(
    "every config: every baseline passes the checker and never beats the global lower bound") {
  namespace fs = std::filesystem;
  std::vector<std::string> models;
  for (const auto& e :
       fs::directory_iterator(std::string(PIPESMITH_SOURCE_DIR) + "/configs/models"))
    if (e.path().extension() == ".yaml") models.push_back(e.path().string());
  std::sort(models.begin(), models.end());
  REQUIRE(models.size() >= 6);
  int checked = 0;
  for (const std::string& path : models) {
    for (int P : {4, 8}) {
      for (int M : {P, 2 * P, 4 * P}) {
        if (P == 8 && M == 4 * P) continue;  // the bench covers it; keep the ASan run short
        SpecOverrides o;
        o.devices = P;
        o.microbatches = M;
        auto spec = load_spec(path, "", o);
        REQUIRE(spec.ok());
        auto gb = global_lower_bound(*spec, P, M, 0);
        REQUIRE(gb.ok());
        for (BaselineKind kind : all_baseline_kinds()) {
          for (const char* method : {"balanced", "even"}) {
            if (std::string(method) == "even" && M != 2 * P) continue;
            auto shape = baseline_shape(kind, 0);
            REQUIRE(shape.ok());
            auto part = partition_by_name(*spec, shape->stages_per_device * P, method);
            REQUIRE(part.ok());
            auto problem = make_problem(*spec, *part, baseline_placement(*shape, P));
            REQUIRE(problem.ok());
            if (kind == BaselineKind::kDualPipeV && M < 2 * P) continue;
            auto s = make_baseline(*problem, kind);
            INFO(path, " ", baseline_name(kind), " P=", P, " M=", M, " ", method);
            REQUIRE(s.ok());
            VerifyOptions vo;
            vo.memory_limit_gb = 0;  // memory is reported by the bench; here: validity and timing
            Report r = verify(*s, vo);
            INFO(format_report(r));
            REQUIRE(r.valid);
            CHECK(r.sim->makespan_ms >= gb->bound_ms * (1 - 1e-9));
            CHECK(r.sim->makespan_ms >= r.lower_bound_ms * (1 - 1e-9));
            ++checked;
          }
        }
      }
    }
  }
  CHECK(checked >= 6 * 5 * 6);
}

TEST_CASE("relative_gap: the quotient above the certificate's tolerance, 0 within it or without a bound") {
  CHECK(relative_gap(110, 100) == doctest::Approx(0.1));
  CHECK(relative_gap(100, 100) == 0);
  CHECK(relative_gap(100 * (1 + 1e-7), 100) == 0);  // within the relative 1e-6
  CHECK(relative_gap(4e-30, 2e-30) == 0);            // float noise over float noise: within 1e-9 ms
  CHECK(relative_gap(3e-7, 1e-7) == doctest::Approx(2));  // small figures that differ are a gap
  CHECK(relative_gap(5, 0) == 0);
  CHECK(relative_gap(5, -1) == 0);
  CHECK(relative_gap(99, 100) == 0);  // a makespan under the bound (float noise) is no gap
}
