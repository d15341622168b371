// Certificate: round trip through the YAML file format, the digest against an independent SHA-256
// (coreutils sha256sum), tolerance, and tamper detection naming the field.
#include <doctest/doctest.h>

#include <cstdio>
#include <fmt/format.h>

#include <fstream>

#include "builders.h"
#include "ir/schedule_io.h"
#include "report/report.h"
#include "verify/digest.h"
#include "test_util.h"

using namespace vt;

namespace {

Schedule certified(const Schedule& in) {
  Report r = verify(in);
  REQUIRE(r.valid);
  Schedule out = r.checked;
  out.certificate = make_certificate(out, r);
  return out;
}

// Writes the schedule as YAML and reads it back (what a user's file goes through).
Schedule round_trip(const Schedule& s) {
  auto back = parse_schedule_yaml(format_schedule_yaml(s), "cert.yaml");
  REQUIRE_MESSAGE(back.ok(), back.status().str());
  return *back;
}

std::vector<std::string> mismatched_fields(const Report& r) {
  std::vector<std::string> out;
  for (const auto& v : r.violations)
    if (v.rule == "certificate.mismatch") {
      auto a = v.message.find('\''), b = v.message.find('\'', a + 1);
      out.push_back(v.message.substr(a + 1, b - a - 1));
    }
  return out;
}

Problem problem() { return uniform_problem(3, 5, {0, 1, 2, 2, 1, 0}, 1.25, 1.5, 0.75, 0.3); }

}  // namespace

TEST_CASE("certificate round trip: written, read back, recomputed, accepted") {
  std::mt19937 rng(1);
  Schedule s = certified(random_valid(problem(), rng));
  const Certificate& c = *s.certificate;
  CHECK(c.verdict == "valid");
  CHECK(c.semantics == "rendezvous");
  CHECK(c.makespan_ms > 0);
  CHECK(c.peak_memory_gb.size() == 3);
  Schedule back = round_trip(s);
  REQUIRE(back.certificate.has_value());
  Report r = verify(back);
  CHECK_MESSAGE(r.valid, format_report(r));
  CHECK(certificate_digest(back, *back.certificate) == c.digest);
  CHECK(schedule_digest(back) != c.digest);  // the certificate's digest seals its claims too
}

TEST_CASE("digest: SHA-256 of the canonical text, as sha256sum computes it") {
  std::mt19937 rng(2);
  Schedule s = certified(random_valid(problem(), rng));
  const std::string path = pstest::temp_path("canonical.txt");
  {
    std::ofstream out(path, std::ios::binary);
    out << canonical_text(s);
  }
  FILE* p = popen(("sha256sum " + path).c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[128] = {0};
  REQUIRE(fgets(buf, sizeof buf, p) != nullptr);
  pclose(p);
  std::remove(path.c_str());
  const std::string hex(buf, 64);
  CHECK(schedule_digest(s) == "sha256:" + hex);
  // The digest ignores the certificate and predicted times, and changes with the programs.
  Schedule t = s;
  t.certificate.reset();
  CHECK(schedule_digest(t) == schedule_digest(s));
  std::swap(t.programs[0][0], t.programs[0][1]);
  CHECK(schedule_digest(t) != schedule_digest(s));
}

TEST_CASE("tampered certificates are caught, naming the field, claimed vs recomputed") {
  std::mt19937 rng(3);
  const Schedule s = certified(random_valid(problem(), rng));
  const double mk = s.certificate->makespan_ms;

  // Each edit below is re-sealed (a forger can recompute SHA-256): the figures are still recomputed.
  Schedule a = s;
  a.certificate->makespan_ms = mk * 0.9;
  seal_certificate(a);
  Report ra = verify(round_trip(a));
  CHECK(mismatched_fields(ra) == std::vector<std::string>{"makespan_ms"});
  const Violation* v = find_rule(ra, "certificate.mismatch");
  REQUIRE(v != nullptr);
  CHECK(v->message.find(fmt::format("claims {}", mk * 0.9)) != std::string::npos);
  CHECK(v->message.find(fmt::format("recomputes {}", mk)) != std::string::npos);

  Schedule b = s;
  b.certificate->peak_memory_gb[1] += 0.001;
  b.certificate->bubble_ratio += 0.01;
  b.certificate->lower_bound_ms += 1;
  seal_certificate(b);
  CHECK(mismatched_fields(verify(round_trip(b))) ==
        std::vector<std::string>{"lower_bound_ms", "bubble_ratio", "peak_memory_gb[1]"});

  Schedule c = s;  // within the 1e-6 relative tolerance
  c.certificate->makespan_ms = mk * (1 + 1e-7);
  seal_certificate(c);
  CHECK(verify(round_trip(c)).valid);
  c.certificate->makespan_ms = mk;  // an edit that is not re-sealed: the digest names it
  CHECK(mismatched_fields(verify(round_trip(c))) == std::vector<std::string>{"digest"});

  Schedule d = s;  // the schedule changed after certification: the digest no longer matches
  d.problem.stages[0].fwd_ms += 0.5;  // re-costed: figures and digest both change
  auto fields = mismatched_fields(verify(round_trip(d)));
  CHECK(fields.front() == "digest");
  CHECK(std::find(fields.begin(), fields.end(), "makespan_ms") != fields.end());

  Schedule e = s;
  e.certificate->digest = "sha256:" + std::string(64, '0');
  CHECK(mismatched_fields(verify(round_trip(e))) == std::vector<std::string>{"digest"});

  // Checked under another semantics than certified: the semantics field is named.
  VerifyOptions g;
  g.semantics = Semantics::kBuffered;
  auto fg = mismatched_fields(verify(round_trip(s), g));
  CHECK(std::find(fg.begin(), fg.end(), "semantics") != fg.end());
}

TEST_CASE("the extras are claims: edited, sealed or not, they are held against the recomputed figures") {
  std::mt19937 rng(5);
  Schedule s = certified(random_valid(problem(), rng));
  const double mk = s.certificate->makespan_ms;
  const double lb = s.certificate->lower_bound_ms;
  REQUIRE(lb < mk * 0.99);  // a gap to lie about
  auto& x = s.certificate->extra;
  x["optimal"] = "false";
  x["bound_ms"] = fmt::format("{}", lb);
  x["bound_proven_ms"] = fmt::format("{}", lb);
  x["gap"] = fmt::format("{:.6f}", (mk - lb) / lb);
  x["solver_status"] = "no-queue: stopped: budget";
  x["seeded_by"] = "heuristic bwd-first";
  seal_certificate(s);
  CHECK_MESSAGE(verify(round_trip(s)).valid, format_report(verify(round_trip(s))));

  // An edit without re-sealing: the digest names it, and the claim itself is checked too.
  Schedule a = s;
  a.certificate->extra["optimal"] = "true";
  CHECK(mismatched_fields(verify(round_trip(a))) == std::vector<std::string>{"digest", "extra.optimal"});

  // The claim of optimality with a re-computed digest: every lie is named.
  Schedule b = s;
  b.certificate->extra["optimal"] = "true";
  b.certificate->extra["solver_status"] = "optimal";
  b.certificate->extra["gap"] = "0.000000";
  seal_certificate(b);
  auto fb = mismatched_fields(verify(round_trip(b)));
  CHECK(fb == std::vector<std::string>{"extra.gap", "extra.optimal"});

  Schedule c = s;  // a proven bound above the makespan, a status and a source from no list
  c.certificate->extra["bound_proven_ms"] = fmt::format("{}", mk * 1.01);
  c.certificate->extra["solver_status"] = "proven by hand";
  c.certificate->extra["seeded_by"] = "a friend";
  c.certificate->extra["heuristic_ms"] = "fast";
  c.certificate->extra["schedule_method"] = "magic";
  seal_certificate(c);
  auto fc = mismatched_fields(verify(round_trip(c)));
  CHECK(fc == std::vector<std::string>{"extra.heuristic_ms", "extra.bound_proven_ms", "extra.solver_status",
                                       "extra.schedule_method", "extra.seeded_by"});

  Schedule d = s;  // a best bound below the checker's own
  d.certificate->extra["bound_ms"] = fmt::format("{}", lb * 0.5);
  d.certificate->extra["gap"] = fmt::format("{:.6f}", (mk - lb * 0.5) / (lb * 0.5));
  seal_certificate(d);
  CHECK(mismatched_fields(verify(round_trip(d))) == std::vector<std::string>{"extra.bound_ms"});

  // The timing-aware greedy's seed and a seed the local search shortened: labels from the lists.
  for (const char* seed : {"zb-greedy warmup=0/steady=0.5/w=fill/oldest", "baseline zbv + polished",
                           "zb-greedy per-device@3 + polished", "tuner + polished"}) {
    Schedule e = s;
    e.certificate->extra["seeded_by"] = seed;
    e.certificate->extra["schedule_method"] = "local search";
    seal_certificate(e);
    CHECK_MESSAGE(verify(round_trip(e)).valid, seed);
  }
  Schedule f = s;  // " + polished" does not make any source one of the list
  f.certificate->extra["seeded_by"] = "a friend + polished";
  seal_certificate(f);
  CHECK(mismatched_fields(verify(round_trip(f))) == std::vector<std::string>{"extra.seeded_by"});
}

TEST_CASE("a certificate claiming 'valid' on an invalid schedule is a mismatch of the verdict") {
  std::mt19937 rng(4);
  Schedule s = certified(random_valid(problem(), rng));
  // Break the schedule: drop the last op of device 0; keep the certificate.
  s.programs[0].pop_back();
  Report r = verify(round_trip(s));
  CHECK_FALSE(r.valid);
  auto f = mismatched_fields(r);
  CHECK(std::find(f.begin(), f.end(), "digest") != f.end());
  CHECK(std::find(f.begin(), f.end(), "verdict") != f.end());
  // The certificate check can be turned off; the schedule is still invalid.
  VerifyOptions o;
  o.check_certificate = false;
  Report r2 = verify(s, o);
  CHECK(mismatched_fields(r2).empty());
  CHECK_FALSE(r2.valid);
}
