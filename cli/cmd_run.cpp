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
#include "ir/model.h"
#include "kernels/cuda_backend.h"
#include "report/report.h"
#include "run/run_schedule.h"
#include "runtime/backend_provider.h"
#include "runtime/run_report.h"
#include "verify/digest.h"

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
  std::optional<double> memory_limit_gb;  // empty: the problem's own limit
  std::string semantics = "rendezvous";
  bool quiet = false;
};

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

// Maps the flags onto the library's options (run/run_schedule.h validates them).
Result<RunOptions> run_options(const RunFlags& f) {
  RunOptions o;
  if (f.backend == "host") o.backend = rt::host_provider();
  else if (f.backend == "mpi") o.backend = rt::mpi_provider();
  else if (f.backend == "cuda") o.backend = kern::cuda_provider(f.nccl_id_file);
  else return Status::bad_input(fmt::format("--backend must be host, mpi or cuda, got '{}'", f.backend));
  const std::optional<Semantics> semantics = parse_semantics(f.semantics);
  if (!semantics) return Status::bad_input(fmt::format("--semantics must be rendezvous or grouped, got '{}'", f.semantics));
  o.semantics = *semantics;
  if (f.widths != "cost" && f.widths != "params")
    return Status::bad_input(fmt::format("--widths must be cost or params, got '{}'", f.widths));
  o.widths_from_params = f.widths == "params";
  o.verify = !f.no_verify;
  o.memory_limit_gb = f.memory_limit_gb;
  o.check_gradients = f.check_gradients;
  o.timeout_s = f.timeout_s;
  o.scale = f.scale;
  o.tokens = f.tokens;
  o.seed = f.seed;
  o.name = base_name(f.file);
  if (Status st = check_run_options(o); !st) return st;
  return o;
}

int print_nccl_id() {
  auto id = kern::nccl_id_hex();
  if (!id) return report_error(id.status());
  std::printf("%s\n", id->c_str());
  return 0;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The summary on stdout, the trace and JSON files, and exit 4 if the gradient check failed.
int write_outputs(const RunFlags& f, const RunOutcome& out) {
  const rt::RunSummary sum = out.summary();
  std::fputs(rt::format_run_summary(sum).c_str(), stdout);
  if (!f.trace.empty()) {
    Status st = write_text_file(f.trace, rt::format_run_trace(out.ran, out.result, sum.schedule_name));
    if (!st) return report_error(st);
  }
  if (!f.json.empty()) {
    Status st = write_text_file(f.json, rt::format_run_json(sum));
    if (!st) return report_error(st);
  }
  return out.status.is_ok() ? 0 : report_error(out.status);
}

int run(const RunFlags& f) {
  if (f.print_nccl_id) return print_nccl_id();
  auto options = run_options(f);
  if (!options) return report_error(options.status());
  if (Status st = check_outputs({{f.trace, "--trace"}, {f.json, "--json"}}, {f.file, f.model, f.cluster}); !st.is_ok())
    return report_error(st);
  auto inputs = load_run_inputs(f.file, f.model, f.cluster, f.microbatches);
  if (!inputs) return report_error(inputs.status());
  RunOptions& o = *options;
  o.notes = inputs->notes;
  if (f.backend != "host") o.agree_on = input_digests(f, inputs->schedule);
  const auto t_start = std::chrono::steady_clock::now();
  double t_ref = -1, next_report = 0;
  if (!f.quiet) {
    o.replay_progress = [t_start](long done, long total) {
      std::fprintf(stderr, "run: [replay] %ld/%ld ops (%.0f %%), %.1f s\n", done, total,
                   total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                   seconds_since(t_start));
    };
    o.reference_progress = [&](int done, int total) {
      if (t_ref < 0) {
        t_ref = seconds_since(t_start);
        next_report = t_ref + 2;
      }
      if (seconds_since(t_start) < next_report) return;
      std::fprintf(stderr, "run: [reference] %d/%d microbatches on one host thread, %.1f s\n", done, total,
                   seconds_since(t_start) - t_ref);
      next_report = seconds_since(t_start) + 2;
    };
  }
  RunOutcome out = run_schedule(inputs->schedule, inputs->spec ? &inputs->spec->model : nullptr, o);
  if (out.rejected) {
    std::fputs(format_report(*out.rejected).c_str(), stdout);
    std::fprintf(stderr, "pipesmith: error: the checker rejected '%s' under %s semantics; not running it "
                         "(--no-verify runs it anyway)\n", f.file.c_str(), f.semantics.c_str());
    return exit_code(ErrorCode::kInvalidSchedule);
  }
  // A replay that stopped leaves its trace.
  if (!out.replayed && !out.result.devices.empty() && out.root && !f.trace.empty())
    (void)write_text_file(f.trace, rt::format_run_trace(out.ran, out.result, out.name));
  if (!out.replayed) return report_error(out.status);
  if (!out.root) return 0;
  return write_outputs(f, out);
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
      ->check(flags::option(limits::option::kExpectedMicrobatches));
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
  sub->add_option("--tokens", f->tokens, "Tokens per microbatch (default 32)")
      ->check(flags::option(limits::option::kTokens));
  sub->add_option("--widths", f->widths,
                  "Block widths from the layer costs (cost, default) or from params_m (params: for models written "
                  "by `pipesmith profile` at the same --scale)");
  sub->add_option("--seed", f->seed, "Seed of the parameters and data (default 1)")
      ->check(flags::option(limits::option::kSeed));
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
