// synthesize.cpp — the straight script of synthesize.h.
#include "synth/synthesize.h"

#include <fmt/format.h>
#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "synth/certify.h"
#include "synth/baselines/baselines.h"
#include "synth/dag/schedule_order.h"
#include "synth/dag/list_scheduler.h"
#include "synth/dag/zb_greedy.h"
#include "synth/dag/order_polish.h"
#include "synth/z3/infeasible.h"
#include "synth/z3/window.h"
#include "synth/bounds/dag_bounds.h"
#include "synth/bounds/smt_bound.h"
#include "synth/dag/op_dag.h"
#include "synth/time_budget.h"
#include "verify/digest.h"

namespace ps {

std::string z3_version() { return Z3_get_full_version(); }

namespace {

using Clock = std::chrono::steady_clock;

// The most the destructive bound's search may take, in seconds of the budget (see step 3b).
constexpr double kBoundSearchMaxS = 2.0;

// The one-resource relaxations' share of one context's Z3 budget (see step 3c).
constexpr double kSmtBoundShare = time_budget::kSmtBound;

// List-scheduling steps (one op placed by one policy) per second assumed when sizing the heuristic's
// portfolio to the budget: about what one core does with the lean policies on a plan of 3·10^5 ops
// (1.9 M/s); the whole portfolio, where many policies are abandoned early, goes faster (about 6 M/s).
constexpr double kListStepsPerSecond = 2e6;

// The heuristic's options for this DAG and budget. Its whole portfolio (about 40 policies, 32
// perturbations, justification) takes about (policies × ops) steps; where that exceeds half the
// budget (at least 1 s of it) the portfolio is trimmed — the lean policies and fewer perturbations,
// or the first policy alone — so that a plan of 10^5+ ops keeps to the time limit (Gemma-like at
// P = 4, M = 4096: the whole portfolio alone took 5 s of a 5 s limit). Deterministic: sizes and
// budget only.
HeuristicOptions sized_heuristic(const OpDag& dag, double budget_s) {
  HeuristicOptions ho;
  const double affordable = std::max(0.5 * budget_s, 1.0) * kListStepsPerSecond / std::max(1, dag.num_ops());
  if (affordable >= portfolio_runs(dag, ho)) return ho;
  ho.lean = true;
  ho.random_restarts = 0;
  const int lean = portfolio_runs(dag, ho);
  if (affordable >= lean) {
    ho.random_restarts = std::min(HeuristicOptions{}.random_restarts, static_cast<int>(affordable) - lean);
  } else {
    ho.portfolio = false;
    ho.justify_rounds = 1;
  }
  return ho;
}

std::string fmt_ms(double ms) { return fmt::format("{:.4f}", ms); }

struct Seed {
  TimedOrder order;
  std::string source;
  // The best order of each other source (heuristic, baselines, zb-greedy) that lost to `order`:
  // starting points of their own for the local search (step 3d).
  std::vector<std::pair<TimedOrder, std::string>> others;
  std::optional<CertifiedSchedule> best_baseline;  // checked, for the never-worse guarantee
  // Where not one pass of the local search's one-op moves fits its share (step 3d): the incumbent
  // after the critical chain's block moves, set aside. Z3 starts from `order` with the budget it
  // has without them, and this order replaces Z3's result when shorter (take_set_aside).
  std::optional<TimedOrder> set_aside;
};

// A candidate order: the new incumbent when it is shorter, else kept among the others.
void offer_seed(TimedOrder t, std::string source, Seed& seed) {
  if (t.makespan < seed.order.makespan) {
    if (!seed.order.order.empty()) seed.others.emplace_back(std::move(seed.order), std::move(seed.source));
    seed.order = std::move(t);
    seed.source = std::move(source);
  } else {
    seed.others.emplace_back(std::move(t), std::move(source));
  }
}

// Every baseline whose shape fits: its checker makespan for the report, and (when it respects the
// DAG, symmetry edges included, and the caps) its order as a candidate seed.
void try_baselines(const Problem& problem, const OpDag& dag, SynthResult& out, Seed& seed) {
  for (BaselineKind kind : all_baseline_kinds()) {
    if (!check_baseline_shape(problem, kind).is_ok()) continue;
    Result<Schedule> b = make_baseline(problem, kind);
    if (!b.ok()) continue;
    SynthResult::BaselineTime bt;
    bt.name = baseline_name(kind);
    VerifyOptions vo;
    vo.semantics = Semantics::kRendezvous;
    Result<CertifiedSchedule> c = certify_schedule(*b, vo);
    if (!c.ok()) {
      bt.note = c.status().message();
      out.baselines.push_back(bt);
      continue;
    }
    bt.makespan_ms = c->report.sim ? c->report.sim->makespan_ms : 0;
    out.baselines.push_back(bt);
    if (bt.makespan_ms > 0 && (out.best_baseline_ms == 0 || bt.makespan_ms < out.best_baseline_ms)) {
      out.best_baseline_ms = bt.makespan_ms;
      out.best_baseline = bt.name;
      seed.best_baseline = std::move(c).value();
    }
    Result<std::vector<std::vector<int>>> order = schedule_to_dag_order(dag, *b);
    if (!order.ok()) continue;
    Result<TimedOrder> t = evaluate_order(dag, std::move(order).value(), EdgeSet::kAll, true);
    if (t.ok()) offer_seed(std::move(t).value(), fmt::format("baseline {}", bt.name), seed);
  }
}

// The timing-aware greedy orders of zb_greedy.h (Zero Bubble's way of building an order) as seeds,
// where their portfolio fits kZbGreedyShare of the budget (at least of 1 s) at kZbGreedyOpsPerSecond
// (ops placed per second by one policy: its rule rescans the device's available ops, about ten
// times the list scheduler's cost per op). Sizes and budget only: deterministic.
constexpr double kZbGreedyShare = 0.1;
constexpr double kZbGreedyOpsPerSecond = 4e5;

void try_zb_greedy(const OpDag& dag, double budget_s, const std::atomic<bool>* interrupt, Seed& seed) {
  const double affordable = kZbGreedyShare * std::max(budget_s, 1.0) * kZbGreedyOpsPerSecond;
  if (affordable < static_cast<double>(zb_greedy_policies().size()) * dag.num_ops()) return;
  Result<ZbGreedyResult> z = zb_greedy_portfolio(dag, interrupt);
  if (z.ok()) offer_seed(std::move(z->best), z->policy, seed);
}

// The caller's order (the plan search's) as the seed when it is shorter on the DAG.
void try_seed_schedule(const OpDag& dag, const Schedule& given, Seed& seed) {
  Result<std::vector<std::vector<int>>> order = schedule_to_dag_order(dag, given);
  if (!order.ok()) return;
  Result<TimedOrder> t = evaluate_order(dag, std::move(order).value(), EdgeSet::kAll, true);
  if (t.ok()) offer_seed(std::move(t).value(), "tuner", seed);
}

// 1. The op DAG. The memory limit was checked first, so a DAG that finds it infeasible is our bug.
Result<OpDag> build_dag(const Problem& problem, const DagOptions& options = {}) {
  Result<OpDag> dr = build_op_dag(problem, options);
  if (!dr.ok() && dr.status().code() == ErrorCode::kInfeasible) {
    return Status::error(ErrorCode::kRuntime,
                         fmt::format("internal error: the memory limit looked feasible, but {}", dr.status().message()));
  }
  return dr;
}

// 1b. The DAG bounds are proven on: with a memory cap and memory numbers that are not whole units,
// the op DAG's safe rounding (its caps stricter than the exact ones) would prove bounds of a
// stricter problem, so they are proven on the same plan rounded the other way (op_dag.h,
// MemoryRounding::kRelaxed: same op ids and time units). Otherwise none is built.
Result<std::optional<OpDag>> build_proof_dag(const Problem& problem, const OpDag& dag) {
  if (dag.bounds_are_proofs()) return std::optional<OpDag>();
  DagOptions o;
  o.memory_rounding = MemoryRounding::kRelaxed;
  Result<OpDag> relaxed = build_dag(problem, o);
  if (!relaxed.ok()) return relaxed.status();
  PS_ASSERT(relaxed->num_ops() == dag.num_ops() && relaxed->ms_per_unit == dag.ms_per_unit,
            "the relaxed op DAG must have the same ops and time units");
  return std::optional<OpDag>(std::move(relaxed).value());
}

// The lower bounds known so far.
struct Bounds {
  DagBound db;               // the DAG's; the destructive bound may raise it
  double checker_lb_ms = 0;  // the checker's (lower_bound_ms)
  int64_t lb_units = 0;      // the best of both, in DAG time units
  int64_t before_z3_units = 0;  // lb_units before any Z3 work (the relaxations of step 3c included)
  int smt_checks = 0;           // Z3 checks the relaxations of step 3c ran
};

// 2. Lower bounds: the DAG's (memory edges, single-device relaxations; `dag` is the proof DAG of
// step 1b) and the checker's; the destructive bound and the one-resource relaxations raise them once
// a schedule (step 3) caps how far they need to search.
Bounds initial_bounds(const Problem& problem, const OpDag& dag) {
  Bounds b;
  b.db = dag_lower_bound(dag);
  b.checker_lb_ms = lower_bound_ms(problem);
  b.lb_units = b.db.units;
  if (dag.time_exact) {
    b.lb_units = std::max(b.lb_units, static_cast<int64_t>(std::ceil(b.checker_lb_ms / dag.ms_per_unit - 1e-9)));
  }
  return b;
}

// The budget in seconds of one run: the rlimit's worth of Z3 time when one is given, else the time limit.
double budget_seconds(const SynthOptions& opt) {
  return opt.rlimit ? static_cast<double>(opt.rlimit) /
                          (static_cast<double>(rlimit_per_second()) * std::max(1, opt.contexts))
                    : std::max(0.0, opt.time_limit_s);
}

// 3. Heuristic, and the baselines as alternative seeds.
Result<Seed> heuristic_seed(const Problem& problem, const OpDag& dag, const SynthOptions& opt, double budget_s,
                            Clock::time_point t0, SynthResult& out) {
  const HeuristicOptions hopt = sized_heuristic(dag, budget_s);
  Result<HeuristicResult> h = heuristic_schedule(dag, hopt);
  Seed seed;
  if (h.ok()) {
    out.heuristic_ms = dag.to_ms(h->best.makespan);
    out.heuristic_policy = h->policy;
    seed.order = h->best;
    seed.source = fmt::format("heuristic {}", h->policy);
  } else {
    // With recomputing stages the portfolio's serial policy is no longer sure to fit: the plan
    // search's order (or a baseline's) may still do.
    seed.order.makespan = std::numeric_limits<int64_t>::max();
  }
  const double heuristic_s = seconds_since(t0);
  if (opt.use_baselines) try_baselines(problem, dag, out, seed);
  try_zb_greedy(dag, budget_s, opt.interrupt, seed);
  if (opt.seed_schedule) try_seed_schedule(dag, *opt.seed_schedule, seed);
  if (!h.ok()) {
    if (seed.order.order.empty()) {
      return Status::error(ErrorCode::kRuntime,
                           fmt::format("internal error: the memory limit looked feasible, but {}", h.status().message()));
    }
    out.heuristic_ms = dag.to_ms(seed.order.makespan);
    out.heuristic_policy = fmt::format("no list policy fits; {}", seed.source);
  }
  if (opt.progress) {
    HeuristicProgress p;
    p.makespan_ms = out.heuristic_ms;
    p.policy = out.heuristic_policy;
    p.policies = h.ok() ? h->tried : 0;
    p.portfolio = !hopt.portfolio ? HeuristicProgress::Portfolio::kOne
                  : hopt.lean     ? HeuristicProgress::Portfolio::kLean
                                  : HeuristicProgress::Portfolio::kFull;
    p.heuristic_s = heuristic_s;
    if (!out.best_baseline.empty()) p.best_baseline_ms = out.best_baseline_ms;
    p.baselines_s = seconds_since(t0) - heuristic_s;
    p.ops = dag.num_ops();
    opt.progress(p);
  }
  return seed;
}

// An order found on another DAG of the same plan, timed on `dag` (nullopt where it does not fit its caps).
std::optional<TimedOrder> timed_on(const OpDag& dag, const TimedOrder& t) {
  Result<TimedOrder> r = evaluate_order(dag, t.order);
  if (!r.ok()) return std::nullopt;
  return std::move(r).value();
}

// What the destructive bound's search cost.
struct BoundSearchCost {
  double budget_share = 0;  // the budget it used, as a fraction
};

// 3b. The destructive bound (propagation on trial makespans, then a complete search; dag_bounds.h)
// between the bound and the incumbent. Where it closes the gap no Z3 runs; elsewhere Z3 starts
// from a higher bound and, when the search found one, a better order. It gets a quarter of the
// budget but at most kBoundSearchMaxS, in its own deterministic steps; Z3 gets the budget less
// what it used. (The search decides small plans — P = 8, M = 16 with a cap: 224 ms found and
// proven in 0.8 s, where Z3 needs 18 s — but on thousands of ops it rarely finishes a trial, and
// Z3's LNS finds orders there better: the cap keeps it from eating their budget.)
// It runs on `bdag`, the proof DAG; an order it finds is timed on `dag` (the safe rounding of
// memory) and taken only where it fits there.
BoundSearchCost raise_bound(const OpDag& bdag, const OpDag& dag, const SynthOptions& opt, double budget_s,
                            Bounds& bounds, Seed& seed) {
  BoundSearchCost cost;
  if (seed.order.makespan <= bounds.lb_units) return cost;
  const double steps_per_s = static_cast<double>(bound_steps_per_second());
  const auto tb = Clock::now();
  DestructiveOptions dopt;
  dopt.start = bounds.lb_units;
  dopt.upper = seed.order.makespan;
  dopt.search_work = static_cast<uint64_t>(std::min(budget_s / 4, kBoundSearchMaxS) * steps_per_s);
  dopt.interrupt = opt.interrupt;
  DestructiveBound strong = destructive_lower_bound(bdag, dopt);
  if (strong.bound.units > bounds.lb_units) {
    bounds.db = strong.bound;
    bounds.lb_units = strong.bound.units;
  }
  if (strong.order && &bdag != &dag) strong.order = timed_on(dag, *strong.order);
  if (strong.order && strong.order->makespan < seed.order.makespan) {
    seed.order = std::move(*strong.order);
    seed.source = "destructive-bound search";
  }
  if (budget_s > 0) {
    cost.budget_share = std::min(0.25, static_cast<double>(strong.work) / steps_per_s / budget_s);
  }
  if (opt.progress) {
    BoundProgress p;
    p.bound_ms = dag.to_ms(bounds.lb_units);
    p.reason = bounds.db.reason;
    p.trials = strong.trials;
    p.nodes = strong.nodes;
    p.work = strong.work;
    p.work_capped = strong.capped;
    p.incumbent_ms = dag.to_ms(seed.order.makespan);
    p.elapsed_s = seconds_since(tb);
    opt.progress(p);
  }
  return cost;
}

// 3d. Local search on the incumbent (order_polish.h): the critical chain's block moves and moves of
// one op along its resource, re-timed exactly, with seeded kicks out of local optima. Its share of
// the budget is counted in evaluations (each one evaluate_order of the DAG), never in seconds, so
// the result does not depend on the machine; plans too large for kPolishMinEvaluations in that
// share skip it.
constexpr double kPolishShare = 0.15;
constexpr double kPolishOpsPerSecond = 1e7;  // ops re-timed per second by evaluate_order, one core
constexpr int64_t kPolishMinEvaluations = 2000;
constexpr int64_t kPolishMaxEvaluations = 200000;
constexpr int kPolishReach = 4;
constexpr size_t kPolishOthers = 3;
constexpr double kPolishOthersSlack = 0.05;

void polish_seed(const OpDag& dag, double budget_s, const std::atomic<bool>* interrupt, const Bounds& bounds, Seed& seed,
                 BoundSearchCost& cost) {
  if (seed.order.makespan <= bounds.lb_units || budget_s <= 0) return;
  const int64_t evaluations = std::min<int64_t>(
      kPolishMaxEvaluations,
      static_cast<int64_t>(kPolishShare * budget_s * kPolishOpsPerSecond / std::max(1, dag.num_ops())));
  if (evaluations < kPolishMinEvaluations) return;
  // The incumbent and the kPolishOthers shortest orders of the other sources within
  // kPolishOthersSlack of it (ties: the earlier source), each with an equal share: a local optimum
  // near one start is often not near another (on ZB-V's shape the published ZB-V order, though
  // longer than the list scheduler's, polishes to the shorter order).
  std::vector<std::pair<const TimedOrder*, const std::string*>> starts = {{&seed.order, &seed.source}};
  std::vector<size_t> others;
  for (size_t i = 0; i < seed.others.size(); ++i)
    if (static_cast<double>(seed.others[i].first.makespan) <=
        (1 + kPolishOthersSlack) * static_cast<double>(seed.order.makespan))
      others.push_back(i);
  std::stable_sort(others.begin(), others.end(), [&seed](size_t a, size_t b) {
    return seed.others[a].first.makespan < seed.others[b].first.makespan;
  });
  if (others.size() > kPolishOthers) others.resize(kPolishOthers);
  // Each start gets at least one whole pass of moves (every list position, every reach): fewer
  // starts where the share is small. Where not even one pass fits, the incumbent gets the critical
  // chain's block moves alone (reach 0, up to the share's evaluations; they stop at their local
  // optimum) and the order they reach is set aside, not charged to Z3's budget: Z3 works from the
  // incumbent with the budget it has without them, and the shorter of the two orders is kept. (Z3's
  // windows from the polished order are not always as good: on ZB-V's shape at P = 8, M = 16 with a
  // 2 ms link they end at 468 ms against 466 ms from the unpolished one.)
  int64_t pass = 0;
  for (const std::vector<int>& list : seed.order.order) pass += 2 * kPolishReach * static_cast<int64_t>(list.size());
  const int64_t fit = evaluations / std::max<int64_t>(1, pass);
  if (fit < 1) {
    PolishResult p = polish_order(dag, seed.order, 0, evaluations, 1, interrupt);
    if (p.order.makespan <= bounds.lb_units) {  // optimal: the incumbent, and Z3 has nothing to do
      seed.order = std::move(p.order);
      seed.source += " + polished";
    } else if (p.order.makespan < seed.order.makespan) {
      seed.set_aside = std::move(p.order);
    }
    return;
  }
  if (static_cast<int64_t>(others.size()) + 1 > fit) others.resize(static_cast<size_t>(fit - 1));
  for (size_t i : others) starts.emplace_back(&seed.others[i].first, &seed.others[i].second);
  const int64_t each = evaluations / static_cast<int64_t>(starts.size());
  int64_t used = 0;
  std::optional<std::pair<TimedOrder, std::string>> best;
  for (const auto& [order, source] : starts) {
    PolishResult p = polish_order(dag, *order, kPolishReach, each, 1, interrupt);
    used += p.evaluations;
    if (p.order.makespan < (best ? best->first.makespan : seed.order.makespan))
      best.emplace(std::move(p.order), *source + " + polished");
  }
  cost.budget_share += kPolishShare * static_cast<double>(used) / static_cast<double>(evaluations);
  if (best) {
    seed.order = std::move(best->first);
    seed.source = std::move(best->second);
  }
}

// After Z3: where the order the block moves reached before it (Seed::set_aside) is shorter than Z3's
// result, it is the result, and the seed's order (the best before Z3, with " + polished" in its
// source: the certificate's schedule_method says local search).
void take_set_aside(Seed& seed, SolveResult& fin, SynthResult& out) {
  if (!seed.set_aside || seed.set_aside->makespan >= fin.best.makespan) return;
  seed.order = std::move(*seed.set_aside);
  seed.source += " + polished";
  seed.set_aside.reset();
  fin.best = seed.order;
  fin.improved = false;
  out.seed_source = seed.source;
}

// 3c. Z3 on one-resource relaxations (smt_bound.h) of the proof DAG, between the bound and the
// incumbent: each device (and comm stream), bottleneck first, alone with the windows propagation
// leaves at a trial makespan, the time lags of the DAG's paths and its memory cap. It gets a fifth
// of one context's Z3 budget (a fifth of the time limit, and never more than what is left of it
// since `t0`), nothing when the gap is already closed; Z3 gets the budget less what it used. Its
// cost adds to `cost`.
void raise_bound_smt(const OpDag& bdag, const OpDag& dag, const SynthOptions& opt, Clock::time_point t0, Bounds& bounds,
                     const Seed& seed, BoundSearchCost& cost) {
  const double wall_left_s = std::max(0.0, opt.time_limit_s - seconds_since(t0));
  if (seed.order.makespan <= bounds.lb_units || wall_left_s <= 0) return;
  const uint64_t one_context =
      opt.rlimit ? opt.rlimit / static_cast<uint64_t>(std::max(1, opt.contexts)) : rlimit_budget(0, opt.time_limit_s);
  const auto ts = Clock::now();
  SmtBoundOptions so;
  so.rlimit = static_cast<uint64_t>(static_cast<double>(one_context) * kSmtBoundShare);
  so.time_limit_s = std::min(opt.time_limit_s * kSmtBoundShare, wall_left_s);
  so.seed = opt.seed;
  so.interrupt = opt.interrupt;
  if (so.rlimit == 0) return;
  Result<SmtBound> sb = smt_lower_bound(bdag, bounds.lb_units, seed.order.makespan, so);
  const double wall_s = seconds_since(ts);
  if (!sb.ok()) {
    // A Z3 failure on a relaxation loses only this bound; the run goes on.
    if (opt.progress) {
      SmtBoundProgress p;
      p.failure = sb.status().message();
      opt.progress(p);
    }
    return;
  }
  // The whole budget is every context's: what the step used comes off it once.
  const double full = static_cast<double>(one_context) * std::max(1, opt.contexts);
  if (full > 0) cost.budget_share += std::min(kSmtBoundShare, static_cast<double>(sb->rlimit_used) / full);
  bounds.smt_checks = sb->checks;
  if (sb->raised) {
    bounds.db = DagBound{sb->units, sb->reason, sb->device};
    bounds.lb_units = sb->units;
  }
  if (opt.progress) {
    SmtBoundProgress p;
    p.bound_ms = bdag.to_ms(bounds.lb_units);
    p.raised = sb->raised;
    if (sb->raised) p.reason = sb->reason;
    p.relaxations = sb->relaxations;
    p.skipped = sb->skipped;
    p.checks = sb->checks;
    p.trials = sb->trials;
    p.rlimit_used = sb->rlimit_used;
    p.incumbent_ms = dag.to_ms(seed.order.makespan);
    p.elapsed_s = wall_s;
    opt.progress(p);
  }
}

// 4-5. Encode and solve, in two phases. (a) The model where transfers never queue (link time as
// a plain delay) is a relaxation of the comm-stream model with half the pairs: Z3 finds orders
// and proofs there faster. Every order it finds is re-timed with comm streams and kept when
// better, and its proven bound bounds the real problem too. (b) The comm-stream model, seeded with
// the best order so far, closes what is left. Phase (a) gets 3/4 of the budget, (b) the rest
// (all of it when (a) proves the order optimal and the comm streams do not delay it).
//
// Where every transfer takes 0 time units (free links, or links too fast for the DAG's time unit)
// the two models have the same optimum: a zero-length transfer's no-overlap clause holds whatever
// the starts, and first come, first served on the comm streams (evaluate_order with device lists
// only) starts every transfer when its producer ends, so any compute order times the same in both.
// Phase (b) is then skipped and (a) gets the whole budget and time; where the whole encoding does
// not load, the windows work on the no-queue DAG (fewer ops and pairs, and no comm-stream list order
// to keep fixed outside the window). Its orders are re-timed on the comm-stream DAG.
// Why the comm-stream phase is skipped, in the solver status.
constexpr const char* kFreeTransfers = "every transfer takes 0 time units";

class TwoPhaseSolve {
 public:
  TwoPhaseSolve(const Problem& problem, const OpDag& dag, const SynthOptions& opt, Clock::time_point t0)
      : problem_(problem), dag_(dag), opt_(opt), t0_(t0) {}

  // Both phases from the seed and the bounds, less the budget the bound search used; the result's
  // status says how it ended.
  Result<SolveResult> run(const Seed& seed, const Bounds& bounds, const BoundSearchCost& cost) {
    const uint64_t full_rlimit = rlimit_budget(opt_.rlimit, opt_.time_limit_s, opt_.contexts);
    const uint64_t total_rlimit = static_cast<uint64_t>(static_cast<double>(full_rlimit) * (1 - cost.budget_share));
    fin_.best = seed.order;
    fin_.bound = std::min(bounds.lb_units, seed.order.makespan);
    const bool gap = fin_.best.makespan > fin_.bound;
    const bool dump = !opt_.dump_smt2.empty();
    free_ = (gap || dump) && transfers_take_no_time(dag_) && no_queue_dag() != nullptr;
    // With free transfers Z3 works on the no-queue DAG alone (see above).
    const OpDag& zdag = free_ ? *no_queue_dag() : dag_;
    const bool windows = gap && !whole_encoding_fits(zdag, total_rlimit);
    // The wall clock counts from synthesize()'s start: building the DAG, the heuristic, the bounds
    // and, on a large plan, sizing the whole encoding took their part of it.
    const double elapsed_s = seconds_since(t0_);
    const double z3_time_limit_s = std::max(0.01, opt_.time_limit_s - elapsed_s);
    fin_.deadline_s = elapsed_s + z3_time_limit_s;
    const auto solve_start = Clock::now();
    if (windows) {
      PS_RETURN_IF_ERROR(solve_windows(zdag, total_rlimit, z3_time_limit_s));
      set_status(bounds.db);
      return fin_;
    }
    if (gap || (free_ && dump)) PS_RETURN_IF_ERROR(solve_no_queue(total_rlimit, z3_time_limit_s));
    if (free_) {
      if (fin_.best.makespan > fin_.bound) add_status(fmt::format("comm-stream: skipped ({})", kFreeTransfers));
    } else if (fin_.best.makespan > fin_.bound || dump) {
      PS_RETURN_IF_ERROR(solve_comm_stream(total_rlimit, z3_time_limit_s - seconds_since(solve_start)));
    }
    set_status(bounds.db);
    return fin_;
  }

 private:
  SolveOptions options(const char* model) const {
    SolveOptions so;
    so.seed = opt_.seed;
    so.contexts = opt_.contexts;
    so.warm_start = opt_.z3_warm_start;
    so.interrupt = opt_.interrupt;
    if (opt_.progress) {
      // The incumbent printed is the comm-stream timing of the best order (fin_.best).
      so.progress = [this, model](const SolveProgress& p) { report(model, p, fin_.best.makespan); };
    }
    return so;
  }

  // One progress line: `incumbent` in units of dag_, the bound the best of p's and fin_'s.
  void report(const char* model, const SolveProgress& p, int64_t incumbent) const {
    SolveStepProgress step;
    step.model = model;
    step.phase = p.phase;
    step.incumbent_ms = dag_.to_ms(incumbent);
    step.bound_ms = dag_.to_ms(std::max(p.bound, fin_.bound));
    step.elapsed_s = seconds_since(t0_);
    opt_.progress(step);
  }

  void absorb(const SolveResult& r, const char* model) {
    fin_.checks += r.checks;
    fin_.rlimit_used += r.rlimit_used;
    fin_.seconds += r.seconds;
    fin_.free_pairs = std::max(fin_.free_pairs, r.free_pairs);
    fin_.memory_constraints = std::max(fin_.memory_constraints, r.memory_constraints);
    fin_.bound = std::max(fin_.bound, r.bound);
    add_status(fmt::format("{}: {}", model, r.status));
  }

  void add_status(const std::string& part) {
    last_status_ = last_status_.empty() ? part : fmt::format("{}; {}", last_status_, part);
  }

  // The DAG without comm streams (transfers as plain delays), built once; null when it cannot be
  // built or has other time units than dag_.
  const OpDag* no_queue_dag() {
    if (!nq_built_) {
      nq_built_ = true;
      DagOptions pdo;
      pdo.comm_streams = false;
      Result<OpDag> pd = build_op_dag(problem_, pdo);
      if (pd.ok() && pd->ms_per_unit == dag_.ms_per_unit) nq_dag_ = std::move(pd).value();
    }
    return nq_dag_ ? &*nq_dag_ : nullptr;
  }

  // Whether every transfer op of `dag` lasts 0 time units (true too where no boundary crosses
  // devices): the condition under which the comm-stream phase is redundant (see above).
  static bool transfers_take_no_time(const OpDag& dag) {
    return std::all_of(dag.ops.begin(), dag.ops.end(), [](const DagOp& o) { return !o.is_transfer() || o.dur == 0; });
  }

  std::vector<std::vector<int>> devices_only(const TimedOrder& t) const {
    return std::vector<std::vector<int>>(t.order.begin(), t.order.begin() + dag_.devices);
  }

  // Whether the whole encoding of `dag` (dag_'s comm-stream one, or the no-queue one when transfers
  // are free) loads in a quarter of one context's budget (solve.h's estimate). Where it does not,
  // the phases would spend the budget loading, or skip: windows of the order (window.h) use it
  // instead.
  bool whole_encoding_fits(const OpDag& dag, uint64_t total_rlimit) const {
    const double per_context_s =
        static_cast<double>(total_rlimit) / std::max(1, opt_.contexts) / static_cast<double>(rlimit_per_second());
    return encoding_load_seconds(dag) <= per_context_s / 4;
  }

  // Windows of the order on `wdag` (dag_, or the no-queue DAG when transfers are free) with the
  // whole budget; proves no bound. With --dump-smt2 each window's encoding is written beside the
  // given path.
  Status solve_windows(const OpDag& wdag, uint64_t total_rlimit, double z3_time_limit_s) {
    WindowOptions w;
    w.time_limit_s = std::max(0.01, z3_time_limit_s - kFinishSecondsPerOp * dag_.num_ops());
    w.rlimit = total_rlimit;
    w.seed = opt_.seed;
    w.contexts = opt_.contexts;
    w.warm_start = opt_.z3_warm_start;
    w.interrupt = opt_.interrupt;
    w.dump_smt2 = opt_.dump_smt2;
    // The windows time their orders on wdag, whose timing of an order is dag_'s (free transfers
    // change no makespan): their incumbent is the one to print.
    if (opt_.progress) w.progress = [this](const SolveProgress& p) { report("z3", p, p.incumbent); };
    const bool own = &wdag == &dag_;
    Result<TimedOrder> inc = own ? Result<TimedOrder>(fin_.best) : evaluate_order(wdag, devices_only(fin_.best));
    if (!inc.ok()) return inc.status();
    Result<WindowResult> wr = window_search(wdag, *inc, w);
    if (!wr.ok()) return wr.status();
    if (own) {
      fin_.best = wr->best;
    } else if (wr->best.makespan < inc->makespan) {
      Result<TimedOrder> real = evaluate_order(dag_, devices_only(wr->best));
      if (!real.ok()) return real.status();
      if (real->makespan < fin_.best.makespan) fin_.best = std::move(real).value();
    }
    fin_.checks += wr->checks;
    fin_.rlimit_used += wr->rlimit_used;
    fin_.seconds += wr->seconds;
    fin_.smt2_written = wr->smt2_written > 0;
    fin_.windows = wr->windows;
    fin_.improving_windows = wr->improving_windows;
    fin_.window_dumps = wr->smt2_written;
    last_status_ = fmt::format("windows: {} ({} windows, {} improved the order{})", wr->status, wr->windows,
                               wr->improving_windows,
                               own ? "" : fmt::format("; on the no-queue model: {}", kFreeTransfers));
    return Status::ok();
  }

  // (a) The no-queue relaxation: 3/4 of the budget, all of it when transfers are free (then it
  // also writes --dump-smt2's encoding: the one solved).
  Status solve_no_queue(uint64_t total_rlimit, double z3_time_limit_s) {
    const OpDag* pd = no_queue_dag();
    if (pd == nullptr) return Status::ok();
    if (pd->bounds_are_proofs()) fin_.bound = std::max(fin_.bound, std::min(dag_lower_bound(*pd).units, fin_.best.makespan));
    Result<TimedOrder> inc = evaluate_order(*pd, devices_only(fin_.best));
    const bool gap = fin_.best.makespan > fin_.bound;
    if (!inc.ok() || !(gap || (free_ && !opt_.dump_smt2.empty()))) return Status::ok();
    SolveOptions a = options("no-queue");
    a.rlimit = free_ ? total_rlimit : total_rlimit / 4 * 3;
    a.time_limit_s = free_ ? z3_time_limit_s : z3_time_limit_s * time_budget::kNoQueue;
    if (free_) a.dump_smt2 = opt_.dump_smt2;
    a.on_incumbent = [this](const TimedOrder& t) {
      nq_best_ = t;  // each is better than the last, in the no-queue model
      Result<TimedOrder> real = evaluate_order(dag_, devices_only(t));
      if (real.ok() && real->makespan < fin_.best.makespan) fin_.best = std::move(real).value();
    };
    Result<SolveResult> ra = solve(*pd, *inc, fin_.bound, a);
    if (!ra.ok()) return ra.status();
    if (free_) fin_.smt2_written = ra->smt2_written;
    if (gap) absorb(*ra, "no-queue");
    return Status::ok();
  }

  // (b) The comm-stream model: what is left of the budget.
  Status solve_comm_stream(uint64_t total_rlimit, double time_left_s) {
    SolveOptions b = options("comm-stream");
    b.rlimit = std::max<uint64_t>(1, total_rlimit - std::min(total_rlimit, fin_.rlimit_used));
    b.time_limit_s = std::max(0.01, time_left_s);
    b.dump_smt2 = opt_.dump_smt2;
    // The no-queue optimum re-timed first-come-first-served may lose to a better comm order.
    if (nq_best_ && nq_best_->makespan < fin_.best.makespan) b.device_hint = nq_best_;
    Result<SolveResult> rb =
        solve(dag_, fin_.best, fin_.best.makespan > fin_.bound ? fin_.bound : fin_.best.makespan, b);
    if (!rb.ok()) return rb.status();
    fin_.smt2_written = rb->smt2_written;
    if (rb->best.makespan < fin_.best.makespan) fin_.best = rb->best;
    if (fin_.best.makespan > fin_.bound || rb->checks > 0) absorb(*rb, "comm-stream");
    return Status::ok();
  }

  void set_status(const DagBound& db) {
    fin_.optimal = fin_.best.makespan <= fin_.bound;
    if (!fin_.optimal) {
      fin_.status = last_status_.empty() ? "no Z3 run" : last_status_;
    } else if (fin_.checks > 0) {
      fin_.status = "optimal";
    } else {
      // No Z3 check: the proof is the DAG bound's; say which one.
      const bool destructive = db.reason.rfind("destructive", 0) == 0;
      fin_.status = destructive ? "destructive bound meets incumbent" : "heuristic meets bound";
    }
  }

  const Problem& problem_;
  const OpDag& dag_;
  const SynthOptions& opt_;
  const Clock::time_point t0_;
  SolveResult fin_;
  std::string last_status_;             // "no-queue: ...; comm-stream: ..."
  std::optional<TimedOrder> nq_best_;  // the no-queue phase's best order (its timing)
  bool nq_built_ = false;              // no_queue_dag() ran
  std::optional<OpDag> nq_dag_;        // its DAG
  bool free_ = false;                  // every transfer takes 0 time units: no comm-stream phase
};

// 5b. Where the DAG's memory rounding makes Z3's UNSATs no proof (op_dag.h) and Z3 found nothing
// better under the rounded caps, one more solve on the proof DAG (`bdag`: caps no stricter than the
// exact ones) from the best order: its bound is a proof, and an order it finds is kept when it also
// fits the rounded caps. A tenth of the budget, at most what is left of the time limit.
Status prove_on_proof_dag(const OpDag& bdag, const OpDag& dag, const SynthOptions& opt, Clock::time_point t0,
                          SolveResult& fin) {
  const double left_s = opt.time_limit_s - seconds_since(t0);
  if (&bdag == &dag || fin.optimal || left_s <= 0.05 ||
      fin.status.find("no better order under the rounded memory caps") == std::string::npos) {
    return Status::ok();
  }
  Result<TimedOrder> inc = evaluate_order(bdag, fin.best.order);
  if (!inc.ok()) return Status::ok();
  SolveOptions so;
  so.seed = opt.seed;
  so.contexts = opt.contexts;
  so.warm_start = opt.z3_warm_start;
  so.interrupt = opt.interrupt;
  so.lns_window = 0;
  so.time_limit_s = std::min(left_s, time_budget::kDestructiveBound * opt.time_limit_s);
  so.rlimit = static_cast<uint64_t>(time_budget::kDestructiveBound *
                                    static_cast<double>(rlimit_budget(opt.rlimit, opt.time_limit_s, opt.contexts)));
  if (so.rlimit == 0) return Status::ok();
  Result<SolveResult> r = solve(bdag, *inc, fin.bound, so);
  if (!r.ok()) return r.status();
  fin.checks += r->checks;
  fin.rlimit_used += r->rlimit_used;
  if (r->best.makespan < fin.best.makespan) {
    Result<TimedOrder> fits = evaluate_order(dag, r->best.order);
    if (fits.ok() && fits->makespan < fin.best.makespan) fin.best = std::move(fits).value();
  }
  fin.bound = std::max(fin.bound, std::min(r->bound, fin.best.makespan));
  fin.optimal = fin.best.makespan <= fin.bound;
  fin.status += fin.optimal ? "; proof under the exact memory numbers: optimal"
                            : fmt::format("; proof under the exact memory numbers: {}", r->status);
  if (opt.progress) {
    ExactMemoryProgress p;
    p.incumbent_ms = dag.to_ms(fin.best.makespan);
    p.bound_ms = dag.to_ms(fin.bound);
    p.checks = r->checks;
    opt.progress(p);
  }
  return Status::ok();
}

// 6-8. Decode, insert comms, verify. A rejection is our bug: never written.
Status decode_and_certify(const Problem& problem, const OpDag& dag, const TimedOrder& best, SynthResult& out) {
  Schedule compute = order_to_schedule(problem, dag, best, "pipesmith synth");
  VerifyOptions vo;
  vo.semantics = Semantics::kRendezvous;
  Result<CertifiedSchedule> cert = certify_schedule(compute, vo);
  if (!cert.ok()) {
    return Status::error(ErrorCode::kRuntime,
                         fmt::format("internal error: the checker rejected the synthesized schedule:\n{}",
                                     cert.status().message()));
  }
  out.schedule = std::move(cert->schedule);
  out.report = std::move(cert->report);
  out.makespan_ms = out.report.sim ? out.report.sim->makespan_ms : 0;
  return Status::ok();
}

// The DAG times comm streams as the checker does, so this never triggers unless the two disagree;
// should the result ever simulate slower than a certified baseline, the baseline is the answer.
// Returns whether it replaced the result.
bool fall_back_to_baseline(Seed& seed, SynthResult& out) {
  if (!seed.best_baseline || out.best_baseline_ms + 1e-9 * out.best_baseline_ms >= out.makespan_ms) return false;
  out.schedule = std::move(seed.best_baseline->schedule);
  out.report = std::move(seed.best_baseline->report);
  out.makespan_ms = out.best_baseline_ms;
  return true;
}

// The op DAG runs I and W on a stage that splits; where that stage's B (overhead included) is cheaper
// than its I + W, a schedule running B can beat every order of the DAG, so the DAG's bounds and its
// optimality are not the problem's: only the checker's bound (which takes the cheaper) is.
bool dag_bounds_hold(const Problem& p) {
  for (int s = 0; s < p.num_stages(); ++s) {
    const StageId st{s};
    if (p.stages[s].split_backward &&
        compute_ms(p, st, OpType::B) < compute_ms(p, st, OpType::I) + compute_ms(p, st, OpType::W))
      return false;
  }
  return true;
}

// 9a. Bounds and optimality.
void settle_bounds(const OpDag& dag, const SolveResult& fin, double checker_lb_ms, SynthResult& out) {
  const double proven_ms = dag.to_ms(fin.bound);
  out.z3_bound_ms = fin.checks > 0 ? proven_ms : 0;
  out.bound_ms = std::max({out.dag_bound_ms, checker_lb_ms, proven_ms, out.report.lower_bound_ms});
  // Bounds summed in a different order than the simulation can exceed the makespan by float noise.
  if (out.bound_ms > out.makespan_ms && out.bound_ms <= out.makespan_ms * (1 + 1e-9)) out.bound_ms = out.makespan_ms;
  out.gap = relative_gap(out.makespan_ms, out.bound_ms);
  // Equal within the certificate's float tolerance: with inexact time units the DAG rounds durations
  // down, so the proof is on a relaxation and the schedule's true makespan sits a few units above it.
  out.optimal = fin.optimal && meets_bound(out.makespan_ms, proven_ms);
  // Proven on the integer DAG but above the bound by more than the tolerance: with inexact time
  // units that is the rounding of this schedule's own durations; the optimum lies in between.
  if (fin.optimal && !out.optimal && !dag.time_exact) out.optimal_up_to_ms = out.makespan_ms - proven_ms;
}

// 9b. The certificate's extras.
void add_certificate_extras(const OpDag& dag, const SolveResult& fin, const SynthOptions& opt,
                            const std::string& seed_source, bool baseline_output, SynthResult& out) {
  const double proven_ms = dag.to_ms(fin.bound);
  Certificate& c = *out.schedule.certificate;
  if (baseline_output) {
    out.schedule.generator = fmt::format("pipesmith synth (baseline {})", out.best_baseline);
    c.extra["output"] = fmt::format("baseline {}: faster in the checker's simulation than the synthesized order",
                                    out.best_baseline);
  }
  c.extra["optimal"] = out.optimal ? "true" : "false";
  c.extra["bound_proven_ms"] = fmt_ms(std::max(proven_ms, out.dag_bound_ms));
  c.extra["bound_ms"] = fmt_ms(out.bound_ms);
  c.extra["gap"] = fmt::format("{:.6f}", out.gap);
  c.extra["solver_status"] = fin.status;
  c.extra["solver_checks"] = std::to_string(fin.checks);
  c.extra["solver_rlimit_used"] = std::to_string(fin.rlimit_used);
  c.extra["time_limit_s"] = fmt::format("{:g}", opt.time_limit_s);
  c.extra["seed"] = std::to_string(opt.seed);
  c.extra["z3_version"] = z3_version();
  c.extra["time_unit_ms"] = fmt::format("{:g}", dag.ms_per_unit);
  c.extra["seeded_by"] = seed_source;
  c.extra["heuristic_ms"] = fmt_ms(out.heuristic_ms);
  if (!out.best_baseline.empty()) c.extra["best_baseline"] = fmt::format("{} {} ms", out.best_baseline, fmt_ms(out.best_baseline_ms));
  if (out.optimal_up_to_ms > 0) {
    c.extra["optimal_up_to_ms"] = fmt::format("{:.6f}", out.optimal_up_to_ms);
    c.extra["note"] = fmt::format("no schedule is shorter than bound_proven_ms; durations were rounded down to {:g} ms "
                                  "units, which accounts for the difference",
                                  dag.ms_per_unit);
  } else if (fin.optimal && !out.optimal) {
    c.extra["note"] = "the order is proven optimal on the integer op DAG, but the checker's makespan differs from "
                      "the DAG's timing by more than the certificate tolerance";
  }
}

// 9c. The solver block: what Z3 did to the order and the bound, and which method produced each
// (DAG timings in ms; deterministic for a seed and budget).
void add_solver_extras(const OpDag& dag, const SolveResult& fin, const Seed& seed, const Bounds& bounds,
                       bool baseline_output, SynthResult& out) {
  Certificate& c = *out.schedule.certificate;
  const bool z3_order = fin.best.makespan < seed.order.makespan;
  const bool z3_bound = fin.checks > 0 && fin.bound > bounds.lb_units;
  c.extra["z3_checks"] = std::to_string(fin.checks + bounds.smt_checks);
  c.extra["before_z3_ms"] = fmt_ms(dag.to_ms(seed.order.makespan));
  c.extra["z3_improved_ms"] = fmt_ms(dag.to_ms(seed.order.makespan - std::min(seed.order.makespan, fin.best.makespan)));
  c.extra["bound_before_z3_ms"] = fmt_ms(std::min(dag.to_ms(bounds.before_z3_units), out.makespan_ms));
  const std::string& src = seed.source;
  c.extra["schedule_method"] = baseline_output                              ? "baseline"
                               : z3_order                                   ? "z3"
                               : src.find(" + polished") != std::string::npos ? "local search"
                               : src.rfind("baseline", 0) == 0              ? "baseline"
                               : src == "destructive-bound search"          ? "destructive-bound search"
                               : src == "tuner"                             ? "tuner"
                                                                            : "list scheduler";
  c.extra["bound_method"] = z3_bound                                             ? "z3"
                            : bounds.db.reason.rfind("z3 relaxation", 0) == 0 ? "z3 relaxation"
                            : bounds.db.reason.rfind("destructive", 0) == 0   ? "destructive bound"
                                                                              : "dag bound";
}

}  // namespace

Result<SynthResult> synthesize(const Problem& problem, const SynthOptions& opt, const Spec* spec) {
  const auto t0 = Clock::now();
  SynthResult out;

  // Infeasible memory limits: explained in terms of the inputs.
  PS_RETURN_IF_ERROR(check_memory_feasible(problem, spec));
  Result<OpDag> dr = build_dag(problem);
  if (!dr.ok()) return dr.status();
  const OpDag& dag = *dr;
  Result<std::optional<OpDag>> relaxed = build_proof_dag(problem, dag);
  if (!relaxed.ok()) return relaxed.status();
  const OpDag& bdag = relaxed->has_value() ? **relaxed : dag;
  Bounds bounds = initial_bounds(problem, bdag);

  const double budget_s = budget_seconds(opt);
  Result<Seed> seed = heuristic_seed(problem, dag, opt, budget_s, t0, out);
  if (!seed.ok()) return seed.status();
  BoundSearchCost bound_cost = raise_bound(bdag, dag, opt, budget_s, bounds, *seed);
  bounds.before_z3_units = bounds.lb_units;
  polish_seed(dag, budget_s, opt.interrupt, bounds, *seed, bound_cost);
  raise_bound_smt(bdag, dag, opt, t0, bounds, *seed, bound_cost);
  out.seed_source = seed->source;
  out.dag_bound_ms = dag.to_ms(bounds.db.units);

  const auto solve_start = Clock::now();
  Result<SolveResult> fin = TwoPhaseSolve(problem, dag, opt, t0).run(*seed, bounds, bound_cost);
  if (!fin.ok()) return fin.status();
  PS_RETURN_IF_ERROR(prove_on_proof_dag(bdag, dag, opt, t0, *fin));
  take_set_aside(*seed, *fin, out);
  out.solve = *fin;
  out.solve_s = seconds_since(solve_start);
  out.solver_status = fin->status;

  PS_RETURN_IF_ERROR(decode_and_certify(problem, dag, fin->best, out));
  const bool baseline_output = fall_back_to_baseline(*seed, out);
  SolveResult settled = *fin;
  const bool dag_bounds = dag_bounds_hold(problem);
  if (!dag_bounds) {
    settled.bound = 0;
    settled.optimal = false;
    settled.status = "op DAG only: " + settled.status;
    out.solver_status = settled.status;
    out.dag_bound_ms = 0;
  }
  settle_bounds(dag, settled, bounds.checker_lb_ms, out);
  add_certificate_extras(dag, settled, opt, seed->source, baseline_output, out);
  add_solver_extras(dag, *fin, *seed, bounds, baseline_output, out);
  if (!dag_bounds) out.schedule.certificate->extra["bound_before_z3_ms"] = fmt_ms(out.bound_ms);
  seal_certificate(out.schedule);
  out.total_s = seconds_since(t0);
  return out;
}

}  // namespace ps
