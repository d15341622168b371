// `pipesmith run` — replay a schedule with real math: verify it (exit 3 with the checker's report if
// invalid, unless --no-verify), insert comms for compute-only schedules with the checker's rule, build
// the executable model, run it on the host or CUDA backend under the watchdog (exit 4 with the
// blocked ops if it stops), optionally check gradients against a sequential run (exit 4 on mismatch),
// print measured vs simulated figures, write a trace. With one process per rank (--backend mpi, cuda
// under a launcher) the processes first agree on their inputs, and rank 0 gathers every rank's
// result, checks the gradients and prints and writes everything.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <memory>
#include <optional>
#include <utility>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "ir/comm_insert.h"
#include "ir/model.h"
#include "kernels/cuda_backend.h"
#include "runtime/exec_model.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/host_memory.h"
#include "runtime/memory_rule.h"
#include "runtime/mpi_backend.h"
#include "runtime/run_report.h"
#include "runtime/sequential_reference.h"
#include "verify/load.h"
#include "verify/verify.h"

namespace ps::cli {

namespace {

struct RunFlags {
  std::string file;
  std::string model;
  std::string cluster;
  int microbatches = -1;
  std::string backend = "host";
  bool check_gradients = false;
  double timeout_s = 30;
  std::string trace;
  std::string json;
  double scale = 1.0;
  int tokens = 32;
  uint64_t seed = 1;
  bool no_verify = false;
  std::string nccl_id_file;
  bool print_nccl_id = false;
  std::string widths = "cost";
  double memory_limit_gb = -1;  // < 0: the problem's own limit
  std::string semantics = "rendezvous";
  bool quiet = false;
};

bool is_csv_file(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string file_digest(const std::string& path) {
  if (path.empty()) return "-";
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return sha256_digest(ss.str());
}

// What every process of a multi-process run must agree on before any transfer.
std::vector<std::pair<std::string, std::string>> input_digests(const RunFlags& f, const Schedule& schedule) {
  const std::string options =
      fmt::format("scale={} tokens={} seed={} widths={} semantics={} no_verify={} devices={}", f.scale, f.tokens,
                  f.seed, f.widths, f.semantics, f.no_verify, schedule.num_devices());
  return {{"schedule digest (" + base_name(f.file) + ")", schedule_digest(schedule)},
          {"model file digest", file_digest(f.model)},
          {"cluster file digest", file_digest(f.cluster)},
          {"run options", sha256_digest(options)}};
}

// What one run carries from step to step.
struct RunState {
  Schedule schedule;  // as loaded
  std::vector<std::pair<std::string, std::string>> digests;  // what the processes agree on (not for host)
  std::vector<std::string> notes;
  std::unique_ptr<Spec> spec;  // with --model
  rt::Prediction prediction;   // the checker's simulation, if it ran one
  Schedule to_run;             // checked (comms inserted) or, with --no-verify, as run
  std::optional<rt::ExecModel> model;
  std::unique_ptr<rt::Backend> backend;
  bool multi = false;  // one process per rank
  bool root = true;    // rank 0, which reports
  std::chrono::steady_clock::time_point t_start;
  rt::ExecResult result;
};

// The exit code of a step that ends the run; empty: the run goes on.
using Stop = std::optional<int>;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// One process per rank: errors carry the rank's label.
int fail(const RunState& s, const Status& st) {
  return report_error(s.multi ? Status::error(st.code(), s.backend->process_label() + ": " + st.message(), st.loc())
                              : st);
}

int print_nccl_id() {
  auto id = kern::nccl_id_hex();
  if (!id) return report_error(id.status());
  std::printf("%s\n", id->c_str());
  return 0;
}

Stop check_flags(const RunFlags& f) {
  if (f.file.empty()) return report_error(Status::bad_input("a SCHEDULE file is required"));
  if (f.backend != "host" && f.backend != "cuda" && f.backend != "mpi")
    return report_error(Status::bad_input(fmt::format("--backend must be host, mpi or cuda, got '{}'", f.backend)));
  if (!(f.timeout_s > 0) || !std::isfinite(f.timeout_s))
    return report_error(Status::bad_input(fmt::format("--timeout must be a finite number of seconds > 0, got {}", f.timeout_s)));
  if (Status st = check_outputs({{f.trace, "--trace"}, {f.json, "--json"}}, {f.file, f.model, f.cluster}); !st.is_ok())
    return report_error(st);
  if (f.semantics != "rendezvous" && f.semantics != "grouped")
    return report_error(Status::bad_input(fmt::format(
        "--semantics must be rendezvous or grouped, got '{}' (the runtime cannot provide buffered sends: NCCL "
        "does not buffer large messages)", f.semantics)));
  return {};
}

// The schedule (a CSV with --model gets the model's balanced partition and costs) and the model.
Stop load_inputs(const RunFlags& f, RunState& s) {
  CheckInput in;
  in.file = f.file;
  in.microbatches = f.microbatches;
  const bool csv = is_csv_file(f.file);
  if (csv) {
    in.model = f.model;
    in.cluster = f.cluster;
  } else if (!f.cluster.empty()) {
    return report_error(Status::bad_input("--cluster applies only to a CSV schedule with --model"));
  }
  auto loaded = load_schedule_for_check(in);
  if (!loaded) return report_error(loaded.status());
  s.schedule = std::move(loaded->schedule);
  if (f.backend != "host") s.digests = input_digests(f, s.schedule);
  s.notes = loaded->notes;
  if (!f.model.empty()) {
    SpecOverrides ov;
    ov.devices = s.schedule.num_devices();
    ov.microbatches = s.schedule.problem.microbatches;
    auto sp = load_spec(f.model, csv ? f.cluster : "", ov);
    if (!sp) return report_error(sp.status());
    s.spec = std::make_unique<Spec>(std::move(*sp));
  }
  return {};
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

// The checker's verdict (exit 3 with its report if it rejects the schedule) and the checked schedule.
Stop verify_schedule(const RunFlags& f, RunState& s) {
  VerifyOptions vo;
  vo.semantics = f.semantics == "grouped" ? Semantics::kGrouped : Semantics::kRendezvous;
  if (f.memory_limit_gb >= 0) vo.memory_limit_gb = f.memory_limit_gb;
  Report rep = verify(s.schedule, vo);
  if (!rep.valid) {
    rep.notes.insert(rep.notes.begin(), s.notes.begin(), s.notes.end());
    std::fputs(format_report(rep).c_str(), stdout);
    std::fprintf(stderr, "pipesmith: error: the checker rejected '%s' under %s semantics; not running it "
                         "(--no-verify runs it anyway)\n", f.file.c_str(), f.semantics.c_str());
    return exit_code(ErrorCode::kInvalidSchedule);
  }
  if (rep.comms_inserted) s.notes.push_back("comms inserted by the checker's rule (ir/comm_insert.h)");
  s.to_run = rep.checked;
  if (rep.sim) s.prediction = prediction_of(*rep.sim);
  return {};
}

// --no-verify: only insert comms (with the checker's rule) into a compute-only schedule.
Stop prepare_unverified(RunState& s) {
  if (s.schedule.has_comms()) {
    s.notes.push_back("not verified (--no-verify): running the programs as written");
    s.to_run = std::move(s.schedule);
    return {};
  }
  CommInsertResult cr = insert_comms(s.schedule);
  if (!cr.ok) {
    std::string msg = "the compute-only schedule has a data-flow deadlock; comms cannot be inserted:";
    for (const BlockedOp& b : cr.blocked)
      msg += fmt::format("\n  device {} op {} '{}' waits for '{}' on device {}", b.device, b.op_index,
                         to_string(b.op), to_string(b.waits_for), b.waits_for_device);
    return report_error(Status::error(ErrorCode::kInvalidSchedule, msg));
  }
  s.notes.push_back("not verified (--no-verify); comms inserted by the checker's rule (ir/comm_insert.h)");
  s.to_run = std::move(cr.schedule);
  return {};
}

Stop build_model(const RunFlags& f, RunState& s) {
  rt::ExecModelOptions mo;
  mo.scale = f.scale;
  mo.seed = f.seed;
  mo.tokens = f.tokens;
  if (f.widths != "cost" && f.widths != "params")
    return report_error(Status::bad_input(fmt::format("--widths must be cost or params, got '{}'", f.widths)));
  mo.widths_from_params = f.widths == "params";
  if (f.tokens < 1 || f.tokens > 1 << 16) return report_error(Status::bad_input("--tokens must be in 1..65536"));
  auto model = rt::build_exec_model(s.to_run.problem, s.spec ? &s.spec->model : nullptr, mo);
  if (!model) return report_error(model.status());
  s.model = std::move(*model);
  // One process holds every device on the host backend; with one process per rank (mpi) the ranks on
  // one host hold their share of it; the cuda backend's tensors live on the GPUs, a device's on each
  // (without a usable GPU the backend says so itself).
  const rt::MemoryEstimate need = rt::estimate_run_memory(s.to_run, *s.model, f.check_gradients);
  const std::string what = fmt::format("running '{}' (--scale {:g}, --tokens {}, --widths {})", base_name(f.file),
                                       f.scale, f.tokens, f.widths);
  Status fits = Status::ok();
  if (f.backend == "host") {
    fits = rt::check_fits(need, rt::host_memory(), what);
  } else if (f.backend == "mpi") {
    fits = rt::check_fits(rt::this_machines_share(need), rt::host_memory(), what);
  } else if (Result<uint64_t> gpu_free = kern::smallest_free_gpu_memory(); gpu_free.ok()) {
    fits = rt::check_fits_gpu(rt::one_gpus_share(need, s.to_run.num_devices()), *gpu_free, what);
  }
  if (!fits.is_ok()) return report_error(fits);
  for (const std::string& n : s.model->notes) s.notes.push_back(n);
  if (s.prediction.present && !mo.widths_from_params)
    s.notes.push_back("simulated ms come from the schedule's costs, measured ms from this scaled model on this backend: "
                      "compare their shape, not their values (docs/runtime.md; profile + --widths params compares values)");
  return {};
}

// The backend; with one process per rank, the processes then agree on their inputs.
Stop make_backend(const RunFlags& f, RunState& s) {
  if (f.backend == "host") {
    s.backend = std::make_unique<rt::HostBackend>(s.to_run.num_devices());
  } else if (f.backend == "mpi") {
    rt::MpiBackendOptions mpo;
    mpo.devices = s.to_run.num_devices();
    mpo.stages = s.to_run.problem.num_stages();
    mpo.microbatches = s.to_run.problem.microbatches;
    auto b = rt::make_mpi_backend(mpo);
    if (!b) return report_error(b.status());
    s.backend = std::move(*b);
  } else {
    kern::CudaBackendOptions co;
    co.devices = s.to_run.num_devices();
    co.nccl_id_file = f.nccl_id_file;
    auto b = kern::make_cuda_backend(co);
    if (!b) return report_error(b.status());
    s.backend = std::move(*b);
  }
  s.multi = s.backend->processes() > 1;
  if (Status st = s.backend->agree_on_inputs(s.digests); !st) return fail(s, st);
  s.root = s.backend->rank() == 0;
  return {};
}

// Runs the schedule under the watchdog, with progress on stderr every 2 s (runs of a second or two print
// nothing); a failed run leaves its trace. Every rank's result is gathered on rank 0; the others stop here.
Stop execute_schedule(const RunFlags& f, RunState& s) {
  rt::ExecOptions eo;
  eo.timeout_s = f.timeout_s;
  eo.collect_gradients = true;
  eo.grouped = f.semantics == "grouped";
  s.t_start = std::chrono::steady_clock::now();
  if (!f.quiet && s.root) {
    eo.progress = [&s](long done, long total) {
      std::fprintf(stderr, "run: [replay] %ld/%ld ops (%.0f %%), %.1f s\n", done, total,
                   total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                   seconds_since(s.t_start));
    };
  }
  s.result = rt::execute(s.to_run, *s.model, *s.backend, eo);
  if (!s.result.status.is_ok()) {
    if (!f.trace.empty() && !s.result.devices.empty() && s.root)
      (void)write_text_file(f.trace, rt::format_run_trace(s.to_run, s.result, base_name(f.file)));
    return fail(s, s.result.status);
  }
  if (Status st = s.backend->gather_results(s.result); !st) return fail(s, st);
  if (!s.root) return 0;
  return {};
}

rt::RunSummary make_summary(const RunFlags& f, const RunState& s) {
  rt::RunSummary sum;
  sum.schedule_name = base_name(f.file);
  sum.backend = f.backend;
  sum.semantics = f.semantics;
  sum.schedule = &s.to_run;
  sum.model = &*s.model;
  sum.result = &s.result;
  sum.prediction = s.prediction;
  sum.rule = rt::memory_by_rule(s.to_run, *s.model);
  sum.notes = s.notes;
  return sum;
}

// Compares the gradients with a single-device sequential run (progress on stderr every 2 s).
Stop check_gradients(const RunFlags& f, const RunState& s, rt::RunSummary& sum) {
  const double t_ref = seconds_since(s.t_start);
  double next_report = t_ref + 2;
  std::function<void(int, int)> ref_progress;
  if (!f.quiet) {
    ref_progress = [&](int done, int total) {
      if (seconds_since(s.t_start) < next_report) return;
      std::fprintf(stderr, "run: [reference] %d/%d microbatches on one host thread, %.1f s\n", done, total,
                   seconds_since(s.t_start) - t_ref);
      next_report = seconds_since(s.t_start) + 2;
    };
  }
  auto ref = rt::run_sequential_reference(*s.model, ref_progress);
  if (!ref) return report_error(ref.status());
  sum.gradients = rt::compare_gradients(*s.model, s.result.gradients, s.result.losses, *ref, sum.tolerance);
  return {};
}

// The summary on stdout, the trace and JSON files, and exit 4 if the gradient check failed.
int write_outputs(const RunFlags& f, const RunState& s, const rt::RunSummary& sum) {
  std::fputs(rt::format_run_summary(sum).c_str(), stdout);
  if (!f.trace.empty()) {
    Status st = write_text_file(f.trace, rt::format_run_trace(s.to_run, s.result, sum.schedule_name));
    if (!st) return report_error(st);
  }
  if (!f.json.empty()) {
    Status st = write_text_file(f.json, rt::format_run_json(sum));
    if (!st) return report_error(st);
  }
  if (sum.gradients && !sum.gradients->ok)
    return report_error(Status::error(
        ErrorCode::kRuntime, fmt::format("gradient check failed: max relative difference {:.3g} ({}) exceeds {:g}",
                                         sum.gradients->max_rel_diff, sum.gradients->worst_param, sum.tolerance)));
  return 0;
}

int run(const RunFlags& f) {
  if (f.print_nccl_id) return print_nccl_id();
  if (Stop rc = check_flags(f)) return *rc;
  RunState s;
  if (Stop rc = load_inputs(f, s)) return *rc;
  if (Stop rc = f.no_verify ? prepare_unverified(s) : verify_schedule(f, s)) return *rc;
  if (Stop rc = build_model(f, s)) return *rc;
  if (Stop rc = make_backend(f, s)) return *rc;
  if (Stop rc = execute_schedule(f, s)) return *rc;
  rt::RunSummary sum = make_summary(f, s);
  if (f.check_gradients)
    if (Stop rc = check_gradients(f, s, sum)) return *rc;
  return write_outputs(f, s, sum);
}

}  // namespace

Runner add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Replay a schedule with real math (host threads or CUDA + NCCL)");
  auto f = std::make_shared<RunFlags>();
  sub->add_option("schedule", f->file, "Schedule: pipesmith-schedule/1 YAML or PyTorch CSV");
  sub->add_option("--model", f->model,
                  "Model YAML: the layer types behind the stages (a CSV's stages get its balanced partition)");
  sub->add_option("--cluster", f->cluster, "Cluster YAML (with --model, for a CSV)");
  sub->add_option("--microbatches", f->microbatches, "Expected microbatch count (checked against the file)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--backend", f->backend,
                  "host (CPU threads, default), mpi (one process per rank under mpirun, CPU math, MPI transfers) or "
                  "cuda (CUDA + NCCL)");
  sub->add_flag("--check-gradients", f->check_gradients,
                "Compare every gradient with a single-device sequential run (1e-5 relative)");
  sub->add_option("--timeout", f->timeout_s, "Watchdog: seconds without progress before stopping (default 30)")
      ->check(flags::timeout_s());
  sub->add_option("--trace", f->trace, "Write a Chrome/Perfetto trace of the measured op times");
  sub->add_option("--json", f->json, "Write the summary as JSON");
  sub->add_option("--scale", f->scale, "Multiply the executable model's widths (default 1)")->check(flags::scale());
  sub->add_option("--tokens", f->tokens, "Tokens per microbatch (default 32)")->check(flags::tokens());
  sub->add_option("--widths", f->widths,
                  "Block widths from the layer costs (cost, default) or from params_m (params: for models written "
                  "by `pipesmith profile` at the same --scale)");
  sub->add_option("--seed", f->seed, "Seed of the parameters and data (default 1)")->check(flags::seed());
  sub->add_option("--semantics", f->semantics,
                  "SEND/RECV semantics to check and run: rendezvous (default: each pair on its own) or grouped "
                  "(consecutive comm ops form one group, like an NCCL group / batch_isend_irecv)");
  sub->add_option("--memory-limit-gb", f->memory_limit_gb,
                  "Memory limit per device for the check, GB (0 = unlimited; default: the problem's)")
      ->check(flags::memory_limit_gb());
  sub->add_flag("--no-verify", f->no_verify, "Run even if the checker rejects the schedule");
  sub->add_flag("--quiet", f->quiet, "No progress lines on stderr (printed every 2 s of a long replay or gradient check)");
  sub->add_option("--nccl-id-file", f->nccl_id_file,
                  "cuda, multi-process: file through which rank 0 shares the ncclUniqueId");
  sub->add_flag("--print-nccl-id", f->print_nccl_id, "Print a fresh ncclUniqueId (hex) for PIPESMITH_NCCL_ID and exit");
  return [f] { return run(*f); };
}

}  // namespace ps::cli
