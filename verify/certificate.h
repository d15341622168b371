// certificate.h — the certificate block: building it (make_certificate, schedule_digest in
// verify.h) and checking a claimed one against recomputed figures (rules certificate.mismatch and
// certificate.claim; claims it cannot recheck are reported as unchecked).
//
// Guarantees: the digest is "sha256:" + lowercase hex SHA-256 (OpenSSL EVP) of canonical_text(s),
// which excludes the certificate and predicted times. Floats compare with a relative tolerance of
// 1e-6 (|a-b| <= 1e-6 * max(|a|, |b|), plus 1e-9 absolute for values near 0). Each differing field is
// one violation naming the field, the claimed and the recomputed value.
#pragma once

#include <vector>

#include "ir/schedule.h"
#include "verify/report_types.h"

namespace ps::verify_detail {

inline constexpr double kCertRelTol = 1e-6;

bool figures_match(double claimed, double recomputed);

// Compares `claimed` with what make_certificate(s, report) would write (certificate.mismatch), holds
// its extras against the recomputed figures (certificate.mismatch, certificate.claim) and lists the
// claims it cannot recheck in `unchecked`. Figures that could not be recomputed (no simulation
// because the schedule is invalid) are not compared; a negative one is still a certificate.claim.
// Every violation points at the field's value when the file said where it was.
void check_certificate(const Schedule& s, const Report& report, const Certificate& claimed,
                       std::vector<Violation>& out, std::vector<UncheckedClaim>& unchecked);

}  // namespace ps::verify_detail
