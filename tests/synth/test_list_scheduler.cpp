// Tests of the op DAG, the list-scheduling heuristic and the DAG lower bounds (synth/dag/op_dag.h,
// synth/dag/list_scheduler.h, synth/bounds/dag_bounds.h), on hand-built problems.
#include <doctest/doctest.h>

#include <functional>
#include <queue>
#include <optional>
#include <random>
#include <set>

#include "synth/dag/schedule_order.h"
#include "synth/dag/list_scheduler.h"
#include "synth/dag/justify.h"
#include "synth/bounds/dag_bounds.h"
#include "synth/dag/op_dag.h"
#include "synth/synth_problems.h"
#include "verify/verify.h"

using namespace ps;
using pstest::HandProblem;
using pstest::make_hand_problem;

namespace {

// Independent check of an order: every op once on each of its resources (its device; a transfer on
// both ends' comm streams), every DAG edge (with its delay) and each resource's sequence respected
// by the start times, memory under the cap.
void check_timed_order(const OpDag& dag, const TimedOrder& t) {
  REQUIRE(static_cast<int>(t.order.size()) == dag.num_resources());
  std::vector<int> seen(dag.num_ops(), 0);
  for (int r = 0; r < dag.num_resources(); ++r) {
    int64_t free_at = 0, mem = 0;
    for (int op : t.order[r]) {
      const DagOp& o = dag.ops[op];
      if (r < dag.devices) {
        REQUIRE((!o.is_transfer() && o.device == r));
      } else {
        REQUIRE((o.is_transfer() && (o.device == r - dag.devices || o.peer == r - dag.devices)));
      }
      ++seen[op];
      CHECK(t.start[op] >= free_at);
      free_at = t.start[op] + o.dur;
      mem += o.alloc_mem;
      if (dag.mem_limited && r < dag.devices) CHECK(mem <= dag.cap_mem[r]);
      mem -= o.free_mem;
    }
    CHECK(mem == 0);
  }
  for (int i = 0; i < dag.num_ops(); ++i) {
    CHECK(seen[i] == (dag.ops[i].is_transfer() ? 2 : 1));
    for (const DagEdge& e : dag.succ[i]) CHECK(t.start[e.op] >= t.start[i] + dag.ops[i].dur + e.delay);
    CHECK(t.start[i] + dag.ops[i].dur <= t.makespan);
  }
}

// Earliest-start timing the slow way: each step scans every resource's next op (and every waiting
// transfer when the streams have no given order) for the one that can start first, ties to the
// lower id. Returns the start times and, for device-only orders, the streams' resulting orders.
std::pair<std::vector<int64_t>, std::vector<std::vector<int>>> reference_timing(const OpDag& dag,
                                                                                const std::vector<std::vector<int>>& order) {
  const int n = dag.num_ops(), R = dag.num_resources(), given = static_cast<int>(order.size());
  std::vector<int64_t> start(n, -1), ready(n, 0), free_at(R, 0);
  std::vector<int> missing(n, 0), pending;
  std::vector<size_t> cursor(R, 0);
  std::vector<std::vector<int>> streams(R);
  for (int i = 0; i < n; ++i) missing[i] = static_cast<int>(dag.pred[i].size());
  for (int done = 0; done < n; ++done) {
    int best = -1;
    int64_t best_start = 0;
    auto consider = [&](int op) {
      if (missing[op] > 0) return;
      int rs[2] = {0, 0};
      const int k = dag.resources_of(op, rs);
      int64_t st = ready[op];
      for (int j = 0; j < k; ++j) {
        if (rs[j] < given && (cursor[rs[j]] >= order[rs[j]].size() || order[rs[j]][cursor[rs[j]]] != op)) return;
        st = std::max(st, free_at[rs[j]]);
      }
      if (best < 0 || st < best_start || (st == best_start && op < best)) best = op, best_start = st;
    };
    for (int r = 0; r < given; ++r)
      if (cursor[r] < order[r].size()) consider(order[r][cursor[r]]);
    for (int op : pending) consider(op);
    REQUIRE(best >= 0);
    start[best] = best_start;
    int rs[2] = {0, 0};
    const int k = dag.resources_of(best, rs);
    for (int j = 0; j < k; ++j) {
      free_at[rs[j]] = best_start + dag.ops[best].dur;
      if (rs[j] < given) ++cursor[rs[j]];
      else streams[rs[j]].push_back(best);
    }
    pending.erase(std::remove(pending.begin(), pending.end(), best), pending.end());
    for (const DagEdge& e : dag.succ[best]) {
      ready[e.op] = std::max(ready[e.op], best_start + dag.ops[best].dur + e.delay);
      if (--missing[e.op] == 0 && dag.ops[e.op].is_transfer() && given == dag.devices) pending.push_back(e.op);
    }
  }
  return {start, streams};
}

// A random plan: 2-5 devices, 1-9 microbatches, 1-3 stages a device on a random placement, random
// costs (some fractional), links of 0-6 ms, some stages fused, some recomputing (with `recompute`),
// and a memory cap of 2-6 activations beyond the states or none.
Problem random_problem(std::mt19937_64& rng, bool recompute) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  HandProblem h;
  h.devices = pick(2, 5);
  h.microbatches = pick(1, 9);
  h.comm_ms = pick(0, 6);
  h.stash_mb = 100.0 * pick(0, 5);
  h.states_mb = 500.0 * pick(0, 2);
  Problem p = make_hand_problem(h);
  const int S = h.devices * pick(1, 3);
  p.stages.resize(S, p.stages[0]);
  for (int s = 0; s < S; ++s) {
    StageSpec& st = p.stages[s];
    st.device = s < h.devices ? s : pick(0, h.devices - 1);  // every device holds a stage
    st.fwd_ms = pick(1, 8) + (pick(0, 3) == 0 ? 0.25 : 0.0);
    st.bwd_input_ms = pick(1, 9);
    st.bwd_weight_ms = pick(0, 5);
    st.activation_mb = 200.0 * pick(1, 6);
    st.split_backward = pick(0, 4) != 0;
    st.first_layer = st.last_layer = s;
    if (recompute && pick(0, 1) == 0) {
      st.recompute = RecomputeMode::kFull;
      st.recompute_ms = st.fwd_ms;
      st.recompute_kept_mb = st.activation_mb / 4;
    }
  }
  const int cap = pick(0, 2) == 0 ? 0 : pick(2, 6);
  if (cap > 0) p.memory_gb = (h.states_mb * S / h.devices + cap * 1200.0) / 1000.0;
  return p;
}

// Every field of two DAGs, one by one.
void check_same_dag(const OpDag& a, const OpDag& b) {
  CHECK(a.devices == b.devices);
  CHECK(a.stages == b.stages);
  CHECK(a.microbatches == b.microbatches);
  CHECK(a.ms_per_unit == b.ms_per_unit);
  CHECK(a.time_exact == b.time_exact);
  CHECK(a.mb_per_mem_unit == b.mb_per_mem_unit);
  CHECK(a.mem_exact == b.mem_exact);
  CHECK(a.memory_rounding == b.memory_rounding);
  CHECK(a.comm_streams == b.comm_streams);
  CHECK(a.reduce_dur == b.reduce_dur);
  REQUIRE(a.num_ops() == b.num_ops());
  for (int i = 0; i < a.num_ops(); ++i) {
    const DagOp &x = a.ops[i], &y = b.ops[i];
    CHECK((x.type == y.type && x.stage == y.stage && x.mb == y.mb && x.device == y.device && x.peer == y.peer &&
           x.dur == y.dur && x.alloc_mem == y.alloc_mem && x.free_mem == y.free_mem));
  }
  auto same_edges = [](const std::vector<std::vector<DagEdge>>& x, const std::vector<std::vector<DagEdge>>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i].size() != y[i].size()) return false;
      for (size_t j = 0; j < x[i].size(); ++j)
        if (x[i][j].op != y[i][j].op || x[i][j].delay != y[i][j].delay || x[i][j].kind != y[i][j].kind) return false;
    }
    return true;
  };
  CHECK(same_edges(a.succ, b.succ));
  CHECK(same_edges(a.pred, b.pred));
  CHECK(a.device_ops == b.device_ops);
  CHECK(a.resource_ops == b.resource_ops);
  CHECK(a.topo == b.topo);
  CHECK(a.head == b.head);
  CHECK(a.tail == b.tail);
  CHECK(a.mem_limited == b.mem_limited);
  CHECK(a.state_mem == b.state_mem);
  CHECK(a.cap_mem == b.cap_mem);
  CHECK(a.f_id_ == b.f_id_);
  CHECK(a.b_id_ == b.b_id_);
  CHECK(a.w_id_ == b.w_id_);
  CHECK(a.r_id_ == b.r_id_);
  CHECK(a.xf_id_ == b.xf_id_);
  CHECK(a.xb_id_ == b.xb_id_);
}

// The topological order recompute_paths promises (Kahn's algorithm taking the lowest ready id, with
// a heap) and the longest paths, the plain way.
void check_paths(const OpDag& dag) {
  const int n = dag.num_ops();
  std::vector<int> indeg(n), topo;
  std::priority_queue<int, std::vector<int>, std::greater<int>> q;
  for (int i = 0; i < n; ++i)
    if ((indeg[i] = static_cast<int>(dag.pred[i].size())) == 0) q.push(i);
  while (!q.empty()) {
    const int u = q.top();
    q.pop();
    topo.push_back(u);
    for (const DagEdge& e : dag.succ[u])
      if (--indeg[e.op] == 0) q.push(e.op);
  }
  CHECK(dag.topo == topo);
  std::vector<int64_t> head(n, 0), tail(n, 0);
  for (int u : topo)
    for (const DagEdge& e : dag.succ[u]) head[e.op] = std::max(head[e.op], head[u] + dag.ops[u].dur + e.delay);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it)
    for (const DagEdge& e : dag.succ[*it]) tail[*it] = std::max(tail[*it], e.delay + dag.ops[e.op].dur + tail[e.op]);
  CHECK(dag.head == head);
  CHECK(dag.tail == tail);
  // The flat successor lists hold succ[u], in its order, for every u.
  REQUIRE(dag.succ_begin.size() == static_cast<size_t>(n) + 1);
  CHECK(dag.succ_begin[n] == static_cast<int>(dag.succ_flat.size()));
  bool flat_same = true;
  for (int u = 0; u < n; ++u) {
    const auto& list = dag.succ[u];
    flat_same = flat_same && dag.succ_begin[u + 1] - dag.succ_begin[u] == static_cast<int>(list.size());
    for (size_t j = 0; flat_same && j < list.size(); ++j) {
      const DagEdge& e = dag.succ_flat[dag.succ_begin[u] + j];
      flat_same = e.op == list[j].op && e.delay == list[j].delay && e.kind == list[j].kind;
    }
  }
  CHECK(flat_same);
}

}  // namespace

TEST_CASE("op dag: rebuilt into a used DAG, the same as built anew, errors included; its paths as a heap finds them") {
  std::mt19937_64 rng(7);
  OpDag reused;  // holds the previous plan's DAG (or a failed build's remains) each time
  int compared = 0, failed = 0;
  for (int k = 0; k < 300; ++k) {
    CAPTURE(k);
    const Problem p = random_problem(rng, k % 3 == 0);
    DagOptions o;
    o.comm_streams = k % 2 == 0;
    o.memory_edges = k % 5 != 0;
    o.memory_rounding = k % 7 == 0 ? MemoryRounding::kRelaxed : MemoryRounding::kSafe;
    Result<OpDag> fresh = build_op_dag(p, o);
    const Status st = rebuild_op_dag(reused, p, o);
    REQUIRE(fresh.ok() == st.is_ok());
    if (!fresh.ok()) {
      CHECK(fresh.status().message() == st.message());
      ++failed;
      continue;
    }
    check_same_dag(*fresh, reused);
    check_paths(reused);
    ++compared;
  }
  MESSAGE(compared, " DAGs compared, ", failed, " builds failed alike");
  CHECK(compared > 200);
  CHECK(failed > 0);
}

namespace {

// The k-th random plan's op DAG: comm streams on every other one, R ops on every fourth.
Result<OpDag> random_dag(std::mt19937_64& rng, int k) {
  DagOptions o;
  o.comm_streams = k % 2 == 0;
  return build_op_dag(random_problem(rng, k % 4 == 0), o);
}

// One policy's order against abandon_at: kept unchanged just above its makespan, given up at it,
// and given up at num/den of it. Returns nullopt where the policy has no order; else whether the
// last of those was given up before its last op was placed.
std::optional<bool> check_abandon_at(const OpDag& dag, const ListPolicy& pol, int64_t num, int64_t den) {
  Result<TimedOrder> t = list_schedule(dag, pol);
  if (!t.ok()) return std::nullopt;
  bool abandoned = true;
  Result<TimedOrder> same = list_schedule(dag, pol, t->makespan + 1, &abandoned);
  REQUIRE(same.ok());
  CHECK_FALSE(abandoned);
  CHECK(same->order == t->order);
  CHECK(same->start == t->start);
  Result<TimedOrder> cut = list_schedule(dag, pol, t->makespan, &abandoned);
  CHECK_FALSE(cut.ok());
  CHECK(abandoned);
  Result<TimedOrder> lower = list_schedule(dag, pol, t->makespan * num / den, &abandoned);
  CHECK_FALSE(lower.ok());
  CHECK(abandoned);
  return lower.status().message().find("after " + std::to_string(dag.num_ops()) + " of") == std::string::npos;
}

}  // namespace

TEST_CASE("list_schedule: on random plans, abandoned only once its makespan reaches abandon_at") {
  // The bound behind abandon_at (list_scheduler.cpp: a device's end plus its work left, and, while
  // ops are placed in the order of their starts, the latest start plus the most work a device has
  // left) must never exceed the makespan the policy reaches; a wrong one gives up an order that
  // would have been kept, and the ordering it relies on is asserted as ops are placed.
  std::mt19937_64 rng(11);
  int policies = 0, early = 0;
  for (int k = 0; k < 80; ++k) {
    CAPTURE(k);
    Result<OpDag> r = random_dag(rng, k);
    if (!r.ok()) continue;
    std::vector<ListPolicy> pols = heuristic_policies(*r);
    ListPolicy serial;
    serial.serial = true;
    pols.push_back(serial);
    for (size_t i = 0, n = pols.size(); i < n; i += 3) {
      ListPolicy noisy = pols[i];
      noisy.noise = 0.8;
      noisy.seed = k;
      pols.push_back(noisy);
    }
    for (const ListPolicy& pol : pols) {
      CAPTURE(pol.name());
      const std::optional<bool> given_up_early = check_abandon_at(*r, pol, 4, 5);
      if (!given_up_early) continue;
      ++policies;
      if (*given_up_early) ++early;
    }
  }
  MESSAGE(policies, " policies' orders, ", early, " given up before their last op at 4/5 of their makespan");
  CHECK(policies > 1000);
  CHECK(early > policies / 2);
}

TEST_CASE("list_schedule: comparing a released op with its device's choice gives the orders of a rescan") {
  std::mt19937_64 rng(5);
  int compared = 0;
  for (int k = 0; k < 80; ++k) {
    CAPTURE(k);
    Result<OpDag> r = random_dag(rng, k);
    if (!r.ok()) continue;
    // The same DAG without its flat successor lists (adding an edge it has drops them and changes
    // nothing else): successors() reads succ then.
    OpDag unflat = *r;
    REQUIRE_FALSE(unflat.succ[0].empty());
    unflat.add_edge(0, unflat.succ[0][0].op, 0, unflat.succ[0][0].kind);
    REQUIRE(unflat.succ_begin.empty());
    std::vector<ListPolicy> pols = heuristic_policies(*r);
    for (size_t i = 0, n = pols.size(); i < n; i += 2) {
      ListPolicy noisy = pols[i];
      noisy.noise = 0.4 * (1 + i % 3);
      noisy.seed = k + i;
      pols.push_back(noisy);
    }
    for (const ListPolicy& pol : pols) {
      CAPTURE(pol.name());
      Result<TimedOrder> fast = list_schedule(*r, pol);
      Result<TimedOrder> slow = list_schedule_rescanning(*r, pol);
      REQUIRE(fast.ok() == slow.ok());
      if (!fast.ok()) continue;
      CHECK(fast->order == slow->order);
      CHECK(fast->start == slow->start);
      CHECK(fast->makespan == slow->makespan);
      Result<TimedOrder> own = list_schedule(unflat, pol);
      REQUIRE(own.ok());
      CHECK(own->order == fast->order);
      CHECK(own->start == fast->start);
      ++compared;
    }
  }
  MESSAGE(compared, " orders compared");
  CHECK(compared > 1500);
}

TEST_CASE("evaluate_order: the same times as a step-by-step reference, with and without stream orders") {
  int compared = 0;
  for (int v : {1, 2}) {
    for (double comm : {0.0, 1.0, 6.0}) {  // 6 ms links: transfers queue on the streams
      HandProblem h;
      h.devices = 4;
      h.microbatches = 8;
      h.stages_per_device = v;
      h.comm_ms = comm;
      h.heterogeneous = true;
      CAPTURE(v);
      CAPTURE(comm);
      Result<OpDag> r = build_op_dag(make_hand_problem(h));
      REQUIRE(r.ok());
      for (const ListPolicy& pol : heuristic_policies(*r)) {
        Result<TimedOrder> t = list_schedule(*r, pol);
        if (!t.ok()) continue;
        // With the streams' orders given.
        Result<TimedOrder> full = evaluate_order(*r, t->order);
        REQUIRE(full.ok());
        CHECK(full->start == reference_timing(*r, t->order).first);
        // Devices only: the streams serve transfers first come, first served.
        std::vector<std::vector<int>> devices(t->order.begin(), t->order.begin() + r->devices);
        Result<TimedOrder> fcfs = evaluate_order(*r, devices);
        REQUIRE(fcfs.ok());
        const auto [start, streams] = reference_timing(*r, devices);
        CHECK(fcfs->start == start);
        for (int s = r->devices; s < r->num_resources(); ++s) CHECK(fcfs->order[s] == streams[s]);
        ++compared;
      }
    }
  }
  CHECK(compared > 50);
}

TEST_CASE("list_schedule: abandoned exactly when its makespan reaches abandon_at, else unchanged") {
  HandProblem h;
  h.devices = 4;
  h.microbatches = 8;
  h.stages_per_device = 2;
  h.cap_microbatches = 5;
  h.heterogeneous = true;
  Result<OpDag> r = build_op_dag(make_hand_problem(h));
  REQUIRE(r.ok());
  int abandoned_early = 0;
  for (const ListPolicy& pol : heuristic_policies(*r)) {
    CAPTURE(pol.name());
    // Well below its makespan it is given up before the end.
    if (check_abandon_at(*r, pol, 3, 4).value_or(false)) ++abandoned_early;
  }
  CHECK(abandoned_early > 0);
}

TEST_CASE("heuristic: abandoning hopeless policies changes nothing in the result") {
  for (int v : {1, 2}) {
    for (double cap : {0.0, 3.0}) {
      HandProblem h;
      h.devices = 4;
      h.microbatches = 12;
      h.stages_per_device = v;
      h.cap_microbatches = cap * v;
      h.comm_ms = 2;
      h.heterogeneous = true;
      CAPTURE(v);
      CAPTURE(cap);
      Result<OpDag> r = build_op_dag(make_hand_problem(h));
      REQUIRE(r.ok());
      for (int rounds : {0, 4}) {
        HeuristicOptions with, without;
        with.justify_rounds = without.justify_rounds = rounds;
        without.abandon = false;
        Result<HeuristicResult> a = heuristic_schedule(*r, with);
        Result<HeuristicResult> b = heuristic_schedule(*r, without);
        REQUIRE(a.ok());
        REQUIRE(b.ok());
        CHECK(a->policy == b->policy);
        CHECK(a->best.order == b->best.order);
        CHECK(a->best.makespan == b->best.makespan);
        CHECK(a->tried == b->tried);
        CHECK(b->abandoned == 0);
        CHECK(a->abandoned > 0);
      }
    }
  }
}

TEST_CASE("op dag: ids, durations, link delays and fused backward") {
  HandProblem h;
  h.devices = 3;
  h.microbatches = 2;
  Problem p = make_hand_problem(h);
  p.stages[1].split_backward = false;
  Result<OpDag> r = build_op_dag(p);
  REQUIRE(r.ok());
  const OpDag& dag = *r;
  CHECK(dag.ms_per_unit == doctest::Approx(1.0));
  CHECK(dag.time_exact);
  // Stage 1 runs B (I+W = 7 ms), no W.
  CHECK(dag.w_op(1, 0) == -1);
  CHECK(dag.ops[dag.bwd_op(1, 0)].type == OpType::B);
  CHECK(dag.ops[dag.bwd_op(1, 0)].dur == 7);
  // 2 microbatches × (3 F + 2 I + 2 W + 1 B) computes, and 2 boundaries × 2 directions of transfers.
  CHECK(dag.num_ops() == 2 * (3 + 2 + 3) + 2 * 2 * 2);
  // F(0,0) -> SEND_F(0,0) -> F(1,0): the 1 ms transfer on the comm streams of devices 0 and 1.
  const int x = dag.send_f_op(0, 0);
  REQUIRE(x >= 0);
  CHECK(dag.ops[x].dur == 1);
  CHECK(dag.ops[x].device == 0);
  CHECK(dag.ops[x].peer == 1);
  int res[2] = {0, 0};
  CHECK(dag.resources_of(x, res) == 2);
  CHECK(res[0] == 3);
  CHECK(res[1] == 4);
  bool in = false, out = false;
  for (const DagEdge& e : dag.pred[x]) in = in || e.op == dag.f_op(0, 0);
  for (const DagEdge& e : dag.succ[x]) out = out || e.op == dag.f_op(1, 0);
  CHECK(in);
  CHECK(out);
  // Without comm streams the link time is a delay on the data edge.
  DagOptions plain;
  plain.comm_streams = false;
  Result<OpDag> r2 = build_op_dag(p, plain);
  REQUIRE(r2.ok());
  CHECK(r2->num_ops() == 2 * (3 + 2 + 3));
  bool found = false;
  for (const DagEdge& e : r2->succ[r2->f_op(0, 0)])
    if (e.op == r2->f_op(1, 0)) {
      found = true;
      CHECK(e.delay == 1);
    }
  CHECK(found);
  CHECK(r2->critical_path() == dag.critical_path());
  // Critical path of one microbatch: F 3x4 + 2 links, I/B 4+7+4 + 2 links, W(0) 3.
  CHECK(dag.head[dag.bwd_op(0, 0)] == 12 + 2 + 4 + 7 + 2);
  CHECK(dag.critical_path() >= 12 + 2 + 15 + 2 + 3);
}

TEST_CASE("op dag: fractional costs get an exact decimal unit, or round down when inexact") {
  HandProblem h;
  h.devices = 2;
  h.microbatches = 2;
  h.fwd_ms = 0.25;
  h.bwd_input_ms = 0.5;
  h.bwd_weight_ms = 0.75;
  h.comm_ms = 0.125;
  Result<OpDag> r = build_op_dag(make_hand_problem(h));
  REQUIRE(r.ok());
  CHECK(r->time_exact);
  CHECK(r->ms_per_unit == doctest::Approx(0.125));  // 0.001 · gcd(250, 500, 750, 125)
  CHECK(r->ops[r->f_op(0, 0)].dur == 2);
  h.fwd_ms = 1.0 / 3;
  Result<OpDag> r2 = build_op_dag(make_hand_problem(h));
  REQUIRE(r2.ok());
  CHECK_FALSE(r2->time_exact);
  CHECK(r2->to_ms(r2->ops[r2->f_op(0, 0)].dur) <= 1.0 / 3);
  CHECK(r2->to_ms(r2->ops[r2->f_op(0, 0)].dur) > 1.0 / 3 - 1e-6);
}

TEST_CASE("op dag: ops far below a unit are timed in a finer unit, not as zeros") {
  // Every value lies within 1e-6 of a whole 1 ms unit (of 0): an exact 1 ms unit would time every op
  // as 0 while the iteration takes 1.2e-6 ms.
  HandProblem h;
  h.devices = 2;
  h.microbatches = 2;
  h.fwd_ms = 1e-7;
  h.bwd_input_ms = 2e-7;
  h.bwd_weight_ms = 1e-7;
  h.comm_ms = 0;
  Result<OpDag> r = build_op_dag(make_hand_problem(h));
  REQUIRE(r.ok());
  CHECK_FALSE(r->time_exact);
  CHECK(r->ms_per_unit < 1e-8);
  for (int s = 0; s < 2; ++s) {
    CHECK(r->to_ms(r->ops[r->f_op(s, 0)].dur) <= 1e-7 * (1 + 1e-12));  // rounded down (to_ms: one product)
    CHECK(r->to_ms(r->ops[r->f_op(s, 0)].dur) > 1e-7 * (1 - 1e-6));
    CHECK(r->to_ms(r->ops[r->bwd_op(s, 0)].dur) > 2e-7 * (1 - 1e-6));
  }
  // Transfers of a free link (1e-30 ms) beside ordinary costs stay an exact unit.
  h.fwd_ms = 3;
  h.bwd_input_ms = 4;
  h.bwd_weight_ms = 2;
  h.comm_ms = 1e-27;  // latency_us = 1e-24: 1e-27 ms a transfer
  Result<OpDag> r2 = build_op_dag(make_hand_problem(h));
  REQUIRE(r2.ok());
  CHECK(r2->time_exact);
  CHECK(r2->ms_per_unit == doctest::Approx(1.0));
}

TEST_CASE("op dag: device reachability matches a plain graph search") {
  HandProblem h;
  h.devices = 3;
  h.microbatches = 3;
  h.stages_per_device = 2;  // V-shape: paths leave and re-enter devices
  Result<OpDag> r = build_op_dag(make_hand_problem(h));
  REQUIRE(r.ok());
  const OpDag& dag = *r;
  DeviceReach reach(dag);
  for (int a = 0; a < dag.num_ops(); ++a) {
    std::vector<bool> vis(dag.num_ops(), false);
    std::function<void(int)> dfs = [&](int u) {
      for (const DagEdge& e : dag.succ[u])
        if (!vis[e.op]) {
          vis[e.op] = true;
          dfs(e.op);
        }
    };
    dfs(a);
    for (int b = 0; b < dag.num_ops(); ++b) CHECK(reach.reaches(a, b) == vis[b]);
  }
}

TEST_CASE("op dag: memory edges encode the cap, and an impossible cap is infeasible") {
  HandProblem h;
  h.devices = 4;
  h.microbatches = 8;
  h.cap_microbatches = 2;  // two microbatches of activation per device
  Result<OpDag> r = build_op_dag(make_hand_problem(h));
  REQUIRE(r.ok());
  const OpDag& dag = *r;
  // F(s, m+2) must wait for I(s, m): the cap holds two microbatches.
  for (int s = 0; s < 4; ++s) {
    bool found = false;
    for (const DagEdge& e : dag.pred[dag.f_op(s, 2)])
      if (e.op == dag.bwd_op(s, 0) && e.kind == EdgeKind::kMemory) found = true;
    CHECK(found);
  }
  h.cap_microbatches = 0.5;  // not even one microbatch
  Result<OpDag> bad = build_op_dag(make_hand_problem(h));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::kInfeasible);
}

TEST_CASE("heuristic: every policy's order is valid on the DAG, sequential and V-shape, with caps") {
  for (int v : {1, 2}) {
    for (double cap : {0.0, 2.0, 3.5}) {
      for (bool split : {true, false}) {
        HandProblem h;
        h.devices = 4;
        h.microbatches = 8;
        h.stages_per_device = v;
        h.cap_microbatches = cap * v;
        h.stash_mb = 250;
        h.split_backward = split;
        h.heterogeneous = true;
        CAPTURE(v);
        CAPTURE(cap);
        CAPTURE(split);
        Result<OpDag> r = build_op_dag(make_hand_problem(h));
        REQUIRE(r.ok());
        int ok = 0;
        std::vector<ListPolicy> policies = heuristic_policies(*r);
        for (size_t k = 0, n = policies.size(); k < n; ++k) {
          ListPolicy noisy = policies[k];
          noisy.noise = 1.0 + static_cast<double>(k % 3) / 4;
          noisy.seed = k + 1;
          policies.push_back(noisy);
        }
        for (const ListPolicy& pol : policies) {
          CAPTURE(pol.name());
          Result<TimedOrder> t = list_schedule(*r, pol);
          if (!t.ok()) continue;
          ++ok;
          check_timed_order(*r, *t);
          // The list scheduler's times are the earliest-start times of its own order.
          Result<TimedOrder> again = evaluate_order(*r, t->order);
          REQUIRE(again.ok());
          CHECK(again->makespan == t->makespan);
        }
        CHECK(ok > 0);
        Result<HeuristicResult> best = heuristic_schedule(*r);
        REQUIRE(best.ok());
        check_timed_order(*r, best->best);
        CHECK(best->best.makespan >= dag_lower_bound(*r).units);
      }
    }
  }
}

TEST_CASE("heuristic: the serial policy succeeds at the smallest feasible cap") {
  HandProblem h;
  h.devices = 3;
  h.microbatches = 4;
  h.stages_per_device = 2;
  h.cap_microbatches = 2;  // exactly one microbatch of each of the device's two stages
  Result<OpDag> r = build_op_dag(make_hand_problem(h));
  REQUIRE(r.ok());
  ListPolicy serial;
  serial.serial = true;
  Result<TimedOrder> t = list_schedule(*r, serial);
  REQUIRE(t.ok());
  check_timed_order(*r, *t);
  Result<HeuristicResult> best = heuristic_schedule(*r);
  REQUIRE(best.ok());
  check_timed_order(*r, best->best);
}

TEST_CASE("heuristic: uniform costs without caps meet the lower bound, and the checker agrees") {
  HandProblem h;
  h.devices = 4;
  h.microbatches = 8;
  Problem p = make_hand_problem(h);
  Result<OpDag> r = build_op_dag(p);
  REQUIRE(r.ok());
  Result<HeuristicResult> best = heuristic_schedule(*r);
  REQUIRE(best.ok());
  const DagBound lb = dag_lower_bound(*r);
  CHECK(best->best.makespan == lb.units);
  // ZB-style bound: the last device starts after 3 forwards and links, then runs all its work.
  CHECK(lb.units == 3 * (4 + 1) + 8 * 11);
  Schedule s = order_to_schedule(p, *r, best->best, "test");
  Report rep = verify(s);
  CHECK(rep.valid);
  REQUIRE(rep.sim.has_value());
  CHECK(rep.sim->makespan_ms >= r->to_ms(lb.units) - 1e-9);
}

TEST_CASE("heuristic: the lean portfolio leaves out W-eager and lowest-stage-first policies") {
  HandProblem h;
  h.devices = 4;
  h.microbatches = 8;
  h.stages_per_device = 2;  // "lowest stage first" exists only with several stages per device
  Problem p = make_hand_problem(h);
  Result<OpDag> r = build_op_dag(p);
  REQUIRE(r.ok());
  int kept = 0, all = 0;
  for (const ListPolicy& pol : heuristic_policies(*r)) {
    ++all;
    if (pol.by_tail || (pol.w_mode != ListPolicy::WMode::kEager && pol.oldest_first)) ++kept;
  }
  REQUIRE(kept < all);
  HeuristicOptions lean;
  lean.lean = true;
  lean.random_restarts = 1;
  Result<HeuristicResult> a = heuristic_schedule(*r, lean);
  REQUIRE(a.ok());
  CHECK(a->tried == kept + 1);  // no cap: no serial fallback
  CHECK(a->policy.find("eager") == std::string::npos);
  CHECK(a->policy.find("/stage") == std::string::npos);
  check_timed_order(*r, a->best);
  Result<HeuristicResult> whole = heuristic_schedule(*r);
  REQUIRE(whole.ok());
  CHECK(whole->tried == all + HeuristicOptions{}.random_restarts);
  Report rep = verify(order_to_schedule(p, *r, a->best, "test"));
  CHECK(rep.valid);
}

TEST_CASE("lower bound: the single-device relaxation sees the memory cap") {
  HandProblem h;
  h.devices = 8;
  h.microbatches = 16;
  h.cap_microbatches = 8;
  Result<OpDag> capped = build_op_dag(make_hand_problem(h));
  h.cap_microbatches = 0;
  Result<OpDag> free = build_op_dag(make_hand_problem(h));
  REQUIRE(capped.ok());
  REQUIRE(free.ok());
  const DagBound a = dag_lower_bound(*capped), b = dag_lower_bound(*free);
  // Device 0 fills its 8 slots, then idles until I(0,0) returns from the round trip.
  CHECK(a.units > b.units);
  CHECK(a.device == 0);
}

TEST_CASE("decode: schedules round-trip through DAG orders, fused B maps to I then W") {
  HandProblem h;
  h.devices = 2;
  h.microbatches = 3;
  Problem p = make_hand_problem(h);
  Result<OpDag> r = build_op_dag(p);
  REQUIRE(r.ok());
  Result<HeuristicResult> best = heuristic_schedule(*r);
  REQUIRE(best.ok());
  Schedule s = order_to_schedule(p, *r, best->best, "test");
  CHECK(s.has_comms());
  Result<std::vector<std::vector<int>>> back = schedule_to_dag_order(*r, s);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2u);
  CHECK((*back)[0] == best->best.order[0]);
  CHECK((*back)[1] == best->best.order[1]);
  // Timing the compute order alone (streams first come, first served) gives the same makespan.
  Result<TimedOrder> again = evaluate_order(*r, *back);
  REQUIRE(again.ok());
  CHECK(again->makespan == best->best.makespan);
  // A B on a split stage becomes I+W.
  Schedule fused = s;
  for (auto& prog : fused.programs) {
    std::vector<Action> out;
    for (const Action& a : prog) {
      if (a.type == OpType::W || is_comm(a.type)) continue;
      Action b = a;
      if (a.type == OpType::I) b.type = OpType::B;
      out.push_back(b);
    }
    prog = out;
  }
  Result<std::vector<std::vector<int>>> f = schedule_to_dag_order(*r, fused);
  REQUIRE(f.ok());
  REQUIRE(evaluate_order(*r, *f).ok());
  Schedule bad = s;
  bad.programs[0].push_back(Action{OpType::F, StageId{9}, MicrobatchId{0}, {}});
  CHECK_FALSE(schedule_to_dag_order(*r, bad).ok());
}

TEST_CASE("justify: never longer, every edge and cap kept, and it shortens list schedules") {
  int tried = 0, shorter = 0;
  for (int devices : {4, 8}) {
    for (int stages_per_device : {1, 2}) {
      for (double cap : {0.0, 3.0}) {
        HandProblem h;
        h.devices = devices;
        h.microbatches = 2 * devices;
        h.stages_per_device = stages_per_device;
        h.cap_microbatches = cap * stages_per_device;
        h.stash_mb = 300;
        h.heterogeneous = true;
        Result<OpDag> r = build_op_dag(make_hand_problem(h));
        REQUIRE(r.ok());
        for (const ListPolicy& pol : heuristic_policies(*r)) {
          INFO(devices, " devices, ", stages_per_device, " stages each, cap ", cap, ", ", pol.name());
          Result<TimedOrder> t = list_schedule(*r, pol);
          if (!t.ok()) continue;
          ++tried;
          const TimedOrder j = justify(*r, *t);
          CHECK(j.makespan <= t->makespan);
          check_timed_order(*r, j);
          // Its times are the earliest-start times of its own order, caps included.
          Result<TimedOrder> again = evaluate_order(*r, j.order, EdgeSet::kAll, true);
          REQUIRE(again.ok());
          CHECK(again->makespan == j.makespan);
          if (j.makespan < t->makespan) ++shorter;
        }
      }
    }
  }
  MESSAGE(tried, " list schedules, ", shorter, " shortened");
  CHECK(tried > 100);
  CHECK(shorter > 0);
}
