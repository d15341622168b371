// digest.h — the certificate's seal: building the certificate block of a schedule that verified
// valid, and the SHA-256 digests that seal the schedule and its claims (docs/schedule-format.md,
// "Certificate"). The checker recomputes both on read (verify/certificate.h).
#pragma once

#include <string>

#include "ir/schedule.h"
#include "verify/report_types.h"

namespace ps {

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

}  // namespace ps
