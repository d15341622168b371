// pipesmith._core — the C++ library as a Python extension (nanobind). Python users call it through
// the `pipesmith` package (python/pipesmith/__init__.py), which adds the docstring-level reference;
// every function here calls the same library entry point as the `pipesmith` command, so a schedule
// written from Python is byte-identical to the command's for the same inputs and options.
//
// Errors: a failing library call raises pipesmith.Error (python/pipesmith/errors.py) — or its
// subclass for the error class: BadInputError, InfeasibleError, InvalidScheduleError, RuntimeFailure
// — carrying `code`, `exit_code`, `file`, `line`, `col` and `message`. Long calls (synthesize,
// baselines, verify, bound) release the GIL; synthesize runs on a worker thread while the calling
// thread waits, so Ctrl-C (KeyboardInterrupt) and the progress callback's `True` stop the search
// and the best schedule so far is returned, marked interrupted.
#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ir/limits.h"
#include "ir/model.h"
#include "ir/output_file.h"
#include "ir/problem.h"
#include "ir/recompute.h"
#include "ir/schedule.h"
#include "ir/schedule_io.h"
#include "ir/status.h"
#include "ir/units.h"
#include "report/report.h"
#include "synth/baselines/baseline_plan.h"
#include "synth/baselines/baselines.h"
#include "synth/bounds/model_bound.h"
#include "synth/plan/plan_spec.h"
#include "synth/mesh_plan.h"
#include "synth/synthesize_model.h"
#include "synth/z3/window.h"
#include "verify/load.h"
#include "export/pytorch_export.h"
#include "verify/verify.h"
#include "common.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace ps::py {

namespace {

// ---- schedules ------------------------------------------------------------------------------------

std::vector<std::vector<std::string>> program_texts(const Schedule& s) {
  std::vector<std::vector<std::string>> out(s.programs.size());
  for (size_t d = 0; d < s.programs.size(); ++d)
    for (const Action& a : s.programs[d]) out[d].push_back(to_string(a));
  return out;
}

std::map<std::string, std::string> certificate_fields(const Schedule& s) {
  std::map<std::string, std::string> out;
  if (!s.certificate) return out;
  const Certificate& c = *s.certificate;
  out["verdict"] = c.verdict;
  out["semantics"] = c.semantics;
  out["digest"] = c.digest;
  for (const auto& [k, v] : c.extra) out["extra." + k] = v;
  return out;
}

// The checker's report, as one Python object.
struct PyReport {
  Report report;
};

// The files a spec was read from (its model and cluster files; a spec parsed from text names none
// that exist): what an output written from it must not replace.
std::vector<std::string> spec_inputs(const Spec& spec) {
  return {spec.model.loc.file, spec.cluster.loc.file};
}

// An export with the files it was made from, so that write() refuses an output that names one of
// them (as `pipesmith export -o DIR` does).
struct PyExport : PytorchExport {
  std::vector<std::string> inputs;
};

// ---- synthesize ------------------------------------------------------------------------------------

// Runs `work` on a worker thread while the calling thread waits without the GIL, taking it back every
// 50 ms so Python can run its signal handlers. A KeyboardInterrupt (or any exception a handler
// raises) sets `interrupt` and is kept in `pending`; the work then ends as its deadline would.
void run_interruptible(const std::function<void()>& work, std::atomic<bool>& interrupt,
                       std::unique_ptr<nb::python_error>& pending) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr failure;
  std::thread worker([&] {
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  });
  for (;;) {
    bool finished = false;
    {
      nb::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(mu);
      finished = cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; });
    }
    if (finished) break;
    if (!pending && PyErr_CheckSignals() != 0) {
      pending = std::make_unique<nb::python_error>();  // takes the raised exception
      interrupt.store(true);
    }
  }
  {
    nb::gil_scoped_release release;
    worker.join();
  }
  if (failure) std::rethrow_exception(failure);
}

struct SynthOutcome {
  ModelSynthesis m;
  bool interrupted = false;  // Ctrl-C or the progress callback stopped the search
};

nb::dict progress_dict(const TuneProgress& p) {
  nb::dict d;
  d["phase"] = p.phase;
  d["evaluated"] = p.evaluated;
  d["feasible"] = p.feasible;
  d["best_ms"] = p.has_best ? nb::cast(p.best_ms) : nb::none();
  d["lower_bound_ms"] = p.lower_bound_ms;
  d["gap"] = p.has_best ? nb::cast(p.gap) : nb::none();
  d["elapsed_s"] = p.elapsed_s;
  d["best"] = p.best_desc;
  return d;
}

SynthOutcome synthesize(const Spec& spec, std::optional<std::string> partition, std::optional<std::string> placement,
                        std::optional<int> stages_per_device, const std::string& cuts, double time_limit_s,
                        int evaluations, uint64_t rlimit, unsigned seed, int z3_threads, int search_threads,
                        const std::string& dump_smt2, const std::string& recompute, nb::object progress) {
  const auto start = std::chrono::steady_clock::now();
  const RecomputeChoice rc = take(read_recompute_choice(recompute, "recompute"));
  // time_limit_s, evaluations, the threads and rlimit are checked by synthesize_model (their one check).
  if (cuts != "layers" && cuts != "sublayers")
    raise_status(Status::bad_input("cuts must be 'layers' or 'sublayers', got '" + cuts + "'"));
  if (!dump_smt2.empty()) {  // as `synth --dump-smt2` checks it: PATH and its window files, against the inputs
    std::vector<OutputPath> outs{{dump_smt2, "dump_smt2"}};
    const std::vector<std::string> windows = window_dump_paths(dump_smt2);
    for (size_t n = 0; n < windows.size(); ++n) outs.push_back({windows[n], fmt::format("dump_smt2, window {}", n + 1)});
    check(check_output_paths(outs, spec_inputs(spec)));
  }
  ModelSynthOptions o;
  o.recompute = rc;
  o.evaluations = evaluations;
  check(set_plan_words(o, spec, PlanGiven{partition, placement, stages_per_device}));
  o.whole_layers = cuts == "layers";
  o.time_limit_s = time_limit_s;
  o.rlimit = rlimit;
  o.seed = seed;
  o.z3_threads = z3_threads;
  o.search_threads = search_threads;
  o.dump_smt2 = dump_smt2;
  o.start = start;
  std::atomic<bool> interrupt{false};
  o.interrupt = &interrupt;
  std::unique_ptr<nb::python_error> callback_error;
  std::mutex callback_mu;
  PyObject* cb = progress.is_none() ? nullptr : progress.ptr();  // alive for the call (the caller holds it)
  if (cb) {
    o.search_progress = [cb, &interrupt, &callback_error, &callback_mu](const TuneProgress& p) {
      std::lock_guard<std::mutex> one_at_a_time(callback_mu);
      nb::gil_scoped_acquire acquire;
      if (callback_error) return;
      try {
        nb::object stop = nb::borrow(cb)(progress_dict(p));
        const int truth = PyObject_IsTrue(stop.ptr());  // -1: its __bool__ raised
        if (truth < 0) throw nb::python_error();
        if (truth == 1) interrupt.store(true);
      } catch (nb::python_error& e) {
        callback_error = std::make_unique<nb::python_error>(std::move(e));
        interrupt.store(true);
      }
    };
  }
  std::optional<Result<ModelSynthesis>> result;
  std::unique_ptr<nb::python_error> ctrl_c;
  run_interruptible([&] { result.emplace(synthesize_model(spec, o)); }, interrupt, ctrl_c);
  if (callback_error) callback_error->restore(), throw nb::python_error();
  if (!result->ok()) {
    if (result->status().code() == ErrorCode::kInterrupted && ctrl_c) {
      ctrl_c->restore();
      throw nb::python_error();
    }
    raise_status(result->status());
  }
  SynthOutcome out;
  out.m = std::move(**result);
  out.interrupted = interrupt.load();
  return out;
}

std::vector<std::pair<int, int>> ranges_of(const Partition& p) {
  std::vector<std::pair<int, int>> out;
  for (const LayerRange& r : p) out.emplace_back(r.first, r.last);
  return out;
}

std::optional<double> sim_value(const Report& r, double Simulation::*field) {
  if (!r.sim) return std::nullopt;
  return (*r.sim).*field;
}


// Spec: a model, its cluster and pipeline settings (load_spec, parse_spec, the mesh keywords).
void bind_specs(nb::module_& m) {
  nb::class_<Spec>(m, "Spec", "A model, its cluster and its pipeline settings, validated (load_spec).")
      .def_prop_ro("name", [](const Spec& s) { return s.model.name; }, "The model's name.")
      .def_prop_ro("devices", [](const Spec& s) { return s.cluster.devices; }, "Pipeline devices P.")
      .def_prop_ro("microbatches", [](const Spec& s) { return s.pipeline.microbatches; }, "Microbatches M per iteration.")
      .def_prop_ro("memory_gb", [](const Spec& s) { return s.cluster.memory_gb; }, "Memory per device, GB (0: unlimited).")
      .def_prop_ro("num_layers", [](const Spec& s) { return static_cast<int>(s.model.layers.size()); }, "Layers of the model.")
      .def_prop_ro("cluster", [](const Spec& s) { return s.cluster.name; }, "The cluster's name.")
      .def("__repr__", [](const Spec& s) {
        return fmt::format("<pipesmith.Spec '{}': {} layers, P = {}, M = {}, {:g} GB>", s.model.name, s.model.layers.size(),
                           s.cluster.devices, s.pipeline.microbatches, s.cluster.memory_gb);
      });

  nb::class_<ParallelInput>(m, "ParallelInput")
      .def(nb::init<>())
      .def_rw("gpus", &ParallelInput::gpus)
      .def_rw("tensor", &ParallelInput::tensor)
      .def_rw("context", &ParallelInput::context)
      .def_rw("expert", &ParallelInput::expert)
      .def_rw("expert_tensor", &ParallelInput::expert_tensor)
      .def_rw("data", &ParallelInput::data)
      .def_rw("micro_batch", &ParallelInput::micro_batch)
      .def_rw("global_batch", &ParallelInput::global_batch)
      .def_rw("sequence_parallel", &ParallelInput::sequence_parallel)
      .def_rw("optimizer", &ParallelInput::optimizer)
      .def_rw("cp_comm_type", &ParallelInput::cp_comm);
  // pipesmith plan (synth/mesh_plan.h): the rows as dicts, and the best mesh's certified schedule.
  m.def("plan", [](const std::string& model, std::optional<std::string> cluster, long long gpus, long long global_batch,
                   ParallelInput pinned, std::optional<int> pipeline, std::optional<double> memory_limit_gb, int top,
                   int evaluations, std::vector<std::pair<int, ParallelInput>> candidates,
                   std::optional<std::function<void(nb::dict)>> progress) {
    MeshPlanOptions o;
    // The callback runs on this thread with the GIL released around the plan: it takes the GIL, and an
    // exception it raises is kept and raised once the plan returns (no further reports are made).
    std::optional<nb::python_error> failed;
    if (progress)
      o.progress = [&progress, &failed](const MeshPlanProgress& p) {
        nb::gil_scoped_acquire gil;
        if (failed) return;
        nb::dict d;
        d["index"] = p.index, d["planned"] = p.planned, d["done"] = p.done;
        d["mesh"] = mesh_description(*p.row), d["optimizer"] = std::string(optimizer_name(p.row->optimizer));
        d["candidate"] = p.row->candidate, d["synthesized"] = p.row->synthesized;
        d["iteration_ms"] = p.row->iteration_ms, d["best_ms"] = p.best_ms, d["best_mesh"] = p.best_mesh;
        d["pruned_by_bound"] = p.pruned_by_bound;
        try {
          (*progress)(d);
        } catch (nb::python_error& e) {
          failed.emplace(std::move(e));
        }
      };
    o.pinned = std::move(pinned);
    for (auto& [p, mesh] : candidates) o.candidates.push_back(MeshCandidate{p, std::move(mesh)});
    o.pinned.gpus = gpus;
    o.pinned.global_batch = global_batch;
    o.pipeline = pipeline;
    o.memory_gb = memory_limit_gb;
    o.top = top;
    o.evaluations = evaluations;
    Result<MeshPlan> r = [&] {
      nb::gil_scoped_release release;
      return plan_meshes(model, cluster.value_or(""), o);
    }();
    if (failed) throw std::move(*failed);
    MeshPlan plan = take(std::move(r));
    nb::list rows;
    for (const MeshPlanRow& x : plan.rows) {
      nb::dict d;
      d["pipeline"] = x.pipeline, d["data"] = x.data, d["context"] = x.context, d["tensor"] = x.tensor;
      d["expert"] = x.expert, d["expert_tensor"] = x.expert_tensor, d["micro_batch"] = x.micro_batch;
      d["sequence_parallel"] = x.sequence_parallel;
      d["optimizer"] = std::string(optimizer_name(x.optimizer)), d["candidate"] = x.candidate;
      d["cp_comm_type"] = std::string(cp_comm_name(x.cp_comm));
      d["microbatches"] = x.microbatches;
      d["estimate_ms"] = x.estimate_ms, d["bound_ms"] = x.bound_ms, d["synthesized"] = x.synthesized, d["stages"] = x.stages;
      d["iteration_ms"] = x.iteration_ms, d["tokens_per_s"] = x.tokens_per_s, d["tflops_per_gpu"] = x.tflops_per_gpu;
      d["mfu"] = x.mfu, d["peak_memory_gb"] = x.peak_memory_gb, d["bubble_ratio"] = x.bubble, d["note"] = x.note;
      rows.append(d);
    }
    return std::make_pair(rows, plan.best->result.schedule);
  }, "model"_a, "cluster"_a = nb::none(), "gpus"_a, "global_batch"_a, "pinned"_a, "pipeline"_a = nb::none(),
        "memory_limit_gb"_a = nb::none(), "top"_a = 4, "evaluations"_a = 20,
        "candidates"_a = std::vector<std::pair<int, ParallelInput>>{}, "progress"_a = nb::none());
  m.def("load_spec", [](const std::string& model, std::optional<std::string> cluster, std::optional<int> devices,
                        std::optional<int> microbatches, std::optional<double> memory_limit_gb, ParallelInput parallel) {
    SpecOverrides o;  // checked by load_spec (check_overrides)
    o.devices = devices;
    o.microbatches = microbatches;
    // The library's check under Python's spelling (load_spec would name it "the memory limit override").
    if (memory_limit_gb) check(check_memory_limit_gb(*memory_limit_gb, "memory_limit_gb"));
    o.memory_gb = memory_limit_gb;
    o.parallel = std::move(parallel);
    return take(load_spec(model, cluster.value_or(""), o));
  }, "model"_a, "cluster"_a = nb::none(), "devices"_a = nb::none(), "microbatches"_a = nb::none(),
        "memory_limit_gb"_a = nb::none(), "parallel"_a = ParallelInput{});

  m.def("parse_spec", [](const std::string& text, const std::string& name) { return take(parse_spec(text, name)); },
        "text"_a, "name"_a = "<string>");

}

// Schedule: reading, parsing and writing schedule files.
void bind_schedules(nb::module_& m) {
  nb::class_<Schedule>(m, "Schedule", "A schedule: its problem (stages, placement, costs) and one program per device.")
      .def_prop_ro("name", [](const Schedule& s) { return s.problem.name; }, "The model's name.")
      .def_prop_ro("num_devices", &Schedule::num_devices, "Devices P.")
      .def_prop_ro("num_stages", [](const Schedule& s) { return s.problem.num_stages(); }, "Stages S.")
      .def_prop_ro("microbatches", [](const Schedule& s) { return s.problem.microbatches; }, "Microbatches M.")
      .def_prop_ro("placement", [](const Schedule& s) {
        std::vector<int> p;
        for (const StageSpec& st : s.problem.stages) p.push_back(st.device);
        return p;
      }, "Stage → device.")
      .def_prop_ro("layers", [](const Schedule& s) {
        std::vector<std::pair<int, int>> r;
        for (const StageSpec& st : s.problem.stages) r.emplace_back(st.first_layer, st.last_layer);
        return r;
      }, "Per stage, its (first, last) layer (-1 when unknown, as for a CSV without a model).")
      .def_prop_ro("programs", &program_texts, "Per device, its ops in order, as PyTorch action text ('3F1', '0SEND_B2').")
      .def_prop_ro("has_comms", &Schedule::has_comms, "Whether the programs hold SEND/RECV ops.")
      .def_prop_ro("generator", [](const Schedule& s) { return s.generator; }, "What wrote it ('pipesmith synth', ...).")
      .def_prop_ro("source", [](const Schedule& s) { return s.source; }, "The file it was read from ('' when built in memory).")
      .def_prop_ro("certificate", [](const Schedule& s) -> std::optional<std::map<std::string, std::string>> {
        if (!s.certificate) return std::nullopt;
        return certificate_fields(s);
      }, "The certificate's verdict, semantics, digest and extras (extra.*), or None.")
      .def("to_yaml", &format_schedule_yaml, "The pipesmith-schedule/1 YAML text (what write() writes).")
      .def("to_csv", [](const Schedule& s) {
        check(check_pytorch_csv_exportable(s));
        return format_pytorch_csv(s);
      }, "The programs as a PyTorch pipelining CSV (refused for a schedule with recomputation: the CSV has no R action).")
      .def("compute_only", &compute_only_view,
           "The schedule without its SEND/RECV ops (what `pipesmith baseline --csv` writes: compute_only().to_csv()).")
      .def("write", [](const Schedule& s, nb::handle path_obj) {
        const std::string path = path_arg(path_obj, "path");
        nb::gil_scoped_release release;
        Status st = write_schedule_yaml(s, path);
        nb::gil_scoped_acquire acquire;
        check(st);
      }, "path"_a, "Writes the schedule YAML to `path`, whole or not at all.")
      .def("__repr__", [](const Schedule& s) {
        return fmt::format("<pipesmith.Schedule '{}': P = {}, S = {}, M = {}, {} ops{}>", s.problem.name, s.num_devices(),
                           s.problem.num_stages(), s.problem.microbatches, s.num_ops(),
                           s.certificate ? ", certified" : "");
      });

  m.def("read_schedule", [](const std::string& path, std::optional<std::string> model, std::optional<std::string> cluster,
                            std::optional<int> microbatches, std::optional<int> stages) {
    CheckInput in;
    in.file = path;
    in.model = model.value_or("");
    in.cluster = cluster.value_or("");
    in.microbatches = microbatches.value_or(-1);
    in.stages = stages.value_or(-1);
    Result<LoadedSchedule> r = [&] { nb::gil_scoped_release release; return load_schedule_for_check(in); }();
    LoadedSchedule loaded = take(std::move(r));
    return std::make_pair(std::move(loaded.schedule), std::move(loaded.notes));
  }, "path"_a, "model"_a = nb::none(), "cluster"_a = nb::none(), "microbatches"_a = nb::none(), "stages"_a = nb::none());

  m.def("parse_schedule", [](const std::string& text, const std::string& name) { return take(parse_schedule_yaml(text, name)); },
        "text"_a, "name"_a = "<string>");

}

// The checker: verify and its Report with every Violation.
void bind_reports(nb::module_& m) {
  nb::class_<Violation>(m, "Violation", "One rule the checker found broken, where, and the other party's notes.")
      .def_ro("rule", &Violation::rule, "Rule id ('deadlock', 'structure.missing', ...; docs/verifier-rules.md).")
      .def_prop_ro("device", [](const Violation& v) -> std::optional<int> { if (!v.device) return std::nullopt; return v.device->value(); }, "The device, or None.")
      .def_prop_ro("op_index", [](const Violation& v) -> std::optional<int> { if (v.op_index < 0) return std::nullopt; return v.op_index; }, "Index of the op in that device's program, or None.")
      .def_ro("action", &Violation::action, "The op ('3F1'), or ''.")
      .def_ro("message", &Violation::message, "What is wrong, one line.")
      .def_prop_ro("file", [](const Violation& v) -> std::optional<std::string> { if (v.loc.file.empty()) return std::nullopt; return v.loc.file; }, "The file the op was read from, or None.")
      .def_prop_ro("line", [](const Violation& v) { return v.loc.line; }, "Its line (0: unknown).")
      .def_prop_ro("col", [](const Violation& v) { return v.loc.col; }, "Its column (0: unknown).")
      .def_ro("notes", &Violation::notes, "The other party: 'device 1 is blocked on op 5 ...'.")
      .def("__repr__", [](const Violation& v) {
        return fmt::format("<pipesmith.Violation {}{}: {}>", v.rule, v.loc.valid() ? " at " + v.loc.str() : "", v.message);
      });

  nb::class_<PyReport>(m, "Report", "The checker's report: verdict, every violation, figures of the simulation.")
      .def_prop_ro("valid", [](const PyReport& r) { return r.report.valid; }, "The verdict.")
      .def_prop_ro("semantics", [](const PyReport& r) { return std::string(semantics_name(r.report.semantics)); }, "The send/recv semantics checked.")
      .def_prop_ro("violations", [](const PyReport& r) { return r.report.violations; }, "Every violation found.")
      .def_prop_ro("unchecked_claims", [](const PyReport& r) {
        std::vector<std::pair<std::string, std::string>> out;
        for (const UncheckedClaim& c : r.report.unchecked_claims) out.emplace_back(c.field, c.message);
        return out;
      }, "Certificate claims reported but not rechecked: (field, message).")
      .def_prop_ro("notes", [](const PyReport& r) { return r.report.notes; }, "Notes (comms inserted, unit costs, ...).")
      .def_prop_ro("comms_inserted", [](const PyReport& r) { return r.report.comms_inserted; }, "Whether comms were inserted by the shared rule.")
      .def_prop_ro("checked", [](const PyReport& r) { return r.report.checked; }, "The programs analysed (with comms).")
      .def_prop_ro("safe_under", [](const PyReport& r) { return r.report.safe_under; }, "Semantics under which it is deadlock-free.")
      .def_prop_ro("lower_bound_ms", [](const PyReport& r) { return r.report.lower_bound_ms; }, "Lower bound for this partition and placement.")
      .def_prop_ro("memory_limit_gb", [](const PyReport& r) { return r.report.memory_limit_gb; }, "The memory limit checked (0: unlimited).")
      .def_prop_ro("simulated", [](const PyReport& r) { return r.report.sim.has_value(); }, "Whether the timing could be simulated.")
      .def_prop_ro("makespan_ms", [](const PyReport& r) { return sim_value(r.report, &Simulation::makespan_ms); }, "Simulated iteration time, or None.")
      .def_prop_ro("bubble_ratio", [](const PyReport& r) { return sim_value(r.report, &Simulation::bubble_ratio); }, "Idle share of devices × iteration, or None.")
      .def_prop_ro("exposed_data_parallel_ms", [](const PyReport& r) { return sim_value(r.report, &Simulation::exposed_data_parallel_ms); }, "How long the data-parallel step (REDUCE_GRAD, FSDP's gathers) outlasts the pipeline's last compute or transfer, or None.")
      .def_prop_ro("peak_memory_gb", [](const PyReport& r) {
        std::vector<double> out;
        if (r.report.sim) for (double mb : r.report.sim->peak_memory_mb) out.push_back(mb_to_gb(mb));
        return out;
      }, "Per device, the peak memory in GB (empty when not simulated).")
      .def_prop_ro("busy_ms", [](const PyReport& r) { return r.report.sim ? r.report.sim->busy_ms : std::vector<double>{}; }, "Per device, compute time.")
      .def_prop_ro("idle_ms", [](const PyReport& r) { return r.report.sim ? r.report.sim->idle_ms : std::vector<double>{}; }, "Per device, idle time.")
      .def_prop_ro("op_times", [](const PyReport& r) {
        std::vector<std::vector<std::pair<double, double>>> out;
        if (r.report.sim)
          for (const auto& dev : r.report.sim->times) {
            out.emplace_back();
            for (const OpInterval& t : dev) out.back().emplace_back(t.start_ms, t.end_ms);
          }
        return out;
      }, "Per device, per op of `checked.programs`, its (start_ms, end_ms).")
      .def("text", [](const PyReport& r) { return format_report(r.report); }, "The report as `pipesmith verify` prints it.")
      .def("json", [](const PyReport& r) { return format_report_json(r.report); }, "The report as `pipesmith verify --json` prints it.")
      .def("svg", [](const PyReport& r, const std::string& title) { return format_svg(r.report, title); }, "title"_a = "", "An SVG Gantt chart with memory curves.")
      .def("chrome_trace", [](const PyReport& r) { return format_chrome_trace(r.report); }, "A Chrome/Perfetto trace JSON of the simulated timing.")
      .def("__bool__", [](const PyReport& r) { return r.report.valid; })
      .def("__repr__", [](const PyReport& r) {
        return fmt::format("<pipesmith.Report {} under {}{}>", r.report.valid ? "VALID" : "INVALID",
                           semantics_name(r.report.semantics),
                           r.report.valid ? "" : fmt::format(", {} violation(s)", r.report.violations.size()));
      });

  // The mesh's overrides (ir/mesh.h ParallelInput), built by pipesmith.load_spec from its keyword arguments.
  m.def("verify", [](const Schedule& s, const std::string& semantics, std::optional<double> memory_limit_gb,
                     const std::vector<std::string>& notes) {
    VerifyOptions o;
    o.semantics = semantics_from(semantics);
    if (memory_limit_gb) {
      check(check_memory_limit_gb(*memory_limit_gb, "memory_limit_gb"));
      o.memory_limit_gb = *memory_limit_gb;
    }
    PyReport r;
    {
      nb::gil_scoped_release release;
      r.report = verify(s, o);
    }
    r.report.notes.insert(r.report.notes.begin(), notes.begin(), notes.end());  // as `pipesmith verify FILE` has them
    return r;
  }, "schedule"_a, "semantics"_a = "rendezvous", "memory_limit_gb"_a = nb::none(),
        "notes"_a = std::vector<std::string>{});

}

// The generators: baselines, bounds and the synthesizer.
void bind_synthesis(nb::module_& m) {
  m.def("baseline_kinds", [] {
    std::vector<std::string> out;
    for (BaselineKind k : all_baseline_kinds()) out.emplace_back(baseline_name(k));
    return out;
  });

  m.def("baseline", [](const Spec& spec, const std::string& kind, int stages_per_device, const std::string& partition,
                       const std::string& recompute) {
    auto k = parse_baseline_kind(kind);
    if (!k)
      raise_status(Status::bad_input(fmt::format("unknown schedule '{}': expected one of {}", kind, baseline_names_joined(", "))));
    check(check_stages_per_device(spec, stages_per_device));
    const PartitionChoice choice = take(parse_partition_choice(partition));
    const RecomputeMode mode = take(read_recompute_mode(recompute, "recompute"));
    Result<BaselineRun> r = [&] {
      nb::gil_scoped_release release;
      return run_baseline(spec, BaselineRequest{*k, stages_per_device, choice, mode});
    }();
    BaselineRun run = take(std::move(r));
    nb::dict d;
    d["partition"] = ranges_of(run.partition);
    d["placement"] = run.placement;
    d["partition_desc"] = run.desc;
    d["notes"] = run.notes;
    d["global_bound_ms"] = run.global ? nb::cast(run.global->bound_ms) : nb::none();
    return nb::make_tuple(std::move(run.schedule), PyReport{std::move(run.report)}, d);
  }, "spec"_a, "kind"_a, "stages_per_device"_a = 0, "partition"_a = "balanced", "recompute"_a = "none");

  m.def("bound", [](const Spec& spec, std::optional<std::string> partition, std::optional<std::string> placement,
                    int stages_per_device) {
    check(check_layers_for_devices(spec));
    check(check_stages_per_device(spec, stages_per_device));
    std::optional<PlanBoundRequest> req;
    if (partition || placement || stages_per_device != 0)
      req = PlanBoundRequest{partition.value_or(""), placement.value_or(""), stages_per_device};
    Result<ModelBound> r = [&] { nb::gil_scoped_release release; return model_bound(spec, req); }();
    return format_model_bound_json(spec, take(std::move(r)));  // pipesmith/__init__.py reads it
  }, "spec"_a, "partition"_a = nb::none(), "placement"_a = nb::none(), "stages_per_device"_a = 0);

  m.def("synthesize", [](const Spec& spec, std::optional<std::string> partition, std::optional<std::string> placement,
                         std::optional<int> stages_per_device, const std::string& cuts, double time_limit_s,
                         int evaluations, uint64_t rlimit, unsigned seed, int z3_threads, int search_threads,
                         const std::string& dump_smt2, const std::string& recompute, nb::object progress) {
    SynthOutcome o = synthesize(spec, partition, placement, stages_per_device, cuts, time_limit_s, evaluations, rlimit,
                                seed, z3_threads, search_threads, dump_smt2, recompute, progress);
    const SynthResult& r = o.m.result;
    nb::dict d;
    d["makespan_ms"] = r.makespan_ms;
    d["bound_ms"] = r.bound_ms;
    d["gap"] = r.gap;
    d["optimal"] = r.optimal;
    d["solver_status"] = r.solver_status;
    d["heuristic_ms"] = r.heuristic_ms;
    d["heuristic_policy"] = r.heuristic_policy;
    d["best_baseline"] = r.best_baseline.empty() ? nb::none() : nb::cast(r.best_baseline);
    d["best_baseline_ms"] = r.best_baseline.empty() ? nb::none() : nb::cast(r.best_baseline_ms);
    d["plan"] = o.m.plan_desc;
    d["placement"] = o.m.placement;
    d["interrupted"] = o.interrupted;
    d["z3_ran"] = !o.m.z3_skipped;
    if (o.m.tuned) {
      d["global_bound_ms"] = o.m.tuned->lower_bound_ms;
      d["stop_reason"] = std::string(search_stop_name(o.m.tuned->stats.stop_reason));
      d["evaluated"] = o.m.tuned->stats.evaluated;
      d["search_s"] = o.m.tuned->stats.total_s;
    } else {
      d["global_bound_ms"] = nb::none();
      d["stop_reason"] = "fixed";
      d["evaluated"] = 0;
      d["search_s"] = 0.0;
    }
    nb::list modes;
    for (const StageSpec& st : o.m.problem.stages) modes.append(std::string(recompute_mode_name(st.recompute)));
    d["recompute"] = modes;  // per stage: none, selective, full
    nb::list backward;
    for (const StageSpec& st : o.m.problem.stages) backward.append(std::string(st.split_backward ? "split" : "fused"));
    d["backward"] = backward;  // per stage: split (I and W) or fused (B)
    d["solve_s"] = r.solve_s;
    d["smt2_windows"] = r.solve.window_dumps;  // with dump_smt2: window encodings written (PATH.w1.smt2, ...)
    d["smt2_written"] = r.solve.smt2_written;   // ... or the whole plan's encoding at PATH
    return nb::make_tuple(r.schedule, PyReport{r.report}, d);
  }, "spec"_a, "partition"_a = nb::none(), "placement"_a = nb::none(), "stages_per_device"_a = nb::none(),
        "cuts"_a = "sublayers", "time_limit_s"_a = 10.0, "evaluations"_a = 0, "rlimit"_a = 0, "seed"_a = 0,
        "z3_threads"_a = 2, "search_threads"_a = 0, "dump_smt2"_a = "", "recompute"_a = "search",
        "progress"_a = nb::none());

}

// The PyTorch export.
void bind_exports(nb::module_& m) {
  nb::class_<PyExport>(m, "PytorchExport", "A checked schedule as the files torch.distributed.pipelining runs.")
      .def_ro("valid", &PytorchExport::valid, "Whether the checker accepted the schedule (nothing else is set otherwise).")
      .def_prop_ro("report", [](const PyExport& e) { return PyReport{e.report}; }, "The checker's report.")
      .def_ro("compute_only_csv", &PytorchExport::compute_only_csv, "compute_only.csv: F/I/W/B cells per rank.")
      .def_ro("compute_comms_csv", &PytorchExport::compute_comms_csv, "compute_comms.csv: the certified order with SEND/RECV and REDUCE_GRAD.")
      .def_ro("plan_json", &PytorchExport::plan_json, "plan.json (pipesmith-plan/1).")
      .def_ro("certified_ms", &PytorchExport::certified_ms, "Simulated iteration of the certified order.")
      .def_ro("pytorch_valid", &PytorchExport::pytorch_valid, "Whether PyTorch's own lowering of compute_only.csv checks valid.")
      .def_ro("pytorch_ms", &PytorchExport::pytorch_ms, "Simulated iteration of that order (0: not simulated).")
      .def_ro("pytorch_safe_under", &PytorchExport::pytorch_safe_under, "Semantics under which that order is deadlock-free.")
      .def_ro("recomputes", &PytorchExport::recomputes, "Whether the schedule holds R ops (the files drop them; plan.json marks the stages).")
      .def_ro("recompute_ops_moved", &PytorchExport::recompute_ops_moved, "R ops of the certified order that are not right before their I/B (PyTorch recomputes inside the backward).")
      .def_ro("comms_at_backward_ms", &PytorchExport::comms_at_backward_ms, "With R ops: simulated iteration of the certified order as PyTorch runs compute_comms.csv (each R inside its backward); else certified_ms.")
      .def_ro("microbatch_renumbering", &PytorchExport::microbatch_renumbering, "Empty, or: file microbatch k is the schedule's microbatch_renumbering[k].")
      .def_ro("notes", &PytorchExport::notes)
      .def("write", [](const PyExport& e, nb::handle dir_obj) {
        const std::string dir = path_arg(dir_obj, "out_dir");
        // As `pipesmith export -o DIR`: none of the three files may name an input of the export (a
        // directory the write will create holds none).
        std::error_code ec;
        if (std::filesystem::is_directory(dir, ec)) {
          std::vector<OutputPath> outs;
          for (const char* name : {"compute_only.csv", "compute_comms.csv", "plan.json"})
            outs.push_back({(std::filesystem::path(dir) / name).string(), "out_dir"});
          check(check_output_paths(outs, e.inputs));
        }
        Result<std::vector<std::string>> r = [&] { nb::gil_scoped_release release; return write_pytorch_export(e, OutputPath{dir, "out_dir"}); }();
        return take(std::move(r));
      }, "out_dir"_a, "Writes compute_only.csv, compute_comms.csv and plan.json into `out_dir` as one set (an output that "
                      "names the schedule, model or cluster file it was made from is refused); returns their paths.");

  m.def("export_pytorch", [](const Schedule& s, std::optional<Spec> spec, bool fsdp, const std::string& model_file) {
    PytorchExportOptions o;
    o.fsdp = fsdp;
    o.spec = spec ? &*spec : nullptr;
    o.model_file = model_file;
    Result<PytorchExport> r = [&] { nb::gil_scoped_release release; return export_pytorch(s, o); }();
    PyExport out{take(std::move(r)), {s.source, model_file}};
    if (spec)
      for (std::string& in : spec_inputs(*spec)) out.inputs.push_back(std::move(in));
    return out;
  }, "schedule"_a, "spec"_a = nb::none(), "fsdp"_a = false, "model_file"_a = "");

  m.def("load_export_input", [](const std::string& file, std::optional<std::string> model, std::optional<std::string> cluster) {
    ExportInput in = take(load_export_input(file, model.value_or(""), cluster.value_or("")));
    return nb::make_tuple(std::move(in.schedule), in.spec ? nb::cast(std::move(*in.spec)) : nb::none(), in.notes);
  }, "file"_a, "model"_a = nb::none(), "cluster"_a = nb::none());
}

}  // namespace

}  // namespace ps::py

NB_MODULE(_core, m) {
  using namespace ps;
  using namespace ps::py;
  m.doc() = "pipesmith's C++ core (the library behind the pipesmith command); use it through `import pipesmith`.";
  m.attr("z3_version") = z3_version();
  bind_specs(m);
  bind_schedules(m);
  bind_reports(m);
  bind_synthesis(m);
  bind_exports(m);
  bind_model_write(m);
  bind_run(m);
  bind_tables(m);
}
