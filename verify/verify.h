// verify.h — the independent checker: one call, a Report with every violation found.
//
// The checker recomputes everything from the Problem and the programs; it never trusts times, peaks
// or claims written by whoever produced the schedule. Rules are listed (id + one line) in
// verify/rules.h and docs/verifier-rules.md. The stages' layer ranges are checked first and gate
// nothing; structural rules run next; dependency, comm, deadlock, memory and timing analyses run only
// on structurally sound input. All violations are reported. A certificate claim the checker cannot
// recheck (a bound above its own) is listed in Report::unchecked_claims, never passed in silence.
// Links only ir/ (and OpenSSL's libcrypto for the digest): never Z3, never synth/.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/schedule.h"

namespace ps {

// How SEND/RECV ops block (ir/schedule.h, docs/semantics.md); kPosted is PyTorch's pipelining
// runtime: comm ops are posted without blocking, a compute op waits for the receive it consumes.
enum class Semantics { kRendezvous, kGrouped, kBuffered, kPosted };
const char* semantics_name(Semantics s);                  // "rendezvous"
std::optional<Semantics> parse_semantics(const std::string& s);

struct VerifyOptions {
  Semantics semantics = Semantics::kRendezvous;
  std::optional<double> memory_limit_gb;  // overrides problem.memory_gb (0 = unlimited)
  bool check_certificate = true;          // recompute and compare a present certificate
  bool simulate = true;                   // timing simulation (needs a deadlock-free schedule)
  // Timing only: an R(s,m) directly followed, among its device's compute ops, by its I/B(s,m) also
  // waits for the RECV that delivers that backward's output gradient, i.e. it runs as part of the
  // backward, as a runtime that recomputes inside the backward does (PyTorch's
  // torch.utils.checkpoint). Other R ops, and every verdict, are unaffected.
  bool recompute_in_backward = false;
};

struct Violation {
  std::string rule;                // "deadlock", "structure.missing", ...
  int device = -1;                 // -1: not about one device
  int op_index = -1;               // index in that device's program (-1: none)
  std::string action;              // "3F1" (empty: none)
  std::string message;             // one line, what is wrong (expected vs got)
  SourceLoc loc;                   // file:line:col of the op when known
  std::vector<std::string> notes;  // the other party: "device 1 is blocked on op 5 '1SEND_B0' ..."
};

// A claim of the certificate that the checker cannot recheck (a proven bound above its own lower
// bound, say): reported, never silently passed, and no violation (the verdict does not depend on it).
struct UncheckedClaim {
  std::string field;    // "extra.bound_proven_ms"
  std::string message;  // "certificate claims bound_proven_ms 812.3 ms (optimal: true); the checker's own bound is ..."
  SourceLoc loc;        // file:line:col of the field's value when known
};

struct OpInterval {
  double start_ms = 0;
  double end_ms = 0;
};

struct MemoryPoint {
  double time_ms = 0;
  double mb = 0;
};

struct Simulation {
  double makespan_ms = 0;                        // last op end (first op at 0)
  std::vector<std::vector<OpInterval>> times;    // per device, per op of the checked programs
  std::vector<double> busy_ms;                   // compute time per device
  std::vector<double> idle_ms;                   // makespan - busy
  double bubble_ratio = 0;                       // sum idle / (devices * makespan)
  std::vector<double> peak_memory_mb;            // per device
  std::vector<int> peak_op_index;                // op index where the peak is reached
  std::vector<std::vector<MemoryPoint>> memory;  // per device, step curve over time
};

struct Report {
  bool valid = false;
  Semantics semantics = Semantics::kRendezvous;
  std::vector<Violation> violations;
  std::vector<UncheckedClaim> unchecked_claims;  // certificate claims reported but not rechecked
  std::vector<std::string> notes;          // "comms inserted by the rule in ...", "unit costs ..."
  Schedule checked;                        // the programs actually analysed (comms inserted if needed)
  bool comms_inserted = false;
  std::optional<Simulation> sim;           // present when the schedule could be simulated
  double lower_bound_ms = 0;               // for this partition and placement
  std::vector<std::string> safe_under;     // semantics under which it is deadlock-free
  double memory_limit_gb = 0;              // the limit checked (options or problem); 0 = unlimited
};

Report verify(const Schedule& schedule, const VerifyOptions& options = {});

// Lower bound on the makespan for the schedule's partition and placement (verify/bounds.h documents
// the derivation): max over devices of its compute work, and critical path of one microbatch plus
// the bottleneck device's remaining work.
double lower_bound_ms(const Problem& problem);

// Builds the certificate block for a schedule that verified valid (the synthesizer and the baseline
// generators call this; the checker recomputes it on read). Its digest seals the schedule and every
// claim of the certificate (certificate_digest); a producer that changes a claim afterwards calls
// seal_certificate.
Certificate make_certificate(const Schedule& schedule, const Report& report);
// SHA-256 of canonical_text(schedule), as "sha256:<hex>".
std::string schedule_digest(const Schedule& schedule);
// SHA-256 of canonical_text(schedule) followed by the canonical text of the certificate's claims
// (verdict, semantics, figures, every extra; docs/schedule-format.md), as "sha256:<hex>".
std::string certificate_digest(const Schedule& schedule, const Certificate& certificate);
// Recomputes schedule.certificate->digest from the schedule and the certificate's claims.
void seal_certificate(Schedule& schedule);
// SHA-256 of any bytes, as "sha256:<hex>".
std::string sha256_digest(const std::string& bytes);

// Human text report: verdict first, then violations with notes, then figures.
std::string format_report(const Report& report);
// JSON report (docs/verifier-rules.md documents the schema).
std::string format_report_json(const Report& report);
// JSON for a schedule that could not be checked at all (unreadable, malformed): "valid": false and an
// "error" object with file, line, column (0 when unknown) and message.
std::string format_error_json(const Status& error, const std::string& schedule_file);

// Pictures: Chrome/Perfetto trace JSON and an SVG Gantt chart with memory curves.
std::string format_chrome_trace(const Report& report);
std::string format_svg(const Report& report, const std::string& title = "");

}  // namespace ps
