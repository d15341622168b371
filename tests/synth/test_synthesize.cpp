// Tests of the synthesizer's straight script (synth/synthesize.h) and the infeasibility explanation
// (synth/z3/infeasible.h): certified output that re-verifies from its file text, proofs, never worse
// than a baseline, determinism, exit-2 explanations.
#include <doctest/doctest.h>

#include "ir/schedule_io.h"
#include "synth/z3/infeasible.h"
#include "synth/synth_problems.h"
#include "synth/synthesize.h"
#include "verify/verify.h"

using namespace ps;
using pstest::HandProblem;
using pstest::make_hand_problem;

namespace {

SynthOptions budget(uint64_t rlimit = 30'000'000) {
  SynthOptions o;
  o.time_limit_s = 120;  // the rlimit decides, so runs are deterministic
  o.rlimit = rlimit;
  return o;
}

}  // namespace

TEST_CASE("synthesize: certified, re-verifies from its own file text, proven optimal on small shapes") {
  for (int P : {2, 4}) {
    for (double cap : {0.0, 2.0}) {
      HandProblem h;
      h.devices = P;
      h.microbatches = 2 * P;
      h.cap_microbatches = cap;
      h.stash_mb = 200;
      h.heterogeneous = true;
      CAPTURE(P);
      CAPTURE(cap);
      const Problem p = make_hand_problem(h);
      Result<SynthResult> r = synthesize(p, budget());
      REQUIRE(r.ok());
      CAPTURE(r->solver_status);
      CAPTURE(r->makespan_ms);
      CAPTURE(r->bound_ms);
      CAPTURE(r->z3_bound_ms);
      CAPTURE(r->seed_source);
      CHECK(r->report.valid);
      CHECK(r->schedule.has_comms());
      CHECK(r->optimal);
      CHECK(r->gap == doctest::Approx(0.0));
      REQUIRE(r->schedule.certificate.has_value());
      CHECK(r->schedule.certificate->extra.at("optimal") == "true");
      CHECK(r->schedule.certificate->extra.at("z3_version") == z3_version());
      // The file's text is what a user gets: read it back and check it, certificate included.
      const Report rep = pstest::check_written_file(*r);
      for (double peak : rep.sim->peak_memory_mb) {
        if (p.memory_gb > 0) CHECK(peak <= p.memory_gb * 1000 + 1e-6);
      }
    }
  }
}

TEST_CASE("synthesize: never worse than any baseline that fits, and beats them under a cap") {
  HandProblem h;
  h.devices = 4;
  h.microbatches = 8;
  h.cap_microbatches = 4;
  h.heterogeneous = true;
  Result<SynthResult> r = synthesize(make_hand_problem(h), budget());
  REQUIRE(r.ok());
  int fitted = 0;
  for (const auto& b : r->baselines) {
    if (b.makespan_ms <= 0) continue;
    ++fitted;
    CAPTURE(b.name);
    CHECK(r->makespan_ms <= b.makespan_ms + 1e-9);
  }
  CHECK(fitted >= 2);  // at least 1F1B and ZB-H1 fit 4 microbatches of activation
  CHECK(r->makespan_ms < r->best_baseline_ms);
  CHECK(r->makespan_ms >= r->bound_ms - 1e-9);
}

TEST_CASE("synthesize: fused backward and V-shape placement") {
  HandProblem h;
  h.devices = 2;
  h.microbatches = 4;
  h.stages_per_device = 2;
  h.split_backward = false;
  h.cap_microbatches = 4;
  Result<SynthResult> r = synthesize(make_hand_problem(h), budget());
  REQUIRE(r.ok());
  CHECK(r->report.valid);
  CHECK(r->optimal);
  for (const auto& prog : r->schedule.programs)
    for (const Action& a : prog) CHECK((a.type != OpType::I && a.type != OpType::W));
}

TEST_CASE("synthesize: same seed and budget give byte-identical files") {
  HandProblem h;
  h.devices = 4;
  h.microbatches = 8;
  h.cap_microbatches = 3;
  h.heterogeneous = true;
  const Problem p = make_hand_problem(h);
  SynthOptions o = budget(2'000'000);
  o.seed = 3;
  pstest::check_same_run_same_file(p, o);
}

TEST_CASE("infeasible: the explanation names the device, the stages and the sizes") {
  HandProblem h;
  h.devices = 2;
  h.microbatches = 4;
  h.stages_per_device = 2;  // device 0 holds stages 0 and 3
  h.states_mb = 10000;      // 10 GB per stage
  h.act_mb = 1500;
  Problem p = make_hand_problem(h);
  p.memory_gb = 22;  // states 20 GB + activations of two stages 3 GB = 23 GB > 22 GB
  const std::vector<DeviceNeed> needs = device_memory_needs(p);
  CHECK(needs[0].need_mb == doctest::Approx(23000));
  CHECK(needs[0].stages == std::vector<int>{0, 3});
  const std::string why = explain_infeasibility(p);
  CHECK(why.find("device 0 needs at least 23.0 GB but the limit is 22.0 GB") != std::string::npos);
  CHECK(why.find("model states of stages 0 and 3 are 20.0 GB") != std::string::npos);
  CHECK(why.find("one microbatch of activation of stages 0 and 3 is 3.0 GB") != std::string::npos);
  Result<SynthResult> r = synthesize(p, budget());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kInfeasible);
  CHECK(r.status().message().find("device 0 needs at least") != std::string::npos);
  // States alone over the limit: the minimal unsat core drops the activations.
  p.memory_gb = 15;
  const std::string why2 = explain_infeasibility(p);
  CHECK(why2.find("model states of stages 0 and 3 are 20.0 GB") != std::string::npos);
  CHECK(why2.find("activation") == std::string::npos);
  // At exactly the minimum it is feasible, and the serial order is found.
  p.memory_gb = 23;
  CHECK(explain_infeasibility(p).empty());
  Result<SynthResult> ok = synthesize(p, budget());
  REQUIRE(ok.ok());
  CHECK(ok->report.valid);
}
