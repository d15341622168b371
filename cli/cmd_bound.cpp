// `pipesmith bound MODEL.yaml [--devices P] [--microbatches M] [--memory-limit-gb X]
//  [--partition balanced|even|LAYOUT] [--placement sequential|looped|vshape|LIST]
//  [--stages-per-device V] [--json]`
// — the best lower bound on the iteration time over all partitions and placements (and the
// checker's bound for one partition/placement when asked); exit 2 when the model states cannot fit.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/spec_flags.h"
#include "ir/problem.h"
#include "synth/bounds/global_bound.h"
#include "synth/bounds/packing_bound.h"
#include "synth/plan/plan_spec.h"
#include "synth/plan/partition.h"
#include "synth/plan/placement.h"
#include "verify/verify.h"

namespace ps::cli {

namespace {

struct BoundArgs {
  SpecFlags spec;
  std::string partition;
  std::string placement;
  int stages_per_device = 0;
  bool json = false;
};

struct PlanBound {
  Partition partition;
  std::vector<int> placement;
  double bound_ms = 0;
};

// The partition/placement named by the flags, read as synth reads them (synth/plan/plan_spec.h):
// --partition defaults to balanced; without --placement, sequential, or interleaved when
// --stages-per-device is above 1 (a layout keeps its own placement).
Result<PlanBound> plan_bound(const Spec& spec, const BoundArgs& a) {
  PlanSpec words{a.partition.empty() ? "balanced" : a.partition, a.placement, a.stages_per_device};
  if (words.placement.empty())
    words.placement = words.stages_per_device > 1 && !is_layout_partition(words.partition) ? "interleaved" : "sequential";
  if (!is_layout_partition(words.partition))
    PS_RETURN_IF_ERROR(check_placement_flags(words.placement, words.stages_per_device));
  auto plan = resolve_plan(spec, words);
  if (!plan.ok()) return plan.status();
  PlanBound pb;
  pb.partition = std::move(plan->partition);
  pb.placement = std::move(plan->placement);
  auto problem = make_problem(spec, pb.partition, pb.placement);
  if (!problem.ok()) return problem.status();
  pb.bound_ms = lower_bound_ms(*problem);
  return pb;
}

int run_bound(const BoundArgs& a) {
  auto spec = load_spec_from_flags(a.spec);
  if (!spec.ok()) return report_error(spec.status());
  if (Status st = check_stages_per_device(*spec, a.stages_per_device); !st.is_ok()) return report_error(st);
  const int P = spec->cluster.devices, M = spec->pipeline.microbatches;
  auto g = global_lower_bound(*spec, P, M, spec->cluster.memory_gb);
  if (!g.ok()) return report_error(g.status());
  // Layers are never split: some device carries at least the best packing's largest load.
  const double packing_ms = layer_packing_bound_ms(spec->model, P, M);
  double bound_ms = g->bound_ms;
  std::string binding = g->binding;
  if (packing_ms > bound_ms) {
    bound_ms = packing_ms;
    binding = "layer_packing";
  }
  std::optional<PlanBound> plan;
  if (!a.partition.empty() || !a.placement.empty() || a.stages_per_device != 0) {
    auto pb = plan_bound(*spec, a);
    if (!pb.ok()) return report_error(pb.status());
    plan = *pb;
  }

  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = spec->model.name;
    j["devices"] = P;
    j["microbatches"] = M;
    j["bound_ms"] = bound_ms;
    j["binding"] = binding;
    j["terms_ms"] = {{"total_work", g->total_work_ms},
                     {"ramp", g->ramp_ms},
                     {"heaviest_layer", g->heaviest_layer_ms},
                     {"critical_path", g->critical_path_ms},
                     {"layer_packing", packing_ms}};
    j["heaviest_layer"] = g->heaviest_layer;
    j["model_state_gb"] = g->model_state_gb;
    j["memory_limit_gb"] = g->memory_limit_gb;
    j["min_devices_for_memory"] = g->min_devices_for_memory;
    j["memory_feasible"] = g->memory_feasible;
    if (!g->memory_feasible) j["memory_reason"] = g->memory_reason;
    if (plan) {
      nlohmann::ordered_json pj;
      nlohmann::ordered_json ranges = nlohmann::ordered_json::array();
      for (const auto& r : plan->partition) ranges.push_back({r.first, r.last});
      pj["partition"] = ranges;
      pj["placement"] = plan->placement;
      pj["bound_ms"] = plan->bound_ms;
      j["plan"] = pj;
    }
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::string s;
    s += fmt::format(
        "lower bound on the iteration time of '{}' on P = {} devices, M = {} microbatches\n",
        spec->model.name, P, M);
    s += "over all partitions, placements and orders (comm taken as free):\n";
    s += fmt::format("  total work / P                {:12.3f} ms\n", g->total_work_ms);
    s += fmt::format("  work + pipeline ramp / P      {:12.3f} ms\n", g->ramp_ms);
    s += fmt::format("  heaviest layer {:>4}: a_l+M·c_l {:11.3f} ms\n", g->heaviest_layer,
                     g->heaviest_layer_ms);
    s += fmt::format("  critical path                 {:12.3f} ms\n", g->critical_path_ms);
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
