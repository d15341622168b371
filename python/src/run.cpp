// run.cpp — pipesmith.run: replaying a schedule with real math (run/run_schedule.h), as
// `pipesmith run` does, on the host backend (CPU threads) or under mpirun (one process per rank).
// The CUDA backend is the command's (`pipesmith run --backend cuda`): the extension does not link CUDA.
#include <fmt/format.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "ir/limits.h"
#include "ir/units.h"
#include "report/report.h"
#include "run/run_schedule.h"
#include "runtime/backend_provider.h"
#include "runtime/run_report.h"

using namespace nanobind::literals;

namespace ps::py {

namespace {

// A finished replay: the figures and texts of `pipesmith run`'s outputs.
struct PyRun {
  std::string name;
  std::string backend;
  double iteration_ms = 0;
  std::optional<double> simulated_ms;
  std::optional<bool> gradients_ok;
  std::optional<double> max_rel_diff;
  std::optional<double> loss;
  std::vector<std::string> notes;
  std::string summary;  // what the command prints
  std::string json;     // what --json writes
  std::string trace;    // what --trace writes
};

struct RunArgs {
  std::string backend;
  std::string semantics;
  bool verify;
  std::optional<double> memory_limit_gb;
  bool check_gradients;
  double timeout_s;
  double scale;
  int tokens;
  uint64_t seed;
  std::string widths;
  std::optional<std::function<void(long, long)>> progress;
};

// A Python exception raised by the progress callback (on the runtime's watchdog thread): kept, with
// the GIL held, and raised once the run returns.
struct CallbackError {
  std::optional<nb::python_error> error;
};

RunOptions options_from(const RunArgs& a, const std::string& name, const std::shared_ptr<CallbackError>& failed) {
  RunOptions o;
  if (a.backend == "host") o.backend = rt::host_provider();
  else if (a.backend == "mpi") o.backend = rt::mpi_provider();
  else if (a.backend == "cuda")
    raise_status(Status::bad_input("backend 'cuda' runs from the command (`pipesmith run --backend cuda`): the Python "
                                   "extension is built without CUDA"));
  else raise_status(Status::bad_input(fmt::format("backend must be host or mpi, got '{}'", a.backend)));
  o.semantics = semantics_from(a.semantics);
  if (a.widths != "cost" && a.widths != "params")
    raise_status(Status::bad_input(fmt::format("widths must be cost or params, got '{}'", a.widths)));
  o.widths_from_params = a.widths == "params";
  o.verify = a.verify;
  // The library's check under Python's spelling (check_run_options names the flag).
  if (a.memory_limit_gb) check(check_memory_limit_gb(*a.memory_limit_gb, "memory_limit_gb"));
  o.memory_limit_gb = a.memory_limit_gb;
  o.check_gradients = a.check_gradients;
  o.timeout_s = a.timeout_s;
  o.scale = a.scale;
  o.tokens = a.tokens;
  o.seed = a.seed;
  o.name = name;
  check(check_run_options(o));
  if (a.progress) {
    auto cb = *a.progress;
    o.replay_progress = [cb, failed](long done, long total) {
      nb::gil_scoped_acquire gil;
      if (failed->error) return;
      try {
        cb(done, total);
      } catch (nb::python_error& e) {
        failed->error.emplace(std::move(e));
      }
    };
  }
  return o;
}

PyRun run(const Schedule& schedule, const Model* model, const RunOptions& o,
          const std::shared_ptr<CallbackError>& failed) {
  RunOutcome out;
  {
    nb::gil_scoped_release release;
    out = run_schedule(schedule, model, o);
  }
  if (failed->error) throw std::move(*failed->error);
  if (out.rejected)
    raise_status(Status::error(ErrorCode::kInvalidSchedule,
                               fmt::format("the checker rejected '{}' under {} semantics; not running it (verify=False "
                                           "runs it anyway)\n{}", o.name, semantics_name(o.semantics),
                                           format_report(*out.rejected))));
  if (!out.replayed) raise_status(out.status);
  const rt::RunSummary sum = out.summary();
  if (!out.status.is_ok()) raise_status(Status::error(out.status.code(), out.status.message() + "\n" + rt::format_run_summary(sum)));
  PyRun r;
  r.name = out.name;
  r.backend = out.backend_name;
  r.iteration_ms = out.result.iteration_ms;
  if (out.prediction.present) r.simulated_ms = out.prediction.makespan_ms;
  if (out.gradients) {
    r.gradients_ok = out.gradients->ok;
    r.max_rel_diff = out.gradients->max_rel_diff;
  }
  if (!out.result.losses.empty()) {
    double total = 0;
    for (const auto& [mb, loss] : out.result.losses) total += loss;
    r.loss = total / static_cast<double>(out.result.losses.size());
  }
  r.notes = out.notes;
  r.summary = rt::format_run_summary(sum);
  r.json = rt::format_run_json(sum);
  r.trace = rt::format_run_trace(out.ran, out.result, out.name);
  return r;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

void bind_run(nb::module_& m) {
  nb::class_<PyRun>(m, "RunResult", "A replayed schedule: measured and simulated figures, the gradient check.")
      .def_ro("name", &PyRun::name)
      .def_ro("backend", &PyRun::backend)
      .def_ro("iteration_ms", &PyRun::iteration_ms, "Measured iteration of the executable model (ms).")
      .def_ro("simulated_ms", &PyRun::simulated_ms, "The checker's simulated iteration (None without verification).")
      .def_ro("gradients_ok", &PyRun::gradients_ok, "The gradient check's verdict (None when it did not run).")
      .def_ro("max_rel_diff", &PyRun::max_rel_diff, "Largest relative gradient difference (None without the check).")
      .def_ro("loss", &PyRun::loss, "Mean loss over the microbatches (None when the last stage ran elsewhere).")
      .def_ro("notes", &PyRun::notes)
      .def("text", [](const PyRun& r) { return r.summary; }, "The summary as `pipesmith run` prints it.")
      .def("json", [](const PyRun& r) { return r.json; }, "The summary as `pipesmith run --json` writes it.")
      .def("chrome_trace", [](const PyRun& r) { return r.trace; }, "The measured trace (`pipesmith run --trace`).")
      .def("__repr__", [](const PyRun& r) {
        return fmt::format("<pipesmith.RunResult {} on {}: {:.3f} ms{}>", r.name, r.backend, r.iteration_ms,
                           r.gradients_ok ? (*r.gradients_ok ? ", gradients OK" : ", gradients DIFFER") : "");
      });

  m.def("run_file", [](nb::handle path_obj, std::optional<std::string> model, std::optional<std::string> cluster,
                       std::optional<int> microbatches, const std::string& backend, const std::string& semantics,
                       bool verify, std::optional<double> memory_limit_gb, bool check_gradients, double timeout_s,
                       double scale, int tokens, uint64_t seed, const std::string& widths,
                       std::optional<std::function<void(long, long)>> progress) {
    const std::string path = path_arg(path_obj, "schedule");
    RunArgs a{backend, semantics, verify, memory_limit_gb, check_gradients, timeout_s, scale, tokens, seed, widths, progress};
    auto failed = std::make_shared<CallbackError>();
    RunOptions o = options_from(a, base_name(path), failed);  // the options are refused before any file is read
    // microbatches too: load_run_inputs checks it first.
    RunInputs in = take(load_run_inputs(path, model.value_or(""), cluster.value_or(""), microbatches.value_or(-1)));
    o.notes = std::move(in.notes);
    return run(in.schedule, in.spec ? &in.spec->model : nullptr, o, failed);
  }, "schedule"_a, "model"_a = nb::none(), "cluster"_a = nb::none(), "microbatches"_a = nb::none(),
     "backend"_a = "host", "semantics"_a = "rendezvous", "verify"_a = true, "memory_limit_gb"_a = nb::none(),
     "check_gradients"_a = true, "timeout_s"_a = 30.0, "scale"_a = 1.0, "tokens"_a = 32, "seed"_a = 1,
     "widths"_a = "cost", "progress"_a = nb::none(),
     "Replays a schedule file as `pipesmith run FILE` does (pipesmith.run documents the arguments).");

  m.def("run_schedule", [](const Schedule& schedule, std::optional<Spec> spec, const std::string& backend,
                           const std::string& semantics, bool verify, std::optional<double> memory_limit_gb,
                           bool check_gradients, double timeout_s, double scale, int tokens, uint64_t seed,
                           const std::string& widths, std::optional<std::function<void(long, long)>> progress) {
    RunArgs a{backend, semantics, verify, memory_limit_gb, check_gradients, timeout_s, scale, tokens, seed, widths, progress};
    auto failed = std::make_shared<CallbackError>();
    const std::string name = schedule.source.empty() ? "schedule" : base_name(schedule.source);
    return run(schedule, spec ? &spec->model : nullptr, options_from(a, name, failed), failed);
  }, "schedule"_a, "spec"_a = nb::none(), "backend"_a = "host", "semantics"_a = "rendezvous", "verify"_a = true,
     "memory_limit_gb"_a = nb::none(), "check_gradients"_a = true, "timeout_s"_a = 30.0, "scale"_a = 1.0,
     "tokens"_a = 32, "seed"_a = 1, "widths"_a = "cost", "progress"_a = nb::none(),
     "Replays a Schedule object (pipesmith.run documents the arguments).");
}

}  // namespace ps::py
