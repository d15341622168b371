// `pipesmith bound MODEL.yaml [--devices P] [--microbatches M] [--memory-limit-gb X]
//  [--partition balanced|even|LAYOUT] [--placement sequential|looped|vshape|LIST]
//  [--stages-per-device V] [--json]`
// — the best lower bound on the iteration time over all partitions and placements (and the
// checker's bound for one partition/placement when asked); exit 2 when the model states cannot fit.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/spec_flags.h"
#include "synth/plan/plan_spec.h"
#include "ir/problem.h"
#include "synth/bounds/model_bound.h"

namespace ps::cli {

namespace {

struct BoundArgs {
  SpecFlags spec;
  std::string partition;
  std::string placement;
  int stages_per_device = 0;
  bool json = false;
};

int run_bound(const BoundArgs& a) {
  auto spec = load_spec_from_flags(a.spec);
  if (!spec.ok()) return report_error(spec.status());
  if (Status st = check_layers_for_devices(*spec); !st.is_ok()) return report_error(st);
  if (Status st = check_stages_per_device(*spec, a.stages_per_device, "--stages-per-device"); !st.is_ok()) return report_error(st);
  const int P = spec->cluster.devices, M = spec->pipeline.microbatches;
  std::optional<PlanBoundRequest> request;
  if (!a.partition.empty() || !a.placement.empty() || a.stages_per_device != 0) {
    request = PlanBoundRequest{a.partition, a.placement, a.stages_per_device};
  }
  auto mb = model_bound(*spec, request);
  if (!mb.ok()) return report_error(mb.status());
  const GlobalBound* g = &mb->global;
  const double packing_ms = mb->packing_ms, bound_ms = mb->bound_ms;
  const std::string& binding = mb->binding;
  const std::optional<PlanBound>& plan = mb->plan;

  if (a.json) {
    std::printf("%s\n", format_model_bound_json(*spec, *mb).c_str());
  } else {
    std::string s;
    s += fmt::format(
        "lower bound on the iteration time of '{}' on P = {} devices, M = {} microbatches\n",
        spec->model.name, P, M);
    s += "over all partitions, placements and orders (comm taken as free):\n";
    s += fmt::format("  total work / P                {:12.3f} ms\n", g->total_work_ms);
    s += fmt::format("  work + pipeline ramp / P      {:12.3f} ms\n", g->ramp_ms);
    s += fmt::format("  heaviest layer {:>4}, with tail {:11.3f} ms\n", g->heaviest_layer,
                     g->heaviest_layer_ms);
    s += fmt::format("  critical path                 {:12.3f} ms\n", g->critical_path_ms);
    s += fmt::format("  work + backward ramp / P      {:12.3f} ms\n", g->backward_ramp_ms);
    s += fmt::format("  ramp, whole layers            {:12.3f} ms\n", g->ramp_packing_ms);
    s += fmt::format("  backward ramp, whole layers   {:12.3f} ms\n", g->backward_ramp_packing_ms);
    s += fmt::format("  forwards' release times       {:12.3f} ms\n", g->forward_release_ms);
    s += fmt::format("  release times, whole layers   {:12.3f} ms\n", g->release_packing_ms);
    s += fmt::format("  each device's windows, whole  {:12.3f} ms\n", g->window_packing_ms);
    s += fmt::format("  every window at once (LP)     {:12.3f} ms\n", g->window_lp_ms);
    s += fmt::format("  heavy layers two to a device  {:12.3f} ms\n", g->heavy_pairs_ms);
    s += fmt::format("  whole layers on {:>3} devices   {:12.3f} ms  (M x the best packing's busiest device)\n", P,
                     packing_ms);
    s += fmt::format("  => bound                      {:12.3f} ms  ({})\n", bound_ms, binding);
    if (g->memory_limit_gb > 0)
      s += fmt::format(
          "memory: model states {:.2f} GB in total; at {:g} GB per device at least {} "
          "device(s) needed\n",
          g->model_state_gb, g->memory_limit_gb, g->min_devices_for_memory);
    else
      s += fmt::format("memory: model states {:.2f} GB in total; no memory limit\n",
                       g->model_state_gb);
    if (plan) {
      s += fmt::format("for partition ");
      for (size_t i = 0; i < plan->partition.size(); ++i)
        s += fmt::format("{}[{}-{}]@{}", i ? " " : "", plan->partition[i].first,
                         plan->partition[i].last, plan->placement[i]);
      s += fmt::format(" (layers@device):\n  checker's bound               {:12.3f} ms\n",
                       plan->bound_ms);
    }
    std::fputs(s.c_str(), stdout);
  }
  if (!g->memory_feasible)
    return report_error(Status::error(ErrorCode::kInfeasible, "infeasible: " + g->memory_reason));
  return 0;
}

}  // namespace

Runner add_bound(CLI::App& app) {
  auto args = std::make_shared<BoundArgs>();
  auto* sub = app.add_subcommand(
      "bound",
      "Lower bound on the iteration time over all partitions and placements (and for one)");
  add_spec_flags(sub, &args->spec);
  sub->add_option(
      "--partition", args->partition,
      "Also bound this partition: balanced, balanced-memory, even or a Megatron layout");
  sub->add_option("--placement", args->placement,
                  "Placement for --partition: sequential, interleaved or looped, v or vshape, or a list like 0,1,1,0");
  sub->add_option("--stages-per-device", args->stages_per_device,
                  "Stages per device V for --partition");
  sub->add_flag("--json", args->json, "Print the bounds as JSON");
  return [args] { return run_bound(*args); };
}

}  // namespace ps::cli
