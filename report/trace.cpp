// trace.cpp — format_chrome_trace of a checker Report: its simulated timeline through the one trace
// writer (ir/chrome_trace.h). Without a simulation, an empty trace with a note. Deterministic.
#include "ir/chrome_trace.h"
#include "report/report.h"

namespace ps {

std::string format_chrome_trace(const Report& r) {
  const Schedule& s = r.checked;
  std::vector<TraceTrack> tracks;
  if (r.sim) {
    const Simulation& sim = *r.sim;
    for (int d = 0; d < s.num_devices(); ++d) {
      TraceTrack t;
      t.device = d;
      for (const OpInterval& iv : sim.times[d]) t.op_ms.emplace_back(iv.start_ms, iv.end_ms);
      for (const MemoryPoint& p : sim.memory[d]) t.memory_mb.emplace_back(p.time_ms, p.mb);
      tracks.push_back(std::move(t));
    }
  }
  nlohmann::ordered_json other;
  other["semantics"] = semantics_name(r.semantics);
  other["valid"] = r.valid;
  if (r.sim) other["makespan_ms"] = r.sim->makespan_ms;
  else other["note"] = "no timing: the schedule could not be simulated";
  return format_chrome_trace(s, s.source.empty() ? "pipesmith schedule" : s.source, tracks, std::move(other));
}

}  // namespace ps
