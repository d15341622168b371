#include "runtime/profile.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/limits.h"
#include "ir/model_write.h"
#include "ir/yaml_util.h"
#include "runtime/executor.h"
#include "runtime/host_memory.h"
#include "runtime/memory_rule.h"

namespace ps::rt {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string num(double v) { return fmt::format("{:.6g}", v); }

// The 1-device pipeline that measures layer type `sym`: [embedding] [block] [head] ([embedding] [head]
// for those two), warmup + repeats microbatches, F of every stage, then I, then W.
struct MeasuringRun {
  BlockSpec blk;
  ExecModel pm;
  Schedule sch;
  int measured = 1;  // the stage of the measured block
};

MeasuringRun measuring_run(const ExecModel& full_model, const Model& model, char sym, const LayerType& type,
                         const ProfileOptions& opt) {
  const ExecModel* full = &full_model;
  const int M = opt.warmup + opt.repeats;
  MeasuringRun run;
  BlockSpec& blk = run.blk;
  ExecModel& pm = run.pm;
  Schedule& sch = run.sch;
  int& measured = run.measured;
  // The block this type runs as (its first layer; types without layers are profiled as placed first).
  const BlockSpec* found = nullptr;
  for (const BlockSpec& b : full->stages[0])
    if (b.layer >= 0 && model.layers[b.layer].type == sym) {
      found = &b;
      break;
    }
  if (found) {
    blk = *found;
    blk.shard = 0;  // a shard of a vocabulary-parallel head is measured as a head of its classes
    blk.shards = 1;
    blk.class_offset = 0;
  } else {
    // A type no layer uses: its block at the base width.
    blk.kind = block_kind_of(type);
    blk.hidden = std::max(4, static_cast<int>(opt.model.hidden * opt.model.scale + 0.5));
    blk.classes = blk.kind == BlockKind::kHead ? full->vocab_out : full->vocab_in;
  }
  // The measuring pipeline: [embedding] [block] [head], or [embedding] [head] for those two.
  pm = *full;
  pm.microbatches = M;
  pm.notes.clear();
  BlockSpec emb, head;
  emb.kind = BlockKind::kEmbedding;
  emb.classes = full->vocab_in;
  head.kind = BlockKind::kHead;
  head.classes = full->vocab_out;
  if (blk.kind == BlockKind::kEmbedding) {
    pm.stages = {{blk}, {head}};
    measured = 0;
  } else if (blk.kind == BlockKind::kHead) {
    pm.vocab_out = blk.classes;
    pm.stages = {{emb}, {blk}};
  } else {
    pm.stages = {{emb}, {blk}, {head}};
  }
  int index = 0;
  for (auto& st : pm.stages)
    for (BlockSpec& b : st) b.index = index++;
  const int S = pm.num_stages();
  sch.problem.name = "profile";
  sch.problem.devices = 1;
  sch.problem.microbatches = M;
  for (int s = 0; s < S; ++s) {
    StageSpec st;
    st.device = 0;
    sch.problem.stages.push_back(st);
  }
  sch.programs.resize(1);
  for (int m = 0; m < M; ++m) {
    for (int s = 0; s < S; ++s) sch.programs[0].push_back(Action{OpType::F, StageId{s}, MicrobatchId{m}, {}});
    for (int s = S - 1; s >= 0; --s) sch.programs[0].push_back(Action{OpType::I, StageId{s}, MicrobatchId{m}, {}});
    for (int s = S - 1; s >= 0; --s) sch.programs[0].push_back(Action{OpType::W, StageId{s}, MicrobatchId{m}, {}});
  }
  return run;
}

// The executable model of the whole model as one stage: the widths `pipesmith run` gives its blocks.
Result<ExecModel> whole_model(const Model& model, const ProfileOptions& opt) {
  for (auto [o, v] : {std::pair{limits::option::kProfileRepeats, opt.repeats},
                      std::pair{limits::option::kProfileWarmup, opt.warmup},
                      std::pair{limits::option::kTokens, opt.model.tokens}})
    if (Status st = limits::check_option(o, v); !st) return st;
  if (model.layers.empty()) return Status::bad_input("the model has no layers");
  Problem whole;
  whole.name = model.name;
  whole.devices = 1;
  whole.microbatches = 1;
  StageSpec all;
  all.first_layer = 0;
  all.last_layer = static_cast<int>(model.layers.size()) - 1;
  whole.stages.push_back(all);
  return build_exec_model(whole, &model, opt.model);
}

}  // namespace

Result<MemoryEstimate> estimate_profile_memory(const Spec& spec, const ProfileOptions& opt) {
  auto full = whole_model(spec.model, opt);
  if (!full) return full.status();
  MemoryEstimate most;
  for (const auto& [sym, type] : spec.model.types) {  // one measuring run at a time: the largest counts
    const MeasuringRun run = measuring_run(*full, spec.model, sym, type, opt);
    const MemoryEstimate e = estimate_run_memory(run.sch, run.pm, false);
    if (e.total() > most.total()) most = e;
  }
  return most;
}

Result<ProfileResult> profile_layer_types(const Spec& spec, Backend& backend, const ProfileOptions& opt) {
  if (backend.num_devices() != 1) return Status::error(ErrorCode::kRuntime, "profiling needs a 1-device backend");
  const Model& model = spec.model;
  auto full = whole_model(model, opt);
  if (!full) return full.status();
  ProfileResult res;
  res.backend = backend.name();
  res.where = backend.device(0).describe();
  res.tokens = full->tokens;
  res.d_model = full->d_model;
  res.scale = opt.model.scale;
  for (const auto& [sym, type] : model.types) {
    MeasuringRun run = measuring_run(*full, model, sym, type, opt);
    const BlockSpec& blk = run.blk;
    const ExecModel& pm = run.pm;
    const Schedule& sch = run.sch;
    const int measured = run.measured;
    ExecOptions eo;
    eo.timeout_s = opt.timeout_s;
    eo.collect_gradients = false;
    ExecResult r = execute(sch, pm, backend, eo);
    if (!r.status.is_ok()) return r.status;
    std::vector<double> f, i, w;
    const auto& prog = sch.programs[0];
    const auto& times = r.devices.at(0).times;
    for (size_t k = 0; k < prog.size(); ++k) {
      if (prog[k].stage.value() != measured || prog[k].mb.value() < opt.warmup) continue;
      const double ms = times[k].end_ms - times[k].start_ms;
      if (prog[k].type == OpType::F) f.push_back(ms);
      if (prog[k].type == OpType::I) i.push_back(ms);
      if (prog[k].type == OpType::W) w.push_back(ms);
    }
    const StageBytes bytes = stage_slot_bytes(pm, measured);
    TypeProfile tp;
    tp.symbol = sym;
    tp.name = type.name;
    tp.kind = blk.kind;
    tp.width = blk.kind == BlockKind::kMlp ? blk.hidden : blk.classes;
    tp.forward_ms = median(f);
    tp.backward_input_ms = median(i);
    tp.backward_weight_ms = median(w);
    tp.activation_mb = static_cast<double>(std::max(bytes.after_forward, bytes.after_input)) / 1e6;
    tp.wgrad_stash_mb = static_cast<double>(bytes.after_input) / 1e6;
    tp.output_mb = blk.kind == BlockKind::kHead ? 0.0 : static_cast<double>(pm.boundary_count() * 4) / 1e6;
    tp.params_m = static_cast<double>(pm.stage_param_count(measured)) / 1e6;
    tp.split_backward = type.split_backward;
    res.types.push_back(tp);
  }
  return res;
}

std::string format_profiled_model_yaml(const Spec& spec, const ProfileResult& r, const std::string& source) {
  ModelDocument d;
  d.header = fmt::format(
      "# Profiled by `pipesmith profile {}`\n"
      "# on backend {} ({}): each layer type run as the executable model's block at scale {:g}\n"
      "# (d_model {}, {} tokens per microbatch); times are medians over microbatches, memory from the\n"
      "# block's real fp32 buffers (docs/runtime.md, \"Profiling\").\n"
      "# Run schedules of this model with `pipesmith run ... --widths params --scale {:g} --tokens {}`.\n",
      source, r.backend, r.where, r.scale, r.d_model, r.tokens, r.scale, r.tokens);
  d.name = yamlu::quote_scalar(spec.model.name + "-profiled");
  for (const TypeProfile& t : r.types) {
    std::vector<YamlItem> fields = {{"name", yamlu::quote_scalar(t.name)},
                                    {"forward_ms", num(t.forward_ms)},
                                    {"backward_input_ms", num(t.backward_input_ms)},
                                    {"backward_weight_ms", num(t.backward_weight_ms)},
                                    {"activation_mb", num(t.activation_mb)},
                                    {"wgrad_stash_mb", num(t.wgrad_stash_mb)},
                                    {"output_mb", num(t.output_mb)},
                                    {"params_m", num(t.params_m)}};
    if (!t.split_backward) fields.push_back({"split_backward", "false"});
    d.layer_types.push_back({yamlu::quote_scalar(std::string(1, t.symbol)), format_flow_map(fields)});
  }
  bool chain = true;
  for (const Layer& l : spec.model.layers)
    for (int in : l.inputs)
      if (in != l.id - 1) chain = false;
  if (chain) {
    std::string symbols;
    for (const Layer& l : spec.model.layers) symbols += l.type;
    d.layer_string = yamlu::double_quoted(symbols);
  } else {
    for (const Layer& l : spec.model.layers) {
      std::vector<YamlItem> entry = {{"type", yamlu::quote_scalar(std::string(1, l.type))}};
      std::string extra;
      for (int in : l.inputs)
        if (in != l.id - 1) extra += (extra.empty() ? "" : ", ") + std::to_string(in);
      if (!extra.empty()) entry.push_back({"inputs", "[" + extra + "]"});
      d.layer_entries.push_back(std::move(entry));
    }
  }
  const Cluster& c = spec.cluster;
  auto link = [](const LinkModel& l) {
    return format_flow_map({{"bandwidth_gb_per_s", num(l.bandwidth_gb_per_s)}, {"latency_us", num(l.latency_us)}});
  };
  if (!c.name.empty()) d.cluster.push_back({"name", yamlu::quote_scalar(c.name)});
  d.cluster.push_back({"devices", std::to_string(c.devices)});
  d.cluster.push_back({"memory_gb", num(c.memory_gb)});
  d.cluster.push_back({"link", link(c.link)});
  if (c.devices_per_node > 0) {
    d.cluster.push_back({"devices_per_node", std::to_string(c.devices_per_node)});
    d.cluster.push_back({"inter_node_link", link(c.inter_node_link)});
  }
  d.pipeline = {{"microbatches", std::to_string(spec.pipeline.microbatches)},
                {"bytes_per_param", num(spec.pipeline.bytes_per_param)}};
  return format_model_yaml(d);
}

std::string format_profile_table(const ProfileResult& r) {
  std::string out = fmt::format("profile on {} ({}): d_model {}, {} tokens per microbatch, scale {:g}\n", r.backend,
                                r.where, r.d_model, r.tokens, r.scale);
  out += fmt::format("{:<4} {:<16} {:<10} {:>7} {:>11} {:>11} {:>11} {:>14} {:>14} {:>10} {:>10}\n", "type", "name",
                     "block", "width", "forward_ms", "bwd_in_ms", "bwd_w_ms", "activation_mb", "stash_mb", "output_mb",
                     "params_m");
  for (const TypeProfile& t : r.types)
    out += fmt::format("{:<4} {:<16} {:<10} {:>7} {:>11.4f} {:>11.4f} {:>11.4f} {:>14.4f} {:>14.4f} {:>10.4f} {:>10.4f}\n",
                       std::string(1, t.symbol), t.name, block_kind_name(t.kind), t.width, t.forward_ms,
                       t.backward_input_ms, t.backward_weight_ms, t.activation_mb, t.wgrad_stash_mb, t.output_mb,
                       t.params_m);
  return out;
}

}  // namespace ps::rt
