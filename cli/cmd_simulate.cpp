// `pipesmith simulate` — the timing of a schedule under a semantics: the figures table, and every
// op's start/end with --ops. Exit 0 when the schedule is valid, 3 when it is not (the report says
// why; no timing when it cannot be simulated), 1 on bad input.
#include <fmt/format.h>

#include "cli/check_options.h"
#include "cli/commands.h"
#include "ir/units.h"
#include "report/report.h"

namespace ps::cli {

Runner add_simulate(CLI::App& app) {
  auto* sub = app.add_subcommand("simulate", "Simulate a schedule's timing (two streams per device)");
  auto flags = std::make_shared<CheckFlags>();
  auto ops = std::make_shared<bool>(false);
  flags->add_to(sub);
  sub->add_flag("--ops", *ops, "Also print every op's start and end (ms)");
  return [flags, ops] {
    int rc = 0;
    auto report = flags->run(rc);
    if (!report) return rc;
    if (!report->sim) {
      std::fputs(format_report(*report).c_str(), stdout);
      return rc == 0 ? exit_code(ErrorCode::kInvalidSchedule) : rc;
    }
    const Simulation& sim = *report->sim;
    const Schedule& s = report->checked;
    std::string out = fmt::format("{} under {} semantics{}\n", report->valid ? "VALID" : "INVALID",
                                  semantics_name(report->semantics),
                                  report->comms_inserted ? " (comms inserted)" : "");
    for (const std::string& n : report->notes) out += fmt::format("  note: {}\n", n);
    out += fmt::format("makespan_ms     {:.6g}\nlower_bound_ms  {:.6g}\nbubble_ratio    {:.6g}\n", sim.makespan_ms,
                       report->lower_bound_ms, sim.bubble_ratio);
    out += "device  busy_ms      idle_ms      peak_memory_gb  compute_ops  comm_ops\n";  // comm: SEND/RECV, REDUCE_GRAD
    for (int d = 0; d < s.num_devices(); ++d) {
      int nc = 0, nm = 0;
      for (const Action& a : s.programs[d]) (is_compute(a.type) ? nc : nm)++;
      out += fmt::format("{:<7} {:<12.6g} {:<12.6g} {:<15.6g} {:<12} {}\n", d, sim.busy_ms[d], sim.idle_ms[d],
                         mb_to_gb(sim.peak_memory_mb[d]), nc, nm);
    }
    if (*ops) {
      out += "\ndevice  op  action        start_ms     end_ms\n";
      for (int d = 0; d < s.num_devices(); ++d)
        for (size_t i = 0; i < s.programs[d].size(); ++i)
          out += fmt::format("{:<7} {:<3} {:<13} {:<12.6g} {:.6g}\n", d, i, to_string(s.programs[d][i]),
                             sim.times[d][i].start_ms, sim.times[d][i].end_ms);
    }
    if (!report->valid) {
      out += "\n";
      out += format_report(*report);
    }
    std::fputs(out.c_str(), stdout);
    return rc;
  };
}

}  // namespace ps::cli
