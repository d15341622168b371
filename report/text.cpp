// text.cpp — format_report: the human-readable report.
//
// Guarantees: verdict on the first line (with the count of unchecked claims when there are any);
// then every violation (grouped by rule in rule-table order, at most kShownPerRule per rule in the
// text, with a line counting the rest — the JSON report lists all) with its location and notes; then
// every unchecked claim of the certificate with its location; then the report notes; then the
// figures table. Deterministic.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "ir/dp_ops.h"
#include "ir/units.h"
#include "report/report.h"
#include "verify/rules.h"

namespace ps {
namespace {

constexpr size_t kShownPerRule = 25;

std::string where(const Violation& v) {
  std::string s;
  if (v.loc.valid()) s = v.loc.str() + ": ";
  return s;
}

std::string subject(const Violation& v) {
  std::string s;
  if (v.device) s += fmt::format("device {}", *v.device);
  if (v.op_index >= 0) s += fmt::format("{}op {} '{}'", s.empty() ? "" : ", ", v.op_index, v.action);
  return s.empty() ? "" : "[" + s + "] ";
}

}  // namespace

std::string format_report(const Report& r) {
  std::string out;
  const char* sem = semantics_name(r.semantics);
  if (r.valid) {
    out += fmt::format("VALID under {} semantics", sem);
  } else {
    out += fmt::format("INVALID under {} semantics: {} violation{}", sem, r.violations.size(),
                       r.violations.size() == 1 ? "" : "s");
    std::map<std::string, int> per_rule;
    for (const Violation& v : r.violations) ++per_rule[v.rule];
    std::string list;
    for (const auto& rule : rules::kAll) {
      auto it = per_rule.find(std::string(rule.id));
      if (it == per_rule.end()) continue;
      list += fmt::format("{}{} x{}", list.empty() ? "" : ", ", rule.id, it->second);
    }
    out += " (" + list + ")";
  }
  if (const size_t n = r.unchecked_claims.size(); n > 0)
    out += fmt::format("{}{} unchecked claim{} (see below)", r.valid ? ", with " : "; ", n, n == 1 ? "" : "s");
  out += "\n";
  if (!r.checked.source.empty()) out += fmt::format("schedule: {}\n", r.checked.source);

  if (!r.violations.empty()) {
    out += "\nviolations:\n";
    for (const auto& rule : rules::kAll) {
      size_t shown = 0, total = 0;
      for (const Violation& v : r.violations) {
        if (v.rule != rule.id) continue;
        ++total;
        if (shown == kShownPerRule) continue;
        ++shown;
        out += fmt::format("  {}{}: {}{}\n", where(v), v.rule, subject(v), v.message);
        for (const std::string& n : v.notes) out += fmt::format("      note: {}\n", n);
      }
      if (total > shown)
        out += fmt::format("  ... and {} more '{}' violations (the JSON report lists all)\n", total - shown, rule.id);
    }
  }
  if (!r.unchecked_claims.empty()) {
    out += "\nunchecked claims (made by the certificate, not rechecked by the checker; the verdict does not "
           "rest on them):\n";
    for (const UncheckedClaim& c : r.unchecked_claims)
      out += fmt::format("  {}UNCHECKED CLAIM: {}\n", c.loc.valid() ? c.loc.str() + ": " : "", c.message);
  }
  if (!r.notes.empty()) {
    out += "\nnotes:\n";
    for (const std::string& n : r.notes) out += fmt::format("  - {}\n", n);
  }

  out += "\nfigures:\n";
  if (r.sim) {
    const Simulation& s = *r.sim;
    out += fmt::format("  makespan        {:12.3f} ms\n", s.makespan_ms);
    out += fmt::format("  lower bound     {:12.3f} ms", r.lower_bound_ms);
    if (r.lower_bound_ms > 0)
      out += fmt::format("   (makespan is {:.1f}% above it)",
                         std::max(0.0, 100.0 * (s.makespan_ms - r.lower_bound_ms) / r.lower_bound_ms));
    out += "\n";
    out += fmt::format("  bubble ratio    {:12.4f}\n", s.bubble_ratio);
    if (needs_data_parallel_ops(r.checked.problem))
      out += fmt::format("  data-parallel   {:12.3f} ms exposed after the pipeline's last op\n", s.exposed_data_parallel_ms);
    out += "\n  device     busy_ms     idle_ms   peak_mem_gb   peak_at_op\n";
    for (size_t d = 0; d < s.busy_ms.size(); ++d) {
      out += fmt::format("  {:>6} {:11.3f} {:11.3f} {:13.3f}   {:>10}\n", d, s.busy_ms[d], s.idle_ms[d],
                         mb_to_gb(s.peak_memory_mb[d]),
                         s.peak_op_index[d] < 0 ? std::string("-") : fmt::format("{}", s.peak_op_index[d]));
    }
    if (r.comms_inserted) out += "  (peak_at_op indexes the program with comms inserted)\n";
  } else {
    if (r.lower_bound_ms > 0) out += fmt::format("  lower bound     {:12.3f} ms\n", r.lower_bound_ms);
    out += "  no timing: the schedule could not be simulated (see the violations and notes above)\n";
  }
  return out;
}

}  // namespace ps
