// certificate.cpp — see certificate.h.
#include "verify/certificate.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <charconv>
#include <initializer_list>
#include <cmath>
#include <optional>
#include <utility>

#include "ir/schedule_io.h"
#include "ir/yaml_util.h"
#include "verify/diag.h"
#include "verify/rules.h"

namespace ps {

namespace {

std::string sha256_hex(const std::string& text) {
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

// The claims of a certificate as text: one line per field, numbers as the YAML writer prints them
// (so a file read back gives the same text), extras in key order.
std::string canonical_claims(const Certificate& c) {
  std::string t = "certificate-claims/1\n";
  t += fmt::format("verdict={}\nsemantics={}\nmakespan_ms={}\nlower_bound_ms={}\nbubble_ratio={}\npeak_memory_gb=",
                   c.verdict, c.semantics, yamlu::format_number(c.makespan_ms), yamlu::format_number(c.lower_bound_ms),
                   yamlu::format_number(c.bubble_ratio));
  for (size_t d = 0; d < c.peak_memory_gb.size(); ++d) t += (d ? "," : "") + yamlu::format_number(c.peak_memory_gb[d]);
  t += "\n";
  for (const auto& [k, v] : c.extra) t += fmt::format("extra {}={}\n", yamlu::double_quoted(k), yamlu::double_quoted(v));
  return t;
}

}  // namespace

std::string schedule_digest(const Schedule& schedule) { return sha256_hex(canonical_text(schedule)); }

std::string sha256_digest(const std::string& bytes) { return sha256_hex(bytes); }

std::string certificate_digest(const Schedule& schedule, const Certificate& certificate) {
  return sha256_hex(canonical_text(schedule) + canonical_claims(certificate));
}

void seal_certificate(Schedule& schedule) {
  if (schedule.certificate) schedule.certificate->digest = certificate_digest(schedule, *schedule.certificate);
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
  if (schedule.certificate) c.extra = schedule.certificate->extra;
  c.digest = certificate_digest(schedule, c);
  return c;
}

}  // namespace ps

namespace ps::verify_detail {

bool figures_match(double claimed, double recomputed) {
  if (std::isnan(claimed) || std::isnan(recomputed)) return false;
  const double scale = std::max(std::fabs(claimed), std::fabs(recomputed));
  return std::fabs(claimed - recomputed) <= kCertRelTol * scale + 1e-9;
}

namespace {

// The producer's claims in `extra` that the checker can hold against the recomputed figures. Each
// inconsistency is one certificate.mismatch naming the field. Absent fields are not claims.
class ClaimCheck {
 public:
  ClaimCheck(const Certificate& c, std::vector<Violation>& out) : c_(c), out_(out) {}

  void run() {
    const double makespan = c_.makespan_ms;
    const std::optional<double> proven = number("bound_proven_ms");
    const std::optional<double> bound = number("bound_ms");
    const std::optional<double> gap = number("gap");
    for (const char* f : {"heuristic_ms", "global_lower_bound_ms", "optimal_up_to_ms", "time_unit_ms", "before_z3_ms",
                          "z3_improved_ms", "bound_before_z3_ms", "z3_checks"})
      number(f);
    if (const auto b = number("bound_before_z3_ms"); b && !at_most(*b, makespan))
      fail("bound_before_z3_ms", fmt::format("{} ms", *b), fmt::format("a bound above the makespan {} ms", makespan));
    if (const auto z = number("z3_improved_ms"); z && *z < 0)
      fail("z3_improved_ms", fmt::format("{} ms", *z), "a non-negative improvement");
    // A lower bound never lies above the makespan it bounds.
    for (const auto& [name, v] : {std::pair{"bound_proven_ms", proven}, std::pair{"bound_ms", bound}})
      if (v && !at_most(*v, makespan)) fail(name, fmt::format("{} ms", *v), fmt::format("a bound above the makespan {} ms", makespan));
    if (const auto g = number("global_lower_bound_ms"); g && !at_most(*g, makespan))
      fail("global_lower_bound_ms", fmt::format("{} ms", *g), fmt::format("a bound above the makespan {} ms", makespan));
    // The best bound includes the checker's own.
    if (bound && !at_most(c_.lower_bound_ms, *bound))
      fail("bound_ms", fmt::format("{} ms", *bound), fmt::format("less than the checker's lower bound {} ms", c_.lower_bound_ms));
    // gap = (makespan − bound) / bound, printed with 6 decimals.
    if (gap && bound && *bound > 0) {
      const double want = std::max(0.0, (makespan - *bound) / *bound);
      if (!(std::fabs(*gap - want) <= 1e-6 + verify_detail::kCertRelTol * want))
        fail("gap", fmt::format("{}", *gap), fmt::format("{:.6f} = (makespan - bound_ms) / bound_ms", want));
    }
    check_optimal(makespan, proven);
    check_labels();
  }

 private:
  // "optimal" is true only when the proven bound reaches the makespan; a status that says the
  // order is proven needs the same proof (or the documented rounding of optimal_up_to_ms).
  void check_optimal(double makespan, const std::optional<double>& proven) {
    const std::string* opt = text("optimal");
    if (opt && *opt != "true" && *opt != "false") fail("optimal", quoted(*opt), "'true' or 'false'");
    const bool proof = proven && reaches(*proven, makespan);
    if (opt && *opt == "true" && !proof)
      fail("optimal", "'true'", proven ? fmt::format("no proof: bound_proven_ms {} ms is below the makespan {} ms", *proven, makespan)
                                       : std::string("no proof: bound_proven_ms is absent"));
    const std::string* status = text("solver_status");
    if (!status) return;
    const bool claims_proof = *status == "optimal" || *status == "heuristic meets bound" ||
                              *status == "destructive bound meets incumbent";
    const bool known = claims_proof || *status == "no Z3 run" || *status == "not run: interrupted" ||
                       status->rfind("no-queue: ", 0) == 0 || status->rfind("comm-stream: ", 0) == 0 ||
                       status->rfind("windows: ", 0) == 0;
    if (!known) fail("solver_status", quoted(*status), "a status from the documented list");
    if (claims_proof && !(opt && *opt == "true") && !text("optimal_up_to_ms"))
      fail("solver_status", quoted(*status), "a proof of optimality, but 'optimal' is not 'true'");
  }

  // Which method produced the schedule and the bound: labels from fixed lists.
  void check_labels() {
    one_of("schedule_method", {"list scheduler", "baseline", "destructive-bound search", "z3", "tuner"});
    one_of("bound_method", {"dag bound", "destructive bound", "z3 relaxation", "z3"});
    if (const std::string* seed = text("seeded_by")) {
      const bool ok = seed->rfind("heuristic ", 0) == 0 || seed->rfind("baseline ", 0) == 0 ||
                      *seed == "destructive-bound search" || *seed == "tuner";
      if (!ok) {
        fail("seeded_by", quoted(*seed),
             "'heuristic <policy>', 'baseline <name>', 'destructive-bound search' or 'tuner'");
      }
    }
  }

  void one_of(const char* key, std::initializer_list<const char*> allowed) {
    const std::string* t = text(key);
    if (!t) return;
    std::string list;
    for (const char* a : allowed) {
      if (*t == a) return;
      list += fmt::format("{}'{}'", list.empty() ? "" : ", ", a);
    }
    fail(key, quoted(*t), "one of " + list);
  }
  const std::string* text(const char* key) const {
    auto it = c_.extra.find(key);
    return it == c_.extra.end() ? nullptr : &it->second;
  }
  std::optional<double> number(const char* key) {
    const std::string* t = text(key);
    if (!t) return std::nullopt;
    double v = 0;
    auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), v);
    if (ec != std::errc() || end != t->data() + t->size() || !std::isfinite(v)) {
      fail(key, quoted(*t), "a finite number");
      return std::nullopt;
    }
    return v;
  }
  // a <= b, and a >= b, within the certificate's tolerance.
  static double tolerance(double a, double b) { return verify_detail::kCertRelTol * std::max(std::fabs(a), std::fabs(b)) + 1e-9; }
  static bool at_most(double a, double b) { return a <= b + tolerance(a, b); }
  static bool reaches(double a, double b) { return a >= b - tolerance(a, b); }
  static std::string quoted(const std::string& s) { return fmt::format("'{}'", s.size() > 80 ? s.substr(0, 80) + "..." : s); }
  void fail(const std::string& field, const std::string& claim, const std::string& expected) {
    out_.push_back(general_violation(
        rules::kCertificateMismatch, -1,
        fmt::format("certificate field 'extra.{}' claims {} but the checker requires {}", field, claim, expected), {},
        c_.loc));
  }

  const Certificate& c_;
  std::vector<Violation>& out_;
};

void check_claims(const Certificate& claimed, std::vector<Violation>& out) { ClaimCheck(claimed, out).run(); }

}  // namespace

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
  const std::string sealed = certificate_digest(s, claimed);
  if (claimed.digest != sealed)
    fail("digest", claimed.digest.empty() ? "nothing" : claimed.digest, sealed,
         {"the digest is SHA-256 of the canonical schedule (problem, placement, programs) and of every claim of "
          "the certificate: the schedule or a claim was changed after it was certified, or the certificate "
          "belongs to another schedule"});
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
  check_claims(claimed, out);
}

}  // namespace ps::verify_detail
