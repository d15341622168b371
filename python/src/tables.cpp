// tables.cpp — the core's tables as Python values: the bounds on inputs (ir/limits.h, with the mesh's
// GPU bound, ir/mesh.h), the ranges of the calls' integer options (limits::option) and the analytic
// kinds a layer type may name (ir/cost_model.h), each kind with its components in order.
// python/pipesmith/_tables.py is generated from these
// (`python -m pipesmith._gen_tables`), so the Python side checks the core's bounds and reads the
// core's kinds without loading the extension; a test compares the two.
#include <fmt/format.h>
#include <nanobind/nanobind.h>

#include <string>
#include <string_view>

#include "common.h"
#include "ir/cost_model.h"
#include "ir/limits.h"
#include "ir/mesh.h"

namespace ps::py {

namespace {

nb::dict limits_dict() {
  nb::dict d;
  d["devices"] = limits::kMaxDevices;
  d["microbatches"] = limits::kMaxMicrobatches;
  d["layers"] = limits::kMaxLayers;
  d["stages"] = limits::kMaxStages;
  d["plan_ops"] = limits::kMaxPlanOps;
  d["schedule_actions"] = limits::kMaxScheduleActions;
  d["yaml_nodes"] = limits::kMaxYamlNodes;
  d["yaml_depth"] = limits::kMaxYamlDepth;
  d["json_values"] = limits::kMaxJsonValues;
  d["json_depth"] = limits::kMaxJsonDepth;
  d["input_bytes"] = limits::kMaxInputBytes;
  d["time_limit_s"] = limits::kMaxTimeLimitS;
  d["iteration_total"] = limits::kMaxIterationTotal;
  d["gpus"] = kMaxGpus;
  return d;
}

// "call.name" -> (lo, hi) of each integer option of the calls (ir/limits.h, limits::option).
nb::dict options_dict() {
  nb::dict d;
  for (const limits::IntOption& o : limits::option::kAll)
    d[fmt::format("{}.{}", o.call, o.name).c_str()] = nb::make_tuple(o.lo, o.hi);
  return d;
}

// Kind name -> its components' names, in the order of known_kinds() (components, then aliases).
nb::dict kinds_dict() {
  nb::dict d;
  const std::string names = known_kinds();
  size_t i = 0;
  while (i < names.size()) {
    size_t j = names.find(", ", i);
    if (j == std::string::npos) j = names.size();
    const std::string name = names.substr(i, j - i);
    nb::list parts;
    for (Component c : take(parse_kind(name))) parts.append(component_name(c));
    d[name.c_str()] = parts;
    i = j + 2;
  }
  return d;
}

}  // namespace

void bind_tables(nb::module_& m) {
  m.def("tables", [] {
    nb::dict d;
    d["limits"] = limits_dict();
    d["options"] = options_dict();
    d["kinds"] = kinds_dict();
    return d;
  }, "The core's tables: 'limits' (the bounds on inputs: ir/limits.h and the mesh's GPUs), 'options' (each "
     "integer option of the calls as 'call.name': (lo, hi)) and 'kinds' "
     "(each analytic kind a layer type may name, with its components in order).");
}

}  // namespace ps::py
