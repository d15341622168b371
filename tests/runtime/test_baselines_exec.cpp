// Every baseline generator's schedule (synth/baselines/baselines.h) with comms from THE insertion rule
// (ir/comm_insert.h), replayed by the executor on the host backend on 2..8 devices: gradients equal
// the sequential reference bit for bit and held memory follows the rule after every op.
#include <doctest/doctest.h>

#include "ir/comm_insert.h"
#include "runtime/exec_model.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/memory_rule.h"
#include "runtime/sequential_reference.h"
#include "synth/baselines/baselines.h"
#include "toy_schedules.h"

using namespace ps;

TEST_CASE("host executor: every baseline kind on 2, 4 and 8 devices, comms from insert_comms") {
  int ran = 0;
  for (BaselineKind kind : all_baseline_kinds()) {
    auto shape = baseline_shape(kind);
    REQUIRE(shape.ok());
    for (int P : {2, 4, 8}) {
      const int M = kind == BaselineKind::kDualPipeV ? 2 * P : P;
      CAPTURE(baseline_name(kind));
      CAPTURE(P);
      const std::vector<int> placement = baseline_placement(*shape, P);
      std::vector<double> fwd;
      for (size_t s = 0; s < placement.size(); ++s) fwd.push_back(1.0 + 0.25 * static_cast<double>(s % 3));
      Problem problem = pstest::toy_problem(P, M, placement, fwd);
      auto sched = make_baseline(problem, kind);
      REQUIRE_MESSAGE(sched.ok(), sched.status().str());
      REQUIRE_FALSE(sched->has_comms());
      CommInsertResult ci = insert_comms(*sched);
      REQUIRE(ci.ok);
      rt::ExecModelOptions o;
      o.scale = 0.0625;  // d_model 4, hidden 16
      o.tokens = 4;
      auto model = rt::build_exec_model(ci.schedule.problem, nullptr, o);
      REQUIRE(model.ok());
      rt::HostBackend backend(P);
      rt::ExecOptions eo;
      eo.timeout_s = 20;
      rt::ExecResult r = rt::execute(ci.schedule, *model, backend, eo);
      REQUIRE_MESSAGE(r.status.is_ok(), r.status.str());
      auto ref = rt::run_sequential_reference(*model);
      REQUIRE(ref.ok());
      auto cmp = rt::compare_gradients(*model, r.gradients, r.losses, *ref);
      CHECK(cmp.ok);
      CHECK(cmp.max_abs_diff == 0.0);
      CHECK(r.losses.size() == static_cast<size_t>(M));
      const auto rule = rt::memory_by_rule(ci.schedule, *model);
      for (const auto& d : r.devices) CHECK(d.held_bytes == rule[d.device].held_bytes);
      ++ran;
    }
  }
  CHECK(ran == 3 * static_cast<int>(all_baseline_kinds().size()));
}
