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

}  // namespace ps
