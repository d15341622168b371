// run_report.h — what `pipesmith run` prints and writes: the summary table (measured vs simulated
// time per device, memory vs the rule and the checker, gradient check), a Chrome trace of the
// measured op times in the checker's trace layout, and a JSON summary for tools.
//
// Guarantees: figures come from the ExecResult as measured; simulated/predicted figures only from the
// Prediction handed in (filled from the checker's Report by the CLI — runtime/ does not link verify/).
// Units: ms; memory in bytes/KB for measured buffers of the (small) executable model, MB for the
// checker's prediction of the modelled (real-size) network. docs/runtime.md explains the comparison.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/schedule.h"
#include "runtime/exec_model.h"
#include "runtime/executor.h"
#include "runtime/memory_rule.h"
#include "runtime/sequential_reference.h"

namespace ps::rt {

// The checker's simulation of the schedule that ran (absent with --no-verify).
struct Prediction {
  bool present = false;
  double makespan_ms = 0;
  std::vector<double> end_ms;          // per device: end of its last op
  std::vector<double> busy_ms;         // per device: compute time
  std::vector<double> peak_memory_mb;  // per device: model states + activations (modelled sizes)
  std::vector<int> peak_op_index;      // per device
};

struct RunSummary {
  std::string schedule_name;      // file name
  std::string backend;            // "host"
  std::string semantics = "rendezvous";  // SEND/RECV semantics the run used
  const Schedule* schedule = nullptr;   // the programs that ran (comms included)
  const ExecModel* model = nullptr;
  const ExecResult* result = nullptr;
  Prediction prediction;
  std::vector<RuleMemory> rule;   // memory_by_rule(schedule, model)
  std::optional<GradientComparison> gradients;
  double tolerance = 1e-5;
  std::vector<std::string> notes;
};

std::string format_run_summary(const RunSummary& s);
std::string format_run_json(const RunSummary& s);
// Chrome/Perfetto trace: pid 0, tid 2d "device d compute", 2d+1 "device d comm", one "X" event per
// op (ts/dur in µs of measured time), a held-memory counter per device (MB).
std::string format_run_trace(const Schedule& schedule, const ExecResult& result, const std::string& title);

}  // namespace ps::rt
