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

#include "ir/schedule.h"
#include "verify/report_types.h"

namespace ps {

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

Report verify(const Schedule& schedule, const VerifyOptions& options = {});

// Lower bound on the makespan for the schedule's partition and placement (verify/bounds.h documents
// the derivation): max over devices of its compute work, and critical path of one microbatch plus
// the bottleneck device's remaining work.
double lower_bound_ms(const Problem& problem);

}  // namespace ps
