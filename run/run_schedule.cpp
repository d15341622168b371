// run_schedule.cpp — run_schedule: verify, prepare, build the model, make the backend, replay, check
// the gradients; each step a function that returns the Status that ends the run (ok: go on).
#include "run/run_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "ir/comm_insert.h"
#include "ir/limits.h"
#include "ir/units.h"
#include "runtime/host_memory.h"
#include "runtime/memory_rule.h"
#include "runtime/sequential_reference.h"
#include "verify/load.h"
#include "verify/verify.h"

namespace ps {

namespace {

// What one run carries from step to step, besides the outcome it fills.
struct RunState {
  const RunOptions& options;
  std::unique_ptr<rt::Backend> backend;
  bool multi = false;  // one process per rank
};

// One process per rank: errors carry the rank's label.
Status labelled(const RunState& s, const Status& st) {
  return s.multi ? Status::error(st.code(), s.backend->process_label() + ": " + st.message(), st.loc()) : st;
}

rt::Prediction prediction_of(const Simulation& sim) {
  rt::Prediction prediction;
  prediction.present = true;
  prediction.makespan_ms = sim.makespan_ms;
  prediction.busy_ms = sim.busy_ms;
  prediction.peak_memory_mb = sim.peak_memory_mb;
  prediction.peak_op_index = sim.peak_op_index;
  for (const auto& times : sim.times) {
    double end = 0;
    for (const OpInterval& iv : times) end = std::max(end, iv.end_ms);
    prediction.end_ms.push_back(end);
  }
  return prediction;
}

// The checker's verdict (kInvalidSchedule with its report if it rejects the schedule) and the checked
// schedule.
Status verify_schedule(const Schedule& schedule, const RunOptions& o, RunOutcome& out) {
  VerifyOptions vo;
  vo.semantics = o.semantics;
  vo.memory_limit_gb = o.memory_limit_gb;
  Report rep = verify(schedule, vo);
  if (!rep.valid) {
    rep.notes.insert(rep.notes.begin(), o.notes.begin(), o.notes.end());
    out.rejected = std::move(rep);
    return Status::error(ErrorCode::kInvalidSchedule,
                         fmt::format("the checker rejected '{}' under {} semantics; not running it", o.name,
                                     semantics_name(o.semantics)));
  }
  if (rep.comms_inserted) out.notes.push_back("comms inserted by the checker's rule (ir/comm_insert.h)");
  out.ran = rep.checked;
  if (rep.sim) out.prediction = prediction_of(*rep.sim);
  return Status::ok();
}

// Without verification: only insert comms (with the checker's rule) into a compute-only schedule.
Status prepare_unverified(const Schedule& schedule, RunOutcome& out) {
  if (schedule.has_comms()) {
    out.notes.push_back("not verified (--no-verify): running the programs as written");
    out.ran = schedule;
    return Status::ok();
  }
  CommInsertResult cr = insert_comms(schedule);
  if (!cr.ok) {
    std::string msg = "the compute-only schedule has a data-flow deadlock; comms cannot be inserted:";
    for (const BlockedOp& b : cr.blocked)
      msg += fmt::format("\n  device {} op {} '{}' waits for '{}' {}", b.device, b.op_index, to_string(b.op),
                         to_string(b.waits_for),
                         b.waits_for_device ? fmt::format("on device {}", *b.waits_for_device) : "(no device runs it)");
    return Status::error(ErrorCode::kInvalidSchedule, msg);
  }
  out.notes.push_back("not verified (--no-verify); comms inserted by the checker's rule (ir/comm_insert.h)");
  out.ran = std::move(cr.schedule);
  return Status::ok();
}

Status build_model(const Model* model, const RunOptions& o, RunOutcome& out) {
  rt::ExecModelOptions mo;
  mo.scale = o.scale;
  mo.seed = o.seed;
  mo.tokens = o.tokens;
  mo.widths_from_params = o.widths_from_params;
  auto built = rt::build_exec_model(out.ran.problem, model, mo);
  if (!built) return built.status();
  out.model = std::move(*built);
  const rt::MemoryEstimate need = rt::estimate_run_memory(out.ran, *out.model, o.check_gradients);
  const std::string what = fmt::format("running '{}' (--scale {:g}, --tokens {}, --widths {})", o.name, o.scale,
                                       o.tokens, o.widths_from_params ? "params" : "cost");
  if (o.backend.check_fits)
    if (Status fits = o.backend.check_fits(need, out.ran.num_devices(), what); !fits) return fits;
  for (const std::string& n : out.model->notes) out.notes.push_back(n);
  if (out.prediction.present && !mo.widths_from_params)
    out.notes.push_back("simulated ms come from the schedule's costs, measured ms from this scaled model on this "
                        "backend: compare their shape, not their values (docs/runtime.md; profile + --widths params "
                        "compares values)");
  return Status::ok();
}

// The backend; with one process per rank, the processes then agree on their inputs.
Status make_backend(RunState& s, RunOutcome& out) {
  rt::BackendRequest req;
  req.devices = out.ran.num_devices();
  req.stages = out.ran.problem.num_stages();
  req.microbatches = out.ran.problem.microbatches;
  auto b = s.options.backend.make(req);
  if (!b) return b.status();
  s.backend = std::move(*b);
  s.multi = s.backend->processes() > 1;
  if (Status st = s.backend->agree_on_inputs(s.options.agree_on); !st) return labelled(s, st);
  out.root = s.backend->rank() == 0;
  return Status::ok();
}

// Runs the schedule under the watchdog; every rank's result is gathered on rank 0.
Status execute_schedule(RunState& s, RunOutcome& out) {
  rt::ExecOptions eo;
  eo.timeout_s = s.options.timeout_s;
  eo.collect_gradients = true;
  eo.grouped = s.options.semantics == Semantics::kGrouped;
  if (out.root && s.options.replay_progress) eo.progress = s.options.replay_progress;
  out.result = rt::execute(out.ran, *out.model, *s.backend, eo);
  if (!out.result.status.is_ok()) return labelled(s, out.result.status);
  if (Status st = s.backend->gather_results(out.result); !st) return labelled(s, st);
  out.replayed = true;
  return Status::ok();
}

// Compares the gradients with a single-device sequential run.
Status check_gradients(const RunOptions& o, RunOutcome& out) {
  auto ref = rt::run_sequential_reference(*out.model, o.reference_progress);
  if (!ref) return ref.status();
  out.gradients = rt::compare_gradients(*out.model, out.result.gradients, out.result.losses, *ref, out.tolerance);
  if (!out.gradients->ok)
    return Status::error(ErrorCode::kRuntime,
                         fmt::format("gradient check failed: max relative difference {:.3g} ({}) exceeds {:g}",
                                     out.gradients->max_rel_diff, out.gradients->worst_param, out.tolerance));
  return Status::ok();
}

}  // namespace

Status check_run_options(const RunOptions& o) {
  if (!o.backend.make) return Status::bad_input("run: no backend given");
  if (!(o.timeout_s > 0) || !std::isfinite(o.timeout_s))
    return Status::bad_input(fmt::format("--timeout must be a finite number of seconds > 0, got {}", o.timeout_s));
  if (o.semantics != Semantics::kRendezvous && o.semantics != Semantics::kGrouped)
    return Status::bad_input(fmt::format(
        "--semantics must be rendezvous or grouped, got '{}' (the runtime cannot provide buffered sends: NCCL "
        "does not buffer large messages)", semantics_name(o.semantics)));
  if (Status st = limits::check_option(limits::option::kTokens, o.tokens); !st) return st;
  if (!(o.scale > 0) || !std::isfinite(o.scale))
    return Status::bad_input(fmt::format("--scale must be a finite number > 0, got {}", o.scale));
  if (o.memory_limit_gb)
    if (Status st = check_memory_limit_gb(*o.memory_limit_gb, "--memory-limit-gb"); !st) return st;
  return Status::ok();
}

rt::RunSummary RunOutcome::summary() const {
  rt::RunSummary sum;
  sum.schedule_name = name;
  sum.backend = backend_name;
  sum.semantics = semantics_name;
  sum.schedule = &ran;
  sum.model = model ? &*model : nullptr;
  sum.result = &result;
  sum.prediction = prediction;
  if (model) sum.rule = rt::memory_by_rule(ran, *model);
  sum.notes = notes;
  sum.gradients = gradients;
  sum.tolerance = tolerance;
  return sum;
}

Result<RunInputs> load_run_inputs(const std::string& schedule_file, const std::string& model_file,
                                  const std::string& cluster_file, int microbatches) {
  if (schedule_file.empty()) return Status::bad_input("a SCHEDULE file is required");
  if (microbatches != -1)  // -1: as the file has them
    PS_RETURN_IF_ERROR(limits::check_option(limits::option::kMicrobatches, microbatches, "microbatches"));
  CheckInput in;
  in.file = schedule_file;
  in.microbatches = microbatches;
  const bool csv = schedule_file.size() >= 4 && schedule_file.compare(schedule_file.size() - 4, 4, ".csv") == 0;
  if (csv) {
    in.model = model_file;
    in.cluster = cluster_file;
  } else if (!cluster_file.empty()) {
    return Status::bad_input("--cluster applies only to a CSV schedule with --model");
  }
  auto loaded = load_schedule_for_check(in);
  if (!loaded) return loaded.status();
  RunInputs inputs;
  inputs.schedule = std::move(loaded->schedule);
  inputs.notes = loaded->notes;
  if (!model_file.empty()) {
    SpecOverrides ov;
    ov.devices = inputs.schedule.num_devices();
    ov.microbatches = inputs.schedule.problem.microbatches;
    auto sp = load_spec(model_file, csv ? cluster_file : "", ov);
    if (!sp) return sp.status();
    inputs.spec = std::make_unique<Spec>(std::move(*sp));
  }
  return inputs;
}

RunOutcome run_schedule(const Schedule& schedule, const Model* model, const RunOptions& options) {
  RunOutcome out;
  out.name = options.name;
  out.backend_name = options.backend.name;
  out.semantics_name = semantics_name(options.semantics);
  out.notes = options.notes;
  if (out.status = check_run_options(options); !out.status) return out;
  out.status = options.verify ? verify_schedule(schedule, options, out) : prepare_unverified(schedule, out);
  if (!out.status) return out;
  if (out.status = build_model(model, options, out); !out.status) return out;
  RunState s{options, nullptr, false};
  if (out.status = make_backend(s, out); !out.status) return out;
  if (out.status = execute_schedule(s, out); !out.status || !out.root) return out;
  if (options.check_gradients) out.status = check_gradients(options, out);
  return out;
}

}  // namespace ps
