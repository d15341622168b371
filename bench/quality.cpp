// bench/quality.cpp — the table the README leads with: pipesmith's co-optimized schedule against
// the schedules people run (Megatron 1F1B and interleaved 1F1B on Megatron's even partition, ZB-H1
// and ZB-V on the same even partition), per model, device count P and microbatch count M, with
// each device's real memory (the cluster's memory_gb).
//
// Every figure is the checker's: each schedule (baseline or tuned) is verify()'d as a compute-only
// schedule, comms inserted by the shared rule, under rendezvous semantics and the memory limit,
// and its simulated iteration time is reported. A baseline that does not fit the memory prints
// "OOM". Columns: iteration time (ms) of each; speed-up of pipesmith over interleaved 1F1B; bubble
// ratio of pipesmith's simulation; its gap to the global lower bound (synth/bounds/global_bound.h: over all
// partitions, placements and orders); search time; whether Z3 proved the schedule part optimal
// ("-" when Z3 was not run); the chosen plan.
//
//   bench/quality [--quick] [--models a,b] [--devices 4,8] [--m-factors 1,2,4,8] [--p16]
//                 [--time-limit S] [--threads N] [--z3 SECONDS] [--z3-max-ops N] [--seed N] [--svg-dir DIR]
//                 [--cuts-layers]
//
// --cuts-layers adds a column: the same search with stages cut only between whole model layers
// (`pipesmith synth --cuts layers`, ir/whole_layers.h: no joins_next group split), so the price of
// plans a module splitter can build is measured per case (twice the search time).
// --time-limit is the whole budget of one case (search + Z3 + checks). With --z3 Z, the tuner gets
// S − Z seconds and synthesize() (synth/synthesize.h: heuristic, baselines and Z3 on the chosen
// partition and placement) the last Z seconds, on problems of at most --z3-max-ops compute ops
// (default 3000; larger encodings cost more memory and load time than a bench case spares); the
// faster of the two verified schedules is reported, and "Z3 optimal" says whether Z3 proved the
// order optimal.
//
// With --svg-dir, one SVG per model (at the largest P, M = 2P): pipesmith's schedule above
// interleaved 1F1B's, composed into one file on the same time axis (the shorter schedule's chart is
// drawn at the longer one's scale, so equal lengths mean equal times).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/whole_layers.h"
#include "synth/baselines/baselines.h"
#include "synth/bounds/global_bound.h"
#include "synth/plan/partition.h"
#include "synth/plan/placement.h"
#include "synth/synthesize.h"
#include "synth/tuner/tuner.h"
#include "verify/verify.h"

namespace fs = std::filesystem;
using namespace ps;

namespace {

struct Args {
  bool quick = false;
  std::vector<std::string> models;  // names (configs/models/<name>.yaml) or paths
  std::vector<int> devices = {4, 8};
  std::vector<int> m_factors = {1, 2, 4, 8};
  bool p16 = false;
  double time_limit_s = 60;
  int threads = 2;
  double z3_s = 0;
  int z3_max_ops = 3000;
  uint64_t seed = 0;
  std::string svg_dir;
  std::string source_dir = ".";
  bool cuts_layers = false;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::optional<std::vector<int>> split_ints(const std::string& s) {
  std::vector<int> out;
  for (const std::string& x : split(s)) {
    char* end = nullptr;
    long v = std::strtol(x.c_str(), &end, 10);
    if (*end != '\0' || v <= 0 || v > 1024) return std::nullopt;
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) return std::nullopt;
  return out;
}

int usage(const char* msg) {
  std::fprintf(stderr,
               "bench/quality: %s\nusage: bench/quality [--quick] [--models a,b] [--devices 4,8] "
               "[--m-factors 1,2,4,8] [--p16] [--time-limit S] [--threads N] [--z3 SECONDS] [--z3-max-ops N] [--seed N] [--svg-dir DIR] [--cuts-layers]\n",
               msg);
  return 1;
}

// Figures of one verified schedule.
struct Figure {
  bool ok = false;
  std::string note;  // "OOM", "n/a" (shape not supported), error text
  double ms = 0;
  double uncapped_ms = 0;  // OOM: the simulated time if memory were unlimited
  double bubble = 0;
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
  if (keep_report) f.report = std::move(r);
  return f;
}

Figure run_baseline(const Spec& spec, BaselineKind kind, bool keep_report) {
  Figure f;
  Result<BaselineShape> shape = baseline_shape(kind, 0);
  if (!shape.ok()) {
    f.note = "n/a";
    return f;
  }
  const int P = spec.cluster.devices;
  const int S = shape->stages_per_device * P;
  Result<Partition> part = even_partition(spec, S);
  if (!part.ok()) {
    f.note = "n/a";
    return f;
  }
  Result<Problem> pb = make_problem(spec, *part, baseline_placement(*shape, P));
  if (!pb.ok() || !check_baseline_shape(*pb, kind).is_ok()) {
    f.note = "n/a";
    return f;
  }
  Result<Schedule> s = make_baseline(*pb, kind);
  if (!s.ok()) {
    f.note = "n/a";
    return f;
  }
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

// The tuner on the model's whole layers (ir/whole_layers.h), its plan costed on the model as written.
Figure search_whole_layers(const Spec& spec, TuneOptions to) {
  Figure f;
  Result<WholeLayerModel> w = whole_layer_model(spec);
  if (!w.ok()) {
    f.note = "ERROR";
    return f;
  }
  to.progress = nullptr;
  Result<TuneResult> tr = cooptimize(w->spec, to);
  if (!tr.ok()) {
    f.note = tr.status().code() == ErrorCode::kInfeasible ? "OOM" : "ERROR";
    return f;
  }
  Result<Problem> pb = make_problem(spec, refine_partition(tr->partition, *w), tr->placement);
  if (!pb.ok()) {
    f.note = "ERROR";
    return f;
  }
  pb->memory_gb = tr->problem.memory_gb;
  Schedule s = tr->schedule;
  s.problem = *pb;
  s.certificate.reset();
  return check(s, false);
}

struct Row {
  std::string model;
  bool heterogeneous = true;
  int P = 0, M = 0;
  Figure f1f1b, inter, zbh1, zbv, ours;
  Figure whole;  // --cuts-layers: the search over whole-layer partitions
  double speedup = 0;         // interleaved / ours (0: interleaved not feasible)
  double speedup_uncapped = 0;  // interleaved without the memory limit / ours, when it does not fit
  double min_bubble = 0;      // the bubble the lower bound forces: 1 − (work / P) / bound
  double best_baseline_ms = 0;
  double gap = 0;
  double search_s = 0;
  std::string optimal = "-";
  std::string plan;
  int evaluated = 0;
  double ms_per_eval = 0;
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

}  // namespace

int main(int argc, char** argv) {
  Args a;
  bool devices_given = false, factors_given = false, limit_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    if (k == "--quick") a.quick = true;
    else if (k == "--cuts-layers") a.cuts_layers = true;
    else if (k == "--p16") a.p16 = true;
    else if (k == "--models") {
      auto v = value();
      if (!v) return usage("--models needs a value");
      a.models = split(*v);
    } else if (k == "--devices" || k == "--m-factors") {
      auto v = value();
      auto ints = v ? split_ints(*v) : std::nullopt;
      if (!ints) return usage(fmt::format("{} needs a comma-separated list of positive integers", k).c_str());
      (k == "--devices" ? a.devices : a.m_factors) = *ints;
      (k == "--devices" ? devices_given : factors_given) = true;
    } else if (k == "--time-limit" || k == "--threads" || k == "--z3" || k == "--z3-max-ops" || k == "--seed") {
      auto v = value();
      if (!v) return usage(fmt::format("{} needs a value", k).c_str());
      char* end = nullptr;
      const double x = std::strtod(v->c_str(), &end);
      if (*end != '\0' || !(x >= 0)) return usage(fmt::format("{}: expected a number >= 0, got '{}'", k, *v).c_str());
      if (k == "--time-limit") {
        a.time_limit_s = x;
        limit_given = true;
      } else if (k == "--threads") a.threads = std::max(1, static_cast<int>(x));
      else if (k == "--z3") a.z3_s = x;
      else if (k == "--z3-max-ops") a.z3_max_ops = static_cast<int>(x);
      else a.seed = static_cast<uint64_t>(x);
    } else if (k == "--svg-dir") {
      auto v = value();
      if (!v) return usage("--svg-dir needs a value");
      a.svg_dir = *v;
    } else if (k == "--help" || k == "-h") {
      usage("help");
      return 0;
    } else {
      return usage(fmt::format("unknown argument '{}'", k).c_str());
    }
  }
  if (a.quick) {
    if (!devices_given) a.devices = {8};
    if (!factors_given) a.m_factors = {1, 4};
    if (!limit_given) a.time_limit_s = 10;
  }
  if (a.p16 && std::find(a.devices.begin(), a.devices.end(), 16) == a.devices.end()) a.devices.push_back(16);
  std::vector<std::string> model_paths;
  if (a.models.empty()) {
    for (const auto& e : fs::directory_iterator("configs/models"))
      if (e.path().extension() == ".yaml") model_paths.push_back(e.path().string());
    std::sort(model_paths.begin(), model_paths.end());
  } else {
    for (const std::string& m : a.models)
      model_paths.push_back(m.find('/') != std::string::npos || m.ends_with(".yaml") ? m : "configs/models/" + m + ".yaml");
  }
  if (model_paths.empty()) return usage("no models (run from the repository root)");
  if (!a.svg_dir.empty()) {
    std::error_code ec;
    fs::create_directories(a.svg_dir, ec);
    if (ec) return usage(fmt::format("cannot create '{}': {}", a.svg_dir, ec.message()).c_str());
  }

  std::vector<Row> rows;
  const int svg_p = *std::max_element(a.devices.begin(), a.devices.end());
  for (const std::string& path : model_paths) {
    for (int P : a.devices) {
      const std::string cluster = P <= 8 ? "configs/clusters/8xh100-80gb.yaml" : "configs/clusters/2x8-h100.yaml";
      for (int f : a.m_factors) {
        const int M = f * P;
        SpecOverrides ov;
        ov.devices = P;
        ov.microbatches = M;
        Result<Spec> spec = load_spec(path, cluster, ov);
        if (!spec.ok()) {
          std::fprintf(stderr, "%s\n", spec.status().str().c_str());
          return 1;
        }
        Row row;
        row.model = spec->model.name;
        row.heterogeneous = is_heterogeneous(*spec);
        row.P = P;
        row.M = M;
        const bool want_svg = !a.svg_dir.empty() && P == svg_p && f == 2;
        std::fprintf(stderr, "[%s P=%d M=%d] baselines...\n", row.model.c_str(), P, M);
        row.f1f1b = run_baseline(*spec, BaselineKind::k1F1B, false);
        row.inter = run_baseline(*spec, BaselineKind::kInterleaved1F1B, want_svg);
        row.zbh1 = run_baseline(*spec, BaselineKind::kZBH1, false);
        row.zbv = run_baseline(*spec, BaselineKind::kZBV, false);
        TuneOptions to;
        to.time_limit_s = std::max(1.0, a.time_limit_s - a.z3_s);
        to.threads = a.threads;
        to.seed = a.seed;
        to.progress = [&](const TuneProgress& p) {
          std::fprintf(stderr, "  %-6s %5d evaluated  best %.1f ms  bound %.1f ms  gap %.1f%%  %.1f s\n", p.phase.c_str(),
                       p.evaluated, p.best_ms, p.lower_bound_ms, 100 * p.gap, p.elapsed_s);
        };
        Result<TuneResult> tr = cooptimize(*spec, to);
        if (!tr.ok()) {
          row.ours.note = tr.status().code() == ErrorCode::kInfeasible ? "OOM" : "ERROR";
          std::fprintf(stderr, "  pipesmith: %s\n", tr.status().str().c_str());
        } else {
          row.ours = check(tr->schedule, want_svg);
          row.search_s = tr->stats.total_s;
          const size_t ops = tr->schedule.num_ops();
          if (a.z3_s > 0 && static_cast<int>(ops) <= a.z3_max_ops) {
            SynthOptions so;
            so.time_limit_s = a.z3_s;
            so.seed = static_cast<unsigned>(a.seed);
            Result<SynthResult> sr = synthesize(tr->problem, so, &*spec);
            if (!sr.ok()) {
              std::fprintf(stderr, "  synthesize: %s\n", sr.status().str().c_str());
            } else {
              row.search_s += sr->total_s;
              std::fprintf(stderr, "  z3: %.1f ms (%s, %s) in %.1f s\n", sr->makespan_ms, sr->optimal ? "optimal" : "not proven",
                           sr->solver_status.c_str(), sr->total_s);
              if (row.ours.ok && sr->makespan_ms < row.ours.ms) {
                row.ours = check(sr->schedule, want_svg);
                row.plan += " + Z3";
              }
              row.optimal = sr->optimal && row.ours.ok && row.ours.ms <= sr->makespan_ms + 1e-6 ? "yes" : "no";
            }
          } else if (a.z3_s > 0) {
            row.optimal = fmt::format("skipped ({} ops)", ops);
          }
          row.evaluated = tr->stats.evaluated;
          row.ms_per_eval = tr->stats.ms_per_eval;
          row.plan = tr->description;
          if (row.ours.ok) row.gap = row.ours.ms / tr->lower_bound_ms - 1;
          double work_ms = 0;
          for (int l = 0; l < static_cast<int>(spec->model.layers.size()); ++l) work_ms += layer_time_ms(spec->model, l);
          row.min_bubble = std::max(0.0, 1 - work_ms * M / P / tr->lower_bound_ms);
        }
        if (a.cuts_layers) row.whole = search_whole_layers(*spec, to);
        double best = 0;
        for (const Figure* b : {&row.f1f1b, &row.inter, &row.zbh1, &row.zbv})
          if (b->ok && (best == 0 || b->ms < best)) best = b->ms;
        row.best_baseline_ms = best;
        if (row.inter.ok && row.ours.ok) row.speedup = row.inter.ms / row.ours.ms;
        if (!row.inter.ok && row.inter.uncapped_ms > 0 && row.ours.ok) row.speedup_uncapped = row.inter.uncapped_ms / row.ours.ms;
        if (want_svg && row.ours.report && row.inter.report) {
          const std::string file = fmt::format("{}/{}.svg", a.svg_dir, row.model);
          const std::string inter_title =
              row.inter.ok ? fmt::format("Megatron interleaved 1F1B (even partition, V=2): {:.1f} ms — same time axis",
                                         row.inter.ms)
                           : fmt::format("Megatron interleaved 1F1B (even partition, V=2): {:.1f} ms if memory were "
                                         "unlimited — it does not fit {:g} GB — same time axis",
                                         row.inter.uncapped_ms, spec->cluster.memory_gb);
          std::string svg = compose_svg(
              *row.ours.report, fmt::format("pipesmith on {} (P={}, M={}): {:.1f} ms", row.model, P, M, row.ours.ms),
              *row.inter.report, inter_title);
          std::ofstream out(file, std::ios::binary);
          out << svg;
          if (!out) std::fprintf(stderr, "cannot write %s\n", file.c_str());
          else std::fprintf(stderr, "  wrote %s\n", file.c_str());
        }
        row.ours.report.reset();
        row.inter.report.reset();
        std::fprintf(stderr, "  -> pipesmith %s ms (%s), interleaved %s ms, speed-up %.2fx, %.1f s\n",
                     cell(row.ours).c_str(), row.plan.c_str(), cell(row.inter).c_str(), row.speedup, row.search_s);
        rows.push_back(std::move(row));
      }
    }
  }

  // The table.
  std::printf("| model | P | M | 1F1B | interleaved 1F1B | ZB-H1 | ZB-V | pipesmith |%s speed-up vs interleaved | "
              "vs best baseline | bubble | gap to bound | search s | Z3 optimal | plan |\n",
              a.cuts_layers ? " --cuts layers |" : "");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|%s---:|---:|---:|---:|---:|:---:|---|\n", a.cuts_layers ? "---:|" : "");
  for (const Row& r : rows) {
    const std::string whole =
        !a.cuts_layers ? ""
        : r.whole.ok && r.ours.ok ? fmt::format(" {} ({:+.1f}%) |", cell(r.whole), 100 * (r.whole.ms / r.ours.ms - 1))
                                  : fmt::format(" {} |", cell(r.whole));
    std::printf("| %s | %d | %d | %s | %s | %s | %s | %s |%s %s | %s | %s | %s | %.1f | %s | %s |\n", r.model.c_str(), r.P,
                r.M, cell(r.f1f1b).c_str(), cell(r.inter).c_str(), cell(r.zbh1).c_str(), cell(r.zbv).c_str(),
                cell(r.ours).c_str(), whole.c_str(),
                r.speedup > 0                ? fmt::format("{:.2f}x", r.speedup).c_str()
                : r.speedup_uncapped > 0     ? fmt::format("({:.2f}x)", r.speedup_uncapped).c_str()
                                             : "-",
                r.ours.ok && r.best_baseline_ms > 0 ? fmt::format("{:.2f}x", r.best_baseline_ms / r.ours.ms).c_str() : "-",
                r.ours.ok ? fmt::format("{:.1f}%", 100 * r.ours.bubble).c_str() : "-",
                r.ours.ok ? fmt::format("{:.1f}%", 100 * r.gap).c_str() : "-", r.search_s, r.optimal.c_str(),
                r.plan.c_str());
  }
  // Summary against the targets.
  double log_sum = 0, min_vs_best = 1e9, max_search = 0, max_bubble_4p = 0;
  int n_het = 0, slower = 0, cases = 0;
  for (const Row& r : rows) {
    if (!r.ours.ok) continue;
    ++cases;
    if (r.heterogeneous && r.speedup > 0) {
      log_sum += std::log(r.speedup);
      ++n_het;
    }
    if (r.best_baseline_ms > 0) {
      min_vs_best = std::min(min_vs_best, r.best_baseline_ms / r.ours.ms);
      if (r.ours.ms > r.best_baseline_ms * (1 + 1e-9)) ++slower;
    }
    max_search = std::max(max_search, r.search_s);
    if (r.M >= 4 * r.P) max_bubble_4p = std::max(max_bubble_4p, r.ours.bubble);
  }
  double arith = 0, arith_all = 0;
  int n_all = 0;
  for (const Row& r : rows) {
    if (!r.ours.ok || !r.heterogeneous) continue;
    if (r.speedup > 0) arith += r.speedup;
    const double s = r.speedup > 0 ? r.speedup : r.speedup_uncapped;
    if (s > 0) arith_all += s, ++n_all;
  }
  std::printf("\n");
  std::printf("Times in ms, from the checker's simulation (rendezvous semantics, comms inserted, %s). "
              "OOM (x): does not fit the device memory; x = its time if memory were unlimited. "
              "(s): speed-up against that unlimited-memory time. bubble: idle share of pipesmith's schedule; "
              "gap: to the lower bound over all partitions, placements and orders.\n\n",
              "device memory of the cluster file");
  std::printf("- heterogeneous models, cases where interleaved 1F1B fits: %d; mean speed-up over it: %.2fx (geometric "
              "%.2fx); target >= 1.4x\n",
              n_het, n_het ? arith / n_het : 0.0, n_het ? std::exp(log_sum / n_het) : 0.0);
  std::printf("- heterogeneous models, all %d cases (against interleaved 1F1B without memory limit where it does not fit): "
              "mean %.2fx\n",
              n_all, n_all ? arith_all / n_all : 0.0);
  std::printf("- slower than the best feasible baseline: %d of %d cases (worst ratio best-baseline/pipesmith %.3f); "
              "target 0\n",
              slower, cases, cases ? min_vs_best : 0.0);
  int n4 = 0, under5 = 0, forced = 0;
  for (const Row& r : rows) {
    if (!r.ours.ok || r.M < 4 * r.P) continue;
    ++n4;
    if (r.ours.bubble < 0.05) ++under5;
    else if (r.min_bubble >= 0.05 - 1e-9 || r.ours.bubble - r.min_bubble < 0.01) ++forced;
  }
  std::printf("- bubble < 5%% at M >= 4P: %d of %d cases (largest %.1f%%); of the others, %d have a lower bound that "
              "itself forces a bubble of 5%% or more, or are within 1 point of what it forces (whole layers that do not "
              "divide evenly over P devices, an unsharded head heavier than 1/P of the work); target < 5%%\n",
              under5, n4, 100 * max_bubble_4p, forced);
  std::printf("- longest search: %.1f s (time limit %.0f s, %d threads); target < 60 s\n", max_search, a.time_limit_s,
              a.threads);
  double eval_ms = 0;
  int ne = 0;
  for (const Row& r : rows)
    if (r.evaluated > 0) eval_ms += r.ms_per_eval, ++ne;
  std::printf("- mean time per candidate evaluation: %.1f ms\n", ne ? eval_ms / ne : 0.0);
  std::printf("- Z3 refinement: %s\n", a.z3_s > 0 ? fmt::format("synthesize() on the chosen plan, last {:g} s of each case, up to {} ops", a.z3_s, a.z3_max_ops).c_str()
                                                     : "off (heuristic schedules; pass --z3 SECONDS)");
  return 0;
}
