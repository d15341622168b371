// exact_run.h — the host-backend run the executor tests share: execute a schedule and hold its
// gradients and losses to the unpipelined reference, bit for bit.
#pragma once

#include <doctest/doctest.h>

#include "runtime/exec_model.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/sequential_reference.h"

namespace pstest {

struct ExactRun {
  ps::rt::ExecResult run;
  ps::rt::GradientComparison grads;
};

// Runs `s` with `model` on the host backend (its run must succeed) and checks that every gradient and
// loss equals the sequential reference's exactly: same math, same order per (stage, microbatch), sums
// in microbatch order.
inline ExactRun run_exact(const ps::Schedule& s, const ps::rt::ExecModel& model) {
  ps::rt::HostBackend backend(s.num_devices());
  ExactRun out{ps::rt::execute(s, model, backend, {}), {}};
  REQUIRE_MESSAGE(out.run.status.is_ok(), out.run.status.str());
  auto ref = ps::rt::run_sequential_reference(model);
  REQUIRE(ref.ok());
  out.grads = ps::rt::compare_gradients(model, out.run.gradients, out.run.losses, *ref);
  CHECK(out.grads.ok);
  CHECK(out.grads.max_abs_diff == 0.0);
  CHECK(out.grads.max_loss_diff == 0.0);
  return out;
}

}  // namespace pstest
