// bench_baselines — the "today" column: every baseline schedule on every model in configs/models,
// at P ∈ {4, 8} and M ∈ {P, 2P, 4P}, generated, verified (rendezvous, comms inserted) and simulated
// by the checker. Prints, per row: simulated iteration time, bubble ratio, max peak memory per
// device (with '!' when it exceeds the cluster's memory), and the ratio of the iteration time to
// the lower bound over all partitions and placements (synth/bounds/global_bound.h) and to the checker's
// bound for the schedule's own partition and placement.
//
// Usage: bench_baselines [SOURCE_DIR] [CLUSTER.yaml]   (defaults: .,
// configs/clusters/8xh100-80gb.yaml) Partition: balanced (exact min-max F+I+W). Memory is reported,
// not enforced, so every row has figures; rows over the limit are marked.
#include "report/report.h"
#include "synth/baselines/baselines.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/units.h"
#include "synth/bounds/global_bound.h"
#include "synth/plan/partition.h"
#include "verify/verify.h"

using namespace ps;

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const std::string root = argc > 1 ? argv[1] : ".";
  const std::string cluster = argc > 2 ? argv[2] : root + "/configs/clusters/8xh100-80gb.yaml";
  std::vector<std::string> models;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root + "/configs/models", ec))
    if (e.path().extension() == ".yaml") models.push_back(e.path().string());
  if (ec || models.empty()) {
    std::fprintf(stderr, "bench_baselines: no models under %s/configs/models\n", root.c_str());
    return 1;
  }
  std::sort(models.begin(), models.end());

  const auto t0 = std::chrono::steady_clock::now();
  int generated = 0, failures = 0;
  std::printf(
      "pipesmith baselines: simulated iteration time per schedule (balanced partition, "
      "rendezvous semantics, comms inserted, cluster %s)\n",
      fs::path(cluster).filename().string().c_str());
  std::printf(
      "iter/LB: iteration / lower bound over all partitions and placements; iter/pLB: "
      "iteration / checker's bound for this partition and placement; '!' = over the "
      "memory limit\n\n");
  std::printf("%-16s %2s %3s  %-16s %11s %7s %9s %8s %8s\n", "model", "P", "M", "schedule",
              "iter_ms", "bubble", "peak_GB", "iter/LB", "iter/pLB");
  for (const std::string& model_path : models) {
    for (int P : {4, 8}) {
      for (int M : {P, 2 * P, 4 * P}) {
        SpecOverrides o;
        o.devices = P;
        o.microbatches = M;
        auto spec = load_spec(model_path, cluster, o);
        if (!spec.ok()) {
          std::fprintf(stderr, "%s\n", spec.status().str().c_str());
          return 1;
        }
        auto gb = global_lower_bound(*spec, P, M, 0);
        std::string best;
        double best_ms = 0;
        for (BaselineKind kind : all_baseline_kinds()) {
          std::string row = fmt::format("{:<16} {:>2} {:>3}  {:<16}", spec->model.name, P, M,
                                        baseline_name(kind));
          auto shape = baseline_shape(kind, 0);
          auto fail = [&](const std::string& why) {
            std::printf("%s %s\n", row.c_str(), why.c_str());
          };
          if (!shape.ok()) {
            fail("n/a: " + shape.status().message());
            continue;
          }
          int S = shape->stages_per_device * P;
          auto part = balanced_partition(*spec, S);
          if (!part.ok()) {
            fail("n/a: " + part.status().message());
            continue;
          }
          auto problem = make_problem(*spec, *part, baseline_placement(*shape, P));
          if (!problem.ok()) {
            fail("error: " + problem.status().message());
            ++failures;
            continue;
          }
          Status shape_ok = check_baseline_shape(*problem, kind);
          if (!shape_ok.is_ok()) {
            fail(kind == BaselineKind::kDualPipeV ? fmt::format("n/a (needs M >= 2P = {})", 2 * P)
                                                  : "n/a: " + shape_ok.message());
            continue;
          }
          auto sched = make_baseline(*problem, kind);
          if (!sched.ok()) {
            fail("error: " + sched.status().message());
            ++failures;
            continue;
          }
          VerifyOptions vo;
          vo.memory_limit_gb = 0;  // report the peak; mark it below instead of rejecting
          Report r = verify(*sched, vo);
          ++generated;
          if (!r.valid || !r.sim) {
            fail("CHECKER REJECTED (bug):\n" + format_report(r));
            ++failures;
            continue;
          }
          double peak_mb =
              *std::max_element(r.sim->peak_memory_mb.begin(), r.sim->peak_memory_mb.end());
          bool over = !fits_memory_limit(peak_mb, spec->cluster.memory_gb);
          std::printf("%s %11.2f %7.4f %8.2f%s %8.3f %8.3f\n", row.c_str(), r.sim->makespan_ms,
                      r.sim->bubble_ratio, peak_mb / 1000.0, over ? "!" : " ",
                      gb.ok() ? r.sim->makespan_ms / gb->bound_ms : 0.0,
                      r.lower_bound_ms > 0 ? r.sim->makespan_ms / r.lower_bound_ms : 0.0);
          if (!over && (best.empty() || r.sim->makespan_ms < best_ms)) {
            best = baseline_name(kind);
            best_ms = r.sim->makespan_ms;
          }
        }
        if (gb.ok())
          std::printf("%-16s %2d %3d  %-16s %11.2f   best within memory: %s\n\n",
                      spec->model.name.c_str(), P, M, "lower bound", gb->bound_ms,
                      best.empty() ? "none" : best.c_str());
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%d schedules generated, verified and simulated in %.2f s; %d failure(s)\n",
              generated, secs, failures);
  return failures == 0 ? 0 : 1;
}
