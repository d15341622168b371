// run_schedule.h — replaying a schedule with real math, the library call behind `pipesmith run` and
// Python's pipesmith.run: the checker's verdict (a schedule it rejects is not run, unless
// RunOptions::verify is false), comms inserted with the checker's rule into a compute-only schedule,
// the executable model built and held against the memory at hand, the backend, the replay under the
// watchdog, and the gradient check against an unpipelined sequential run of the same model.
//
// Guarantees: every step's failure is a Status with the documented code (kBadInput for the options
// and the inputs, kInvalidSchedule for a schedule the checker rejects or one whose comms cannot be
// inserted, kRuntime for a run that stops, runs out of memory or whose gradients differ); nothing is
// printed or written here (progress goes to the callbacks, the summary, JSON and trace are strings the
// caller writes). With one process per rank (the mpi backend, cuda under a launcher) the processes
// agree on their inputs first, and rank 0 gathers every rank's result: only its outcome has
// RunOutcome::root set and carries the summary.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/model.h"
#include "ir/schedule.h"
#include "ir/status.h"
#include "runtime/backend_provider.h"
#include "runtime/exec_model.h"
#include "runtime/executor.h"
#include "runtime/run_report.h"
#include "verify/report_types.h"

namespace ps {

struct RunOptions {
  // The backend that runs the replay: rt::host_provider() (CPU threads, one process), rt::mpi_provider()
  // (one process per rank under mpirun) or kern::cuda_provider() (CUDA + NCCL).
  rt::BackendProvider backend = rt::host_provider();
  // SEND/RECV semantics checked and run: kRendezvous or kGrouped (the runtime cannot buffer sends).
  Semantics semantics = Semantics::kRendezvous;
  bool verify = true;                     // false: run even a schedule the checker rejects
  std::optional<double> memory_limit_gb;  // for the check; empty: the problem's own (0 = unlimited)
  bool check_gradients = false;           // compare every gradient with a sequential run
  double timeout_s = 30;                  // watchdog: seconds without progress before stopping
  double scale = 1.0;                     // multiplies the executable model's widths
  int tokens = 32;                        // tokens per microbatch (limits::option::kTokens: 1..65536)
  uint64_t seed = 1;                      // parameters and data
  bool widths_from_params = false;        // block widths from params_m instead of the layer costs
  std::string name;                       // the schedule's name in the summary and trace
  // What every process of a multi-process run must agree on before any transfer (digests of the
  // inputs, as "what" / "digest" pairs); unused by a one-process backend.
  std::vector<std::pair<std::string, std::string>> agree_on;
  std::vector<std::string> notes;         // the loader's notes, reported first
  // Progress: the replay's ops done / total (every 2 s of a replay, from its watchdog), and the
  // reference's microbatches done / total (after each one).
  std::function<void(long done, long total)> replay_progress;
  std::function<void(int done, int total)> reference_progress;
};

// The options' one validation site: timeout finite and > 0, tokens in limits::option::kTokens, scale finite and > 0,
// semantics rendezvous or grouped, the memory limit finite and >= 0.
Status check_run_options(const RunOptions& options);

struct RunOutcome {
  Status status;                   // ok, or why the run stopped (see the guarantees above)
  std::optional<Report> rejected;  // the checker's report of a schedule it rejected (status kInvalidSchedule)
  bool root = true;                // this process reports (the only process, or rank 0)
  Schedule ran;                    // the programs replayed (comms included)
  std::optional<rt::ExecModel> model;
  rt::ExecResult result;
  rt::Prediction prediction;       // the checker's simulation (absent without verification)
  std::optional<rt::GradientComparison> gradients;
  double tolerance = 1e-5;         // the gradient check's relative tolerance
  std::vector<std::string> notes;
  std::string backend_name;
  std::string semantics_name;
  std::string name;

  // The summary of a run that replayed every op (status ok, or a failed gradient check), as
  // runtime/run_report.h formats it; valid while this outcome lives.
  rt::RunSummary summary() const;
  // Every op of the schedule ran (this process's devices): the summary's figures are measured ones.
  bool replayed = false;
};

// What `pipesmith run FILE [--model M [--cluster C]]` reads: the schedule (a PyTorch CSV with a model
// gets the model's balanced partition and costs; --cluster applies only then), the reader's notes,
// and the model behind the stages when one is given (its devices and microbatches the schedule's).
struct RunInputs {
  Schedule schedule;
  std::vector<std::string> notes;
  std::unique_ptr<Spec> spec;  // with a model file
};
Result<RunInputs> load_run_inputs(const std::string& schedule_file, const std::string& model_file = "",
                                  const std::string& cluster_file = "", int microbatches = -1);

// Runs `schedule` (a compute-only schedule gets comms inserted). `model`, when given, supplies the
// layer types behind the stages (block widths and parameter counts); without it the executable
// model is built from the schedule's costs alone.
RunOutcome run_schedule(const Schedule& schedule, const Model* model, const RunOptions& options);

}  // namespace ps
