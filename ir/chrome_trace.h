// chrome_trace.h — the one Chrome / Perfetto trace writer (JSON "traceEvents"), for the checker's
// simulated timeline (verify/) and the runtime's measured one (runtime/).
//
// Guarantees: one process named `title`; per device of `tracks` two threads (tid 2d: "device d
// compute", tid 2d+1: "device d comm"); one complete event ("ph": "X") per timed op with ts/dur in
// microseconds and args stage, microbatch, op_index; one counter event ("ph": "C") per memory point.
// Events in track order, each track's ops before its memory points. Deterministic.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "ir/schedule.h"

namespace ps {

struct TraceTrack {
  int device = 0;
  std::vector<std::pair<double, double>> op_ms;      // (start, end) of op i of the device's program
  std::vector<std::pair<double, double>> memory_mb;  // (time_ms, MB held)
};

// `other` becomes "otherData" (e.g. makespan, source).
std::string format_chrome_trace(const Schedule& schedule, const std::string& title, const std::vector<TraceTrack>& tracks,
                                nlohmann::ordered_json other);

}  // namespace ps
