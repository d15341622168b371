// bench/recompute — recomputation as a decision (docs/tuner.md, "Recomputation"): for each model,
// P and memory cap (M = 4P), pipesmith's plan with the search choosing recompute modes per stage
// (`pipesmith synth`, --recompute search) against pipesmith without recomputation (--recompute
// none) and the published schedules with every stage recomputing uniformly (1F1B, interleaved
// 1F1B, ZB-H1, ZB-V; selective and full; `pipesmith baseline --recompute`), all certified by the
// checker under the cap. A Markdown table on stdout, progress on stderr.
//
//   bench/recompute [--models a,b] [--devices 8,16] [--caps 40,60] [--seq N] [--evaluations N]
//                   [--time-limit S] [--threads N]
//
// --seq N sets every `seq_length:` of the model files to N (the analytic cost model's sequence per
// microbatch; a model without one is left as it is and its row says so) through a copy in the
// system's temporary directory.
// Defaults: every configs/models/*.yaml, P = 8, caps 24 and 40 GB, 300 evaluations per search (the
// figures are the same on any machine), 60 s per synthesize call for Z3's share, 2 search threads.
// P <= 8 uses configs/clusters/8xh100-80gb.yaml, larger P configs/clusters/2x8-h100.yaml; the cap
// replaces the cluster's memory_gb. Footer: the geometric mean of (best uniformly recomputing
// baseline / pipesmith) over the cases where no plan fits without recomputation, and of
// (pipesmith without / with the search's recomputation) where both fit.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "ir/model.h"
#include "ir/output_file.h"
#include "synth/baselines/baseline_plan.h"
#include "synth/bounds/global_bound.h"
#include "synth/synthesize_model.h"

namespace fs = std::filesystem;
using namespace ps;

namespace {

struct Args {
  std::vector<std::string> models;
  std::vector<int> devices = {8};
  std::vector<double> caps = {24, 40};
  int evaluations = 300;
  double time_limit_s = 60;
  int threads = 2;
  int seq = 0;  // > 0: every seq_length of the model files
};

constexpr char kUsage[] =
    "usage: bench/recompute [--models a,b] [--devices 8,16] [--caps 40,60] [--seq N] [--evaluations N] "
    "[--time-limit S] [--threads N]\n";

using ps::bench::split_list;

std::optional<double> number(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v > 0) || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Parses the flags; an error message or "" (`help` set for --help).
std::string parse_args(int argc, char** argv, Args& a, bool& help) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      help = true;
      return "";
    }
    if (i + 1 >= argc) return k + ": expected a value (or unknown flag)";
    const std::string v = argv[++i];
    if (k == "--models") {
      a.models = split_list(v);
    } else if (k == "--devices" || k == "--caps") {
      std::vector<double> xs;
      for (const std::string& x : split_list(v)) {
        auto n = number(x);
        if (!n || (k == "--devices" && (*n != std::floor(*n) || *n > 1024))) return k + ": bad value '" + x + "'";
        xs.push_back(*n);
      }
      if (xs.empty()) return k + ": expected a comma-separated list";
      if (k == "--caps") a.caps = xs;
      else a.devices.assign(xs.begin(), xs.end());
    } else if (k == "--evaluations" || k == "--threads" || k == "--time-limit" || k == "--seq") {
      auto n = number(v);
      if (!n) return k + ": expected a number > 0, got '" + v + "'";
      if (k == "--evaluations") a.evaluations = static_cast<int>(*n);
      else if (k == "--seq") a.seq = static_cast<int>(*n);
      else if (k == "--threads") a.threads = static_cast<int>(*n);
      else a.time_limit_s = *n;
    } else {
      return "unknown flag " + k;
    }
  }
  return "";
}

std::vector<std::string> model_paths(const Args& a) {
  std::vector<std::string> out;
  if (!a.models.empty()) {
    for (const std::string& m : a.models)
      out.push_back(m.find('/') != std::string::npos || m.ends_with(".yaml") ? m : "configs/models/" + m + ".yaml");
    return out;
  }
  for (const auto& e : fs::directory_iterator("configs/models"))
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The model file with every `seq_length: N` set to `seq` (a copy in the temporary directory), or
// the file itself when seq is 0; `changed` says whether the file had one.
Result<std::string> with_seq(const std::string& path, int seq, bool& changed) {
  changed = false;
  if (seq <= 0) return path;
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = std::regex_replace(buf.str(), std::regex("seq_length:[ \t]*[0-9]+"),
                                              fmt::format("seq_length: {}", seq));
  changed = text != buf.str();
  const fs::path out =
      fs::temp_directory_path() / fmt::format("bench-recompute-seq{}-{}", seq, fs::path(path).filename().string());
  PS_RETURN_IF_ERROR(write_output_file(out.string(), text));
  return out.string();
}

struct Figure {
  bool ok = false;
  double ms = 0, peak_gb = 0, bubble = 0;
  std::string what;  // the plan's recompute modes, or the baseline's name
  std::string note;  // why there is no figure
};

Figure from_report(const Report& r) {
  Figure f;
  if (!r.valid || !r.sim) {
    f.note = "invalid";
    return f;
  }
  f.ok = true;
  f.ms = r.sim->makespan_ms;
  f.bubble = r.sim->bubble_ratio;
  for (double mb : r.sim->peak_memory_mb) f.peak_gb = std::max(f.peak_gb, mb / 1000);
  return f;
}

// "full 0-3,7 of 16" (stages by mode), or "none".
std::string modes_text(const Problem& p) {
  const std::string ranges = recompute_ranges(p);
  return ranges.empty() ? "none" : fmt::format("{} of {}", ranges, p.num_stages());
}

Figure synth(const Spec& spec, const Args& a, RecomputeChoice rc) {
  ModelSynthOptions o;
  o.evaluations = a.evaluations;
  o.time_limit_s = a.time_limit_s;
  o.search_threads = a.threads;
  o.recompute = rc;
  Result<ModelSynthesis> m = synthesize_model(spec, o);
  Figure f;
  if (!m.ok()) {
    f.note = m.status().code() == ErrorCode::kInfeasible ? "no plan fits" : "error: " + m.status().message();
    return f;
  }
  f = from_report(m->result.report);
  f.what = modes_text(m->problem);
  return f;
}

// The fastest of the published schedules with every stage at `mode`, under the cap.
Figure best_uniform(const Spec& spec, RecomputeMode mode) {
  Figure best;
  best.note = "none fits";
  for (BaselineKind kind : {BaselineKind::k1F1B, BaselineKind::kInterleaved1F1B, BaselineKind::kZBH1, BaselineKind::kZBV}) {
    Result<BaselineRun> r = run_baseline(spec, BaselineRequest{kind, 0, PartitionChoice{}, mode});
    if (!r.ok()) continue;
    Figure f = from_report(r->report);
    f.what = baseline_name(kind);
    if (f.ok && (!best.ok || f.ms < best.ms)) best = f;
  }
  return best;
}

std::string cell(const Figure& f) {
  if (!f.ok) return f.note;
  return fmt::format("{:.1f} ({:.1f} GB, bubble {:.0f}%)", f.ms, f.peak_gb, 100 * f.bubble);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  bool help = false;
  if (std::string err = parse_args(argc, argv, a, help); !err.empty()) {
    std::fprintf(stderr, "bench/recompute: %s\n%s", err.c_str(), kUsage);
    return 1;
  }
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::printf("| model | P | M | cap GB | pipesmith (recompute searched) | its stages' modes | pipesmith, no recompute | "
              "best uniform selective | best uniform full | best uniform / pipesmith |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  double log_vs_uniform = 0, log_vs_none = 0;
  int n_uniform = 0, n_none = 0, slower_than_none = 0, cases = 0, certified = 0, states_infeasible = 0,
      none_fits_any = 0;
  for (const std::string& path : model_paths(a)) {
    for (int P : a.devices) {
      for (double cap : a.caps) {
        SpecOverrides ov;
        ov.devices = P;
        ov.microbatches = 4 * P;
        ov.memory_gb = cap;
        const std::string cluster = P <= 8 ? "configs/clusters/8xh100-80gb.yaml" : "configs/clusters/2x8-h100.yaml";
        bool seq_set = false;
        Result<std::string> model_file = with_seq(path, a.seq, seq_set);
        Result<Spec> spec = model_file.ok() ? load_spec(*model_file, cluster, ov) : Result<Spec>(model_file.status());
        if (!spec.ok()) {
          std::fprintf(stderr, "bench/recompute: %s\n", spec.status().str().c_str());
          return 1;
        }
        const std::string name =
            a.seq > 0 ? fmt::format("{} (seq {})", spec->model.name, seq_set ? std::to_string(a.seq) : "as written")
                      : spec->model.name;
        // No plan of any kind fits where the model states alone need more devices than P.
        Result<GlobalBound> gb = global_lower_bound(*spec, P, 4 * P, cap);
        if (gb.ok() && !gb->memory_feasible) {
          ++states_infeasible;
          std::printf("| %s | %d | %d | %g | infeasible for any plan: %s | | | | | |\n", name.c_str(), P, 4 * P, cap,
                      gb->memory_reason.c_str());
          continue;
        }
        ++cases;
        std::fprintf(stderr, "[%s P=%d M=%d %g GB] pipesmith...\n", spec->model.name.c_str(), P, 4 * P, cap);
        const Figure ours = synth(*spec, a, RecomputeChoice::kSearch);
        const Figure none = synth(*spec, a, RecomputeChoice::kNone);
        std::fprintf(stderr, "[%s P=%d M=%d %g GB] baselines...\n", spec->model.name.c_str(), P, 4 * P, cap);
        const Figure sel = best_uniform(*spec, RecomputeMode::kSelective);
        const Figure full = best_uniform(*spec, RecomputeMode::kFull);
        const Figure* uni = sel.ok && (!full.ok || sel.ms <= full.ms) ? &sel : (full.ok ? &full : nullptr);
        std::string ratio = "-";
        if (ours.ok) ++certified;
        if (ours.ok && !none.ok && !uni) ++none_fits_any;
        if (ours.ok && uni) {
          ratio = fmt::format("{:.2f} ({})", uni->ms / ours.ms, uni->what);
          if (!none.ok) {
            log_vs_uniform += std::log(uni->ms / ours.ms);
            ++n_uniform;
          }
        }
        if (ours.ok && none.ok) {
          log_vs_none += std::log(none.ms / ours.ms);
          ++n_none;
          if (ours.ms > none.ms * (1 + 1e-9)) ++slower_than_none;
        }
        std::printf("| %s | %d | %d | %g | %s | %s | %s | %s | %s | %s |\n", name.c_str(), P, 4 * P, cap,
                    cell(ours).c_str(), ours.ok ? ours.what.c_str() : "-", cell(none).c_str(),
                    sel.ok ? fmt::format("{} {}", sel.what, cell(sel)).c_str() : sel.note.c_str(),
                    full.ok ? fmt::format("{} {}", full.what, cell(full)).c_str() : full.note.c_str(), ratio.c_str());
        std::fflush(stdout);
      }
    }
  }
  std::printf("\n%d of %d cases certified with the search's recomputation (besides %d where the model states alone "
              "exceed the cap: no plan of any kind exists).\n",
              certified, cases, states_infeasible);
  if (none_fits_any > 0)
    std::printf("In %d of them neither a plan without recomputation nor any uniformly recomputing baseline fits.\n",
                none_fits_any);
  if (n_uniform > 0)
    std::printf("Where no plan fits without recomputation (%d cases): best uniformly recomputing baseline / pipesmith, "
                "geometric mean %.3f.\n",
                n_uniform, std::exp(log_vs_uniform / n_uniform));
  if (n_none > 0)
    std::printf("Where a plan fits without it (%d cases): pipesmith without / with the search's recomputation, geometric "
                "mean %.3f; slower with it in %d.\n",
                n_none, std::exp(log_vs_none / n_none), slower_than_none);
  return 0;
}
