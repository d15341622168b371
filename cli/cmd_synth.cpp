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
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "cli/commands.h"
#include "cli/spec_flags.h"
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
  int search_threads = 0;  // 0: the machine's hardware threads, at most kMaxSearchThreads
  bool quiet = false;
  std::string out_path, csv_path, svg_path, smt2_path;
  // Set from the parsed flags: what the flags fix; the rest is searched (the tuner).
  // --placement or --stages-per-device fix the placement (--stages-per-device alone means
  // --placement interleaved); --partition fixes the partition.
  bool fix_partition = false;
  bool fix_placement = false;
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

// Candidate evaluations run in parallel; the result does not depend on how many (synth/tuner/parallel_map.h).
constexpr int kMaxSearchThreads = 16;
int search_threads(const SynthArgs& a) {
  if (a.search_threads > 0) return a.search_threads;
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(hw, 1, kMaxSearchThreads);
}

// After an interrupt: flush and end by the signal, as the shell expects of an interrupted command.
[[noreturn]] void end_by_signal() {
  std::fflush(nullptr);
  const int sig = g_signal != 0 ? static_cast<int>(g_signal) : SIGINT;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
  std::_Exit(128 + sig);  // not reached
}

struct Plan {
  Partition partition;
  std::vector<int> placement;
  std::string desc;
};

// --placement words → placement.h names.
std::string placement_name(const std::string& p) {
  if (p == "interleaved" || p == "looped") return "looped";
  if (p == "v" || p == "vshape" || p == "v-shape") return "vshape";
  return p;
}

// The stage count the placement flags name (sequential: P, interleaved: V·P, v: 2P, a list: its length).
Result<int> placement_stage_count(const SynthArgs& a, int P) {
  const std::string pl = placement_name(a.placement);
  if (pl == "sequential") {
    if (a.stages_per_device > 1) {
      return Status::bad_input(fmt::format(
          "--placement sequential puts one stage on each device; for {} stages per device use --placement "
          "interleaved or v",
          a.stages_per_device));
    }
    return P;
  }
  if (pl == "looped") return (a.stages_per_device ? a.stages_per_device : 2) * P;
  if (pl == "vshape") {
    if (a.stages_per_device != 0 && a.stages_per_device != 2)
      return Status::bad_input("--placement v holds exactly 2 stages per device");
    return 2 * P;
  }
  int S = 1;  // an explicit list: its length is the stage count
  for (char ch : pl) S += ch == ',';
  return S;
}

// The placement the flags fix, over the stage count they name.
Result<std::vector<int>> fixed_placement(const SynthArgs& a, int P) {
  Result<int> S = placement_stage_count(a, P);
  if (!S.ok()) return S.status();
  return parse_placement(placement_name(a.placement), *S, P);
}

bool is_layout(const std::string& partition) {
  return !is_partition_method_name(partition) && looks_like_megatron_layout(partition);
}

// The partition --partition fixes when the placement is searched: a layout's own stages, or the
// named method over --stages-per-device × P stages (default P).
// --partition read as a Megatron layout string: its stages and its own (looped) placement.
Result<LayoutPlan> layout_plan(const Spec& spec, const std::string& text) {
  auto layout = parse_megatron_layout(text);
  if (!layout.ok()) return layout.status();
  return apply_megatron_layout(*layout, spec.model, spec.cluster.devices);
}

Result<Partition> fixed_partition(const Spec& spec, const SynthArgs& a) {
  const int P = spec.cluster.devices;
  if (is_layout(a.partition)) {
    auto lp = layout_plan(spec, a.partition);
    if (!lp.ok()) return lp.status();
    return lp->partition;
  }
  return partition_by_name(spec, (a.stages_per_device ? a.stages_per_device : 1) * P, a.partition);
}

// Both fixed.
Result<Plan> make_plan(const Spec& spec, const SynthArgs& a) {
  const int P = spec.cluster.devices;
  const std::string pl = placement_name(a.placement);
  Plan plan;
  if (is_layout(a.partition)) {
    auto lp = layout_plan(spec, a.partition);
    if (!lp.ok()) return lp.status();
    plan.partition = lp->partition;
    const int S = static_cast<int>(plan.partition.size());
    if (a.stages_per_device != 0 && a.stages_per_device * P != S) {
      return Status::bad_input(fmt::format("layout \"{}\" has {} stages, but --stages-per-device {} on {} devices needs {}",
                                           a.partition, S, a.stages_per_device, P, a.stages_per_device * P));
    }
    if (a.placement == "sequential" && S != P) {
      plan.placement = lp->placement;  // the layout's own (looped) placement
    } else {
      auto place = parse_placement(pl, S, P);
      if (!place.ok()) return place.status();
      plan.placement = *place;
    }
    plan.desc = fmt::format("Megatron layout \"{}\"", a.partition);
    return plan;
  }
  Result<int> S = placement_stage_count(a, P);
  if (!S.ok()) return S.status();
  auto part = partition_by_name(spec, *S, a.partition);
  if (!part.ok()) return part.status();
  plan.partition = *part;
  auto place = parse_placement(pl, *S, P);
  if (!place.ok()) return place.status();
  plan.placement = *place;
  plan.desc = a.partition;
  return plan;
}

// True when loading the Z3 encoding of a typical plan the tuner could choose would take more than
// `z3_seconds` (solve()'s estimate, on the no-queue DAG Z3 starts from): the given partition, or
// the balanced one over the given placement's stage count or min(2P, layers) stages (the tuner's
// winners have 2P or more stages on all but small models); the given placement, or looped. Z3 then
// skips the plan the tuner chooses almost surely, and its share of the time is better spent on the
// search. A plan whose ops are too many for solve() to size its encoding at all
// (DeviceReach::affordable) is hopeless without building its DAG. A heuristic for sharing the time
// only: correctness never depends on it.
bool z3_cannot_load_typical_plan(const Spec& spec, const TuneOptions& to, double z3_seconds) {
  const int P = spec.cluster.devices;
  const int S = to.partition ? static_cast<int>(to.partition->size())
                : to.placement ? static_cast<int>(to.placement->size())
                               : std::min(2 * P, static_cast<int>(spec.model.layers.size()));
  Result<Partition> part = to.partition ? Result<Partition>(*to.partition) : balanced_partition(spec, S, PartitionCost::kTime);
  if (!part.ok()) return false;
  auto problem = make_problem(spec, *part, to.placement ? *to.placement : placement_looped(S, P));
  if (!problem.ok()) return false;
  if (!DeviceReach::affordable(default_dag_ops(*problem))) return true;  // never built: no DAG needed
  DagOptions o;
  o.comm_streams = false;
  auto dag = build_op_dag(*problem, o);
  return dag.ok() && encoding_load_seconds(*dag) > z3_seconds;
}

// Seconds per op of the chosen plan's DAG that the steps after the search take — the tuner's
// checker run, synthesize() (DAG, a portfolio sized to what is left, bounds, the checker) and
// writing the file — kept back from the search (one core takes 11.6–13.3 µs per op on plans of
// 3·10^5–5·10^5 ops). Only plans of 10^5+ ops notice it.
constexpr double kFinishSecondsPerOp = 15e-6;

int run_synth(const SynthArgs& a) {
  const auto t_start = std::chrono::steady_clock::now();
  auto seconds_used = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(); };
  if (!(a.time_limit_s > 0)) return report_error(Status::bad_input("--time-limit must be > 0 seconds"));
  for (const auto& [path, flag] : {std::pair{&a.out_path, "-o"}, std::pair{&a.csv_path, "--csv"},
                                    std::pair{&a.svg_path, "--svg"}, std::pair{&a.smt2_path, "--dump-smt2"}}) {
    Status st = check_writable(*path, flag);
    if (!st.is_ok()) return report_error(st);
  }
  InterruptGuard interrupt_guard;
  auto spec = load_spec_from_flags(a.spec);
  if (!spec.ok()) return report_error(spec.status());
  if (a.stages_per_device < 0) return report_error(Status::bad_input("--stages-per-device must be >= 1"));
  if (a.evaluations > 0 && a.fix_partition && a.fix_placement)
    return report_error(Status::bad_input(
        "--evaluations budgets the search of the partition and placement, but --partition and --placement fix "
        "both; the order's budget is --rlimit"));
  // Co-optimization: the tuner picks what the flags leave open (partition, placement or both, and a
  // heuristic order) with part of the time; Z3 refines the order of the chosen plan with the rest.
  std::optional<TuneResult> tuned;
  double z3_time_s = a.time_limit_s;
  double z3_share_s = a.time_limit_s;  // Z3's planned share of the time limit: its rlimit budget
  std::string fixed_desc;
  if (!(a.fix_partition && a.fix_placement)) {
    TuneOptions to;
    to.seed = a.seed;
    to.threads = search_threads(a);
    to.interrupt = &g_interrupted;
    if (a.fix_partition) {
      auto part = fixed_partition(*spec, a);
      if (!part.ok()) return report_error(part.status());
      to.partition = *part;
      fixed_desc = fmt::format("{} (given; placement searched: ", a.partition);
    }
    if (a.fix_placement) {
      auto place = fixed_placement(a, spec->cluster.devices);
      if (!place.ok()) return report_error(place.status());
      to.placement = *place;
      fixed_desc = fmt::format("searched for the given placement {} (", a.placement);
    }
    // The tuner gets 60 % of the time and Z3 the rest, unless Z3 could not load the encoding of a
    // typical plan in that rest: then the tuner gets 90 %.
    const bool z3_hopeless = z3_cannot_load_typical_plan(*spec, to, 0.4 * a.time_limit_s);
    const double search_share = z3_hopeless ? 0.9 : 0.6;
    z3_share_s = (1 - search_share) * a.time_limit_s;
    if (a.evaluations > 0) {
      // A budget in candidates: the clock ends neither the search nor an evaluation, so the plan is
      // the same on any machine; the time limit sizes Z3 alone (its share, above).
      to.max_evaluations = a.evaluations;
      to.time_limit_s = std::numeric_limits<double>::infinity();
    } else {
      // The time limit counts from the start: reading the inputs and the check above included.
      to.time_limit_s = std::max(0.1 * a.time_limit_s, search_share * a.time_limit_s - seconds_used());
      to.finish_s_per_op = kFinishSecondsPerOp;
    }
    if (z3_hopeless && !a.quiet && a.evaluations > 0)
      std::fprintf(stderr, "synth: Z3 cannot load an encoding of this size in %.1f s: it gets 10 %% of the time limit\n",
                   0.4 * a.time_limit_s);
    else if (z3_hopeless && !a.quiet)
      std::fprintf(stderr,
                   "synth: Z3 cannot load an encoding of this size in %.1f s: the search gets 90 %% of the time "
                   "limit (%.1f s of what is left)\n",
                   0.4 * a.time_limit_s, to.time_limit_s);
    if (!a.quiet) {
      to.progress = [](const TuneProgress& p) {
        if (p.best_ms > 0) {
          std::fprintf(stderr, "synth: [%s] %d candidates (%d fit), best %.3f ms, bound %.3f ms, gap %.2f%%, %.1f s  %s\n",
                       p.phase.c_str(), p.evaluated, p.feasible, p.best_ms, p.lower_bound_ms, 100 * p.gap,
                       p.elapsed_s, p.best_desc.c_str());
        } else {
          std::fprintf(stderr, "synth: [%s] %d candidates, none fits the memory yet, bound %.3f ms, %.1f s\n",
                       p.phase.c_str(), p.evaluated, p.lower_bound_ms, p.elapsed_s);
        }
      };
    }
    auto tr = cooptimize(*spec, to);
    if (!tr.ok() && g_interrupted.load()) {
      std::fprintf(stderr, "synth: interrupted before a plan that fits the memory was found: nothing written\n");
      end_by_signal();
    }
    if (!tr.ok()) return report_error(tr.status());
    tuned = std::move(*tr);
    // Z3's wall-clock cap is what is left (its share, with a budget in candidates); its rlimit
    // (below) is its share, which does not depend on how long the search took.
    z3_time_s = a.evaluations > 0 ? z3_share_s : std::max(1.0, a.time_limit_s - seconds_used());
  }
  Result<Plan> plan = Plan{};
  if (tuned) {
    plan->partition = tuned->partition;
    plan->placement = tuned->placement;
    plan->desc = fixed_desc.empty() ? fmt::format("searched ({})", tuned->description)
                                    : fmt::format("{}{})", fixed_desc, tuned->description);
  } else {
    plan = make_plan(*spec, a);
    if (!plan.ok()) return report_error(plan.status());
  }
  auto problem = tuned ? Result<Problem>(tuned->problem) : make_problem(*spec, plan->partition, plan->placement);
  if (!problem.ok()) return report_error(problem.status());

  SynthOptions so;
  so.time_limit_s = z3_time_s;
  so.rlimit = a.rlimit ? a.rlimit
                       : static_cast<uint64_t>(z3_share_s * static_cast<double>(rlimit_per_second()) *
                                               std::max(1, a.threads));
  const bool z3_skipped = g_interrupted.load();
  if (z3_skipped) {  // the smallest budget: Z3 is skipped and the heuristic runs one policy
    so.time_limit_s = 0.01;
    so.rlimit = 1;
  }
  so.seed = a.seed;
  so.contexts = a.threads;
  so.interrupt = &g_interrupted;
  so.dump_smt2 = a.smt2_path;
  if (!a.quiet) so.progress = [](const std::string& line) { std::fprintf(stderr, "synth: %s\n", line.c_str()); };
  auto res = synthesize(*problem, so, &*spec);
  if (!res.ok()) return report_error(res.status());
  // Never worse than the tuner's own choice: if its order simulates faster, certify and keep it.
  if (tuned && tuned->simulated_ms + 1e-9 * tuned->simulated_ms < res->makespan_ms) {
    auto cert = certify_schedule(tuned->schedule, VerifyOptions{});
    if (!cert.ok()) return report_error(cert.status());
    res->schedule = std::move(cert->schedule);
    res->report = std::move(cert->report);
    res->makespan_ms = res->report.sim ? res->report.sim->makespan_ms : tuned->simulated_ms;
    res->optimal = false;
    res->gap = res->bound_ms > 0 ? (res->makespan_ms - res->bound_ms) / res->bound_ms : 0;
    res->schedule.generator = "pipesmith synth (tuner order)";
    res->schedule.certificate->extra["optimal"] = "false";
    res->schedule.certificate->extra["output"] = "tuner order: faster in the checker's simulation than the Z3 result";
  }
  // How it was run, as the user gave it (synthesize() wrote Z3's own cap, which depends on how
  // long the search took). Counts the clock decided are printed, not written: same inputs, seed
  // and budgets, byte-identical files.
  res->schedule.certificate->extra["time_limit_s"] = fmt::format("{:g}", a.time_limit_s);
  if (z3_skipped) {
    res->solver_status = "not run: interrupted";
    res->schedule.certificate->extra["solver_status"] = res->solver_status;
  }
  if (tuned) {
    if (a.evaluations > 0) res->schedule.certificate->extra["evaluations"] = std::to_string(a.evaluations);
    res->schedule.certificate->extra["search"] =
        tuned->stats.stop_reason == "time limit" || tuned->stats.stop_reason == "interrupted"
            ? "stop: " + tuned->stats.stop_reason
            : fmt::format("{} candidates, {} rounds, stop: {}", tuned->stats.evaluated, tuned->stats.rounds,
                          tuned->stats.stop_reason);
    res->schedule.certificate->extra["global_lower_bound_ms"] = fmt::format("{}", tuned->lower_bound_ms);
  }

  FILE* info = a.out_path == "-" ? stderr : stdout;
  const Schedule& out = res->schedule;
  std::string s;
  s += fmt::format("pipesmith synth: model '{}', P = {} devices, M = {} microbatches, {} stages ({} placement), "
                   "partition {}\n",
                   problem->name, problem->devices, problem->microbatches, problem->num_stages(),
                   placement_kind_name(classify_placement(plan->placement, problem->devices)), plan->desc);
  s += fmt::format("  checker       valid under {} semantics ({})\n", semantics_name(res->report.semantics),
                   res->report.comms_inserted ? "comms inserted by the shared rule" : "with the synthesized comm order");
  std::string proof = res->optimal ? "  (proven optimal)" : "";
  if (res->optimal_up_to_ms > 0)
    proof = fmt::format("  (proven optimal up to {:.4f} ms of time-unit rounding)", res->optimal_up_to_ms);
  s += fmt::format("  iteration     {:.3f} ms{}\n", res->makespan_ms, proof);
  s += fmt::format("  lower bound   {:.3f} ms  (gap {:.2f}%)\n", res->bound_ms, 100 * res->gap);
  if (tuned)
    s += fmt::format("  global bound  {:.3f} ms  (any partition and placement; gap {:.2f}%)  search: {} candidates in {:.1f} s, {}{}{}{}\n",
                     tuned->lower_bound_ms, tuned->lower_bound_ms > 0 ? 100 * (res->makespan_ms / tuned->lower_bound_ms - 1) : 0.0,
                     tuned->stats.evaluated, tuned->stats.total_s, tuned->stats.stop_reason,
                     tuned->stats.pruned > 0 ? fmt::format("; {} moves skipped by their plan floor", tuned->stats.pruned) : "",
                     tuned->stats.floor_portfolios > 0
                         ? fmt::format("; {} low-floor plans given the search portfolio", tuned->stats.floor_portfolios)
                         : "",
                     tuned->stats.paced_seeds > 0
                         ? fmt::format("; {} paced-front seeds, {}", tuned->stats.paced_seeds,
                                       tuned->stats.paced_admitted ? "admitted as starts" : "not admitted (another seed started better)")
                         : "");
  {
    // Where the iteration goes: the busiest device's own work, how far it is above the mean (load
    // spread), the plan's lower bound above it (ramp: warm-up and cool-down the plan forces), and
    // the iteration above that bound (the schedule).
    std::vector<double> work(problem->devices, 0);
    for (const StageSpec& st : problem->stages)
      work[st.device] += problem->microbatches * (st.fwd_ms + st.bwd_ms());
    const int busiest = static_cast<int>(std::max_element(work.begin(), work.end()) - work.begin());
    double mean = 0;
    for (double w : work) mean += w / problem->devices;
    if (work[busiest] > 0)
      s += fmt::format("  device work   busiest device {} {:.3f} ms, mean {:.3f} ms (+{:.1f}%); lower bound +{:.1f}% over "
                       "the busiest, iteration +{:.1f}% over the lower bound\n",
                       busiest, work[busiest], mean, 100 * (work[busiest] / mean - 1),
                       100 * (res->bound_ms / work[busiest] - 1), 100 * (res->makespan_ms / res->bound_ms - 1));
  }
  if (g_interrupted.load())
    s += fmt::format("  note          interrupted by {}: {}; this is the best plan found before it\n",
                     g_signal == SIGTERM ? "SIGTERM" : "SIGINT",
                     !z3_skipped ? "it came while the order was refined (bounds, Z3), which stopped with the best order so far"
                     : tuned && tuned->stats.stop_reason == "interrupted" ? "the search stopped early and Z3 did not run"
                                                                          : "Z3 did not run");
  else if (tuned && tuned->stats.stop_reason == "time limit")
    s += fmt::format("  note          the time limit ended the search, so the plan depends on this machine's speed; "
                     "--evaluations N bounds it by candidates instead (this run evaluated {}), the same on any "
                     "machine\n",
                     tuned->stats.evaluated);
  s += fmt::format("  heuristic     {:.3f} ms  ({})\n", res->heuristic_ms, res->heuristic_policy);
  if (!res->best_baseline.empty())
    s += fmt::format("  best baseline {:.3f} ms  ({})\n", res->best_baseline_ms, res->best_baseline);
  s += fmt::format("  solver        {} in {:.2f} s ({} checks, seed {}, Z3 {})\n", res->solver_status, res->solve_s,
                   res->solve.checks, a.seed, z3_version());
  if (!a.out_path.empty()) {
    Status st = a.out_path == "-" ? write_text_file("-", format_schedule_yaml(out)) : write_schedule_yaml(out, a.out_path);
    if (!st.is_ok()) return report_error(st);
    if (a.out_path != "-") s += fmt::format("wrote {}\n", a.out_path);
  }
  if (!a.csv_path.empty()) {
    Status st = write_text_file(a.csv_path, format_pytorch_csv(out));
    if (!st.is_ok()) return report_error(st);
    s += fmt::format("wrote {}\n", a.csv_path);
  }
  if (!a.svg_path.empty()) {
    std::string title = fmt::format("pipesmith synth — {} (P={}, M={})", problem->name, problem->devices,
                                    problem->microbatches);
    Status st = write_text_file(a.svg_path, format_svg(res->report, title));
    if (!st.is_ok()) return report_error(st);
    s += fmt::format("wrote {}\n", a.svg_path);
  }
  if (!a.smt2_path.empty()) {
    s += res->solve.smt2_written
             ? fmt::format("wrote {}\n", a.smt2_path)
             : fmt::format("not written: {} (Z3 built no encoding of this plan; the solver line says why)\n", a.smt2_path);
  }
  std::fputs(s.c_str(), info);
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
      "then the command ends by the signal (status 130 or 143); a second signal quits at once.");
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
  sub->add_option("--time-limit", args->time_limit_s, "Wall-clock cap in seconds (default 10): the whole run, search of what --partition/--placement leave open (60 %, or 90 % when Z3 could not load a plan this size), then Z3; with both given or with --evaluations, the Z3 phase (its share)");
  sub->add_option("--evaluations", args->evaluations,
                  "Bound the search of what --partition/--placement leave open by N candidate evaluations instead "
                  "of the clock: the same inputs, seed and N give the same plan on any machine (the search may "
                  "then take longer than --time-limit, which sizes only Z3's share)")
      ->check(CLI::Range(1, 1000000000));
  sub->add_option("--rlimit", args->rlimit,
                  "Z3 resource budget (deterministic); default: Z3's share of the time limit times a fixed rate");
  sub->add_option("--seed", args->seed, "Random seed of the search's kicks and of Z3 (default 0)");
  sub->add_option("--threads", args->threads,
                  "Z3 contexts run as a portfolio, one thread each, seeds seed, seed+1, ... (default 2)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--search-threads", args->search_threads,
                  "Threads evaluating the search's candidates (default: the machine's hardware threads, at most 16); "
                  "the plan does not depend on it, only how many candidates a time limit allows")
      ->check(CLI::Range(1, 256));
  sub->add_flag("--quiet", args->quiet, "No progress lines on stderr");
  sub->add_option("-o,--output", args->out_path, "Schedule file to write (pipesmith-schedule/1 YAML; - = stdout)");
  sub->add_option("--csv", args->csv_path, "Also write the checked programs (comms included) as a PyTorch CSV");
  sub->add_option("--svg", args->svg_path, "Also write an SVG Gantt chart of the simulated schedule");
  sub->add_option("--dump-smt2", args->smt2_path, "Write the Z3 problem as SMT-LIB2 (when Z3 runs)");
  return [args, sub] {
    if (sub->get_option("--stages-per-device")->count() > 0 && args->stages_per_device < 1) args->stages_per_device = -1;
    args->fix_partition = sub->get_option("--partition")->count() > 0;
    const bool placement_given = sub->get_option("--placement")->count() > 0;
    args->fix_placement = placement_given || sub->get_option("--stages-per-device")->count() > 0;
    if (!placement_given && args->stages_per_device > 1 && !is_layout(args->partition))
      args->placement = "interleaved";  // --stages-per-device V alone: V stages per device, looped
    return run_synth(*args);
  };
}

}  // namespace ps::cli
