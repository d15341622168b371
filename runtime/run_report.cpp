#include "runtime/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ir/chrome_trace.h"
#include "ir/json_write.h"

namespace ps::rt {

namespace {

std::string fixed(double v, int prec = 3) { return fmt::format("{:.{}f}", v, prec); }

int memory_matches(const RunSummary& s) {
  int n = 0;
  for (const DeviceRun& d : s.result->devices)
    if (d.device < static_cast<int>(s.rule.size()) && d.held_bytes == s.rule[d.device].held_bytes) ++n;
  return n;
}

}  // namespace

std::string format_run_summary(const RunSummary& s) {
  const ExecResult& r = *s.result;
  const Schedule& sch = *s.schedule;
  const Prediction& pr = s.prediction;
  std::string out = fmt::format("pipesmith run: {} on backend {} ({} devices, {} stages, {} microbatches, {} semantics)\n",
                                s.schedule_name, s.backend, sch.num_devices(), sch.problem.num_stages(),
                                sch.problem.microbatches, s.semantics);
  out += fmt::format("model: d_model {}, {} tokens per microbatch, vocabulary {} in / {} out\n", s.model->d_model,
                     s.model->tokens, s.model->vocab_in, s.model->vocab_out);
  for (int st = 0; st < s.model->num_stages(); ++st)
    out += fmt::format("  stage {} (device {}): {}\n", st, sch.problem.device_of(StageId{st}), s.model->stage_summary(st));
  for (const std::string& n : s.notes) out += "note: " + n + "\n";
  out += "\n";
  out += fmt::format("{:>6} {:<22} {:>5} {:>12} {:>12} {:>7} {:>10} {:>10} {:>12} {:>12} {:>8} {:>12} {:>8}\n", "device",
                     "where", "ops", "measured_ms", "simulated_ms", "ratio", "busy_ms", "sim_busy_ms", "held_peak_kb",
                     "rule_peak_kb", "peak_op", "checker_mb", "chk_op");
  for (const DeviceRun& d : r.devices) {
    const int id = d.device;
    const bool has = pr.present && id < static_cast<int>(pr.end_ms.size());
    const RuleMemory* rm = id < static_cast<int>(s.rule.size()) ? &s.rule[id] : nullptr;
    out += fmt::format(
        "{:>6} {:<22} {:>5} {:>12} {:>12} {:>7} {:>10} {:>10} {:>12} {:>12} {:>8} {:>12} {:>8}\n", id, d.where,
        d.times.size(), fixed(d.end_ms), has ? fixed(pr.end_ms[id]) : "-",
        has && pr.end_ms[id] > 0 ? fixed(d.end_ms / pr.end_ms[id]) : "-", fixed(d.busy_ms),
        has ? fixed(pr.busy_ms[id]) : "-", fixed(static_cast<double>(d.peak_held_bytes) / 1e3, 1),
        rm ? fixed(static_cast<double>(rm->peak_bytes) / 1e3, 1) : "-", d.peak_op_index,
        has ? fixed(pr.peak_memory_mb[id], 1) : "-", has ? std::to_string(pr.peak_op_index[id]) : "-");
  }
  out += "\n";
  if (pr.present)
    out += fmt::format("iteration: measured {} ms, simulated {} ms (measured/simulated {})\n",
                       fixed(r.iteration_ms), fixed(pr.makespan_ms),
                       pr.makespan_ms > 0 ? fixed(r.iteration_ms / pr.makespan_ms) : "-");
  else
    out += fmt::format("iteration: measured {} ms (not simulated: the schedule was run unverified)\n", fixed(r.iteration_ms));
  const int n_dev = static_cast<int>(r.devices.size());
  int same_op = 0;
  for (const DeviceRun& d : r.devices)
    if (pr.present && d.device < static_cast<int>(pr.peak_op_index.size()) &&
        pr.peak_op_index[d.device] == d.peak_op_index)
      ++same_op;
  out += fmt::format("memory: held activations+stashes equal the memory rule (this model's sizes) after every op "
                     "on {}/{} devices",
                     memory_matches(s), n_dev);
  if (pr.present) out += fmt::format("; peak at the checker's op index on {}/{} devices", same_op, n_dev);
  out += "\n";
  if (!r.losses.empty()) {
    double sum = 0;
    for (const auto& [m, l] : r.losses) sum += l;
    out += fmt::format("loss: {:.6f} (mean over {} microbatches)\n", sum / static_cast<double>(r.losses.size()),
                       r.losses.size());
  }
  if (s.gradients) {
    const GradientComparison& g = *s.gradients;
    out += fmt::format(
        "gradients: {} tensors ({} values) vs a single-device sequential run: max |diff| {:.3g}, max relative {:.3g} "
        "({}), loss diff {:.3g} — {}\n",
        g.tensors, g.elements, g.max_abs_diff, g.max_rel_diff, g.worst_param.empty() ? "-" : g.worst_param,
        g.max_loss_diff,
        g.ok ? fmt::format("OK (within {:g} relative)", s.tolerance)
             : fmt::format("MISMATCH (tolerance {:g}){}", s.tolerance, g.problem.empty() ? "" : ": " + g.problem));
  }
  return out;
}

std::string format_run_json(const RunSummary& s) {
  using nlohmann::ordered_json;
  const ExecResult& r = *s.result;
  ordered_json j;
  j["schedule"] = s.schedule_name;
  j["backend"] = s.backend;
  j["semantics"] = s.semantics;
  j["devices"] = s.schedule->num_devices();
  j["stages"] = s.schedule->problem.num_stages();
  j["microbatches"] = s.schedule->problem.microbatches;
  j["measured_ms"] = r.iteration_ms;
  if (s.prediction.present) j["simulated_ms"] = s.prediction.makespan_ms;
  ordered_json devs = ordered_json::array();
  for (const DeviceRun& d : r.devices) {
    ordered_json e;
    e["device"] = d.device;
    e["where"] = d.where;
    e["measured_ms"] = d.end_ms;
    e["busy_ms"] = d.busy_ms;
    if (s.prediction.present) {
      e["simulated_ms"] = s.prediction.end_ms.at(d.device);
      e["simulated_busy_ms"] = s.prediction.busy_ms.at(d.device);
      e["checker_peak_mb"] = s.prediction.peak_memory_mb.at(d.device);
      e["checker_peak_op"] = s.prediction.peak_op_index.at(d.device);
    }
    e["held_peak_bytes"] = d.peak_held_bytes;
    e["held_peak_op"] = d.peak_op_index;
    if (d.device < static_cast<int>(s.rule.size())) {
      e["rule_peak_bytes"] = s.rule[d.device].peak_bytes;
      e["memory_matches_rule"] = d.held_bytes == s.rule[d.device].held_bytes;
    }
    e["allocated_peak_bytes"] = d.peak_alloc_bytes;
    devs.push_back(std::move(e));
  }
  j["per_device"] = std::move(devs);
  if (!r.losses.empty()) {
    double sum = 0;
    for (const auto& [m, l] : r.losses) sum += l;
    j["loss"] = sum / static_cast<double>(r.losses.size());
  }
  if (s.gradients) {
    j["gradients"] = {{"ok", s.gradients->ok},
                      {"tensors", s.gradients->tensors},
                      {"max_abs_diff", s.gradients->max_abs_diff},
                      {"max_rel_diff", s.gradients->max_rel_diff},
                      {"worst_param", s.gradients->worst_param},
                      {"tolerance", s.tolerance}};
  }
  return dump_json(j, 2) + "\n";
}

std::string format_run_trace(const Schedule& schedule, const ExecResult& result, const std::string& title) {
  std::vector<TraceTrack> tracks;
  for (const DeviceRun& d : result.devices) {
    TraceTrack t;
    t.device = d.device;
    for (const auto& iv : d.times) t.op_ms.emplace_back(iv.start_ms, iv.end_ms);
    const size_t n = std::min({schedule.programs.at(d.device).size(), d.held_bytes.size(), d.times.size()});
    for (size_t i = 0; i < n; ++i) t.memory_mb.emplace_back(d.times[i].end_ms, static_cast<double>(d.held_bytes[i]) / 1e6);
    tracks.push_back(std::move(t));
  }
  return format_chrome_trace(schedule, title, tracks, {{"measured_ms", result.iteration_ms}, {"source", "pipesmith run"}});
}

}  // namespace ps::rt
