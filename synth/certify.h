// certify.h — the checker gate every generated schedule passes before it is written.
//
// certify_schedule runs verify() (comms inserted by the shared rule when the schedule is
// compute-only), and on success returns the checked schedule — with its SEND/RECV ops, the
// simulated start/end of every op as `predicted`, and the certificate from make_certificate — so
// the file holds exactly what was verified. A rejection of a generated schedule is our bug, not
// the user's: it comes back as ErrorCode::kRuntime with the full report. The one exception is a
// schedule that is valid except that it exceeds the memory limit: that is ErrorCode::kInfeasible,
// with the device, its peak and the limit in the message.
#pragma once

#include "ir/schedule.h"
#include "ir/status.h"
#include "verify/digest.h"
#include "verify/verify.h"

namespace ps {

struct CertifiedSchedule {
  Schedule schedule;  // checked programs (with comms), predicted times, certificate
  Report report;      // the checker's report on it
};

Result<CertifiedSchedule> certify_schedule(const Schedule& schedule,
                                           const VerifyOptions& options = {});

// A makespan that meets a lower bound within the certificate's float tolerance (relative 1e-6, plus
// 1e-9 ms; verify/certificate.h): what an `optimal: true` claim needs.
bool meets_bound(double makespan_ms, double bound_ms);

// (makespan − bound) / bound, the gap a summary and a certificate state: 0 where the makespan meets the
// bound (meets_bound) or the bound is not positive. Without the tolerance a makespan of float noise
// over a bound of float noise (ops of no cost, transfers on free links) would read as a gap of 100 %.
double relative_gap(double makespan_ms, double bound_ms);

// The optimality claims of a synthesized certificate whose schedule was replaced by another order of
// the same plan, `makespan_ms` long (the plan's bounds hold for every order of it). `optimal` is
// true where bound_proven_ms meets the makespan; where it does not but the replaced order was
// `order_proven` (optimal, or optimal up to the rounding of the plan's integer op DAG: its solver
// status records the proof), the optimum lies between the bound and this order, and
// `optimal_up_to_ms` says how far apart they are; otherwise neither is claimed. Writes both extras
// (optimal_up_to_ms only when claimed) and returns them.
struct OptimalityClaim {
  bool optimal = false;
  double up_to_ms = 0;
};
OptimalityClaim restate_optimality(Certificate& certificate, double makespan_ms, bool order_proven);

}  // namespace ps
