// report_types.h — what the checker reports: the semantics it checks under, each violation with its
// location and notes, the claims it could not recheck, and the simulated timeline and memory of a
// schedule it could simulate. The checker (verify/verify.h) fills a Report; report/report.h formats
// one as text, JSON, a trace or an SVG.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ids.h"
#include "ir/schedule.h"

namespace ps {

// How SEND/RECV ops block (ir/schedule.h, docs/semantics.md); kPosted is PyTorch's pipelining
// runtime: comm ops are posted without blocking, a compute op waits for the receive it consumes.
enum class Semantics { kRendezvous, kGrouped, kBuffered, kPosted };
const char* semantics_name(Semantics s);                  // "rendezvous"
std::optional<Semantics> parse_semantics(const std::string& s);

struct Violation {
  std::string rule;                // "deadlock", "structure.missing", ...
  std::optional<DeviceId> device;  // empty: not about one device
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
  double exposed_data_parallel_ms = 0;           // how long the data-parallel step outlasts the pipeline's
                                                 // last compute or transfer (0: wholly hidden)
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

}  // namespace ps
