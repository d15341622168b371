// bench_synth — the Z3 scheduler against the baselines and the lower bound (docs/synth.md's table).
//
// For P ∈ {4, 8, 16}, M ∈ {8, 16, 32, 64}, uniform and heterogeneous per-stage costs, with and
// without a memory cap, on one fixed partition/placement per case (one stage per device,
// sequential): the checker's makespan of GPipe, 1F1B, ZB-H1 and ZB-H2 ("oom" when over the cap),
// the heuristic's, the synthesized schedule's, the lower bound, the gap, the solve time and whether
// optimality was proven. Every synthesized schedule went through the checker (rendezvous, with its
// SEND/RECV order) before it is counted.
//
// Costs (ms): uniform F=4, I=4, W=3, transfer 1; heterogeneous: stage s scaled by 0.75/1/1.25 in
// turn, the last stage (LM head) by 1.75 with twice the activation. Cap: P microbatches of stage
// 0's activation, 1 GB each (what 1F1B keeps on stage 0), model states 0.
// Time limit per case (everything: baselines, heuristic, both Z3 phases, checker): 10 s when
// P <= 8 and M <= 16, else 60 s; synthesize() is given 90 % of it as its time limit (--time-limit
// overrides that figure).
//
// Usage: bench_synth [--quick] [--case P,M,uniform|hetero,cap|nocap] [--time-limit S] [--seed N]
//                    [--progress] [--rlimit N] [--warm-start on|off] [--zbv]
//   --quick: P ∈ {4, 8}, M ∈ {8, 16} plus P=16, M=64 without cap (a few minutes).
//   --zbv: ZB-V's shape instead (2P stages placed as a V, five F/I/W/transfer cost sets, ZB-V's
//   memory limit; P ∈ {4, 8}, M ∈ {P, 2P, 4P}, 10 s per case unless --time-limit): ZB-V's published
//   order, the synthesized schedule and the bound on the same plan.
//   --case: only that case (repeatable; with --zbv P,M,costs, e.g. 4,8,W-heavy);
//   --progress: the solver's progress lines and rlimit use on
//   stderr; --rlimit: Z3's total budget (machine-independent; the time limit still caps it);
//   --warm-start: Z3's initial values from the incumbent (SynthOptions::z3_warm_start; default off).
// The first line names the Z3 the binary runs (bench/synth --z3-both prints a build on the system's
// Z3 beside it: bench/z3-both).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cli/synth_progress.h"
#include "ir/problem.h"
#include "synth/synthesize.h"
#include "synth/z3/solve.h"

using namespace ps;

namespace {

Problem bench_problem(int P, int M, bool hetero, bool capped) {
  Problem p;
  p.name = fmt::format("bench-{}-P{}-M{}", hetero ? "hetero" : "uniform", P, M);
  p.devices = P;
  p.microbatches = M;
  p.bytes_per_param = 1;
  p.link.latency_us = 1000;  // 1 ms per transfer
  p.link.bandwidth_gb_per_s = 100;  // output_mb = 0 below: transfer_ms = latency only
  for (int s = 0; s < P; ++s) {
    StageSpec st;
    st.device = s;
    st.first_layer = st.last_layer = s;
    double w = 1, act = 1000;  // MB
    if (hetero) {
      static const double kScale[3] = {0.75, 1.0, 1.25};
      w = s == P - 1 ? 1.75 : kScale[(s * 5) % 3];
      if (s == P - 1) act = 2000;
    }
    st.fwd_ms = 4 * w;
    st.bwd_input_ms = 4 * w;
    st.bwd_weight_ms = 3 * w;
    st.activation_mb = act;
    st.wgrad_stash_mb = 0;
    st.output_mb = 0;
    p.stages.push_back(st);
  }
  if (capped) p.memory_gb = P * 1000 / 1000.0;  // P microbatches of stage 0's activation (1F1B's need)
  return p;
}

std::string ms(double v) { return v > 0 ? fmt::format("{:.1f}", v) : "oom"; }

// ZB-V's shape (docs/baselines.md, "zbv"): P devices, 2P stages placed as a V (device d holds stages d
// and 2P-1-d), every stage the same chunk costs F/I/W (ms) and a transfer of c ms, one chunk's
// activation 1000 MB of which `stash` stays from I to W, and ZB-V's memory limit: 2P chunk
// activations (P microbatches of both chunks, what 1F1B keeps on its first device).
struct ZbvCosts {
  const char* name;
  double f, i, w, c, stash;
};
Problem zbv_problem(int P, int M, const ZbvCosts& k) {
  Problem p;
  p.name = fmt::format("zbv-{}-P{}-M{}", k.name, P, M);
  p.devices = P;
  p.microbatches = M;
  p.bytes_per_param = 1;
  p.link.latency_us = 1000 * k.c;
  p.link.bandwidth_gb_per_s = 100;  // output_mb = 0: transfer_ms = latency only
  for (int s = 0; s < 2 * P; ++s) {
    StageSpec st;
    st.device = s < P ? s : 2 * P - 1 - s;
    st.first_layer = st.last_layer = s;
    st.fwd_ms = k.f;
    st.bwd_input_ms = k.i;
    st.bwd_weight_ms = k.w;
    st.activation_mb = 1000;
    st.wgrad_stash_mb = 1000 * k.stash;
    st.output_mb = 0;
    p.stages.push_back(st);
  }
  p.memory_gb = 2.0 * P;
  return p;
}

// --zbv: the ZB-V grid. Per case the checker's makespan of ZB-V's published order (docs/baselines.md)
// and of the synthesized schedule on the same plan, the bound, the gap and the solve.
int run_zbv(double time_limit_s, unsigned seed, uint64_t rlimit, bool progress, const std::vector<std::string>& only) {
  static const ZbvCosts kCosts[] = {{"uniform", 4, 4, 4, 1, 0.5},   {"I-heavy", 4, 5, 3, 1, 0.5},
                                    {"W-heavy", 4, 4, 6, 1, 0.5},   {"slow-link", 4, 4, 4, 2, 0.5},
                                    {"F-light", 3, 5, 4, 1, 0.3}};
  std::printf("Z3 %s\n\n", z3_version().c_str());
  std::printf("| P | M | costs F/I/W/c ms | ZB-V | heuristic | synth | bound | gap | time s | Z3 checks | optimal | "
              "seeded by |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int slower = 0, total = 0, optimal = 0;
  for (int P : {4, 8})
    for (int M : {P, 2 * P, 4 * P})
      for (const ZbvCosts& k : kCosts) {
        if (!only.empty() && std::find(only.begin(), only.end(), fmt::format("{},{},{}", P, M, k.name)) == only.end())
          continue;
        const Problem p = zbv_problem(P, M, k);
        SynthOptions o;
        o.time_limit_s = time_limit_s;
        o.seed = seed;
        o.rlimit = rlimit;
        if (progress)
          o.progress = [](const SynthProgress& pr) {
            std::fprintf(stderr, "%s\n", cli::synth_progress_line(pr).c_str());
          };
        const auto t0 = std::chrono::steady_clock::now();
        Result<SynthResult> r = synthesize(p, o);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++total;
        if (!r.ok()) {
          std::printf("| %d | %d | %s | error: %s |\n", P, M, k.name, r.status().str().c_str());
          continue;
        }
        double zbv = 0;
        for (const auto& bt : r->baselines)
          if (bt.name == "zbv") zbv = bt.makespan_ms;
        slower += zbv > 0 && r->makespan_ms > zbv + 1e-9 ? 1 : 0;
        optimal += r->optimal ? 1 : 0;
        std::printf("| %d | %d | %s %g/%g/%g/%g | %s | %.1f | %.1f | %.1f | %.2f%% | %.1f | %d | %s | %s |\n", P, M,
                    k.name, k.f, k.i, k.w, k.c, ms(zbv).c_str(), r->heuristic_ms, r->makespan_ms, r->bound_ms,
                    100 * r->gap, secs, r->solve.checks, r->optimal ? "yes" : "no", r->seed_source.c_str());
        std::fflush(stdout);
      }
  std::printf("\n%d cases; slower than ZB-V: %d; proven optimal: %d\n", total, slower, optimal);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  double time_override = 0;
  unsigned seed = 0;
  bool progress = false;
  uint64_t rlimit = 0;  // > 0: Z3's budget (deterministic; the time limit still applies)
  bool warm_start = false;
  bool zbv = false;
  std::vector<std::string> only;  // "P,M,costs,cap"
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--zbv")) {
      zbv = true;
    } else if (!std::strcmp(argv[i], "--time-limit") && i + 1 < argc) {
      time_override = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = static_cast<unsigned>(std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--case") && i + 1 < argc) {
      only.emplace_back(argv[++i]);
    } else if (!std::strcmp(argv[i], "--warm-start") && i + 1 < argc &&
               (!std::strcmp(argv[i + 1], "on") || !std::strcmp(argv[i + 1], "off"))) {
      warm_start = !std::strcmp(argv[++i], "on");
    } else if (!std::strcmp(argv[i], "--progress")) {
      progress = true;
    } else if (!std::strcmp(argv[i], "--rlimit") && i + 1 < argc) {
      char* end = nullptr;
      const char* text = argv[++i];
      rlimit = std::strtoull(text, &end, 10);
      if (end == text || *end != '\0' || rlimit == 0) {
        std::fprintf(stderr, "bench_synth: --rlimit takes a positive integer, got '%s'\n", text);
        return 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: bench_synth [--quick] [--case P,M,uniform|hetero,cap|nocap] [--time-limit S] [--seed N] "
                   "[--progress] [--rlimit N] [--warm-start on|off] [--zbv]\n");
      return 1;
    }
  }
  if (zbv) return run_zbv(time_override > 0 ? time_override : 10, seed, rlimit, progress, only);
  struct Case {
    int P, M;
    bool hetero, capped;
  };
  std::vector<Case> cases;
  for (int P : {4, 8, 16})
    for (int M : {8, 16, 32, 64})
      for (bool hetero : {false, true})
        for (bool capped : {false, true}) {
          if (quick && !((P <= 8 && M <= 16) || (P == 16 && M == 64 && !capped))) continue;
          const std::string name =
              fmt::format("{},{},{},{}", P, M, hetero ? "hetero" : "uniform", capped ? "cap" : "nocap");
          if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
          cases.push_back({P, M, hetero, capped});
        }
  if (cases.empty()) {
    std::fprintf(stderr, "bench_synth: no case matches (--case takes e.g. 8,16,uniform,cap)\n");
    return 1;
  }

  // "warm starts": --warm-start on, with a Z3 that has initial values.
  std::printf("Z3 %s%s\n\n", z3_version().c_str(), warm_start_available() && warm_start ? " warm starts" : "");
  std::printf("| P | M | costs | cap | GPipe | 1F1B | ZB-H1 | ZB-H2 | heuristic | synth | bound | gap | time s | "
              "Z3 checks | optimal | target |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int met = 0, total = 0, proven_small = 0, small = 0;
  double worst_gap_free = 0;
  for (const Case& c : cases) {
    const Problem p = bench_problem(c.P, c.M, c.hetero, c.capped);
    const bool small_case = c.P <= 8 && c.M <= 16;
    SynthOptions o;
    o.time_limit_s = time_override > 0 ? time_override : 0.9 * (small_case ? 10 : 60);
    o.seed = seed;
    o.rlimit = rlimit;
    o.z3_warm_start = warm_start;
    if (progress)
      o.progress = [](const SynthProgress& p) { std::fprintf(stderr, "%s\n", cli::synth_progress_line(p).c_str()); };
    const auto t0 = std::chrono::steady_clock::now();
    Result<SynthResult> r = synthesize(p, o);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) {
      std::printf("| %d | %d | %s | %s | error: %s |\n", c.P, c.M, c.hetero ? "hetero" : "uniform",
                  c.capped ? "yes" : "no", r.status().str().c_str());
      ++total;
      continue;
    }
    std::map<std::string, double> b;
    for (const auto& bt : r->baselines) b[bt.name] = bt.makespan_ms;
    double best_baseline = 0;
    for (const char* n : {"gpipe", "1f1b", "zb-h1", "zb-h2"})
      if (b[n] > 0 && (best_baseline == 0 || b[n] < best_baseline)) best_baseline = b[n];
    // Targets: proven optimal within 10 s for P <= 8, M <= 16; otherwise within 60 s and, without
    // a cap, within 2 % of the bound; never worse than the best baseline.
    const double limit_s = small_case ? 10 : 60;
    bool ok = secs <= limit_s + 1 && (best_baseline == 0 || r->makespan_ms <= best_baseline + 1e-9);
    if (small_case) ok = ok && r->optimal;
    if (!small_case && !c.capped) ok = ok && r->gap <= 0.02;
    if (!c.capped) worst_gap_free = std::max(worst_gap_free, r->gap);
    if (small_case) {
      ++small;
      proven_small += r->optimal ? 1 : 0;
    }
    met += ok ? 1 : 0;
    ++total;
    std::printf("| %d | %d | %s | %s | %s | %s | %s | %s | %.1f | %.1f | %.1f | %.2f%% | %.1f | %d | %s | %s |\n", c.P,
                c.M, c.hetero ? "hetero" : "uniform", c.capped ? "yes" : "no", ms(b["gpipe"]).c_str(),
                ms(b["1f1b"]).c_str(), ms(b["zb-h1"]).c_str(), ms(b["zb-h2"]).c_str(), r->heuristic_ms, r->makespan_ms,
                r->bound_ms, 100 * r->gap, secs, r->solve.checks, r->optimal ? "yes" : "no", ok ? "met" : "MISSED");
    if (progress) std::fprintf(stderr, "Z3 rlimit used: %llu\n", static_cast<unsigned long long>(r->solve.rlimit_used));
    std::fflush(stdout);
  }
  std::printf("\n%d of %d cases meet their target; proven optimal: %d of %d with P <= 8, M <= 16; worst gap "
              "without a cap: %.2f%%\n",
              met, total, proven_small, small, 100 * worst_gap_free);
  return 0;
}
