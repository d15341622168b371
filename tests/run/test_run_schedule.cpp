// run_schedule (run/run_schedule.h): the library call behind `pipesmith run` and pipesmith.run —
// verify, comms, the executable model, the memory check, the backend, the replay and the gradient
// check, each step's failure a Status with the documented code.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "ir/comm_insert.h"
#include "run/run_schedule.h"
#include "runtime/backend_provider.h"
#include "runtime/toy_schedules.h"
#include "test_util.h"

namespace {

ps::RunOptions host_options() {
  ps::RunOptions o;
  o.name = "toy";
  o.check_gradients = true;
  o.tokens = 4;
  o.timeout_s = 60;
  return o;
}

}  // namespace

TEST_CASE("run_schedule: a compute-only 1F1B is verified, replayed and its gradients match the sequential run") {
  const ps::Schedule s = pstest::one_f_one_b(3, 4, /*split=*/true);
  long last_done = 0, last_total = 0;
  ps::RunOptions o = host_options();
  o.replay_progress = [&](long done, long total) {
    last_done = done;
    last_total = total;
  };
  const ps::RunOutcome out = ps::run_schedule(s, nullptr, o);
  REQUIRE_MESSAGE(out.status.is_ok(), out.status.str());
  CHECK(out.replayed);
  CHECK(out.root);
  CHECK(out.ran.has_comms());  // the checker's rule inserted them
  CHECK(out.prediction.present);
  REQUIRE(out.gradients.has_value());
  CHECK(out.gradients->ok);
  CHECK(out.gradients->tensors > 0);
  CHECK(out.result.losses.size() == 4);
  const ps::rt::RunSummary sum = out.summary();
  CHECK(sum.schedule == &out.ran);
  CHECK(sum.backend == "host");
  CHECK(sum.gradients.has_value());
  (void)last_done;
  (void)last_total;
}

TEST_CASE("run_schedule: a schedule the checker rejects is not run; verify=false runs what can run") {
  // 1F1B with SEND right after the producer and RECV right before the consumer deadlocks under
  // rendezvous semantics.
  const ps::Schedule naive = pstest::with_comms_naive(pstest::one_f_one_b(2, 3));
  ps::RunOptions o = host_options();
  ps::RunOutcome out = ps::run_schedule(naive, nullptr, o);
  CHECK(out.status.code() == ps::ErrorCode::kInvalidSchedule);
  REQUIRE(out.rejected.has_value());
  CHECK_FALSE(out.rejected->valid);
  CHECK_FALSE(out.replayed);
  CHECK(pstest::contains(out.status.message(), "rejected 'toy' under rendezvous semantics"));

  // Grouped semantics makes the same programs safe: verified and run.
  o.semantics = ps::Semantics::kGrouped;
  out = ps::run_schedule(naive, nullptr, o);
  CHECK_MESSAGE(out.status.is_ok(), out.status.str());
  CHECK(out.gradients->ok);
}

TEST_CASE("run_schedule: the options are checked once, before anything runs") {
  const ps::Schedule s = pstest::one_f_one_b(2, 2);
  struct Case {
    const char* what;
    void (*set)(ps::RunOptions&);
    const char* message;
  };
  const Case cases[] = {
      {"nan timeout", [](ps::RunOptions& o) { o.timeout_s = std::nan(""); }, "--timeout must be a finite number"},
      {"zero timeout", [](ps::RunOptions& o) { o.timeout_s = 0; }, "--timeout must be a finite number"},
      {"tokens", [](ps::RunOptions& o) { o.tokens = 0; }, "tokens must be an integer in [1, 65536], got 0"},
      {"scale", [](ps::RunOptions& o) { o.scale = -1; }, "--scale must be a finite number > 0"},
      {"buffered", [](ps::RunOptions& o) { o.semantics = ps::Semantics::kBuffered; }, "--semantics must be rendezvous or grouped"},
      {"memory", [](ps::RunOptions& o) { o.memory_limit_gb = -2; }, "--memory-limit-gb must be a finite number of GB in [0, 1e+15]"},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.what));
    ps::RunOptions o = host_options();
    c.set(o);
    const ps::RunOutcome out = ps::run_schedule(s, nullptr, o);
    CHECK(out.status.code() == ps::ErrorCode::kBadInput);
    CHECK_MESSAGE(pstest::contains(out.status.message(), c.message), out.status.message());
    CHECK_FALSE(out.model.has_value());
  }
}

TEST_CASE("run_schedule: a backend whose memory check refuses the run stops it before the replay") {
  const ps::Schedule s = pstest::one_f_one_b(2, 2);
  ps::RunOptions o = host_options();
  bool made = false;
  int checked_devices = 0;
  o.backend.name = "tiny";
  o.backend.make = [&](const ps::rt::BackendRequest& r) {
    made = true;
    return ps::rt::host_provider().make(r);
  };
  o.backend.check_fits = [&](const ps::rt::MemoryEstimate& need, int devices, const std::string& what) {
    checked_devices = devices;
    CHECK(need.total() > 0);
    return ps::Status::error(ps::ErrorCode::kRuntime, what + " needs more than this backend has");
  };
  const ps::RunOutcome out = ps::run_schedule(s, nullptr, o);
  CHECK(out.status.code() == ps::ErrorCode::kRuntime);
  CHECK(pstest::contains(out.status.message(), "running 'toy' (--scale 1, --tokens 4, --widths cost) needs more"));
  CHECK(checked_devices == 2);
  CHECK_FALSE(made);
  CHECK_FALSE(out.replayed);
}

TEST_CASE("load_run_inputs: a CSV takes the model's costs; a YAML schedule refuses a cluster") {
  const std::string csv = pstest::data_path("pytorch/ScheduleGPipe_p2_m4_v1.csv");
  auto in = ps::load_run_inputs(csv, pstest::source_path("configs/models/gemma-like.yaml"));
  REQUIRE_MESSAGE(in.ok(), in.status().str());
  CHECK(in->spec != nullptr);
  CHECK(in->schedule.num_devices() == 2);
  CHECK(in->spec->cluster.devices == 2);
  auto bad = ps::load_run_inputs(pstest::source_path("configs/invalid-schedules/memory-limit.yaml"), "",
                                 pstest::source_path("configs/clusters/8xh100-80gb.yaml"));
  CHECK(bad.status().code() == ps::ErrorCode::kBadInput);
  CHECK(pstest::contains(bad.status().message(), "--cluster applies only to a CSV schedule"));
  CHECK(ps::load_run_inputs("").status().code() == ps::ErrorCode::kBadInput);
}
