// verify.cpp — the checker's one call: runs the rules of verify/rules.h in order and fills a Report.
//
// Order: layer ranges (gate nothing) → structure (stop if unsound) → lower bound → dependency → comm
// rules (files with comms) → memory.limit → comm insertion (compute-only files; a data-flow cycle is
// a deadlock under every semantics) → deadlock analysis under all three semantics (verdict from the
// chosen one) → timing simulation (only when nothing but memory.limit and problem.layers was
// violated) → certificate (with the claims it cannot recheck listed as unchecked). Every analysis
// whose precondition fails is skipped with a note saying why.
#include "ir/units.h"
#include "verify/verify.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/comm_insert.h"
#include "ir/dp_ops.h"
#include "verify/bounds.h"
#include "verify/certificate.h"
#include "verify/comm_rules.h"
#include "verify/deadlock.h"
#include "verify/dependency.h"
#include "verify/diag.h"
#include "verify/layers.h"
#include "verify/memory.h"
#include "verify/op_table.h"
#include "verify/rules.h"
#include "verify/simulate.h"
#include "verify/structure.h"

namespace ps {

const char* semantics_name(Semantics s) {
  switch (s) {
    case Semantics::kRendezvous: return "rendezvous";
    case Semantics::kGrouped: return "grouped";
    case Semantics::kBuffered: return "buffered";
    case Semantics::kPosted: return "posted";
  }
  return "?";
}

std::optional<Semantics> parse_semantics(const std::string& s) {
  if (s == "rendezvous") return Semantics::kRendezvous;
  if (s == "grouped") return Semantics::kGrouped;
  if (s == "buffered") return Semantics::kBuffered;
  if (s == "posted") return Semantics::kPosted;
  return std::nullopt;
}

namespace {

using namespace verify_detail;

constexpr Semantics kAllSemantics[] = {Semantics::kRendezvous, Semantics::kGrouped, Semantics::kBuffered,
                                       Semantics::kPosted};

// "deadlocks under rendezvous; safe under grouped, buffered and posted".
std::string deadlock_summary(const std::vector<std::string>& safe) {
  std::vector<std::string> unsafe;
  for (Semantics s : kAllSemantics) {
    std::string n = semantics_name(s);
    if (std::find(safe.begin(), safe.end(), n) == safe.end()) unsafe.push_back(n);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out += (i + 1 == v.size()) ? " and " : ", ";
      out += v[i];
    }
    return out;
  };
  if (unsafe.empty()) return fmt::format("deadlock-free under {} semantics", join(safe));
  if (safe.empty()) return fmt::format("deadlocks under {} semantics", join(unsafe));
  return fmt::format("deadlocks under {}; safe under {}", join(unsafe), join(safe));
}

// `s` as written; without data-parallel ops on a problem that needs them, its memory is that of the
// programs with them placed by the rule (an UNSHARD allocates), reported at the ops of `s`.
void check_memory(const Schedule& s, double limit_gb, std::vector<Violation>& out) {
  if (limit_gb <= 0) return;
  const bool placed = needs_data_parallel_ops(s.problem) && !has_data_parallel_ops(s);
  const Schedule with_dp = placed ? with_data_parallel_ops(s) : Schedule{};
  auto mem = memory_by_program(placed ? with_dp : s);
  if (placed)  // program indexes of `with_dp` → those of `s` (an inserted op → the op of `s` after it)
    for (int d = 0; d < s.num_devices(); ++d) {
      DeviceMemory& m = mem[d];
      if (m.peak_op_index < 0) continue;
      int original = 0;
      for (int i = 0; i < m.peak_op_index; ++i) original += is_data_parallel(with_dp.programs[d][i].type) ? 0 : 1;
      m.peak_op_index = std::min(original, static_cast<int>(s.programs[d].size()) - 1);
    }
  for (int d = 0; d < s.num_devices(); ++d) {
    const DeviceMemory& m = mem[d];
    if (fits_memory_limit(m.peak_mb, limit_gb)) continue;
    std::string msg = fmt::format("device {} peaks at {:.3f} GB, above the limit of {:.3f} GB", d,
                                  mb_to_gb(m.peak_mb), limit_gb);
    std::vector<std::string> notes;
    notes.push_back(fmt::format("model states of its stages: {:.3f} GB; live activations and stashes "
                                "at the peak: {:.3f} GB",
                                mb_to_gb(m.model_state_mb), mb_to_gb(m.peak_mb - m.model_state_mb)));
    if (m.peak_op_index < 0) {
      notes.push_back("the model states alone exceed the limit");
      out.push_back(general_violation(rules::kMemoryLimit, d, std::move(msg), std::move(notes)));
    } else {
      const Action& a = s.programs[d][m.peak_op_index];
      notes.insert(notes.begin(), fmt::format("the peak is first reached at {}", describe_op(m.peak_op_index, a)));
      out.push_back(op_violation(rules::kMemoryLimit, d, m.peak_op_index, a, std::move(msg), std::move(notes)));
    }
  }
}

// A data-flow cycle among compute-only programs (comm insertion failed).
Violation dataflow_deadlock(const Schedule& s, const OpTable& t, const std::vector<BlockedOp>& cyc) {
  std::string chain;
  for (const BlockedOp& b : cyc) chain += fmt::format("{} -> ", b.device);
  chain += fmt::format("{}", cyc.front().device);
  std::string msg;
  if (cyc.size() == 1 && !cyc.front().waits_for_device)
    msg = fmt::format("deadlock: device {} waits for '{}', which is not in the schedule",
                      cyc.front().device, to_string(cyc.front().waits_for));
  else if (cyc.size() == 1)
    msg = fmt::format("deadlock: device {} waits for one of its own later ops", cyc.front().device);
  else
    msg = fmt::format("deadlock in the compute-only programs: devices {} wait for each other's "
                      "computes (-> = waits for), so no placement of SEND/RECV can run them",
                      chain);
  std::vector<std::string> notes;
  for (size_t k = 0; k < cyc.size(); ++k) {
    const BlockedOp& b = cyc[k];
    std::string n = fmt::format("device {} is blocked on {}; it needs '{}'", b.device,
                                describe_op(b.op_index, b.op), to_string(b.waits_for));
    const int w = t.find(b.waits_for.type, b.waits_for.stage, b.waits_for.mb);
    if (w != kNoOp) {
      n += fmt::format(", {}", describe_op_on(t.device(w), t.index(w), t.op(w)));
      const BlockedOp& nx = cyc[(k + 1) % cyc.size()];
      if (nx.device == DeviceId{t.device(w)} && nx.device != b.device)
        n += fmt::format(", which has not run: device {} is blocked on {} before it", nx.device,
                         describe_op(nx.op_index, nx.op));
    }
    notes.push_back(std::move(n));
  }
  (void)s;
  const BlockedOp& f = cyc.front();
  return op_violation(rules::kDeadlock, f.device.value(), f.op_index, f.op, std::move(msg), std::move(notes));
}

}  // namespace

Report verify(const Schedule& schedule, const VerifyOptions& options) {
  Report r;
  r.semantics = options.semantics;
  const Problem& pb = schedule.problem;
  if (pb.unit_costs)
    r.notes.push_back("unit costs: no model was given, so F = I = W = 1, B = 2 and transfers take 0 "
                      "(times are in units of one forward)");
  check_layers(schedule, r.violations);
  const OpTable table(schedule);
  const size_t before_structure = r.violations.size();
  check_structure(schedule, table, r.violations);
  if (r.violations.size() != before_structure) {
    r.notes.push_back("dependency, comm, deadlock, memory and timing analyses skipped: they need a "
                      "structurally sound schedule");
    r.checked = schedule;
  } else {
    r.lower_bound_ms = lower_bound_ms(pb);
    const bool has_comms = schedule.has_comms();
    size_t mark = r.violations.size();
    check_dependencies(schedule, table, r.violations);
    const bool dep_ok = r.violations.size() == mark;
    CommRuleSummary cs;
    mark = r.violations.size();
    if (has_comms) cs = check_comm_rules(schedule, table, r.violations);
    const bool comm_ok = r.violations.size() == mark;
    const double limit_gb = options.memory_limit_gb ? *options.memory_limit_gb : pb.memory_gb;
    r.memory_limit_gb = limit_gb > 0 ? limit_gb : 0.0;
    check_memory(schedule, limit_gb, r.violations);

    bool analysable = dep_ok && cs.order_ok && cs.same_device_ok;
    if (!dep_ok) r.notes.push_back("deadlock analysis and simulation skipped: fix the dependency violations first");
    else if (!cs.order_ok) r.notes.push_back("deadlock analysis and simulation skipped: with comm.order violated, NCCL would pair the wrong tensors, so the pairing is undefined");
    else if (!cs.same_device_ok) r.notes.push_back("deadlock analysis and simulation skipped: fix the comm.same-device violations first");

    if (!has_comms && analysable) {
      CommInsertResult ins = insert_comms(schedule);
      if (!ins.ok) {
        r.violations.push_back(dataflow_deadlock(schedule, table, ins.blocked));
        r.notes.push_back("the compute-only programs have a data-flow cycle: no comm placement and no "
                          "semantics can run them");
        analysable = false;
        r.checked = schedule;
      } else {
        size_t pairs = (ins.schedule.num_ops() - schedule.num_ops()) / 2;
        r.checked = std::move(ins.schedule);
        r.comms_inserted = true;
        r.notes.push_back(fmt::format(
            "compute-only schedule: {} SEND/RECV pairs inserted by the rule of ir/comm_insert.h "
            "(docs/verifier-rules.md, 'Comm insertion'); timing and deadlock refer to that program",
            pairs));
      }
    } else {
      r.checked = schedule;
    }
    if (analysable && needs_data_parallel_ops(pb) && !has_data_parallel_ops(schedule)) {
      r.checked = with_data_parallel_ops(r.checked);
      r.notes.push_back(
          "no REDUCE_GRAD ops: each stage's data-parallel step placed right after its last backward by the rule "
          "of ir/dp_ops.h (docs/verifier-rules.md, 'Data-parallel ops'); timing refers to that program");
    }

    if (analysable) {
      const OpTable ct(r.checked);
      for (Semantics sem : kAllSemantics) {
        DeadlockResult dr = analyze_deadlock(r.checked, ct, sem);
        if (dr.safe) r.safe_under.push_back(semantics_name(sem));
        if (sem == options.semantics && !dr.safe)
          for (Violation& v : dr.witnesses) r.violations.push_back(std::move(v));
      }
      const std::string summary = deadlock_summary(r.safe_under);
      r.notes.push_back(summary);
      for (Violation& v : r.violations)
        if (v.rule == rules::kDeadlock) v.notes.push_back("the schedule " + summary);
      const bool safe = std::find(r.safe_under.begin(), r.safe_under.end(),
                                  semantics_name(options.semantics)) != r.safe_under.end();
      if (safe && comm_ok && options.simulate) r.sim = simulate_timing(r.checked, ct, options.semantics, options.recompute_in_backward);
      if (safe && !comm_ok)
        r.notes.push_back("simulation skipped: fix the comm violations first");
    }
  }
  r.valid = r.violations.empty();
  if (schedule.certificate && options.check_certificate) {
    check_certificate(schedule, r, *schedule.certificate, r.violations, r.unchecked_claims);
    r.valid = r.violations.empty();
  }
  return r;
}

}  // namespace ps
