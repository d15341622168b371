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
//                    [--progress] [--rlimit N] [--warm-start on|off] [--zbv | --zb-inputs]
//   --quick: P ∈ {4, 8}, M ∈ {8, 16} plus P=16, M=64 without cap (a few minutes).
//   --zbv: ZB-V's shape instead (2P stages placed as a V, five F/I/W/transfer cost sets, ZB-V's
//   memory limit; P ∈ {4, 8}, M ∈ {P, 2P, 4P}, 10 s per case unless --time-limit): ZB-V's published
//   order, the synthesized schedule and the bound on the same plan.
//   --zb-inputs: Zero Bubble's own profiled inputs instead (21 settings at ZB-1p's and ZB-2p's memory
//   limits, and the 9 with ZB-V as a V; 10 s per case unless --time-limit): ZB-H1, ZB-H2, ZB-V and ZB's
//   published ZB-1p / ZB-2p beside the synthesized schedule (run_zb_inputs below).
//   --case: only that case (repeatable; with --zbv P,M,costs, e.g. 4,8,W-heavy; with --zb-inputs
//   setting,M,1p|2p|v, e.g. iclr-1.5B,24,2p or arxiv-28.3B,96,v);
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

// One synthesize() call as the grids make it, and its wall time in seconds.
struct TimedSynth {
  Result<SynthResult> result;
  double seconds = 0;
};
TimedSynth timed_synth(const Problem& p, double time_limit_s, unsigned seed, uint64_t rlimit, bool progress,
                       bool warm_start = false) {
  SynthOptions o;
  o.time_limit_s = time_limit_s;
  o.seed = seed;
  o.rlimit = rlimit;
  o.z3_warm_start = warm_start;
  if (progress)
    o.progress = [](const SynthProgress& pr) { std::fprintf(stderr, "%s\n", cli::synth_progress_line(pr).c_str()); };
  const auto t0 = std::chrono::steady_clock::now();
  Result<SynthResult> r = synthesize(p, o);
  return {std::move(r), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

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
        const TimedSynth run = timed_synth(p, time_limit_s, seed, rlimit, progress);
        const Result<SynthResult>& r = run.result;
        const double secs = run.seconds;
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

// Zero Bubble's own inputs: the profiled per-stage costs its evaluation schedules with (the Zero
// Bubble repository's megatron/core/pipeline_parallel/efficiency.py: the ICLR 2024 paper's 12
// settings and the arXiv version's 9, with ZB-V), one row each: P, M, F, B (= I), W and the transfer
// in µs, and the model's hidden size h and heads a (sequence 1024). Memory as ZB counts it: an F
// holds 34h + 5as, of which 32h stays from I to W; ZB-1p's limit is P of those per device (1F1B's
// need), ZB-2p's twice that. The arXiv rows' costs are one chunk's (ZB-V places 2P chunks as a V);
// its one-stage-per-device settings use twice them, as the script does.
struct ZbInput {
  int P, M;
  double f, b, w, c;  // µs
  int h, a;
  double zb1p_bubble, zb2p_bubble;  // ZB's published bubble rates (ICLR rows; 0: not published)
  bool chunks;                      // arXiv row: costs are per chunk
};
const ZbInput kZbInputs[] = {
    {8, 24, 18522, 18086, 9337, 601, 2304, 24, 0.1585, 0.0433, false},
    {8, 32, 18513, 18086, 9331, 626, 2304, 24, 0.1242, 0.0039, false},
    {8, 64, 18546, 18097, 9321, 762, 2304, 24, 0.0674, 0.0026, false},
    {8, 24, 29718, 29444, 19927, 527, 4096, 32, 0.1323, 0.0029, false},
    {8, 32, 29802, 29428, 19530, 577, 4096, 32, 0.1045, 0.0022, false},
    {8, 64, 29935, 29621, 19388, 535, 4096, 32, 0.0554, 0.0010, false},
    {16, 48, 11347, 11248, 8132, 377, 5120, 40, 0.1397, 0.0066, false},
    {16, 64, 11307, 11254, 8101, 379, 5120, 40, 0.1088, 0.0054, false},
    {16, 128, 11325, 11308, 8109, 378, 5120, 40, 0.0576, 0.0028, false},
    {32, 96, 10419, 10207, 7715, 408, 6144, 48, 0.1421, 0.0038, false},
    {32, 128, 10408, 10204, 7703, 408, 6144, 48, 0.1106, 0.0029, false},
    {32, 256, 10402, 10248, 7698, 460, 6144, 48, 0.0594, 0.0018, false},
    {16, 48, 14407, 14380, 9676, 1610, 4096, 32, 0, 0, true},
    {16, 64, 14412, 14393, 9688, 1621, 4096, 32, 0, 0, true},
    {16, 128, 14316, 14306, 9639, 1619, 4096, 32, 0, 0, true},
    {24, 72, 6763, 6969, 5251, 755, 5120, 40, 0, 0, true},
    {24, 96, 6783, 6984, 5259, 758, 5120, 40, 0, 0, true},
    {24, 192, 6785, 6990, 5260, 770, 5120, 40, 0, 0, true},
    {32, 96, 9458, 9748, 7288, 879, 6144, 48, 0, 0, true},
    {32, 128, 9469, 9744, 7306, 892, 6144, 48, 0, 0, true},
    {32, 256, 9447, 9644, 7193, 887, 6144, 48, 0, 0, true},
};

// The setting's name: the paper ("iclr", "arxiv") and ZB's model (by its hidden size).
std::string zb_setting(const ZbInput& z) {
  const char* model = z.h == 2304 ? "1.5B" : z.h == 4096 ? "6.2B" : z.h == 5120 ? "14.6B" : "28.3B";
  return fmt::format("{}-{}", z.chunks ? "arxiv" : "iclr", model);
}

// One ZB input as a problem: `layout` "1p" / "2p" (one stage per device, sequential, ZB-1p's or ZB-2p's
// memory limit) or "v" (2P chunks as a V, 1F1B's limit). One full stage's activation is 1000 MB.
Problem zb_input_problem(const ZbInput& z, const std::string& layout) {
  const double mem_f = 34.0 * z.h + 5.0 * z.a * 1024;
  const double stash = 1000 * 32.0 * z.h / mem_f;
  const bool v = layout == "v";
  const double scale = z.chunks && !v ? 2.0 : 1.0;  // full stages from per-chunk costs
  Problem p;
  p.name = fmt::format("zb-P{}-M{}-{}", z.P, z.M, layout);
  p.devices = z.P;
  p.microbatches = z.M;
  p.bytes_per_param = 1;
  p.link.latency_us = z.c;
  p.link.bandwidth_gb_per_s = 100;  // output_mb = 0: transfer_ms = latency only
  const int S = v ? 2 * z.P : z.P;
  for (int s = 0; s < S; ++s) {
    StageSpec st;
    st.device = s < z.P ? s : 2 * z.P - 1 - s;
    st.first_layer = st.last_layer = s;
    st.fwd_ms = scale * z.f / 1000;
    st.bwd_input_ms = scale * z.b / 1000;
    st.bwd_weight_ms = scale * z.w / 1000;
    st.activation_mb = v ? 500 : 1000;  // a chunk holds half a stage
    st.wgrad_stash_mb = v ? stash / 2 : stash;
    st.output_mb = 0;
    p.stages.push_back(st);
  }
  p.memory_gb = (layout == "2p" ? 2.0 : 1.0) * z.P;
  return p;
}

// The longest span of compute on one device (its first compute op's start to its last one's end):
// ZB's own figure for a schedule, which counts a stage from its first F.
double device_span_ms(const Schedule& s) {
  double span = 0;
  for (size_t d = 0; d < s.programs.size() && d < s.predicted.size(); ++d) {
    double first = -1, last = 0;
    for (size_t k = 0; k < s.programs[d].size() && k < s.predicted[d].size(); ++k) {
      if (!is_compute(s.programs[d][k].type)) continue;
      if (first < 0) first = s.predicted[d][k].start_ms;
      first = std::min(first, s.predicted[d][k].start_ms);
      last = std::max(last, s.predicted[d][k].end_ms);
    }
    if (first >= 0) span = std::max(span, last - first);
  }
  return span;
}

// --zb-inputs: every ZB input at ZB-1p's and ZB-2p's limits, and the arXiv rows as ZB-V's V. Per case
// the checker's makespan of ZB-H1, ZB-H2 (one stage per device) or ZB-V's order (the V), ZB's
// published ZB-1p / ZB-2p schedule as a span (its bubble rate b: M·(F+B+W) / (1 − b)), the
// synthesized schedule's makespan and its longest device span, the bound and the gap.
int run_zb_inputs(double time_limit_s, unsigned seed, uint64_t rlimit, bool progress,
                  const std::vector<std::string>& only) {
  auto layouts_of = [](const ZbInput& z) {
    std::vector<std::string> l = {"1p", "2p"};
    if (z.chunks) l.push_back("v");
    return l;
  };
  for (const std::string& name : only) {
    bool known = false;
    for (const ZbInput& z : kZbInputs)
      for (const std::string& layout : layouts_of(z))
        known = known || name == fmt::format("{},{},{}", zb_setting(z), z.M, layout);
    if (!known) {
      std::fprintf(stderr,
                   "bench_synth: no case '%s' (--zb-inputs --case takes SETTING,M,1p|2p|v, e.g. "
                   "iclr-1.5B,24,2p)\n",
                   name.c_str());
      return 1;
    }
  }
  std::printf("Z3 %s\n\n", z3_version().c_str());
  std::printf("| setting | P | M | F/B/W/c ms | layout | ZB-H1 | ZB-H2 | ZB-V | ZB published (span) | synth | "
              "synth span | span / ZB's | bound | gap | time s | slower than |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int total = 0, slower_baseline = 0, slower_published = 0, published = 0, errors = 0;
  for (const ZbInput& z : kZbInputs) {
    for (const std::string& layout : layouts_of(z)) {
      const std::string name = fmt::format("{},{},{}", zb_setting(z), z.M, layout);
      if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
      const Problem p = zb_input_problem(z, layout);
      const TimedSynth run = timed_synth(p, time_limit_s, seed, rlimit, progress);
      const Result<SynthResult>& r = run.result;
      const double secs = run.seconds;
      ++total;
      const StageSpec& st = p.stages.front();
      const std::string costs = fmt::format("{:.3f}/{:.3f}/{:.3f}/{:.3f}", st.fwd_ms, st.bwd_input_ms,
                                            st.bwd_weight_ms, z.c / 1000);
      if (!r.ok()) {
        ++errors;
        std::printf("| %s | %d | %d | %s | %s | error: %s |\n", zb_setting(z).c_str(), z.P, z.M, costs.c_str(),
                    layout.c_str(), r.status().str().c_str());
        continue;
      }
      std::map<std::string, double> b;
      for (const auto& bt : r->baselines) {
        b[bt.name] = bt.makespan_ms;
        if (progress && !bt.note.empty()) std::fprintf(stderr, "%s: %s\n", bt.name.c_str(), bt.note.c_str());
      }
      std::string slower;
      for (const char* n : {"zb-h1", "zb-h2", "zbv"})
        if (b[n] > 0 && r->makespan_ms > b[n] + 1e-9) slower += std::string(slower.empty() ? "" : ", ") + n;
      slower_baseline += slower.empty() ? 0 : 1;
      const double span = device_span_ms(r->schedule);
      const double bubble = layout == "1p" ? z.zb1p_bubble : layout == "2p" ? z.zb2p_bubble : 0;
      double zb_span = 0;
      if (bubble > 0) {
        zb_span = z.M * (st.fwd_ms + st.bwd_input_ms + st.bwd_weight_ms) / (1 - bubble);
        ++published;
        // The published rate has 4 decimals: a span within its rounding counts as equal.
        const double rounding = z.M * (st.fwd_ms + st.bwd_input_ms + st.bwd_weight_ms) * 0.00005 /
                                ((1 - bubble) * (1 - bubble));
        if (span > zb_span + rounding) ++slower_published;
      }
      std::printf("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %.1f | %.1f | %s | %.1f | %.2f%% | %.1f | %s |\n",
                  zb_setting(z).c_str(), z.P, z.M, costs.c_str(), layout.c_str(),
                  layout == "v" ? "-" : ms(b["zb-h1"]).c_str(),
                  layout == "v" ? "-" : ms(b["zb-h2"]).c_str(), layout == "v" ? ms(b["zbv"]).c_str() : "-",
                  zb_span > 0 ? fmt::format("{:.1f}", zb_span).c_str() : "-", r->makespan_ms, span,
                  zb_span > 0 ? fmt::format("{:.3f}", span / zb_span).c_str() : "-", r->bound_ms, 100 * r->gap, secs,
                  slower.empty() ? "none" : slower.c_str());
      std::fflush(stdout);
    }
  }
  std::printf("\n%d cases (%d errors); synth slower than a ZB schedule through the checker (ZB-H1, ZB-H2, "
              "ZB-V): %d; synth's longest device span (ZB's own measure, not what synth minimizes) above ZB's "
              "published ZB-1p/ZB-2p span: %d of %d\n",
              total, errors, slower_baseline, slower_published, published);
  return errors ? 1 : 0;
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
  bool zb_inputs = false;
  std::vector<std::string> only;  // "P,M,costs,cap"
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--zbv")) {
      zbv = true;
    } else if (!std::strcmp(argv[i], "--zb-inputs")) {
      zb_inputs = true;
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
                   "[--progress] [--rlimit N] [--warm-start on|off] [--zbv | --zb-inputs]\n");
      return 1;
    }
  }
  if ((zb_inputs || zbv) && (quick || warm_start || (zb_inputs && zbv))) {
    std::fprintf(stderr, "bench_synth: --zbv and --zb-inputs are grids of their own: not with each other, --quick "
                         "or --warm-start\n");
    return 1;
  }
  if (zb_inputs) return run_zb_inputs(time_override > 0 ? time_override : 10, seed, rlimit, progress, only);
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
    const double time_limit_s = time_override > 0 ? time_override : 0.9 * (small_case ? 10 : 60);
    const TimedSynth run = timed_synth(p, time_limit_s, seed, rlimit, progress, warm_start);
    const Result<SynthResult>& r = run.result;
    const double secs = run.seconds;
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
