// mesh.cpp — the `parallel:` reader, the mesh's validation, the node layout of its groups and the
// per-GPU costs and memory of a layer type. docs/mesh.md writes out every formula with its source;
// keep the two in step.
#include "ir/mesh.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "ir/limits.h"
#include "ir/yaml_util.h"

namespace ps {

const char* optimizer_name(OptimizerSharding o) {
  switch (o) {
    case OptimizerSharding::kReplicated:
      return "replicated";
    case OptimizerSharding::kDistributed:
      return "distributed";
    case OptimizerSharding::kFsdp:
      return "fsdp";
  }
  return "?";
}

std::optional<OptimizerSharding> parse_optimizer(std::string_view w) {
  if (w == "replicated") return OptimizerSharding::kReplicated;
  if (w == "distributed") return OptimizerSharding::kDistributed;
  if (w == "fsdp") return OptimizerSharding::kFsdp;
  return std::nullopt;
}

const char* cp_comm_name(CpComm c) { return c == CpComm::kAllGather ? "all_gather" : "p2p"; }

std::optional<CpComm> parse_cp_comm(std::string_view w) {
  if (w == "p2p") return CpComm::kP2p;
  if (w == "all_gather") return CpComm::kAllGather;
  return std::nullopt;
}

int Mesh::expert_data() const {
  const long long dense = static_cast<long long>(data) * context * tensor;
  return static_cast<int>(dense / (static_cast<long long>(expert) * expert_tensor));
}

MeshThroughput mesh_throughput_inputs(const Mesh& m) {
  MeshThroughput t;
  t.gpus = m.gpus;
  t.tokens_per_iteration = static_cast<double>(m.global_batch) * static_cast<double>(m.seq_length);
  t.model_flops_per_token = m.model_flops_per_token;
  t.peak_tflops = m.peak_tflops;
  return t;
}

Throughput mesh_throughput(const MeshThroughput& t, double iteration_ms) {
  Throughput r;
  if (t.gpus <= 0 || !(iteration_ms > 0)) return r;
  r.tokens_per_s = t.tokens_per_iteration / (iteration_ms / 1000.0);
  r.tflops_per_gpu = t.model_flops_per_token * r.tokens_per_s / static_cast<double>(t.gpus) / 1e12;
  r.mfu = t.peak_tflops > 0 ? r.tflops_per_gpu / t.peak_tflops : 0.0;
  return r;
}

int mesh_microbatches(const Mesh& m) {
  return static_cast<int>(m.global_batch / (static_cast<long long>(m.micro_batch) * m.data));
}

const char* mesh_group_name(MeshGroup g) {
  switch (g) {
    case MeshGroup::kTensor:
      return "tensor";
    case MeshGroup::kContext:
      return "context";
    case MeshGroup::kExpert:
      return "expert";
    case MeshGroup::kExpertTensor:
      return "expert_tensor";
    case MeshGroup::kData:
      return "data";
    case MeshGroup::kExpertData:
      return "expert_data";
  }
  return "?";
}

namespace {
// The nodes a group of `p.size` members `p.stride` ranks apart, holding rank 0, spans.
GroupPlacement place_group(const Mesh& m, GroupPlacement p) {
  if (m.gpus_per_node <= 0) {
    p.members_in_first_node = p.size;
    return p;
  }
  std::set<long long> nodes;
  int first = 0;
  for (int i = 0; i < p.size; ++i) {
    const long long node = static_cast<long long>(i) * p.stride / m.gpus_per_node;
    nodes.insert(node);
    if (node == 0) ++first;
  }
  p.nodes = static_cast<int>(nodes.size());
  p.members_in_first_node = first;
  return p;
}
}  // namespace

GroupPlacement group_placement(const Mesh& m, MeshGroup g) {
  GroupPlacement p;
  switch (g) {
    case MeshGroup::kTensor:
      p.size = m.tensor, p.stride = 1;
      break;
    case MeshGroup::kContext:
      p.size = m.context, p.stride = m.tensor;
      break;
    case MeshGroup::kData:
      p.size = m.data, p.stride = static_cast<long long>(m.tensor) * m.context;
      break;
    case MeshGroup::kExpertTensor:
      p.size = m.expert_tensor, p.stride = 1;
      break;
    case MeshGroup::kExpert:
      p.size = m.expert, p.stride = m.expert_tensor;
      break;
    case MeshGroup::kExpertData:
      p.size = m.expert_data(), p.stride = static_cast<long long>(m.expert) * m.expert_tensor;
      break;
  }
  return place_group(m, p);
}

// ---------------------------------------------------------------------------------------------
// The `parallel:` section.

namespace {

constexpr std::string_view kIntFields[] = {"tensor", "context", "expert", "expert_tensor", "data", "micro_batch",
                                           "global_batch"};

std::optional<long long> ParallelInput::* int_field(std::string_view k) {
  if (k == "gpus") return &ParallelInput::gpus;
  if (k == "tensor") return &ParallelInput::tensor;
  if (k == "context") return &ParallelInput::context;
  if (k == "expert") return &ParallelInput::expert;
  if (k == "expert_tensor") return &ParallelInput::expert_tensor;
  if (k == "data") return &ParallelInput::data;
  if (k == "micro_batch") return &ParallelInput::micro_batch;
  if (k == "global_batch") return &ParallelInput::global_batch;
  return nullptr;
}

// The range of an integer field: the options table's (ir/limits.h, limits::option "mesh.*").
const limits::IntOption& int_option(std::string_view k) {
  namespace opt = limits::option;
  if (k == "gpus") return opt::kMeshGpus;
  if (k == "tensor") return opt::kMeshTensor;
  if (k == "context") return opt::kMeshContext;
  if (k == "expert") return opt::kMeshExpert;
  if (k == "expert_tensor") return opt::kMeshExpertTensor;
  if (k == "data") return opt::kMeshData;
  if (k == "micro_batch") return opt::kMeshMicroBatch;
  return opt::kMeshGlobalBatch;
}

std::string optimizer_words() { return "replicated, distributed (Megatron's distributed optimizer, ZeRO-1), fsdp (ZeRO-3)"; }

std::string cp_comm_refusal(std::string_view what, std::string_view word) {
  if (word == "a2a" || word == "a2a+p2p")
    return fmt::format("{}: '{}' (the all-to-all context parallelism) is not modelled (expected p2p, the K/V ring, "
                       "or all_gather)",
                       what, word);
  return fmt::format("{}: unknown cp_comm_type '{}' (expected p2p, the K/V ring, or all_gather)", what, excerpt(word));
}

}  // namespace

bool ParallelInput::any() const {
  return gpus || tensor || context || expert || expert_tensor || data || micro_batch || global_batch ||
         sequence_parallel || optimizer || cp_comm;
}

ParallelInput ParallelInput::merged_with(const ParallelInput& o) const {
  ParallelInput r = *this;
  // A field set in `o` replaces ours, with its location.
  const auto take = [&](auto member, std::string_view key) {
    if (!(o.*member)) return;
    r.*member = o.*member;
    r.at.erase(std::string(key));
    if (auto it = o.at.find(key); it != o.at.end()) r.at[std::string(key)] = it->second;
  };
  for (std::string_view k : {"gpus", "tensor", "context", "expert", "expert_tensor", "data", "micro_batch",
                             "global_batch"})
    take(int_field(k), k);
  take(&ParallelInput::sequence_parallel, "sequence_parallel");
  take(&ParallelInput::optimizer, "optimizer");
  take(&ParallelInput::cp_comm, "cp_comm_type");
  if (o.loc.valid()) r.loc = o.loc;
  return r;
}

Result<ParallelInput> read_parallel(const YAML::Node& n, const std::string& file, const SourceLoc& key_loc) {
  Result<yamlu::Fields> f = yamlu::read_map(
      n, {"tensor", "context", "expert", "expert_tensor", "data", "sequence_parallel", "optimizer", "cp_comm_type",
          "micro_batch", "global_batch"},
      file, "parallel");
  if (!f.ok()) return f.status();
  ParallelInput in;
  in.loc = key_loc;
  for (const auto& [key, field] : *f) {
    const SourceLoc vloc = yamlu::loc_of(field.value, file, yamlu::loc_of(field.key, file, key_loc));
    const std::string what = "parallel." + key;
    in.at[key] = vloc;
    if (key == "sequence_parallel") {
      Result<bool> v = yamlu::to_bool(field.value, file, what, vloc);
      if (!v.ok()) return v.status();
      in.sequence_parallel = *v;
    } else if (key == "optimizer") {
      Result<std::string> v = yamlu::to_string(field.value, file, what, vloc);
      if (!v.ok()) return v.status();
      if (!parse_optimizer(*v))
        return Status::bad_input(
            fmt::format("{}: unknown optimizer '{}' (expected {})", what, excerpt(*v), optimizer_words()), vloc);
      in.optimizer = *v;
    } else if (key == "cp_comm_type") {
      Result<std::string> v = yamlu::to_string(field.value, file, what, vloc);
      if (!v.ok()) return v.status();
      if (!parse_cp_comm(*v)) return Status::bad_input(cp_comm_refusal(what, *v), vloc);
      in.cp_comm = *v;
    } else {
      Result<long long> v = yamlu::to_int(field.value, file, what, vloc);
      if (!v.ok()) return v.status();
      if (Status st = limits::check_option(int_option(key), *v, what, vloc); !st) return st;
      in.*int_field(key) = *v;
    }
  }
  return in;
}

// ---------------------------------------------------------------------------------------------
// Resolution and validation.

Result<Mesh> resolve_mesh(const ParallelInput& given, const ParallelInput& overrides, const MeshContext& ctx) {
  const ParallelInput in = given.merged_with(overrides);
  // Where a field came from: the file's value, or (unlocated) the override.
  auto from_override = [&](std::string_view k) {
    if (k == "sequence_parallel") return overrides.sequence_parallel.has_value();
    if (k == "optimizer") return overrides.optimizer.has_value();
    if (k == "cp_comm_type") return overrides.cp_comm.has_value();
    return (overrides.*int_field(k)).has_value();
  };
  auto name = [&](std::string_view k) {
    return from_override(k) ? fmt::format("the {} override", k) : fmt::format("parallel.{}", k);
  };
  auto at = [&](std::string_view k) -> SourceLoc {
    if (from_override(k)) return SourceLoc{};
    auto it = in.at.find(k);
    return it == in.at.end() ? in.loc : it->second;
  };
  for (std::string_view k : kIntFields) {
    const auto& v = in.*int_field(k);
    if (v)
      if (Status st = limits::check_option(int_option(k), *v, name(k), at(k)); !st) return st;
  }
  if (in.gpus)
    if (Status st = limits::check_option(int_option("gpus"), *in.gpus, name("gpus"), at("gpus")); !st) return st;
  Mesh m;
  m.loc = in.loc;
  m.pipeline = ctx.pipeline_devices;
  m.tensor = static_cast<int>(in.tensor.value_or(1));
  m.context = static_cast<int>(in.context.value_or(1));
  m.expert = static_cast<int>(in.expert.value_or(1));
  m.expert_tensor = static_cast<int>(in.expert_tensor.value_or(1));
  m.sequence_parallel = in.sequence_parallel.value_or(false);
  if (in.optimizer) {
    std::optional<OptimizerSharding> o = parse_optimizer(*in.optimizer);
    if (!o)
      return Status::bad_input(
          fmt::format("{}: unknown optimizer '{}' (expected {})", name("optimizer"), excerpt(*in.optimizer),
                      optimizer_words()),
          at("optimizer"));
    m.optimizer = *o;
  }
  if (in.cp_comm) {
    std::optional<CpComm> c = parse_cp_comm(*in.cp_comm);
    if (!c) return Status::bad_input(cp_comm_refusal(name("cp_comm_type"), *in.cp_comm), at("cp_comm_type"));
    m.cp_comm = *c;
  }
  // GPUs: the override, else the cluster's; data follows from them when not given.
  std::optional<long long> gpus = in.gpus;
  std::string gpus_name = in.gpus ? name("gpus") : "cluster.gpus";
  SourceLoc gpus_at = in.gpus ? at("gpus") : ctx.cluster_gpus_loc;
  if (!gpus && ctx.cluster_gpus > 0) gpus = ctx.cluster_gpus;
  const long long ptc = static_cast<long long>(m.pipeline) * m.tensor * m.context;
  const std::string ptc_words =
      fmt::format("pipeline devices ({}) x tensor ({}) x context ({}) = {}", m.pipeline, m.tensor, m.context, ptc);
  if (in.data) {
    m.data = static_cast<int>(*in.data);
    const long long product = ptc * m.data;
    if (gpus && product != *gpus)
      return Status::bad_input(fmt::format("{} x data ({}) = {} must equal {} ({})", ptc_words, m.data, product,
                                           gpus_name, *gpus),
                               at("data").valid() ? at("data") : gpus_at);
    PS_RETURN_IF_ERROR(limits::check_option(limits::option::kMeshGpus, product,
                                            fmt::format("the GPUs, {} x data ({}),", ptc_words, m.data), at("data")));
    m.gpus = product;
  } else if (gpus) {
    if (*gpus % ptc != 0)
      return Status::bad_input(
          fmt::format("{} ({}) is not a multiple of {}: the data-parallel degree would not be whole", gpus_name, *gpus,
                      ptc_words),
          gpus_at);
    m.data = static_cast<int>(*gpus / ptc);
    m.gpus = *gpus;
  } else {
    PS_RETURN_IF_ERROR(
        limits::check_option(limits::option::kMeshGpus, ptc, fmt::format("the GPUs, {},", ptc_words), in.loc));
    m.data = 1;
    m.gpus = ptc;
  }
  // The expert grid regroups the GPUs of a stage.
  const long long dct = static_cast<long long>(m.data) * m.context * m.tensor;
  const long long eet = static_cast<long long>(m.expert) * m.expert_tensor;
  if (dct % eet != 0)
    return Status::bad_input(
        fmt::format("expert ({}) x expert_tensor ({}) = {} must divide data ({}) x context ({}) x tensor ({}) = {} "
                    "(the GPUs of one stage, which the expert layers regroup)",
                    m.expert, m.expert_tensor, eet, m.data, m.context, m.tensor, dct),
        at(in.expert ? "expert" : "expert_tensor"));
  // Batch: micro_batch sequences per microbatch, global_batch per iteration.
  m.micro_batch = static_cast<int>(in.micro_batch.value_or(ctx.architecture_micro_batch));
  const long long per_mb = static_cast<long long>(m.micro_batch) * m.data;
  if (in.global_batch) {
    m.global_batch = *in.global_batch;
    if (m.global_batch % per_mb != 0)
      return Status::bad_input(
          fmt::format("{} ({}) must be a multiple of micro_batch ({}) x data ({}) = {}: every data-parallel rank runs "
                      "whole microbatches",
                      name("global_batch"), m.global_batch, m.micro_batch, m.data, per_mb),
          at("global_batch"));
    const long long M = m.global_batch / per_mb;
    if (M > limits::kMaxMicrobatches)
      return Status::bad_input(fmt::format("{} ({}) / (micro_batch ({}) x data ({})) = {} microbatches; at most {} are "
                                           "supported",
                                           name("global_batch"), m.global_batch, m.micro_batch, m.data, M,
                                           limits::kMaxMicrobatches),
                               at("global_batch"));
    if (ctx.microbatches_overridden && M != ctx.microbatches)
      return Status::bad_input(
          fmt::format("{} ({}) / (micro_batch ({}) x data ({})) = {} microbatches, but the microbatches override says "
                      "{}",
                      name("global_batch"), m.global_batch, m.micro_batch, m.data, M, ctx.microbatches),
          at("global_batch"));
  } else {
    m.global_batch = per_mb * ctx.microbatches;
  }
  // Nodes: the pipeline's stages must fill whole nodes or share one evenly.
  m.gpus_per_node = ctx.gpus_per_node > 0 && ctx.gpus_per_node < m.gpus ? ctx.gpus_per_node : 0;
  if (m.gpus_per_node > 0) {
    if (!ctx.inter_node_link)
      return Status::bad_input(fmt::format("cluster: the mesh's {} GPUs span {} nodes of {} GPUs, but the cluster gives "
                                           "no inter_node_link (the link between nodes)",
                                           m.gpus, (m.gpus + m.gpus_per_node - 1) / m.gpus_per_node, m.gpus_per_node),
                               ctx.cluster_loc);
    const long long block = m.gpus / m.pipeline;  // the GPUs of one stage
    if (block % m.gpus_per_node != 0 && m.gpus_per_node % block != 0)
      return Status::bad_input(
          fmt::format("a pipeline stage holds data x context x tensor = {} GPUs, which neither fills whole nodes of {} "
                      "GPUs nor divides one",
                      block, m.gpus_per_node),
          ctx.cluster_loc);
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// Costs.

namespace {

// A ring all-gather or reduce-scatter (an all-reduce: `twice`) of a tensor of `bytes` (gathered size)
// over a group placed as `p`, ms.
double ring_ms(const MeshLinks& l, const GroupPlacement& p, double bytes, bool twice = false) {
  if (p.size <= 1) return 0;
  const bool inter = p.nodes > 1;
  const double n = p.size;
  const double bw = inter ? l.inter_gb_per_s : l.intra_gb_per_s;
  const double lat_ms = (inter ? l.inter_latency_us : l.intra_latency_us) / 1000.0;
  const double one = (n - 1) * lat_ms + (bw > 0 ? (n - 1) / n * bytes / (bw * 1e6) : 0.0);
  return twice ? 2 * one : one;
}

struct Collectives {
  const Mesh& m;
  const MeshLinks& l;

  double lat_ms(bool inter) const { return (inter ? l.inter_latency_us : l.intra_latency_us) / 1000.0; }
  double ms(double bytes, bool inter) const {  // bytes over one link (1 GB/s moves 1e6 bytes per ms)
    const double bw = inter ? l.inter_gb_per_s : l.intra_gb_per_s;
    return bw > 0 ? bytes / (bw * 1e6) : 0.0;
  }
  // Ring all-gather or reduce-scatter of a tensor of `bytes` (gathered size) over group g.
  double gather(double bytes, MeshGroup g) const { return ring_ms(l, group_placement(m, g), bytes); }
  double all_reduce(double bytes, MeshGroup g) const { return 2 * gather(bytes, g); }
  // All-to-all in which each GPU holds `bytes` spread evenly over the group's members (itself included):
  // the part for members on its node goes over the intra-node link, the rest over the inter-node link,
  // at the same time.
  double all_to_all(double bytes, MeshGroup g) const {
    const GroupPlacement p = group_placement(m, g);
    if (p.size <= 1) return 0;
    const double n = p.size;
    const double intra = bytes * (p.members_in_first_node - 1) / n, inter = bytes * (n - p.members_in_first_node) / n;
    return lat_ms(inter > 0) + std::max(ms(intra, false), ms(inter, true));
  }
  // One point-to-point step between neighbours of group g's ring.
  double ring_step(double bytes, MeshGroup g) const {
    const GroupPlacement p = group_placement(m, g);
    const bool inter = p.nodes > 1;
    return lat_ms(inter) + ms(bytes, inter);
  }
};

// One pass's share of a component (F, I or W).
struct PassTimes {
  double compute = 0, tp = 0, cp = 0, ep = 0;
  double total() const { return compute + tp + cp + ep; }
};

}  // namespace

Result<MeshLayerCosts> derive_mesh_costs(const std::vector<Component>& kind, const Architecture& arch_in,
                                         const Hardware& hw, const Mesh& mesh, const MeshLinks& links,
                                         double bytes_per_param) {
  // The unmeshed derivation checks the hardware and the architecture with its own messages.
  Architecture arch = arch_in;
  arch.micro_batch_size = mesh.micro_batch;
  Result<DerivedCosts> whole = derive_costs(kind, arch, hw);
  if (!whole.ok()) return whole.status();
  const double dense_rate = *hw.peak_tflops * 1e12 * *hw.achievable_fraction / 1e3;  // FLOPs per ms
  const double moe_rate = *hw.peak_tflops * 1e12 * hw.moe_achievable_fraction.value_or(*hw.achievable_fraction) / 1e3;
  const double hbm_per_ms = *hw.hbm_gb_per_s * 1e9 / 1e3;
  const double T = mesh.tensor, C = mesh.context, tc = T * C;
  const bool sp = mesh.sequence_parallel && mesh.tensor > 1;
  const double p = arch.dtype_bytes.value_or(2.0);
  const double tokens = static_cast<double>(mesh.micro_batch) * static_cast<double>(arch.seq_length.value_or(0));
  const double h = static_cast<double>(arch.hidden_size.value_or(0));
  const double S = p * tokens * h / C;  // one GPU's hidden tensor, gathered over tensor parallelism
  const Collectives col{mesh, links};

  MeshLayerCosts out;
  DerivedCosts& d = out.gpu;
  double dense_params = 0, expert_params = 0, quadratic_mb = 0;
  bool first = true;
  for (Component c : kind) {
    Result<ComponentWork> r = component_work(c, arch);
    if (!r.ok()) return r.status();
    const ComponentWork& w = *r;
    const double rate = w.moe_efficiency ? moe_rate : dense_rate;
    PassTimes f, i, wt;
    f.compute = (w.fwd_flops / rate + w.fwd_hbm_bytes / hbm_per_ms) / tc;
    i.compute = (w.bwd_input_flops / rate + w.bwd_input_hbm_bytes / hbm_per_ms) / tc;
    wt.compute = (w.bwd_weight_flops / rate + w.bwd_weight_hbm_bytes / hbm_per_ms) / tc;
    // Tensor parallelism: each sublayer's column- and row-parallel matmul pair.
    const double ag = col.gather(S, MeshGroup::kTensor), ar = col.all_reduce(S, MeshGroup::kTensor);
    switch (w.tp) {
      case ComponentWork::TpPattern::kBlock:
        f.tp = sp ? 2 * ag : ar;
        i.tp = sp ? 2 * ag : ar;
        break;
      case ComponentWork::TpPattern::kEmbedding:  // vocabulary-parallel lookup: partial sums reduced
        f.tp = sp ? ag : ar;
        wt.tp = sp ? ag : 0;
        break;
      case ComponentWork::TpPattern::kHead:  // vocabulary-parallel logits: the loss's max and sum reduced
        f.tp = (sp ? ag : 0) + 2 * col.all_reduce(4 * tokens / C, MeshGroup::kTensor);
        i.tp = sp ? ag : ar;
        break;
      case ComponentWork::TpPattern::kNone:
        break;
    }
    // Expert parallelism: dispatch and combine all-to-alls of the routed copies of this GPU's tokens,
    // and the expert-tensor group's gather and scatter of them.
    if (w.routed_token_bytes > 0) {
      const double routed = w.routed_token_bytes / tc;
      const double a2a = 2 * col.all_to_all(routed, MeshGroup::kExpert);
      const double etp = 2 * col.gather(routed, MeshGroup::kExpertTensor);
      f.ep = i.ep = a2a + etp;
    }
    // Context parallelism. p2p: the K/V ring overlaps the attention core's steps. all_gather: K and V
    // gathered before the core, exposed; in I gathered again and their gradients reduce-scattered.
    // The linear mixers hand their state from chunk to chunk either way.
    if (mesh.context > 1) {
      const double steps = C - 1;
      if (w.cp_kv_bytes > 0 && mesh.cp_comm == CpComm::kAllGather) {
        const double gather_ms = col.gather(w.cp_kv_bytes / T, MeshGroup::kContext);
        f.cp = gather_ms;
        i.cp = 2 * gather_ms;
      } else if (w.cp_kv_bytes > 0) {
        const double step_ms = col.ring_step(w.cp_kv_bytes / tc, MeshGroup::kContext);
        const double core_step_ms = w.core_fwd_flops / rate / tc / C;
        f.cp = steps * std::max(0.0, step_ms - core_step_ms);
        i.cp = steps * std::max(0.0, 2 * step_ms - 2 * core_step_ms);
      }
      if (w.cp_state_bytes > 0) {
        f.cp += steps * col.ring_step(w.cp_state_bytes / T, MeshGroup::kContext);
        i.cp += steps * col.ring_step(w.cp_state_bytes / T, MeshGroup::kContext);
      }
    }
    d.forward_ms += f.total();
    d.backward_input_ms += i.total();
    d.backward_weight_ms += wt.total();
    out.compute_ms += f.compute + i.compute + wt.compute;
    out.tp_ms += f.tp + i.tp + wt.tp;
    out.cp_ms += f.cp + i.cp + wt.cp;
    out.ep_ms += f.ep + i.ep + wt.ep;
    // Memory one GPU keeps.
    const double hidden = std::min(w.hidden_activation_bytes, w.activation_bytes);
    const double act = (w.activation_bytes - hidden) / tc + hidden / (sp ? tc : C);
    d.activation_mb += act / 1e6;
    d.wgrad_stash_mb += (w.activation_bytes > 0 ? w.wgrad_stash_bytes * act / w.activation_bytes : 0.0) / 1e6;
    const double seq_share = C * (sp ? T : 1);  // a hidden tensor one GPU holds: its sequence chunk
    d.output_mb = w.output_bytes / seq_share / 1e6;
    if (first) d.recompute_full_kept_mb = w.input_bytes / seq_share / 1e6;
    first = false;
    if (w.quadratic_activation_bytes > 0) {
      d.recompute_selective_ms += w.core_fwd_flops / rate / tc;
      quadratic_mb += w.quadratic_activation_bytes / tc / 1e6;
    }
    expert_params += w.expert_params;
    dense_params += w.params - w.expert_params;
    out.model_flops += w.fwd_flops + w.bwd_input_flops + w.bwd_weight_flops;  // a causal core: the s^2/2 pairs
  }
  d.recompute_full_ms = d.forward_ms;
  d.recompute_full_kept_mb = std::min(d.recompute_full_kept_mb, d.activation_mb);
  d.recompute_selective_kept_mb = std::max(0.0, d.activation_mb - quadratic_mb);

  // Model states. Dense parameters are split over tensor, experts over expert x expert_tensor.
  const double dense_gpu = dense_params / T;
  const double expert_gpu = expert_params / (static_cast<double>(mesh.expert) * mesh.expert_tensor);
  const double params_gpu = dense_gpu + expert_gpu;
  // Optimizer shards: dense parameters over data x context, experts over expert_data.
  const double shard = dense_gpu / (static_cast<double>(mesh.data) * C) + expert_gpu / mesh.expert_data();
  const double wb = std::min(2.0, bytes_per_param), gb = std::min(4.0, bytes_per_param - wb);
  const double ob = bytes_per_param - wb - gb;
  out.params_per_gpu_m = params_gpu / 1e6;
  out.dense_grad_mb = gb * dense_gpu / 1e6, out.expert_grad_mb = gb * expert_gpu / 1e6;
  out.dense_weight_mb = wb * dense_gpu / 1e6, out.expert_weight_mb = wb * expert_gpu / 1e6;
  // The optimizer's update of the parameters this GPU owns (its shard, or all it holds when
  // replicated), memory-bound: it reads the gradient and the optimizer states and writes the states
  // and the weights, g + 2·o + w bytes a parameter (30 for Adam with fp32 master weights).
  const double updated = mesh.optimizer == OptimizerSharding::kReplicated ? params_gpu : shard;
  out.optimizer_step_ms = updated * (gb + 2 * ob + wb) / hbm_per_ms;
  switch (mesh.optimizer) {
    case OptimizerSharding::kReplicated:
      out.weights_mb = wb * params_gpu / 1e6, out.grads_mb = gb * params_gpu / 1e6, out.optimizer_mb = ob * params_gpu / 1e6;
      break;
    case OptimizerSharding::kDistributed:
      out.weights_mb = wb * params_gpu / 1e6, out.grads_mb = gb * params_gpu / 1e6, out.optimizer_mb = ob * shard / 1e6;
      break;
    case OptimizerSharding::kFsdp:  // the shard, and the stage's weights and gradients gathered while it runs
      out.weights_mb = wb * (shard + params_gpu) / 1e6, out.grads_mb = gb * (shard + params_gpu) / 1e6;
      out.optimizer_mb = ob * shard / 1e6;
      out.unsharded_mb = (wb + gb) * params_gpu / 1e6;
      break;
  }
  d.params_m = (out.weights_mb + out.grads_mb + out.optimizer_mb - out.unsharded_mb) / bytes_per_param;
  return out;
}

bool has_data_parallel_step(const Mesh& m, double dense_grad_mb, double expert_grad_mb) {
  return (static_cast<long long>(m.data) * m.context > 1 && dense_grad_mb > 0) ||
         (m.expert_data() > 1 && expert_grad_mb > 0);
}

double reduce_grad_ms(const Mesh& m, const MeshLinks& links, double dense_grad_mb, double expert_grad_mb) {
  const bool all_reduce = m.optimizer == OptimizerSharding::kReplicated;
  GroupPlacement dc;  // data x context: tensor innermost, then context, then data
  dc.size = m.data * m.context;
  dc.stride = m.tensor;
  // A buffer with nothing in it (a dense model's expert gradients) is not reduced.
  auto ring = [&](const GroupPlacement& p, double mb) { return mb > 0 ? ring_ms(links, p, mb * 1e6, all_reduce) : 0.0; };
  return ring(place_group(m, dc), dense_grad_mb) + ring(group_placement(m, MeshGroup::kExpertData), expert_grad_mb);
}

double unshard_ms(const Mesh& m, const MeshLinks& links, double dense_weight_mb, double expert_weight_mb) {
  GroupPlacement dc;
  dc.size = m.data * m.context;
  dc.stride = m.tensor;
  auto ring = [&](const GroupPlacement& p, double mb) { return mb > 0 ? ring_ms(links, p, mb * 1e6) : 0.0; };
  return ring(place_group(m, dc), dense_weight_mb) + ring(group_placement(m, MeshGroup::kExpertData), expert_weight_mb);
}

double data_parallel_step_ms(const Mesh& m, const MeshLinks& links, double dense_grad_mb, double expert_grad_mb,
                             double dense_weight_mb, double expert_weight_mb, double optimizer_step_ms) {
  const double gather = m.optimizer == OptimizerSharding::kDistributed
                            ? unshard_ms(m, links, dense_weight_mb, expert_weight_mb)
                            : 0.0;
  return reduce_grad_ms(m, links, dense_grad_mb, expert_grad_mb) + optimizer_step_ms + gather;
}

MeshLayerCosts explicit_mesh_memory(double params_m, const Mesh& mesh, double bytes_per_param) {
  MeshLayerCosts out;
  out.derived = false;
  const double params_gpu = params_m * 1e6;
  const double shard = params_gpu / (static_cast<double>(mesh.data) * mesh.context);
  const double wb = std::min(2.0, bytes_per_param), gb = std::min(4.0, bytes_per_param - wb);
  const double ob = bytes_per_param - wb - gb;
  out.params_per_gpu_m = params_m;
  out.dense_grad_mb = gb * params_m;
  out.dense_weight_mb = wb * params_m;
  switch (mesh.optimizer) {
    case OptimizerSharding::kReplicated:
      out.weights_mb = wb * params_m, out.grads_mb = gb * params_m, out.optimizer_mb = ob * params_m;
      break;
    case OptimizerSharding::kDistributed:
      out.weights_mb = wb * params_m, out.grads_mb = gb * params_m, out.optimizer_mb = ob * shard / 1e6;
      break;
    case OptimizerSharding::kFsdp:
      out.weights_mb = wb * (shard / 1e6 + params_m), out.grads_mb = gb * (shard / 1e6 + params_m);
      out.optimizer_mb = ob * shard / 1e6;
      out.unsharded_mb = (wb + gb) * params_m;
      break;
  }
  out.gpu.params_m = (out.weights_mb + out.grads_mb + out.optimizer_mb - out.unsharded_mb) / bytes_per_param;
  return out;
}

Status check_mesh_architecture(const std::vector<Component>& kind, const Architecture& A, const Mesh& m,
                               const std::string& what, const SourceLoc& at) {
  auto divisible = [&](const std::optional<long long>& v, std::optional<long long> dflt, const char* field,
                       int degree, const char* group) -> Status {
    const std::optional<long long> x = v ? v : dflt;
    if (degree > 1 && x && *x % degree != 0)
      return Status::bad_input(fmt::format("{}: architecture.{} ({}) must be divisible by parallel.{} ({})", what, field,
                                           *x, group, degree),
                               at);
    return Status::ok();
  };
  for (Component c : kind) {
    switch (c) {
      case Component::kAttention:
      case Component::kLinearAttention:
        PS_RETURN_IF_ERROR(divisible(A.num_attention_heads, std::nullopt, "num_attention_heads", m.tensor, "tensor"));
        PS_RETURN_IF_ERROR(divisible(A.num_kv_heads, A.num_attention_heads, "num_kv_heads", m.tensor, "tensor"));
        break;
      case Component::kMla:
        PS_RETURN_IF_ERROR(divisible(A.num_attention_heads, std::nullopt, "num_attention_heads", m.tensor, "tensor"));
        break;
      case Component::kGatedDeltaNet:
        PS_RETURN_IF_ERROR(divisible(A.deltanet_key_heads, std::nullopt, "deltanet_key_heads", m.tensor, "tensor"));
        PS_RETURN_IF_ERROR(
            divisible(A.deltanet_value_heads, A.deltanet_key_heads, "deltanet_value_heads", m.tensor, "tensor"));
        break;
      case Component::kMamba:
        if (A.mamba_num_heads)
          PS_RETURN_IF_ERROR(divisible(A.mamba_num_heads, std::nullopt, "mamba_num_heads", m.tensor, "tensor"));
        PS_RETURN_IF_ERROR(divisible(A.mamba_groups, 1, "mamba_groups", m.tensor, "tensor"));
        break;
      case Component::kMoe:
        PS_RETURN_IF_ERROR(divisible(A.moe_num_experts, std::nullopt, "moe_num_experts", m.expert, "expert"));
        break;
      default:
        break;
    }
    const bool core = c == Component::kAttention || c == Component::kMla;
    if (core && m.context > 1 && A.seq_length && *A.seq_length % (2LL * m.context) != 0)
      return Status::bad_input(
          fmt::format("{}: architecture.seq_length ({}) must be divisible by 2 x parallel.context ({}): context "
                      "parallelism gives every GPU two chunks of the sequence to balance causal attention",
                      what, *A.seq_length, 2 * m.context),
          at);
  }
  return Status::ok();
}

}  // namespace ps
