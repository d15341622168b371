// `pipesmith plan MODEL.yaml --gpus N --global-batch B` — the meshes the model can run on N GPUs,
// the most promising synthesized, ranked (synth/mesh_plan.h); -o writes the best as a certified
// schedule.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "ir/json_write.h"
#include "ir/schedule_io.h"
#include "synth/mesh_plan.h"

namespace ps::cli {

namespace {

struct PlanArgs {
  std::string model_path, cluster_path, out_path;
  long long gpus = 0, global_batch = 0;
  std::optional<int> devices;
  std::optional<double> memory_gb;
  std::vector<std::string> fix;    // "tensor=8"
  std::vector<std::string> candidates;  // "pipeline=4,expert=8"
  int top = 4, evaluations = 20;
  double time_limit_s = 5;
  bool json = false, quiet = false;
};

// One KEY=VALUE of --fix or --candidate (`flag`, for messages) into a mesh and its pipeline.
Status read_dimension(const std::string& flag, const std::string& text, ParallelInput& mesh, std::optional<int>& pipeline) {
  const size_t eq = text.find('=');
  const std::string key = text.substr(0, eq == std::string::npos ? 0 : eq);
  const std::string value = eq == std::string::npos ? "" : text.substr(eq + 1);
  const std::string keys =
      "pipeline, tensor, context, expert, expert_tensor, data, micro_batch, optimizer, sequence_parallel, cp_comm_type";
  if (eq == std::string::npos || value.empty())
    return Status::bad_input(fmt::format("{} '{}': expected KEY=VALUE with KEY one of {}", flag, excerpt(text), keys));
  if (key == "optimizer") {
    if (!parse_optimizer(value))
      return Status::bad_input(fmt::format("{} optimizer={}: expected replicated, distributed or fsdp", flag, excerpt(value)));
    mesh.optimizer = value;
    return Status::ok();
  }
  if (key == "cp_comm_type") {
    if (!parse_cp_comm(value))
      return Status::bad_input(fmt::format("{} cp_comm_type={}: expected p2p or all_gather", flag, excerpt(value)));
    mesh.cp_comm = value;
    return Status::ok();
  }
  if (key == "sequence_parallel") {
    if (value != "true" && value != "false")
      return Status::bad_input(fmt::format("{} sequence_parallel={}: expected true or false", flag, excerpt(value)));
    mesh.sequence_parallel = value == "true";
    return Status::ok();
  }
  // Each dimension's range is the options table's (pipeline: plan --devices').
  namespace opt = limits::option;
  const limits::IntOption* o = key == "pipeline"        ? &opt::kMeshDevices
                               : key == "tensor"        ? &opt::kMeshTensor
                               : key == "context"       ? &opt::kMeshContext
                               : key == "expert"        ? &opt::kMeshExpert
                               : key == "expert_tensor" ? &opt::kMeshExpertTensor
                               : key == "data"          ? &opt::kMeshData
                               : key == "micro_batch"   ? &opt::kMeshMicroBatch
                                                        : nullptr;
  if (!o)
    return Status::bad_input(fmt::format("{} '{}': unknown dimension '{}' (expected one of {})", flag, excerpt(text),
                                         excerpt(key), keys));
  Result<long long> v = flags::option_value(*o, value);
  if (!v.ok()) return Status::bad_input(fmt::format("{} {}: {}", flag, excerpt(key), v.status().message()));
  if (key == "pipeline") pipeline = static_cast<int>(*v);
  else if (key == "tensor") mesh.tensor = *v;
  else if (key == "context") mesh.context = *v;
  else if (key == "expert") mesh.expert = *v;
  else if (key == "expert_tensor") mesh.expert_tensor = *v;
  else if (key == "data") mesh.data = *v;
  else mesh.micro_batch = *v;
  return Status::ok();
}

// --candidate pipeline=P,KEY=VALUE,...: a mesh always synthesized.
Result<MeshCandidate> read_candidate(const std::string& text) {
  MeshCandidate c;
  std::optional<int> pipeline;
  size_t from = 0;
  while (from <= text.size()) {
    const size_t comma = std::min(text.find(',', from), text.size());
    if (Status st = read_dimension("--candidate", text.substr(from, comma - from), c.mesh, pipeline); !st.is_ok()) return st;
    from = comma + 1;
  }
  if (!pipeline)
    return Status::bad_input(fmt::format("--candidate '{}': the pipeline's devices are not given (pipeline=P)", excerpt(text)));
  c.pipeline = *pipeline;
  return c;
}

std::string text_table(const PlanArgs& a, const MeshPlan& plan) {
  std::string out = fmt::format("pipesmith plan: {} GPUs, global batch {} sequences; {} meshes, {} refused by the model, "
                                "{} pruned by memory or dominance, {} pruned by their lower bound; {} synthesized, {} got a schedule\n",
                                a.gpus, a.global_batch, plan.enumerated, plan.refused, plan.pruned, plan.pruned_by_bound,
                                plan.attempted, plan.synthesized);
  out += fmt::format("{:>4}  {:<48} {:>6} {:>6} {:>12} {:>12} {:>9} {:>6} {:>8} {:>7}  {}\n", "rank", "mesh", "M", "stages",
                     "iteration ms", "tokens/s", "TFLOP/s", "MFU", "peak GB", "bubble", "note");
  int rank = 0;
  for (const MeshPlanRow& r : plan.rows) {
    const std::string mesh = fmt::format("{}, {}{}", mesh_description(r), optimizer_name(r.optimizer), r.candidate ? " (candidate)" : "");
    if (r.synthesized)
      out += fmt::format("{:>4}  {:<48} {:>6} {:>6} {:>12.3f} {:>12.0f} {:>9.1f} {:>5.1f}% {:>8.1f} {:>6.1f}%\n", ++rank, mesh,
                         r.microbatches, r.stages, r.iteration_ms, r.tokens_per_s, r.tflops_per_gpu, 100 * r.mfu,
                         r.peak_memory_gb, 100 * r.bubble);
    else
      out += fmt::format("{:>4}  {:<48} {:>6} {:>6} {:>12} {:>12} {:>9} {:>6} {:>8} {:>7}  {}\n", "-", mesh, r.microbatches, "-",
                         fmt::format("~{:.0f}", r.estimate_ms), "-", "-", "-", "-", "-", r.note);
  }
  return out;
}

std::string json_table(const PlanArgs& a, const MeshPlan& plan) {
  using J = nlohmann::ordered_json;
  J rows = J::array();
  for (const MeshPlanRow& r : plan.rows)
    rows.push_back(J{{"pipeline", r.pipeline},
                     {"data", r.data},
                     {"context", r.context},
                     {"tensor", r.tensor},
                     {"expert", r.expert},
                     {"expert_tensor", r.expert_tensor},
                     {"micro_batch", r.micro_batch},
                     {"sequence_parallel", r.sequence_parallel},
                     {"cp_comm_type", cp_comm_name(r.cp_comm)},
                     {"optimizer", optimizer_name(r.optimizer)},
                     {"candidate", r.candidate},
                     {"microbatches", r.microbatches},
                     {"estimate_ms", r.estimate_ms},
                     {"bound_ms", r.bound_ms},
                     {"synthesized", r.synthesized},
                     {"stages", r.stages},
                     {"iteration_ms", r.iteration_ms},
                     {"tokens_per_s", r.tokens_per_s},
                     {"tflops_per_gpu", r.tflops_per_gpu},
                     {"mfu", r.mfu},
                     {"peak_memory_gb", r.peak_memory_gb},
                     {"bubble_ratio", r.bubble},
                     {"note", r.note}});
  J j{{"gpus", a.gpus},       {"global_batch", a.global_batch}, {"enumerated", plan.enumerated},
      {"refused", plan.refused}, {"pruned", plan.pruned},         {"pruned_by_bound", plan.pruned_by_bound},
      {"attempted", plan.attempted}, {"synthesized", plan.synthesized}, {"rows", rows}};
  return dump_json(j, 2) + "\n";
}

int run_plan(const PlanArgs& a) {
  const std::string megatron_path = a.out_path.empty() || a.out_path == "-" ? "" : a.out_path + ".megatron.args";
  const std::string titan_path = a.out_path.empty() || a.out_path == "-" ? "" : a.out_path + ".torchtitan.toml";
  if (Status st = check_outputs({{a.out_path, "-o"}, {megatron_path, "-o"}, {titan_path, "-o"}},
                                a.cluster_path.empty() ? std::vector<std::string>{a.model_path}
                                                       : std::vector<std::string>{a.model_path, a.cluster_path});
      !st.is_ok())
    return report_error(st);
  MeshPlanOptions o;
  o.pinned.gpus = a.gpus;
  o.pinned.global_batch = a.global_batch;
  o.pipeline = a.devices;
  o.memory_gb = a.memory_gb;
  o.top = a.top;
  o.evaluations = a.evaluations;
  o.time_limit_s = a.time_limit_s;
  for (const std::string& f : a.fix)
    if (Status st = read_dimension("--fix", f, o.pinned, o.pipeline); !st.is_ok()) return report_error(st);
  for (const std::string& g : a.candidates) {
    Result<MeshCandidate> c = read_candidate(g);
    if (!c.ok()) return report_error(c.status());
    o.candidates.push_back(std::move(*c));
  }
  if (!a.quiet)
    o.progress = [](const MeshPlanProgress& p) {
      const std::string best =
          p.best_ms > 0 ? fmt::format("best {:.3f} ms ({})", p.best_ms, p.best_mesh) : std::string("no schedule yet");
      if (!p.done)
        std::fprintf(stderr, "plan: [%d/%d] synthesizing %s, %s ...; %s\n", p.index, p.planned,
                     mesh_description(*p.row).c_str(), optimizer_name(p.row->optimizer), best.c_str());
      else {
        const std::string got = p.row->synthesized ? fmt::format("{:.3f} ms", p.row->iteration_ms) : "no schedule";
        std::fprintf(stderr, "plan: [%d/%d] %s: %s; %s, %d pruned by their bound\n", p.index, p.planned,
                     mesh_description(*p.row).c_str(), got.c_str(), best.c_str(), p.pruned_by_bound);
      }
    };
  Result<MeshPlan> plan = plan_meshes(a.model_path, a.cluster_path, o);
  if (!plan.ok()) return report_error(plan.status());
  std::string text = a.json ? json_table(a, *plan) : text_table(a, *plan);
  if (!a.out_path.empty()) {
    if (Status st = write_schedule_yaml(plan->best->result.schedule, a.out_path); !st.is_ok()) return report_error(st);
    if (!a.json && a.out_path != "-") text += fmt::format("wrote {} (rank 1)\n", a.out_path);
    if (!megatron_path.empty()) {  // the framework settings beside it
      std::string why;
      std::string args = megatron_arguments(plan->rows.front(), *plan->best_spec, plan->best->problem, why);
      if (args.empty()) args = "# Megatron-LM cannot run this plan: " + why + "\n";
      if (Status st = write_text_file(megatron_path, args); !st.is_ok()) return report_error(st);
      if (Status st = write_text_file(titan_path, torchtitan_fragment(plan->rows.front(), *plan->best_spec)); !st.is_ok())
        return report_error(st);
      if (!a.json) text += fmt::format("wrote {}\nwrote {}\n", megatron_path, titan_path);
    }
  }
  if (Status st = write_text_file("-", text); !st.is_ok()) return report_error(st);
  return 0;
}

}  // namespace

Runner add_plan(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand(
      "plan",
      "Choose the mesh with the schedule: enumerate the meshes (pipeline, tensor, context, expert, expert-tensor, "
      "data, micro-batch, optimizer; docs/mesh.md) the model can run on --gpus GPUs, refuse those the model cannot "
      "split, prune those whose model states do not fit, synthesize the --candidate meshes and the --top best by an "
      "estimate (each with --evaluations candidates: deterministic), skipping those whose lower bound is no better "
      "than the best so far, and rank them by iteration time.");
  sub->add_option("model", args->model_path, "Model YAML")->required();
  sub->add_option("--cluster", args->cluster_path, "Cluster YAML (its gpus_per_node and links place the groups)");
  sub->add_option("--gpus", args->gpus, "GPUs of the mesh")->required()
      ->check(flags::option(limits::option::kMeshGpus));
  sub->add_option("--global-batch", args->global_batch, "Sequences per iteration")
      ->required()
      ->check(flags::option(limits::option::kMeshGlobalBatch));
  sub->add_option("--devices", args->devices, "Pin the pipeline's devices P (same as --fix pipeline=P)")
      ->check(flags::option(limits::option::kMeshDevices));
  sub->add_option("--memory-limit-gb", args->memory_gb, "Memory per GPU in GB (overrides cluster.memory_gb; 0 = unlimited)")
      ->check(flags::memory_limit_gb());
  sub->add_option("--fix", args->fix,
                  "Pin a dimension: pipeline=P, tensor=T, context=C, expert=E, expert_tensor=ET, data=D, micro_batch=B, "
                  "optimizer=WORD, sequence_parallel=true|false, cp_comm_type=p2p|all_gather (repeatable)");
  sub->add_option("--candidate", args->candidates,
                  "A mesh always synthesized and ranked with the rest: pipeline=P[,tensor=T,context=C,expert=E,"
                  "expert_tensor=ET,data=D,micro_batch=B,optimizer=WORD,sequence_parallel=true|false,"
                  "cp_comm_type=p2p|all_gather] (repeatable; "
                  "unset dimensions 1, the optimizer distributed)");
  sub->add_option("--top", args->top,
                  "Enumerated meshes to get a schedule, tried in the estimate's order (at most 2 x N tries once one has "
                  "one; default 4)")
      ->check(flags::option(limits::option::kMeshTop));
  sub->add_option("--evaluations", args->evaluations, "Search budget of each synthesis in candidates (default 20)")
      ->check(flags::option(limits::option::kMeshEvaluations));
  sub->add_option("--time-limit", args->time_limit_s,
                  "Time limit of each synthesis in seconds, as synth's --time-limit with --evaluations: it sizes Z3's "
                  "resource limit only (default 5)")
      ->transform(flags::time_limit_s());
  sub->add_flag("--json", args->json, "Print the rows as JSON");
  sub->add_flag("--quiet", args->quiet, "No progress lines on stderr");
  sub->add_option("-o,--output", args->out_path, "Write the best mesh's certified schedule (pipesmith-schedule/1 YAML)");
  sub->footer("Exit codes: 0 ok, 1 bad input or usage, 2 no mesh gets a schedule.");
  return [args] { return run_plan(*args); };
}

}  // namespace ps::cli
