// mesh_plan.cpp — see mesh_plan.h: enumerate, read each mesh through load_spec, prune by memory,
// estimate, synthesize the best few, rank.
#include "synth/mesh_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "ir/limits.h"
#include "ir/units.h"
#include "synth/bounds/model_bound.h"
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
// The estimate charges the recomputation the memory forces: a 1F1B order holds min(M, P)
// microbatches of a device's activations; where they exceed what its share of the model states
// leaves, the fraction r of the layers' droppable activation (activation - what full recomputation
// keeps) that must go is recomputed, r x the layers' full-recomputation time added to the work.
void estimate(const Spec& spec, MeshPlanRow& row) {
  const int P = spec.cluster.devices, M = spec.pipeline.microbatches;
  double work_ms = 0, recompute_ms = 0, state_mb = 0, act_mb = 0, droppable_mb = 0, worst_layer_mb = 0;
  for (const Layer& l : spec.model.layers) {
    const LayerType& t = spec.model.type_of(l.id);
    work_ms += t.forward_ms + t.backward_input_ms + t.backward_weight_ms;
    recompute_ms += t.recompute_full.ms;
    auto mt = spec.mesh_types.find(t.symbol);  // FSDP's gathered part counts while the stage runs
    const double mb = t.params_m * spec.pipeline.bytes_per_param + (mt != spec.mesh_types.end() ? mt->second.unsharded_mb : 0.0);
    state_mb += mb;
    act_mb += t.activation_mb;
    droppable_mb += std::max(0.0, t.activation_mb - t.recompute_full.kept_mb);
    worst_layer_mb = std::max(worst_layer_mb, mb + t.activation_mb);
  }
  const double limit_mb = spec.cluster.memory_gb * 1000;
  const double in_flight = std::min(M, P);
  double extra_ms = 0;
  if (limit_mb > 0 && droppable_mb > 0) {
    const double over_mb = state_mb / P + in_flight * act_mb / P - limit_mb;
    const double r = std::clamp(over_mb / (in_flight * droppable_mb / P), 0.0, 1.0);
    extra_ms = r * recompute_ms;
  }
  row.estimate_ms = (M + P - 1) * (work_ms + extra_ms) / P;
  if (limit_mb > 0 && state_mb / P > limit_mb)
    row.note = fmt::format("pruned: model states {:.1f} GB per GPU even split evenly over {} devices", state_mb / P / 1000, P);
  else if (limit_mb > 0 && worst_layer_mb > limit_mb)
    row.note = fmt::format("pruned: one layer's model states and activation take {:.1f} GB", worst_layer_mb / 1000);
}

// Model-state memory of one GPU over the whole model (MB): what tells optimizers apart on one mesh.
double state_mb(const Spec& spec) {
  double mb = 0;
  for (const Layer& l : spec.model.layers) mb += spec.model.type_of(l.id).params_m * spec.pipeline.bytes_per_param;
  return mb;
}

// Whether two specs of one mesh give every layer the same per-GPU times.
bool same_times(const Spec& a, const Spec& b) {
  if (a.model.layers.size() != b.model.layers.size()) return false;
  for (size_t i = 0; i < a.model.layers.size(); ++i) {
    const LayerType& x = a.model.type_of(static_cast<int>(i));
    const LayerType& y = b.model.type_of(static_cast<int>(i));
    if (x.forward_ms != y.forward_ms || x.backward_input_ms != y.backward_input_ms ||
        x.backward_weight_ms != y.backward_weight_ms || x.fused_backward_ms() != y.fused_backward_ms() ||
        x.recompute_full.ms != y.recompute_full.ms || x.recompute_selective.ms != y.recompute_selective.ms ||
        x.output_mb != y.output_mb)
      return false;
  }
  return a.pipeline.microbatches == b.pipeline.microbatches;
}

// The mesh dimensions of a row: equal keys are the same mesh.
std::tuple<int, int, int, int, int, int, int, bool, int, int> mesh_key(const MeshPlanRow& r) {
  return {r.pipeline, r.tensor,      r.context, r.expert, r.expert_tensor, r.data, r.micro_batch, r.sequence_parallel,
          static_cast<int>(r.optimizer), static_cast<int>(r.cp_comm)};
}

struct Resolved {
  MeshPlanRow row;
  Spec spec;
};

// Reads one mesh through load_spec; the row holds its dimensions as resolved.
Result<Resolved> resolve(const std::string& model_path, const std::string& cluster_path, const MeshPlanOptions& opt,
                         int pipeline, const ParallelInput& mesh) {
  SpecOverrides o;
  o.devices = pipeline;
  o.memory_gb = opt.memory_gb;
  o.parallel = mesh;
  o.parallel.gpus = opt.pinned.gpus;
  o.parallel.global_batch = opt.pinned.global_batch;
  if (!o.parallel.optimizer) o.parallel.optimizer = "distributed";
  if (!o.parallel.sequence_parallel) o.parallel.sequence_parallel = o.parallel.tensor.value_or(1) > 1;
  Result<Spec> spec = load_spec(model_path, cluster_path, o);
  if (!spec.ok()) return spec.status();
  const Mesh& m = *spec->mesh;
  MeshPlanRow row;
  row.pipeline = pipeline, row.tensor = m.tensor, row.context = m.context, row.expert = m.expert;
  row.expert_tensor = m.expert_tensor, row.data = m.data, row.micro_batch = m.micro_batch;
  row.microbatches = spec->pipeline.microbatches;
  row.sequence_parallel = m.sequence_parallel;
  row.optimizer = m.optimizer;
  row.cp_comm = m.cp_comm;
  return Resolved{row, std::move(*spec)};
}

// The mesh's lower bound (model_bound: no partition, placement or order is shorter); the estimate
// never ranks a mesh below it (a layer that cannot split, the head at many microbatches, binds
// where the even spread of the work does not).
void bound(Resolved& r) {
  Result<ModelBound> b = model_bound(r.spec, std::nullopt, 0);
  if (!b.ok()) return;
  r.row.bound_ms = b->bound_ms;
  r.row.estimate_ms = std::max(r.row.estimate_ms, b->bound_ms);
}

std::string candidate_words(const MeshCandidate& c) {
  const ParallelInput& m = c.mesh;
  std::string s = fmt::format("pipeline={}", c.pipeline);
  const auto add = [&](const char* key, const std::optional<long long>& v) {
    if (v) s += fmt::format(",{}={}", key, *v);
  };
  add("tensor", m.tensor), add("context", m.context), add("expert", m.expert), add("expert_tensor", m.expert_tensor);
  add("data", m.data), add("micro_batch", m.micro_batch);
  if (m.optimizer) s += ",optimizer=" + *m.optimizer;
  if (m.sequence_parallel) s += fmt::format(",sequence_parallel={}", *m.sequence_parallel);
  if (m.cp_comm) s += ",cp_comm_type=" + *m.cp_comm;
  return s;
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
  if (m.context > 1) a += fmt::format(" --cp-comm-type {}", cp_comm_name(m.cp_comm));
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
  if (m.context > 1)
    t += m.cp_comm == CpComm::kAllGather
             ? "# cp_comm_type all_gather: PyTorch's default context-parallel rotate method (\"allgather\")\n"
             : "# cp_comm_type p2p: torch.distributed.tensor.experimental._attention.set_rotate_method(\"alltoall\") "
               "before training (PyTorch's default is \"allgather\"; torchtitan 0.3.0 has no field for it)\n";
  if (m.optimizer == OptimizerSharding::kDistributed)
    t += "# the plan's distributed optimizer (ZeRO-1) has no torchtitan equivalent: FSDP (ZeRO-3) shards more\n";
  t += "[training]\n";
  t += fmt::format("local_batch_size = {}\n", m.global_batch / row.data);
  t += fmt::format("global_batch_size = {}\n", m.global_batch);
  t += fmt::format("seq_len = {}\n", m.seq_length);
  return t;
}

std::string mesh_description(const MeshPlanRow& r) {
  std::string s = fmt::format("PP {} x DP {} x CP {}{} x TP {}{}", r.pipeline, r.data, r.context,
                              r.context > 1 && r.cp_comm == CpComm::kAllGather ? " (all_gather)" : "", r.tensor,
                              r.sequence_parallel ? " SP" : "");
  if (r.expert > 1) s += fmt::format(", EP {}", r.expert);
  if (r.expert_tensor > 1) s += fmt::format(", ETP {}", r.expert_tensor);
  if (r.micro_batch > 1) s += fmt::format(", b {}", r.micro_batch);
  return s;
}

namespace {

// Every mesh of the space (mesh_plan.h) read through load_spec: the fit ones (by estimate), the
// pruned ones as rows; counts in `plan`.
void enumerate(const std::string& model_path, const std::string& cluster_path, const MeshPlanOptions& opt,
               const Spec& base, long long seq_length, MeshPlan& plan, std::vector<Resolved>& fit) {
  const ParallelInput& pin = opt.pinned;
  const long long G = *pin.gpus;
  const int layers = static_cast<int>(base.model.layers.size());
  const int node = base.cluster.gpus_per_node > 0 ? base.cluster.gpus_per_node
                   : base.cluster.devices_per_node > 0 ? base.cluster.devices_per_node
                                                        : 8;
  bool moe = false;  // expert parallelism is enumerated for a model with MoE layers
  for (const auto& [sym, t] : base.model.types) moe = moe || t.kind.find("moe") != std::string::npos || t.kind == "mtp";
  const auto pinned_or = [](const std::optional<long long>& v, std::vector<int> all) {
    return v ? std::vector<int>{static_cast<int>(*v)} : all;
  };
  const std::vector<int> pipelines = opt.pipeline ? std::vector<int>{*opt.pipeline} : divisors(G, std::min(layers, 64));
  const std::vector<int> tensors = pinned_or(pin.tensor, powers_of_two(node));
  const std::vector<int> contexts =
      pinned_or(pin.context, powers_of_two(std::max<long long>(1, seq_length / kMinContextChunk)));
  const std::vector<int> expert_degrees = pinned_or(pin.expert, moe ? powers_of_two(G) : std::vector<int>{1});
  const std::vector<int> micro_batches = pinned_or(pin.micro_batch, {1, 2, 4});
  const std::vector<std::string> optimizers =
      pin.optimizer ? std::vector<std::string>{*pin.optimizer} : std::vector<std::string>{"distributed", "replicated", "fsdp"};

  for (int P : pipelines)
    for (int T : tensors)
      for (int C : contexts) {
        const long long PTC = static_cast<long long>(P) * T * C;
        if (G % PTC != 0) continue;
        const long long D = G / PTC;
        if (pin.data && *pin.data != D) continue;
        for (int E : expert_degrees) {
          std::vector<int> ets = pinned_or(pin.expert_tensor, E > 1 && T > 1 ? std::vector<int>{1, T} : std::vector<int>{1});
          for (int ET : ets) {
            if ((D * C * T) % (static_cast<long long>(E) * ET) != 0) continue;
            for (int b : micro_batches) {
              if (*pin.global_batch % (static_cast<long long>(b) * D) != 0) continue;
              std::vector<Resolved> same_mesh;  // one per optimizer
              for (const std::string& optimizer : optimizers) {
                ++plan.enumerated;
                ParallelInput m = pin;
                m.tensor = T, m.context = C, m.expert = E, m.expert_tensor = ET, m.micro_batch = b, m.optimizer = optimizer;
                Result<Resolved> r = resolve(model_path, cluster_path, opt, P, m);
                if (!r.ok()) {  // heads, experts, batch or nodes do not divide: not a mesh of this model
                  ++plan.refused;
                  continue;
                }
                estimate(r->spec, r->row);
                if (!r->row.note.empty()) {
                  ++plan.pruned;
                  plan.rows.push_back(r->row);
                  continue;
                }
                bound(*r);
                same_mesh.push_back(std::move(*r));
              }
              // The distributed optimizer wins on this mesh over another with the same per-GPU layer
              // times and no less memory: its data-parallel step, a reduce-scatter, is never longer
              // than replicated's all-reduce or FSDP's reduce-scatter and gathers.
              for (size_t i = 0; i < same_mesh.size(); ++i) {
                const Resolved* better = nullptr;
                for (size_t j = 0; j < same_mesh.size() && !better; ++j) {
                  const double mine = state_mb(same_mesh[i].spec), theirs = state_mb(same_mesh[j].spec);
                  if (j != i && same_mesh[j].row.optimizer == OptimizerSharding::kDistributed &&
                      same_times(same_mesh[i].spec, same_mesh[j].spec) && theirs <= mine)
                    better = &same_mesh[j];
                }
                if (!better) {
                  fit.push_back(same_mesh[i]);
                  continue;
                }
                MeshPlanRow row = same_mesh[i].row;
                row.note = fmt::format(
                    "pruned: the {} optimizer on this mesh has the same layer times, no more memory and a "
                    "data-parallel step no longer",
                    optimizer_name(better->row.optimizer));
                ++plan.pruned;
                plan.rows.push_back(row);
              }
            }
          }
        }
      }
  std::stable_sort(fit.begin(), fit.end(),
                   [](const Resolved& a, const Resolved& b) { return a.row.estimate_ms < b.row.estimate_ms; });
}

// Synthesizes one mesh with the plan's budget and fills its row's figures; the row's note says why
// when it gets no schedule.
std::optional<ModelSynthesis> synthesize_mesh(Resolved& r, const MeshPlanOptions& opt) {
  ModelSynthOptions so;
  so.evaluations = opt.evaluations;
  so.time_limit_s = opt.time_limit_s;
  so.seed = opt.seed;
  Result<ModelSynthesis> m = synthesize_model(r.spec, so);
  MeshPlanRow& row = r.row;
  if (!m.ok()) {
    row.note = fmt::format("no schedule: {}", m.status().message());
    return std::nullopt;
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
  return std::move(*m);
}

}  // namespace

Result<MeshPlan> plan_meshes(const std::string& model_path, const std::string& cluster_path,
                             const MeshPlanOptions& opt) {
  const ParallelInput& pin = opt.pinned;
  if (!pin.gpus) return Status::bad_input("plan: the number of GPUs is not given (gpus)");
  if (!pin.global_batch) return Status::bad_input("plan: the global batch is not given (global_batch, in sequences)");
  // The options' one check (ir/limits.h's table, ir/units.h): the CLI and the bindings pass them on.
  PS_RETURN_IF_ERROR(limits::check_option(limits::option::kMeshTop, opt.top, "top"));
  PS_RETURN_IF_ERROR(limits::check_option(limits::option::kMeshEvaluations, opt.evaluations, "evaluations"));
  if (opt.pipeline) PS_RETURN_IF_ERROR(limits::check_option(limits::option::kMeshDevices, *opt.pipeline, "pipeline"));
  if (Result<double> t = read_time_limit_s(opt.time_limit_s, "time_limit_s"); !t.ok()) return t.status();
  // The model alone: its layers, node size and routed experts bound the space; one GPU's mesh gives
  // the sequence length that context parallelism splits.
  SpecOverrides plain;
  plain.devices = 1;
  plain.microbatches = 1;
  Result<Spec> base = load_spec(model_path, cluster_path, plain);
  if (!base.ok()) return base.status();
  plain.parallel.gpus = 1;
  Result<Spec> one_gpu = load_spec(model_path, cluster_path, plain);
  const long long seq_length = one_gpu.ok() && one_gpu->mesh ? one_gpu->mesh->seq_length : 0;

  // The candidates first: one the model cannot run is the caller's error.
  MeshPlan plan;
  std::vector<Resolved> given;
  for (size_t i = 0; i < opt.candidates.size(); ++i) {
    const MeshCandidate& c = opt.candidates[i];
    Result<Resolved> r = c.pipeline >= 1 ? resolve(model_path, cluster_path, opt, c.pipeline, c.mesh)
                                         : Result<Resolved>(Status::bad_input("the pipeline's devices are not given"));
    if (!r.ok())
      return Status::error(r.status().code(),
                           fmt::format("plan: candidate mesh {} ({}): {}", i + 1, candidate_words(c), r.status().message()),
                           r.status().loc());
    r->row.candidate = true;
    estimate(r->spec, r->row);
    r->row.note.clear();  // a candidate is synthesized whatever its memory estimate says
    bound(*r);
    given.push_back(std::move(*r));
  }
  std::vector<Resolved> fit;
  enumerate(model_path, cluster_path, opt, *base, seq_length, plan, fit);
  // A candidate the enumeration also holds is synthesized once, as the candidate.
  for (Resolved& g : given) {
    const auto same = [&](const MeshPlanRow& r) { return mesh_key(r) == mesh_key(g.row); };
    fit.erase(std::remove_if(fit.begin(), fit.end(), [&](const Resolved& f) { return same(f.row); }), fit.end());
    plan.rows.erase(std::remove_if(plan.rows.begin(), plan.rows.end(), same), plan.rows.end());
  }

  // Synthesize: the candidates, then by estimate until `top` meshes got a schedule (at most 2 x top
  // tries once one has; every mesh in turn while none has), skipping a mesh whose bound is no better
  // than the best so far.
  std::vector<Resolved*> order;
  for (Resolved& r : given) order.push_back(&r);
  for (Resolved& r : fit) order.push_back(&r);
  const int planned = static_cast<int>(given.size()) + std::min<int>(static_cast<int>(fit.size()), opt.top);
  std::vector<MeshPlanRow> done;
  double best_ms = 0;
  std::string best_mesh;
  int enumerated_ok = 0, enumerated_tries = 0;
  for (Resolved* r : order) {
    MeshPlanRow& row = r->row;
    const bool budget_left = enumerated_ok < opt.top && (!plan.best || enumerated_tries < 2 * opt.top);
    if (!row.candidate && plan.best && row.bound_ms >= best_ms) {
      row.note = fmt::format("pruned: lower bound {:.3f} ms >= the best iteration {:.3f} ms", row.bound_ms, best_ms);
      ++plan.pruned_by_bound;
      done.push_back(row);
      continue;
    }
    if (!row.candidate && !budget_left) {
      row.note = "not synthesized (below the top by the estimate)";
      done.push_back(row);
      continue;
    }
    if (!row.candidate) ++enumerated_tries;
    ++plan.attempted;
    MeshPlanProgress progress{plan.attempted, std::max(planned, plan.attempted), &row, false, best_ms, best_mesh,
                              plan.pruned_by_bound};
    if (opt.progress) opt.progress(progress);
    std::optional<ModelSynthesis> m = synthesize_mesh(*r, opt);
    if (m) {
      if (!row.candidate) ++enumerated_ok;
      ++plan.synthesized;
      if (!plan.best || row.iteration_ms < best_ms) {
        best_ms = row.iteration_ms;
        best_mesh = mesh_description(row);
        plan.best = std::move(*m);
        plan.best_spec = r->spec;
      }
    }
    done.push_back(row);
    progress.done = true, progress.best_ms = best_ms, progress.best_mesh = best_mesh;
    progress.pruned_by_bound = plan.pruned_by_bound;
    if (opt.progress) opt.progress(progress);
  }
  if (!plan.best)
    return Status::error(ErrorCode::kInfeasible,
                         fmt::format("plan: none of the {} meshes of {} GPUs got a schedule ({} refused by the model, "
                                     "{} pruned by memory or dominance, {} synthesized{})",
                                     plan.enumerated, *opt.pinned.gpus, plan.refused, plan.pruned, plan.attempted,
                                     given.empty() ? "" : fmt::format(", {} candidates given", given.size())));
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
