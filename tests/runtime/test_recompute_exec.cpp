// The executor runs R for real on the host backend: a recomputing F keeps only its input message,
// R rebuilds the activations, gradients stay bit-exact, held bytes follow the memory rule (worked
// out by hand below), and misuse (R on a stage that keeps its activations, I before R) is reported.
#include <doctest/doctest.h>

#include "runtime/exec_model.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/memory_rule.h"
#include "runtime/sequential_reference.h"
#include "synth/baselines/baselines.h"
#include "exact_run.h"
#include "toy_schedules.h"

namespace recompute_exec_test {

using namespace ps;
using namespace ps::rt;

ExecModel rc_model(const Problem& p) {
  ExecModelOptions o;
  o.scale = 0.125;
  o.tokens = 8;
  auto m = build_exec_model(p, nullptr, o);
  REQUIRE(m.ok());
  return *m;
}

Schedule recomputing_1f1b(int P, int M, bool split) {
  Schedule s = pstest::one_f_one_b(P, M, split);
  for (auto& st : s.problem.stages) {
    st.recompute = RecomputeMode::kFull;
    st.recompute_ms = st.fwd_ms;
    st.recompute_kept_mb = 0;
  }
  return pstest::with_comms_global_order(insert_recompute_ops(s));
}

TEST_CASE("host executor: R recomputes for real; gradients bit-exact; memory as the rule and by hand") {
  for (bool split : {false, true}) {
    CAPTURE(split);
    const Schedule s = recomputing_1f1b(4, 8, split);
    const ExecModel model = rc_model(s.problem);
    const pstest::ExactRun exact = pstest::run_exact(s, model);
    const ExecResult& r = exact.run;
    const auto rule = memory_by_rule(s, model);
    for (const DeviceRun& dr : r.devices) {
      CAPTURE(dr.device);
      CHECK(dr.held_bytes == rule[dr.device].held_bytes);
      CHECK(dr.held_bytes.back() == 0);
      // By hand: after each F a stage keeps its input message (4 bytes × its boundary count; nothing
      // for the embedding stage), after its R the whole after-F slot.
      const int st = dr.device;  // one stage per device
      const StageBytes sb = stage_slot_bytes(model, st);
      const size_t kept = st == 0 ? 0 : 4 * model.boundary_count(st - 1);
      CHECK(sb.recompute_kept == kept);
      size_t held = 0;
      const auto& prog = s.programs[dr.device];
      for (size_t i = 0; i < prog.size(); ++i) {
        if (prog[i].type == OpType::F) held += kept;
        if (prog[i].type == OpType::R) held += sb.after_forward - kept;
        if (prog[i].type == OpType::I) held += sb.after_input - sb.after_forward;
        if (prog[i].type == OpType::W) held -= sb.after_input;
        if (prog[i].type == OpType::B) held -= sb.after_forward;
        CHECK(dr.held_bytes[i] == held);
      }
    }
    // The same order without recomputation holds more on device 0 at its peak.
    const Schedule plain = pstest::with_comms_global_order(pstest::one_f_one_b(4, 8, split));
    CHECK(memory_by_rule(plain, model)[0].peak_bytes > rule[0].peak_bytes);
  }
}

TEST_CASE("host executor: R on a stage that keeps its activations, and I before R, are reported at the op") {
  {
    Schedule s = pstest::one_f_one_b(2, 2);
    s.programs[1].insert(s.programs[1].begin() + 1, pstest::act(OpType::R, 1, 0));
    s = pstest::with_comms_global_order(s);
    HostBackend backend(s.num_devices());
    ExecResult r = execute(s, rc_model(s.problem), backend, {});
    REQUIRE_FALSE(r.status.is_ok());
    CHECK(r.status.message().find("stage 1 does not recompute") != std::string::npos);
    CHECK(r.status.message().find("1R0") != std::string::npos);
  }
  {
    Schedule s = pstest::one_f_one_b(2, 2);
    for (auto& st : s.problem.stages) st.recompute = RecomputeMode::kFull;
    s = pstest::with_comms_global_order(s);  // no R ops at all: the B finds its activations dropped
    HostBackend backend(s.num_devices());
    ExecResult r = execute(s, rc_model(s.problem), backend, {});
    REQUIRE_FALSE(r.status.is_ok());
    CHECK(r.status.message().find("runs before R(") != std::string::npos);
  }
}

}  // namespace recompute_exec_test
