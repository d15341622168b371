// tuner.cpp — the co-optimization driver: seeds → bubble-aware beam search → (Z3) → verify.
// See tuner.h for what it guarantees and docs/tuner.md for the design.
#include "ir/units.h"
#include "synth/tuner/tuner.h"

#include "ir/limits.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "synth/dag/schedule_order.h"
#include "synth/bounds/global_bound.h"
#include "synth/bounds/dag_bounds.h"
#include "synth/plan/partition.h"
#include "synth/plan/placement.h"
#include "synth/z3/solve.h"
#include "synth/bounds/packing_bound.h"
#include "synth/certify.h"
#include "synth/tuner/evaluate.h"
#include "synth/tuner/moves.h"
#include "synth/tuner/parallel_map.h"
#include "synth/time_budget.h"
#include "verify/verify.h"

namespace ps {

namespace {

using namespace tuner_detail;
using Clock = std::chrono::steady_clock;

struct Record {
  Candidate cand;
  Evaluation eval;
  std::string key;
  int expansions = 0;   // how often the beam expanded it
  bool z3 = false;      // order refined by Z3
  bool z3_optimal = false;
  bool parked = false;  // out of the ranking and the history (paced-front seeds that lost, wave seeds not searched)
  bool keep = false;    // the first search phase's pick: its order stays and the checker sees it
  bool hidden = false;  // out of the ranking while the wave seeds' own search runs (Tuner::run)
};

// Whether memory binds the candidate: it does not fit, or its order's peak leaves some device no
// room for one more microbatch (Evaluation::memory_tight).
bool memory_binds(const Record& r) {
  return !r.eval.feasible ||
         std::any_of(r.eval.memory_tight.begin(), r.eval.memory_tight.end(), [](char t) { return t != 0; });
}

// Ranking: feasible first, shorter makespan, then the stable key. Infeasible: smaller excess.
bool ranks_before(const Record& a, const Record& b) {
  if (a.eval.feasible != b.eval.feasible) return a.eval.feasible;
  if (a.eval.feasible) {
    if (a.eval.makespan_ms != b.eval.makespan_ms) return a.eval.makespan_ms < b.eval.makespan_ms;
  } else if (a.eval.excess_mb != b.eval.excess_mb) {
    return a.eval.excess_mb < b.eval.excess_mb;
  }
  return a.key < b.key;
}

std::string placement_desc(const std::vector<int>& placement, int P) {
  const PlacementKind k = classify_placement(placement, P);
  if (k != PlacementKind::kExplicit) return placement_kind_name(k);
  std::string s = "explicit [";
  for (size_t i = 0; i < placement.size(); ++i) s += fmt::format("{}{}", i ? "," : "", placement[i]);
  return s + "]";
}

std::string describe(const Record& r, int P) {
  // An infeasible candidate has no policy.
  return fmt::format("S={} {} ({}{}{})", r.cand.stages(), placement_desc(r.cand.placement, P), r.cand.origin,
                     r.eval.policy.empty() ? "" : "; ", r.eval.policy);
}

// The candidate's plan, ordered by the lean portfolio (policy set 1) or the whole one (2).
Candidate with_portfolio(const Candidate& c, int policy_set) {
  Candidate n = c;
  n.policy_set = policy_set;
  n.kind = MoveKind::kSchedule;
  n.origin = c.origin + (policy_set == 1 ? ", lean portfolio" : ", full portfolio");
  return n;
}

class Tuner {
 public:
  Tuner(const Spec& spec, const TuneOptions& opt) : spec_(spec), opt_(opt) {}

  Result<TuneResult> run();

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  bool interrupted() const { return opt_.interrupt && opt_.interrupt->load(); }
  Status prepare();
  // Evaluates the candidates not yet in the history, in parallel; returns the new record indices.
  // A list-scheduled candidate whose plan floor (plan_floor_ms) is at least `prune_ms` is skipped
  // (not recorded: a later call with a higher threshold may evaluate it).
  std::vector<int> evaluate(std::vector<Candidate> cands, double deadline_s, bool budgeted = true,
                            double prune_ms = std::numeric_limits<double>::infinity());
  std::vector<int> ranking() const;  // records not parked, best first
  int64_t best_ops() const;          // default-DAG ops of the best feasible record (0: none)
  // Evaluates paced_front_seeds and parks them (out of the ranking and the history) unless they
  // are the best start.
  void try_paced_fronts(double deadline_s);
  // Evaluates the wave seeds and parks them; returns them when their best is within
  // kWaveLineageMargin of the best other seed (then they get a search of their own), else none.
  std::vector<int> try_wave_lineage(double deadline_s);
  void drop_orders(const std::vector<int>& rank);
  void report(const char* phase);
  void refine_with_z3(const std::vector<int>& rank, double deadline_s);
  // A record's problem, default DAG and order on it (re-timed when it was evaluated elsewhere).
  struct OnDefault {
    Problem problem;
    OpDag dag;
    TimedOrder order;
    bool on_full_dag = true;
  };
  Result<OnDefault> on_default_dag(const Record& r) const;
  Result<TuneResult> verify_and_choose(const std::vector<int>& rank);

  // The time plan: the end (verify) gets a tenth of the limit, Z3 its share, the search the rest.
  double limit_s() const { return std::max(0.0, opt_.time_limit_s); }
  double z3_share() const {
    return opt_.z3_candidates > 0 ? std::clamp(opt_.z3_time_fraction, 0.0, time_budget::kTunerFinishBy) : 0.0;
  }
  // What follows the search takes time in proportion to the best plan's ops: the search ends that
  // much earlier (a deadline that only moves when the best plan changes).
  double reserve_s() const { return opt_.finish_s_per_op * static_cast<double>(best_ops()); }
  double search_deadline() const {
    return std::min(limit_s() * (time_budget::kTunerFinishBy - z3_share()) * phase_share_, limit_s() - reserve_s());
  }

  std::vector<Candidate> initial_seeds() const;
  void add_recompute_seeds(const std::vector<Candidate>& seeds, double deadline_s);
  void add_fused_seeds(double deadline_s);
  void search();
  // The best feasible makespan and the rounds since it last improved.
  struct BestSoFar {
    double ms = std::numeric_limits<double>::infinity();
    int stale = 0;
  };
  bool stop_before_round();
  std::vector<int> choose_beam(const std::vector<int>& rank, bool any_feasible) const;
  std::vector<Candidate> portfolio_moves(const std::vector<int>& rank, const std::vector<int>& beam);
  void add_beam_moves(const std::vector<int>& beam, std::mt19937_64& rng, std::vector<Candidate>& moves);
  bool keep_searching(const std::vector<int>& beam, bool evaluated_any, BestSoFar& best);
  void polish();

  Spec spec_;
  const TuneOptions& opt_;
  SearchSpace space_;
  std::vector<int> fixed_cuts_, fixed_placement_;
  GlobalBound gb_;
  double bound_ms_ = 0;  // max(global bound, layer-packing bound)
  bool window_lp_done_ = false;  // the global bound's LP term has been added (verify_and_choose)
  // The search in two phases where memory binds (RecomputeChoice::kSearch; see run()): the
  // evaluations the current phase may reach, and its share of the search time.
  int evaluation_budget_ = 0;
  double phase_share_ = 1;
  int beam_width_ = 1;   // current beam width and kicks per member (widened on early convergence)
  int kicks_ = 0;
  Clock::time_point t0_ = Clock::now();
  std::vector<Record> records_;
  std::map<std::string, int> history_;
  std::vector<EvalScratch> scratch_;  // per evaluating thread (evaluate.h)
  TuneStats stats_;
  double eval_seconds_ = 0;
  int P_ = 0, M_ = 0;
};

Status Tuner::prepare() {
  P_ = opt_.devices > 0 ? opt_.devices : spec_.cluster.devices;
  M_ = opt_.microbatches > 0 ? opt_.microbatches : spec_.pipeline.microbatches;
  if (P_ < 1) return Status::bad_input(fmt::format("tuner: need at least 1 device, got {}", P_));
  if (M_ < 1) return Status::bad_input(fmt::format("tuner: need at least 1 microbatch, got {}", M_));
  spec_.cluster.devices = P_;
  spec_.pipeline.microbatches = M_;
  if (opt_.memory_gb) {
    PS_RETURN_IF_ERROR(check_memory_limit_gb(*opt_.memory_gb, "tuner: the memory limit"));
    spec_.cluster.memory_gb = *opt_.memory_gb;
  }
  PS_RETURN_IF_ERROR(validate(spec_));
  PS_RETURN_IF_ERROR(check_layers_for_devices(spec_));
  const int L = static_cast<int>(spec_.model.layers.size());
  Result<GlobalBound> gb = global_lower_bound(spec_, P_, M_, spec_.cluster.memory_gb);
  if (!gb.ok()) return gb.status();
  gb_ = *gb;
  if (!gb_.memory_feasible) return Status::error(ErrorCode::kInfeasible, gb_.memory_reason);
  bound_ms_ = std::max(gb_.bound_ms, layer_packing_bound_ms(spec_.model, P_, M_));

  space_.spec = &spec_;
  space_.devices = P_;
  space_.layers = L;
  space_.max_stages_per_device = std::max(1, opt_.max_stages_per_device);
  // With M >= 4P the steady state dominates, and the policies the lean portfolio leaves out do not win
  // (docs/tuner.md, "Lean portfolio"); with fewer microbatches the ramp's order matters more and they
  // can win.
  space_.search_policy_set = opt_.lean_search && M_ >= 4 * P_ ? 1 : 2;
  // Plans stay within the ops limit (finish() checked that one stage per device does).
  space_.max_stages = static_cast<int>(std::min<int64_t>({L, int64_t{space_.max_stages_per_device} * P_,
                                                          std::max<int64_t>(P_, limits::kMaxPlanOps / (3 * int64_t{M_}))}));
  space_.include_baselines = opt_.include_baselines;
  space_.canonical = spec_.cluster.devices_per_node <= 0 || spec_.cluster.devices_per_node >= P_;
  for (int l = 0; l < L; ++l) {
    space_.layer_ms.push_back(layer_time_ms(spec_.model, LayerId{l}));
    space_.layer_mb.push_back(layer_memory_mb(spec_, LayerId{l}));
  }
  space_.head_ms = forward_heads_ms(spec_.model);
  space_.recompute = opt_.recompute;
  space_.memory_limited = spec_.cluster.memory_gb > 0;
  for (int l = 0; l < L; ++l) {
    const LayerType& t = spec_.model.type_of(l);
    space_.layer_drop_selective.push_back(std::max(0.0, t.activation_mb - t.recompute_selective.kept_mb));
    space_.layer_drop_full.push_back(std::max(0.0, t.activation_mb - t.recompute_full.kept_mb));
    space_.layer_splits.push_back(t.split_backward ? 1 : 0);
    space_.layer_fuse_gain_ms.push_back(t.backward_input_ms + t.backward_weight_ms - t.fused_backward_ms());
    space_.layer_walk_ms.push_back(t.weight_walk_ms);
    space_.fuse_choice = space_.fuse_choice ||
                         (t.split_backward && (space_.layer_fuse_gain_ms.back() + spec_.cluster.op_overhead_ms > 1e-9 ||
                                               t.weight_walk_ms > 0));
  }
  if (opt_.partition) {
    PS_RETURN_IF_ERROR(check_partition(*opt_.partition, L));
    fixed_cuts_.push_back(0);
    for (const LayerRange& r : *opt_.partition) fixed_cuts_.push_back(r.last + 1);
    space_.fixed_partition = true;
    space_.max_stages = std::max(space_.max_stages, static_cast<int>(opt_.partition->size()));
    if (static_cast<int>(opt_.partition->size()) < P_)
      return Status::bad_input(fmt::format("partition has {} stages, fewer than the {} devices", opt_.partition->size(), P_));
  }
  if (opt_.placement) {
    const int S = static_cast<int>(opt_.placement->size());
    if (opt_.partition && static_cast<int>(opt_.partition->size()) != S)
      return Status::bad_input(fmt::format("placement names {} stages, the partition has {}", S, opt_.partition->size()));
    if (S > L)
      return Status::bad_input(fmt::format("placement names {} stages, but the model has only {} layers", S, L));
    Result<std::vector<int>> pl = placement_explicit(*opt_.placement, S, P_);
    if (!pl.ok()) return pl.status();
    fixed_placement_ = *pl;
    space_.fixed_placement = true;
    space_.max_stages = std::max(space_.max_stages, S);
  }
  return Status::ok();
}

std::vector<int> Tuner::evaluate(std::vector<Candidate> cands, double deadline_s, bool budgeted, double prune_ms) {
  std::vector<Candidate> fresh;
  std::set<std::string> seen;
  std::vector<std::string> keys;
  for (Candidate& c : cands) {
    std::string k = c.key();
    if (history_.count(k) || !seen.insert(k).second) {
      ++stats_.duplicates;
      continue;
    }
    if (c.baseline < 0 && plan_floor_ms(space_, c) >= prune_ms) {
      ++stats_.pruned;
      continue;
    }
    keys.push_back(std::move(k));
    fresh.push_back(std::move(c));
  }
  if (budgeted && opt_.max_evaluations > 0) {
    const int left = std::max(0, evaluation_budget_ - stats_.evaluated);
    if (static_cast<int>(fresh.size()) > left) {
      fresh.resize(left);
      keys.resize(left);
    }
  }
  const int n = static_cast<int>(fresh.size());
  std::vector<Evaluation> evals(n);
  std::vector<char> ran(n, 0);
  // Past the deadline no evaluation starts, and one under way stops at its next policy and is
  // dropped (on plans of 10^5+ ops one takes seconds) — unless nothing feasible has been found
  // yet: the search must end with a plan. The deadline moves earlier by finish_s_per_op per op of
  // the best plan (the first feasible one of this call while there is none yet): the seeds alone
  // can take seconds on such plans.
  std::atomic<int64_t> reserve_ops{best_ops()};  // > 0 once a plan that fits exists
  auto deadline = [&] {
    if (interrupted()) return -std::numeric_limits<double>::infinity();
    return std::min(deadline_s, opt_.time_limit_s - opt_.finish_s_per_op * static_cast<double>(reserve_ops.load()));
  };
  auto past_deadline = [&] { return reserve_ops.load() > 0 && elapsed() > deadline(); };
  const int threads = std::max(1, opt_.threads);
  if (static_cast<int>(scratch_.size()) < threads) scratch_.resize(threads);
  parallel_for_workers(
      n, threads,
      [&](int i, int worker) {
        evals[i] = evaluate_candidate(spec_, fresh[i], past_deadline, &scratch_[worker]);
        ran[i] = !evals[i].stopped;
        int64_t none = 0;
        if (evals[i].feasible) reserve_ops.compare_exchange_strong(none, evals[i].ops);
      },
      past_deadline);
  std::vector<int> added;
  for (int i = 0; i < n; ++i) {
    if (!ran[i]) continue;
    ++stats_.evaluated;
    eval_seconds_ += evals[i].seconds;
    if (fresh[i].policy_set == 1) ++stats_.lean_evaluations;
    if (fresh[i].policy_set == 2) ++stats_.whole_evaluations;
    if (evals[i].feasible) ++stats_.feasible;
    else ++stats_.infeasible;
    switch (fresh[i].kind) {
      case MoveKind::kPartition:
      case MoveKind::kMemory: ++stats_.moves_partition; break;
      case MoveKind::kPlacement: ++stats_.moves_placement; break;
      case MoveKind::kSchedule: ++stats_.moves_schedule; break;
      case MoveKind::kKick: ++stats_.moves_kick; break;
      case MoveKind::kRecompute: ++stats_.moves_recompute; break;
      case MoveKind::kBackward: ++stats_.moves_backward; break;
      default: break;
    }
    Record r;
    r.cand = std::move(fresh[i]);
    r.eval = std::move(evals[i]);
    r.key = keys[i];
    history_[r.key] = static_cast<int>(records_.size());
    added.push_back(static_cast<int>(records_.size()));
    records_.push_back(std::move(r));
  }
  return added;
}

// Paced-front seeds start the search only when the best of them is shorter than every other seed,
// each family's best re-scored with the search portfolio (the screening policies rank Nemotron-H's
// best paced seed 0.1 % behind the best plain one, the lean portfolio 1.5 % ahead); else they leave
// the ranking and the history, and the search goes on as if they had not been tried: admitted
// where they are not the best start, they would crowd the beam (docs/tuner.md, "Paced fronts").
void Tuner::try_paced_fronts(double deadline_s) {
  auto park = [&](const std::vector<int>& ids) {
    for (int i : ids) {
      records_[i].parked = true;
      history_.erase(records_[i].key);
    }
  };
  auto best_of = [&](const std::vector<int>& ids) {  // best feasible heuristic record, or -1
    int best = -1;
    for (int i : ids)
      if (records_[i].eval.feasible && records_[i].cand.baseline < 0 &&
          (best < 0 || ranks_before(records_[i], records_[best])))
        best = i;
    return best;
  };
  const int plain = best_of(ranking());
  std::vector<int> paced = evaluate(paced_front_seeds(space_), deadline_s);
  stats_.paced_seeds = static_cast<int>(paced.size());
  const int paced_best = best_of(paced);
  if (paced_best < 0) return park(paced);
  stats_.paced_admitted = true;  // until they lose below
  if (plain < 0) return;         // no other seed fits: they are the only start
  const int set = space_.search_policy_set;
  const std::vector<int> plain_whole = evaluate({with_portfolio(records_[plain].cand, set)}, deadline_s);
  const std::vector<int> paced_whole = evaluate({with_portfolio(records_[paced_best].cand, set)}, deadline_s);
  paced.insert(paced.end(), paced_whole.begin(), paced_whole.end());
  std::vector<int> plain_ids = plain_whole;
  plain_ids.push_back(plain);
  if (ranks_before(records_[best_of(paced)], records_[best_of(plain_ids)])) return;
  stats_.paced_admitted = false;
  park(paced);
  park(plain_whole);  // the search's first round re-scores the best seed itself
}

// Wave seeds (moves.h) lead to plans no other seed reaches (Gemma-like at P = M = 16: 362.0 ms
// against 382.7 in 20 s), but admitted beside the others they crowd the beam and can end on a worse
// plan than the other seeds would have (Gemma-like at P = M = 8: 341.6 against 336.4 ms). So they
// get a search of their own: the other seeds' search first (half the search time, or half the
// evaluation budget), then, every record so far out of the ranking (its best kept for the checker),
// a search from the wave seeds alone (the rest); the checker then compares the best of both. Only
// where the best wave seed, screened like the others, is within kWaveLineageMargin of the best
// other seed: elsewhere the other seeds' search has the whole time, as without wave seeds.
std::vector<int> Tuner::try_wave_lineage(double deadline_s) {
  std::vector<int> wave = evaluate(wave_seeds(space_, opt_.seed), deadline_s);
  stats_.wave_seeds = static_cast<int>(wave.size());
  int best_wave = -1, best_other = -1;
  for (int i : ranking()) {
    const Record& r = records_[i];
    if (!r.eval.feasible || r.cand.baseline >= 0) continue;
    const bool is_wave = std::find(wave.begin(), wave.end(), i) != wave.end();
    int& best = is_wave ? best_wave : best_other;
    if (best < 0) best = i;
  }
  for (int i : wave) {
    records_[i].parked = true;
    history_.erase(records_[i].key);
  }
  if (best_wave < 0 || (best_other >= 0 && records_[best_wave].eval.makespan_ms >
                                               (1 + kWaveLineageMargin) * records_[best_other].eval.makespan_ms))
    return {};
  return wave;
}

int64_t Tuner::best_ops() const {
  const std::vector<int> rank = ranking();
  return !rank.empty() && records_[rank[0]].eval.feasible ? records_[rank[0]].eval.ops : 0;
}

std::vector<int> Tuner::ranking() const {
  std::vector<int> idx;
  for (size_t i = 0; i < records_.size(); ++i)
    if (!records_[i].parked && !records_[i].hidden) idx.push_back(static_cast<int>(i));
  std::sort(idx.begin(), idx.end(), [&](int a, int b) { return ranks_before(records_[a], records_[b]); });
  return idx;
}

// Orders are large (one entry per op); keep them only where the end needs them.
void Tuner::drop_orders(const std::vector<int>& rank) {
  const int keep = std::max({beam_width_, opt_.verify_top, opt_.z3_candidates}) + 4;
  std::vector<char> keep_it(records_.size(), 0);
  for (int i = 0; i < static_cast<int>(rank.size()) && i < keep; ++i) keep_it[rank[i]] = 1;
  for (size_t i = 0; i < records_.size(); ++i) {
    if (keep_it[i] || records_[i].cand.baseline >= 0 || records_[i].keep) continue;
    records_[i].eval.order = TimedOrder{};
  }
}

void Tuner::report(const char* phase) {
  if (!opt_.progress) return;
  TuneProgress p;
  p.evaluated = stats_.evaluated;
  p.feasible = stats_.feasible;
  p.lower_bound_ms = bound_ms_;
  p.elapsed_s = elapsed();
  p.phase = phase;
  const Record* best = nullptr;
  for (const Record& r : records_)
    if (r.eval.feasible && (!best || ranks_before(r, *best))) best = &r;
  if (best) {
    p.has_best = true;
    p.best_ms = best->eval.makespan_ms;
    p.gap = relative_gap(best->eval.makespan_ms, bound_ms_);
    p.best_desc = describe(*best, P_);
  }
  opt_.progress(p);
}

Result<Tuner::OnDefault> Tuner::on_default_dag(const Record& r) const {
  Result<Problem> pr = dag_problem(spec_, r.cand, r.eval.fused_backward);
  if (!pr.ok()) return pr.status();
  Result<OpDag> dag = build_op_dag(*pr);
  if (!dag.ok()) return dag.status();
  OnDefault out;
  out.on_full_dag = r.eval.order_on_full_dag;
  if (!r.z3 && !eval_dag_options(r.cand, *pr).comm_streams) {
    Result<OpDag> from = build_op_dag(*pr, eval_dag_options(r.cand, *pr));
    if (!from.ok()) return from.status();
    Result<TimedOrder> t = retime_on(*from, r.eval.order, *dag, &out.on_full_dag);
    if (!t.ok()) return t.status();
    out.order = std::move(t).value();
  } else {
    out.order = r.eval.order;
  }
  out.problem = std::move(pr).value();
  out.dag = std::move(dag).value();
  return out;
}

void Tuner::refine_with_z3(const std::vector<int>& rank, double deadline_s) {
  std::vector<int> picks;
  for (int i : rank) {
    if (static_cast<int>(picks.size()) >= opt_.z3_candidates) break;
    const Record& r = records_[i];
    if (!r.eval.feasible || !r.eval.order_on_full_dag || r.eval.order.order.empty()) continue;
    picks.push_back(i);
  }
  if (picks.empty()) return;
  const double budget = std::max(0.0, deadline_s - elapsed());
  if (budget < 0.2) return;
  // Each pick gets the same share of the wall clock on its own thread (its own Z3 context).
  const int threads = std::max(1, opt_.threads);
  const int waves = (static_cast<int>(picks.size()) + threads - 1) / threads;
  const double share = budget / waves;
  std::vector<std::optional<Record>> out(picks.size());
  parallel_for(static_cast<int>(picks.size()), threads, [&](int k) {
    const Record& r = records_[picks[k]];
    Result<OnDefault> od = on_default_dag(r);
    if (!od.ok() || !od->on_full_dag) return;
    const OpDag* dag = &od->dag;
    const DagBound lb = dag_lower_bound(*dag);
    SolveOptions so;
    so.time_limit_s = share;
    so.seed = static_cast<unsigned>(opt_.seed);
    so.contexts = 1;
    Result<SolveResult> sr = solve(*dag, od->order, lb.units, so);
    if (!sr.ok()) return;
    Record z = r;
    z.z3 = true;
    z.z3_optimal = sr->optimal;
    z.eval.order = sr->best;
    z.eval.makespan_ms = dag->to_ms(sr->best.makespan);
    z.eval.policy = fmt::format("z3 ({}) over {}", sr->status, r.eval.policy);
    z.cand.origin = r.cand.origin;
    z.key = r.key + "/z3";
    out[k] = std::move(z);
  });
  stats_.z3_runs += static_cast<int>(picks.size());
  for (auto& z : out) {
    if (!z) continue;
    history_[z->key] = static_cast<int>(records_.size());
    records_.push_back(std::move(*z));
  }
}

Result<TuneResult> Tuner::verify_and_choose(const std::vector<int>& rank) {
  // Best heuristic/Z3 candidates plus every feasible baseline.
  std::vector<int> picks;
  int taken = 0;
  for (int i : rank) {
    const Record& r = records_[i];
    if (!r.eval.feasible || r.eval.order.order.empty()) continue;
    if (r.cand.baseline >= 0 || r.z3 || r.keep) {
      picks.push_back(i);
    } else if (taken < std::max(1, opt_.verify_top)) {
      picks.push_back(i);
      ++taken;
    }
  }
  if (picks.empty()) {
    const Record* least = nullptr;
    for (const Record& r : records_)
      if (!least || ranks_before(r, *least)) least = &r;
    std::string why = least ? fmt::format("; closest candidate ({}): {}", describe(*least, P_), least->eval.why) : "";
    if (stats_.stop_reason == SearchStop::kTimeLimit) why += fmt::format(" (the {:g} s time limit ended the search)", opt_.time_limit_s);
    if (stats_.stop_reason == SearchStop::kInterrupted) why += " (the search was interrupted)";
    if (stats_.stop_reason == SearchStop::kEvaluationBudget)
      why += fmt::format(" (the budget of {} evaluations ended the search)", opt_.max_evaluations);
    return Status::error(ErrorCode::kInfeasible,
                         fmt::format("no partition/placement of '{}' on {} devices with {} microbatches fits {} GB per "
                                     "device{}",
                                     spec_.model.name, P_, M_, spec_.cluster.memory_gb, why));
  }
  struct Checked {
    bool ok = false;
    std::string error;
    Problem problem;
    Schedule schedule;
    TimedOrder order;
    bool on_full_dag = true;
    double dag_ms = 0;
    double simulated_ms = 0, bubble = 0, bound_ms = 0;
  };
  std::vector<Checked> checked(picks.size());
  const auto tv = Clock::now();
  parallel_for(static_cast<int>(picks.size()), std::max(1, opt_.threads), [&](int k) {
    const Record& r = records_[picks[k]];
    Checked& c = checked[k];
    Result<OnDefault> od = on_default_dag(r);
    if (!od.ok()) {
      c.error = od.status().message();
      return;
    }
    c.problem = od->problem;
    c.order = od->order;
    c.on_full_dag = od->on_full_dag;
    c.dag_ms = od->dag.to_ms(od->order.makespan);
    c.schedule = order_to_schedule(od->problem, od->dag, od->order, "pipesmith synth (tuner)");
    VerifyOptions vo;
    vo.semantics = Semantics::kRendezvous;
    Report rep = verify(c.schedule, vo);
    if (!rep.valid || !rep.sim) {
      c.error = rep.violations.empty() ? "not simulated" : rep.violations.front().message;
      return;
    }
    c.ok = true;
    c.simulated_ms = rep.sim->makespan_ms;
    c.bubble = rep.sim->bubble_ratio;
    c.bound_ms = rep.lower_bound_ms;
  });
  stats_.verify_s = std::chrono::duration<double>(Clock::now() - tv).count();
  stats_.verified = static_cast<int>(picks.size());
  int best = -1;
  for (int k = 0; k < static_cast<int>(picks.size()); ++k) {
    if (!checked[k].ok) continue;
    if (best < 0 || checked[k].simulated_ms < checked[best].simulated_ms) best = k;
  }
  if (best < 0) {
    const Record& r = records_[picks[0]];
    return Status::error(ErrorCode::kRuntime,
                         fmt::format("internal error: the checker rejected every tuned schedule; first ({}): {}",
                                     describe(r, P_), checked[0].error));
  }
  // The global bound's LP term (global_bound.h, window_lp) takes up to a second or two, so it is
  // computed once, for the result, after the search (which used the other terms), and only where the
  // chosen schedule is more than 1 % above the other terms' bound (there is a gap to prove).
  if (!window_lp_done_ && checked[best].simulated_ms > bound_ms_ * 1.01) {
    window_lp_done_ = true;
    if (Result<GlobalBound> g = global_lower_bound(spec_, P_, M_, spec_.cluster.memory_gb,
                                                   GlobalBoundOptions{kWindowLpBudget});
        g.ok() && g->bound_ms > gb_.bound_ms) {
      gb_ = *g;
      bound_ms_ = std::max(bound_ms_, gb_.bound_ms);
    }
  }
  const Record& r = records_[picks[best]];
  Checked& c = checked[best];
  TuneResult out;
  out.problem = std::move(c.problem);
  out.partition = r.cand.partition();
  out.placement = r.cand.placement;
  out.order = std::move(c.order);
  out.order_on_full_dag = c.on_full_dag;
  out.schedule = std::move(c.schedule);
  out.origin = r.z3 ? "z3 on " + r.cand.origin : r.cand.origin;
  out.policy = r.eval.policy;
  out.description = describe(r, P_);
  out.dag_makespan_ms = c.dag_ms;
  out.simulated_ms = c.simulated_ms;
  out.bubble_ratio = c.bubble;
  out.lower_bound_ms = bound_ms_;
  out.global_bound_ms = gb_.bound_ms;
  out.problem_bound_ms = c.bound_ms;
  out.z3_used = r.z3;
  out.z3_optimal = r.z3_optimal;
  return out;
}

// The seeds; with both the partition and the placement given, nothing is left to search but the
// scheduling policy: the plan itself comes first, then with the extended portfolio.
std::vector<Candidate> Tuner::initial_seeds() const {
  const std::vector<int>* fc = space_.fixed_partition ? &fixed_cuts_ : nullptr;
  const std::vector<int>* fp = space_.fixed_placement ? &fixed_placement_ : nullptr;
  std::vector<Candidate> seeds = seed_candidates(space_, fc, fp);
  if (fc && fp) {
    Candidate c;
    c.cuts = fixed_cuts_;
    c.placement = fixed_placement_;
    c.origin = "given partition and placement";
    if (finish_candidate(space_, c)) {
      Candidate e = c;
      e.policy_set = 2;
      e.kind = MoveKind::kSchedule;
      e.origin += ", extended portfolio";
      seeds.insert(seeds.begin(), {c, e});
    }
  }
  return seeds;
}

// With RecomputeChoice::kSearch under a cap: the seeds whose memory binds (they do not fit, or their
// peak leaves no room for another microbatch) — the best four heuristic ones, and every baseline
// that binds or, where some seed binds, that the evaluation budget left out — again with uniform
// selective and full recomputation, so that the search holds the uniformly recomputing baselines it
// must beat. They are at most 2 × (4 + the baselines) and outside the evaluation budget (the seeds
// alone can spend it), inside the time.
void Tuner::add_recompute_seeds(const std::vector<Candidate>& plain, double deadline_s) {
  if (space_.recompute != RecomputeChoice::kSearch || !space_.memory_limited) return;
  std::vector<Candidate> seeds;
  auto add_uniform = [&](const Candidate& c) {
    for (RecomputeMode m : {RecomputeMode::kSelective, RecomputeMode::kFull})
      if (std::optional<Candidate> u = with_uniform_recompute(space_, c, m)) seeds.push_back(std::move(*u));
  };
  constexpr int kHeuristicSeeds = 4;
  int heuristic = 0;
  for (int i : ranking()) {
    const Record& r = records_[i];
    if (r.cand.baseline >= 0 || !r.cand.recompute.empty() || !memory_binds(r)) continue;
    if (heuristic++ >= kHeuristicSeeds) break;
    add_uniform(r.cand);
  }
  // Baselines the budget left out: only where memory binds somewhere among the evaluated seeds.
  const bool any_binds = std::any_of(records_.begin(), records_.end(), memory_binds);
  for (const Candidate& c : plain) {
    if (c.baseline < 0 || !c.recompute.empty()) continue;
    auto it = history_.find(c.key());
    if (it != history_.end() ? memory_binds(records_[it->second]) : any_binds) add_uniform(c);
  }
  evaluate(std::move(seeds), deadline_s, false);
}

// Where some stage may run B by choice (SearchSpace::fuse_choice): the best four heuristic seeds
// again with B on every stage that may run it. Outside the evaluation budget, inside the time.
void Tuner::add_fused_seeds(double deadline_s) {
  if (!space_.fuse_choice) return;
  constexpr int kHeuristicSeeds = 4;
  std::vector<Candidate> seeds;
  for (int i : ranking()) {
    const Record& r = records_[i];
    if (r.cand.baseline >= 0 || !r.cand.fused.empty()) continue;
    if (static_cast<int>(seeds.size()) >= kHeuristicSeeds) break;
    if (std::optional<Candidate> f = with_fused_backward(space_, r.cand)) seeds.push_back(std::move(*f));
  }
  evaluate(std::move(seeds), deadline_s, false);
}

// Whether the search stops before another round: interrupted, out of time, or out of evaluations
// (stats_.stop_reason says which).
bool Tuner::stop_before_round() {
  if (interrupted()) {
    stats_.stop_reason = SearchStop::kInterrupted;
    return true;
  }
  if (elapsed() > search_deadline()) {
    stats_.stop_reason = SearchStop::kTimeLimit;
    return true;
  }
  if (opt_.max_evaluations > 0 && stats_.evaluated >= evaluation_budget_) {
    stats_.stop_reason = SearchStop::kEvaluationBudget;
    return true;
  }
  return false;
}

// The beam: the best feasible records (or, when none fits, the least infeasible ones).
std::vector<int> Tuner::choose_beam(const std::vector<int>& rank, bool any_feasible) const {
  std::vector<int> beam;
  for (int i : rank) {
    if (static_cast<int>(beam.size()) >= beam_width_) break;
    if (records_[i].eval.feasible != any_feasible) break;
    if (!any_feasible && records_[i].eval.min_footprint_mb.empty()) continue;
    beam.push_back(i);
  }
  return beam;
}

// Screened plans re-scored with the search portfolio.
std::vector<Candidate> Tuner::portfolio_moves(const std::vector<int>& rank, const std::vector<int>& beam) {
  std::vector<Candidate> moves;
  // The search portfolio for the best screened member (the others get it if they lead later).
  const int search_set = space_.search_policy_set;
  for (int i : beam) {
    const Record& r = records_[i];
    if (r.cand.baseline < 0 && r.cand.policy_set == 0 && !history_.count(with_portfolio(r.cand, search_set).key())) {
      moves.push_back(with_portfolio(r.cand, search_set));
      break;
    }
  }
  // ... and for the screened plan with the lowest plan floor, when that floor is clearly below
  // the best record's: the screening policies can rank a better-balanced plan below the beam
  // although the whole portfolio finds a shorter order for it (gpt-oss at P = 16, M = 64). One
  // per round: the whole portfolio costs about twenty screening evaluations, the lean one eight.
  if (opt_.full_portfolio_by_floor && !rank.empty()) {
    int low = -1;
    double low_floor = 0.995 * plan_floor_ms(space_, records_[rank[0]].cand);
    for (int i : rank) {
      const Record& r = records_[i];
      if (!r.eval.feasible) break;
      if (r.cand.baseline >= 0 || r.cand.policy_set != 0) continue;
      const double f = plan_floor_ms(space_, r.cand);
      if (f < low_floor && !history_.count(with_portfolio(r.cand, search_set).key())) {
        low = i;
        low_floor = f;
      }
    }
    if (low >= 0) {
      moves.push_back(with_portfolio(records_[low].cand, search_set));
      ++stats_.floor_portfolios;
    }
  }
  return moves;
}

// Every beam member's bubble moves (escalated once it was expanded before) and random kicks.
void Tuner::add_beam_moves(const std::vector<int>& beam, std::mt19937_64& rng, std::vector<Candidate>& moves) {
  for (int i : beam) {
    Record& r = records_[i];
    std::vector<Candidate> m = bubble_moves(space_, r.cand, r.eval, r.expansions > 0);
    ++r.expansions;
    std::vector<Candidate> k = kick_moves(space_, r.cand, rng, kicks_);
    for (Candidate& c : m) moves.push_back(std::move(c));
    for (Candidate& c : k) moves.push_back(std::move(c));
  }
}

// After a round: tracks improvement, reports, and decides whether another round follows (the
// bound reached, or converged without room to widen, ends the search).
bool Tuner::keep_searching(const std::vector<int>& beam, bool evaluated_any, BestSoFar& best) {
  const std::vector<int> rank = ranking();
  const double now_best =
      !rank.empty() && records_[rank[0]].eval.feasible ? records_[rank[0]].eval.makespan_ms : best.ms;
  if (now_best < best.ms) {
    best.ms = now_best;
    ++stats_.improvements;
    best.stale = 0;
  } else {
    ++best.stale;
  }
  report("search");
  // Converged: nothing new to try, or no improvement for `patience` rounds once every beam
  // member has been expanded with all kinds of moves.
  bool all_escalated = true;
  for (int i : beam) all_escalated = all_escalated && records_[i].expansions >= 2;
  // Within 0.01 % of the bound: nothing left worth searching for.
  if (best.ms <= bound_ms_ * (1 + 1e-4)) {
    stats_.stop_reason = SearchStop::kReachedBound;
    return false;
  }
  const bool converged = (!evaluated_any || best.stale >= std::max(1, opt_.patience)) && all_escalated;
  if (!converged) return true;
  // Converged early: while at most 80 % of the search time is spent, widen the beam (up to 8x)
  // and the random kicks (up to 64 per member) and go on from the same history.
  const int max_beam = 8 * std::max(1, opt_.beam_width);
  if (opt_.widen_on_convergence && elapsed() < time_budget::kTunerWidenUntil * search_deadline() && (beam_width_ < max_beam || kicks_ < 64)) {
    if (beam_width_ < max_beam) beam_width_ *= 2;
    kicks_ = std::min(64, std::max(1, kicks_ * 2));
    best.stale = 0;
    ++stats_.widenings;
    return true;
  }
  return false;
}

// The bubble-aware beam search: each round expands the beam with moves and kicks, evaluates what
// could still join the beam, and stops on the limits, at the bound, or when converged.
void Tuner::search() {
  std::mt19937_64 rng(opt_.seed * 0x9E3779B97F4A7C15ull + 1);
  BestSoFar best;
  {
    std::vector<int> rank = ranking();
    if (!rank.empty() && records_[rank[0]].eval.feasible) best.ms = records_[rank[0]].eval.makespan_ms;
  }
  stats_.stop_reason = SearchStop::kConverged;
  beam_width_ = std::max(1, opt_.beam_width);
  kicks_ = std::max(0, opt_.kicks_per_round);
  if (space_.fixed_partition && space_.fixed_placement) {
    stats_.stop_reason = SearchStop::kFixed;
    return;
  }
  while (!stop_before_round()) {
    std::vector<int> rank = ranking();
    drop_orders(rank);
    const bool any_feasible = !rank.empty() && records_[rank[0]].eval.feasible;
    const std::vector<int> beam = choose_beam(rank, any_feasible);
    std::vector<Candidate> moves = portfolio_moves(rank, beam);
    add_beam_moves(beam, rng, moves);
    // A move that cannot beat the beam's last member cannot join the beam.
    double prune_ms = std::numeric_limits<double>::infinity();
    if (any_feasible && static_cast<int>(beam.size()) == beam_width_) prune_ms = records_[beam.back()].eval.makespan_ms;
    const int before = stats_.evaluated;
    evaluate(std::move(moves), search_deadline(), true, prune_ms);
    ++stats_.rounds;
    if (!keep_searching(beam, stats_.evaluated > before, best)) break;
  }
}

// Polish: the best candidates get the whole portfolio before the checker sees them (the lean
// one leaves out policies that can win elsewhere).
void Tuner::polish() {
  std::vector<int> rank = ranking();
  std::vector<Candidate> polish;
  for (int i : rank) {
    if (static_cast<int>(polish.size()) >= std::max(1, opt_.verify_top)) break;
    const Record& r = records_[i];
    if (!r.eval.feasible) break;
    if (r.cand.baseline < 0 && r.cand.policy_set < 2 && !history_.count(with_portfolio(r.cand, 2).key()))
      polish.push_back(with_portfolio(r.cand, 2));
  }
  // Outside the evaluation budget (they re-score what the result is made of), inside the time.
  evaluate(std::move(polish), std::min(limit_s() * time_budget::kTunerFinishBy, limit_s() - reserve_s()), false);
}

// With RecomputeChoice::kSearch under a cap the search runs in two phases. First exactly the search
// without recomputation (its evaluation budget; under the clock, half the search time where a seed's
// memory binds, else all of it; the wave seeds' own search, where it runs, inside that share); then,
// only where some candidate's memory binds, the recompute seeds and a second search with recompute
// moves (as many evaluations again, the rest of the time), from everything the first one found.
// The first phase's best candidates are always among those the checker compares, so the result is
// never slower than the plan the search without recomputation would take.
Result<TuneResult> Tuner::run() {
  PS_RETURN_IF_ERROR(prepare());
  evaluation_budget_ = opt_.max_evaluations;
  const bool two_phase = space_.recompute == RecomputeChoice::kSearch && space_.memory_limited;
  if (two_phase) space_.recompute = RecomputeChoice::kNone;
  const std::vector<Candidate> seeds = initial_seeds();
  evaluate(seeds, search_deadline());
  // Under the clock the first phase keeps half the search time for the second where a seed's
  // memory binds already; elsewhere it has all of it.
  if (two_phase && opt_.max_evaluations <= 0 && std::any_of(records_.begin(), records_.end(), memory_binds))
    phase_share_ = 0.5;
  try_paced_fronts(search_deadline());
  // In two phases the wave seeds' search is part of the first (without recomputation): the two
  // searches split its share of the time.
  const double first_share = phase_share_;
  const std::vector<int> wave = try_wave_lineage(search_deadline());
  if (!wave.empty()) {
    phase_share_ = first_share / 2;
    if (opt_.max_evaluations > 0) evaluation_budget_ = stats_.evaluated + (opt_.max_evaluations - stats_.evaluated) / 2;
  }
  add_fused_seeds(search_deadline());
  report("seeds");
  search();
  SearchStop stop = stats_.stop_reason;
  polish();
  if (!wave.empty() && !interrupted()) {
    // The wave seeds' own search: everything so far leaves the ranking (the best stay for the
    // checker, their orders kept), the wave seeds come back into it and the history.
    std::vector<int> picks = ranking();
    picks.resize(std::min<size_t>(picks.size(), std::max(1, opt_.verify_top)));
    for (int i : picks) records_[i].keep = true;
    for (Record& r : records_) r.hidden = true;
    for (int i : wave) {
      records_[i].hidden = false;
      records_[i].parked = false;
      history_[records_[i].key] = i;
    }
    stats_.wave_admitted = true;
    phase_share_ = first_share;
    evaluation_budget_ = opt_.max_evaluations;
    search();
    stop = binding_stop(stop, stats_.stop_reason);
    polish();
    for (Record& r : records_) r.hidden = false;
  }
  if (two_phase) {
    space_.recompute = RecomputeChoice::kSearch;
    phase_share_ = 1;
    if (std::any_of(records_.begin(), records_.end(), memory_binds) && !interrupted()) {
      // The first phase's candidates for the checker.
      std::vector<int> plain_picks = ranking();
      plain_picks.resize(std::min<size_t>(plain_picks.size(), std::max(1, opt_.verify_top)));
      for (int i : plain_picks) records_[i].keep = true;
      evaluation_budget_ = stats_.evaluated + opt_.max_evaluations;
      add_recompute_seeds(seeds, search_deadline());
      report("recompute seeds");
      search();
      stop = binding_stop(stop, stats_.stop_reason);
      polish();
    }
  }
  stats_.stop_reason = stop;
  stats_.search_s = elapsed();
  std::vector<int> rank = ranking();
  drop_orders(rank);
  if (opt_.z3_candidates > 0) {
    const double tz = elapsed();
    refine_with_z3(rank, std::min(limit_s() * time_budget::kTunerFinishBy, tz + limit_s() * z3_share()));
    stats_.z3_s = elapsed() - tz;
    report("z3");
    rank = ranking();
  }
  Result<TuneResult> res = verify_and_choose(rank);
  if (!res.ok()) return res;
  stats_.total_s = elapsed();
  stats_.ms_per_eval = stats_.evaluated > 0 ? 1000 * eval_seconds_ / stats_.evaluated : 0;
  res->stats = stats_;
  report("verify");
  return res;
}

}  // namespace

const char* search_stop_name(SearchStop s) {
  switch (s) {
    case SearchStop::kConverged: return "converged";
    case SearchStop::kReachedBound: return "reached the lower bound";
    case SearchStop::kTimeLimit: return "time limit";
    case SearchStop::kEvaluationBudget: return "evaluation budget";
    case SearchStop::kInterrupted: return "interrupted";
    case SearchStop::kFixed: return "fixed";
  }
  return "unknown";
}

SearchStop binding_stop(SearchStop a, SearchStop b) {
  auto rank = [](SearchStop s) {
    switch (s) {
      case SearchStop::kInterrupted: return 5;
      case SearchStop::kTimeLimit: return 4;
      case SearchStop::kEvaluationBudget: return 3;
      case SearchStop::kReachedBound: return 2;
      case SearchStop::kConverged: return 1;
      case SearchStop::kFixed: return 0;
    }
    return 0;
  };
  return rank(a) >= rank(b) ? a : b;
}

Result<TuneResult> cooptimize(const Spec& spec, const TuneOptions& options) {
  Tuner t(spec, options);
  return t.run();
}

}  // namespace ps
