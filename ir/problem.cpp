// problem.cpp — aggregating layer costs into stages (make_problem), unit-cost problems, and the
// boundary transfer time.
//
// Guarantees: make_problem accepts exactly the partitions that are contiguous, in order, non-empty
// and cover every layer, and placements with one device in [0, devices) per stage; a stage's
// numbers are sums over its layers, except output_mb, which counts every tensor produced at or
// before the stage's last layer and consumed after it (each tensor once, however many later layers
// read it), so skip edges of a DAG model are carried through every boundary they cross.
#include "ir/problem.h"

#include "ir/limits.h"

#include <fmt/format.h>

#include <algorithm>

namespace ps {

double Problem::boundary_transfer_ms(StageId stage) const {
  const int s = stage.value();
  PS_ASSERT(s >= 0 && s < num_stages(), fmt::format("stage {} out of range", s));
  if (s + 1 >= num_stages()) return 0.0;  // nothing after the last stage
  int a = stages[s].device, b = stages[s + 1].device;
  if (a == b) return 0.0;
  const LinkModel& l =
      devices_per_node > 0 && a / devices_per_node != b / devices_per_node ? inter_node_link : link;
  return l.transfer_ms(stages[s].output_mb);
}

double Problem::least_backward_ms(StageId stage) const {
  PS_ASSERT(stage.value() >= 0 && stage.value() < num_stages(), fmt::format("stage {} out of range", stage));
  const StageSpec& st = at(stages, stage);
  const double fused = st.bwd_ms() + op_overhead_ms;
  return st.split_backward ? std::min(fused, st.split_bwd_ms() + 2 * op_overhead_ms) : fused;
}

Status check_limits(const Problem& p, const std::vector<SourceLoc>& stage_locs) {
  PS_RETURN_IF_ERROR(limits::check_plan_ops(p.num_stages(), p.microbatches, "problem"));
  const double M = p.microbatches;
  double time_ms = 0, act_mb = 0, state_mb = 0, comm_ms = 0;
  for (int s = 0; s < p.num_stages(); ++s) {
    const StageSpec& st = p.stages[s];
    time_ms += M * (st.fwd_ms + st.bwd_input_ms + st.bwd_weight_ms + (st.recomputes() ? st.recompute_ms : 0.0));
    if (st.fused_bwd_ms) time_ms += M * *st.fused_bwd_ms;
    time_ms += M * 4 * p.op_overhead_ms;  // F, I, W and R, or F and B
    act_mb += M * st.activation_mb;
    state_mb += st.params_m * p.bytes_per_param;
    if (st.device >= 0 && st.device < p.devices && s + 1 < p.num_stages() && p.stages[s + 1].device >= 0 &&
        p.stages[s + 1].device < p.devices)
      comm_ms += 2 * M * p.boundary_transfer_ms(StageId{s});
    const char* over = limits::total_over_limit(time_ms, act_mb, state_mb, comm_ms);
    if (over) {
      return Status::bad_input(
          fmt::format("stage {}: the iteration's total {} over {} microbatches exceeds {:g} at this stage; pipesmith "
                      "needs every sum over an iteration to stay below it (docs/inputs.md, \"Limits\")",
                      s, over, p.microbatches, limits::kMaxIterationTotal),
          s < static_cast<int>(stage_locs.size()) ? stage_locs[s] : SourceLoc{});
    }
  }
  return Status::ok();
}

Status set_recompute(const Spec& spec, Problem& problem, const std::vector<RecomputeMode>& modes) {
  if (static_cast<int>(modes.size()) != problem.num_stages())
    return Status::bad_input(fmt::format("recomputation: {} modes given for {} stages (need one per stage)",
                                         modes.size(), problem.num_stages()));
  const int n = static_cast<int>(spec.model.layers.size());
  for (int s = 0; s < problem.num_stages(); ++s) {
    StageSpec& st = problem.stages[s];
    st.recompute = modes[s];
    st.recompute_ms = 0;
    st.recompute_kept_mb = 0;
    if (modes[s] == RecomputeMode::kNone) continue;
    if (st.first_layer < 0 || st.last_layer < st.first_layer || st.last_layer >= n)
      return Status::bad_input(fmt::format(
          "recomputation: stage {} has no layer range in the model (layers [{}, {}]); its recompute "
          "numbers come from its layers",
          s, st.first_layer, st.last_layer));
    const LayerType sum = summed_costs(spec.model, st.first_layer, st.last_layer);
    const RecomputeOption& opt =
        modes[s] == RecomputeMode::kFull ? sum.recompute_full : sum.recompute_selective;
    st.recompute_ms = opt.ms;
    st.recompute_kept_mb = std::min(opt.kept_mb, st.activation_mb);
  }
  return Status::ok();
}

std::string stage_ranges(const std::vector<char>& marked) {
  std::string list;
  const int n = static_cast<int>(marked.size());
  for (int s = 0; s < n;) {
    if (!marked[s]) {
      ++s;
      continue;
    }
    int e = s;
    while (e + 1 < n && marked[e + 1]) ++e;
    list += fmt::format("{}{}", list.empty() ? "" : ",", s == e ? fmt::format("{}", s) : fmt::format("{}-{}", s, e));
    s = e + 1;
  }
  return list;
}

std::string recompute_ranges(const Problem& problem) {
  std::string out;
  for (RecomputeMode mode : {RecomputeMode::kFull, RecomputeMode::kSelective}) {
    std::vector<char> marked;
    for (const StageSpec& st : problem.stages) marked.push_back(st.recompute == mode);
    const std::string list = stage_ranges(marked);
    if (!list.empty()) out += fmt::format("{}{} {}", out.empty() ? "" : "; ", recompute_mode_name(mode), list);
  }
  return out;
}

Status set_recompute_all(const Spec& spec, Problem& problem, RecomputeMode mode) {
  return set_recompute(spec, problem, std::vector<RecomputeMode>(problem.stages.size(), mode));
}

Result<Problem> make_problem(const Spec& spec, const Partition& partition,
                             const std::vector<int>& placement) {
  PS_RETURN_IF_ERROR(validate(spec));
  const Model& m = spec.model;
  const int n = static_cast<int>(m.layers.size());
  if (partition.empty()) return Status::bad_input("partition: no stages (need at least one)");
  PS_RETURN_IF_ERROR(limits::check_plan_ops(static_cast<int64_t>(partition.size()), spec.pipeline.microbatches,
                                            "partition"));
  int expect_first = 0;
  for (size_t s = 0; s < partition.size(); ++s) {
    const LayerRange& r = partition[s];
    if (r.first != expect_first) {
      return Status::bad_input(
          fmt::format("partition: stage {} starts at layer {}, expected {} (stages must be "
                      "contiguous, in order, and cover layers 0..{})",
                      s, r.first, expect_first, n - 1));
    }
    if (r.last < r.first) {
      return Status::bad_input(
          fmt::format("partition: stage {} is empty (layers {}..{})", s, r.first, r.last));
    }
    if (r.last >= n) {
      return Status::bad_input(
          fmt::format("partition: stage {} ends at layer {}, but the model has layers 0..{}", s,
                      r.last, n - 1));
    }
    expect_first = r.last + 1;
  }
  if (expect_first != n) {
    return Status::bad_input(
        fmt::format("partition: the stages cover layers 0..{}, but the model has layers 0..{}",
                    expect_first - 1, n - 1));
  }
  if (placement.size() != partition.size()) {
    return Status::bad_input(
        fmt::format("placement: {} devices given for {} stages (need one per stage)",
                    placement.size(), partition.size()));
  }
  for (size_t s = 0; s < placement.size(); ++s) {
    if (placement[s] < 0 || placement[s] >= spec.cluster.devices) {
      return Status::bad_input(
          fmt::format("placement: stage {} is on device {}, but the cluster has devices 0..{}", s,
                      placement[s], spec.cluster.devices - 1));
    }
  }

  // last_use[u]: the last layer that reads layer u's output (u itself when nobody does).
  std::vector<int> last_use(n);
  for (int u = 0; u < n; ++u) last_use[u] = u;
  for (const Layer& l : m.layers) {
    for (int u : l.inputs) last_use[u] = std::max(last_use[u], l.id);
  }

  Problem p;
  p.name = m.name;
  p.devices = spec.cluster.devices;
  p.microbatches = spec.pipeline.microbatches;
  p.memory_gb = spec.cluster.memory_gb;
  p.bytes_per_param = spec.pipeline.bytes_per_param;
  p.link = spec.cluster.link;
  p.devices_per_node = spec.cluster.devices_per_node;
  p.inter_node_link = spec.cluster.inter_node_link;
  p.op_overhead_ms = spec.cluster.op_overhead_ms;
  if (spec.mesh) p.mesh = mesh_throughput_inputs(*spec.mesh);
  for (size_t s = 0; s < partition.size(); ++s) {
    const LayerRange& r = partition[s];
    StageSpec st;
    st.first_layer = r.first;
    st.last_layer = r.last;
    st.device = placement[s];
    const LayerType sum = summed_costs(m, r.first, r.last);
    st.fwd_ms = sum.forward_ms;
    st.bwd_input_ms = sum.backward_input_ms;
    st.bwd_weight_ms = sum.backward_weight_ms;
    st.fused_bwd_ms = sum.backward_ms;
    st.activation_mb = sum.activation_mb;
    st.wgrad_stash_mb = sum.wgrad_stash_mb;
    st.params_m = sum.params_m;
    st.split_backward = sum.split_backward;
    for (int u = 0; u <= r.last; ++u) {
      if (last_use[u] > r.last) st.output_mb += m.type_of(u).output_mb;
    }
    if (spec.mesh) {
      double dense_mb = 0, expert_mb = 0, dense_w_mb = 0, expert_w_mb = 0, unsharded_mb = 0, step_ms = 0;
      for (int l = r.first; l <= r.last; ++l) {
        auto it = spec.mesh_types.find(m.layers[l].type);
        if (it == spec.mesh_types.end()) continue;
        const MeshLayerCosts& c = it->second;
        dense_mb += c.dense_grad_mb, expert_mb += c.expert_grad_mb;
        dense_w_mb += c.dense_weight_mb, expert_w_mb += c.expert_weight_mb, unsharded_mb += c.unsharded_mb;
        step_ms += c.optimizer_step_ms;
      }
      const Cluster& c = spec.cluster;
      const MeshLinks links{c.link.bandwidth_gb_per_s, c.link.latency_us, c.inter_node_link.bandwidth_gb_per_s,
                            c.inter_node_link.latency_us};
      if (has_data_parallel_step(*spec.mesh, dense_mb, expert_mb)) {
        st.reduces_grad = true;
        st.reduce_grad_ms = data_parallel_step_ms(*spec.mesh, links, dense_mb, expert_mb, dense_w_mb, expert_w_mb, step_ms);
      }
      if (spec.mesh->optimizer == OptimizerSharding::kFsdp) {
        st.fsdp = true;
        st.unsharded_mb = unsharded_mb;
        st.unshard_ms = unshard_ms(*spec.mesh, links, dense_w_mb, expert_w_mb);
      }
    }
    p.stages.push_back(st);
  }
  return p;
}

Problem unit_problem(int devices, int microbatches, const std::vector<int>& placement) {
  Problem p;
  p.name = "unit";
  p.devices = devices;
  p.microbatches = microbatches;
  p.memory_gb = 0;           // unlimited
  p.link = LinkModel{1, 0};  // with output_mb = 0 and no latency, every transfer takes 0 ms
  p.unit_costs = true;
  for (int d : placement) {
    StageSpec st;
    st.device = d;
    st.fwd_ms = st.bwd_input_ms = st.bwd_weight_ms = 1;
    st.activation_mb = 1;
    st.wgrad_stash_mb = 0;
    st.output_mb = 0;
    st.params_m = 0;
    p.stages.push_back(st);
  }
  return p;
}

}  // namespace ps
