// mesh_plan.cpp — see mesh_plan.h: enumerate, read each mesh through load_spec, prune by memory,
// estimate, synthesize the best few, rank.
#include "synth/mesh_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "synth/plan/megatron_layout.h"
#include "synth/plan/placement.h"

namespace ps {

namespace {

std::vector<int> divisors(long long n, long long at_most) {
  std::vector<int> out;
  for (long long d = 1; d <= std::min(n, at_most); ++d)
    if (n % d == 0) out.push_back(static_cast<int>(d));
  return out;
}

std::vector<int> powers_of_two(long long at_most) {
  std::vector<int> out;
  for (long long d = 1; d <= at_most; d *= 2) out.push_back(static_cast<int>(d));
  return out;
}

// Fills a row's figures from a resolved spec: the ranking estimate, or why the mesh cannot fit.
void estimate(const Spec& spec, MeshPlanRow& row) {
  const int P = spec.cluster.devices, M = spec.pipeline.microbatches;
  double work_ms = 0, state_mb = 0, worst_layer_mb = 0;
  for (const Layer& l : spec.model.layers) {
    const LayerType& t = spec.model.type_of(l.id);
    work_ms += t.forward_ms + t.backward_input_ms + t.backward_weight_ms;
    const double mb = t.params_m * spec.pipeline.bytes_per_param;
    state_mb += mb;
    worst_layer_mb = std::max(worst_layer_mb, mb + t.activation_mb);
  }
  row.estimate_ms = (M + P - 1) * work_ms / P;
  const double limit_mb = spec.cluster.memory_gb * 1000;
  if (limit_mb > 0 && state_mb / P > limit_mb)
    row.note = fmt::format("pruned: model states {:.1f} GB per GPU even split evenly over {} devices", state_mb / P / 1000, P);
  else if (limit_mb > 0 && worst_layer_mb > limit_mb)
    row.note = fmt::format("pruned: one layer's model states and activation take {:.1f} GB", worst_layer_mb / 1000);
}

}  // namespace

std::string megatron_arguments(const MeshPlanRow& row, const Spec& spec, const Problem& problem, std::string& why) {
  const PlacementKind kind = classify_placement([&] {
    std::vector<int> p;
    for (const StageSpec& st : problem.stages) p.push_back(st.device);
    return p;
  }(), problem.devices);
  if (spec.mesh->optimizer == OptimizerSharding::kFsdp) {
    why = "the plan shards with FSDP (ZeRO-3), which Megatron-LM runs only through its own FSDP options";
    return "";
  }
  if (kind != PlacementKind::kSequential && kind != PlacementKind::kLooped) {
    why = fmt::format("the plan places its {} stages {} on {} devices; Megatron-LM runs a stage per device or "
                      "looped virtual stages only",
                      problem.num_stages(), placement_kind_name(kind), problem.devices);
    return "";
  }
  std::string layout;
  for (int s = 0; s < problem.num_stages(); ++s) {
    if (s > 0) layout += '|';
    for (int l = problem.stages[s].first_layer; l <= problem.stages[s].last_layer; ++l)
      layout += megatron_kind(spec.model, l);
  }
  const Mesh& m = *spec.mesh;
  std::string a = fmt::format(
      "--tensor-model-parallel-size {} --pipeline-model-parallel-size {} --context-parallel-size {} "
      "--expert-model-parallel-size {} --expert-tensor-parallel-size {} --micro-batch-size {} --global-batch-size {}",
      row.tensor, row.pipeline, row.context, row.expert, m.expert_tensor, m.micro_batch, m.global_batch);
  if (m.sequence_parallel) a += " --sequence-parallel";
  if (m.optimizer == OptimizerSharding::kDistributed) a += " --use-distributed-optimizer";
  a += fmt::format(" --pipeline-model-parallel-layout \"{}\"", layout);
  return a + "\n";
}

std::string torchtitan_fragment(const MeshPlanRow& row, const Spec& spec) {
  const Mesh& m = *spec.mesh;
  const bool shard = m.optimizer != OptimizerSharding::kReplicated;  // torchtitan shards with FSDP (ZeRO-3)
  std::string t = "[parallelism]\n";
  t += fmt::format("pipeline_parallel_degree = {}\n", row.pipeline);
  t += fmt::format("tensor_parallel_degree = {}\n", row.tensor);
  t += fmt::format("context_parallel_degree = {}\n", row.context);
  t += fmt::format("expert_parallel_degree = {}\n", row.expert);
  t += fmt::format("expert_tensor_parallel_degree = {}\n", m.expert_tensor);
  t += fmt::format("data_parallel_shard_degree = {}\n", shard ? row.data : 1);
  t += fmt::format("data_parallel_replicate_degree = {}\n", shard ? 1 : row.data);
  t += fmt::format("pipeline_parallel_microbatch_size = {}\n", m.micro_batch);
  t += "# pipeline_parallel_schedule_csv and module_fqns_per_model_part: `pipesmith export SCHEDULE --to pytorch "
       "--model MODEL -o DIR`, then pipesmith.torch.titan.pipelining_fn(DIR)\n";
  if (m.optimizer == OptimizerSharding::kDistributed)
    t += "# the plan's distributed optimizer (ZeRO-1) has no torchtitan equivalent: FSDP (ZeRO-3) shards more\n";
  t += "[training]\n";
  t += fmt::format("local_batch_size = {}\n", m.global_batch / row.data);
  t += fmt::format("global_batch_size = {}\n", m.global_batch);
  t += fmt::format("seq_len = {}\n", m.seq_length);
  return t;
}

Result<MeshPlan> plan_meshes(const std::string& model_path, const std::string& cluster_path,
                             const MeshPlanOptions& opt) {
  const ParallelInput& pin = opt.pinned;
  if (!pin.gpus) return Status::bad_input("plan: the number of GPUs is not given (gpus)");
  if (!pin.global_batch) return Status::bad_input("plan: the global batch is not given (global_batch, in sequences)");
  // The model alone: its layers, node size and routed experts bound the space.
  SpecOverrides plain;
  plain.devices = 1;
  plain.microbatches = 1;
  Result<Spec> base = load_spec(model_path, cluster_path, plain);
  if (!base.ok()) return base.status();
  const long long G = *pin.gpus;
  const int layers = static_cast<int>(base->model.layers.size());
  const int node = base->cluster.gpus_per_node > 0 ? base->cluster.gpus_per_node
                   : base->cluster.devices_per_node > 0 ? base->cluster.devices_per_node
                                                         : 8;
  bool moe = false;  // expert parallelism is enumerated for a model with MoE layers
  for (const auto& [sym, t] : base->model.types) moe = moe || t.kind.find("moe") != std::string::npos || t.kind == "mtp";

  std::vector<int> pipelines = opt.pipeline ? std::vector<int>{*opt.pipeline} : divisors(G, std::min(layers, 64));
  std::vector<int> tensors = pin.tensor ? std::vector<int>{static_cast<int>(*pin.tensor)} : powers_of_two(node);
  std::vector<int> expert_degrees =
      pin.expert ? std::vector<int>{static_cast<int>(*pin.expert)} : moe ? powers_of_two(G) : std::vector<int>{1};
  const int context = static_cast<int>(pin.context.value_or(1));

  MeshPlan plan;
  std::vector<std::pair<MeshPlanRow, Spec>> fit;
  for (int P : pipelines) {
    for (int T : tensors) {
      if (G % (static_cast<long long>(P) * T * context) != 0) continue;
      const long long D = G / (static_cast<long long>(P) * T * context);
      if (pin.data && *pin.data != D) continue;
      for (int E : expert_degrees) {
        if ((D * context * T) % (static_cast<long long>(E) * pin.expert_tensor.value_or(1)) != 0) continue;
        ++plan.enumerated;
        SpecOverrides o;
        o.devices = P;
        o.memory_gb = opt.memory_gb;
        o.parallel = pin;
        o.parallel.tensor = T;
        o.parallel.context = context;
        o.parallel.expert = E;
        if (!pin.optimizer) o.parallel.optimizer = "distributed";
        if (!pin.sequence_parallel) o.parallel.sequence_parallel = T > 1;
        MeshPlanRow row;
        row.pipeline = P, row.tensor = T, row.context = context, row.expert = E, row.data = static_cast<int>(D);
        Result<Spec> spec = load_spec(model_path, cluster_path, o);
        if (!spec.ok()) {  // heads, experts, batch or nodes do not divide: not a mesh of this model
          ++plan.refused;
          continue;
        }
        row.microbatches = spec->pipeline.microbatches;
        row.sequence_parallel = spec->mesh->sequence_parallel;
        row.optimizer = spec->mesh->optimizer;
        estimate(*spec, row);
        if (!row.note.empty()) {
          ++plan.pruned;
          plan.rows.push_back(row);
          continue;
        }
        fit.emplace_back(row, std::move(*spec));
      }
    }
  }
  std::stable_sort(fit.begin(), fit.end(), [](const auto& a, const auto& b) { return a.first.estimate_ms < b.first.estimate_ms; });
  std::vector<MeshPlanRow> done;
  double best_ms = 0;
  for (size_t i = 0; i < fit.size(); ++i) {
    MeshPlanRow& row = fit[i].first;
    if (static_cast<int>(i) >= opt.top) {
      row.note = "not synthesized (below the top by the estimate)";
      done.push_back(row);
      continue;
    }
    ModelSynthOptions so;
    so.evaluations = opt.evaluations;
    so.time_limit_s = opt.time_limit_s;
    so.seed = opt.seed;
    Result<ModelSynthesis> m = synthesize_model(fit[i].second, so);
    if (!m.ok()) {
      row.note = fmt::format("no schedule: {}", m.status().message());
      done.push_back(row);
      continue;
    }
    row.synthesized = true;
    row.stages = m->problem.num_stages();
    row.iteration_ms = m->result.makespan_ms;
    const Throughput t = mesh_throughput(m->problem.mesh, row.iteration_ms);
    row.tokens_per_s = t.tokens_per_s, row.tflops_per_gpu = t.tflops_per_gpu, row.mfu = t.mfu;
    if (m->result.report.sim) {
      for (double mb : m->result.report.sim->peak_memory_mb) row.peak_memory_gb = std::max(row.peak_memory_gb, mb / 1000);
      row.bubble = m->result.report.sim->bubble_ratio;
    }
    if (!plan.best || row.iteration_ms < best_ms) {
      best_ms = row.iteration_ms;
      plan.best = std::move(*m);
      plan.best_spec = fit[i].second;
    }
    done.push_back(row);
  }
  if (!plan.best)
    return Status::error(ErrorCode::kInfeasible,
                         fmt::format("plan: none of the {} meshes of {} GPUs got a schedule ({} refused by the model, "
                                     "{} pruned by memory)",
                                     plan.enumerated, G, plan.refused, plan.pruned));
  // Synthesized rows by iteration, then the rest by estimate; the pruned last.
  std::stable_sort(done.begin(), done.end(), [](const MeshPlanRow& a, const MeshPlanRow& b) {
    if (a.synthesized != b.synthesized) return a.synthesized;
    return a.synthesized ? a.iteration_ms < b.iteration_ms : a.estimate_ms < b.estimate_ms;
  });
  done.insert(done.end(), plan.rows.begin(), plan.rows.end());
  plan.rows = std::move(done);
  return plan;
}

}  // namespace ps
