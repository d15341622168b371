// pytorch_export.cpp — see pytorch_export.h. A straight script: check → compute-only view →
// certified programs with REDUCE_GRAD → PyTorch's own lowering, checked and simulated → plan.
#include "export/pytorch_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "export/pytorch_lowering.h"
#include "ir/dp_ops.h"
#include "ir/json_write.h"
#include "ir/recompute_ops.h"
#include "ir/schedule_io.h"
#include "verify/load.h"

namespace ps {

namespace {

using nlohmann::ordered_json;

// The peer rank of a comm op and the identity of the tensor it moves, the same on both sides:
// (producing stage, microbatch, direction).
struct Message {
  int peer = -1;
  int stage = 0;
  int mb = 0;
  bool fwd = true;
  bool operator==(const Message& o) const { return stage == o.stage && mb == o.mb && fwd == o.fwd; }
};

Message message_of(const Action& a, const Problem& pb) {
  const int s = a.stage.value(), m = a.mb.value();
  switch (a.type) {
    case OpType::SEND_F: return {pb.device_of(StageId{s + 1}), s, m, true};
    case OpType::RECV_F: return {pb.device_of(StageId{s - 1}), s - 1, m, true};
    case OpType::SEND_B: return {pb.device_of(StageId{s - 1}), s, m, false};
    case OpType::RECV_B: return {pb.device_of(StageId{s + 1}), s + 1, m, false};
    default: return {};
  }
}

// NCCL and gloo match point-to-point messages between two ranks in posting order: the k-th send
// from a to b must be the k-th receive on b from a.
Status check_pairwise_order(const Schedule& s) {
  const int P = s.num_devices();
  std::map<std::pair<int, int>, std::vector<Message>> sends, recvs;
  for (int d = 0; d < P; ++d)
    for (const Action& a : s.programs[d]) {
      if (!is_comm(a.type)) continue;
      Message m = message_of(a, s.problem);
      (is_send(a.type) ? sends[{d, m.peer}] : recvs[{m.peer, d}]).push_back(m);
    }
  for (const auto& [pair, list] : sends) {
    const auto& other = recvs[pair];
    for (size_t k = 0; k < list.size(); ++k) {
      if (k >= other.size() || !(list[k] == other[k]))
        return Status::error(ErrorCode::kRuntime,
                             fmt::format("export: send {} from rank {} to rank {} does not match receive {} there "
                                         "(the programs' message order is not pairwise consistent)",
                                         k, pair.first, pair.second, k));
    }
  }
  return Status::ok();
}

// Per stage: what the plan says about its layers.
struct StageInfo {
  ordered_json types = nullptr;
  ordered_json modules = nullptr;
  ordered_json starts_inside = nullptr;
  ordered_json ends_inside = nullptr;
  ordered_json vocab = nullptr;
  ordered_json skip = nullptr;
};

Status check_layers_match(const Problem& pb, const Spec& spec, const std::string& model_file) {
  const int n = static_cast<int>(spec.model.layers.size());
  int expect = 0;
  for (int s = 0; s < pb.num_stages(); ++s) {
    const StageSpec& st = pb.stages[s];
    if (st.first_layer < 0)
      return Status::bad_input(fmt::format("stage {} of the schedule does not record its layers ([-1, -1]), so "
                                           "'{}' cannot name them",
                                           s, model_file));
    if (st.first_layer != expect || st.last_layer >= n)
      return Status::bad_input(fmt::format("stage {} holds layers {}-{}, which do not continue a cover of model '{}' "
                                           "({} layers, from '{}'): is this the model the schedule was made for?",
                                           s, st.first_layer, st.last_layer, spec.model.name, n, model_file));
    expect = st.last_layer + 1;
  }
  if (expect != n)
    return Status::bad_input(fmt::format("the schedule's stages cover layers 0-{}, but model '{}' ('{}') has {} layers",
                                         expect - 1, spec.model.name, model_file, n));
  return Status::ok();
}

StageInfo stage_info(const StageSpec& st, const Spec& spec) {
  const Model& m = spec.model;
  StageInfo info;
  info.types = ordered_json::array();
  bool named = false;
  for (const Layer& l : m.layers) named = named || !l.modules.empty();
  if (named) info.modules = ordered_json::array();
  bool vocab = false;
  // Each module once, in first-use order: consecutive layers share one (the halves of a decoder
  // layer, the shards of a head whose layers all name [norm, lm_head]).
  std::set<std::string> seen;
  for (int l = st.first_layer; l <= st.last_layer; ++l) {
    info.types.push_back(m.type_of(l).name);
    vocab = vocab || m.type_of(l).vocab_shards > 1;
    for (const std::string& mod : m.layers[l].modules)
      if (seen.insert(mod).second) info.modules.push_back(mod);
  }
  // A tensor from a layer other than the one just before crosses a boundary of this stage (a skip
  // edge, e.g. an MTP module reading the embedding): stages must pass it along.
  bool skip = false;
  for (const Layer& l : m.layers)
    for (int u : l.inputs)
      if (u != l.id - 1 && ((u < st.first_layer && st.first_layer <= l.id) || (u <= st.last_layer && st.last_layer < l.id)))
        skip = true;
  info.skip = skip;
  // A cut is inside a layer when the model joins the two layers (joins_next) or names one module
  // for both (a decoder layer written as two pipesmith layers); shards of one head are flagged as
  // vocabulary shards instead.
  const int n = static_cast<int>(m.layers.size());
  auto inside = [&](int a) {  // the cut between layers a and a + 1
    if (a < 0 || a + 1 >= n) return false;
    if (m.type_of(a).joins_next) return true;
    if (m.type_of(a).vocab_shards > 1 && m.type_of(a + 1).vocab_shards > 1) return false;
    for (const std::string& x : m.layers[a].modules)
      for (const std::string& y : m.layers[a + 1].modules)
        if (x == y) return true;
    return false;
  };
  info.starts_inside = inside(st.first_layer - 1);
  info.ends_inside = inside(st.last_layer);
  info.vocab = vocab;
  return info;
}

// PyTorch's runtime keeps the last stage's losses in the order that stage ran its forwards and
// hands the k-th one to the backward of microbatch k, so a schedule whose last stage runs F(m) out
// of microbatch order would train on the wrong losses (no error). Microbatches are interchangeable
// in the schedule's model, so the export renames them: the k-th forward of the last stage becomes
// microbatch k everywhere. Returns original_of[k] (the schedule's microbatch now called k).
std::vector<int> loss_order(const Schedule& s) {
  const Problem& pb = s.problem;
  const int last = pb.num_stages() - 1;
  std::vector<int> original_of;
  for (const auto& prog : s.programs)
    for (const Action& a : prog)
      if (a.type == OpType::F && a.stage.value() == last) original_of.push_back(a.mb.value());
  return original_of;
}

Schedule renumbered(const Schedule& s, const std::vector<int>& original_of) {
  std::vector<int> new_of(original_of.size());
  for (size_t k = 0; k < original_of.size(); ++k) new_of[original_of[k]] = static_cast<int>(k);
  Schedule r = s;
  for (auto& prog : r.programs)
    for (Action& a : prog)
      if (!is_data_parallel(a.type)) a.mb = MicrobatchId{at(new_of, a.mb)};  // REDUCE_GRAD has no microbatch
  return r;
}

bool is_identity(const std::vector<int>& perm) {
  for (size_t k = 0; k < perm.size(); ++k)
    if (perm[k] != static_cast<int>(k)) return false;
  return true;
}

std::string plan_json(const Schedule& s, const PytorchExport& ex, const PytorchExportOptions& o,
                      const std::vector<StageInfo>& infos) {
  const Problem& pb = s.problem;
  ordered_json j;
  j["schema"] = "pipesmith-plan/1";
  j["model"] = pb.name;
  j["devices"] = pb.devices;
  j["num_stages"] = pb.num_stages();
  j["microbatches"] = pb.microbatches;
  ordered_json s2r = ordered_json::array();
  std::vector<std::vector<int>> r2s(pb.devices);
  for (int st = 0; st < pb.num_stages(); ++st) {
    s2r.push_back(pb.device_of(StageId{st}));
    r2s[pb.device_of(StageId{st})].push_back(st);
  }
  j["stage_to_rank"] = s2r;
  j["rank_to_stages"] = r2s;
  j["files"] = {{"compute_only", "compute_only.csv"}, {"compute_comms", "compute_comms.csv"}};
  j["microbatch_renumbering"] = ex.microbatch_renumbering.empty() ? ordered_json(nullptr)
                                                                  : ordered_json(ex.microbatch_renumbering);
  j["fsdp"] = o.fsdp;
  j["whole_modules"] = o.spec ? ordered_json(ex.stages_split_inside_joined == 0 && ex.stages_with_vocab_shards == 0 &&
                                             ex.stages_with_skip_inputs == 0)
                              : ordered_json(nullptr);
  ordered_json ties = ordered_json::array();
  for (const PytorchExport::Tie& t : ex.ties) {
    ordered_json ranks = ordered_json::array();
    for (int st : t.stages) ranks.push_back(pb.device_of(StageId{st}));
    ties.push_back({{"parameters", t.parameters}, {"stages", t.stages}, {"ranks", ranks}});
  }
  j["tied_parameters"] = std::move(ties);
  j["iteration_ms"] = {{"certified", ex.certified_ms},
                       {"pytorch_lowering", ex.pytorch_valid ? ordered_json(ex.pytorch_ms) : ordered_json(nullptr)}};
  if (ex.recomputes) j["iteration_ms"]["compute_comms"] = ex.comms_at_backward_ms;
  ordered_json stages = ordered_json::array();
  for (int st = 0; st < pb.num_stages(); ++st) {
    const StageSpec& sp = pb.stages[st];
    ordered_json e;
    e["stage"] = st;
    e["rank"] = sp.device;
    e["layers"] = sp.first_layer < 0 ? ordered_json(nullptr) : ordered_json::array({sp.first_layer, sp.last_layer});
    const StageInfo& info = infos[st];
    e["layer_types"] = info.types;
    e["modules"] = info.modules;
    e["starts_inside_joined_layer"] = info.starts_inside;
    e["ends_inside_joined_layer"] = info.ends_inside;
    e["vocab_shards"] = info.vocab;
    e["skip_inputs_cross"] = info.skip;
    if (sp.recomputes()) e["recompute"] = recompute_mode_name(sp.recompute);
    stages.push_back(std::move(e));
  }
  j["stages"] = std::move(stages);
  return dump_json(j, 2) + "\n";
}

// tied_embeddings: the embedding layer's module and the head's projection (the last module its layer
// names, after the final norm) are one weight. Recorded with the stages holding each side, so that the
// runtime sums their gradients over the ranks that hold them (pipesmith.torch.pipeline.build_schedule);
// a tie the plan cannot name is said in a note instead.
void record_ties(const Problem& pb, const Spec& spec, PytorchExport& ex) {
  const Model& m = spec.model;
  if (!m.tied_embeddings) return;
  int embed = -1, head = -1;
  for (const Layer& l : m.layers) {
    const std::string& kind = m.type_of(l.id).kind;
    if (kind == "embedding" && embed < 0) embed = l.id;
    if (kind == "head") head = l.id;
  }
  auto stage_of = [&](int layer) {
    for (int s = 0; s < pb.num_stages(); ++s)
      if (pb.stages[s].first_layer <= layer && layer <= pb.stages[s].last_layer) return s;
    return -1;
  };
  if (embed < 0 || head < 0 || m.layers[embed].modules.empty() || m.layers[head].modules.empty()) {
    ex.notes.push_back("the model ties its embedding and head (tied_embeddings), but its YAML names no "
                       "`module:` for them (or has no layer of kind embedding / head): plan.json records no tie, "
                       "so a stage builder must sum the two sides' gradients itself");
    return;
  }
  if (m.type_of(head).vocab_shards > 1) {
    ex.notes.push_back("the model ties its embedding and head (tied_embeddings) and its head is vocabulary-sharded: "
                       "the shards' slices of the tied weight are not recorded as ties; build those stages yourself");
    return;
  }
  PytorchExport::Tie t;
  t.parameters = {m.layers[embed].modules.front() + ".weight", m.layers[head].modules.back() + ".weight"};
  t.stages = {stage_of(embed), stage_of(head)};
  const int r0 = pb.device_of(StageId{t.stages[0]}), r1 = pb.device_of(StageId{t.stages[1]});
  ex.notes.push_back(fmt::format(
      "tied weights: {} (stage {}, rank {}) and {} (stage {}, rank {}) are one tensor (plan.json "
      "tied_parameters); pipesmith.torch's schedule sums their gradients {} after every step",
      t.parameters[0], t.stages[0], r0, t.parameters[1], t.stages[1], r1,
      r0 == r1 ? fmt::format("on rank {}", r0) : fmt::format("over ranks {} and {}", std::min(r0, r1), std::max(r0, r1))));
  ex.ties.push_back(std::move(t));
}

// The schedule's certified order with the simulated times as predicted times (for idle cells).
Schedule with_simulated_times(const Report& rep) {
  Schedule s = rep.checked;
  s.predicted.assign(s.programs.size(), {});
  for (size_t d = 0; d < s.programs.size(); ++d)
    for (const OpInterval& t : rep.sim->times[d]) s.predicted[d].push_back(OpTime{t.start_ms, t.end_ms});
  return s;
}

// PyTorch's own lowering of the compute-only programs (without R ops), checked and simulated as
// PyTorch runs them: a recomputing stage's R inside its backward, i.e. right before each I/B.
void pytorch_order(const Schedule& compute_only, PytorchExport& ex) {
  PtLowering low = pytorch_lower(compute_only);
  ex.pytorch_lowered = low.ok;
  if (!low.ok) {
    ex.pytorch_blocked = low.blocked;
    return;
  }
  Schedule pt = compute_only;
  pt.predicted.clear();
  pt.certificate.reset();
  pt.programs = ops_of(low.programs);
  pt = recompute_at_backward(pt);
  VerifyOptions vo;
  vo.recompute_in_backward = true;
  Report r = verify(pt, vo);
  ex.pytorch_valid = r.valid;
  ex.pytorch_safe_under = r.safe_under;
  if (r.valid && r.sim) ex.pytorch_ms = r.sim->makespan_ms;
}

// The certified order as PyTorch runs compute_comms.csv: each R inside its backward (right before
// its I/B, and waiting for that backward's gradient as the backward does).
Status comms_at_backward(const Schedule& certified, VerifyOptions vo, PytorchExport& ex) {
  ex.recompute_ops_moved = recompute_ops_moved(certified);
  ex.comms_at_backward_ms = ex.certified_ms;
  ex.recomputes = false;
  for (const auto& prog : certified.programs)
    for (const Action& a : prog) ex.recomputes = ex.recomputes || a.type == OpType::R;
  if (!ex.recomputes) return Status::ok();
  vo.recompute_in_backward = true;
  Report r = verify(recompute_at_backward(certified), vo);
  if (!r.valid || !r.sim)
    return Status::error(ErrorCode::kRuntime,
                         fmt::format("export: the certified order with its {} R op(s) moved right before their "
                                     "backwards is rejected by the checker: {}",
                                     ex.recompute_ops_moved,
                                     r.violations.empty() ? std::string("no simulation") : r.violations.front().message));
  ex.comms_at_backward_ms = r.sim->makespan_ms;
  return Status::ok();
}

void recompute_notes(const Schedule& s, PytorchExport& ex) {
  const Problem& pb = s.problem;
  std::set<int> split;  // recomputing stages that run I (and W) rather than B
  for (const auto& prog : s.programs)
    for (const Action& a : prog)
      if (a.type == OpType::I && at(pb.stages, a.stage).recomputes()) split.insert(a.stage.value());
  int recomputing = 0;
  for (const StageSpec& st : pb.stages) recomputing += st.recomputes() ? 1 : 0;
  if (recomputing == 0) return;
  ex.notes.push_back(fmt::format(
      "{} stage(s) recompute: the files drop their R ops, plan.json marks each stage's mode "
      "(stages[].recompute) and pipesmith.torch runs those stages under torch.utils.checkpoint, which "
      "recomputes when the backward starts",
      recomputing));
  if (!split.empty())
    ex.notes.push_back(fmt::format(
        "stage(s) {} recompute and split their backward: PyTorch recomputes in I and again in W (once per "
        "parameter group W differentiates); the figures count the R in I only (docs/pytorch.md, Recomputation)",
        fmt::join(split, ",")));
}

}  // namespace

Result<ExportInput> load_export_input(const std::string& file, const std::string& model_file,
                                      const std::string& cluster_file) {
  ExportInput in;
  in.model_file = model_file;
  std::vector<std::string> notes;
  auto s = read_schedule_any(file, {}, &notes);
  if (!s) return s.status();
  const bool csv = s->generator == "pytorch-csv";
  if (csv && model_file.empty())
    return Status::bad_input(fmt::format("'{}' is a PyTorch CSV, which holds neither layers nor costs: give a model "
                                         "file (its balanced partition costs the stages, as the checker's loader "
                                         "does with a model; verify/load.h)",
                                         file),
                             SourceLoc{file, 0, 0});
  if (!model_file.empty() && !csv) {
    SpecOverrides ov;
    ov.devices = s->num_devices();
    ov.microbatches = s->problem.microbatches;
    auto spec = load_spec(model_file, cluster_file, ov);
    if (!spec) return spec.status();
    in.spec = std::move(*spec);
    in.schedule = std::move(*s);
    in.notes = std::move(notes);
    return in;
  }
  if (model_file.empty() && !cluster_file.empty())
    return Status::bad_input("a cluster file needs a model file (the cluster only matters with a model's costs)");
  if (csv) {
    CheckInput ci;
    ci.file = file;
    ci.model = model_file;
    ci.cluster = cluster_file;
    auto loaded = load_schedule_for_check(ci);
    if (!loaded) return loaded.status();
    SpecOverrides ov;
    ov.devices = loaded->schedule.num_devices();
    ov.microbatches = loaded->schedule.problem.microbatches;
    auto spec = load_spec(model_file, cluster_file, ov);
    if (!spec) return spec.status();
    in.spec = std::move(*spec);
    in.schedule = std::move(loaded->schedule);
    in.notes = std::move(loaded->notes);
    return in;
  }
  in.schedule = std::move(*s);
  in.notes = std::move(notes);
  return in;
}

Result<PytorchExport> export_pytorch(const Schedule& schedule, const PytorchExportOptions& o) {
  PytorchExport ex;
  VerifyOptions vo;
  vo.semantics = Semantics::kRendezvous;
  ex.report = verify(schedule, vo);
  if (!ex.report.valid || !ex.report.sim) return ex;
  ex.valid = true;
  const Schedule& checked = ex.report.checked;
  const Problem& pb = checked.problem;
  if (o.spec) PS_RETURN_IF_ERROR(check_layers_match(pb, *o.spec, o.model_file));
  PS_RETURN_IF_ERROR(check_pairwise_order(checked));
  ex.certified_ms = ex.report.sim->makespan_ms;

  const std::vector<int> original_of = loss_order(checked);
  if (static_cast<int>(original_of.size()) != pb.microbatches)
    return Status::error(ErrorCode::kRuntime,
                         fmt::format("export: the checked schedule's last stage runs {} forwards, not M = {}",
                                     original_of.size(), pb.microbatches));
  Schedule renamed = with_simulated_times(ex.report);
  if (!is_identity(original_of)) {
    renamed = renumbered(renamed, original_of);
    Report again = verify(renamed, vo);
    if (!again.valid || !again.sim || again.sim->makespan_ms != ex.certified_ms)
      return Status::error(ErrorCode::kRuntime,
                           "export: renumbering the microbatches changed the checker's verdict or timing");
    ex.microbatch_renumbering = original_of;
    ex.notes.push_back(fmt::format(
        "microbatches renumbered: the last stage runs its forwards in the order {}; PyTorch pairs losses with "
        "backwards in that order, so the files call them 0..{} (plan.json microbatch_renumbering[k] = the "
        "schedule's microbatch now called k)",
        fmt::join(original_of, ","), pb.microbatches - 1));
  }
  // PyTorch's action grammar has no R: a recomputing stage's module runs under
  // torch.utils.checkpoint, which recomputes when the stage's backward starts. The files drop the R
  // ops; the figures are those of the orders with every R moved right before its I/B.
  const Schedule files = without_recompute_ops(renamed);
  const Schedule compute_only = compute_only_view(files);
  ex.compute_only_csv = format_pytorch_csv(compute_only);
  ex.compute_comms_csv = format_pt_csv(certified_pytorch_programs(files, o.fsdp));
  pytorch_order(compute_only, ex);
  PS_RETURN_IF_ERROR(comms_at_backward(renamed, vo, ex));
  recompute_notes(checked, ex);
  if (needs_data_parallel_ops(pb)) {
    const bool fsdp = std::any_of(pb.stages.begin(), pb.stages.end(), [](const StageSpec& st) { return st.fsdp; });
    ex.notes.push_back(fmt::format(
        "data-parallel ops: compute_comms.csv keeps REDUCE_GRAD{} where the checker certified them; the pytorch "
        "order's figure places them by pipesmith's rule: REDUCE_GRAD where PyTorch's _add_reduce_grad puts it{}",
        fsdp ? ", UNSHARD and RESHARD" : "",
        fsdp ? ", UNSHARD one op ahead of each stage's first (PyTorch's own FSDP lowering prefetches a window of "
               "three stages and may gather a stage more than once, which pipesmith does not certify)"
             : ""));
  }

  std::vector<StageInfo> infos(pb.num_stages());
  if (o.spec) {
    for (int s = 0; s < pb.num_stages(); ++s) {
      infos[s] = stage_info(pb.stages[s], *o.spec);
      if (infos[s].starts_inside.get<bool>() || infos[s].ends_inside.get<bool>()) ++ex.stages_split_inside_joined;
      if (infos[s].vocab.get<bool>()) ++ex.stages_with_vocab_shards;
      if (infos[s].skip.get<bool>()) ++ex.stages_with_skip_inputs;
    }
    if (ex.stages_split_inside_joined > 0)
      ex.notes.push_back(fmt::format("{} stage(s) start or end inside a joined layer (a joins_next group, or "
                                     "layers that name one module): a module splitter cannot cut there; build "
                                     "those stages' modules yourself",
                                     ex.stages_split_inside_joined));
    if (ex.stages_with_vocab_shards > 0)
      ex.notes.push_back(fmt::format("{} stage(s) hold vocabulary shards of a sharded head: they need custom stage "
                                     "modules (docs/pytorch.md)",
                                     ex.stages_with_vocab_shards));
    if (ex.stages_with_skip_inputs > 0)
      ex.notes.push_back(fmt::format("{} stage(s) receive or pass on a tensor from a layer other than the one before "
                                     "(a skip input): their modules must carry it along (docs/pytorch.md)",
                                     ex.stages_with_skip_inputs));
    record_ties(pb, *o.spec, ex);
  } else {
    ex.notes.push_back("no model given: plan.json names no layer types or modules (a model file names them)");
  }
  ex.plan_json = plan_json(checked, ex, o, infos);
  return ex;
}

}  // namespace ps
