// schedule_yaml.cpp — the pipesmith-schedule/1 format: our own emitter (deterministic layout, numbers
// in shortest round-trip form) and its reader on yaml-cpp, every value located. docs/schedule-format.md.
#include "ir/schedule_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ir/input_file.h"
#include "ir/limits.h"
#include "ir/output_file.h"
#include "ir/schedule_io_detail.h"
#include "ir/yaml_util.h"

namespace ps {

using namespace schedule_io_detail;

namespace {

std::string link_flow(const LinkModel& l) {
  return fmt::format("{{bandwidth_gb_per_s: {}, latency_us: {}}}", num(l.bandwidth_gb_per_s),
                     num(l.latency_us));
}

// Writes `key: [a, b, c, ...]` wrapping every `per_line` items; continuation lines align under the
// first item.
void write_flow_list(std::string& out, std::string_view indent_key, const std::vector<std::string>& items,
                     size_t per_line) {
  out += indent_key;
  out += '[';
  std::string cont(indent_key.size() + 1, ' ');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) {
      out += ',';
      out += (i % per_line == 0) ? "\n" + cont : " ";
    }
    out += items[i];
  }
  out += "]\n";
}

}  // namespace

std::string format_schedule_yaml(const Schedule& s) {
  const Problem& p = s.problem;
  std::string out;
  out += fmt::format("format: {}\n", kFormat);
  if (!s.generator.empty()) out += fmt::format("generator: {}\n", yamlu::quote_scalar(s.generator));
  out += "problem:\n";
  out += fmt::format("  name: {}\n", yamlu::quote_scalar(p.name));
  out += fmt::format("  devices: {}\n", p.devices);
  out += fmt::format("  microbatches: {}\n", p.microbatches);
  out += fmt::format("  memory_gb: {}\n", num(p.memory_gb));
  out += fmt::format("  bytes_per_param: {}\n", num(p.bytes_per_param));
  out += fmt::format("  link: {}\n", link_flow(p.link));
  out += fmt::format("  devices_per_node: {}\n", p.devices_per_node);
  out += fmt::format("  inter_node_link: {}\n", link_flow(p.inter_node_link));
  out += fmt::format("  unit_costs: {}\n", boolstr(p.unit_costs));
  if (p.op_overhead_ms != 0) out += fmt::format("  op_overhead_ms: {}\n", num(p.op_overhead_ms));
  if (p.mesh.gpus > 0)
    out += fmt::format("  mesh: {{gpus: {}, tokens_per_iteration: {}, model_flops_per_token: {}, peak_tflops: {}}}\n",
                       p.mesh.gpus, num(p.mesh.tokens_per_iteration), num(p.mesh.model_flops_per_token),
                       num(p.mesh.peak_tflops));
  out += "stages:\n";
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const StageSpec& st = p.stages[i];
    out += fmt::format(
        "  - {{id: {}, device: {}, layers: [{}, {}], fwd_ms: {}, bwd_input_ms: {}, bwd_weight_ms: {}{}, "
        "activation_mb: {}, wgrad_stash_mb: {}, output_mb: {}, params_m: {}, split_backward: {}{}}}\n",
        i, st.device, st.first_layer, st.last_layer, num(st.fwd_ms), num(st.bwd_input_ms),
        num(st.bwd_weight_ms), fused_field(st, ", ", ": "), num(st.activation_mb), num(st.wgrad_stash_mb),
        num(st.output_mb),
        num(st.params_m), boolstr(st.split_backward), recompute_fields(st, ", ", ": ") + reduce_grad_field(st, ", ", ": "));
  }
  out += "programs:\n";
  for (size_t d = 0; d < s.programs.size(); ++d) {
    out += fmt::format("  - device: {}\n", d);
    std::vector<std::string> items;
    items.reserve(s.programs[d].size());
    for (const auto& [first, last] : program_cells(s.programs[d])) items.push_back(overlap_text(s.programs[d], first, last));
    write_flow_list(out, "    ops: ", items, kOpsPerLine);
  }
  if (!s.predicted.empty()) {
    out += "predicted:\n";
    for (size_t d = 0; d < s.predicted.size(); ++d) {
      out += fmt::format("  - device: {}\n", d);
      std::vector<std::string> items;
      items.reserve(s.predicted[d].size());
      for (const OpTime& t : s.predicted[d]) items.push_back(fmt::format("[{}, {}]", num(t.start_ms), num(t.end_ms)));
      write_flow_list(out, "    times: ", items, kTimesPerLine);
    }
  }
  if (s.certificate) {
    const Certificate& c = *s.certificate;
    out += "certificate:\n";
    out += fmt::format("  verdict: {}\n", yamlu::quote_scalar(c.verdict));
    out += fmt::format("  semantics: {}\n", yamlu::quote_scalar(c.semantics));
    out += fmt::format("  makespan_ms: {}\n", num(c.makespan_ms));
    out += fmt::format("  lower_bound_ms: {}\n", num(c.lower_bound_ms));
    out += fmt::format("  bubble_ratio: {}\n", num(c.bubble_ratio));
    std::vector<std::string> peaks;
    for (double g : c.peak_memory_gb) peaks.push_back(num(g));
    write_flow_list(out, "  peak_memory_gb: ", peaks, kOpsPerLine);
    out += fmt::format("  digest: {}\n", yamlu::quote_scalar(c.digest));
    if (!c.extra.empty()) {
      out += "  extra:\n";
      for (const auto& [k, v] : c.extra) {
        out += fmt::format("    {}: {}\n", yamlu::quote_scalar(k), yamlu::double_quoted(v));
      }
    }
  }
  return out;
}

namespace {

// A schedule file never carries a number that is not finite (`.inf`, `.nan`): the readers refuse them.
Status check_finite_numbers(const Schedule& s, const std::string& path) {
  auto bad = [&](const std::string& what, double v) {
    return Status::error(ErrorCode::kInvalidSchedule,
                         fmt::format("not writing '{}': {} is {}, not a finite number", path, what, v));
  };
  const Problem& p = s.problem;
  for (int i = 0; i < p.num_stages(); ++i) {
    const StageSpec& st = p.stages[i];
    for (double v : {st.fwd_ms, st.bwd_input_ms, st.bwd_weight_ms, st.bwd_ms(), st.activation_mb, st.wgrad_stash_mb,
                     st.output_mb, st.params_m, st.recompute_ms, st.recompute_kept_mb, st.reduce_grad_ms,
                     st.unshard_ms, st.unsharded_mb})
      if (!std::isfinite(v)) return bad(fmt::format("a cost of stage {}", i), v);
  }
  if (!std::isfinite(p.op_overhead_ms)) return bad("problem.op_overhead_ms", p.op_overhead_ms);
  for (const auto& times : s.predicted)
    for (const OpTime& t : times)
      if (!std::isfinite(t.start_ms) || !std::isfinite(t.end_ms)) return bad("a predicted time", t.end_ms);
  if (s.certificate) {
    const Certificate& c = *s.certificate;
    for (auto [what, v] : {std::pair{"certificate.makespan_ms", c.makespan_ms},
                           std::pair{"certificate.lower_bound_ms", c.lower_bound_ms},
                           std::pair{"certificate.bubble_ratio", c.bubble_ratio}})
      if (!std::isfinite(v)) return bad(what, v);
    for (double g : c.peak_memory_gb)
      if (!std::isfinite(g)) return bad("certificate.peak_memory_gb", g);
  }
  return Status::ok();
}

}  // namespace

Status write_schedule_yaml(const Schedule& s, const std::string& path) {
  PS_RETURN_IF_ERROR(check_finite_numbers(s, path));
  return write_text(path, format_schedule_yaml(s));
}



namespace {

using yamlu::Field;
using yamlu::Fields;

// Reads the fields of one map with located, field-named errors. `what` prefixes messages.
class FieldReader {
 public:
  FieldReader(const std::string& file, const YAML::Node& map, const Fields& fields, std::string what)
      : file_(file), map_(map), fields_(fields), what_(std::move(what)) {}

  const Field* get(std::string_view key) const { return yamlu::find(fields_, key); }

  Status missing(std::string_view key) const {
    return Status::bad_input(fmt::format("{}: missing required key '{}'", what_, key),
                             yamlu::loc_of(map_, file_));
  }

  // An integer in [min, max] (an index: a stage's id, a device), in check_option's wording.
  Status read_int(std::string_view key, bool required, long long min, long long max, int& out) const {
    return read_int(key, required, limits::IntOption{"", "", min, max}, out);
  }
  // A field that sizes the problem, checked against its entry of the options table (ir/limits.h).
  Status read_int(std::string_view key, bool required, const limits::IntOption& o, int& out) const {
    const Field* f = get(key);
    if (!f) return required ? missing(key) : Status::ok();
    auto v = yamlu::to_int(f->value, file_, name(key));
    if (!v) return v.status();
    PS_RETURN_IF_ERROR(limits::check_option(o, *v, name(key), yamlu::loc_of(f->value, file_)));
    out = static_cast<int>(*v);
    return Status::ok();
  }

  Status read_nonneg(std::string_view key, bool required, double& out) const {
    const Field* f = get(key);
    if (!f) return required ? missing(key) : Status::ok();
    auto v = yamlu::to_double(f->value, file_, name(key));
    if (!v) return v.status();
    if (*v < 0) {
      return Status::bad_input(fmt::format("{}: must be >= 0, got {}", name(key), num(*v)),
                               yamlu::loc_of(f->value, file_));
    }
    out = *v;
    return Status::ok();
  }

  Status read_double(std::string_view key, double& out) const {
    const Field* f = get(key);
    if (!f) return Status::ok();
    auto v = yamlu::to_double(f->value, file_, name(key));
    if (!v) return v.status();
    out = *v;
    return Status::ok();
  }

  Status read_bool(std::string_view key, bool& out) const {
    const Field* f = get(key);
    if (!f) return Status::ok();
    auto v = yamlu::to_bool(f->value, file_, name(key));
    if (!v) return v.status();
    out = *v;
    return Status::ok();
  }

  // An optional string may be left empty (`name:` or `name: ~` reads as "").
  Status read_string(std::string_view key, bool required, std::string& out) const {
    const Field* f = get(key);
    if (!f) return required ? missing(key) : Status::ok();
    if (!required && f->value.IsNull()) {
      out.clear();
      return Status::ok();
    }
    auto v = yamlu::to_string(f->value, file_, name(key));
    if (!v) return v.status();
    out = *v;
    return Status::ok();
  }

  std::string name(std::string_view key) const { return fmt::format("{}.{}", what_, key); }

 private:
  const std::string& file_;
  const YAML::Node& map_;
  const Fields& fields_;
  std::string what_;
};

Status read_link(const std::string& file, const YAML::Node& n, const std::string& what, LinkModel& out) {
  auto fields = yamlu::read_map(n, {"bandwidth_gb_per_s", "latency_us"}, file, what);
  if (!fields) return fields.status();
  FieldReader r(file, n, *fields, what);
  for (const char* key : {"bandwidth_gb_per_s", "latency_us"}) {  // the cluster file's rule (ir/model.h)
    double& v = std::string_view(key) == "latency_us" ? out.latency_us : out.bandwidth_gb_per_s;
    PS_RETURN_IF_ERROR(r.read_double(key, v));
    if (const std::string why = link_field_error(key, v); !why.empty())
      return Status::bad_input(fmt::format("{}: {}", r.name(key), why), yamlu::loc_of(r.get(key) ? r.get(key)->value : n, file));
  }
  return Status::ok();
}

// problem.mesh: the throughput inputs of a pipeline inside a mesh (ir/mesh.h MeshThroughput).
Status read_mesh_throughput(const std::string& file, const YAML::Node& n, MeshThroughput& t) {
  auto fields = yamlu::read_map(n, {"gpus", "tokens_per_iteration", "model_flops_per_token", "peak_tflops"}, file,
                                "problem.mesh");
  if (!fields) return fields.status();
  FieldReader r(file, n, *fields, "problem.mesh");
  int gpus = 0;
  PS_RETURN_IF_ERROR(r.read_int("gpus", true, limits::option::kMeshGpus, gpus));
  t.gpus = gpus;
  PS_RETURN_IF_ERROR(r.read_nonneg("tokens_per_iteration", true, t.tokens_per_iteration));
  PS_RETURN_IF_ERROR(r.read_nonneg("model_flops_per_token", true, t.model_flops_per_token));
  PS_RETURN_IF_ERROR(r.read_nonneg("peak_tflops", true, t.peak_tflops));
  return Status::ok();
}

Status read_problem(const std::string& file, const YAML::Node& n, Problem& p) {
  auto fields = yamlu::read_map(n,
                                {"name", "devices", "microbatches", "memory_gb", "bytes_per_param", "link",
                                 "devices_per_node", "inter_node_link", "unit_costs", "op_overhead_ms", "mesh"},
                                file, "problem");
  if (!fields) return fields.status();
  FieldReader r(file, n, *fields, "problem");
  PS_RETURN_IF_ERROR(r.read_string("name", false, p.name));
  PS_RETURN_IF_ERROR(r.read_int("devices", true, limits::option::kDevices, p.devices));
  PS_RETURN_IF_ERROR(r.read_int("microbatches", true, limits::option::kMicrobatches, p.microbatches));
  PS_RETURN_IF_ERROR(r.read_nonneg("memory_gb", false, p.memory_gb));
  PS_RETURN_IF_ERROR(r.read_nonneg("bytes_per_param", false, p.bytes_per_param));
  if (const Field* f = r.get("link")) PS_RETURN_IF_ERROR(read_link(file, f->value, "problem.link", p.link));
  PS_RETURN_IF_ERROR(r.read_int("devices_per_node", false, 0, kMaxDevices, p.devices_per_node));
  if (const Field* f = r.get("inter_node_link")) {
    PS_RETURN_IF_ERROR(read_link(file, f->value, "problem.inter_node_link", p.inter_node_link));
  }
  PS_RETURN_IF_ERROR(r.read_bool("unit_costs", p.unit_costs));
  PS_RETURN_IF_ERROR(r.read_nonneg("op_overhead_ms", false, p.op_overhead_ms));
  if (const Field* f = r.get("mesh")) PS_RETURN_IF_ERROR(read_mesh_throughput(file, f->value, p.mesh));
  return Status::ok();
}

// A stage's `recompute: full|selective` with its `recompute_ms` and `recompute_kept_mb` (both
// required with it, refused without it; kept <= activation_mb).
Status read_stage_recompute(const std::string& file, const YAML::Node& n, const FieldReader& r,
                            const std::string& what, StageSpec& st) {
  std::string mode;
  PS_RETURN_IF_ERROR(r.read_string("recompute", false, mode));
  if (const Field* f = r.get("recompute")) {
    auto m = parse_recompute_mode(mode);
    if (!m || *m == RecomputeMode::kNone)
      return Status::bad_input(fmt::format("{}.recompute: expected full or selective (leave it out for "
                                           "none), got '{}'",
                                           what, excerpt(mode)),
                               yamlu::loc_of(f->value, file));
    st.recompute = *m;
    PS_RETURN_IF_ERROR(r.read_nonneg("recompute_ms", true, st.recompute_ms));
    PS_RETURN_IF_ERROR(r.read_nonneg("recompute_kept_mb", true, st.recompute_kept_mb));
    if (st.recompute_kept_mb > st.activation_mb)
      return Status::bad_input(fmt::format("{}: recompute_kept_mb ({}) must be <= activation_mb ({})", what,
                                           num(st.recompute_kept_mb), num(st.activation_mb)),
                               yamlu::loc_of(r.get("recompute_kept_mb")->value, file));
    return Status::ok();
  }
  for (const char* key : {"recompute_ms", "recompute_kept_mb"})
    if (const Field* f = r.get(key))
      return Status::bad_input(
          fmt::format("{}.{}: given without 'recompute: full|selective'", what, key),
          yamlu::loc_of(f->key, file, yamlu::loc_of(n, file)));
  return Status::ok();
}

// `layers_loc` is set to where the `layers` value sits when the entry has one.
Status read_stage(const std::string& file, const YAML::Node& n, int index, int devices, StageSpec& st,
                  SourceLoc& layers_loc) {
  std::string what = fmt::format("stage {}", index);
  auto fields = yamlu::read_map(n,
                                {"id", "device", "layers", "fwd_ms", "bwd_input_ms", "bwd_weight_ms", "bwd_ms",
                                 "activation_mb", "wgrad_stash_mb", "output_mb", "params_m", "split_backward",
                                 "recompute", "recompute_ms", "recompute_kept_mb", "reduce_grad_ms", "unshard_ms",
                                 "unsharded_mb"},
                                file, what);
  if (!fields) return fields.status();
  FieldReader r(file, n, *fields, what);
  int id = -1;
  PS_RETURN_IF_ERROR(r.read_int("id", true, 0, kMaxDevices * 64LL, id));
  if (id != index) {
    return Status::bad_input(
        fmt::format("stages: entry {} has id {}; stages must be listed in order with ids 0, 1, 2, ...", index, id),
        yamlu::loc_of(r.get("id")->value, file));
  }
  PS_RETURN_IF_ERROR(r.read_int("device", true, 0, kMaxDevices, st.device));
  if (st.device >= devices) {
    return Status::bad_input(
        fmt::format("{}.device: device {} is out of range (problem.devices is {})", what, st.device, devices),
        yamlu::loc_of(r.get("device")->value, file));
  }
  if (const Field* f = r.get("layers")) {
    const YAML::Node& l = f->value;
    layers_loc = yamlu::loc_of(l, file, yamlu::loc_of(f->key, file));
    if (!l.IsSequence() || l.size() != 2) {
      return Status::bad_input(
          fmt::format("{}.layers: expected [first, last] (two integers), got {}", what, yamlu::kind_name(l)),
          yamlu::loc_of(l, file));
    }
    auto a = yamlu::to_int(l[0], file, what + ".layers[0]");
    if (!a) return a.status();
    auto b = yamlu::to_int(l[1], file, what + ".layers[1]");
    if (!b) return b.status();
    bool unknown = *a == -1 && *b == -1;
    if (!unknown && (*a < 0 || *b < *a || *b > (1LL << 30))) {
      return Status::bad_input(
          fmt::format("{}.layers: expected 0 <= first <= last (or [-1, -1] for unknown), got [{}, {}]", what,
                      *a, *b),
          yamlu::loc_of(l, file));
    }
    st.first_layer = static_cast<int>(*a);
    st.last_layer = static_cast<int>(*b);
  }
  PS_RETURN_IF_ERROR(r.read_nonneg("fwd_ms", true, st.fwd_ms));
  PS_RETURN_IF_ERROR(r.read_nonneg("bwd_input_ms", true, st.bwd_input_ms));
  PS_RETURN_IF_ERROR(r.read_nonneg("bwd_weight_ms", true, st.bwd_weight_ms));
  if (r.get("bwd_ms")) {
    double fused = 0;
    PS_RETURN_IF_ERROR(r.read_nonneg("bwd_ms", true, fused));
    st.fused_bwd_ms = fused;
  }
  PS_RETURN_IF_ERROR(r.read_nonneg("activation_mb", false, st.activation_mb));
  PS_RETURN_IF_ERROR(r.read_nonneg("wgrad_stash_mb", false, st.wgrad_stash_mb));
  PS_RETURN_IF_ERROR(r.read_nonneg("output_mb", false, st.output_mb));
  PS_RETURN_IF_ERROR(r.read_nonneg("params_m", false, st.params_m));
  PS_RETURN_IF_ERROR(r.read_bool("split_backward", st.split_backward));
  st.reduces_grad = r.get("reduce_grad_ms") != nullptr;  // the stage has a data-parallel step
  PS_RETURN_IF_ERROR(r.read_nonneg("reduce_grad_ms", false, st.reduce_grad_ms));
  st.fsdp = r.get("unshard_ms") != nullptr || r.get("unsharded_mb") != nullptr;  // FSDP shards the stage
  PS_RETURN_IF_ERROR(r.read_nonneg("unshard_ms", st.fsdp, st.unshard_ms));
  PS_RETURN_IF_ERROR(r.read_nonneg("unsharded_mb", st.fsdp, st.unsharded_mb));
  if (st.wgrad_stash_mb > st.activation_mb) {
    const Field* f = r.get("wgrad_stash_mb");
    return Status::bad_input(fmt::format("{}: wgrad_stash_mb ({}) must be <= activation_mb ({})", what,
                                         num(st.wgrad_stash_mb), num(st.activation_mb)),
                             yamlu::loc_of(f ? f->value : n, file));
  }
  return read_stage_recompute(file, n, r, what, st);
}

// Checks a per-device list (programs / predicted): a sequence of maps {device: d, <list_key>: [...]},
// one per device in order. Returns the maps' fields in device order.
Result<std::vector<Fields>> read_device_list(const std::string& file, const Field& field, std::string_view what,
                                             std::string_view list_key, int devices) {
  const YAML::Node& seq = field.value;
  if (!seq.IsSequence()) {
    return Status::bad_input(fmt::format("{}: expected a sequence of {{device, {}}} entries, got {}", what,
                                         list_key, yamlu::kind_name(seq)),
                             yamlu::loc_of(seq, file, yamlu::loc_of(field.key, file)));
  }
  std::vector<Fields> out;
  for (size_t i = 0; i < seq.size(); ++i) {
    const YAML::Node& e = seq[i];
    std::string ewhat = fmt::format("{}[{}]", what, i);
    auto fields = yamlu::read_map(e, {"device", list_key}, file, ewhat);
    if (!fields) return fields.status();
    FieldReader r(file, e, *fields, ewhat);
    int d = -1;
    PS_RETURN_IF_ERROR(r.read_int("device", true, 0, kMaxDevices, d));
    if (d != static_cast<int>(i)) {
      return Status::bad_input(fmt::format("{}: entry {} is for device {}; expected device {} (one entry per "
                                           "device, in device order)",
                                           what, i, d, i),
                               yamlu::loc_of(r.get("device")->value, file));
    }
    if (!r.get(list_key)) return r.missing(list_key);
    out.push_back(std::move(*fields));
  }
  if (static_cast<int>(out.size()) != devices) {
    return Status::bad_input(fmt::format("{}: has {} device entries, but problem.devices is {}", what,
                                         out.size(), devices),
                             yamlu::loc_of(field.key, file));
  }
  return out;
}

Status read_programs(const std::string& file, const Field& field, int devices, Schedule& s) {
  auto entries = read_device_list(file, field, "programs", "ops", devices);
  if (!entries) return entries.status();
  s.programs.assign(entries->size(), {});
  for (size_t d = 0; d < entries->size(); ++d) {
    const YAML::Node& ops = yamlu::find((*entries)[d], "ops")->value;
    if (!ops.IsSequence()) {
      return Status::bad_input(
          fmt::format("programs[{}].ops: expected a sequence of actions like [0F0, 0SEND_F0], got {}", d,
                      yamlu::kind_name(ops)),
          yamlu::loc_of(ops, file, yamlu::loc_of(yamlu::find((*entries)[d], "ops")->key, file)));
    }
    auto& prog = s.programs[d];
    prog.reserve(ops.size());
    for (size_t k = 0; k < ops.size(); ++k) {
      const YAML::Node& e = ops[k];
      SourceLoc loc = yamlu::loc_of(e, file);
      if (!e.IsScalar()) {
        return Status::bad_input(
            fmt::format("programs[{}].ops[{}]: expected an action like '3F1', got {}", d, k, yamlu::kind_name(e)),
            loc);
      }
      if (looks_like_overlap(e.Scalar())) {
        auto subs = parse_overlap(e.Scalar(), [&](size_t k) {
          return loc.line > 0 ? SourceLoc{loc.file, loc.line, loc.col + static_cast<int>(k)} : loc;
        });
        if (!subs) return subs.status();
        for (auto& a : *subs) prog.push_back(std::move(a));
        continue;
      }
      auto a = parse_action(e.Scalar(), loc);
      if (!a) return a.status();
      prog.push_back(std::move(*a));
    }
  }
  return Status::ok();
}

Status read_predicted(const std::string& file, const Field& field, Schedule& s) {
  auto entries = read_device_list(file, field, "predicted", "times", s.num_devices());
  if (!entries) return entries.status();
  s.predicted.assign(entries->size(), {});
  for (size_t d = 0; d < entries->size(); ++d) {
    const Field& tf = *yamlu::find((*entries)[d], "times");
    const YAML::Node& times = tf.value;
    if (!times.IsSequence()) {
      return Status::bad_input(
          fmt::format("predicted[{}].times: expected a sequence of [start_ms, end_ms] pairs, got {}", d,
                      yamlu::kind_name(times)),
          yamlu::loc_of(times, file, yamlu::loc_of(tf.key, file)));
    }
    if (times.size() != s.programs[d].size()) {
      return Status::bad_input(
          fmt::format("predicted[{}].times: has {} entries, but device {}'s program has {} ops (one "
                      "[start_ms, end_ms] per op, in program order)",
                      d, times.size(), d, s.programs[d].size()),
          yamlu::loc_of(times, file, yamlu::loc_of(tf.key, file)));
    }
    auto& out = s.predicted[d];
    out.reserve(times.size());
    for (size_t k = 0; k < times.size(); ++k) {
      const YAML::Node& e = times[k];
      std::string what = fmt::format("predicted[{}].times[{}] ({})", d, k, to_string(s.programs[d][k]));
      if (!e.IsSequence() || e.size() != 2) {
        return Status::bad_input(fmt::format("{}: expected [start_ms, end_ms], got {}", what, yamlu::kind_name(e)),
                                 yamlu::loc_of(e, file));
      }
      auto a = yamlu::to_double(e[0], file, what + " start_ms");
      if (!a) return a.status();
      auto b = yamlu::to_double(e[1], file, what + " end_ms");
      if (!b) return b.status();
      if (*b < *a) {
        return Status::bad_input(fmt::format("{}: end_ms {} is before start_ms {}", what, num(*b), num(*a)),
                                 yamlu::loc_of(e, file));
      }
      out.push_back(OpTime{*a, *b});
    }
  }
  return Status::ok();
}

Status read_certificate(const std::string& file, const Field& field, Certificate& c) {
  const YAML::Node& n = field.value;
  auto fields = yamlu::read_map(n,
                                {"verdict", "semantics", "makespan_ms", "lower_bound_ms", "bubble_ratio",
                                 "peak_memory_gb", "digest", "extra"},
                                file, "certificate");
  if (!fields) return fields.status();
  c.loc = yamlu::loc_of(field.key, file);
  for (const auto& [key, f] : *fields) c.field_loc[key] = yamlu::loc_of(f.value, file, yamlu::loc_of(f.key, file));
  FieldReader r(file, n, *fields, "certificate");
  PS_RETURN_IF_ERROR(r.read_string("verdict", false, c.verdict));
  PS_RETURN_IF_ERROR(r.read_string("semantics", false, c.semantics));
  PS_RETURN_IF_ERROR(r.read_double("makespan_ms", c.makespan_ms));
  PS_RETURN_IF_ERROR(r.read_double("lower_bound_ms", c.lower_bound_ms));
  PS_RETURN_IF_ERROR(r.read_double("bubble_ratio", c.bubble_ratio));
  PS_RETURN_IF_ERROR(r.read_string("digest", false, c.digest));
  if (const Field* f = r.get("peak_memory_gb")) {
    if (!f->value.IsSequence()) {
      return Status::bad_input(fmt::format("certificate.peak_memory_gb: expected a sequence of numbers, got {}",
                                           yamlu::kind_name(f->value)),
                               yamlu::loc_of(f->value, file, yamlu::loc_of(f->key, file)));
    }
    for (size_t i = 0; i < f->value.size(); ++i) {
      auto v = yamlu::to_double(f->value[i], file, fmt::format("certificate.peak_memory_gb[{}]", i));
      if (!v) return v.status();
      c.peak_memory_gb.push_back(*v);
    }
  }
  if (const Field* f = r.get("extra")) {
    const YAML::Node& m = f->value;
    if (!m.IsMap()) {
      return Status::bad_input(
          fmt::format("certificate.extra: expected a map of names to values, got {}", yamlu::kind_name(m)),
          yamlu::loc_of(m, file, yamlu::loc_of(f->key, file)));
    }
    for (const auto& kv : m) {
      auto k = yamlu::to_string(kv.first, file, "certificate.extra key");
      if (!k) return k.status();
      auto v = yamlu::to_string(kv.second, file, fmt::format("certificate.extra.{}", *k));
      if (!v) return v.status();
      if (c.extra.count(*k) > 0) {
        return Status::bad_input(fmt::format("certificate.extra: duplicate key '{}'", *k),
                                 yamlu::loc_of(kv.first, file));
      }
      c.extra[*k] = *v;
      c.field_loc["extra." + *k] = yamlu::loc_of(kv.second, file, yamlu::loc_of(kv.first, file));
    }
  }
  return Status::ok();
}

}  // namespace

Result<Schedule> parse_schedule_yaml(const std::string& text, const std::string& file_name) {
  const std::string& file = file_name;
  yamlu::CountedList actions;
  actions.section = "programs";
  actions.list = "ops";
  actions.max = limits::kMaxScheduleActions;
  actions.weight = [](std::string_view cell) -> int64_t {
    return looks_like_overlap(cell) ? 1 + static_cast<int64_t>(std::count(cell.begin(), cell.end(), ';')) : 1;
  };
  actions.too_many = too_many_actions;
  auto doc = yamlu::load_document(text, file, &actions);
  if (!doc) return doc.status();
  const YAML::Node& root = *doc;
  if (root.IsNull()) {
    return Status::bad_input(fmt::format("empty schedule file; expected a map starting with 'format: {}'", kFormat),
                             SourceLoc{file, 1, 1});
  }
  if (!root.IsMap()) {
    return Status::bad_input(fmt::format("expected a map starting with 'format: {}', got {}", kFormat,
                                         yamlu::kind_name(root)),
                             yamlu::loc_of(root, file, SourceLoc{file, 1, 1}));
  }
  // The format version first: a file of another version may well have keys this reader does not know.
  YAML::Node format_node;
  bool has_format = false;
  for (const auto& kv : root) {
    if (kv.first.IsScalar() && kv.first.Scalar() == "format") {
      format_node = kv.second;
      has_format = true;
      break;
    }
  }
  if (!has_format) {
    return Status::bad_input(fmt::format("missing 'format: {}' (is this a pipesmith schedule?)", kFormat),
                             yamlu::loc_of(root, file, SourceLoc{file, 1, 1}));
  }
  auto fmt_text = yamlu::to_string(format_node, file, "format");
  if (!fmt_text) return fmt_text.status();
  if (*fmt_text != kFormat) {
    std::string why = fmt_text->rfind("pipesmith-schedule/", 0) == 0
                          ? fmt::format("unsupported format version '{}'; this pipesmith reads {}", *fmt_text, kFormat)
                          : fmt::format("format is '{}', expected '{}'", *fmt_text, kFormat);
    return Status::bad_input(why, yamlu::loc_of(format_node, file));
  }

  auto fields = yamlu::read_map(
      root, {"format", "generator", "problem", "stages", "programs", "predicted", "certificate"}, file,
      "top level");
  if (!fields) return fields.status();
  FieldReader r(file, root, *fields, "top level");

  Schedule s;
  s.source = file;
  PS_RETURN_IF_ERROR(r.read_string("generator", false, s.generator));

  const Field* pf = r.get("problem");
  if (!pf) return r.missing("problem");
  PS_RETURN_IF_ERROR(read_problem(file, pf->value, s.problem));

  const Field* sf = r.get("stages");
  if (!sf) return r.missing("stages");
  if (!sf->value.IsSequence() || sf->value.size() == 0) {
    return Status::bad_input(
        fmt::format("stages: expected a non-empty sequence of stage maps, got {}", yamlu::kind_name(sf->value)),
        yamlu::loc_of(sf->value, file, yamlu::loc_of(sf->key, file)));
  }
  std::vector<SourceLoc> stage_locs;
  for (size_t i = 0; i < sf->value.size(); ++i) {
    StageSpec st;
    SourceLoc layers_loc = yamlu::loc_of(sf->value[i], file);
    PS_RETURN_IF_ERROR(read_stage(file, sf->value[i], static_cast<int>(i), s.problem.devices, st, layers_loc));
    s.problem.stages.push_back(st);
    stage_locs.push_back(yamlu::loc_of(sf->value[i], file));
    s.stage_loc.push_back(std::move(layers_loc));
  }
  PS_RETURN_IF_ERROR(check_limits(s.problem, stage_locs));

  const Field* prf = r.get("programs");
  if (!prf) return r.missing("programs");
  PS_RETURN_IF_ERROR(read_programs(file, *prf, s.problem.devices, s));

  if (const Field* f = r.get("predicted")) PS_RETURN_IF_ERROR(read_predicted(file, *f, s));
  if (const Field* f = r.get("certificate")) {
    Certificate c;
    PS_RETURN_IF_ERROR(read_certificate(file, *f, c));
    s.certificate = std::move(c);
  }
  return s;
}

Result<Schedule> read_schedule_yaml(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.status();
  return parse_schedule_yaml(*text, path);
}

}  // namespace ps
