// The recomputation op R in the checker: completeness, dependencies, memory, timing, comm insertion,
// deadlock analysis and the lower bound, each rule with one minimal broken schedule (built in code,
// located "test:<device+1>:<index+1>"). Memory and times are worked out by hand in the comments.
#include <doctest/doctest.h>

#include "builders.h"
#include "test_util.h"
#include "report/report.h"
#include "verify/rules.h"

namespace recompute_rules_test {

using namespace vt;

// Two stages on two devices, F = I = W = 1 ms, activation 100 MB, stash 20 MB, 1 M params at 2 B
// each (2 MB of model states per device). `recompute[s]`: stage s recomputes fully, R = 0.5 ms,
// keeping 10 MB after F.
Problem rc_problem(int mbs, std::vector<bool> recompute) {
  Problem p = uniform_problem(2, mbs, {0, 1});
  for (size_t s = 0; s < recompute.size(); ++s) {
    if (!recompute[s]) continue;
    p.stages[s].recompute = RecomputeMode::kFull;
    p.stages[s].recompute_ms = 0.5;
    p.stages[s].recompute_kept_mb = 10;
  }
  return p;
}

const Violation& expect_rule(const Report& r, const std::string& rule, int device, int op_index) {
  INFO(format_report(r));
  REQUIRE_FALSE(r.valid);
  const Violation* v = find_rule(r, rule);
  REQUIRE_MESSAGE(v != nullptr, "expected rule ", rule, ", got: ", rules_of(r));
  CHECK(device_number(*v) == device);
  CHECK(v->op_index == op_index);
  if (op_index >= 0) {
    CHECK(v->loc.file == "test");
    CHECK(v->loc.line == device + 1);
    CHECK(v->loc.col == op_index + 1);
  }
  return *v;
}

TEST_CASE("recompute: a schedule with R between F and B is valid; R's time and memory are counted") {
  const Problem p = rc_problem(2, {true, true});
  Report r = verify(from_strings(p, {"0F0 0F1 0R0 0B0 0R1 0B1", "1F0 1R0 1B0 1F1 1R1 1B1"}));
  REQUIRE_MESSAGE(r.valid, format_report(r));
  REQUIRE(r.sim.has_value());
  CHECK(r.comms_inserted);
  CHECK(r.safe_under == std::vector<std::string>{"rendezvous", "grouped", "buffered", "posted"});
  // Device 0: 2 MB states; F0 +10 = 12, F1 +10 = 22, R0 +90 = 112, B0 -100 = 12, R1 +90 = 102.
  CHECK(r.sim->peak_memory_mb[0] == doctest::Approx(112));
  // Device 1: F0 +10 = 12, R0 +90 = 102, B0 = 2, F1 = 12, R1 = 102.
  CHECK(r.sim->peak_memory_mb[1] == doctest::Approx(102));
  // Each device computes 2 × (F 1 + R 0.5 + B 2) = 7 ms.
  CHECK(r.sim->busy_ms[0] == doctest::Approx(7));
  CHECK(r.sim->busy_ms[1] == doctest::Approx(7));
  // Without recomputation the same order (R dropped) peaks higher on device 0: 2 + 100 + 100.
  Report none = verify(from_strings(rc_problem(2, {false, false}), {"0F0 0F1 0B0 0B1", "1F0 1B0 1F1 1B1"}));
  REQUIRE(none.sim.has_value());
  CHECK(none.sim->peak_memory_mb[0] == doctest::Approx(202));
}

TEST_CASE("structure.recompute: an R on a stage that does not recompute") {
  Report r = verify(from_strings(rc_problem(1, {true, false}), {"0F0 0R0 0B0", "1F0 1R0 1B0"}));
  const Violation& v = expect_rule(r, std::string(rules::kRecompute), 1, 1);
  CHECK(v.action == "1R0");
  CHECK(pstest::contains(v.message, "stage 1 does not recompute"));
}

TEST_CASE("structure.missing: a recomputing stage without its R") {
  Report r = verify(from_strings(rc_problem(2, {true, true}), {"0F0 0R0 0B0 0F1 0B1", "1F0 1R0 1B0 1F1 1R1 1B1"}));
  const Violation& v = expect_rule(r, std::string(rules::kMissing), 0, -1);
  CHECK(pstest::contains(v.message, "'0R1' is missing"));
  CHECK(v.loc.line == 1);
  REQUIRE(!v.notes.empty());
  CHECK(pstest::contains(v.notes[0], "0F1"));
}

TEST_CASE("structure.duplicate: R twice") {
  Report r = verify(from_strings(rc_problem(1, {true, true}), {"0F0 0R0 0R0 0B0", "1F0 1R0 1B0"}));
  const Violation& v = expect_rule(r, std::string(rules::kDuplicate), 0, 2);
  CHECK(v.action == "0R0");
}

TEST_CASE("dependency: R before F, R after B, R after I") {
  {
    Report r = verify(from_strings(rc_problem(1, {true, true}), {"0R0 0F0 0B0", "1F0 1R0 1B0"}));
    const Violation& v = expect_rule(r, std::string(rules::kDependency), 0, 0);
    CHECK(v.action == "0R0");
    CHECK(pstest::contains(v.message, "the forward it recomputes"));
  }
  {
    Report r = verify(from_strings(rc_problem(1, {true, true}), {"0F0 0B0 0R0", "1F0 1R0 1B0"}));
    const Violation& v = expect_rule(r, std::string(rules::kDependency), 0, 1);
    CHECK(v.action == "0B0");
    CHECK(pstest::contains(v.message, "recomputation"));
  }
  {
    Report r = verify(from_strings(rc_problem(1, {true, true}), {"0F0 0R0 0B0", "1F0 1I0 1R0 1W0"}));
    const Violation& v = expect_rule(r, std::string(rules::kDependency), 1, 1);
    CHECK(v.action == "1I0");
  }
}

TEST_CASE("memory.limit: the peak between R and B is reported at the R") {
  Problem p = rc_problem(1, {true, true});
  p.memory_gb = 0.1;  // 100 MB; device 0: 2 + 10 (F) = 12, then + 90 (R) = 102 > 100
  Report r = verify(from_strings(p, {"0F0 0R0 0B0", "1F0 1R0 1B0"}));
  const Violation& v = expect_rule(r, std::string(rules::kMemoryLimit), 0, 1);
  CHECK(v.action == "0R0");
  CHECK(pstest::contains(v.message, "0.102 GB"));
}

TEST_CASE("lower bound: R counts as device work and on the last stage's critical path") {
  // Split backward. Without R: device work 2 × 3 = 6; head + work of device 1 = 1 + 6 = 7.
  // With R (0.5 per microbatch on both stages): device work 2 × 3.5 = 7, head + work = 1 + 7 = 8;
  // critical path F0 + F1 + R1 + I1 + I0 + W0 = 5.5.
  CHECK(lower_bound_ms(rc_problem(2, {false, false})) == doctest::Approx(7));
  CHECK(lower_bound_ms(rc_problem(2, {true, true})) == doctest::Approx(8));
  // M = 1, only the last stage recomputes: work 3.5 (device 1) + head 1 = 4.5; path 1+1+0.5+1+1+1 = 5.5.
  CHECK(lower_bound_ms(rc_problem(1, {false, true})) == doctest::Approx(5.5));
  // The bound holds on the simulated schedules.
  Report r = verify(from_strings(rc_problem(1, {false, true}), {"0F0 0I0 0W0", "1F0 1R0 1I0 1W0"}));
  REQUIRE_MESSAGE(r.valid, format_report(r));
  CHECK(r.sim->makespan_ms >= r.lower_bound_ms - 1e-9);
}

TEST_CASE("deadlock analysis and simulation run R like a compute op (files with comms)") {
  const Problem p = rc_problem(1, {true, true});
  Report r = verify(from_strings(p, {"0F0 0SEND_F0 0RECV_B0 0R0 0B0", "1RECV_F0 1F0 1R0 1B0 1SEND_B0"}));
  REQUIRE_MESSAGE(r.valid, format_report(r));
  CHECK_FALSE(r.comms_inserted);
  // Link 1 GB/s and output 0 MB: transfers take 0. F0 [0,1], F1 [1,2], R1 [2,2.5], B1 [2.5,4.5],
  // R0 [1,1.5] on device 0 right after its F, B0 [4.5,6.5] once the gradient is there.
  CHECK(r.sim->makespan_ms == doctest::Approx(6.5));
}

}  // namespace recompute_rules_test
