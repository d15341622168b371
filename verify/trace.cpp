// trace.cpp — format_chrome_trace: Chrome / Perfetto trace JSON of a simulated schedule.
//
// Guarantees: one process; per device two tracks (tid 2d: "device d compute", tid 2d+1: "device d
// comm"); one complete event ("ph": "X") per op with ts/dur in microseconds; a memory counter per
// device ("ph": "C"). Without a simulation, an empty trace with a metadata note. Deterministic.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "verify/verify.h"

namespace ps {

std::string format_chrome_trace(const Report& r) {
  using nlohmann::ordered_json;
  ordered_json events = ordered_json::array();
  auto meta = [&](const char* name, int tid, ordered_json args) {
    ordered_json e;
    e["name"] = name;
    e["ph"] = "M";
    e["pid"] = 0;
    e["tid"] = tid;
    e["args"] = std::move(args);
    events.push_back(std::move(e));
  };
  meta("process_name", 0, {{"name", r.checked.source.empty() ? "pipesmith schedule" : r.checked.source}});
  const Schedule& s = r.checked;
  if (r.sim) {
    const Simulation& sim = *r.sim;
    for (int d = 0; d < s.num_devices(); ++d) {
      meta("thread_name", 2 * d, {{"name", fmt::format("device {} compute", d)}});
      meta("thread_sort_index", 2 * d, {{"sort_index", 2 * d}});
      meta("thread_name", 2 * d + 1, {{"name", fmt::format("device {} comm", d)}});
      meta("thread_sort_index", 2 * d + 1, {{"sort_index", 2 * d + 1}});
    }
    for (int d = 0; d < s.num_devices(); ++d) {
      for (size_t i = 0; i < s.programs[d].size(); ++i) {
        const Action& a = s.programs[d][i];
        const OpInterval& iv = sim.times[d][i];
        ordered_json e;
        e["name"] = to_string(a);
        e["cat"] = is_comm(a.type) ? "comm" : op_type_name(a.type);
        e["ph"] = "X";
        e["pid"] = 0;
        e["tid"] = is_comm(a.type) ? 2 * d + 1 : 2 * d;
        e["ts"] = iv.start_ms * 1000.0;
        e["dur"] = (iv.end_ms - iv.start_ms) * 1000.0;
        e["args"] = {{"stage", a.stage}, {"microbatch", a.mb}, {"op_index", i}};
        events.push_back(std::move(e));
      }
      for (const MemoryPoint& p : sim.memory[d]) {
        ordered_json e;
        e["name"] = fmt::format("memory device {} (MB)", d);
        e["ph"] = "C";
        e["pid"] = 0;
        e["ts"] = p.time_ms * 1000.0;
        e["args"] = {{"MB", p.mb}};
        events.push_back(std::move(e));
      }
    }
  }
  ordered_json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ms";
  ordered_json other;
  other["semantics"] = semantics_name(r.semantics);
  other["valid"] = r.valid;
  if (r.sim) other["makespan_ms"] = r.sim->makespan_ms;
  else other["note"] = "no timing: the schedule could not be simulated";
  j["otherData"] = std::move(other);
  return j.dump() + "\n";
}

}  // namespace ps
