// synthesize_model.cpp — see synthesize_model.h.
#include "synth/synthesize_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "ir/limits.h"
#include "ir/units.h"
#include "ir/whole_layers.h"
#include "synth/certify.h"
#include "synth/time_budget.h"
#include "synth/dag/op_dag.h"
#include "synth/plan/megatron_layout.h"
#include "synth/plan/partition.h"
#include "synth/plan/placement.h"
#include "synth/z3/solve.h"
#include "verify/digest.h"

namespace ps {

namespace {

constexpr char kInterruptedWithoutPlan[] = "interrupted before a plan that fits the memory was found: nothing written";

constexpr int kMaxSearchThreads = 16;

// The time limit as a stop flag. Every step after the search is sized by a budget (Z3's share, an
// rlimit) and polls only a stop flag, so a step whose budget outlasts the clock — a large --rlimit,
// a machine slower than the rates the budgets assume, a search that overran its share — would run
// past the limit. A watcher sets `flag()` when the caller's interrupt is set or, for a run the clock
// bounds, at its deadline: the steps under way then stop where a signal would stop them, and the
// best schedule so far is checked and returned. The deadline is kStopMarginS past the time limit,
// so that Z3 ending at its own wall-clock cap (the time limit) ends as "time limit", not stopped.
constexpr double kStopMarginS = 0.1;

class StopAtDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  StopAtDeadline(const std::atomic<bool>* caller, std::optional<Clock::time_point> deadline)
      : caller_(caller), deadline_(deadline), thread_([this] { watch(); }) {}
  ~StopAtDeadline() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  StopAtDeadline(const StopAtDeadline&) = delete;
  StopAtDeadline& operator=(const StopAtDeadline&) = delete;

  const std::atomic<bool>* flag() const { return &stop_; }
  // Moves the deadline earlier by `s` seconds (what checking and writing the chosen plan will take).
  void keep_back(double s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (deadline_ && s > 0)
      *deadline_ -= std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  bool caller_interrupted() const { return caller_ && caller_->load(); }
  // The clock set the flag, the caller's interrupt did not.
  bool time_limit_reached() const { return reached_.load() && !caller_interrupted(); }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(10), [this] { return done_; })) {
      if (caller_interrupted()) stop_.store(true);
      if (deadline_ && !reached_.load() && Clock::now() >= *deadline_) {
        reached_.store(true);
        stop_.store(true);
      }
    }
  }

  const std::atomic<bool>* caller_;
  std::optional<Clock::time_point> deadline_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> reached_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the members above exist
};


// What the search and Z3 get of the time limit.
struct Budget {
  double z3_time_s = 0;   // Z3's wall-clock cap
  double z3_share_s = 0;  // Z3's planned share of the time limit: its rlimit budget
};

// The tuner's options for what `a` leaves open; `desc` gets the fixed part's description.
Result<TuneOptions> tune_options(const Spec& spec, const ModelSynthOptions& a, std::string& desc) {
  TuneOptions to;
  to.seed = a.seed;
  to.threads = a.search_threads > 0 ? a.search_threads : default_search_threads();
  to.interrupt = a.interrupt;
  to.progress = a.search_progress;
  to.recompute = a.recompute;
  if (a.partition) {
    auto part = resolve_partition(spec, *a.partition, a.stages_per_device);
    if (!part.ok()) return part.status();
    to.partition = *part;
    desc = fmt::format("{} (given; placement searched: ", partition_choice_word(*a.partition));
  }
  if (a.placement) {
    auto place = resolve_placement(*a.placement, a.stages_per_device, spec.cluster.devices);
    if (!place.ok()) return place.status();
    to.placement = *place;
    desc = fmt::format("searched for the given placement {} (", placement_choice_word(*a.placement));
  }
  return to;
}

// Searches the plan: the tuner with its share of the time (time_budget::kPlanSearch). Sets `budget` for the Z3
// phase that follows.
Result<TuneResult> search_plan(const Spec& spec, const ModelSynthOptions& a, TuneOptions to, Budget& budget) {
  budget.z3_share_s = (1 - time_budget::kPlanSearch) * a.time_limit_s;
  if (a.evaluations > 0) {
    to.max_evaluations = a.evaluations;
    to.time_limit_s = std::numeric_limits<double>::infinity();
  } else {
    // The time limit counts from the start: reading the inputs included.
    to.time_limit_s = std::max(time_budget::kPlanSearchFloor * a.time_limit_s,
                               time_budget::kPlanSearch * a.time_limit_s - seconds_since(*a.start));
    to.finish_s_per_op = kFinishSecondsPerOp;
  }
  auto tr = cooptimize(spec, to);
  if (!tr.ok() && a.interrupt && a.interrupt->load()) return Status::error(ErrorCode::kInterrupted, kInterruptedWithoutPlan);
  if (!tr.ok()) return tr.status();
  // Z3's wall-clock cap is what is left (its share, with a budget in candidates); its rlimit is its
  // share, which does not depend on how long the search took.
  budget.z3_time_s = a.evaluations > 0 ? budget.z3_share_s : std::max(1.0, a.time_limit_s - seconds_since(*a.start));
  return tr;
}

// Never worse than the tuner's own choice: if its order simulates faster, certify and keep it.
Status keep_faster_tuner_order(const TuneResult& tuned, SynthResult& res) {
  if (!(tuned.simulated_ms + 1e-9 * tuned.simulated_ms < res.makespan_ms)) return Status::ok();
  // synthesize()'s extras stay (the solver block: what Z3 did to this plan's order and bound, which
  // hold for any order of the plan), less the claims about its own order.
  std::map<std::string, std::string> kept = res.schedule.certificate ? res.schedule.certificate->extra
                                                                     : std::map<std::string, std::string>{};
  for (const char* claim : {"note", "output"}) kept.erase(claim);
  const bool order_proven = res.optimal || res.optimal_up_to_ms > 0;
  auto cert = certify_schedule(tuned.schedule, VerifyOptions{});
  if (!cert.ok()) return cert.status();
  res.schedule = std::move(cert->schedule);
  res.report = std::move(cert->report);
  for (auto& [key, value] : kept) res.schedule.certificate->extra.emplace(key, std::move(value));
  res.makespan_ms = res.report.sim ? res.report.sim->makespan_ms : tuned.simulated_ms;
  // The solver block's proof, if any, was for synthesize()'s order; restated for this one
  // (optimal_up_to_ms among them).
  const OptimalityClaim claim = restate_optimality(*res.schedule.certificate, res.makespan_ms, order_proven);
  res.optimal = claim.optimal;
  res.optimal_up_to_ms = claim.up_to_ms;
  res.gap = relative_gap(res.makespan_ms, res.bound_ms);
  res.schedule.generator = "pipesmith synth (tuner order)";
  res.schedule.certificate->extra["gap"] = fmt::format("{:.6f}", res.gap);
  res.schedule.certificate->extra["schedule_method"] = "tuner";
  res.schedule.certificate->extra["output"] = "tuner order: faster in the checker's simulation than the Z3 result";
  return Status::ok();
}

// How the run was budgeted, as the caller gave it (synthesize() wrote Z3's own cap, which depends on
// how long the search took). Counts the clock decided are not written: same inputs, seed and
// budgets, byte-identical files.
void write_run_extras(const ModelSynthOptions& a, ModelSynthesis& out) {
  auto& extra = out.result.schedule.certificate->extra;
  extra["time_limit_s"] = fmt::format("{:g}", a.time_limit_s);
  if (out.z3_skipped) {
    out.result.solver_status =
        out.time_limit_reached != TimeLimitReached::kNo ? "not run: time limit reached" : "not run: interrupted";
    extra["solver_status"] = out.result.solver_status;
  }
  if (out.time_limit_reached != TimeLimitReached::kNo)
    extra["time_limit_reached"] = time_limit_reached_note(out.time_limit_reached);
  if (!out.tuned) return;
  const TuneResult& t = *out.tuned;
  if (a.evaluations > 0) extra["evaluations"] = std::to_string(a.evaluations);
  const SearchStop stop = t.stats.stop_reason;
  extra["search"] = stop == SearchStop::kTimeLimit || stop == SearchStop::kInterrupted
                        ? fmt::format("stop: {}", search_stop_name(stop))
                        : fmt::format("{} candidates, {} rounds, stop: {}", t.stats.evaluated, t.stats.rounds,
                                      search_stop_name(stop));
  extra["global_lower_bound_ms"] = fmt::format("{}", t.lower_bound_ms);
}

// synthesize() on out.problem. A fixed plan (no tuner) takes a.recompute's uniform mode; with
// kSearch, when it does not fit the memory, every stage selective and then full, the first that fits.
Result<SynthResult> synthesize_fixed_or_tuned(const Spec& spec, const ModelSynthOptions& a, ModelSynthesis& out,
                                              const SynthOptions& so) {
  if (out.tuned) return synthesize(out.problem, so, &spec);
  std::vector<RecomputeMode> tries;
  switch (a.recompute) {
    case RecomputeChoice::kNone: tries = {RecomputeMode::kNone}; break;
    case RecomputeChoice::kSelective: tries = {RecomputeMode::kSelective}; break;
    case RecomputeChoice::kFull: tries = {RecomputeMode::kFull}; break;
    case RecomputeChoice::kSearch:
      tries = {RecomputeMode::kNone};
      if (out.problem.memory_gb > 0) tries.insert(tries.end(), {RecomputeMode::kSelective, RecomputeMode::kFull});
      break;
  }
  Result<SynthResult> res = Status::error(ErrorCode::kInfeasible, "no recompute mode tried");
  for (RecomputeMode m : tries) {
    Problem p = out.problem;
    PS_RETURN_IF_ERROR(set_recompute_all(spec, p, m));
    res = synthesize(p, so, &spec);
    if (res.ok()) {
      out.problem = std::move(p);
      return res;
    }
    if (res.status().code() != ErrorCode::kInfeasible) return res;
  }
  return res;
}

}  // namespace

const char* time_limit_reached_note(TimeLimitReached where) {
  switch (where) {
    case TimeLimitReached::kNo: return "";
    case TimeLimitReached::kInSearch:
      return "in the search: its best plan is written as it ordered it, and Z3 did not run";
    case TimeLimitReached::kInRefinement:
      return "while the order was refined: the steps under way (local search, bounds, Z3) stopped with the best "
             "order and bound so far";
  }
  return "";
}

int default_search_threads() {
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(hw, 1, kMaxSearchThreads);
}

Status set_plan_words(ModelSynthOptions& o, const Spec& spec, const PlanGiven& given, std::string_view stages_name) {
  auto fixed = read_plan_given(spec, given, stages_name);
  if (!fixed.ok()) return fixed.status();
  o.partition.reset();
  o.placement.reset();
  if (fixed->partition) {
    auto part = parse_partition_choice(*fixed->partition);
    if (!part.ok()) return part.status();
    o.partition = std::move(*part);
  }
  if (fixed->placement) {
    auto place = parse_placement_choice(*fixed->placement);
    if (!place.ok()) return place.status();
    o.placement = std::move(*place);
  }
  o.stages_per_device = fixed->stages_per_device;
  return Status::ok();
}

Result<ModelSynthesis> synthesize_model(const Spec& spec, const ModelSynthOptions& options) {
  ModelSynthOptions a = options;
  if (!a.start) a.start = std::chrono::steady_clock::now();
  // The options' one check (ir/limits.h's table, ir/units.h): the CLI and the bindings pass them on.
  Result<double> time_limit = read_time_limit_s(a.time_limit_s, "time_limit_s");
  if (!time_limit.ok()) return time_limit.status();
  a.time_limit_s = *time_limit;
  if (a.evaluations != 0)  // 0: bounded by the clock
    PS_RETURN_IF_ERROR(limits::check_option(limits::option::kEvaluations, a.evaluations, "evaluations"));
  PS_RETURN_IF_ERROR(limits::check_option(limits::option::kZ3Threads, a.z3_threads, "z3_threads"));
  if (a.search_threads != 0)  // 0: the hardware threads
    PS_RETURN_IF_ERROR(limits::check_option(limits::option::kSearchThreads, a.search_threads, "search_threads"));
  PS_RETURN_IF_ERROR(limits::check_option(
      limits::option::kRlimit, static_cast<int64_t>(std::min<uint64_t>(a.rlimit, INT64_MAX)), "rlimit"));
  if (a.stages_per_device != 0)  // 0: as the placement has it
    PS_RETURN_IF_ERROR(
        limits::check_option(limits::option::kStagesPerDevice, a.stages_per_device, "stages_per_device"));
  if (a.evaluations > 0 && a.partition && a.placement)
    return Status::bad_input(
        "evaluations budgets the search of the partition and placement, but the options fix both; the order's "
        "budget is rlimit");
  ModelSynthesis out;
  // The stop flag of the steps after the search: the caller's interrupt, or the clock at the time
  // limit (a run bounded by evaluations has no such deadline: the clock ends nothing there). The
  // search itself keeps to its own share of the limit and gets the caller's interrupt alone: until
  // some plan fits the memory its seeds go on (tuner.h), so a short limit is never "nothing fits".
  std::optional<StopAtDeadline::Clock::time_point> deadline;
  if (a.evaluations == 0)
    deadline = *a.start + std::chrono::duration_cast<StopAtDeadline::Clock::duration>(
                              std::chrono::duration<double>(a.time_limit_s + kStopMarginS));
  StopAtDeadline stop(options.interrupt, deadline);
  // With whole_layers the plan is chosen on the model's whole layers (ir/whole_layers.h) and its
  // partition mapped back, so the problem is costed on the model as written.
  std::optional<WholeLayerModel> whole;
  if (a.whole_layers) {
    Result<WholeLayerModel> w = whole_layer_model(spec);
    if (!w.ok()) return w.status();
    whole = std::move(*w);
  }
  const Spec& plan_spec = whole ? whole->spec : spec;
  // 1. The plan: fixed, or searched by the tuner with part of the time.
  Budget budget{a.time_limit_s, a.time_limit_s};
  NamedPlan plan;
  if (!(a.partition && a.placement)) {
    std::string fixed_desc;
    Result<TuneOptions> to = tune_options(plan_spec, a, fixed_desc);
    if (!to.ok()) return to.status();
    Result<TuneResult> tr = search_plan(plan_spec, a, std::move(*to), budget);
    if (!tr.ok()) return tr.status();
    out.tuned = std::move(*tr);
    if (whole) {
      out.tuned->partition = refine_partition(out.tuned->partition, *whole);
      Result<Problem> fine = make_problem(spec, out.tuned->partition, out.tuned->placement);
      if (!fine.ok()) return fine.status();
      std::vector<RecomputeMode> modes;
      for (const StageSpec& st : out.tuned->problem.stages) modes.push_back(st.recompute);
      PS_RETURN_IF_ERROR(set_recompute(spec, *fine, modes));
      for (size_t s = 0; s < fine->stages.size() && s < out.tuned->problem.stages.size(); ++s)
        fine->stages[s].split_backward = fine->stages[s].split_backward && out.tuned->problem.stages[s].split_backward;
      fine->memory_gb = out.tuned->problem.memory_gb;
      out.tuned->problem = *fine;
      out.tuned->schedule.problem = *fine;
      out.tuned->schedule.certificate.reset();
    }
    plan.partition = out.tuned->partition;
    plan.placement = out.tuned->placement;
    plan.desc = fixed_desc.empty() ? fmt::format("searched ({})", out.tuned->description)
                                   : fmt::format("{}{})", fixed_desc, out.tuned->description);
  } else {
    Result<NamedPlan> p = resolve_plan(plan_spec, *a.partition, *a.placement, a.stages_per_device);
    if (!p.ok()) return p.status();
    plan = std::move(*p);
    if (whole) plan.partition = refine_partition(plan.partition, *whole);
  }
  Result<Problem> problem = out.tuned ? Result<Problem>(out.tuned->problem) : make_problem(spec, plan.partition, plan.placement);
  if (!problem.ok()) return problem.status();
  out.problem = std::move(*problem);
  out.placement = plan.placement;
  if (out.tuned) {
    Result<Problem> as_given = make_problem(spec, plan.partition, plan.placement);
    if (!as_given.ok()) return as_given.status();
    for (int s = 0; s < out.problem.num_stages(); ++s)
      out.fused_by_choice.push_back(as_given->stages[s].split_backward && !out.problem.stages[s].split_backward);
  }
  out.plan_desc = plan.desc;

  // 2. The order of the chosen plan: synthesize() with Z3's share (the smallest budget after an
  //    interrupt: Z3 is skipped and the heuristic runs one policy).
  SynthOptions so;
  so.time_limit_s = budget.z3_time_s;
  so.rlimit = a.rlimit ? a.rlimit
                       : static_cast<uint64_t>(budget.z3_share_s * static_cast<double>(rlimit_per_second()) *
                                               std::max(1, a.z3_threads));
  // What follows the steps the flag stops — decoding, checking (twice where the tuner's order is kept)
  // and writing — takes about kFinishSecondsPerOp per op of the plan: the deadline moves that much
  // earlier, as the search and Z3's windows keep it back from their own caps.
  stop.keep_back(kFinishSecondsPerOp * static_cast<double>(default_dag_ops(out.problem)));
  a.interrupt = stop.flag();
  // A search that ended past the limit leaves Z3 no time: it does not start.
  const bool searched_past_limit = out.tuned && a.evaluations == 0 && seconds_since(*a.start) >= a.time_limit_s;
  // The caller's interrupt is read here too: the watcher copies it into the flag only every 10 ms, and
  // a search it stopped can return sooner.
  out.z3_skipped = a.interrupt->load() || stop.caller_interrupted() || searched_past_limit;
  if (out.z3_skipped && !stop.caller_interrupted())
    out.time_limit_reached = out.tuned ? TimeLimitReached::kInSearch : TimeLimitReached::kInRefinement;
  if (out.z3_skipped) {
    so.time_limit_s = 0.01;
    so.rlimit = 1;
  }
  so.seed = a.seed;
  so.contexts = a.z3_threads;
  so.interrupt = a.interrupt;
  so.dump_smt2 = a.dump_smt2;
  so.progress = a.solver_progress;
  if (out.tuned) so.seed_schedule = out.tuned->schedule;
  Result<SynthResult> res = synthesize_fixed_or_tuned(spec, a, out, so);
  if (!res.ok()) return res.status();
  out.result = std::move(*res);

  if (!out.z3_skipped && stop.time_limit_reached()) out.time_limit_reached = TimeLimitReached::kInRefinement;

  // 3. The tuner's order where it is faster, and the certificate's record of the budgets.
  if (out.tuned) PS_RETURN_IF_ERROR(keep_faster_tuner_order(*out.tuned, out.result));
  write_run_extras(a, out);
  seal_certificate(out.result.schedule);
  return out;
}

}  // namespace ps
