// One minimal broken schedule per rule id (built in code): the rule, the device, the op index and
// the location of the first violation; plus the notes that name the other party.
#include <doctest/doctest.h>

#include "builders.h"
#include "ir/units.h"
#include "test_util.h"
#include "report/report.h"
#include "verify/rules.h"

using namespace vt;

namespace {

struct Expect {
  std::string rule;
  int device;
  int op_index;
  int line;  // location "test:line:col" (0: no location expected)
  int col;
};

const Violation& expect_first(const Report& r, const Expect& e) {
  INFO(format_report(r));
  REQUIRE_FALSE(r.valid);
  const Violation* v = find_rule(r, e.rule);
  REQUIRE_MESSAGE(v != nullptr, "expected rule ", e.rule, ", got: ", rules_of(r));
  CHECK(device_number(*v) == e.device);
  CHECK(v->op_index == e.op_index);
  if (e.line > 0) {
    CHECK(v->loc.file == "test");
    CHECK(v->loc.line == e.line);
    CHECK(v->loc.col == e.col);
  }
  return *v;
}

Problem two_stage(int mbs = 1) { return uniform_problem(2, mbs, {0, 1}); }

}  // namespace

TEST_CASE("a minimal valid schedule passes, with and without comms") {
  Report a = verify(from_strings(two_stage(), {"0F0 0B0", "1F0 1B0"}));
  CHECK_MESSAGE(a.valid, format_report(a));
  CHECK(a.comms_inserted);
  Report b = verify(from_strings(two_stage(), {"0F0 0SEND_F0 0RECV_B0 0B0", "1RECV_F0 1F0 1B0 1SEND_B0"}));
  CHECK_MESSAGE(b.valid, format_report(b));
  CHECK_FALSE(b.comms_inserted);
  CHECK(b.safe_under == std::vector<std::string>{"rendezvous", "grouped", "buffered", "posted"});
}

TEST_CASE("structure.index: microbatch out of range") {
  Report r = verify(from_strings(two_stage(), {"0F0 0F1 0B0", "1F0 1B0"}));
  const Violation& v = expect_first(r, {"structure.index", 0, 1, 1, 2});
  CHECK(v.action == "0F1");
  CHECK(v.message.find("microbatch 1 is out of range") != std::string::npos);
  // Structural problems stop the later analyses.
  CHECK_FALSE(r.sim.has_value());
  CHECK(r.violations.size() == 1);
}

TEST_CASE("structure.index: stage out of range") {
  Report r = verify(from_strings(two_stage(), {"0F0 0B0 2F0", "1F0 1B0"}));
  expect_first(r, {"structure.index", 0, 2, 1, 3});
}

TEST_CASE("structure.stage-placement: a stage's op on another device") {
  Report r = verify(from_strings(two_stage(), {"0F0 0B0 1F0", "1B0"}));
  const Violation& v = expect_first(r, {"structure.stage-placement", 0, 2, 1, 3});
  REQUIRE(v.notes.size() >= 2);
  CHECK(v.notes[1].find("device 1's op 0 '1B0'") != std::string::npos);
}

TEST_CASE("structure.duplicate: the same op twice; the note points at the first") {
  Report r = verify(from_strings(two_stage(), {"0F0 0F0 0B0", "1F0 1B0"}));
  const Violation& v = expect_first(r, {"structure.duplicate", 0, 1, 1, 2});
  REQUIRE(v.notes.size() == 1);
  CHECK(v.notes[0].find("device 0's op 0 '0F0' (test:1:1)") != std::string::npos);
}

TEST_CASE("structure.missing: an absent forward and an absent backward") {
  Report r = verify(from_strings(two_stage(2), {"0F0 0F1 0B0 0B1", "1F0 1B0 1B1"}));
  const Violation& v = expect_first(r, {"structure.missing", 1, -1, 2, 0});
  CHECK(v.message.find("'1F1' is missing") != std::string::npos);
  Report r2 = verify(from_strings(two_stage(1), {"0F0 0B0", "1F0"}));
  const Violation& v2 = expect_first(r2, {"structure.missing", 1, -1, 2, 0});
  CHECK(v2.message.find("expected '1B0' or '1I0' and '1W0'") != std::string::npos);
}

TEST_CASE("structure.backward-mix: B with I, I without W, split of an unsplittable stage") {
  Report a = verify(from_strings(two_stage(), {"0F0 0I0 0B0", "1F0 1B0"}));
  expect_first(a, {"structure.backward-mix", 0, 1, 1, 2});
  Report b = verify(from_strings(two_stage(), {"0F0 0I0", "1F0 1B0"}));
  const Violation& vb = expect_first(b, {"structure.backward-mix", 0, 1, 1, 2});
  CHECK(vb.message.find("without '0W0'") != std::string::npos);
  Problem p = two_stage();
  p.stages[1].split_backward = false;
  Report c = verify(from_strings(p, {"0F0 0B0", "1F0 1I0 1W0"}));
  expect_first(c, {"structure.backward-mix", 1, 1, 2, 2});
}

TEST_CASE("dependency: B before F, W before I, SEND before its producer, compute before its RECV") {
  Report a = verify(from_strings(two_stage(), {"0B0 0F0", "1F0 1B0"}));
  const Violation& va = expect_first(a, {"dependency", 0, 0, 1, 1});
  CHECK(va.notes.at(0).find("device 0's op 1 '0F0' (test:1:2)") != std::string::npos);
  Report b = verify(from_strings(two_stage(), {"0F0 0W0 0I0", "1F0 1B0"}));
  expect_first(b, {"dependency", 0, 1, 1, 2});
  Report c = verify(from_strings(two_stage(), {"0SEND_F0 0F0 0RECV_B0 0B0", "1RECV_F0 1F0 1B0 1SEND_B0"}));
  expect_first(c, {"dependency", 0, 0, 1, 1});
  Report d = verify(from_strings(two_stage(), {"0F0 0SEND_F0 0RECV_B0 0B0", "1F0 1RECV_F0 1B0 1SEND_B0"}));
  expect_first(d, {"dependency", 1, 0, 2, 1});
}

TEST_CASE("dependency: adjacent stages on one device (V placement)") {
  Problem p = uniform_problem(1, 1, {0, 0});
  Report a = verify(from_strings(p, {"1F0 0F0 1B0 0B0"}));
  expect_first(a, {"dependency", 0, 0, 1, 1});
  Report b = verify(from_strings(p, {"0F0 1F0 0B0 1B0"}));
  expect_first(b, {"dependency", 0, 2, 1, 3});
  Report ok = verify(from_strings(p, {"0F0 1F0 1B0 0B0"}));
  CHECK_MESSAGE(ok.valid, format_report(ok));
}

TEST_CASE("comm.same-device: a SEND/RECV between stages on one device") {
  Problem p = uniform_problem(1, 1, {0, 0});
  Report r = verify(from_strings(p, {"0F0 0SEND_F0 1RECV_F0 1F0 1B0 0B0"}));
  expect_first(r, {"comm.same-device", 0, 1, 1, 2});
  CHECK(r.violations.size() == 2);  // both sides
}

TEST_CASE("comm.unmatched-send: a SEND nobody receives") {
  Report r = verify(from_strings(two_stage(), {"0F0 0SEND_F0 0RECV_B0 0B0", "1F0 1B0 1SEND_B0"}));
  const Violation& v = expect_first(r, {"comm.unmatched-send", 0, 1, 1, 2});
  CHECK(v.message.find("no matching '1RECV_F0' on device 1") != std::string::npos);
  // A SEND past the last stage can never be received.
  Report r2 = verify(from_strings(two_stage(), {"0F0 0SEND_F0 0RECV_B0 0B0",
                                                "1RECV_F0 1F0 1SEND_F0 1B0 1SEND_B0"}));
  expect_first(r2, {"comm.unmatched-send", 1, 2, 2, 3});
}

TEST_CASE("comm.unmatched-recv: a RECV_B on the last stage; the deadlock witness names it") {
  Report r = verify(from_strings(two_stage(), {"0F0 0SEND_F0 0RECV_B0 0B0",
                                               "1RECV_F0 1F0 1RECV_B0 1B0 1SEND_B0"}));
  const Violation& v = expect_first(r, {"comm.unmatched-recv", 1, 2, 2, 3});
  CHECK(v.message.find("last stage") != std::string::npos);
  const Violation& d = expect_first(r, {"deadlock", 1, 2, 2, 3});
  CHECK(d.message.find("waits for '2SEND_B0', which is not in the schedule") != std::string::npos);
  // Device 0 is blocked behind it (waiting for 1SEND_B0).
  bool behind = false;
  for (const auto& n : d.notes) behind |= n.find("device 0 is blocked on op 2 '0RECV_B0'") != std::string::npos;
  CHECK(behind);
}

TEST_CASE("comm.missing: a cross-device edge without SEND/RECV in a file with comms") {
  Report r = verify(from_strings(two_stage(), {"0F0 0RECV_B0 0B0", "1F0 1B0 1SEND_B0"}));
  const Violation& v = expect_first(r, {"comm.missing", 1, 0, 2, 1});
  CHECK(v.notes.at(0).find("device 0's op 0 '0F0'") != std::string::npos);
}

TEST_CASE("comm.order: the k-th SEND and the k-th RECV carry different tensors") {
  Report r = verify(from_strings(two_stage(2), {"0F0 0F1 0SEND_F1 0SEND_F0 0RECV_B0 0B0 0RECV_B1 0B1",
                                                "1RECV_F0 1F0 1RECV_F1 1F1 1B0 1SEND_B0 1B1 1SEND_B1"}));
  const Violation& v = expect_first(r, {"comm.order", 0, 2, 1, 3});
  CHECK(v.message.find("1st SEND from device 0 to device 1 is '0SEND_F1'") != std::string::npos);
  CHECK(v.message.find("1st RECV on device 1 from device 0 is '1RECV_F0'") != std::string::npos);
  CHECK(v.notes.at(2).find("2 of the 2 transfers") != std::string::npos);
  CHECK(find_rule(r, "deadlock") == nullptr);  // pairing undefined: no deadlock claim
}

TEST_CASE("deadlock: naive comms in 1F1B deadlock under rendezvous only; 2-device cycle witness") {
  const std::vector<std::string> rows = {"0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1",
                                         "1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1"};
  Schedule s = from_strings(two_stage(2), rows);
  Report r = verify(s);
  const Violation& v = expect_first(r, {"deadlock", 0, 3, 1, 4});
  CHECK(v.message.find("devices 0 -> 1 -> 0") != std::string::npos);
  REQUIRE(v.notes.size() >= 3);
  CHECK(v.notes[0].find("device 0 is blocked on op 3 '0SEND_F1'") != std::string::npos);
  CHECK(v.notes[0].find("waits for device 1's op 4 '1RECV_F1'") != std::string::npos);
  CHECK(v.notes[0].find("device 1 is blocked on op 3 '1SEND_B0'") != std::string::npos);
  CHECK(v.notes[1].find("device 1 is blocked on op 3 '1SEND_B0'") != std::string::npos);
  CHECK(v.notes[1].find("waits for device 0's op 4 '0RECV_B0'") != std::string::npos);
  CHECK(v.notes.back().find("deadlocks under rendezvous; safe under grouped, buffered and posted") != std::string::npos);
  CHECK(r.safe_under == std::vector<std::string>{"grouped", "buffered", "posted"});
  CHECK_FALSE(r.sim.has_value());

  VerifyOptions g;
  g.semantics = Semantics::kGrouped;
  Report rg = verify(s, g);
  CHECK_MESSAGE(rg.valid, format_report(rg));
  CHECK(rg.sim.has_value());
  VerifyOptions b;
  b.semantics = Semantics::kBuffered;
  Report rb = verify(s, b);
  CHECK_MESSAGE(rb.valid, format_report(rb));
}

TEST_CASE("deadlock: grouped semantics deadlocks when computes split the comm groups") {
  // Each device's SEND sits in a group of its own, and the RECV its peer needs is in a later group.
  Problem p = two_stage(3);
  Schedule s = from_strings(p, {"0F0 0SEND_F0 0F1 0SEND_F1 0F2 0SEND_F2 0RECV_B0 0B0 0RECV_B1 0B1 0RECV_B2 0B2",
                                "1RECV_F0 1F0 1I0 1SEND_B0 1W0 1RECV_F1 1F1 1B1 1SEND_B1 1RECV_F2 1F2 1B2 1SEND_B2"});
  VerifyOptions g;
  g.semantics = Semantics::kGrouped;
  Report r = verify(s, g);
  const Violation& v = expect_first(r, {"deadlock", 0, 3, 1, 4});
  CHECK(v.message.find("deadlock under grouped") != std::string::npos);
  CHECK(v.notes[0].find("in its group of comm ops 3..3") != std::string::npos);
  CHECK(v.notes[1].find("device 1 is blocked on op 3 '1SEND_B0'") != std::string::npos);
  CHECK(r.safe_under == std::vector<std::string>{"buffered", "posted"});
  VerifyOptions b;
  b.semantics = Semantics::kBuffered;
  CHECK(verify(s, b).valid);
}

TEST_CASE("deadlock: a data-flow cycle in compute-only programs (no comm placement can help)") {
  Report r = verify(from_strings(two_stage(2), {"0F0 0B0 0F1 0B1", "1F1 1F0 1B0 1B1"}));
  const Violation& v = expect_first(r, {"deadlock", 0, 1, 1, 2});
  CHECK(v.message.find("devices 0 -> 1 -> 0") != std::string::npos);
  CHECK(v.notes.at(0).find("device 0 is blocked on op 1 '0B0'") != std::string::npos);
  CHECK(v.notes.at(0).find("needs '1B0'") != std::string::npos);
  CHECK(v.notes.at(1).find("device 1 is blocked on op 0 '1F1'") != std::string::npos);
  CHECK(v.notes.at(1).find("needs '0F1'") != std::string::npos);
  CHECK(r.safe_under.empty());
}

TEST_CASE("memory.limit: device, peak, limit and the op where it peaks") {
  Problem p = uniform_problem(2, 4, {0, 1});  // 100 MB activations, 2 MB model states per stage
  Schedule s = gpipe(p);
  for (auto& prog : s.programs)
    for (size_t i = 0; i < prog.size(); ++i) prog[i].loc = SourceLoc{"test", 1, static_cast<int>(i) + 1};
  VerifyOptions o;
  o.memory_limit_gb = 0.3;
  Report r = verify(s, o);
  const Violation& v = expect_first(r, {"memory.limit", 0, 3, 1, 4});
  CHECK(v.action == "0F3");
  CHECK(v.message.find("peaks at 0.402 GB, above the limit of 0.300 GB") != std::string::npos);
  CHECK(r.violations.size() == 2);  // both devices
  CHECK(r.sim.has_value());         // memory alone does not stop the simulation
  // The problem's own limit applies when no option is given; 0 means unlimited.
  s.problem.memory_gb = 0.5;
  CHECK(verify(s).valid);
  s.problem.memory_gb = 0.4;
  CHECK_FALSE(verify(s).valid);
}

TEST_CASE("all violations are reported in one run") {
  Report r = verify(from_strings(two_stage(2), {"0F0 0F0 0B0 0B1 0F9", "1F0 1B0 1F1"}));
  int index = 0, dup = 0;
  for (const auto& v : r.violations) {
    index += v.rule == "structure.index";
    dup += v.rule == "structure.duplicate";
  }
  CHECK(index == 1);
  CHECK(dup == 1);
  CHECK(find_rule(r, "structure.missing") != nullptr);  // 0F1 and 1B1
}

TEST_CASE("the rule table is the rules doc's table, in order") {
  std::string doc = pstest::read_file(pstest::source_path("docs/verifier-rules.md"));
  REQUIRE_FALSE(doc.empty());
  size_t pos = 0;
  for (const auto& rule : rules::kAll) {
    std::string row = "| `" + std::string(rule.id) + "` | " + std::string(rule.description) + " |";
    size_t at = doc.find(row, pos);
    CHECK_MESSAGE(at != std::string::npos, "missing or out of order in docs/verifier-rules.md: ", row);
    if (at != std::string::npos) pos = at;
  }
}

TEST_CASE("memory.limit: a peak at the limit fits, whatever the rounding of its sums") {
  Problem p = uniform_problem(2, 3, {0, 1});
  for (StageSpec& st : p.stages) {
    st.activation_mb = 0.1;  // three of them sum to 0.30000000000000004 in floating point
    st.wgrad_stash_mb = 0;
    st.params_m = 0;
  }
  Schedule s = gpipe(p);
  VerifyOptions o;
  o.memory_limit_gb = 0.0003;  // 0.3 MB: the three activations GPipe holds at once
  Report r = verify(s, o);
  REQUIRE(r.sim.has_value());
  REQUIRE(r.sim->peak_memory_mb.size() == 2);
  CHECK(r.sim->peak_memory_mb[0] > ps::gb_to_mb(*o.memory_limit_gb));  // above it by the rounding alone
  CHECK(r.valid);
  o.memory_limit_gb = 0.00029;  // a real excess is still one
  CHECK_FALSE(verify(s, o).valid);
}
