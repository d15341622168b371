// chrome_trace.cpp — see chrome_trace.h.
#include "ir/chrome_trace.h"

#include <fmt/format.h>

#include "ir/json_write.h"

namespace ps {

std::string format_chrome_trace(const Schedule& schedule, const std::string& title, const std::vector<TraceTrack>& tracks,
                                nlohmann::ordered_json other) {
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
  meta("process_name", 0, {{"name", title}});
  for (const TraceTrack& t : tracks) {
    meta("thread_name", 2 * t.device, {{"name", fmt::format("device {} compute", t.device)}});
    meta("thread_sort_index", 2 * t.device, {{"sort_index", 2 * t.device}});
    meta("thread_name", 2 * t.device + 1, {{"name", fmt::format("device {} comm", t.device)}});
    meta("thread_sort_index", 2 * t.device + 1, {{"sort_index", 2 * t.device + 1}});
  }
  for (const TraceTrack& t : tracks) {
    const auto& prog = schedule.programs.at(t.device);
    for (size_t i = 0; i < prog.size() && i < t.op_ms.size(); ++i) {
      const Action& a = prog[i];
      ordered_json e;
      e["name"] = to_string(a);
      const bool lane2 = is_comm(a.type) || is_data_parallel(a.type);  // the comm track holds both
      e["cat"] = is_comm(a.type) ? "comm" : op_type_name(a.type);
      e["ph"] = "X";
      e["pid"] = 0;
      e["tid"] = lane2 ? 2 * t.device + 1 : 2 * t.device;
      e["ts"] = t.op_ms[i].first * 1000.0;
      e["dur"] = (t.op_ms[i].second - t.op_ms[i].first) * 1000.0;
      e["args"] = {{"stage", a.stage.value()}, {"microbatch", a.mb.value()}, {"op_index", i}};
      events.push_back(std::move(e));
    }
    for (const auto& [time_ms, mb] : t.memory_mb) {
      ordered_json e;
      e["name"] = fmt::format("memory device {} (MB)", t.device);
      e["ph"] = "C";
      e["pid"] = 0;
      e["ts"] = time_ms * 1000.0;
      e["args"] = {{"MB", mb}};
      events.push_back(std::move(e));
    }
  }
  ordered_json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ms";
  j["otherData"] = std::move(other);
  return dump_json(j) + "\n";
}

}  // namespace ps
