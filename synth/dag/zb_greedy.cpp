// zb_greedy.cpp — the timing-aware greedy of zb_greedy.h: one event loop, one decision rule.
#include "synth/dag/zb_greedy.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace ps {

namespace zb_greedy_detail {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max() / 4;

std::string slack_word(double s) { return s < 0 ? "any" : fmt::format("{:g}", s); }

bool is_backward(OpType t) { return t == OpType::I || t == OpType::B || t == OpType::R; }

class Greedy {
 public:
  Greedy(const OpDag& dag, const ZbGreedyPolicy& pol) : dag_(dag), pol_(pol) {}

  Result<TimedOrder> run() {
    init();
    int left = compute_ops_;
    while (left > 0) {
      int best_d = -1;
      for (int d = 0; d < dag_.devices; ++d) {
        if (stale_[d]) {
          decision_[d] = decide(d);
          stale_[d] = 0;
        }
        if (decision_[d].op >= 0 && (best_d < 0 || decision_[d].start < decision_[best_d].start)) best_d = d;
      }
      if (best_d < 0) {
        return Status::error(ErrorCode::kInfeasible,
                             fmt::format("zb-greedy {}: every device waits on memory", pol_.name()));
      }
      place(decision_[best_d].op, decision_[best_d].start);
      --left;
    }
    std::vector<std::vector<int>> order(order_.begin(), order_.end());
    return evaluate_order(dag_, std::move(order), EdgeSet::kAll, true);
  }

 private:
  struct Decision {
    int op = -1;
    int64_t start = kNever;
  };

  void init() {
    const int n = dag_.num_ops();
    missing_.assign(n, 0);
    ready_.assign(n, 0);
    for (int i = 0; i < n; ++i) missing_[i] = static_cast<int>(dag_.pred[i].size());
    avail_.assign(dag_.devices, {});
    order_.assign(dag_.devices, {});
    free_at_.assign(dag_.num_resources(), 0);
    mem_.assign(dag_.devices, 0);
    inflight_.assign(dag_.stages, 0);
    started_backward_.assign(dag_.devices, 0);
    stale_.assign(dag_.devices, 1);
    decision_.assign(dag_.devices, {});
    // The policy's slacks and preferences, the same on every device; a seeded policy draws each
    // device's own from small grids (Zero Bubble tunes its accepted bubble per stage).
    warmup_.assign(dag_.devices, pol_.warmup_slack);
    steady_.assign(dag_.devices, pol_.steady_slack);
    w_slack_.assign(dag_.devices, pol_.w_slack);
    deep_.assign(dag_.devices, pol_.deep_forward_first ? 1 : 0);
    w_deep_.assign(dag_.devices, 0);
    if (pol_.seed != 0) {
      static const double kWarmup[] = {0, 0.25, 0.5, 1, -1}, kSteady[] = {0, 0.25, 0.5, -1}, kW[] = {0, 0.25, 0.5, -1};
      uint64_t state = pol_.seed * 0x9E3779B97F4A7C15ull;
      auto draw = [&state](uint64_t bound) {
        state += 0x9E3779B97F4A7C15ull;
        uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return static_cast<size_t>((z ^ (z >> 31)) % bound);
      };
      for (int d = 0; d < dag_.devices; ++d) {
        warmup_[d] = kWarmup[draw(5)];
        steady_[d] = kSteady[draw(4)];
        w_slack_[d] = kW[draw(4)];
        deep_[d] = static_cast<char>(draw(2));
        w_deep_[d] = static_cast<char>(draw(2));
      }
    }
    // The room an F of stage s leaves: one activation of each later stage of its device.
    reserve_.assign(dag_.stages, 0);
    for (int s = 0; s < dag_.stages; ++s) {
      const int f = dag_.f_op(s, 0);
      for (int s2 = s + 1; s2 < dag_.stages; ++s2) {
        const int f2 = dag_.f_op(s2, 0);
        if (dag_.ops[f2].device == dag_.ops[f].device) reserve_[s] += dag_.ops[f2].alloc_mem;
      }
    }
    compute_ops_ = 0;
    for (int i = 0; i < n; ++i) {
      if (!dag_.ops[i].is_transfer()) ++compute_ops_;
    }
    for (int i = 0; i < n; ++i)
      if (missing_[i] == 0) make_available(i);
  }

  bool fits(int op) const {
    if (!dag_.mem_limited) return true;
    const DagOp& o = dag_.ops[op];
    const int64_t after = mem_[o.device] + o.alloc_mem;
    if (after > dag_.cap_mem[o.device]) return false;
    if (o.type != OpType::F) return true;
    // Keep room for the device's later stages, unless this stage has nothing in flight.
    return after + reserve_[o.stage] <= dag_.cap_mem[o.device] || inflight_[o.stage] == 0;
  }

  int64_t level(int op) const { return dag_.ops[op].dur + dag_.tail[op]; }

  // Preference among ready ops of one kind (lower first).
  bool before(int a, int b) const {
    const DagOp &oa = dag_.ops[a], &ob = dag_.ops[b];
    if (oa.type == OpType::F && ob.type == OpType::F) {
      if (deep_[oa.device] && oa.stage != ob.stage) return oa.stage > ob.stage;
      if (oa.mb != ob.mb) return oa.mb < ob.mb;
      return oa.stage < ob.stage;
    }
    if (oa.type == OpType::W && ob.type == OpType::W) {
      if (w_deep_[oa.device] && oa.stage != ob.stage) return oa.stage > ob.stage;
      if (oa.mb != ob.mb) return oa.mb < ob.mb;
      return a < b;
    }
    if (level(a) != level(b)) return level(a) > level(b);
    return a < b;
  }

  // What device d runs at time t, or -1 (it waits).
  int rule(int d, int64_t t) const {
    int bwd = -1, fwd = -1, w = -1;
    bool f_waits_on_memory = false;
    int64_t next_bwd = kNever, next_any = kNever;
    for (int op : avail_[d]) {
      const DagOp& o = dag_.ops[op];
      const bool now = ready_[op] <= t;
      if (!now) {
        if (is_backward(o.type)) next_bwd = std::min(next_bwd, ready_[op]);
        if (o.type != OpType::W) next_any = std::min(next_any, ready_[op]);
        continue;
      }
      if (is_backward(o.type)) {
        if (fits(op) && (bwd < 0 || before(op, bwd))) bwd = op;
      } else if (o.type == OpType::F) {
        if (!fits(op)) {
          f_waits_on_memory = true;
        } else if (fwd < 0 || before(op, fwd)) {
          fwd = op;
        }
      } else if (w < 0 || before(op, w)) {
        w = op;
      }
    }
    if (bwd >= 0) return bwd;
    if (fwd >= 0) {
      const double slack = started_backward_[d] ? steady_[d] : warmup_[d];
      if (slack < 0 || next_bwd == kNever ||
          t + dag_.ops[fwd].dur <= next_bwd + static_cast<int64_t>(slack * static_cast<double>(dag_.ops[fwd].dur)))
        return fwd;
    }
    if (w >= 0) {
      if (f_waits_on_memory || w_slack_[d] < 0 || next_any == kNever ||
          t + dag_.ops[w].dur <= next_any + static_cast<int64_t>(w_slack_[d] * static_cast<double>(dag_.ops[w].dur)))
        return w;
    }
    return -1;
  }

  // The first time at or after the device is free at which the rule picks an op.
  Decision decide(int d) const {
    std::vector<int64_t> times;
    times.reserve(avail_[d].size());
    for (int op : avail_[d]) times.push_back(std::max(free_at_[d], ready_[op]));
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    for (int64_t t : times) {
      const int op = rule(d, t);
      if (op >= 0) return {op, t};
    }
    return {};
  }

  void make_available(int op) {
    const DagOp& o = dag_.ops[op];
    if (!o.is_transfer()) {
      avail_[o.device].push_back(op);
      stale_[o.device] = 1;
      return;
    }
    // First come, first served on both comm streams.
    int r[2] = {0, 0};
    const int k = dag_.resources_of(op, r);
    int64_t start = ready_[op];
    for (int j = 0; j < k; ++j) start = std::max(start, free_at_[r[j]]);
    const int64_t end = start + o.dur;
    for (int j = 0; j < k; ++j) free_at_[r[j]] = end;
    release(op, end);
  }

  void release(int op, int64_t end) {
    for (const DagEdge& e : dag_.succ[op]) {
      ready_[e.op] = std::max(ready_[e.op], end + e.delay);
      if (--missing_[e.op] == 0) make_available(e.op);
    }
  }

  void place(int op, int64_t start) {
    const DagOp& o = dag_.ops[op];
    const int d = o.device;
    const int64_t end = start + o.dur;
    avail_[d].erase(std::find(avail_[d].begin(), avail_[d].end(), op));
    order_[d].push_back(op);
    free_at_[d] = end;
    mem_[d] += o.alloc_mem - o.free_mem;
    if (o.type == OpType::F) ++inflight_[o.stage];
    if (o.type == OpType::I || o.type == OpType::B) --inflight_[o.stage];
    if (is_backward(o.type)) started_backward_[d] = 1;
    stale_[d] = 1;
    release(op, end);
  }

  const OpDag& dag_;
  const ZbGreedyPolicy& pol_;
  int compute_ops_ = 0;
  std::vector<int> missing_;
  std::vector<int64_t> ready_;
  std::vector<std::vector<int>> avail_;  // per device: compute ops whose predecessors are placed
  std::vector<std::vector<int>> order_;  // per device: the compute order so far
  std::vector<int64_t> free_at_;         // per resource
  std::vector<int64_t> mem_;             // per device: live activations and stashes
  std::vector<int64_t> reserve_;         // per stage
  std::vector<int> inflight_;            // per stage: F placed, I/B not yet
  std::vector<char> started_backward_;   // per device
  std::vector<char> stale_;              // per device: decision_ must be recomputed
  std::vector<Decision> decision_;
  std::vector<double> warmup_, steady_, w_slack_;  // per device
  std::vector<char> deep_, w_deep_;                // per device
};

}  // namespace zb_greedy_detail

using zb_greedy_detail::Greedy;
using zb_greedy_detail::slack_word;

std::string ZbGreedyPolicy::name() const {
  if (seed != 0) return fmt::format("zb-greedy per-device@{}", seed);
  return fmt::format("zb-greedy warmup={}/steady={}/w={}/{}", slack_word(warmup_slack), slack_word(steady_slack),
                     w_slack < 0 ? "fill" : fmt::format("{:g}", w_slack), deep_forward_first ? "deep" : "oldest");
}

Result<TimedOrder> zb_greedy_schedule(const OpDag& dag, const ZbGreedyPolicy& policy) {
  return Greedy(dag, policy).run();
}

std::vector<ZbGreedyPolicy> zb_greedy_policies() {
  std::vector<ZbGreedyPolicy> out;
  for (double warmup : {0.0, 0.5, 1.0, -1.0})
    for (double steady : {0.0, 0.5, -1.0})
      for (double w : {0.0, 0.5, -1.0})
        for (bool deep : {false, true}) {
          ZbGreedyPolicy p;
          p.warmup_slack = warmup;
          p.steady_slack = steady;
          p.w_slack = w;
          p.deep_forward_first = deep;
          out.push_back(p);
        }
  for (uint64_t seed = 1; seed <= kZbGreedySeeded; ++seed) {
    ZbGreedyPolicy p;
    p.seed = seed;
    out.push_back(p);
  }
  return out;
}

Result<ZbGreedyResult> zb_greedy_portfolio(const OpDag& dag, const std::atomic<bool>* interrupt) {
  ZbGreedyResult res;
  res.best.makespan = std::numeric_limits<int64_t>::max();
  for (const ZbGreedyPolicy& p : zb_greedy_policies()) {
    if (interrupt && interrupt->load(std::memory_order_relaxed)) break;
    ++res.tried;
    Result<TimedOrder> t = zb_greedy_schedule(dag, p);
    if (!t.ok()) {
      ++res.failed;
      continue;
    }
    if (t->makespan < res.best.makespan) {
      res.best = std::move(t).value();
      res.policy = p.name();
    }
  }
  if (res.policy.empty()) {
    if (res.tried < static_cast<int>(zb_greedy_policies().size()))
      return Status::error(ErrorCode::kInfeasible, "zb-greedy: interrupted before a policy finished");
    return Status::error(ErrorCode::kInfeasible, "zb-greedy: every policy got stuck on memory");
  }
  return res;
}

}  // namespace ps
