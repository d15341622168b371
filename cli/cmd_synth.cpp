// `pipesmith synth MODEL.yaml [--partition ...] [--placement ...] [--time-limit S] [--seed N] -o OUT`
// — synthesize a schedule, check it and write it with its certificate. The tuner (synth/tuner/tuner.h)
// searches what the flags leave open — partition and placement without --partition/--placement/
// --stages-per-device, the placement with only --partition, the partition with only --placement (or
// --stages-per-device) — and Z3 refines the chosen plan's order; with both fixed only the order is
// optimized. Exit 2 (with the reason in terms of the inputs) when no schedule fits the memory
// limit.
#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "cli/spec_flags.h"
#include "ir/recompute.h"
#include "report/report.h"
#include "synth/plan/plan_spec.h"
#include "cli/synth_progress.h"
#include "ir/problem.h"
#include "ir/schedule_io.h"
#include "synth/certify.h"
#include "synth/plan/megatron_layout.h"
#include "synth/dag/op_dag.h"
#include "synth/plan/partition.h"
#include "synth/plan/placement.h"
#include "synth/tuner/tuner.h"
#include "synth/z3/solve.h"
#include "synth/synthesize.h"
#include "synth/synthesize_model.h"
#include "synth/z3/window.h"
#include "verify/verify.h"

namespace ps::cli {

namespace {

struct SynthArgs {
  SpecFlags spec;
  std::string partition = "balanced";
  std::string placement = "sequential";
  int stages_per_device = 0;  // 0: 1 for sequential, 2 for interleaved and v
  double time_limit_s = 10;
  int evaluations = 0;  // --evaluations: the search's budget in candidates (0: the wall clock ends it)
  unsigned long long rlimit = 0;
  unsigned seed = 0;
  int threads = 2;
  int search_threads = 0;  // 0: the machine's hardware threads, at most 16
  bool quiet = false;
  std::string cuts = "sublayers";  // --cuts: "layers" keeps every joins_next group in one stage
  std::string recompute = "search";  // --recompute: search, none, selective, full
  std::string out_path, csv_path, svg_path, smt2_path;
  // Set from the parsed flags: what the flags fix; the rest is searched (co-optimization).
  // --placement or --stages-per-device fix the placement (--stages-per-device alone means
  // --placement interleaved); --partition fixes the partition.
  PlanGiven plan;  // what --partition, --placement and --stages-per-device gave
};

// SIGINT and SIGTERM (Ctrl-C; a batch system's notice before it kills a job at its time limit):
// the first ends the search as its deadline would, and the best plan so far is checked and written;
// then the command ends by that signal (status 130 or 143), so a script stops there as it would
// have. The first delivery restores the default action: a second signal ends the process at once.
std::atomic<bool> g_interrupted{false};
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_interrupt(int sig) {
  g_signal = sig;
  g_interrupted.store(true);
  static const char kSaid[] =
      "\nsynth: interrupted: stopping; the best schedule so far is checked and written (a second signal quits "
      "at once)\n";
  ssize_t ignored = ::write(STDERR_FILENO, kSaid, sizeof kSaid - 1);
  (void)ignored;
}

// Installs on_interrupt for SIGINT and SIGTERM while it lives (a signal the shell had set to be
// ignored, as for a background job, stays ignored).
class InterruptGuard {
 public:
  InterruptGuard() {
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    for (int i = 0; i < 2; ++i) {
      sigaction(kSignals[i], nullptr, &old_[i]);
      installed_[i] = old_[i].sa_handler != SIG_IGN && sigaction(kSignals[i], &sa, nullptr) == 0;
    }
  }
  ~InterruptGuard() {
    for (int i = 0; i < 2; ++i)
      if (installed_[i]) sigaction(kSignals[i], &old_[i], nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  struct sigaction old_[2] {};
  bool installed_[2] = {false, false};
};

// After an interrupt: flush and end by the signal, as the shell expects of an interrupted command.
[[noreturn]] void end_by_signal() {
  std::fflush(nullptr);
  const int sig = g_signal != 0 ? static_cast<int>(g_signal) : SIGINT;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
  std::_Exit(128 + sig);  // not reached
}

// What the command is doing, for the backstop's message.
std::atomic<const char*> g_phase{"reading the inputs"};

// The hard stop behind --time-limit and the signals. The search, the bounds and Z3 poll a stop flag
// that the signals and, at the time limit, synthesize_model's own watcher set, and end on their own;
// a step that cannot poll (reading a file, building a large plan's op DAG, checking it, writing it)
// is ended here, kGraceS past the deadline or past the first SIGINT/SIGTERM, so neither is overrun by
// more than a second on any input. Nothing is then left half-written: every output is written whole or not at all
// (ir/output_file.h). A time limit ends the command with exit 1, a signal by that signal.
// PIPESMITH_TIME_LIMIT_GRACE_S widens the grace for builds that run many times slower than a release
// build (the ASan+UBSan test run sets it); it is not meant for users.
class Backstop {
 public:
  static constexpr double kGraceS = 0.85;
  static double grace_s() {
    const char* v = std::getenv("PIPESMITH_TIME_LIMIT_GRACE_S");
    const double g = v ? std::strtod(v, nullptr) : 0;
    return g > 0 && std::isfinite(g) ? g : kGraceS;
  }
  // deadline: none for a run bounded by --evaluations (the clock does not end it; signals still do).
  explicit Backstop(std::optional<std::chrono::steady_clock::time_point> deadline, double time_limit_s)
      : deadline_(deadline), time_limit_s_(time_limit_s), thread_([this] { watch(); }) {}
  ~Backstop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Backstop(const Backstop&) = delete;
  Backstop& operator=(const Backstop&) = delete;

 private:
  void watch() {
    using Clock = std::chrono::steady_clock;
    const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_s()));
    std::optional<Clock::time_point> signalled;
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return done_; })) {
      const auto now = Clock::now();
      if (g_interrupted.load() && !signalled) signalled = now;
      if (signalled && now > *signalled + grace) {
        std::fprintf(stderr, "pipesmith: stopped by %s while %s: nothing more written\n",
                     g_signal == SIGTERM ? "SIGTERM" : "SIGINT", g_phase.load());
        end_by_signal();
      }
      if (deadline_ && now > *deadline_ + grace) {
        std::fprintf(stderr,
                     "pipesmith: error: --time-limit %g s reached while %s: stopped, nothing more written (a "
                     "longer --time-limit, or a smaller plan: fewer microbatches or stages)\n",
                     time_limit_s_, g_phase.load());
        std::fflush(nullptr);
        std::_Exit(1);
      }
    }
  }

  std::optional<std::chrono::steady_clock::time_point> deadline_;
  double time_limit_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

// The library's options from the flags: the plan words read by plan_spec.h, the flags' own refusals
// named by flag.
Result<ModelSynthOptions> synth_options(const SynthArgs& a, const Spec& spec,
                                        std::chrono::steady_clock::time_point start) {
  ModelSynthOptions o;
  o.evaluations = a.evaluations;
  PS_RETURN_IF_ERROR(set_plan_words(o, spec, a.plan, "--stages-per-device"));
  o.whole_layers = a.cuts == "layers";
  const auto rc = read_recompute_choice(a.recompute, "--recompute");
  if (!rc.ok()) return rc.status();
  o.recompute = *rc;
  o.time_limit_s = a.time_limit_s;
  o.rlimit = a.rlimit;
  o.seed = a.seed;
  o.z3_threads = a.threads;
  o.search_threads = a.search_threads;
  o.start = start;
  o.interrupt = &g_interrupted;
  o.dump_smt2 = a.smt2_path;
  if (a.quiet) return o;
  o.solver_progress = [](const SynthProgress& p) { std::fprintf(stderr, "synth: %s\n", synth_progress_line(p).c_str()); };
  o.search_progress = [](const TuneProgress& p) {
    if (p.has_best) {
      std::fprintf(stderr, "synth: [%s] %d candidates (%d fit), best %.3f ms, bound %.3f ms, gap %.2f%%, %.1f s  %s\n",
                   p.phase.c_str(), p.evaluated, p.feasible, p.best_ms, p.lower_bound_ms, 100 * p.gap, p.elapsed_s,
                   p.best_desc.c_str());
    } else {
      std::fprintf(stderr, "synth: [%s] %d candidates, none fits the memory yet, bound %.3f ms, %.1f s\n",
                   p.phase.c_str(), p.evaluated, p.lower_bound_ms, p.elapsed_s);
    }
  };
  return o;
}

// The search line of the summary: the global bound and what the search did.
std::string search_line(const TuneResult& t, double makespan_ms) {
  return fmt::format(
      "  global bound  {:.3f} ms  (any partition and placement; gap {:.2f}%)  search: {} candidates in {:.1f} s, {}{}{}{}{}\n",
      t.lower_bound_ms, 100 * relative_gap(makespan_ms, t.lower_bound_ms), t.stats.evaluated,
      t.stats.total_s, search_stop_name(t.stats.stop_reason),
      t.stats.pruned > 0 ? fmt::format("; {} moves skipped by their plan floor", t.stats.pruned) : "",
      t.stats.floor_portfolios > 0 ? fmt::format("; {} low-floor plans given the search portfolio", t.stats.floor_portfolios)
                                   : "",
      t.stats.paced_seeds > 0
          ? fmt::format("; {} paced-front seeds, {}", t.stats.paced_seeds,
                        t.stats.paced_admitted ? "admitted as starts" : "not admitted (another seed started better)")
          : "",
      t.stats.wave_seeds > 0
          ? fmt::format("; {} wave seeds, {}", t.stats.wave_seeds,
                        t.stats.wave_admitted ? "searched from as well" : "not searched from (the other seeds started better)")
          : "");
}

// Where the iteration goes: the busiest device's own work, how far it is above the mean (load
// spread), the plan's lower bound above it (ramp: warm-up and cool-down the plan forces), and the
// iteration above that bound (the schedule).
std::string device_work_line(const Problem& problem, const SynthResult& res) {
  std::vector<double> work(problem.devices, 0);
  for (int s = 0; s < problem.num_stages(); ++s) {
    const StageSpec& st = problem.stages[s];
    if (!st.fused_bwd_ms && problem.op_overhead_ms == 0 && !st.recomputes()) {  // every op as long as in the op DAG
      work[st.device] += problem.microbatches * (st.fwd_ms + st.bwd_ms());
      continue;
    }
    for (const Action& a : res.schedule.programs.at(st.device))  // the written schedule's own ops
      if (a.stage == StageId{s} && is_compute(a.type)) work[st.device] += compute_ms(problem, a.stage, a.type);
  }
  const int busiest = static_cast<int>(std::max_element(work.begin(), work.end()) - work.begin());
  double mean = 0;
  for (double w : work) mean += w / problem.devices;
  if (!(work[busiest] > 0)) return "";
  // The lower bound sits below the busiest device's work where that device runs I + W and B is cheaper.
  return fmt::format("  device work   busiest device {} {:.3f} ms, mean {:.3f} ms (+{:.1f}%); lower bound {:+.1f}% over "
                     "the busiest, iteration +{:.1f}% over the lower bound\n",
                     busiest, work[busiest], mean, 100 * (work[busiest] / mean - 1),
                     100 * (res.bound_ms / work[busiest] - 1), 100 * (res.makespan_ms / res.bound_ms - 1));
}

// A note on how the search ended, when it depends on more than the inputs (a signal, the clock).
std::string stop_note(const SynthArgs& a, const ModelSynthesis& m) {
  const bool searched_out = m.tuned && m.tuned->stats.stop_reason == SearchStop::kInterrupted;
  if (g_interrupted.load())
    return fmt::format("  note          interrupted by {}: {}; this is the best plan found before it\n",
                       g_signal == SIGTERM ? "SIGTERM" : "SIGINT",
                       !m.z3_skipped ? "it came while the order was refined (bounds, Z3), which stopped with the best order so far"
                       : searched_out ? "the search stopped early and Z3 did not run"
                                      : "Z3 did not run");
  std::string s;
  if (m.time_limit_reached != TimeLimitReached::kNo)
    s += fmt::format("  note          --time-limit {:g} s reached {}; this is the best schedule found by then, "
                     "checked, and it depends on the speed of the machine it ran on\n",
                     a.time_limit_s, time_limit_reached_note(m.time_limit_reached));
  if (m.tuned && m.tuned->stats.stop_reason == SearchStop::kTimeLimit)
    s += fmt::format("  note          the time limit ended the search, so the plan depends on the speed of the machine it ran on; "
                     "--evaluations N bounds it by candidates instead (this run evaluated {}), the same on any "
                     "machine\n",
                     m.tuned->stats.evaluated);
  return s;
}

// Which stages recompute, when any does: "recompute     full 0-3; selective 5 (R 12.000 ms per
// microbatch in all)".
std::string recompute_line(const Problem& problem) {
  const std::string ranges = recompute_ranges(problem);
  if (ranges.empty()) return "";
  double r_ms = 0;
  for (const StageSpec& st : problem.stages)
    if (st.recomputes()) r_ms += st.recompute_ms;
  return fmt::format("  recompute     {} (R {:.3f} ms per microbatch in all)\n", ranges, r_ms);
}

// Which stages run B although they could split, when any does: "backward      B on stages 0-3
// (cheaper than their I + W; 18.400 ms less per microbatch in all)".
std::string backward_line(const ModelSynthesis& m) {
  const std::string ranges = stage_ranges(m.fused_by_choice);
  if (ranges.empty()) return "";
  double saved_ms = 0;
  for (int s = 0; s < m.problem.num_stages() && s < static_cast<int>(m.fused_by_choice.size()); ++s)
    if (m.fused_by_choice[s])
      saved_ms += compute_ms(m.problem, StageId{s}, OpType::I) + compute_ms(m.problem, StageId{s}, OpType::W) -
                  compute_ms(m.problem, StageId{s}, OpType::B);
  return fmt::format("  backward      B on stages {} (cheaper than their I + W; {:.3f} ms less per microbatch in all)\n",
                     ranges, saved_ms);
}

// The summary printed after a run.
std::string format_summary(const SynthArgs& a, const ModelSynthesis& m) {
  const Problem& problem = m.problem;
  const SynthResult& res = m.result;
  std::string s;
  s += fmt::format("pipesmith synth: model '{}', P = {} devices, M = {} microbatches, {} stages ({} placement), "
                   "partition {}\n",
                   problem.name, problem.devices, problem.microbatches, problem.num_stages(),
                   placement_kind_name(classify_placement(m.placement, problem.devices)), m.plan_desc);
  s += fmt::format("  checker       valid under {} semantics ({})\n", semantics_name(res.report.semantics),
                   res.report.comms_inserted ? "comms inserted by the shared rule" : "with the synthesized comm order");
  std::string proof = res.optimal ? "  (proven optimal)" : "";
  if (res.optimal_up_to_ms > 0)
    proof = fmt::format("  (proven optimal up to {:.4f} ms of time-unit rounding)", res.optimal_up_to_ms);
  s += fmt::format("  iteration     {:.3f} ms{}\n", res.makespan_ms, proof);
  if (problem.mesh.gpus > 0) {  // a pipeline inside a mesh (ir/mesh.h): its throughput at this iteration
    const Throughput t = mesh_throughput(problem.mesh, res.makespan_ms);
    s += fmt::format("  throughput    {:.0f} tokens/s on {} GPUs{}\n", t.tokens_per_s, problem.mesh.gpus,
                     problem.mesh.model_flops_per_token > 0
                         ? fmt::format(", {:.1f} TFLOP/s per GPU, MFU {:.1f}%", t.tflops_per_gpu, 100 * t.mfu)
                         : "");
  }
  s += fmt::format("  lower bound   {:.3f} ms  (gap {:.2f}%)\n", res.bound_ms, 100 * res.gap);
  if (m.tuned) s += search_line(*m.tuned, res.makespan_ms);
  s += recompute_line(problem);
  s += backward_line(m);
  s += device_work_line(problem, res);
  s += stop_note(a, m);
  s += fmt::format("  heuristic     {:.3f} ms  ({})\n", res.heuristic_ms, res.heuristic_policy);
  if (!res.best_baseline.empty())
    s += fmt::format("  best baseline {:.3f} ms  ({})\n", res.best_baseline_ms, res.best_baseline);
  s += fmt::format("  solver        {} in {:.2f} s ({} checks, seed {}, Z3 {})\n", res.solver_status, res.solve_s,
                   res.solve.checks, a.seed, z3_version());
  return s;
}

// Writes the files the flags ask for; `s` gets a line per file written.
Status write_outputs(const SynthArgs& a, const ModelSynthesis& m, std::string& s) {
  const Schedule& out = m.result.schedule;
  if (!a.out_path.empty()) {
    PS_RETURN_IF_ERROR(write_schedule_yaml(out, a.out_path));
    if (a.out_path != "-") s += fmt::format("wrote {}\n", a.out_path);
  }
  if (!a.csv_path.empty()) {
    PS_RETURN_IF_ERROR(check_pytorch_csv_exportable(out));
    PS_RETURN_IF_ERROR(write_text_file(a.csv_path, format_pytorch_csv(out)));
    s += fmt::format("wrote {}\n", a.csv_path);
  }
  if (!a.svg_path.empty()) {
    std::string title = fmt::format("pipesmith synth — {} (P={}, M={})", m.problem.name, m.problem.devices,
                                    m.problem.microbatches);
    PS_RETURN_IF_ERROR(write_text_file(a.svg_path, format_svg(m.result.report, title)));
    s += fmt::format("wrote {}\n", a.svg_path);
  }
  if (!a.smt2_path.empty()) {
    const int windows = m.result.solve.window_dumps;
    s += windows == 1 ? fmt::format("wrote {} (the encoding of the one window Z3 checked)\n",
                                    window_dump_path(a.smt2_path, 1))
         : windows > 1
             ? fmt::format("wrote {} ... {} (the encodings of the windows Z3 checked, in order)\n",
                           window_dump_path(a.smt2_path, 1), window_dump_path(a.smt2_path, windows))
         : m.result.solve.smt2_written
             ? fmt::format("wrote {}\n", a.smt2_path)
             : fmt::format("not written: {} (Z3 built no encoding of this plan; the solver line says why)\n", a.smt2_path);
  }
  return Status::ok();
}

// Every file the flags may have written: -o, --csv, --svg, and for --dump-smt2 PATH both PATH and
// the window encodings beside it (PATH.w1.smt2, ...).
std::vector<OutputPath> synth_outputs(const SynthArgs& a) {
  std::vector<OutputPath> outs = {{a.out_path, "-o"}, {a.csv_path, "--csv"}, {a.svg_path, "--svg"},
                                  {a.smt2_path, "--dump-smt2"}};
  if (a.smt2_path.empty()) return outs;
  const std::vector<std::string> windows = window_dump_paths(a.smt2_path);
  for (size_t n = 0; n < windows.size(); ++n) outs.push_back({windows[n], fmt::format("--dump-smt2, window {}", n + 1)});
  return outs;
}

int run_synth(const SynthArgs& a) {
  const auto t_start = std::chrono::steady_clock::now();
  if (Status st = check_outputs(synth_outputs(a), {a.spec.model_path, a.spec.cluster_path}); !st.is_ok())
    return report_error(st);
  InterruptGuard interrupt_guard;
  const Backstop backstop(a.evaluations > 0 ? std::nullopt
                                            : std::optional(t_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                          std::chrono::duration<double>(a.time_limit_s))),
                          a.time_limit_s);
  auto spec = load_spec_from_flags(a.spec);
  if (!spec.ok()) return report_error(spec.status());
  Result<ModelSynthOptions> options = synth_options(a, *spec, t_start);
  if (!options.ok()) return report_error(options.status());
  g_phase = "synthesizing (search, order, checker)";
  Result<ModelSynthesis> m = synthesize_model(*spec, *options);
  if (m.status().code() == ErrorCode::kInterrupted) {
    std::fprintf(stderr, "synth: %s\n", m.status().message().c_str());
    end_by_signal();
  }
  if (!m.ok()) return report_error(m.status());
  std::string s = format_summary(a, *m);
  g_phase = "writing the outputs";
  Status st = write_outputs(a, *m, s);
  if (!st.is_ok()) return report_error(st);
  std::fputs(s.c_str(), a.out_path == "-" ? stderr : stdout);
  if (g_interrupted.load()) end_by_signal();  // everything is written
  return 0;
}

}  // namespace

Runner add_synth(CLI::App& app) {
  auto args = std::make_shared<SynthArgs>();
  auto* sub = app.add_subcommand(
      "synth",
      "Search partition, placement and order (or keep what --partition/--placement fix), refine the order "
      "with Z3, check the schedule and write it with its certificate");
  sub->footer(
      "Ctrl-C (SIGINT) or SIGTERM during the search stops it: the best plan so far is checked and written, "
      "then the command ends by the signal (status 130 or 143); a second signal quits at once. At --time-limit "
      "(without --evaluations) the steps still running stop the same way and the best schedule so far is checked "
      "and written (exit 0, with a note); exit 1 when no plan fits by then or a step that cannot stop (checking, "
      "writing) runs on past the limit.");
  add_spec_flags(sub, &args->spec);
  sub->add_option("--partition", args->partition,
                  "Fix the partition: balanced, balanced-memory, even (over --stages-per-device x P stages, default P), "
                  "or a Megatron --pipeline-model-parallel-layout string (absent: searched)");
  sub->add_option("--placement", args->placement,
                  "Fix the placement: sequential, interleaved or looped (stage s on device s mod P), "
                  "v or vshape (device d holds d and 2P-1-d) "
                  "or a list of devices per stage, e.g. 0,1,1,0 (absent: searched)");
  sub->add_option("--stages-per-device", args->stages_per_device,
                  "Stages per device V (interleaved: default 2); alone it fixes the placement to interleaved with V");
  sub->add_option("--time-limit", args->time_limit_s, "Wall-clock cap in seconds (default 10; beyond 1e6, inf included: no practical limit): the whole run, search of what --partition/--placement leave open (60 %), then Z3 (the rest); with both given or with --evaluations, the Z3 phase (its share)")
      ->transform(flags::time_limit_s());
  sub->add_option("--evaluations", args->evaluations,
                  "Bound the search of what --partition/--placement leave open by N candidate evaluations instead "
                  "of the clock: the same inputs, seed and N give the same plan on any machine (the search may "
                  "then take longer than --time-limit, which sizes only Z3's share)")
      ->check(flags::option(limits::option::kEvaluations));
  sub->add_option("--rlimit", args->rlimit,
                  "Z3 resource budget (deterministic); default (or 0): Z3's share of the time limit times a fixed rate")
      ->check(flags::option(limits::option::kRlimit));
  sub->add_option("--seed", args->seed, "Random seed of the search's kicks and of Z3 (default 0)")
      ->check(flags::option(limits::option::kSeed));
  sub->add_option("--threads", args->threads,
                  "Z3 contexts run as a portfolio, one thread each, seeds seed, seed+1, ... (default 2)")
      ->check(flags::option(limits::option::kZ3Threads));
  sub->add_option("--search-threads", args->search_threads,
                  "Threads evaluating the search's candidates (default: the machine's hardware threads, at most 16); "
                  "the plan does not depend on it, only how many candidates a time limit allows")
      ->check(flags::option(limits::option::kSearchThreads));
  sub->add_flag("--quiet", args->quiet, "No progress lines on stderr");
  sub->add_option("--cuts", args->cuts,
                  "Where stages may be cut: sublayers (default; also inside a joins_next group) or layers (only "
                  "between whole model layers, as a module splitter can build them; docs/pytorch.md)")
      ->check(CLI::IsMember({"layers", "sublayers"}));
  sub->add_option("--recompute", args->recompute,
                  "Activation recomputation: search (default: the search gives stages selective or full "
                  "recomputation where memory binds and keeps it only where the plan gets shorter; with "
                  "--partition and --placement both given, the plan as given or, when it does not fit, every stage "
                  "selective, then full), none, selective or full (every stage)")
      ->check(CLI::IsMember({"search", "none", "selective", "full"}));
  sub->add_option("-o,--output", args->out_path, "Schedule file to write (pipesmith-schedule/1 YAML; - = stdout)");
  sub->add_option("--csv", args->csv_path, "Also write the checked programs (comms included) as a PyTorch CSV");
  sub->add_option("--svg", args->svg_path, "Also write an SVG Gantt chart of the simulated schedule");
  sub->add_option("--dump-smt2", args->smt2_path, "Write the Z3 problem as SMT-LIB2 (when Z3 runs): the whole plan's encoding to this path, or, where Z3 works on windows of the order, each window's (its target C <= V - 1 included) to PATH.w1.smt2, PATH.w2.smt2, ... (PATH less its .smt2; at most 200)");
  return [args, sub] {
    // The flags as given; the library reads them (synth/plan/plan_spec.h, read_plan_given).
    if (sub->get_option("--partition")->count() > 0) args->plan.partition = args->partition;
    if (sub->get_option("--placement")->count() > 0) args->plan.placement = args->placement;
    if (sub->get_option("--stages-per-device")->count() > 0) args->plan.stages_per_device = args->stages_per_device;
    return run_synth(*args);
  };
}

}  // namespace ps::cli
