// certificate.cpp — see certificate.h.
#include "verify/certificate.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cmath>

#include "ir/schedule_io.h"
#include "verify/diag.h"
#include "verify/rules.h"

namespace ps {

std::string schedule_digest(const Schedule& schedule) {
  const std::string text = canonical_text(schedule);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  PS_ASSERT(ctx != nullptr, "EVP_MD_CTX_new failed");
  const bool ok = EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, text.data(), text.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, md, &len) == 1;
  EVP_MD_CTX_free(ctx);
  PS_ASSERT(ok, "SHA-256 digest failed");
  std::string hex = "sha256:";
  static const char* kHex = "0123456789abcdef";
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return hex;
}

Certificate make_certificate(const Schedule& schedule, const Report& report) {
  Certificate c;
  c.verdict = report.valid ? "valid" : "invalid";
  c.semantics = semantics_name(report.semantics);
  if (report.sim) {
    c.makespan_ms = report.sim->makespan_ms;
    c.bubble_ratio = report.sim->bubble_ratio;
    for (double mb : report.sim->peak_memory_mb) c.peak_memory_gb.push_back(mb / 1000.0);
  }
  c.lower_bound_ms = report.lower_bound_ms;
  c.digest = schedule_digest(schedule);
  if (schedule.certificate) c.extra = schedule.certificate->extra;
  return c;
}

}  // namespace ps

namespace ps::verify_detail {

bool figures_match(double claimed, double recomputed) {
  if (std::isnan(claimed) || std::isnan(recomputed)) return false;
  const double scale = std::max(std::fabs(claimed), std::fabs(recomputed));
  return std::fabs(claimed - recomputed) <= kCertRelTol * scale + 1e-9;
}

void check_certificate(const Schedule& s, const Report& report, const Certificate& claimed,
                       std::vector<Violation>& out) {
  const Certificate mine = make_certificate(s, report);
  auto fail = [&](const std::string& field, const std::string& claim, const std::string& got,
                  std::vector<std::string> notes = {}) {
    out.push_back(general_violation(
        rules::kCertificateMismatch, -1,
        fmt::format("certificate field '{}' claims {} but the checker recomputes {}", field, claim, got),
        std::move(notes), claimed.loc));
  };
  if (claimed.digest != mine.digest)
    fail("digest", claimed.digest.empty() ? "nothing" : claimed.digest, mine.digest,
         {"the digest is SHA-256 of the canonical schedule (problem, placement, programs): the "
          "schedule was changed after it was certified, or the certificate belongs to another one"});
  if (claimed.semantics != mine.semantics)
    fail("semantics", fmt::format("'{}'", claimed.semantics), fmt::format("'{}'", mine.semantics),
         {"pass --semantics to check the schedule under the semantics it was certified for"});
  // The verdict is judged without the certificate's own violations (see verify.cpp).
  if (claimed.verdict != mine.verdict) {
    std::vector<std::string> notes;
    if (!report.sim)
      notes.push_back("makespan, bubble ratio and peak memory were not recomputed: the schedule "
                      "cannot be simulated");
    fail("verdict", fmt::format("'{}'", claimed.verdict), fmt::format("'{}'", mine.verdict),
         std::move(notes));
  }
  if (!figures_match(claimed.lower_bound_ms, mine.lower_bound_ms))
    fail("lower_bound_ms", fmt::format("{}", claimed.lower_bound_ms), fmt::format("{}", mine.lower_bound_ms));
  if (!report.sim) return;
  if (!figures_match(claimed.makespan_ms, mine.makespan_ms))
    fail("makespan_ms", fmt::format("{}", claimed.makespan_ms), fmt::format("{}", mine.makespan_ms));
  if (!figures_match(claimed.bubble_ratio, mine.bubble_ratio))
    fail("bubble_ratio", fmt::format("{}", claimed.bubble_ratio), fmt::format("{}", mine.bubble_ratio));
  if (claimed.peak_memory_gb.size() != mine.peak_memory_gb.size()) {
    fail("peak_memory_gb", fmt::format("{} devices", claimed.peak_memory_gb.size()),
         fmt::format("{} devices", mine.peak_memory_gb.size()));
  } else {
    for (size_t d = 0; d < mine.peak_memory_gb.size(); ++d)
      if (!figures_match(claimed.peak_memory_gb[d], mine.peak_memory_gb[d]))
        fail(fmt::format("peak_memory_gb[{}]", d), fmt::format("{}", claimed.peak_memory_gb[d]),
             fmt::format("{}", mine.peak_memory_gb[d]));
  }
}

}  // namespace ps::verify_detail
