// evaluate.cpp — candidates, their keys and their evaluation (see evaluate.h).
#include "ir/units.h"
#include "synth/tuner/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <optional>

#include "synth/baselines/baselines.h"
#include "synth/dag/list_scheduler.h"
#include "synth/dag/justify.h"
#include "synth/dag/schedule_order.h"

namespace ps {

namespace tuner_detail {

const char* move_kind_name(MoveKind k) {
  switch (k) {
    case MoveKind::kSeed: return "seed";
    case MoveKind::kBaseline: return "baseline";
    case MoveKind::kPartition: return "partition";
    case MoveKind::kPlacement: return "placement";
    case MoveKind::kSchedule: return "schedule";
    case MoveKind::kKick: return "kick";
    case MoveKind::kMemory: return "memory";
    case MoveKind::kRecompute: return "recompute";
    case MoveKind::kBackward: return "backward";
  }
  return "?";
}

Partition Candidate::partition() const {
  Partition p;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) p.push_back({cuts[s], cuts[s + 1] - 1});
  return p;
}

std::string Candidate::key() const {
  // Built for every move the search generates (most are pruned or already seen): integers written
  // with to_chars rather than a format call each.
  std::string k;
  k.reserve(cuts.size() * 4 + placement.size() * 3 + 16);
  auto put = [&k](int v) {
    char buf[16];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    k.append(buf, r.ptr);
  };
  for (int c : cuts) {
    put(c);
    k += ',';
  }
  k += '/';
  for (int d : placement) {
    put(d);
    k += ',';
  }
  k += "/p";
  put(policy_set);
  k += "/b";
  put(baseline);
  if (!recompute.empty()) {
    k += "/r";
    for (RecomputeMode m : recompute) k += static_cast<char>('0' + static_cast<int>(m));
  }
  if (!fused.empty()) {
    k += "/f";
    for (char f : fused) k += f ? '1' : '0';
  }
  return k;
}

Candidate make_candidate(const Partition& p, std::vector<int> placement, MoveKind kind, std::string origin) {
  Candidate c;
  c.cuts.push_back(0);
  for (const LayerRange& r : p) c.cuts.push_back(r.last + 1);
  c.placement = std::move(placement);
  c.kind = kind;
  c.origin = std::move(origin);
  return c;
}

std::vector<int> canonical_placement(const std::vector<int>& placement) {
  std::vector<int> rename;
  std::vector<int> out(placement.size());
  for (size_t s = 0; s < placement.size(); ++s) {
    const int d = placement[s];
    if (d >= static_cast<int>(rename.size())) rename.resize(d + 1, -1);
    if (rename[d] < 0) rename[d] = static_cast<int>(std::count_if(rename.begin(), rename.end(), [](int x) { return x >= 0; }));
    out[s] = rename[d];
  }
  return out;
}

namespace {

// Policy set 0 (screening): the four policies of the default portfolio that win most often on the
// model suite (bench/quality; docs/tuner.md lists the count), about a tenth of its cost.
std::vector<ListPolicy> screening_policies() {
  std::vector<ListPolicy> out(4);
  out[1].inflight_factor = 1;
  out[2].backward_first = false;
  out[3].oldest_first = false;
  return out;
}

// Policy sets 1 and 2 add, to the heuristic portfolio (lean or whole): in-flight limits it leaves
// out and forward-first variants with in-flight limits.
std::vector<ListPolicy> extended_policies() {
  using WM = ListPolicy::WMode;
  std::vector<ListPolicy> out;
  for (double f : {0.5, 1.5, 3.0, 4.0}) {
    for (WM w : {WM::kFillGaps, WM::kStrictGaps}) {
      ListPolicy p;
      p.inflight_factor = f;
      p.w_mode = w;
      out.push_back(p);
    }
  }
  for (double f : {1.0, 2.0}) {
    ListPolicy p;
    p.backward_first = false;
    p.inflight_factor = f;
    out.push_back(p);
  }
  ListPolicy strict_fwd;
  strict_fwd.backward_first = false;
  strict_fwd.w_mode = WM::kStrictGaps;
  out.push_back(strict_fwd);
  return out;
}

// Timeline measures of an order (OctoPipe's boundary vs residual idle).
void measure_timeline(const OpDag& dag, const TimedOrder& t, Evaluation& e) {
  const int P = dag.devices;
  e.busy_ms.assign(P, 0);
  e.boundary_idle_ms.assign(P, 0);
  e.residual_idle_ms.assign(P, 0);
  const double C = dag.to_ms(t.makespan);
  for (int d = 0; d < P; ++d) {
    const auto& ops = t.order[d];
    if (ops.empty()) {
      e.boundary_idle_ms[d] = C;
      continue;
    }
    int64_t busy = 0;
    for (int op : ops) busy += dag.ops[op].dur;
    const int64_t first = t.start[ops.front()];
    const int64_t last_end = t.start[ops.back()] + dag.ops[ops.back()].dur;
    e.busy_ms[d] = dag.to_ms(busy);
    e.boundary_idle_ms[d] = dag.to_ms(first + (t.makespan - last_end));
    e.residual_idle_ms[d] = std::max(0.0, C - e.busy_ms[d] - e.boundary_idle_ms[d]);
  }
}

}  // namespace

DagOptions eval_dag_options(const Candidate& c, const Problem& p) {
  DagOptions o;
  // Screening times transfers as plain delays, except across nodes: a slow inter-node link queues
  // transfers, and a delay-only ranking then prefers placements the checker finds slower.
  const bool multi_node = p.devices_per_node > 0 && p.devices_per_node < p.devices;
  o.comm_streams = c.baseline >= 0 || c.policy_set != 0 || multi_node;
  return o;
}

Result<TimedOrder> retime_on(const OpDag& from, const TimedOrder& order, const OpDag& to, bool* on_full_dag) {
  if (from.devices != to.devices || from.stages != to.stages || from.microbatches != to.microbatches)
    return Status::error(ErrorCode::kInvalidSchedule, "retime_on: the two DAGs belong to different problems");
  std::vector<std::vector<int>> ids(to.devices);
  for (int d = 0; d < to.devices && d < static_cast<int>(order.order.size()); ++d) {
    for (int op : order.order[d]) {
      const DagOp& o = from.ops[op];
      int id = -1;
      switch (o.type) {
        case OpType::F: id = to.f_op(o.stage, o.mb); break;
        case OpType::I:
        case OpType::B: id = to.bwd_op(o.stage, o.mb); break;
        case OpType::W: id = to.w_op(o.stage, o.mb); break;
        case OpType::R: id = to.r_op(o.stage, o.mb); break;
        default: break;
      }
      if (id < 0 || to.ops[id].type != o.type)
        return Status::error(ErrorCode::kInvalidSchedule, fmt::format("retime_on: {} has no counterpart", from.op_name(op)));
      ids[d].push_back(id);
    }
  }
  Result<TimedOrder> t = evaluate_order(to, ids, EdgeSet::kAll, true);
  if (on_full_dag) *on_full_dag = t.ok();
  if (!t.ok() && t.status().code() == ErrorCode::kInvalidSchedule) t = evaluate_order(to, std::move(ids), EdgeSet::kDataOnly, true);
  return t;
}

Result<Problem> candidate_problem(const Spec& spec, const Candidate& c) {
  Result<Problem> pr = make_problem(spec, c.partition(), c.placement);
  if (!pr.ok()) return pr;
  if (!c.recompute.empty()) PS_RETURN_IF_ERROR(set_recompute(spec, *pr, c.recompute));
  for (size_t s = 0; s < c.fused.size() && s < pr->stages.size(); ++s)
    if (c.fused[s]) pr->stages[s].split_backward = false;
  return pr;
}

Result<Problem> dag_problem(const Spec& spec, const Candidate& c, bool fused_backward) {
  Result<Problem> pr = candidate_problem(spec, c);
  if (!pr.ok() || !fused_backward) return pr;
  for (StageSpec& st : pr->stages) st.split_backward = false;
  return pr;
}

namespace {

// The best list-scheduled order of `dag` into e.order and e.policy: policy set 0 tries the
// screening policies (then, when every one got stuck on memory, the full portfolio), the others the
// portfolio (lean for set 1) and the extended policies. False when none found one; e.stopped when
// `stop` cut it short; e.why when the last resort failed.
bool order_by_policies(const OpDag& dag, const Candidate& c, const std::function<bool()>& stop, Evaluation& e) {
  bool have = false;
  auto consider = [&](const ListPolicy& p) {
    if (e.stopped || (stop && stop())) {
      e.stopped = true;
      return;
    }
    // Kept only if shorter than the best so far: given up as soon as it cannot be.
    Result<TimedOrder> t =
        list_schedule(dag, p, have ? e.order.makespan : std::numeric_limits<int64_t>::max());
    if (!t.ok()) return;
    if (!have || t->makespan < e.order.makespan) {
      e.order = std::move(t).value();
      e.policy = p.name();
      have = true;
    }
  };
  // The portfolio's schedule is taken unless it was stopped; its failure is returned.
  auto portfolio = [&](HeuristicOptions ho) -> Status {
    ho.stop = stop;
    Result<HeuristicResult> h = heuristic_schedule(dag, ho);
    if (!h.ok()) return h.status();
    if (h->stopped) {
      e.stopped = true;
    } else {
      e.order = std::move(h->best);
      e.policy = h->policy;
      have = true;
    }
    return Status::ok();
  };
  if (c.policy_set == 0) {
    for (const ListPolicy& p : screening_policies()) consider(p);
  } else {
    HeuristicOptions ho;
    if (c.policy_set == 1) {
      ho.lean = true;
      ho.random_restarts = 1;
    }
    portfolio(ho);  // when it fails, the extended policies may still find an order
    const std::string portfolio_winner = e.policy;
    for (const ListPolicy& p : extended_policies()) consider(p);
    // An extended policy's winner has not been through the portfolio's justification.
    if (have && !e.stopped && e.policy != portfolio_winner && justify_in_place(dag, e.order)) e.policy += " + justified";
  }
  if (!have && !e.stopped && c.policy_set == 0) {
    // The screening policies got stuck on memory: the full portfolio ends with the serial
    // policy, which succeeds whenever the cap admits any schedule.
    if (Status st = portfolio(HeuristicOptions{}); !st.is_ok()) e.why = st.message();
  }
  return have;
}

}  // namespace

Evaluation evaluate_candidate(const Spec& spec, const Candidate& c, const std::function<bool()>& stop,
                              EvalScratch* scratch) {
  const auto t0 = std::chrono::steady_clock::now();
  Evaluation e;
  auto done = [&]() -> Evaluation {
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::move(e);
  };
  Result<Problem> pr = candidate_problem(spec, c);
  if (!pr.ok()) {
    e.why = pr.status().message();
    return done();
  }
  const Problem& problem = *pr;
  const int P = problem.devices;
  e.load_ms.assign(P, 0);
  e.state_mb.assign(P, 0);
  e.min_footprint_mb.assign(P, 0);
  // The smallest footprint: every stage's model states and one microbatch's activation (F's
  // allocation on a recomputing stage, plus the largest R allocation of the device).
  std::vector<double> r_peak(P, 0);
  for (int s = 0; s < problem.num_stages(); ++s) {
    const StageSpec& st = problem.stages[s];
    e.load_ms[st.device] += st.fwd_ms + st.bwd_ms() + (st.recomputes() ? st.recompute_ms : 0.0);
    e.state_mb[st.device] += problem.held_state_mb(StageId{s});
    e.min_footprint_mb[st.device] += problem.held_state_mb(StageId{s}) + st.fwd_alloc_mb();
    r_peak[st.device] = std::max(r_peak[st.device], st.recompute_alloc_mb());
  }
  for (int d = 0; d < P; ++d) e.min_footprint_mb[d] += r_peak[d];
  if (problem.memory_gb > 0) {
    e.excess_mb = -std::numeric_limits<double>::infinity();
    for (int d = 0; d < P; ++d) e.excess_mb = std::max(e.excess_mb, e.min_footprint_mb[d] - gb_to_mb(problem.memory_gb));
  }
  EvalScratch own;
  OpDag& built = scratch ? scratch->dag : own.dag;
  if (Status st = rebuild_op_dag(built, problem, eval_dag_options(c, problem)); !st.is_ok()) {
    e.why = st.message();
    return done();
  }
  const OpDag* dagp = &built;
  std::optional<OpDag> fused_dag;
  if (c.baseline >= 0) {
    const auto kind = static_cast<BaselineKind>(c.baseline);
    Result<Schedule> b = make_baseline(problem, kind);
    if (!b.ok()) {
      e.why = b.status().message();
      return done();
    }
    // 1F1B and interleaved 1F1B run fused B even where I and W could be split: time them on the
    // DAG of the same problem with fused backwards.
    for (const auto& prog : b->programs)
      for (const Action& a : prog)
        if (a.type == OpType::B && at(problem.stages, a.stage).split_backward) e.fused_backward = true;
    if (e.fused_backward) {
      Result<Problem> fp = dag_problem(spec, c, true);
      if (!fp.ok()) {
        e.why = fp.status().message();
        return done();
      }
      Result<OpDag> fd = build_op_dag(*fp, eval_dag_options(c, *fp));
      if (!fd.ok()) {
        e.why = fd.status().message();
        return done();
      }
      fused_dag = std::move(fd).value();
      dagp = &*fused_dag;
    }
    const OpDag& dag = *dagp;
    Result<std::vector<std::vector<int>>> order = schedule_to_dag_order(dag, *b);
    if (!order.ok()) {
      e.why = order.status().message();
      return done();
    }
    Result<TimedOrder> t = evaluate_order(dag, *order, EdgeSet::kAll, true);
    if (!t.ok() && t.status().code() == ErrorCode::kInvalidSchedule) {
      t = evaluate_order(dag, *order, EdgeSet::kDataOnly, true);
      e.order_on_full_dag = false;
    }
    if (!t.ok()) {
      e.why = t.status().message();
      return done();
    }
    e.order = std::move(t).value();
    e.policy = baseline_name(kind);
  } else {
    const bool have = order_by_policies(*dagp, c, stop, e);
    if (e.stopped) {
      e.why = "stopped at the deadline";
      e.order = TimedOrder{};
      return done();
    }
    if (!have) {
      if (e.why.empty()) e.why = "no list-scheduling policy respects the memory caps";
      return done();
    }
  }
  e.feasible = true;
  e.ops = default_dag_ops(problem);  // whatever DAG timed it: the checker's and synthesize()'s
  e.makespan_ms = dagp->to_ms(e.order.makespan);
  measure_timeline(*dagp, e.order, e);
  if (dagp->mem_limited && e.order.peak_mem.size() == static_cast<size_t>(P)) {
    std::vector<int64_t> largest(P, 0);
    for (int s = 0; s < problem.num_stages(); ++s) {
      const DagOp& f = dagp->ops[dagp->f_op(s, 0)];
      largest[f.device] = std::max(largest[f.device], f.alloc_mem);
    }
    e.memory_tight.assign(P, 0);
    for (int d = 0; d < P; ++d) e.memory_tight[d] = e.order.peak_mem[d] + largest[d] > dagp->cap_mem[d];
  }
  return done();
}

}  // namespace tuner_detail
}  // namespace ps
