// Executor on the host backend with hand-built schedules: gradients equal the sequential reference,
// memory follows the rule, the watchdog stops deadlocks with a witness, schedule errors are caught.
#include <doctest/doctest.h>

#include <chrono>
#include <utility>
#include <vector>

#include "runtime/exec_model.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/memory_rule.h"
#include "runtime/sequential_reference.h"
#include "exact_run.h"
#include "toy_schedules.h"

using namespace ps;
using namespace ps::rt;

namespace {

ExecModel small_model(const Problem& p, double scale = 0.125) {
  ExecModelOptions o;
  o.scale = scale;
  o.tokens = 8;
  auto m = build_exec_model(p, nullptr, o);
  REQUIRE(m.ok());
  return *m;
}

// Runs `s` on the host backend and checks gradients (bit-exact) and memory against the rule.
void run_and_check(const Schedule& s, double scale = 0.125) {
  const ExecModel model = small_model(s.problem, scale);
  const pstest::ExactRun exact = pstest::run_exact(s, model);
  const ExecResult& r = exact.run;
  size_t n_params = 0;
  for (int st = 0; st < model.num_stages(); ++st) n_params += model.stage_params(st).size();
  CHECK(exact.grads.tensors == n_params);
  CHECK(r.losses.size() == static_cast<size_t>(s.problem.microbatches));
  const auto rule = memory_by_rule(s, model);
  REQUIRE(r.devices.size() == static_cast<size_t>(s.num_devices()));
  for (const DeviceRun& dr : r.devices) {
    CHECK(dr.held_bytes == rule[dr.device].held_bytes);
    CHECK(dr.peak_held_bytes == rule[dr.device].peak_bytes);
    CHECK(dr.peak_op_index == rule[dr.device].peak_op_index);
    CHECK(dr.peak_held_bytes > 0);
    CHECK(dr.held_bytes.back() == 0);  // everything freed at the end
    CHECK(dr.end_ms > 0);
    CHECK(dr.times.size() == s.programs[dr.device].size());
  }
}

}  // namespace

TEST_CASE("host executor: 1F1B with fused B on 4 devices matches the sequential reference") {
  run_and_check(pstest::with_comms_global_order(pstest::one_f_one_b(4, 8)));
}

TEST_CASE("host executor and reference: progress reports count ops and microbatches, never past the totals") {
  const Schedule s = pstest::with_comms_global_order(pstest::one_f_one_b(4, 16));
  const ExecModel model = small_model(s.problem, 1.0);  // full width: a run of well over a millisecond
  long program_ops = 0;
  for (const auto& prog : s.programs) program_ops += static_cast<long>(prog.size());
  HostBackend backend(s.num_devices());
  ExecOptions eo;
  eo.progress_interval_s = 0.001;
  std::vector<std::pair<long, long>> calls;
  eo.progress = [&](long done, long total) { calls.emplace_back(done, total); };  // the watchdog's thread only
  ExecResult r = execute(s, model, backend, eo);
  REQUIRE_MESSAGE(r.status.is_ok(), r.status.str());
  REQUIRE(calls.size() >= 2);
  for (size_t i = 0; i < calls.size(); ++i) {
    CHECK(calls[i].second == program_ops);
    CHECK(calls[i].first >= 0);
    CHECK(calls[i].first <= program_ops);
    if (i > 0) CHECK(calls[i].first >= calls[i - 1].first);
  }
  std::vector<int> done;
  auto ref = run_sequential_reference(model, [&](int d, int total) {
    CHECK(total == 16);
    done.push_back(d);
  });
  REQUIRE(ref.ok());
  REQUIRE(done.size() == 16);
  for (int m = 0; m < 16; ++m) CHECK(done[m] == m + 1);
}

TEST_CASE("host executor: 1F1B with split I/W and deferred W on 2..8 devices") {
  for (int P : {2, 3, 8}) {
    CAPTURE(P);
    run_and_check(pstest::with_comms_global_order(pstest::one_f_one_b(P, 2 * P, true, true)));
  }
}

TEST_CASE("host executor: GPipe with looped and V placements (several stages per device)") {
  run_and_check(pstest::with_comms_global_order(pstest::gpipe(2, 4, {0, 1, 0, 1})));
  run_and_check(pstest::with_comms_global_order(pstest::gpipe(2, 3, {0, 1, 1, 0})));  // local handoff 1→2
  run_and_check(pstest::with_comms_global_order(pstest::gpipe(1, 3, {0, 0, 0})));     // one device
}

TEST_CASE("host executor: a wrong routing would be caught by the gradient check") {
  // Same schedule, but the reference of a different seed: the comparison must fail.
  Schedule s = pstest::with_comms_global_order(pstest::one_f_one_b(2, 4));
  ExecModel model = small_model(s.problem);
  HostBackend backend(2);
  ExecResult r = execute(s, model, backend, {});
  REQUIRE(r.status.is_ok());
  ExecModel other = model;
  other.seed = 99;
  auto ref = run_sequential_reference(other);
  REQUIRE(ref.ok());
  GradientComparison c = compare_gradients(model, r.gradients, r.losses, *ref);
  CHECK_FALSE(c.ok);
  CHECK(c.max_rel_diff > 1e-3);
}

TEST_CASE("gradient comparison: a missing stage or loss, or a wrong loss, fails it") {
  Schedule s = pstest::with_comms_global_order(pstest::one_f_one_b(2, 4));
  const ExecModel model = small_model(s.problem);
  HostBackend backend(2);
  ExecResult r = execute(s, model, backend, {});
  REQUIRE_MESSAGE(r.status.is_ok(), r.status.str());
  auto ref = run_sequential_reference(model);
  REQUIRE(ref.ok());
  REQUIRE(compare_gradients(model, r.gradients, r.losses, *ref).ok);

  auto no_stage = r.gradients;
  no_stage.erase(1);
  GradientComparison a = compare_gradients(model, no_stage, r.losses, *ref);
  CHECK_FALSE(a.ok);
  CHECK(a.problem.find("stage 1") != std::string::npos);

  auto no_loss = r.losses;
  no_loss.erase(no_loss.begin());
  GradientComparison b = compare_gradients(model, r.gradients, no_loss, *ref);
  CHECK_FALSE(b.ok);
  CHECK(b.problem.find("no loss") != std::string::npos);

  auto wrong_loss = r.losses;
  wrong_loss.begin()->second += 1.0;
  GradientComparison c = compare_gradients(model, r.gradients, wrong_loss, *ref);
  CHECK_FALSE(c.ok);
  CHECK(c.max_loss_diff == doctest::Approx(1.0));
}

TEST_CASE("host executor: the watchdog stops naive-comm 1F1B (deadlock under rendezvous) with a witness") {
  Schedule s = pstest::with_comms_naive(pstest::one_f_one_b(2, 4));
  // dev0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 ...; dev1: 1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 ...
  REQUIRE(to_string(s.programs[0][3]) == "0SEND_F1");
  REQUIRE(to_string(s.programs[1][3]) == "1SEND_B0");
  ExecModel model = small_model(s.problem);
  HostBackend backend(2);
  ExecOptions o;
  o.timeout_s = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  ExecResult r = execute(s, model, backend, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(secs < 5.0);
  CHECK(r.status.code() == ErrorCode::kRuntime);
  REQUIRE(r.blocked.size() == 2);
  CHECK(r.blocked[0].device == ps::DeviceId{0});
  CHECK(r.blocked[0].op_index == 3);
  CHECK(to_string(r.blocked[0].waits_for) == "1RECV_F1");
  CHECK(r.blocked[0].waits_for_device == ps::DeviceId{1});
  CHECK(r.blocked[1].device == ps::DeviceId{1});
  CHECK(r.blocked[1].op_index == 3);
  CHECK(to_string(r.blocked[1].waits_for) == "0RECV_B0");
  const std::string msg = r.status.message();
  CHECK(msg.find("device 0 is blocked at op 3 '0SEND_F1': waits for device 1 to run op 4 '1RECV_F1' "
                 "(device 1 is at op 3 '1SEND_B0')") != std::string::npos);
  CHECK(msg.find("device 1 is blocked at op 3 '1SEND_B0': waits for device 0 to run op 4 '0RECV_B0'") !=
        std::string::npos);
  CHECK(msg.find("wait cycle: device 0 → device 1 → device 0") != std::string::npos);
  // The backend is reusable after an abort.
  Schedule good = pstest::with_comms_global_order(pstest::one_f_one_b(2, 4));
  ExecResult r2 = execute(good, model, backend, o);
  CHECK_MESSAGE(r2.status.is_ok(), r2.status.str());
}

TEST_CASE("host executor: a receive matched with the wrong send is reported, not consumed") {
  Schedule s = pstest::with_comms_global_order(pstest::gpipe(2, 2, {0, 1}));
  // Swap the two SEND_F on device 0 so that device 1's first RECV (of mb 0) meets mb 1's send.
  auto& p0 = s.programs[0];
  int a = -1, b = -1;
  for (int i = 0; i < static_cast<int>(p0.size()); ++i)
    if (p0[i].type == OpType::SEND_F) (a < 0 ? a : b) = i;
  REQUIRE(b > a);
  // Move SEND_F0 after SEND_F1 (both producers have run by then).
  Action first = p0[a];
  p0.erase(p0.begin() + a);
  p0.insert(p0.begin() + (b - 1) + 1, first);
  ExecModel model = small_model(s.problem);
  HostBackend backend(2);
  ExecOptions o;
  o.timeout_s = 2;
  ExecResult r = execute(s, model, backend, o);
  CHECK(r.status.code() == ErrorCode::kRuntime);
  CHECK(r.status.message().find("expected the tensor of '0SEND_F0' from device 0, but device 0 sent '0SEND_F1' first") !=
        std::string::npos);
  CHECK(r.blocked.empty());
}

TEST_CASE("host executor: schedule errors at run time name the device, op and reason") {
  ExecOptions o;
  o.timeout_s = 2;
  SUBCASE("consumer without its RECV") {
    Schedule s = pstest::with_comms_global_order(pstest::gpipe(2, 1, {0, 1}));
    auto& p1 = s.programs[1];
    p1.erase(p1.begin());  // drop 1RECV_F0
    ExecModel model = small_model(s.problem);
    HostBackend backend(2);
    ExecResult r = execute(s, model, backend, o);
    CHECK(r.status.code() == ErrorCode::kRuntime);
    CHECK(r.status.message().find("device 1 op 0 '1F0': its input was not received: no 1RECV_F0 before it") !=
          std::string::npos);
  }
  SUBCASE("W before I") {
    Schedule s = pstest::with_comms_global_order(pstest::one_f_one_b(1, 1, true));
    std::swap(s.programs[0][1], s.programs[0][2]);  // 0F0 0W0 0I0
    ExecModel model = small_model(s.problem);
    HostBackend backend(1);
    ExecResult r = execute(s, model, backend, o);
    CHECK(r.status.message().find("device 0 op 1 '0W0': W(0,0) runs before I(0,0)") != std::string::npos);
  }
  SUBCASE("missing backward leaves buffers live") {
    Schedule s = pstest::with_comms_global_order(pstest::one_f_one_b(1, 2));
    s.programs[0].pop_back();  // drop 0B1
    ExecModel model = small_model(s.problem);
    HostBackend backend(1);
    ExecResult r = execute(s, model, backend, o);
    CHECK(r.status.message().find("device 0 finished its program with buffers still live") != std::string::npos);
    CHECK(r.status.message().find("F(0,1)") != std::string::npos);
  }
  SUBCASE("op on a device that does not hold the stage") {
    Schedule s = pstest::with_comms_global_order(pstest::gpipe(2, 1, {0, 1}));
    s.programs[0].insert(s.programs[0].begin(), pstest::act(OpType::W, 1, 0));
    ExecModel model = small_model(s.problem);
    HostBackend backend(2);
    ExecResult r = execute(s, model, backend, o);
    CHECK(r.status.message().find("device 0 op 0 '1W0': stage 1 is placed on device 1, not on device 0") !=
          std::string::npos);
  }
}

TEST_CASE("host executor: grouped semantics runs the naive-comm 1F1B that deadlocks under rendezvous") {
  for (int P : {2, 4}) {
    CAPTURE(P);
    Schedule s = pstest::with_comms_naive(pstest::one_f_one_b(P, 2 * P));
    ExecModel model = small_model(s.problem);
    HostBackend backend(P);
    ExecOptions o;
    o.timeout_s = 5;
    o.grouped = true;
    ExecResult r = execute(s, model, backend, o);
    REQUIRE_MESSAGE(r.status.is_ok(), r.status.str());
    auto ref = run_sequential_reference(model);
    REQUIRE(ref.ok());
    GradientComparison c = compare_gradients(model, r.gradients, r.losses, *ref);
    CHECK(c.ok);
    CHECK(c.max_abs_diff == 0.0);
    const auto rule = memory_by_rule(s, model);
    for (const DeviceRun& dr : r.devices) CHECK(dr.held_bytes == rule[dr.device].held_bytes);
  }
}

TEST_CASE("host executor: grouped semantics still stops a real deadlock and reports mismatches") {
  ExecOptions o;
  o.timeout_s = 0.3;
  o.grouped = true;
  SUBCASE("both devices receive first: no grouping can help") {
    // dev0: [0RECV_B0] 0F0 [0SEND_F0] 0B0 — its first group waits for the gradient, which device 1
    // sends only after 1RECV_F0, 1F0 and 1B0, and 1RECV_F0 waits for 0SEND_F0: a cycle.
    Schedule s = pstest::with_comms_global_order(pstest::gpipe(2, 1, {0, 1}));
    auto& p0 = s.programs[0];
    REQUIRE(to_string(p0[2]) == "0RECV_B0");
    Action recv = p0[2];
    p0.erase(p0.begin() + 2);
    p0.insert(p0.begin(), recv);
    ExecModel model = small_model(s.problem);
    HostBackend backend(2);
    ExecResult r = execute(s, model, backend, o);
    CHECK(r.status.code() == ErrorCode::kRuntime);
    REQUIRE(r.blocked.size() == 2);
    CHECK(to_string(r.blocked[0].op) == "0RECV_B0");
    CHECK(to_string(r.blocked[1].op) == "1RECV_F0");
    CHECK(r.status.message().find("wait cycle: device 0 → device 1 → device 0") != std::string::npos);
  }
  SUBCASE("a group receiving the wrong tensor") {
    Schedule s = pstest::with_comms_global_order(pstest::gpipe(2, 2, {0, 1}));
    auto& p0 = s.programs[0];  // 0F0 0F1 0SEND_F0 0SEND_F1 ...: one group; swap the two sends
    REQUIRE(to_string(p0[2]) == "0SEND_F0");
    std::swap(p0[2], p0[3]);
    ExecModel model = small_model(s.problem);
    HostBackend backend(2);
    ExecResult r = execute(s, model, backend, o);
    CHECK(r.status.code() == ErrorCode::kRuntime);
    CHECK(r.status.message().find("expected the tensor of '0SEND_F0' from device 0, but device 0 sent '0SEND_F1' "
                                  "first") != std::string::npos);
    CHECK(r.blocked.empty());
  }
}
