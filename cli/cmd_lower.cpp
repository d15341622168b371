// `pipesmith lower MODEL.yaml` — read the inputs, lower the model to the layer DAG and print its IR
// summary (layers, per-type costs, totals per type, model-state memory) as a text table or JSON.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "cli/spec_flags.h"
#include "ir/cost_model.h"
#include "ir/graph.h"
#include "ir/json_write.h"
#include "ir/mesh.h"
#include "ir/model.h"
#include "ir/problem.h"
#include "synth/plan/plan_spec.h"

namespace ps::cli {

namespace {

struct LowerArgs {
  std::string model_path;
  std::string cluster_path;
  std::optional<int> devices;
  std::optional<int> microbatches;
  std::optional<double> memory_gb;
  bool json = false;
  MeshFlags mesh;
  // The plan whose stages the mesh's memory is shown for (only with a mesh), as given; read as synth
  // reads it (read_plan_given), the unset parts even and sequential.
  PlanGiven plan;
};



// A text table: first row is the header; columns holding numbers are right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> right)
      : right_(std::move(right)) {
    rows_.push_back(std::move(header));
  }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const {
    std::vector<size_t> w(rows_[0].size(), 0);
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    }
    std::string out;
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        if (i > 0) line += "  ";
        line += right_[i] ? fmt::format("{:>{}}", r[i], w[i]) : fmt::format("{:<{}}", r[i], w[i]);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

std::string f3(double v) {
  return fmt::format("{:.3f}", v);
}
std::string f1(double v) {
  return fmt::format("{:.1f}", v);
}
std::string link_str(const LinkModel& l) {
  return fmt::format("{:g} GB/s, {:g} us latency", l.bandwidth_gb_per_s, l.latency_us);
}

// Layers that read more than their predecessor: "29 <- 0, 27".
std::vector<std::string> extra_inputs(const Model& m) {
  std::vector<std::string> out;
  for (const Layer& l : m.layers) {
    bool chain = l.id == 0 ? l.inputs.empty() : (l.inputs.size() == 1 && l.inputs[0] == l.id - 1);
    if (chain) continue;
    std::string s = fmt::format("layer {} <- ", l.id);
    for (size_t i = 0; i < l.inputs.size(); ++i) s += (i ? ", " : "") + std::to_string(l.inputs[i]);
    out.push_back(s);
  }
  return out;
}

std::string text_summary(const LowerArgs& a, const Spec& spec, const ModelSummary& s) {
  const Model& m = spec.model;
  const Cluster& c = spec.cluster;
  std::string out;
  out += fmt::format("model     {}  ({})\n", s.name, a.model_path);
  out += fmt::format("layers    {}\n", s.layers);
  for (size_t i = 0; i < s.layer_string.size(); i += 80) {
    out += fmt::format("          {}\n", s.layer_string.substr(i, 80));
  }
  if (s.is_chain) {
    out += fmt::format("graph     chain, {} edges\n", s.edges);
  } else {
    std::vector<std::string> extra = extra_inputs(m);
    out += fmt::format("graph     DAG, {} edges; layers with inputs besides the previous layer: ",
                       s.edges);
    for (size_t i = 0; i < extra.size(); ++i) out += (i ? "; " : "") + extra[i];
    out += "\n";
  }
  out +=
      fmt::format("cluster   {}: {} devices, {}; link {}\n", c.name, c.devices,
                  c.memory_gb > 0 ? fmt::format("{:g} GB each", c.memory_gb) : "unlimited memory",
                  link_str(c.link));
  if (c.devices_per_node > 0) {
    out += fmt::format("          {} devices per node; inter-node link {}\n", c.devices_per_node,
                       link_str(c.inter_node_link));
  }
  out += fmt::format("pipeline  {} microbatches, {:g} bytes/param\n\n", spec.pipeline.microbatches,
                     spec.pipeline.bytes_per_param);

  out += "Layer types (one layer, one microbatch):\n";
  Table t({"sym", "name", "kind", "count", "F ms", "I ms", "W ms", "act MB", "stash MB", "out MB",
           "params M", "backward"},
          {false, false, false, true, true, true, true, true, true, true, true, false});
  for (const TypeTotals& tt : s.per_type) {
    const LayerType& lt = m.types.at(tt.symbol);
    t.add({std::string(1, tt.symbol), lt.name, lt.kind.empty() ? "-" : lt.kind,
           std::to_string(tt.count), f3(lt.forward_ms), f3(lt.backward_input_ms),
           f3(lt.backward_weight_ms), f1(lt.activation_mb), f1(lt.wgrad_stash_mb), f1(lt.output_mb),
           f1(lt.params_m), lt.split_backward ? "I+W" : "B only"});
  }
  out += t.str();
  std::string joined;
  for (const auto& [sym, lt] : m.types)
    if (lt.joins_next) joined += fmt::format("{}'{}'", joined.empty() ? "" : ", ", sym);
  if (!joined.empty())
    out += fmt::format("sublayers: {} join the next layer (one model layer; Megatron-style partitions do not cut after them)\n",
                       joined);
  out += "\n";

  out += "Totals per type (all layers of the type, one microbatch):\n";
  Table tot(
      {"sym", "name", "count", "F ms", "I ms", "W ms", "share of F+I+W", "act MB", "params M"},
      {false, false, true, true, true, true, true, true, true});
  double all = s.total_fwd_ms + s.total_bwd_input_ms + s.total_bwd_weight_ms;
  auto share = [&](double v) { return all > 0 ? fmt::format("{:.1f}%", 100.0 * v / all) : "-"; };
  for (const TypeTotals& tt : s.per_type) {
    tot.add({std::string(1, tt.symbol), tt.name, std::to_string(tt.count), f3(tt.fwd_ms),
             f3(tt.bwd_input_ms), f3(tt.bwd_weight_ms),
             share(tt.fwd_ms + tt.bwd_input_ms + tt.bwd_weight_ms), f1(tt.activation_mb),
             f1(tt.params_m)});
  }
  tot.add({"all", "", std::to_string(s.layers), f3(s.total_fwd_ms), f3(s.total_bwd_input_ms),
           f3(s.total_bwd_weight_ms), share(all), f1(s.total_activation_mb), f1(s.total_params_m)});
  out += tot.str() + "\n";
  if (s.mtp_params_m > 0)
    out += fmt::format("parameters  {:.1f} M in all; {:.1f} M without the MTP modules (layer types named mtp…)\n",
                       s.total_params_m, s.total_params_m - s.mtp_params_m);

  if (spec.mesh) {  // params_m is one GPU's model state over bytes/param: the stages say it in MB
    out += "(with a mesh, every number above is one GPU's; params M is the model state on one GPU / bytes/param)\n";
    return out;
  }
  out += fmt::format(
      "model-state memory  {:.1f} GB ({:.1f} M params x {:g} bytes/param); {:.1f} GB per device "
      "if split evenly over {} devices",
      s.model_state_gb, s.total_params_m, spec.pipeline.bytes_per_param,
      s.model_state_gb / c.devices, c.devices);
  if (c.memory_gb > 0) out += fmt::format(" (device memory {:g} GB)", c.memory_gb);
  out += "\n";
  return out;
}

// One stage's memory on one GPU under the mesh.
struct StageMemory {
  int stage = 0, device = 0, first = 0, last = 0;
  double params_per_gpu_m = 0, weights_mb = 0, grads_mb = 0, optimizer_mb = 0, model_state_mb = 0,
         activation_mb = 0;
};

Result<std::vector<StageMemory>> mesh_stages(const Spec& spec, const PlanSpec& plan_words) {
  Result<NamedPlan> plan = resolve_plan(spec, plan_words);
  if (!plan.ok()) return plan.status();
  Result<Problem> problem = make_problem(spec, plan->partition, plan->placement);
  if (!problem.ok()) return problem.status();
  std::vector<StageMemory> out;
  for (int s = 0; s < problem->num_stages(); ++s) {
    const StageSpec& st = problem->stages[s];
    StageMemory m{s, st.device, st.first_layer, st.last_layer};
    for (int l = st.first_layer; l <= st.last_layer; ++l) {
      const MeshLayerCosts& c = spec.mesh_types.at(spec.model.layers[l].type);
      m.params_per_gpu_m += c.params_per_gpu_m;
      m.weights_mb += c.weights_mb;
      m.grads_mb += c.grads_mb;
      m.optimizer_mb += c.optimizer_mb;
    }
    m.model_state_mb = problem->model_state_mb(StageId{s});
    m.activation_mb = st.activation_mb;
    out.push_back(m);
  }
  return out;
}

const char* group_link(const Mesh& m, MeshGroup g) {
  const GroupPlacement p = group_placement(m, g);
  return p.size <= 1 ? "-" : p.nodes > 1 ? "inter-node" : "NVLink";
}

std::string mesh_text(const Spec& spec, const std::vector<StageMemory>& stages, const std::string& plan_desc) {
  const Mesh& m = *spec.mesh;
  std::string out;
  out += fmt::format("mesh      {} GPUs{}: pipeline {} x data {} x context {}{} x tensor {}{}; optimizer {}\n", m.gpus,
                     m.gpus_per_node > 0 ? fmt::format(" ({} per node)", m.gpus_per_node) : " (one node)", m.pipeline,
                     m.data, m.context, m.context > 1 ? fmt::format(" ({})", cp_comm_name(m.cp_comm)) : "", m.tensor,
                     m.sequence_parallel ? " (sequence parallel)" : "", optimizer_name(m.optimizer));
  out += fmt::format("          experts: expert {} x expert_tensor {} x expert_data {}\n", m.expert, m.expert_tensor,
                     m.expert_data());
  out += fmt::format("          links: tensor {}, context {}, expert {}, expert_tensor {}, data {}\n",
                     group_link(m, MeshGroup::kTensor), group_link(m, MeshGroup::kContext),
                     group_link(m, MeshGroup::kExpert), group_link(m, MeshGroup::kExpertTensor),
                     group_link(m, MeshGroup::kData));
  out += fmt::format("batch     {} sequences per microbatch, {} per iteration ({} microbatches per data-parallel rank)\n\n",
                     m.micro_batch, m.global_batch, spec.pipeline.microbatches);
  out += "Time split per layer type (one layer, one microbatch, one GPU; F+I+W ms):\n";
  Table t({"sym", "name", "compute", "TP", "CP", "EP", "total", "params/GPU M", "state/GPU MB"},
          {false, false, true, true, true, true, true, true, true});
  for (const auto& [sym, c] : spec.mesh_types) {
    const LayerType& lt = spec.model.types.at(sym);
    const double total = lt.forward_ms + lt.backward_input_ms + lt.backward_weight_ms;
    const bool derived = c.derived;  // a structured binding is not captured by every compiler in use (clang 14)
    auto ms = [derived](double v) { return derived ? f3(v) : std::string("-"); };
    t.add({std::string(1, sym), lt.name, ms(c.compute_ms), ms(c.tp_ms), ms(c.cp_ms), ms(c.ep_ms), f3(total),
           f1(c.params_per_gpu_m), f1(c.weights_mb + c.grads_mb + c.optimizer_mb)});
  }
  out += t.str();
  out += fmt::format("\nMemory per GPU of each stage ({}; activation per microbatch):\n", plan_desc);
  Table st({"stage", "device", "layers", "params/GPU M", "weights MB", "grads MB", "optimizer MB", "state MB",
            "act MB"},
           {true, true, false, true, true, true, true, true, true});
  for (const StageMemory& s : stages)
    st.add({std::to_string(s.stage), std::to_string(s.device), fmt::format("{}-{}", s.first, s.last),
            f1(s.params_per_gpu_m), f1(s.weights_mb), f1(s.grads_mb), f1(s.optimizer_mb), f1(s.model_state_mb),
            f1(s.activation_mb)});
  out += st.str();
  return out;
}

nlohmann::ordered_json link_json(const LinkModel& l) {
  return {{"bandwidth_gb_per_s", l.bandwidth_gb_per_s}, {"latency_us", l.latency_us}};
}

std::string json_summary(const LowerArgs& a, const Spec& spec, const ModelSummary& s,
                         const std::vector<StageMemory>& stages) {
  using J = nlohmann::ordered_json;
  const Model& m = spec.model;
  J j;
  j["name"] = s.name;
  j["file"] = a.model_path;
  j["layers"] = s.layers;
  j["edges"] = s.edges;
  j["is_chain"] = s.is_chain;
  j["layer_string"] = s.layer_string;
  J list = J::array();
  for (const Layer& l : m.layers) {
    list.push_back(J{{"id", l.id}, {"type", std::string(1, l.type)}, {"inputs", l.inputs}});
  }
  j["layer_list"] = list;
  J types = J::array();
  for (const TypeTotals& tt : s.per_type) {
    const LayerType& lt = m.types.at(tt.symbol);
    types.push_back(J{{"symbol", std::string(1, lt.symbol)},
                      {"name", lt.name},
                      {"kind", lt.kind},
                      {"count", tt.count},
                      {"forward_ms", lt.forward_ms},
                      {"backward_input_ms", lt.backward_input_ms},
                      {"backward_weight_ms", lt.backward_weight_ms},
                      {"weight_walk_ms", lt.weight_walk_ms},
                      {"activation_mb", lt.activation_mb},
                      {"wgrad_stash_mb", lt.wgrad_stash_mb},
                      {"output_mb", lt.output_mb},
                      {"params_m", lt.params_m},
                      {"split_backward", lt.split_backward},
                      {"joins_next", lt.joins_next},
                      {"total", J{{"forward_ms", tt.fwd_ms},
                                  {"backward_input_ms", tt.bwd_input_ms},
                                  {"backward_weight_ms", tt.bwd_weight_ms},
                                  {"activation_mb", tt.activation_mb},
                                  {"params_m", tt.params_m}}}});
  }
  j["layer_types"] = types;
  j["totals"] = J{{"forward_ms", s.total_fwd_ms},
                  {"backward_input_ms", s.total_bwd_input_ms},
                  {"backward_weight_ms", s.total_bwd_weight_ms},
                  {"activation_mb", s.total_activation_mb},
                  {"params_m", s.total_params_m},
                  {"mtp_params_m", s.mtp_params_m}};
  j["model_state_gb"] = s.model_state_gb;
  const Cluster& c = spec.cluster;
  J cl{{"name", c.name},
       {"devices", c.devices},
       {"memory_gb", c.memory_gb},
       {"link", link_json(c.link)}};
  if (c.devices_per_node > 0) {
    cl["devices_per_node"] = c.devices_per_node;
    cl["inter_node_link"] = link_json(c.inter_node_link);
  }
  j["cluster"] = cl;
  j["pipeline"] = J{{"microbatches", spec.pipeline.microbatches},
                    {"bytes_per_param", spec.pipeline.bytes_per_param}};
  if (spec.mesh) {
    const Mesh& m = *spec.mesh;
    J groups = J::object();
    for (MeshGroup g : {MeshGroup::kTensor, MeshGroup::kContext, MeshGroup::kExpert, MeshGroup::kExpertTensor,
                        MeshGroup::kData, MeshGroup::kExpertData}) {
      const GroupPlacement p = group_placement(m, g);
      groups[mesh_group_name(g)] = J{{"size", p.size}, {"stride", p.stride}, {"nodes", p.nodes}};
    }
    j["mesh"] = J{{"gpus", m.gpus},
                  {"gpus_per_node", m.gpus_per_node},
                  {"pipeline", m.pipeline},
                  {"data", m.data},
                  {"context", m.context},
                  {"tensor", m.tensor},
                  {"expert", m.expert},
                  {"expert_tensor", m.expert_tensor},
                  {"expert_data", m.expert_data()},
                  {"sequence_parallel", m.sequence_parallel},
                  {"optimizer", optimizer_name(m.optimizer)},
                  {"cp_comm_type", cp_comm_name(m.cp_comm)},
                  {"micro_batch", m.micro_batch},
                  {"global_batch", m.global_batch},
                  {"groups", groups}};
    J split = J::array();
    for (const auto& [sym, c] : spec.mesh_types)
      split.push_back(J{{"symbol", std::string(1, sym)},
                        {"derived", c.derived},
                        {"compute_ms", c.compute_ms},
                        {"tp_ms", c.tp_ms},
                        {"cp_ms", c.cp_ms},
                        {"ep_ms", c.ep_ms},
                        {"params_per_gpu_m", c.params_per_gpu_m},
                        {"weights_mb", c.weights_mb},
                        {"grads_mb", c.grads_mb},
                        {"optimizer_mb", c.optimizer_mb},
                        {"model_flops", c.model_flops}});
    j["mesh_layer_types"] = split;
    J st = J::array();
    for (const StageMemory& x : stages)
      st.push_back(J{{"stage", x.stage},
                     {"device", x.device},
                     {"first_layer", x.first},
                     {"last_layer", x.last},
                     {"params_per_gpu_m", x.params_per_gpu_m},
                     {"weights_mb", x.weights_mb},
                     {"grads_mb", x.grads_mb},
                     {"optimizer_mb", x.optimizer_mb},
                     {"model_state_mb", x.model_state_mb},
                     {"activation_mb", x.activation_mb}});
    j["stages"] = st;
  }
  return dump_json(j, 2) + "\n";
}

int run_lower(const LowerArgs& a) {
  SpecOverrides o;
  o.devices = a.devices;
  o.microbatches = a.microbatches;
  o.memory_gb = a.memory_gb;
  o.parallel = mesh_overrides(a.mesh);
  Result<Spec> spec = load_spec(a.model_path, a.cluster_path, o);
  if (!spec.ok()) return report_error(spec.status());
  Result<LoweredModel> lowered = lower(spec->model);
  if (!lowered.ok()) return report_error(lowered.status());
  ModelSummary s = summarize(*spec, *lowered);
  std::vector<StageMemory> stages;
  std::string plan_desc;
  if (spec->mesh) {
    Result<PlanFixed> fixed = read_plan_given(*spec, a.plan, "--stages-per-device");
    if (!fixed.ok()) return report_error(fixed.status());
    const PlanSpec plan{fixed->partition.value_or("even"), fixed->placement.value_or("sequential"),
                        fixed->stages_per_device};
    Result<std::vector<StageMemory>> sm = mesh_stages(*spec, plan);
    if (!sm.ok()) return report_error(sm.status());
    stages = std::move(*sm);
    plan_desc = fmt::format("partition {}, placement {}, {} stages", plan.partition, plan.placement, stages.size());
  }
  std::string text = a.json ? json_summary(a, *spec, s, stages)
                            : text_summary(a, *spec, s) + (spec->mesh ? "\n" + mesh_text(*spec, stages, plan_desc) : "");
  Status st = write_text_file("-", text);
  if (!st.is_ok()) return report_error(st);
  return 0;
}

}  // namespace

Runner add_lower(CLI::App& app) {
  auto args = std::make_shared<LowerArgs>();
  CLI::App* sub =
      app.add_subcommand("lower",
                         "Read a model (and cluster) YAML, lower it to the layer DAG and print its "
                         "IR summary: layers, per-type "
                         "costs, totals per type, model-state memory. Schema: docs/inputs.md.");
  sub->add_option("model", args->model_path,
                  "Model YAML (schema 1); may also hold cluster: and pipeline: sections")
      ->required();
  sub->add_option(
      "--cluster", args->cluster_path,
      "Cluster YAML (a top-level cluster: section); replaces the model file's cluster:");
  sub->add_option("--devices", args->devices, "Number of devices P (overrides cluster.devices)")
      ->check(flags::option(limits::option::kDevices));
  sub->add_option("--microbatches", args->microbatches,
                  "Number of microbatches M (overrides pipeline.microbatches)")
      ->check(flags::option(limits::option::kMicrobatches));
  sub->add_option("--memory-limit-gb", args->memory_gb,
                  "Memory per device in GB (overrides cluster.memory_gb; 0 = "
                  "unlimited)")
      ->check(flags::memory_limit_gb());
  sub->add_flag("--json", args->json, "Print the summary as JSON instead of a text table");
  add_mesh_flags(sub, &args->mesh);
  sub->add_option("--partition", args->plan.partition,
                  "With a mesh: the partition whose stages' memory per GPU is shown (as synth's; default even)");
  sub->add_option("--placement", args->plan.placement,
                  "With a mesh: the placement of those stages (as synth's; default sequential)");
  sub->add_option("--stages-per-device", args->plan.stages_per_device,
                  "With a mesh: stages per device V (as synth's; alone, an interleaved placement)");
  sub->footer(
      fmt::format("Layer kinds for analytic costs: {}.\nExit codes: 0 ok, 1 bad input or usage.",
                  known_kinds()));
  return [args] { return run_lower(*args); };
}

}  // namespace ps::cli
