// schedule_io.cpp — pipesmith-schedule/1 YAML (our own emitter, yaml-cpp reader), PyTorch CSV, and the
// canonical text. docs/schedule-format.md is the user-facing description of everything here.
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
#include "ir/yaml_util.h"

namespace ps {

namespace {

constexpr std::string_view kFormat = "pipesmith-schedule/1";
constexpr size_t kOpsPerLine = 16;    // actions per line in `ops: [...]`
constexpr size_t kTimesPerLine = 8;   // [start, end] pairs per line in `times: [...]`
constexpr int kMaxDevices = static_cast<int>(limits::kMaxDevices);
constexpr int kMaxMicrobatches = static_cast<int>(limits::kMaxMicrobatches);
constexpr int kMaxStages = static_cast<int>(limits::kMaxStages);

Result<std::string> read_text_file(const std::string& path) {
  std::string text;
  if (std::optional<InputFileError> why = read_input_file(path, text)) {
    const bool opened = why->stage == InputFileError::Stage::kRead;
    return Status::bad_input(fmt::format("cannot {} '{}': {}", opened ? "read" : "open", path, why->reason));
  }
  return text;
}

Status write_text(const std::string& path, const std::string& text) { return write_output_file(path, text); }

std::string num(double v) { return yamlu::format_number(v); }

// Both readers refuse the action past limits::kMaxScheduleActions with this, at the action.
Status too_many_actions(const SourceLoc& loc) {
  return Status::bad_input(fmt::format("more than {} actions in the file; pipesmith reads schedules of at most {} "
                                       "actions (a plan of {} F/I/W ops with its SEND/RECV; docs/inputs.md, "
                                       "\"Limits\")",
                                       limits::with_commas(limits::kMaxScheduleActions),
                                       limits::with_commas(limits::kMaxScheduleActions),
                                       limits::with_commas(limits::kMaxPlanOps)),
                           loc);
}

// The cells writers emit for a program, as [first, last] op ranges: a run of compute ops chained by
// overlap_next is one OVERLAP_F_B cell; every other op is a cell of its own.
std::vector<std::pair<size_t, size_t>> program_cells(const std::vector<Action>& prog) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < prog.size();) {
    size_t j = i;
    while (j + 1 < prog.size() && prog[j].overlap_next && is_compute(prog[j].type) && is_compute(prog[j + 1].type)) ++j;
    out.emplace_back(i, j);
    i = j + 1;
  }
  return out;
}
const char* boolstr(bool b) { return b ? "true" : "false"; }

// ---------------------------------------------------------------------------------------------
// YAML writer
// ---------------------------------------------------------------------------------------------

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

namespace {

// A recomputing stage's fields, each preceded by `sep` and written key`eq`value; "" for a stage
// that does not recompute (so such stages read and digest exactly as without the fields).
std::string recompute_fields(const StageSpec& st, std::string_view sep, std::string_view eq) {
  if (!st.recomputes()) return "";
  return fmt::format("{}recompute{}{}{}recompute_ms{}{}{}recompute_kept_mb{}{}", sep, eq,
                     recompute_mode_name(st.recompute), sep, eq, num(st.recompute_ms), sep, eq,
                     num(st.recompute_kept_mb));
}

// A stage's fused-B time, `sep`bwd_ms`eq`value, when it differs from I + W; "" otherwise (so stages
// without one read and digest exactly as without the field).
std::string fused_field(const StageSpec& st, std::string_view sep, std::string_view eq) {
  if (!st.fused_bwd_ms || *st.fused_bwd_ms == st.split_bwd_ms()) return "";
  return fmt::format("{}bwd_ms{}{}", sep, eq, num(*st.fused_bwd_ms));
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
        num(st.params_m), boolstr(st.split_backward), recompute_fields(st, ", ", ": "));
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
                     st.output_mb, st.params_m, st.recompute_ms, st.recompute_kept_mb})
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

// ---------------------------------------------------------------------------------------------
// YAML reader
// ---------------------------------------------------------------------------------------------

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

  Status read_int(std::string_view key, bool required, long long min, long long max, int& out) const {
    const Field* f = get(key);
    if (!f) return required ? missing(key) : Status::ok();
    auto v = yamlu::to_int(f->value, file_, name(key));
    if (!v) return v.status();
    if (*v < min || *v > max) {
      return Status::bad_input(
          fmt::format("{}: must be in [{}, {}], got {}", name(key), min, max, *v),
          yamlu::loc_of(f->value, file_));
    }
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
  PS_RETURN_IF_ERROR(r.read_int("gpus", true, 1, static_cast<long long>(kMaxGpus), gpus));
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
  PS_RETURN_IF_ERROR(r.read_int("devices", true, 1, kMaxDevices, p.devices));
  PS_RETURN_IF_ERROR(r.read_int("microbatches", true, 1, kMaxMicrobatches, p.microbatches));
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
                                 "recompute", "recompute_ms", "recompute_kept_mb"},
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

// ---------------------------------------------------------------------------------------------
// PyTorch CSV
// ---------------------------------------------------------------------------------------------

namespace {

// 1-based character columns of byte offsets in one line (UTF-8 continuation bytes do not count).
// Offsets asked in increasing order cost the bytes between them: one row of a PyTorch CSV is a whole
// rank's program (10^5 cells at M in the thousands; counting from the line's start each time made
// reading such a file quadratic: 24 s at M = 4096).
class ColumnCounter {
 public:
  explicit ColumnCounter(std::string_view line) : line_(line) {}
  int at(size_t byte) {
    if (byte < byte_) byte_ = 0, col_ = 1;  // backwards: count again from the start
    for (; byte_ < byte && byte_ < line_.size(); ++byte_)
      if ((static_cast<unsigned char>(line_[byte_]) & 0xC0) != 0x80) ++col_;
    return col_;
  }

 private:
  std::string_view line_;
  size_t byte_ = 0;
  int col_ = 1;
};

// PyTorch's action grammar has no R: a recomputation op in a CSV cell is an unknown action.
Status refuse_csv_recompute(const Action& a) {
  if (a.type != OpType::R) return Status::ok();
  return Status::bad_input(fmt::format("bad action '{}': unknown op type R in a PyTorch CSV (R, pipesmith's "
                                       "recomputation op, exists only in pipesmith-schedule/1 files)",
                                       to_string(a)),
                           a.loc);
}

// `2UNSHARD`, `0RESHARD`, `1REDUCE_GRAD`: true if `cell` is exactly one of those.
bool is_fsdp_action(std::string_view cell) {
  size_t i = 0;
  while (i < cell.size() && std::isdigit(static_cast<unsigned char>(cell[i]))) ++i;
  if (i == 0 || i > 9) return false;
  std::string_view rest = cell.substr(i);
  return rest == "UNSHARD" || rest == "RESHARD" || rest == "REDUCE_GRAD";
}

// The idle (empty) cells of one row: how many, and the first few for notes (a row may hold millions).
struct IdleCells {
  static constexpr size_t kShown = 12;
  int row = 0;
  int64_t count = 0;
  std::vector<int> first;  // 0-based cell indices, at most kShown
};

std::string list_cells(const IdleCells& idle) {
  std::string s;
  for (size_t i = 0; i < idle.first.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", idle.first[i] + 1);
  const int64_t more = idle.count - static_cast<int64_t>(idle.first.size());
  if (more > 0) s += fmt::format(", ... ({} more)", more);
  return s;
}

}  // namespace

namespace {

// Rows: lines split at '\n' (a final newline does not start a new row); '\r' before '\n' dropped. A row
// is a rank, so a file of more than kMaxDevices rows is refused at the first row past it, before the
// rows are held.
Result<std::vector<std::string_view>> csv_rows(std::string_view text, const std::string& file) {
  std::vector<std::string_view> rows;
  size_t start = 0;
  while (start < text.size()) {
    if (static_cast<int64_t>(rows.size()) >= limits::kMaxDevices)
      return Status::bad_input(fmt::format("more than {} rows; a row is a rank, and pipesmith supports at most {} "
                                           "devices (docs/inputs.md, \"Limits\")",
                                           limits::with_commas(limits::kMaxDevices),
                                           limits::with_commas(limits::kMaxDevices)),
                               SourceLoc{file, static_cast<int>(rows.size()) + 1, 1});
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    rows.push_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return rows;
}

// What reading the rows found besides the actions.
struct CsvTally {
  std::vector<IdleCells> idle;  // rows with idle cells, in row order
  SourceLoc first_idle;         // where the first idle cell is
  int64_t idle_count = 0;
  int64_t actions = 0;  // actions read so far (an OVERLAP_F_B cell counts its sub-actions)
  int fsdp_count = 0;
  int overlap_count = 0;
};

// One more action read at `loc`: refused past kMaxScheduleActions, before the schedule grows further.
Status count_action(CsvTally& tally, int64_t n, const SourceLoc& loc) {
  tally.actions += n;
  return tally.actions <= limits::kMaxScheduleActions ? Status::ok() : too_many_actions(loc);
}

// Reads row `r` (line r + 1) into `prog`, cell by cell (cells split at ',', blanks trimmed, trailing empty
// cells dropped), without holding the row's cells.
Status read_csv_row(std::string_view line, size_t r, const std::string& file, std::vector<Action>& prog, CsvTally& tally) {
  const int line_no = static_cast<int>(r) + 1;
  auto blank = [](char ch) { return ch == ' ' || ch == '\t'; };
  size_t last = line.size();  // trailing empty cells and blanks are not cells
  while (last > 0 && (line[last - 1] == ',' || blank(line[last - 1]))) --last;
  ColumnCounter column(line);
  IdleCells row_idle;
  row_idle.row = static_cast<int>(r);
  size_t pos = 0;
  for (int c = 0; pos < last; ++c) {
    const size_t at = line.find(',', pos);
    const size_t end = at == std::string_view::npos || at > last ? last : at;
    size_t a = pos, b = end;
    while (a < b && blank(line[a])) ++a;
    while (b > a && blank(line[b - 1])) --b;
    const std::string_view t = line.substr(a, b - a);
    const size_t offset = a;
    pos = end + 1;
    SourceLoc loc{file, line_no, column.at(offset)};
    if (t.empty()) {
      if (row_idle.first.size() < IdleCells::kShown) row_idle.first.push_back(c);
      if (tally.idle_count++ == 0) tally.first_idle = loc;
      ++row_idle.count;
      continue;
    }
    if (is_fsdp_action(t)) {
      ++tally.fsdp_count;
      continue;
    }
    if (looks_like_overlap(t)) {
      auto subs = parse_overlap(t, [&](size_t k) { return SourceLoc{file, line_no, column.at(offset + k)}; });
      if (!subs) return subs.status();
      for (const Action& sub : *subs) PS_RETURN_IF_ERROR(refuse_csv_recompute(sub));
      PS_RETURN_IF_ERROR(count_action(tally, static_cast<int64_t>(subs->size()), loc));
      ++tally.overlap_count;
      for (auto& act : *subs) prog.push_back(std::move(act));
      continue;
    }
    auto act = parse_action(t, loc);
    if (!act) return act.status();
    PS_RETURN_IF_ERROR(refuse_csv_recompute(*act));
    PS_RETURN_IF_ERROR(count_action(tally, 1, loc));
    prog.push_back(std::move(*act));
  }
  if (row_idle.count > 0) tally.idle.push_back(std::move(row_idle));
  return Status::ok();
}

// The stage and microbatch counts of the file (or of --stages / --microbatches).
struct CsvExtent {
  int stages = 0;
  int microbatches = 0;
};

// Whole-file checks: some action, no idle cell in a file with comms, indices within the limits and
// consistent with --stages / --microbatches. An action beyond the declared counts stays in the
// schedule: the checker reports it as structure.index (an invalid schedule, not an unreadable file).
Result<CsvExtent> csv_extent(const Schedule& s, const CsvTally& tally, const CsvReadOptions& opt, const std::string& file,
                             CsvReadResult& res) {
  int max_stage = -1, max_mb = -1;
  const Action* max_stage_at = nullptr;
  const Action* max_mb_at = nullptr;
  SourceLoc first_comm;
  size_t total = 0;
  for (const auto& prog : s.programs) {
    for (const Action& a : prog) {
      ++total;
      if (a.stage > max_stage) max_stage = a.stage, max_stage_at = &a;
      if (a.mb > max_mb) max_mb = a.mb, max_mb_at = &a;
      if (is_comm(a.type) && !first_comm.valid()) first_comm = a.loc;
    }
  }
  if (total == 0) {
    return Status::bad_input("no pipeline actions in the file (only idle cells or UNSHARD/RESHARD/REDUCE_GRAD)",
                             SourceLoc{file, 0, 0});
  }
  if (first_comm.valid() && tally.idle_count > 0) {
    return Status::bad_input(
        fmt::format("empty cell (idle slot) in a file with SEND/RECV actions (the first is at {}); idle "
                    "slots are only allowed in compute-only files",
                    first_comm.str()),
        tally.first_idle);
  }
  if (max_stage >= kMaxStages) {
    return Status::bad_input(fmt::format("action '{}' uses stage {}; pipesmith supports at most {} stages",
                                         to_string(*max_stage_at), max_stage, kMaxStages),
                             max_stage_at->loc);
  }
  if (max_mb >= kMaxMicrobatches) {
    return Status::bad_input(fmt::format("action '{}' uses microbatch {}; pipesmith supports at most {} "
                                         "microbatches",
                                         to_string(*max_mb_at), max_mb, kMaxMicrobatches),
                             max_mb_at->loc);
  }
  CsvExtent x{max_stage + 1, max_mb + 1};
  if (opt.stages >= 0 && x.stages > opt.stages) {
    res.notes.push_back(fmt::format("action '{}' ({}) uses stage {}, beyond the {} stages given", to_string(*max_stage_at),
                                    max_stage_at->loc.str(), max_stage, opt.stages));
    x.stages = opt.stages;
  } else if (opt.stages >= 0 && opt.stages != x.stages) {
    return Status::bad_input(fmt::format("the stage count given is {}, but the highest stage in the file is {} ({} stages)",
                                         opt.stages, max_stage, x.stages),
                             SourceLoc{file, 0, 0});
  }
  if (opt.microbatches >= 0 && x.microbatches > opt.microbatches) {
    res.notes.push_back(fmt::format("action '{}' ({}) uses microbatch {}, beyond the {} microbatches given",
                                    to_string(*max_mb_at), max_mb_at->loc.str(), max_mb, opt.microbatches));
    x.microbatches = opt.microbatches;
  } else if (opt.microbatches >= 0 && opt.microbatches != x.microbatches) {
    return Status::bad_input(
        fmt::format("the microbatch count given is {}, but the highest microbatch in the file is {} ({} microbatches)",
                    opt.microbatches, max_mb, x.microbatches),
        SourceLoc{file, 0, 0});
  }
  if (x.stages < 1 || x.microbatches < 1)
    return Status::bad_input(
        fmt::format("the stage and microbatch counts must be >= 1, got {} and {}", x.stages, x.microbatches),
        SourceLoc{file, 0, 0});
  PS_RETURN_IF_ERROR(limits::check_plan_ops(
      x.stages, x.microbatches,
      fmt::format("{} stages and {} microbatches (action '{}')", x.stages, x.microbatches, to_string(*max_mb_at)),
      max_mb_at->loc));
  return x;
}

// Placement: the first row (rank) each stage appears in; a stage in no row goes to the rank of the
// stage before it. Notes say both.
std::vector<int> csv_placement(const Schedule& s, int stages, CsvReadResult& res) {
  std::vector<int> placement(stages, -1);
  std::map<int, std::vector<int>> extra_rows;  // stage -> other rows it also appears in
  for (size_t d = 0; d < s.programs.size(); ++d) {
    for (const Action& a : s.programs[d]) {
      if (a.stage >= stages) continue;  // out of range: structure.index
      int& p = placement[a.stage];
      if (p < 0) {
        p = static_cast<int>(d);
      } else if (p != static_cast<int>(d)) {
        auto& v = extra_rows[a.stage];
        if (std::find(v.begin(), v.end(), static_cast<int>(d)) == v.end()) v.push_back(static_cast<int>(d));
      }
    }
  }
  std::vector<int> absent;
  for (int st = 0; st < stages; ++st) {
    if (placement[st] < 0) {
      placement[st] = st > 0 ? placement[st - 1] : 0;
      absent.push_back(st);
    }
  }
  if (!absent.empty()) {
    std::string list;
    for (size_t i = 0; i < absent.size() && i < 12; ++i) list += fmt::format("{}{}", i ? ", " : "", absent[i]);
    if (absent.size() > 12) list += fmt::format(", ... ({} more)", absent.size() - 12);
    res.notes.push_back(fmt::format("{} stage(s) appear in no row ({}); each is placed on the rank of the "
                                    "stage before it (rank 0 for stage 0)",
                                    absent.size(), list));
  }
  for (const auto& [st, rows_also] : extra_rows) {
    std::string list;
    for (int d : rows_also) list += fmt::format("{}{}", list.empty() ? "" : ", ", d);
    res.notes.push_back(fmt::format("stage {} appears on rank {} and also on rank(s) {}; placed on rank {} "
                                    "(first appearance), actions left where they are",
                                    st, placement[st], list, placement[st]));
  }
  return placement;
}

// Notes on what the schedule does not keep: empty ranks, idle cells, FSDP actions, overlaps.
void add_csv_notes(const Schedule& s, const CsvTally& tally, CsvReadResult& res) {
  for (size_t d = 0; d < s.programs.size(); ++d) {
    if (s.programs[d].empty()) res.notes.push_back(fmt::format("rank {} (line {}) has no actions", d, d + 1));
  }
  if (tally.idle_count > 0) {
    std::string detail;
    for (const IdleCells& row : tally.idle) {
      detail += fmt::format("{}rank {}: cells {}", detail.empty() ? "" : "; ", row.row, list_cells(row));
    }
    res.notes.push_back(fmt::format("{} idle cell(s) ({}); a schedule keeps only the order of actions, so "
                                    "idle slots are not stored",
                                    tally.idle_count, detail));
  }
  if (tally.fsdp_count > 0) {
    res.notes.push_back(
        fmt::format("ignored {} UNSHARD/RESHARD/REDUCE_GRAD action(s) (not pipeline ops)", tally.fsdp_count));
  }
  if (tally.overlap_count > 0) {
    res.notes.push_back(fmt::format("{} OVERLAP_F_B action(s): kept as pairs, run as their sub-actions in order",
                                    tally.overlap_count));
  }
}

}  // namespace

Result<CsvReadResult> parse_pytorch_csv(const std::string& text_in, const std::string& file_name,
                                        const CsvReadOptions& opt) {
  const std::string& file = file_name;
  std::string_view text = text_in;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte-order mark
  if (text.empty()) return Status::bad_input("empty CSV file: expected one row of actions per rank", SourceLoc{file, 0, 0});
  auto rows_read = csv_rows(text, file);
  if (!rows_read) return rows_read.status();
  const std::vector<std::string_view>& rows = *rows_read;

  CsvReadResult res;
  Schedule& s = res.schedule;
  s.source = file;
  s.generator = "pytorch-csv";
  s.programs.assign(rows.size(), {});
  CsvTally tally;
  for (size_t r = 0; r < rows.size(); ++r) PS_RETURN_IF_ERROR(read_csv_row(rows[r], r, file, s.programs[r], tally));

  Result<CsvExtent> extent = csv_extent(s, tally, opt, file, res);
  if (!extent.ok()) return extent.status();
  const std::vector<int> placement = csv_placement(s, extent->stages, res);
  s.problem = unit_problem(static_cast<int>(s.programs.size()), extent->microbatches, placement);
  s.problem.name = std::filesystem::path(file).stem().string();
  add_csv_notes(s, tally, res);
  return res;
}

Result<CsvReadResult> read_pytorch_csv(const std::string& path, const CsvReadOptions& opt) {
  auto text = read_text_file(path);
  if (!text) return text.status();
  return parse_pytorch_csv(*text, path, opt);
}

std::string format_pytorch_csv(const Schedule& s) {
  // Column of each action. Compute-only schedules with predicted times: columns are the distinct
  // (start_us, k) keys over all devices, where start_us = round(start_ms * 1000) and k counts earlier
  // ops of the same device with the same start_us; a device leaves empty cells where it has no op.
  // Otherwise actions are written back to back.
  const bool spread = !s.has_comms() && !s.predicted.empty() && s.predicted.size() == s.programs.size();
  std::vector<std::vector<long long>> col(s.programs.size());
  if (spread) {
    bool shapes_ok = true;
    for (size_t d = 0; d < s.programs.size(); ++d) shapes_ok &= s.predicted[d].size() == s.programs[d].size();
    if (shapes_ok) {
      using Key = std::pair<long long, int>;
      std::vector<std::vector<Key>> keys(s.programs.size());
      std::vector<Key> all;
      for (size_t d = 0; d < s.programs.size(); ++d) {
        std::map<long long, int> seen;
        for (const OpTime& t : s.predicted[d]) {
          double us = t.start_ms * 1000.0;
          long long k = std::isfinite(us) && std::fabs(us) < 9e18 ? std::llround(us) : 0;
          Key key{k, seen[k]++};
          keys[d].push_back(key);
          all.push_back(key);
        }
      }
      std::sort(all.begin(), all.end());
      all.erase(std::unique(all.begin(), all.end()), all.end());
      for (size_t d = 0; d < s.programs.size(); ++d) {
        long long prev = -1;
        for (const Key& k : keys[d]) {
          long long c = std::lower_bound(all.begin(), all.end(), k) - all.begin();
          c = std::max(c, prev + 1);  // program order wins if predicted starts are out of order
          col[d].push_back(c);
          prev = c;
        }
      }
    }
  }
  std::string out;
  for (size_t d = 0; d < s.programs.size(); ++d) {
    long long next = 0;
    for (const auto& [first, last] : program_cells(s.programs[d])) {
      long long c = col[d].empty() ? next : col[d][first];
      for (; next < c; ++next) out += (next > 0 ? "," : "");
      if (next > 0) out += ',';
      out += overlap_text(s.programs[d], first, last);
      next = c + 1;
    }
    out += '\n';
  }
  return out;
}

Schedule compute_only_view(const Schedule& in) {
  Schedule s = in;
  s.certificate.reset();
  const bool times = in.predicted.size() == in.programs.size();
  for (size_t d = 0; d < s.programs.size(); ++d) {
    std::vector<Action> ops;
    std::vector<OpTime> kept;
    const bool dev_times = times && in.predicted[d].size() == in.programs[d].size();
    for (size_t i = 0; i < in.programs[d].size(); ++i) {
      if (!is_compute(in.programs[d][i].type)) continue;
      ops.push_back(in.programs[d][i]);
      if (dev_times) kept.push_back(in.predicted[d][i]);
    }
    s.programs[d] = std::move(ops);
    if (times) s.predicted[d] = std::move(kept);
  }
  return s;
}

Status check_pytorch_csv_exportable(const Schedule& s) {
  for (size_t d = 0; d < s.programs.size(); ++d)
    for (const Action& a : s.programs[d])
      if (a.type == OpType::R)
        return Status::bad_input(fmt::format(
            "cannot write a PyTorch CSV: device {} runs '{}', a recomputation op, and PyTorch's action "
            "grammar has none (its runtime recomputes inside the stage module, with "
            "torch.utils.checkpoint), nor can a CSV alone say which stages recompute; keep the "
            "pipesmith-schedule/1 file, whose PyTorch export (plan.json marks those stages) runs it",
            d, to_string(a)));
  return Status::ok();
}

Status write_pytorch_csv(const Schedule& s, const std::string& path) {
  PS_RETURN_IF_ERROR(check_pytorch_csv_exportable(s));
  return write_text(path, format_pytorch_csv(s));
}

// ---------------------------------------------------------------------------------------------
// Either format; canonical text
// ---------------------------------------------------------------------------------------------

namespace {

bool ends_with_ci(const std::string& s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  }
  return true;
}

// Content sniffing for files without a known extension: YAML if a line starts with "format:" or the
// text starts with a YAML marker; CSV otherwise.
bool looks_like_yaml(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (line.rfind("format:", 0) == 0 || line.rfind("---", 0) == 0 || line.rfind("#", 0) == 0) return true;
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return false;
}

Status check_against(const Schedule& s, const CsvReadOptions& opt) {
  SourceLoc loc{s.source, 0, 0};
  if (opt.microbatches >= 0 && opt.microbatches != s.problem.microbatches) {
    return Status::bad_input(fmt::format("the microbatch count given is {}, but the schedule's problem has {} microbatches",
                                         opt.microbatches, s.problem.microbatches),
                             loc);
  }
  if (opt.stages >= 0 && opt.stages != s.problem.num_stages()) {
    return Status::bad_input(
        fmt::format("the stage count given is {}, but the schedule's problem has {} stages", opt.stages, s.problem.num_stages()),
        loc);
  }
  return Status::ok();
}

}  // namespace

Result<Schedule> read_schedule_any(const std::string& path, const CsvReadOptions& opt,
                                   std::vector<std::string>* notes) {
  auto text = read_text_file(path);
  if (!text) return text.status();
  bool csv;
  if (ends_with_ci(path, ".csv")) {
    csv = true;
  } else if (ends_with_ci(path, ".yaml") || ends_with_ci(path, ".yml")) {
    csv = false;
  } else {
    csv = !looks_like_yaml(*text);
  }
  if (csv) {
    auto r = parse_pytorch_csv(*text, path, opt);
    if (!r) return r.status();
    if (notes) notes->insert(notes->end(), r->notes.begin(), r->notes.end());
    return std::move(r->schedule);
  }
  auto r = parse_schedule_yaml(*text, path);
  if (!r) return r.status();
  PS_RETURN_IF_ERROR(check_against(*r, opt));
  return r;
}

std::string canonical_text(const Schedule& s) {
  const Problem& p = s.problem;
  auto link = [](const LinkModel& l) { return fmt::format("{},{}", num(l.bandwidth_gb_per_s), num(l.latency_us)); };
  std::string out = "pipesmith-canonical/1\n";
  out += fmt::format(
      "problem devices={} microbatches={} memory_gb={} bytes_per_param={} link={} devices_per_node={} "
      "inter_node_link={} unit_costs={}{}\n",
      p.devices, p.microbatches, num(p.memory_gb), num(p.bytes_per_param), link(p.link), p.devices_per_node,
      link(p.inter_node_link), boolstr(p.unit_costs),
      p.op_overhead_ms != 0 ? fmt::format(" op_overhead_ms={}", num(p.op_overhead_ms)) : "");
  if (p.mesh.gpus > 0)  // a schedule without a mesh digests exactly as without the field
    out += fmt::format("problem.mesh gpus={} tokens_per_iteration={} model_flops_per_token={} peak_tflops={}\n",
                       p.mesh.gpus, num(p.mesh.tokens_per_iteration), num(p.mesh.model_flops_per_token),
                       num(p.mesh.peak_tflops));
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const StageSpec& st = p.stages[i];
    out += fmt::format(
        "stage {} device={} layers={},{} fwd_ms={} bwd_input_ms={} bwd_weight_ms={}{} activation_mb={} "
        "wgrad_stash_mb={} output_mb={} params_m={} split_backward={}{}\n",
        i, st.device, st.first_layer, st.last_layer, num(st.fwd_ms), num(st.bwd_input_ms), num(st.bwd_weight_ms),
        fused_field(st, " ", "="), num(st.activation_mb), num(st.wgrad_stash_mb), num(st.output_mb), num(st.params_m),
        boolstr(st.split_backward), recompute_fields(st, " ", "="));
  }
  for (size_t d = 0; d < s.programs.size(); ++d) {
    out += fmt::format("program {}", d);
    for (const Action& a : s.programs[d]) {
      out += ' ';
      out += to_string(a);
    }
    out += '\n';
  }
  return out;
}

}  // namespace ps
