// `pipesmith baseline MODEL.yaml --schedule KIND [...] -o OUT.yaml [--csv OUT.csv] [--svg OUT.svg]`
// — generate a published schedule (GPipe, 1F1B, interleaved 1F1B, ZB-H1/H2, ZB-V, DualPipeV) for
// the user's model, pass it through the checker and write it with its certificate.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/spec_flags.h"
#include "ir/dp_ops.h"
#include "ir/recompute.h"
#include "ir/units.h"
#include "report/report.h"
#include "synth/plan/plan_spec.h"
#include "ir/problem.h"
#include "ir/schedule_io.h"
#include "synth/baselines/baseline_plan.h"
#include "synth/plan/placement.h"
#include "verify/verify.h"

namespace ps::cli {

namespace {

struct BaselineArgs {
  SpecFlags spec;
  std::string schedule;
  int stages_per_device = 0;  // 0 = the schedule's default
  std::string partition = "balanced";
  std::string out_path;
  std::string csv_path;
  std::string svg_path;
  std::string recompute = "none";
};

std::string ranges_str(const Partition& p) {
  std::string out;
  for (size_t s = 0; s < p.size(); ++s) {
    if (s) out += " | ";
    out += p[s].first == p[s].last ? fmt::format("{}", p[s].first)
                                   : fmt::format("{}-{}", p[s].first, p[s].last);
  }
  return out;
}

int run_baseline_command(const BaselineArgs& a) {
  auto kind = parse_baseline_kind(a.schedule);
  if (!kind)
    return report_error(Status::bad_input(fmt::format("unknown schedule '{}': expected one of {}",
                                                      a.schedule, baseline_names_joined(", "))));
  if (Status st = check_outputs({{a.out_path, "-o"}, {a.csv_path, "--csv"}, {a.svg_path, "--svg"}},
                                {a.spec.model_path, a.spec.cluster_path});
      !st.is_ok())
    return report_error(st);
  auto spec = load_spec_from_flags(a.spec);
  if (!spec.ok()) return report_error(spec.status());
  if (Status st = check_stages_per_device(*spec, a.stages_per_device, "--stages-per-device"); !st.is_ok()) return report_error(st);
  auto partition = parse_partition_choice(a.partition);
  if (!partition.ok()) return report_error(partition.status());
  const auto recompute = read_recompute_mode(a.recompute, "--recompute");
  if (!recompute.ok()) return report_error(recompute.status());
  auto run = ps::run_baseline(*spec, BaselineRequest{*kind, a.stages_per_device, *partition, *recompute});
  if (!run.ok()) return report_error(run.status());
  const BaselineRun* plan = &*run;
  const Schedule& out = run->schedule;
  const Problem* problem = &out.problem;
  const Report& rep = run->report;
  const Simulation& sim = *rep.sim;
  const std::optional<GlobalBound>& gb = run->global;

  // Summary to stdout, or stderr when the schedule itself goes to stdout.
  FILE* info = a.out_path == "-" ? stderr : stdout;
  std::string s;
  s += fmt::format("pipesmith baseline {}: model '{}', P = {} devices, M = {} microbatches\n",
                   baseline_name(*kind), problem->name, problem->devices, problem->microbatches);
  s += fmt::format("  stages        {} ({} per device, {} placement), partition {}\n",
                   problem->num_stages(), problem->num_stages() / problem->devices,
                   placement_kind_name(classify_placement(plan->placement, problem->devices)),
                   plan->desc);
  s += fmt::format("  layers        {}\n", ranges_str(plan->partition));
  if (*recompute != RecomputeMode::kNone)
    s += fmt::format("  recompute     {} on every stage (R just before each backward)\n",
                     recompute_mode_name(*recompute));
  for (const auto& n : plan->notes) s += fmt::format("  note          {}\n", n);
  s += fmt::format("  checker       valid under {} semantics{}\n", semantics_name(rep.semantics),
                   rep.comms_inserted ? " (comms inserted by the shared rule)" : "");
  s += fmt::format("  iteration     {:.3f} ms\n", sim.makespan_ms);
  s += fmt::format(
      "  lower bound   {:.3f} ms for this partition and placement (iteration / bound = {:.3f})\n",
      rep.lower_bound_ms, rep.lower_bound_ms > 0 ? sim.makespan_ms / rep.lower_bound_ms : 0.0);
  if (gb)
    s += fmt::format("                {:.3f} ms over all partitions and placements ({})\n",
                     gb->bound_ms, gb->binding);
  s += fmt::format("  bubble ratio  {:.4f}\n", sim.bubble_ratio);
  if (needs_data_parallel_ops(rep.checked.problem))
    s += fmt::format("  data-parallel {:.3f} ms exposed after the pipeline's last op\n", sim.exposed_data_parallel_ms);
  double peak = 0;
  std::string peaks;
  for (size_t d = 0; d < sim.peak_memory_mb.size(); ++d) {
    peak = std::max(peak, sim.peak_memory_mb[d]);
    peaks += fmt::format("{}{:.2f}", d ? " " : "", mb_to_gb(sim.peak_memory_mb[d]));
  }
  double limit = spec->cluster.memory_gb;
  s += fmt::format("  peak memory   {:.2f} GB max{} (per device: {})\n", mb_to_gb(peak),
                   limit > 0 ? fmt::format(" of {:g} GB", limit) : std::string(), peaks);

  if (!a.out_path.empty()) {
    Status st = write_schedule_yaml(out, a.out_path);
    if (!st.is_ok()) return report_error(st);
    if (a.out_path != "-") s += fmt::format("wrote {}\n", a.out_path);
  }
  if (!a.csv_path.empty()) {
    Status st = check_pytorch_csv_exportable(out);
    if (st.is_ok()) st = write_text_file(a.csv_path, format_pytorch_csv(compute_only_view(out)));
    if (!st.is_ok()) return report_error(st);
    s += fmt::format("wrote {}\n", a.csv_path);
  }
  if (!a.svg_path.empty()) {
    std::string title = fmt::format("{} — {} (P={}, M={})", baseline_name(*kind), problem->name,
                                    problem->devices, problem->microbatches);
    Status st = write_text_file(a.svg_path, format_svg(rep, title));
    if (!st.is_ok()) return report_error(st);
    s += fmt::format("wrote {}\n", a.svg_path);
  }
  std::fputs(s.c_str(), info);
  return 0;
}

}  // namespace

Runner add_baseline(CLI::App& app) {
  auto args = std::make_shared<BaselineArgs>();
  auto* sub = app.add_subcommand(
      "baseline",
      "Generate a published pipeline schedule (GPipe, 1F1B, interleaved 1F1B, ZB-H1/H2, ZB-V, "
      "DualPipeV) for a model, check it and write it with its certificate");
  add_spec_flags(sub, &args->spec);
  sub->add_option("--schedule", args->schedule, "Schedule: " + baseline_names_joined("|"))
      ->required();
  sub->add_option("--stages-per-device", args->stages_per_device,
                  "Stages per device V (interleaved-1f1b: default 2; zbv/dualpipev: 2; others: 1)");
  sub->add_option("--partition", args->partition,
                  "balanced (default; min max stage F+I+W), balanced-memory (ties by memory), even "
                  "(Megatron's default) or a Megatron --pipeline-model-parallel-layout string");
  sub->add_option("--recompute", args->recompute,
                  "Activation recomputation on every stage: none (default), selective (attention "
                  "cores) or full (whole forward; keeps each layer's input)")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  sub->add_option("-o,--output", args->out_path,
                  "Schedule file to write (pipesmith-schedule/1 YAML; - = stdout)");
  sub->add_option("--csv", args->csv_path,
                  "Also write the compute order as a PyTorch pipelining CSV");
  sub->add_option("--svg", args->svg_path,
                  "Also write an SVG Gantt chart of the simulated schedule");
  return [args] { return run_baseline_command(*args); };
}

}  // namespace ps::cli
