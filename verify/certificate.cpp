// certificate.cpp — see certificate.h.
#include "ir/units.h"
#include "verify/certificate.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "ir/schedule_io.h"
#include "ir/yaml_util.h"
#include "verify/diag.h"
#include "verify/digest.h"
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
    for (double mb : report.sim->peak_memory_mb) c.peak_memory_gb.push_back(mb_to_gb(mb));
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

// The extras that are numbers, in the order they are checked. All are finite; all are times,
// bounds, ratios or counts, so none is negative.
constexpr const char* kNumbers[] = {"bound_proven_ms", "bound_ms", "gap", "heuristic_ms", "global_lower_bound_ms",
                                    "optimal_up_to_ms", "time_unit_ms", "before_z3_ms", "z3_improved_ms",
                                    "bound_before_z3_ms", "z3_checks"};
// Lower bounds on the makespan: never above it; above the checker's own bound they are the
// producer's proof, which the checker does not have (reported as unchecked claims).
constexpr const char* kBounds[] = {"bound_proven_ms", "bound_ms", "bound_before_z3_ms", "global_lower_bound_ms"};
// Makespans of orders the producer timed on its integer time grid (time_unit_ms): achieved, so
// never below the checker's lower bound, save for the grid's rounding.
constexpr const char* kAchieved[] = {"heuristic_ms", "before_z3_ms"};

// Up to this fraction of the lower bound, a grid timing below the bound by at most the grid's
// rounding is accepted without a note.
constexpr double kGridSlackRel = 1e-3;

// How far a figure written as `text` may lie from the value it stands for: half a unit of its last
// decimal ("812.3": 0.05); 0 for a number with an exponent (the shortest round-trip form).
double print_allowance(const std::string& text) {
  if (text.find_first_of("eE") != std::string::npos) return 0;
  const size_t dot = text.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(text.size() - dot - 1);
  return 0.5 * std::pow(10.0, -decimals);
}

std::optional<double> parse_number(const std::string& t) {
  double v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// What the checker computed itself, against which the claims are held.
struct Recomputed {
  std::optional<double> makespan_ms;  // when simulated
  double lower_bound_ms = 0;
  bool bounded = false;               // the lower bound was computed (structure sound)
  double grid_slack_ms = 0;           // how far a grid timing may fall below a true makespan
  std::string grid_reason;            // why grid_slack_ms > 0
};

// The rounding of the producer's time grid: durations and transfers that are not whole multiples
// of time_unit_ms were rounded down, each by less than one unit, so a grid timing lies below the
// true makespan of its order by less than one unit per op and per edge of its longest path.
void add_grid_slack(const Schedule& s, const Certificate& c, Recomputed& rc) {
  auto it = c.extra.find("time_unit_ms");
  if (it == c.extra.end()) return;
  const std::optional<double> unit = parse_number(it->second);
  if (!unit || *unit <= 0) return;
  const Problem& pb = s.problem;
  std::vector<double> times;
  for (int st = 0; st < pb.num_stages(); ++st) {
    const StageSpec& sp = pb.stages[st];
    for (OpType t : {OpType::F, OpType::I, OpType::W, OpType::B}) times.push_back(compute_ms(pb, StageId{st}, t));
    if (sp.recomputes()) times.push_back(compute_ms(pb, StageId{st}, OpType::R));
    if (st + 1 < pb.num_stages()) times.push_back(pb.boundary_transfer_ms(StageId{st}));
  }
  bool exact = true;
  for (double t : times) {
    const double x = t / *unit;
    exact = exact && std::fabs(x - std::round(x)) <= 1e-6 + 1e-12 * std::fabs(x);
  }
  if (exact) return;
  const double nodes = static_cast<double>(s.num_ops()) + 2.0 * std::max(0, pb.num_stages() - 1) * pb.microbatches;
  rc.grid_slack_ms = *unit * 2 * nodes;
  rc.grid_reason = fmt::format("time_unit_ms {} does not divide the stage times, so its grid rounded them down", it->second);
}

// The producer's claims in `extra`, held against the recomputed figures. An inconsistency is one
// certificate.mismatch naming the field; a figure the checker's own computation rules out is one
// certificate.claim; a claim it cannot recheck is an UncheckedClaim. Absent fields are not claims.
class ClaimCheck {
 public:
  ClaimCheck(const Certificate& c, const Recomputed& rc, std::vector<Violation>& out,
             std::vector<UncheckedClaim>& unchecked)
      : c_(c), rc_(rc), out_(out), unchecked_(unchecked) {}

  void run() {
    for (const char* f : kNumbers) parse(f);
    if (rc_.makespan_ms) check_against_makespan(*rc_.makespan_ms);
    // The best bound includes the checker's own.
    if (const auto b = value("bound_ms"); b && rc_.bounded && !at_most(rc_.lower_bound_ms, *b + slack("bound_ms")))
      fail("bound_ms", fmt::format("{} ms", *b), fmt::format("at least the checker's lower bound {} ms", rc_.lower_bound_ms));
    if (rc_.makespan_ms) {
      // gap = (makespan − bound) / bound, held at the precision both were written with: the gap's last
      // decimal, and what the bound's rounding moves the quotient (makespan / bound² per ms).
      const double makespan = *rc_.makespan_ms;
      const auto gap = value("gap"), bound = value("bound_ms");
      if (gap && bound && *bound > 0) {
        const double want = std::max(0.0, (makespan - *bound) / *bound);
        const double written = slack("gap") + makespan / (*bound * *bound) * slack("bound_ms");
        if (!(std::fabs(*gap - want) <= std::max(1e-6, written) + verify_detail::kCertRelTol * want))
          fail("gap", fmt::format("{}", *gap), fmt::format("{:.6f} = (makespan - bound_ms) / bound_ms", want));
      }
      check_optimal(makespan);
    }
    check_solver_status();
    check_labels();
    if (rc_.bounded) {
      check_achieved();
      report_unchecked_bounds();
    }
  }

 private:
  // A lower bound never lies above the makespan it bounds.
  void check_against_makespan(double makespan) {
    for (const char* f : kBounds)
      if (const auto v = value(f); v && !at_most(*v - slack(f), makespan))
        fail(f, fmt::format("{} ms", *v), fmt::format("a bound at most the makespan {} ms", makespan));
  }

  // "optimal" is true only when the proven bound reaches the makespan.
  void check_optimal(double makespan) {
    const std::string* opt = text("optimal");
    const std::optional<double> proven = value("bound_proven_ms");
    const bool proof = proven && reaches(*proven + slack("bound_proven_ms"), makespan);
    if (opt && *opt == "true" && !proof)
      fail("optimal", "'true'", proven ? fmt::format("no proof: bound_proven_ms {} ms is below the makespan {} ms", *proven, makespan)
                                       : std::string("no proof: bound_proven_ms is absent"));
  }

  // A status that says the order is proven needs the same proof (or the documented rounding of
  // optimal_up_to_ms).
  void check_solver_status() {
    const std::string* opt = text("optimal");
    if (opt && *opt != "true" && *opt != "false") fail("optimal", quoted(*opt), "'true' or 'false'");
    const std::string* status = text("solver_status");
    if (!status) return;
    // "op DAG only: S": the solver's status S on an op DAG whose bounds a cheaper B beats (no proof).
    constexpr std::string_view kDagOnly = "op DAG only: ";
    const bool dag_only = status->rfind(kDagOnly, 0) == 0;
    std::string_view st = *status;
    if (dag_only) st.remove_prefix(kDagOnly.size());
    const bool proof_status =
        st == "optimal" || st == "heuristic meets bound" || st == "destructive bound meets incumbent";
    const bool claims_proof = proof_status && !dag_only;
    const bool known = proof_status || st == "no Z3 run" || st == "not run: interrupted" ||
                       st == "not run: time limit reached" ||
                       st.rfind("no-queue: ", 0) == 0 || st.rfind("comm-stream: ", 0) == 0 ||
                       st.rfind("windows: ", 0) == 0;
    if (!known) fail("solver_status", quoted(*status), "a status from the documented list");
    if (claims_proof && !(opt && *opt == "true") && !text("optimal_up_to_ms"))
      fail("solver_status", quoted(*status), "a proof of optimality, but 'optimal' is not 'true'");
  }

  // Which method produced the schedule and the bound: labels from fixed lists.
  void check_labels() {
    one_of("schedule_method",
           {"list scheduler", "baseline", "destructive-bound search", "local search", "z3", "tuner"});
    one_of("bound_method", {"dag bound", "destructive bound", "z3 relaxation", "z3"});
    if (const std::string* given = text("seeded_by")) {
      // A seed the local search improved ends in " + polished".
      const std::string kPolished = " + polished";
      std::string seed = *given;
      const size_t cut = seed.size() > kPolished.size() ? seed.size() - kPolished.size() : 0;
      if (cut > 0 && seed.compare(cut, kPolished.size(), kPolished) == 0) seed.resize(cut);
      const bool ok = seed.rfind("heuristic ", 0) == 0 || seed.rfind("baseline ", 0) == 0 ||
                      seed.rfind("zb-greedy ", 0) == 0 || seed == "destructive-bound search" || seed == "tuner";
      if (!ok) {
        fail("seeded_by", quoted(*given),
             "'heuristic <policy>', 'baseline <name>', 'zb-greedy <policy>', 'destructive-bound search' or "
             "'tuner', each optionally followed by ' + polished'");
      }
    }
  }

  // Makespans the producer achieved are never below the checker's lower bound: no order of this
  // partition and placement is faster. A grid timing may fall below it by the grid's rounding:
  // within that it is accepted when the rounding is at most kGridSlackRel of the bound, else
  // reported as unchecked. The best baseline ("<name> <ms> ms") was timed
  // by the checker's own simulation.
  void check_achieved() {
    const double lb = rc_.lower_bound_ms;
    for (const char* f : kAchieved) {
      const auto v = value(f);
      if (!v) continue;
      const double near = lb - tolerance(*v, lb) - slack(f);
      if (*v >= near) continue;
      if (*v >= near - rc_.grid_slack_ms) {
        // The rounding rests on time_unit_ms, itself a claim: small against the bound, it can hide
        // nothing that matters; larger, the figure is reported.
        if (rc_.grid_slack_ms <= kGridSlackRel * lb) continue;
        unchecked(f, fmt::format("certificate claims {} {} ms, below the checker's own bound {} ms, a grid timing "
                                 "({}, by up to {} ms): the claim is not rechecked",
                                 f, *text(f), lb, rc_.grid_reason, rc_.grid_slack_ms));
        continue;
      }
      below_bound(f, *text(f));
    }
    if (const std::string* b = text("best_baseline")) {
      // "<name> <ms> ms"
      const size_t ms = b->rfind(" ms");
      const size_t sp = ms == std::string::npos || ms == 0 ? std::string::npos : b->rfind(' ', ms - 1);
      if (sp != std::string::npos && ms + 3 == b->size()) {
        const std::string num = b->substr(sp + 1, ms - sp - 1);
        if (const auto v = parse_number(num); v && *v < lb - tolerance(*v, lb) - print_allowance(num))
          below_bound("best_baseline", num);
      }
    }
  }

  void below_bound(const char* field, const std::string& claim) {
    claim_fail(field, fmt::format("certificate field 'extra.{}' claims a makespan of {} ms, below the checker's lower "
                                  "bound {} ms: no order of this partition and placement is that fast",
                                  field, claim, rc_.lower_bound_ms));
  }

  // A bound above the checker's own rests on a proof the file does not carry (Z3's, a DAG bound
  // with memory edges, the bound over all partitions): reported, not rechecked.
  void report_unchecked_bounds() {
    const double lb = rc_.lower_bound_ms;
    for (const char* f : kBounds) {
      const auto v = value(f);
      if (!v) continue;
      if (rc_.makespan_ms && !at_most(*v - slack(f), *rc_.makespan_ms)) continue;  // already a mismatch
      if (*v <= lb + tolerance(*v, lb) + slack(f)) continue;
      std::string what = fmt::format("{} {} ms", f, *text(f));
      if (std::string(f) == "bound_proven_ms") {
        if (const std::string* opt = text("optimal"); opt && *opt == "true") what += " (optimal: true)";
        else if (text("optimal_up_to_ms")) what += fmt::format(" (optimal_up_to_ms: {})", *text("optimal_up_to_ms"));
      }
      unchecked(f, fmt::format("certificate claims {}; the checker's own bound is {} ms: the claim is not rechecked",
                               what, lb));
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
  // Reads a number field once: not finite is a mismatch, negative a claim the checker rules out.
  void parse(const char* key) {
    const std::string* t = text(key);
    if (!t) return;
    const std::optional<double> v = parse_number(*t);
    if (!v) {
      fail(key, quoted(*t), "a finite number");
      return;
    }
    if (*v < 0) {
      claim_fail(key, fmt::format("certificate field 'extra.{}' claims {}, a negative figure: times, bounds, "
                                  "ratios and counts are never negative",
                                  key, *t));
      return;
    }
    values_[key] = *v;
  }
  // The field's value when it is a finite, non-negative number.
  std::optional<double> value(const char* key) const {
    auto it = values_.find(key);
    return it == values_.end() ? std::nullopt : std::optional<double>(it->second);
  }
  // How far the field's written figure may lie from the value it stands for.
  double slack(const char* key) const {
    const std::string* t = text(key);
    return t ? print_allowance(*t) : 0.0;
  }
  // a <= b, and a >= b, within the certificate's tolerance.
  static double tolerance(double a, double b) { return verify_detail::kCertRelTol * std::max(std::fabs(a), std::fabs(b)) + 1e-9; }
  static bool at_most(double a, double b) { return a <= b + tolerance(a, b); }
  static bool reaches(double a, double b) { return a >= b - tolerance(a, b); }
  static std::string quoted(const std::string& s) { return fmt::format("'{}'", s.size() > 80 ? s.substr(0, 80) + "..." : s); }
  SourceLoc loc(const std::string& field) const {
    auto it = c_.field_loc.find("extra." + field);
    return it == c_.field_loc.end() ? c_.loc : it->second;
  }
  void fail(const std::string& field, const std::string& claim, const std::string& expected) {
    out_.push_back(general_violation(
        rules::kCertificateMismatch, -1,
        fmt::format("certificate field 'extra.{}' claims {} but the checker requires {}", field, claim, expected), {},
        loc(field)));
  }
  void claim_fail(const std::string& field, std::string message) {
    out_.push_back(general_violation(rules::kCertificateClaim, -1, std::move(message), {}, loc(field)));
  }
  void unchecked(const std::string& field, std::string message) {
    unchecked_.push_back(UncheckedClaim{"extra." + field, std::move(message), loc(field)});
  }

  const Certificate& c_;
  const Recomputed& rc_;
  std::vector<Violation>& out_;
  std::vector<UncheckedClaim>& unchecked_;
  std::map<std::string, double> values_;
};

}  // namespace

void check_certificate(const Schedule& s, const Report& report, const Certificate& claimed,
                       std::vector<Violation>& out, std::vector<UncheckedClaim>& unchecked) {
  const Certificate mine = make_certificate(s, report);
  // Each violation points at the field's value ("peak_memory_gb[1]" at the list), else the block.
  auto loc = [&](const std::string& field) {
    auto it = claimed.field_loc.find(field.substr(0, field.find('[')));
    return it == claimed.field_loc.end() ? claimed.loc : it->second;
  };
  auto fail = [&](const std::string& field, const std::string& claim, const std::string& got,
                  std::vector<std::string> notes = {}) {
    out.push_back(general_violation(
        rules::kCertificateMismatch, -1,
        fmt::format("certificate field '{}' claims {} but the checker recomputes {}", field, claim, got),
        std::move(notes), loc(field)));
  };
  auto negative = [&](const std::string& field, double v) {
    if (v < 0)
      out.push_back(general_violation(rules::kCertificateClaim, -1,
                                      fmt::format("certificate field '{}' claims {}, a negative figure: times, "
                                                  "ratios and memory are never negative",
                                                  field, v),
                                      {}, loc(field)));
  };
  const std::string sealed = certificate_digest(s, claimed);
  if (claimed.digest != sealed)
    fail("digest", claimed.digest.empty() ? "nothing" : claimed.digest, sealed,
         {"the digest is SHA-256 of the canonical schedule (problem, placement, programs) and of every claim of "
          "the certificate: the schedule or a claim was changed after it was certified, or the certificate "
          "belongs to another schedule"});
  if (claimed.semantics != mine.semantics)
    fail("semantics", fmt::format("'{}'", claimed.semantics), fmt::format("'{}'", mine.semantics),
         {fmt::format("check the schedule under the semantics it was certified for ({})", claimed.semantics)});
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
  if (report.sim) {
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
  } else {
    // Not recomputed, so not compared; a negative figure is wrong whatever the schedule does.
    negative("makespan_ms", claimed.makespan_ms);
    negative("bubble_ratio", claimed.bubble_ratio);
    for (size_t d = 0; d < claimed.peak_memory_gb.size(); ++d)
      negative(fmt::format("peak_memory_gb[{}]", d), claimed.peak_memory_gb[d]);
  }
  Recomputed rc;
  if (report.sim) rc.makespan_ms = report.sim->makespan_ms;
  rc.lower_bound_ms = report.lower_bound_ms;
  rc.bounded = std::none_of(report.violations.begin(), report.violations.end(),
                            [](const Violation& v) { return v.rule.rfind("structure.", 0) == 0; });
  add_grid_slack(s, claimed, rc);
  ClaimCheck(claimed, rc, out, unchecked).run();
}

}  // namespace ps::verify_detail
