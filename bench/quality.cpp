// bench/quality.cpp — the table the README leads with: pipesmith's co-optimized schedule against
// the schedules people run (Megatron 1F1B and interleaved 1F1B on Megatron's even partition, ZB-H1
// and ZB-V on the same even partition), per model, device count P and microbatch count M, with
// each device's real memory (the cluster's memory_gb) — and what Z3 did in each case.
//
// pipesmith's column is what `pipesmith synth MODEL --cluster CLUSTER` runs: synthesize_model()
// (synth/synthesize_model.h) with nothing fixed — the plan search, then Z3 on the chosen plan (the
// call splits the time limit), the faster-order fallback and a sealed certificate.
//
// Every figure is the checker's: each schedule (baseline or pipesmith's) is verify()'d under
// rendezvous semantics (comms inserted by the shared rule where a schedule has none) and the memory
// limit, and its simulated iteration time is reported. A baseline that does not fit the memory
// prints "OOM"; a case no plan fits prints "infeasible" for pipesmith.
//
// The first table: iteration time (ms) of each; speed-up of pipesmith over interleaved 1F1B and over
// the best baseline; bubble ratio of pipesmith's simulation; its gap to the global lower bound
// (synth/bounds/global_bound.h: over all partitions, placements and orders); the wall time of the
// synthesize_model() call; whether the order is proven optimal for its plan; the chosen plan.
// The second table reads the certificate's solver block per case (bench/quality_solver.h): the
// checker's peak memory (max over devices), synthesize()'s best order before Z3, the search's own
// order, the gap of the shorter of the two to the bound before Z3, the certified gap after, Z3's
// checks, how much Z3 shortened the order and raised the bound, and the methods and solver status
// as written. The third, per shape class (P, M/P), the geometric mean and max of pipesmith's
// iteration over the global bound (and how many cases lie above 1.15 of it), over the global bound
// without its backward ramp, ramps with whole layers and forwards' release times (the same run), and
// over its plan's bound (where the gap sits), with a last row over every case. A summary follows.
//
//   bench/quality [--quick] [--solver-grid] [--models a,b] [--devices 4,8] [--m-factors 1,2,4,8]
//                 [--p16] [--time-limit S] [--threads N] [--seed N] [--memory-variants]
//                 [--memory-fraction F] [--svg-dir DIR] [--cuts-layers] [--free-links] [--no-memory-cap]
//                 [--settle-orders S]
//
// --time-limit is the whole budget of one synthesize_model() call (default 60 s; --quick: 10 s);
// --threads its search threads (default 2); Z3 runs with `pipesmith synth`'s 2 contexts.
// --memory-variants adds, after each case, the same case with the cluster memory set to F (default
// 0.6, --memory-fraction) of the peak memory of pipesmith's plan in the case before it, rounded to
// 0.1 GB; the baselines run under that limit too. --quick: P = 8, M ∈ {8, 32}, 10 s, memory variants.
// --solver-grid: P = 8, M ∈ {8, 16}, every model, 60 s, memory variants (the solver's measurement).
// --cuts-layers adds a column: the same call with stages cut only between whole model layers
// (`pipesmith synth --cuts layers`, ir/whole_layers.h), so the price of plans a module splitter can
// build is measured per case (twice the time).
// --free-links replaces the cluster's links by free ones (latency 0, bandwidth kFreeBandwidthGBps, one
// node): every transfer then takes under 1e-24 ms, which the solver's integer times round to zero, so
// communication costs nothing, as the global bound assumes. --no-memory-cap runs the cases with
// unlimited device memory (memory_gb 0). The two together are the regime of the published comparisons (no
// memory cap, no communication); the header's second line names the links and memory in force.
// --settle-orders S: after each case whose order is not proven optimal, synthesize() again on the plan
// the case chose (the same Problem, seeded with the search's order, as synthesize_model() seeds it),
// with S seconds and Z3's rlimit for S seconds: Z3 gets the whole encoding where it loads, so with a
// long S this asks Z3 whether that plan's order is optimal. A table per case prints the outcome
// (proven optimal, or the gap left to the plan's bound), Z3's time and the solver's status.
//
// With --svg-dir, one SVG per model (at the largest P, M = 2P, the cluster's memory): pipesmith's
// schedule above interleaved 1F1B's, composed into one file on the same time axis (the shorter
// schedule's chart is drawn at the longer one's scale, so equal lengths mean equal times).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/synth_progress.h"
#include "bench/bench_util.h"
#include "bench/quality_solver.h"
#include "ir/model.h"
#include "ir/output_file.h"
#include "ir/partition.h"
#include "ir/problem.h"
#include "report/report.h"
#include "synth/baselines/baselines.h"
#include "synth/bounds/global_bound.h"
#include "synth/bounds/packing_bound.h"
#include "synth/plan/partition.h"
#include "synth/plan/placement.h"
#include "synth/synthesize_model.h"
#include "verify/verify.h"

namespace fs = std::filesystem;
using namespace ps;
using ps::bench::SolverCase;

namespace {

struct Args {
  bool quick = false;
  bool solver_grid = false;
  std::vector<std::string> models;  // names (configs/models/<name>.yaml) or paths
  std::vector<int> devices = {4, 8};
  std::vector<int> m_factors = {1, 2, 4, 8};
  bool p16 = false;
  double time_limit_s = 60;
  int threads = 2;
  uint64_t seed = 0;
  bool memory_variants = false;
  double memory_fraction = 0.6;  // of pipesmith's peak memory in the case before the variant
  std::string svg_dir;
  bool cuts_layers = false;
  bool free_links = false;     // latency 0, bandwidth kFreeBandwidthGBps, one node
  bool no_memory_cap = false;  // memory_gb 0 (unlimited)
  double settle_s = 0;         // > 0: Z3 again on each chosen plan whose order is not proven optimal
};

// A link so fast that a transfer (at most a few GB) takes under 1e-24 ms: below any unit the op DAG's
// time scale can pick (synth/dag/op_dag.cpp, at least 10^-9 ms), so it rounds to zero there, and the
// checker's simulation differs from free transfers by less than that. The cluster files accept any
// finite bandwidth > 0 (docs/inputs.md), so the same link can be written in a file for
// `pipesmith synth --cluster`.
constexpr double kFreeBandwidthGBps = 1e30;

constexpr char kUsage[] =
    "usage: bench/quality [--quick] [--solver-grid] [--models a,b] [--devices 4,8] [--m-factors 1,2,4,8] [--p16] "
    "[--time-limit S] [--threads N] [--seed N] [--memory-variants] [--memory-fraction F] [--svg-dir DIR] "
    "[--cuts-layers] [--free-links] [--no-memory-cap] [--settle-orders S]\n";

int usage(const std::string& msg) {
  std::fprintf(stderr, "bench/quality: %s\n%s", msg.c_str(), kUsage);
  return 1;
}

using ps::bench::split_list;

std::optional<std::vector<int>> split_ints(const std::string& s) {
  std::vector<int> out;
  for (const std::string& x : split_list(s)) {
    char* end = nullptr;
    long v = std::strtol(x.c_str(), &end, 10);
    if (*end != '\0' || v <= 0 || v > 1024) return std::nullopt;
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// Parses the flags into `a`; an error message, or "" (also for --help, with `help` set).
std::string parse_args(int argc, char** argv, Args& a, bool& help) {
  bool devices_given = false, factors_given = false, limit_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    if (k == "--quick") a.quick = true;
    else if (k == "--solver-grid") a.solver_grid = true;
    else if (k == "--cuts-layers") a.cuts_layers = true;
    else if (k == "--p16") a.p16 = true;
    else if (k == "--memory-variants") a.memory_variants = true;
    else if (k == "--free-links") a.free_links = true;
    else if (k == "--no-memory-cap") a.no_memory_cap = true;
    else if (k == "--models" || k == "--svg-dir") {
      auto v = value();
      if (!v) return k + " needs a value";
      if (k == "--models") a.models = split_list(*v);
      else a.svg_dir = *v;
    } else if (k == "--devices" || k == "--m-factors") {
      auto v = value();
      auto ints = v ? split_ints(*v) : std::nullopt;
      if (!ints) return k + " needs a comma-separated list of positive integers";
      (k == "--devices" ? a.devices : a.m_factors) = *ints;
      (k == "--devices" ? devices_given : factors_given) = true;
    } else if (k == "--time-limit" || k == "--threads" || k == "--seed" || k == "--memory-fraction" ||
               k == "--settle-orders") {
      auto v = value();
      if (!v) return k + " needs a value";
      char* end = nullptr;
      const double x = std::strtod(v->c_str(), &end);
      if (*end != '\0' || !(x >= 0) || !std::isfinite(x)) return fmt::format("{}: expected a number >= 0, got '{}'", k, *v);
      if (k == "--time-limit" || k == "--settle-orders") {
        if (!(x > 0)) return fmt::format("{}: expected a number of seconds > 0, got '{}'", k, *v);
        if (k == "--settle-orders") {
          a.settle_s = x;
        } else {
          a.time_limit_s = x;
          limit_given = true;
        }
      } else if (k == "--threads") a.threads = std::max(1, static_cast<int>(x));
      else if (k == "--seed") a.seed = static_cast<uint64_t>(x);
      else {
        if (!(x > 0 && x < 1)) return "--memory-fraction: expected a fraction in (0, 1), got '" + *v + "'";
        a.memory_fraction = x;
        a.memory_variants = true;
      }
    } else if (k == "--help" || k == "-h") {
      help = true;
      return "";
    } else {
      return fmt::format("unknown argument '{}'", k);
    }
  }
  if (a.quick && a.solver_grid) return "--quick and --solver-grid are two presets: give one";
  if (a.quick || a.solver_grid) {
    if (!devices_given) a.devices = {8};
    if (!factors_given) a.m_factors = a.quick ? std::vector<int>{1, 4} : std::vector<int>{1, 2};
    if (!limit_given && a.quick) a.time_limit_s = 10;
    a.memory_variants = true;
  }
  if (a.no_memory_cap && a.memory_variants)
    return "--no-memory-cap runs without a memory limit; the memory variants (--memory-variants, --memory-fraction, "
           "--quick, --solver-grid) set one: give one or the other";
  if (a.p16 && std::find(a.devices.begin(), a.devices.end(), 16) == a.devices.end()) a.devices.push_back(16);
  return "";
}

// The model files: the --models names or paths, or every configs/models/*.yaml.
std::vector<std::string> model_paths(const Args& a) {
  std::vector<std::string> paths;
  if (a.models.empty()) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("configs/models", ec))
      if (e.path().extension() == ".yaml") paths.push_back(e.path().string());
    std::sort(paths.begin(), paths.end());
  } else {
    for (const std::string& m : a.models)
      paths.push_back(m.find('/') != std::string::npos || m.ends_with(".yaml") ? m : "configs/models/" + m + ".yaml");
  }
  return paths;
}

// Figures of one verified schedule.
struct Figure {
  bool ok = false;
  std::string note;  // "OOM", "n/a" (shape not supported), "infeasible", "ERROR"
  double ms = 0;
  double uncapped_ms = 0;  // OOM: the simulated time if memory were unlimited
  double bubble = 0;
  double peak_gb = 0;      // max over devices of the simulated peak (model states + activations)
  std::optional<Report> report;  // kept for the SVG
};

Figure check(const Schedule& s, bool keep_report) {
  Figure f;
  VerifyOptions vo;
  vo.semantics = Semantics::kRendezvous;
  Report r = verify(s, vo);
  if (!r.valid || !r.sim) {
    bool memory = !r.violations.empty();
    for (const Violation& v : r.violations) memory = memory && v.rule.rfind("memory", 0) == 0;
    f.note = memory ? "OOM" : "INVALID";
    if (!memory && !r.violations.empty()) std::fprintf(stderr, "  checker: %s\n", r.violations.front().message.c_str());
    if (memory) {
      vo.memory_limit_gb = 0;
      Report u = verify(s, vo);
      if (u.valid && u.sim) {
        f.uncapped_ms = u.sim->makespan_ms;
        if (keep_report) f.report = std::move(u);
      }
    }
    return f;
  }
  f.ok = true;
  f.ms = r.sim->makespan_ms;
  f.bubble = r.sim->bubble_ratio;
  for (double mb : r.sim->peak_memory_mb) f.peak_gb = std::max(f.peak_gb, mb / 1000);
  if (keep_report) f.report = std::move(r);
  return f;
}

Figure run_baseline(const Spec& spec, BaselineKind kind, bool keep_report) {
  Figure f;
  f.note = "n/a";
  Result<BaselineShape> shape = baseline_shape(kind, 0);
  if (!shape.ok()) return f;
  const int P = spec.cluster.devices;
  Result<Partition> part = even_partition(spec, shape->stages_per_device * P);
  if (!part.ok()) return f;
  Result<Problem> pb = make_problem(spec, *part, baseline_placement(*shape, P));
  if (!pb.ok() || !check_baseline_shape(*pb, kind).is_ok()) return f;
  Result<Schedule> s = make_baseline(*pb, kind);
  if (!s.ok()) return f;
  return check(*s, keep_report);
}

std::string cell(const Figure& f) {
  if (f.ok) return fmt::format("{:.1f}", f.ms);
  if (f.uncapped_ms > 0) return fmt::format("{} ({:.1f})", f.note, f.uncapped_ms);
  return f.note;
}

// Two SVGs stacked in one file, the faster one drawn on the slower one's time scale.
std::string compose_svg(const Report& top, const std::string& top_title, const Report& bottom,
                        const std::string& bottom_title) {
  const double T = std::max(top.sim->makespan_ms, bottom.sim->makespan_ms);
  auto render = [&](const Report& r, const std::string& title, const std::string& id) {
    Report scaled = r;
    const double real = r.sim->makespan_ms;
    const double bubble = r.sim->bubble_ratio;
    scaled.sim->makespan_ms = T;  // the x scale of format_svg is 0..makespan
    std::string svg = format_svg(scaled, title);
    // The subtitle states the figures: put the real ones back.
    auto swap_text = [&](const std::string& from, const std::string& to) {
      const size_t at = svg.find(from);
      if (at != std::string::npos) svg.replace(at, from.size(), to);
    };
    swap_text(fmt::format("makespan {:.3f} ms", T), fmt::format("makespan {:.3f} ms", real));
    swap_text(fmt::format("bubble {:.1f}%", 100 * scaled.sim->bubble_ratio), fmt::format("bubble {:.1f}%", 100 * bubble));
    // Unique pattern ids per panel.
    size_t at = 0;
    while ((at = svg.find("id=\"idle\"", at)) != std::string::npos) svg.replace(at, 9, "id=\"" + id + "\""), at += 4;
    at = 0;
    while ((at = svg.find("url(#idle)", at)) != std::string::npos) svg.replace(at, 10, "url(#" + id + ")"), at += 4;
    return svg;
  };
  auto dims = [](const std::string& svg) {
    double w = 0, h = 0;
    std::sscanf(svg.c_str(), "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%lf\" height=\"%lf\"", &w, &h);
    return std::make_pair(w, h);
  };
  std::string a = render(top, top_title, "idleA");
  std::string b = render(bottom, bottom_title, "idleB");
  auto [wa, ha] = dims(a);
  auto [wb, hb] = dims(b);
  const double W = std::max(wa, wb), H = ha + hb;
  // Nest: give the inner <svg> elements a y offset.
  auto place = [](std::string svg, double y) {
    const std::string open = "<svg xmlns=\"http://www.w3.org/2000/svg\"";
    const size_t at = svg.find(open);
    if (at != std::string::npos) svg.replace(at, open.size(), fmt::format("<svg x=\"0\" y=\"{:.0f}\"", y));
    return svg;
  };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\">\n", W,
      H);
  out += place(a, 0);
  out += place(b, ha);
  out += "</svg>\n";
  return out;
}

struct Row {
  std::string model;
  bool heterogeneous = true;
  int P = 0, M = 0;
  double memory_gb = 0;        // the cluster's memory per device in this case
  double variant_of_gb = 0;    // > 0: the memory-bound variant, of a plan that peaked at this
  Figure f1f1b, inter, zbh1, zbv, ours;
  Figure whole;                // --cuts-layers: the same call on whole-layer partitions
  std::optional<SolverCase> solver;  // the certificate's solver block, when pipesmith returned a schedule
  double speedup = 0;          // interleaved / ours (0: interleaved not feasible)
  double speedup_uncapped = 0; // interleaved without the memory limit / ours, when it does not fit
  double min_bubble = 0;       // the bubble the lower bound forces: 1 − (work / P) / bound
  double best_baseline_ms = 0;
  double gap = 0;              // to the global lower bound
  double global_bound_ms = 0;  // the global lower bound (0: no search ran)
  double global_before_ms = 0; // the same without the backward ramp, the ramps with whole layers and
                               // the forwards' release times (compared in the shape table)
  double time_s = 0;           // the synthesize_model() call
  std::string optimal = "-";
  std::string plan;
  int evaluated = 0;
  double ms_per_eval = 0;
  // --settle-orders: synthesize() again on the chosen plan with the long budget.
  bool settled = false;          // it ran (the order was not proven optimal by the case itself)
  std::optional<SynthResult> settle;
  std::string settle_error;      // it failed (never expected: the plan fits, it was just scheduled)
  double settle_wall_s = 0;
};

// A model is homogeneous when its decoder layers all have one type (embedding/head aside).
bool is_heterogeneous(const Spec& spec) {
  std::map<char, int> counts;
  for (const Layer& l : spec.model.layers) ++counts[l.type];
  int body_types = 0;
  for (const auto& [sym, n] : counts)
    if (n > 1) ++body_types;
  return body_types > 1;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// `pipesmith synth MODEL --cluster CLUSTER [--cuts layers]` with the bench's budget and seed.
ModelSynthOptions synth_options(const Args& a, bool whole_layers) {
  ModelSynthOptions o;
  o.whole_layers = whole_layers;
  o.time_limit_s = a.time_limit_s;
  o.seed = static_cast<unsigned>(a.seed);
  o.search_threads = a.threads;
  o.start = std::chrono::steady_clock::now();
  o.solver_progress = [](const SynthProgress& p) {
    std::fprintf(stderr, "  solver: %s\n", cli::synth_progress_line(p).c_str());
  };
  o.search_progress = [](const TuneProgress& p) {
    std::fprintf(stderr, "  %-6s %5d evaluated  best %.1f ms  bound %.1f ms  gap %.1f%%  %.1f s\n", p.phase.c_str(),
                 p.evaluated, p.best_ms, p.lower_bound_ms, 100 * p.gap, p.elapsed_s);
  };
  return o;
}

// pipesmith's column and its solver block.
void run_pipesmith(const Spec& spec, const Args& a, bool want_svg, Row& row) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<ModelSynthesis> m = synthesize_model(spec, synth_options(a, false));
  row.time_s = seconds_since(t0);
  if (!m.ok()) {
    row.ours.note = m.status().code() == ErrorCode::kInfeasible ? "infeasible" : "ERROR";
    std::fprintf(stderr, "  pipesmith: %s\n", m.status().str().c_str());
    return;
  }
  const Schedule& s = m->result.schedule;
  row.ours = check(s, want_svg);
  row.plan = m->plan_desc;
  row.optimal = m->result.optimal                 ? "yes"
                : m->result.optimal_up_to_ms > 0 ? "yes, up to rounding"
                                                  : "no";
  if (s.certificate) {
    row.solver = ps::bench::solver_case(s.certificate->extra, row.ours.ok ? row.ours.ms : m->result.makespan_ms,
                                        s.num_ops(), m->tuned ? m->tuned->simulated_ms : ps::bench::kNoValue);
  }
  if (a.settle_s > 0 && !m->result.optimal && m->result.optimal_up_to_ms == 0) {
    row.settled = true;
    SynthOptions so;
    so.time_limit_s = a.settle_s;
    so.seed = static_cast<unsigned>(a.seed);
    so.contexts = 2;  // pipesmith synth's portfolio
    if (m->tuned) so.seed_schedule = m->tuned->schedule;
    so.progress = [](const SynthProgress& p) {
      std::fprintf(stderr, "  settle: %s\n", cli::synth_progress_line(p).c_str());
    };
    const auto ts = std::chrono::steady_clock::now();
    Result<SynthResult> r = synthesize(m->problem, so, &spec);
    row.settle_wall_s = seconds_since(ts);
    if (r.ok()) row.settle = std::move(*r);
    else row.settle_error = r.status().str();
  }
  if (!m->tuned) return;
  const TuneResult& t = *m->tuned;
  row.evaluated = t.stats.evaluated;
  row.ms_per_eval = t.stats.ms_per_eval;
  row.global_bound_ms = t.lower_bound_ms;
  if (Result<GlobalBound> g = global_lower_bound(spec, row.P, row.M, 0); g.ok()) {
    row.global_before_ms = std::max({g->total_work_ms, g->ramp_ms, g->heaviest_layer_ms, g->critical_path_ms,
                                     layer_packing_bound_ms(spec.model, row.P, row.M)});
  }
  if (row.ours.ok) row.gap = row.ours.ms / t.lower_bound_ms - 1;
  double work_ms = 0;
  for (int l = 0; l < static_cast<int>(spec.model.layers.size()); ++l) work_ms += layer_time_ms(spec.model, LayerId{l});
  row.min_bubble = std::max(0.0, 1 - work_ms * row.M / row.P / t.lower_bound_ms);
}

// The same call with stages cut only between whole model layers.
Figure run_whole_layers(const Spec& spec, const Args& a) {
  Figure f;
  Result<ModelSynthesis> m = synthesize_model(spec, synth_options(a, true));
  if (!m.ok()) {
    f.note = m.status().code() == ErrorCode::kInfeasible ? "infeasible" : "ERROR";
    return f;
  }
  return check(m->result.schedule, false);
}

void write_svg(const Args& a, const Spec& spec, const Row& row) {
  const std::string file = fmt::format("{}/{}.svg", a.svg_dir, row.model);
  const std::string inter_title =
      row.inter.ok ? fmt::format("Megatron interleaved 1F1B (even partition, V=2): {:.1f} ms — same time axis", row.inter.ms)
                   : fmt::format("Megatron interleaved 1F1B (even partition, V=2): {:.1f} ms if memory were "
                                 "unlimited — it does not fit {:g} GB — same time axis",
                                 row.inter.uncapped_ms, spec.cluster.memory_gb);
  const std::string svg = compose_svg(
      *row.ours.report, fmt::format("pipesmith on {} (P={}, M={}): {:.1f} ms", row.model, row.P, row.M, row.ours.ms),
      *row.inter.report, inter_title);
  if (Status st = write_output_file(file, svg); !st.is_ok()) std::fprintf(stderr, "%s\n", st.str().c_str());
  else std::fprintf(stderr, "  wrote %s\n", file.c_str());
}

// One case: the baselines and pipesmith on one model, P, M and memory (absent: the cluster's).
Result<Row> run_case(const Args& a, const std::string& path, int P, int M, std::optional<double> memory_gb,
                     bool want_svg) {
  SpecOverrides ov;
  ov.devices = P;
  ov.microbatches = M;
  ov.memory_gb = a.no_memory_cap ? std::optional<double>(0.0) : memory_gb;
  const std::string cluster = P <= 8 ? "configs/clusters/8xh100-80gb.yaml" : "configs/clusters/2x8-h100.yaml";
  Result<Spec> spec = load_spec(path, cluster, ov);
  if (!spec.ok()) return spec.status();
  if (a.free_links) {
    spec->cluster.link = LinkModel{kFreeBandwidthGBps, 0};
    spec->cluster.inter_node_link = spec->cluster.link;
    spec->cluster.devices_per_node = 0;
    if (Status st = validate(*spec); !st.is_ok()) return st;
  }
  Row row;
  row.model = spec->model.name;
  row.heterogeneous = is_heterogeneous(*spec);
  row.P = P;
  row.M = M;
  row.memory_gb = spec->cluster.memory_gb;
  std::fprintf(stderr, "[%s P=%d M=%d %g GB] baselines...\n", row.model.c_str(), P, M, row.memory_gb);
  row.f1f1b = run_baseline(*spec, BaselineKind::k1F1B, false);
  row.inter = run_baseline(*spec, BaselineKind::kInterleaved1F1B, want_svg);
  row.zbh1 = run_baseline(*spec, BaselineKind::kZBH1, false);
  row.zbv = run_baseline(*spec, BaselineKind::kZBV, false);
  run_pipesmith(*spec, a, want_svg, row);
  if (a.cuts_layers) row.whole = run_whole_layers(*spec, a);
  for (const Figure* b : {&row.f1f1b, &row.inter, &row.zbh1, &row.zbv})
    if (b->ok && (row.best_baseline_ms == 0 || b->ms < row.best_baseline_ms)) row.best_baseline_ms = b->ms;
  if (row.inter.ok && row.ours.ok) row.speedup = row.inter.ms / row.ours.ms;
  if (!row.inter.ok && row.inter.uncapped_ms > 0 && row.ours.ok) row.speedup_uncapped = row.inter.uncapped_ms / row.ours.ms;
  if (want_svg && row.ours.report && row.inter.report) write_svg(a, *spec, row);
  row.ours.report.reset();
  row.inter.report.reset();
  std::fprintf(stderr, "  -> pipesmith %s ms (%s), interleaved %s ms, speed-up %.2fx, %.1f s\n", cell(row.ours).c_str(),
               row.plan.c_str(), cell(row.inter).c_str(), row.speedup, row.time_s);
  return row;
}

std::string memory_cell(const Row& r) {
  if (r.memory_gb == 0) return "unlimited";
  return r.variant_of_gb > 0 ? fmt::format("{:g} ({:.0f}%)", r.memory_gb, 100 * r.memory_gb / r.variant_of_gb)
                             : fmt::format("{:g}", r.memory_gb);
}

void print_main_table(const Args& a, const std::vector<Row>& rows) {
  std::printf("| model | P | M | memory GB | 1F1B | interleaved 1F1B | ZB-H1 | ZB-V | pipesmith |%s speed-up vs "
              "interleaved | vs best baseline | bubble | gap to bound | time s | Z3 optimal | plan |\n",
              a.cuts_layers ? " --cuts layers |" : "");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|%s---:|---:|---:|---:|---:|:---:|---|\n",
              a.cuts_layers ? "---:|" : "");
  for (const Row& r : rows) {
    const std::string whole = !a.cuts_layers ? ""
                              : r.whole.ok && r.ours.ok
                                  ? fmt::format(" {} ({:+.1f}%) |", cell(r.whole), 100 * (r.whole.ms / r.ours.ms - 1))
                                  : fmt::format(" {} |", cell(r.whole));
    const std::string speedup = r.speedup > 0            ? fmt::format("{:.2f}x", r.speedup)
                                : r.speedup_uncapped > 0 ? fmt::format("({:.2f}x)", r.speedup_uncapped)
                                                         : "-";
    std::printf("| %s | %d | %d | %s | %s | %s | %s | %s | %s |%s %s | %s | %s | %s | %.1f | %s | %s |\n",
                r.model.c_str(), r.P, r.M, memory_cell(r).c_str(), cell(r.f1f1b).c_str(), cell(r.inter).c_str(),
                cell(r.zbh1).c_str(), cell(r.zbv).c_str(), cell(r.ours).c_str(), whole.c_str(), speedup.c_str(),
                r.ours.ok && r.best_baseline_ms > 0 ? fmt::format("{:.2f}x", r.best_baseline_ms / r.ours.ms).c_str() : "-",
                r.ours.ok ? fmt::format("{:.1f}%", 100 * r.ours.bubble).c_str() : "-",
                r.ours.ok ? fmt::format("{:.1f}%", 100 * r.gap).c_str() : "-", r.time_s, r.optimal.c_str(),
                r.plan.c_str());
  }
}

std::string num_cell(double v, const char* format_spec) {
  return std::isnan(v) ? "-" : fmt::format(fmt::runtime(format_spec), v);
}

// A label as written; "-" when absent, a pipe escaped for the Markdown table.
std::string label_cell(std::string s) {
  if (s.empty()) return "-";
  for (size_t at = 0; (at = s.find('|', at)) != std::string::npos; at += 2) s.replace(at, 1, "\\|");
  return s;
}

void print_solver_table(const std::vector<Row>& rows) {
  std::printf("| model | P | M | memory GB | peak GB | before Z3 ms | search order ms | gap before Z3 | certified gap | "
              "z3 checks | Z3 improved ms | bound raise ms | schedule method | bound method | solver status |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %d | %d | %s | ", r.model.c_str(), r.P, r.M, memory_cell(r).c_str());
    if (!r.solver) {
      std::printf("%s | - | - | - | - | - | - | - | - | - | - |\n", r.ours.note.c_str());
      continue;
    }
    const SolverCase& c = *r.solver;
    std::printf("%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                r.ours.ok ? fmt::format("{:.1f}", r.ours.peak_gb).c_str() : r.ours.note.c_str(),
                num_cell(c.before_z3_ms, "{:.1f}").c_str(), num_cell(c.tuner_ms, "{:.1f}").c_str(),
                num_cell(100 * c.gap_before(), "{:.2f}%").c_str(),
                num_cell(100 * c.gap, "{:.2f}%").c_str(), num_cell(c.z3_checks, "{:g}").c_str(),
                num_cell(c.z3_improved_ms, "{:.1f}").c_str(), num_cell(c.bound_raise_ms(), "{:.1f}").c_str(),
                label_cell(c.schedule_method).c_str(), label_cell(c.bound_method).c_str(),
                label_cell(c.solver_status).c_str());
  }
}

// The summary against the targets, over the cases at the cluster's own memory.
void print_summary(const Args& a, const std::vector<const Row*>& rows) {
  double log_sum = 0, arith = 0, arith_all = 0, min_vs_best = 1e9, max_time = 0, max_bubble_4p = 0;
  int n_het = 0, n_all = 0, slower = 0, cases = 0, n4 = 0, under5 = 0, forced = 0;
  for (const Row* r : rows) {
    if (!r->ours.ok) continue;
    ++cases;
    if (r->heterogeneous && r->speedup > 0) log_sum += std::log(r->speedup), arith += r->speedup, ++n_het;
    const double s = r->speedup > 0 ? r->speedup : r->speedup_uncapped;
    if (r->heterogeneous && s > 0) arith_all += s, ++n_all;
    if (r->best_baseline_ms > 0) {
      min_vs_best = std::min(min_vs_best, r->best_baseline_ms / r->ours.ms);
      if (r->ours.ms > r->best_baseline_ms * (1 + 1e-9)) ++slower;
    }
    max_time = std::max(max_time, r->time_s);
    if (r->M < 4 * r->P) continue;
    ++n4;
    max_bubble_4p = std::max(max_bubble_4p, r->ours.bubble);
    if (r->ours.bubble < 0.05) ++under5;
    else if (r->min_bubble >= 0.05 - 1e-9 || r->ours.bubble - r->min_bubble < 0.01) ++forced;
  }
  std::printf("- heterogeneous models, cases where interleaved 1F1B fits: %d; mean speed-up over it: %.2fx (geometric "
              "%.2fx); target >= 1.4x\n",
              n_het, n_het ? arith / n_het : 0.0, n_het ? std::exp(log_sum / n_het) : 0.0);
  std::printf("- heterogeneous models, all %d cases (against interleaved 1F1B without memory limit where it does not fit): "
              "mean %.2fx\n",
              n_all, n_all ? arith_all / n_all : 0.0);
  std::printf("- slower than the best feasible baseline: %d of %d cases (worst ratio best-baseline/pipesmith %.3f); "
              "target 0\n",
              slower, cases, cases ? min_vs_best : 0.0);
  std::printf("- bubble < 5%% at M >= 4P: %d of %d cases (largest %.1f%%); of the others, %d have a lower bound that "
              "itself forces a bubble of 5%% or more, or are within 1 point of what it forces (whole layers that do not "
              "divide evenly over P devices, an unsharded head heavier than 1/P of the work); target < 5%%\n",
              under5, n4, 100 * max_bubble_4p, forced);
  std::printf("- longest case: %.1f s (time limit %g s: search, Z3 and checks; %d search threads); target < 60 s\n",
              max_time, a.time_limit_s, a.threads);
  double eval_ms = 0;
  int ne = 0;
  for (const Row* r : rows)
    if (r->evaluated > 0) eval_ms += r->ms_per_eval, ++ne;
  std::printf("- mean time per candidate evaluation: %.1f ms\n", ne ? eval_ms / ne : 0.0);
}

// Per shape class (P, M/P), over every case with a schedule (memory-bound variants included): ours
// over the global bound (any partition, placement and order) and over the plan's own bound (the
// certificate's bound_ms), geometric mean and max. Where the first is high and the second low, the
// plan or the global bound is what is loose; where both are high, the order (or the plan's bound).
void print_shape_table(const std::vector<Row>& rows) {
  std::vector<ps::bench::ShapeCase> cases, before;
  for (const Row& r : rows) {
    if (!r.ours.ok) continue;
    ps::bench::ShapeCase c;
    c.P = r.P;
    c.M = r.M;
    c.makespan_ms = r.ours.ms;
    c.global_bound_ms = r.global_bound_ms > 0 ? r.global_bound_ms : ps::bench::kNoValue;
    c.plan_bound_ms = r.solver ? r.solver->bound_ms : ps::bench::kNoValue;
    cases.push_back(c);
    c.global_bound_ms = r.global_bound_ms > 0 && r.global_before_ms > 0 ? r.global_before_ms : ps::bench::kNoValue;
    before.push_back(c);
  }
  // The same cases against the global bound without the backward and whole-layer ramps and the
  // forwards' release times: same classes, same order.
  std::vector<ps::bench::ShapeClass> classes = ps::bench::shape_classes(cases);
  std::vector<ps::bench::ShapeClass> earlier = ps::bench::shape_classes(before);
  if (classes.size() > 1) {  // the last row: every case as one class
    classes.push_back(ps::bench::shape_all(cases));
    earlier.push_back(ps::bench::shape_all(before));
  }
  std::printf("| P | M/P | cases | ours / global bound (geo. mean) | max | above %.2f | the same, bound without the "
              "backward and whole-layer ramps and the forwards' release times | max | ours / plan bound (geo. mean) | "
              "max |\n",
              ps::bench::kShapeAbove);
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < classes.size(); ++i) {
    const ps::bench::ShapeClass& k = classes[i];
    const std::string p = k.P > 0 ? std::to_string(k.P) : "all";
    const std::string mp = k.P > 0 ? fmt::format("{:g}", k.m_per_p) : "all";
    std::printf("| %s | %s | %d | %s | %s | %d | %s | %s | %s | %s |\n", p.c_str(), mp.c_str(), k.cases,
                num_cell(k.geo_global, "{:.3f}").c_str(), num_cell(k.max_global, "{:.3f}").c_str(), k.above,
                num_cell(earlier[i].geo_global, "{:.3f}").c_str(), num_cell(earlier[i].max_global, "{:.3f}").c_str(),
                num_cell(k.geo_plan, "{:.3f}").c_str(), num_cell(k.max_plan, "{:.3f}").c_str());
  }
}

// --settle-orders: per case, the chosen plan's order after the long Z3 run.
void print_settle_table(const Args& a, const std::vector<Row>& rows) {
  std::printf("| model | P | M | memory GB | ours ms | ours / global bound | Z3 %g s: order ms | plan bound ms | gap left | "
              "outcome | Z3 s | solver status |\n",
              a.settle_s);
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|\n");
  for (const Row& r : rows) {
    if (!r.ours.ok) continue;
    const std::string head = fmt::format("| {} | {} | {} | {} | {:.3f} | {} |", r.model, r.P, r.M, memory_cell(r), r.ours.ms,
                                         r.global_bound_ms > 0 ? fmt::format("{:.3f}", r.ours.ms / r.global_bound_ms) : "-");
    if (!r.settled) {
      std::printf("%s - | - | - | proven optimal by the case itself | - | %s |\n", head.c_str(),
                  r.solver ? label_cell(r.solver->solver_status).c_str() : "-");
      continue;
    }
    if (!r.settle) {
      std::printf("%s - | - | - | error: %s | %.1f | - |\n", head.c_str(), label_cell(r.settle_error).c_str(), r.settle_wall_s);
      continue;
    }
    const SynthResult& s = *r.settle;
    const std::string outcome = s.optimal                 ? "proven optimal"
                                : s.optimal_up_to_ms > 0 ? fmt::format("proven optimal up to {:.3f} ms of rounding", s.optimal_up_to_ms)
                                                          : "not settled: gap left";
    std::printf("%s %.3f | %.3f | %.2f%% | %s | %.1f | %s |\n", head.c_str(), s.makespan_ms, s.bound_ms, 100 * s.gap,
                outcome.c_str(), s.solve_s, label_cell(s.solver_status).c_str());
  }
}

// The memory-bound variants in one line.
void print_variant_summary(const Args& a, const std::vector<const Row*>& rows) {
  int fits = 0, infeasible = 0, slower = 0, with_baseline = 0;
  for (const Row* r : rows) {
    if (!r->ours.ok) {
      infeasible += r->ours.note == "infeasible";
      continue;
    }
    ++fits;
    if (r->best_baseline_ms > 0) ++with_baseline, slower += r->ours.ms > r->best_baseline_ms * (1 + 1e-9);
  }
  std::printf("- memory-bound variants (%.0f%% of the peak memory of pipesmith's plan at the cluster's memory): %zu "
              "cases; pipesmith fits %d, infeasible %d; slower than the best baseline that fits: %d of %d\n",
              100 * a.memory_fraction, rows.size(), fits, infeasible, slower, with_baseline);
}

// What Z3 did, over every case (memory-bound variants included).
void print_solver_summary(const std::vector<Row>& rows) {
  std::vector<SolverCase> cases;
  int infeasible = 0;
  for (const Row& r : rows) {
    if (r.solver) cases.push_back(*r.solver);
    else infeasible += r.ours.note == "infeasible";
  }
  const ps::bench::SolverSummary s = ps::bench::summarize(cases);
  auto pct = [](double f) { return std::isnan(f) ? std::string("-") : fmt::format("{:.2f}%", 100 * f); };
  std::printf("- cases: %zu (%d with a certified schedule, %d infeasible: no plan fits the memory)\n", rows.size(),
              s.cases, infeasible);
  std::printf("- gap before Z3 > 0.1%%: %d cases; Z3 ran checks (z3_checks > 0) in %d of them\n", s.over_tenth,
              s.over_tenth_checked);
  std::printf("- gap before Z3 > 1%%: %d cases; Z3 improved %d of them (shorter order or raised bound); median "
              "certified gap over them: %s before Z3, %s after\n",
              s.over_one, s.over_one_improved, pct(s.median_before).c_str(), pct(s.median_after).c_str());
  std::printf("- slower than the best order before Z3: %d of %d cases; target 0\n", s.slower, s.cases);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  bool help = false;
  if (std::string err = parse_args(argc, argv, a, help); !err.empty()) return usage(err);
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::vector<std::string> paths = model_paths(a);
  if (paths.empty()) return usage("no models (run from the repository root)");
  if (!a.svg_dir.empty()) {
    std::error_code ec;
    fs::create_directories(a.svg_dir, ec);
    if (ec) return usage(fmt::format("cannot create '{}': {}", a.svg_dir, ec.message()));
  }
  std::printf("Z3 %s\n", z3_version().c_str());  // bench/z3-both labels each run's rows with it
  std::printf("links: %s; device memory: %s\n\n",
              a.free_links ? fmt::format("free (latency 0, {:g} GB/s, one node)", kFreeBandwidthGBps).c_str()
                           : "the cluster file's (8xh100-80gb for P <= 8, 2x8-h100 above)",
              a.no_memory_cap ? "unlimited" : "the cluster file's");
  std::vector<Row> rows;
  const int svg_p = *std::max_element(a.devices.begin(), a.devices.end());
  for (const std::string& path : paths) {
    for (int P : a.devices) {
      for (int f : a.m_factors) {
        const bool want_svg = !a.svg_dir.empty() && P == svg_p && f == 2;
        Result<Row> row = run_case(a, path, P, f * P, std::nullopt, want_svg);
        if (!row.ok()) {
          std::fprintf(stderr, "%s\n", row.status().str().c_str());
          return 1;
        }
        rows.push_back(std::move(*row));
        const Row& base = rows.back();
        if (!a.memory_variants || !base.ours.ok) continue;
        const double limit_gb = std::round(10 * a.memory_fraction * base.ours.peak_gb) / 10;
        Result<Row> variant = run_case(a, path, P, f * P, limit_gb, false);
        if (!variant.ok()) {
          std::fprintf(stderr, "%s\n", variant.status().str().c_str());
          return 1;
        }
        variant->variant_of_gb = base.ours.peak_gb;
        rows.push_back(std::move(*variant));
      }
    }
  }
  std::vector<const Row*> base_rows, variant_rows;
  for (const Row& r : rows) (r.variant_of_gb > 0 ? variant_rows : base_rows).push_back(&r);
  print_main_table(a, rows);
  std::printf("\nTimes in ms, from the checker's simulation (rendezvous semantics, comms inserted, the case's device "
              "memory). OOM (x): does not fit the device memory; x = its time if memory were unlimited. (s): speed-up "
              "against that unlimited-memory time. bubble: idle share of pipesmith's schedule; gap: to the lower bound "
              "over all partitions, placements and orders. memory GB \"m (f%%)\": the memory-bound variant, f%% of the "
              "peak of pipesmith's plan at the cluster's memory.\n\n");
  print_solver_table(rows);
  std::printf("\nThe solver block of each certificate (synthesize_model: plan search, then Z3 on the chosen plan). "
              "peak GB: pipesmith's peak per device (model states + activations, max over devices). before Z3: synthesize()'s "
              "best order before Z3 (DAG timing); search order: the search's own order (the checker's; written when "
              "faster); gap before Z3: the shorter of the two against the bound before Z3; certified gap: to the bound "
              "after Z3. bound raise: bound_proven_ms - bound_before_z3_ms.\n\n");
  print_shape_table(rows);
  std::printf("\nPer shape class (P, M/P), every case with a schedule: pipesmith's iteration over the global lower "
              "bound (any partition, placement and order) and over its plan's certified bound (bound_ms); above %.2f: cases "
              "whose first ratio exceeds it; all: every case as one class.\n\n",
              ps::bench::kShapeAbove);
  if (a.settle_s > 0) {
    print_settle_table(a, rows);
    std::printf("\nEach plan chosen above (its partition and placement fixed), scheduled again by synthesize() with "
                "--settle-orders %g s (Z3's whole encoding where it loads, 2 contexts, seeded with the search's order): "
                "the order it ends with, the plan's proven bound, the gap between them, and Z3's time.\n\n",
                a.settle_s);
  }
  print_summary(a, base_rows);
  if (!variant_rows.empty()) print_variant_summary(a, variant_rows);
  std::printf("\nZ3:\n");
  print_solver_summary(rows);
  return 0;
}
