// schedule_io.cpp — what the formats share (ir/schedule_io_detail.h), reading a schedule file of
// either format, and the canonical text the digest is taken of. The formats: ir/schedule_yaml.cpp
// (pipesmith-schedule/1) and ir/schedule_csv.cpp (PyTorch's pipelining CSV); docs/schedule-format.md
// describes them for users.
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

namespace schedule_io_detail {

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

std::string reduce_grad_field(const StageSpec& st, std::string_view sep, std::string_view eq) {
  std::string out;
  if (st.reduces_grad) out += fmt::format("{}reduce_grad_ms{}{}", sep, eq, num(st.reduce_grad_ms));
  if (st.fsdp)
    out += fmt::format("{}unshard_ms{}{}{}unsharded_mb{}{}", sep, eq, num(st.unshard_ms), sep, eq, num(st.unsharded_mb));
  return out;
}

}  // namespace schedule_io_detail

using namespace schedule_io_detail;


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
        boolstr(st.split_backward), recompute_fields(st, " ", "=") + reduce_grad_field(st, " ", "="));
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
