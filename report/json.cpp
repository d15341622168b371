// json.cpp — format_report_json: the machine-readable report (schema in
// docs/verifier-rules.md, "JSON report"). Keys are written in a fixed order; numbers in shortest
// round-trip form. Deterministic.
#include <nlohmann/json.hpp>

#include "ir/json_write.h"
#include "ir/dp_ops.h"
#include "ir/units.h"
#include "report/report.h"

namespace ps {

std::string format_report_json(const Report& r) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["format"] = "pipesmith-verify-report/1";
  j["valid"] = r.valid;
  j["semantics"] = semantics_name(r.semantics);
  j["schedule"] = r.checked.source;
  ordered_json viol = ordered_json::array();
  for (const Violation& v : r.violations) {
    ordered_json o;
    o["rule"] = v.rule;
    o["device"] = v.device ? v.device->value() : -1;  // -1: not about one device
    o["op_index"] = v.op_index;
    o["action"] = v.action;
    o["message"] = v.message;
    o["file"] = v.loc.file;
    o["line"] = v.loc.line;
    o["col"] = v.loc.col;
    o["notes"] = v.notes;
    viol.push_back(std::move(o));
  }
  j["violations"] = std::move(viol);
  ordered_json unchecked = ordered_json::array();
  for (const UncheckedClaim& c : r.unchecked_claims) {
    ordered_json o;
    o["field"] = c.field;
    o["message"] = c.message;
    o["file"] = c.loc.file;
    o["line"] = c.loc.line;
    o["col"] = c.loc.col;
    unchecked.push_back(std::move(o));
  }
  j["unchecked_claims"] = std::move(unchecked);
  j["safe_under"] = r.safe_under;
  j["comms_inserted"] = r.comms_inserted;
  j["notes"] = r.notes;
  j["lower_bound_ms"] = r.lower_bound_ms;
  j["memory_limit_gb"] = r.memory_limit_gb;
  if (r.sim) {
    const Simulation& s = *r.sim;
    j["makespan_ms"] = s.makespan_ms;
    j["bubble_ratio"] = s.bubble_ratio;
    if (needs_data_parallel_ops(r.checked.problem)) j["exposed_data_parallel_ms"] = s.exposed_data_parallel_ms;
    if (r.checked.problem.mesh.gpus > 0) {  // a pipeline inside a mesh (ir/mesh.h): throughput at the makespan
      const Throughput t = mesh_throughput(r.checked.problem.mesh, s.makespan_ms);
      j["tokens_per_s"] = t.tokens_per_s;
      j["tflops_per_gpu"] = t.tflops_per_gpu;
      j["mfu"] = t.mfu;
    }
    ordered_json peaks = ordered_json::array();
    for (double mb : s.peak_memory_mb) peaks.push_back(mb_to_gb(mb));
    j["peak_memory_gb"] = std::move(peaks);
    ordered_json devs = ordered_json::array();
    for (size_t d = 0; d < s.busy_ms.size(); ++d) {
      ordered_json o;
      o["device"] = d;
      o["busy_ms"] = s.busy_ms[d];
      o["idle_ms"] = s.idle_ms[d];
      o["peak_memory_gb"] = mb_to_gb(s.peak_memory_mb[d]);
      o["peak_op_index"] = s.peak_op_index[d];
      devs.push_back(std::move(o));
    }
    j["devices"] = std::move(devs);
  } else {
    j["makespan_ms"] = nullptr;
    j["bubble_ratio"] = nullptr;
    j["peak_memory_gb"] = ordered_json::array();
    j["devices"] = ordered_json::array();
  }
  // Text from the input (file names, quoted cells) may hold invalid UTF-8: replaced, never thrown.
  return dump_json(j, 2) + "\n";
}

std::string format_error_json(const Status& st, const std::string& schedule_file) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["format"] = "pipesmith-verify-report/1";
  j["valid"] = false;
  j["schedule"] = schedule_file;
  ordered_json e;
  e["file"] = st.loc().file;
  e["line"] = st.loc().line;
  e["column"] = st.loc().col;
  e["message"] = st.message();
  j["error"] = std::move(e);
  return dump_json(j, 2) + "\n";
}

}  // namespace ps
