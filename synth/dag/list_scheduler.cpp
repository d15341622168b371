// list_scheduler.cpp — event-ordered list scheduling with priority policies and memory admission.
#include "synth/dag/list_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "synth/dag/justify.h"

namespace ps {

std::string ListPolicy::name() const {
  if (serial) return "serial";
  const std::string inflight = inflight_factor > 0 ? fmt::format("{:g}", inflight_factor) : "mem";
  std::string base;
  if (by_tail) {
    base = fmt::format("critical-path/inflight={}", inflight);
  } else {
    const char* w = w_mode == WMode::kFillGaps ? "fill" : w_mode == WMode::kStrictGaps ? "strict" : "eager";
    base = fmt::format("{}/{}/inflight={}/{}{}", backward_first ? "bwd-first" : "fwd-first", w, inflight,
                       oldest_first ? "oldest" : "stage", wait_for_backward ? "/wait" : "");
  }
  if (noise > 0) base += fmt::format("/noise={:g}@{}", noise, seed);
  return base;
}

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max() / 4;

struct Scheduler {
  const OpDag& dag;
  const ListPolicy& pol;
  int n = 0;
  // Per op, together (release_successors touches all three of a successor at once).
  struct OpState {
    int64_t ready = 0;                     // max over scheduled preds of end + delay
    int missing = 0;                       // predecessors not yet scheduled
    int home = 0;                          // its device, or -1 for a transfer
    int pos = 0;                           // while available on a device: its index in avail[home]
  };
  std::vector<OpState> st;
  std::vector<std::vector<int>> avail;     // per device: compute ops whose predecessors are all scheduled
                                           // (any order: every choice below is a minimum)
  struct AvailTransfer {
    int64_t ready;                         // final once available: all predecessors are placed
    int r0, r1;                            // its two comm streams
    int op;
  };
  std::vector<AvailTransfer> avail_x;      // transfers whose predecessors are all scheduled
  std::vector<int64_t> free_at;            // per resource (devices, comm streams)
  std::vector<int64_t> mem;                // per device: live activations + stashes
  std::vector<int64_t> reserve;            // per stage: activation of later stages on its device
  std::vector<int64_t> r_reserve;          // per stage: largest R allocation of later stages on its device
  std::vector<int64_t> r_room;             // per stage: largest R allocation of it and later stages there
  std::vector<int> inflight, inflight_cap; // per stage
  std::vector<int64_t> work_left;          // per device: durations of its ops not yet placed
  int64_t abandon_at = std::numeric_limits<int64_t>::max();
  bool abandoned = false;
  // Ops are placed in the order of their starts (see `monotone`), so once an op starts at `now`
  // every device still has all its work left to do after `now`: the makespan is at least now + the
  // most work a device has left. busiest_left is that device (of work_left's largest entry).
  bool monotone = false;
  int64_t now = 0;
  int busiest_left = 0;
  std::vector<int> left_of_mb;             // serial: ops not yet scheduled per microbatch
  std::vector<double> jitter;              // per op, in [0, 1): priority noise
  bool has_r = false;                      // some stage recomputes (the DAG has R ops)
  bool admits_all = false;                 // allowed() holds for every op: no cap, in-flight limit or serial
  int class_of[kNumOpTypes] = {};          // per op type but R: its priority class (type_class)
  int oldest_open_mb = 0;
  // choose(d) depends only on device d's own state (its available ops, free_at, memory, the in-flight
  // counts of its stages) and, for the serial policy, on the oldest open microbatch: it is
  // recomputed only for the devices whose state changed since the last step.
  std::vector<char> stale;                 // per device
  std::vector<int> stale_list;             // the devices with stale set
  // Likewise the transfer choice depends only on the available transfers and the comm streams'
  // free times, which change only when a transfer is placed (a released one is compared with it).
  bool stale_x = true;
  TimedOrder out;
  struct Choice {
    int op = -1;
    int64_t start = kNever;
  };
  std::vector<Choice> choice;              // per device: its choice, valid unless stale
  // Where a device's choice depends on nothing but its available ops (no serial policy, no R, no
  // waiting for a later op: not critical-path, strict-gap or wait-for-backward), an op released to a
  // device that is not stale is compared with its choice instead of rescanning the device; the
  // devices whose choice changed so are `touched` (their tree leaf is updated).
  bool incremental = false;
  std::vector<char> touched;
  std::vector<int> touched_list;

  Scheduler(const OpDag& d, const ListPolicy& p) : dag(d), pol(p) {}

  // Priority class: lower runs first. An R fills gaps (below every other class) until its I/B waits
  // on it alone; then it takes that backward's class (it is on the critical path).
  int klass(int op) const {
    const OpType t = dag.ops[op].type;
    if (t == OpType::R) {
      const int b = dag.bwd_op(dag.ops[op].stage, dag.ops[op].mb);
      return st[b].missing == 1 ? klass(b) : 3;
    }
    return class_of[static_cast<int>(t)];
  }
  // The class of an op of type t other than R (fixed by the policy): class_of's entries.
  int type_class(OpType t) const {
    const bool bwd = t == OpType::I || t == OpType::B;
    if (pol.w_mode == ListPolicy::WMode::kEager) {
      if (bwd) return pol.backward_first ? 0 : 1;
      if (t == OpType::W) return pol.backward_first ? 1 : 2;
      return pol.backward_first ? 2 : 0;
    }
    if (t == OpType::W) return 2;
    if (bwd) return pol.backward_first ? 0 : 1;
    return pol.backward_first ? 1 : 0;
  }

  int64_t level(int op) const { return dag.ops[op].dur + dag.tail[op]; }

  // Total order among ops of one device (lower = preferred).
  bool better(int a, int b) const {
    if (pol.by_tail) {
      const double la = level(a) * (1 + pol.noise * (jitter.empty() ? 0 : jitter[a] - 0.5));
      const double lb = level(b) * (1 + pol.noise * (jitter.empty() ? 0 : jitter[b] - 0.5));
      if (la != lb) return la > lb;
      if (dag.ops[a].mb != dag.ops[b].mb) return dag.ops[a].mb < dag.ops[b].mb;
      return a < b;
    }
    const int ka = klass(a), kb = klass(b);
    if (pol.noise > 0) {
      const double sa = ka + pol.noise * jitter[a], sb = kb + pol.noise * jitter[b];
      if (sa != sb) return sa < sb;
    }
    if (ka != kb) return ka < kb;
    const DagOp &oa = dag.ops[a], &ob = dag.ops[b];
    if (oa.type == OpType::F && ob.type == OpType::F && !pol.oldest_first) {
      if (oa.stage != ob.stage) return oa.stage < ob.stage;
      return oa.mb < ob.mb;
    }
    if (oa.mb != ob.mb) return oa.mb < ob.mb;
    // Same microbatch: forwards deeper stage first is impossible (dependency); backwards prefer the
    // later stage (closer to the loss), which is also the dependency order.
    if (oa.stage != ob.stage) return oa.type == OpType::F ? oa.stage < ob.stage : oa.stage > ob.stage;
    return a < b;
  }

  bool allowed(int op) const {
    const DagOp& o = dag.ops[op];
    if (pol.serial && o.mb != oldest_open_mb) return false;
    if (o.type == OpType::R) {
      if (!dag.mem_limited) return true;
      const int64_t after = mem[o.device] + o.alloc_mem;
      if (after > dag.cap_mem[o.device]) return false;
      // An R that waits for its gradient keeps room for the forwards of the device's later stages
      // and for one of their R (their backwards come first, and nothing this R holds is freed
      // before them); one its backward waits on runs whenever it fits.
      return after + reserve[o.stage] + r_reserve[o.stage] <= dag.cap_mem[o.device] || klass(op) != 3;
    }
    if (o.type != OpType::F) return true;
    if (inflight_cap[o.stage] > 0 && inflight[o.stage] >= inflight_cap[o.stage]) return false;
    if (dag.mem_limited &&
        mem[o.device] + o.alloc_mem + reserve[o.stage] + r_room[o.stage] > dag.cap_mem[o.device]) {
      // The reserve keeps room for the device's later stages (and for one recomputation); the
      // oldest microbatch may use it, leaving room for its own R.
      if (mem[o.device] + o.alloc_mem + r_own(o.stage) > dag.cap_mem[o.device]) return false;
      if (inflight[o.stage] > 0) return false;
    }
    return true;
  }
  int64_t r_own(int stage) const {
    const int r = dag.r_op(stage, 0);
    return r >= 0 ? dag.ops[r].alloc_mem : 0;
  }

  Choice transfer;                         // the transfer choice (valid unless stale_x)
  bool transfer_changed = false;           // since its leaf was last updated

  Choice choose(int d) const {
    Choice c;
    // In one pass: t0, the earliest start of an allowed op, and the best allowed op that can start
    // then (every start is at least free_at[d], so those are the ops ready by t0).
    int64_t t0 = kNever;
    int best = -1;
    for (int op : avail[d]) {
      if (!admits_all && !allowed(op)) continue;
      const int64_t start = std::max(free_at[d], st[op].ready);
      if (start < t0) {
        t0 = start;
        best = op;
      } else if (start == t0 && better(op, best)) {
        best = op;
      }
    }
    if (best < 0) return c;
    c.op = best;
    c.start = t0;
    if (pol.by_tail) {
      // Wait for an op on a longer path if it arrives before `best` would end and waiting costs
      // less than the path difference.
      const int64_t end = t0 + dag.ops[best].dur;
      int alt = -1;
      for (int op : avail[d]) {
        if (st[op].ready <= t0 || st[op].ready >= end || (!admits_all && !allowed(op))) continue;
        if (level(op) - level(best) <= st[op].ready - t0) continue;
        if (alt < 0 || better(op, alt)) alt = op;
      }
      if (alt >= 0) {
        c.op = alt;
        c.start = st[alt].ready;
      }
      return c;
    }
    const OpType bt = dag.ops[best].type;
    const bool strict_w = pol.w_mode == ListPolicy::WMode::kStrictGaps && bt == OpType::W;
    const bool strict_f = pol.wait_for_backward && pol.backward_first && bt == OpType::F;
    if (strict_w || strict_f) {
      // Do not let a W (or F) delay a higher-priority op that arrives before it would end.
      const int64_t end = t0 + dag.ops[best].dur;
      int alt = -1;
      for (int op : avail[d]) {
        if (klass(op) >= klass(best) || (!admits_all && !allowed(op)) || st[op].ready <= t0 || st[op].ready >= end) continue;
        if (alt < 0 || st[op].ready < st[alt].ready || (st[op].ready == st[alt].ready && better(op, alt))) alt = op;
      }
      if (alt >= 0) {
        c.op = alt;
        c.start = st[alt].ready;
      }
    }
    return c;
  }

  // The transfer that can start first on both of its comm streams (ties: lower id).
  void choose_transfer() {
    transfer = Choice{};
    for (const AvailTransfer& x : avail_x) offer_transfer(x);
  }
  void offer_transfer(const AvailTransfer& x) {
    const int64_t start = std::max({x.ready, free_at[x.r0], free_at[x.r1]});
    if (transfer.op < 0 || start < transfer.start || (start == transfer.start && x.op < transfer.op)) {
      transfer.op = x.op;
      transfer.start = start;
      transfer_changed = true;
    }
  }

  void mark_stale(int d) {
    if (stale[d]) return;
    stale[d] = 1;
    stale_list.push_back(d);
  }

  // Removes one element from an unordered list.
  template <typename T, typename Pred>
  static void remove_one(std::vector<T>& v, Pred is) {
    auto it = std::find_if(v.begin(), v.end(), is);
    *it = v.back();
    v.pop_back();
  }

  void place(int op, int64_t start) {
    const DagOp& o = dag.ops[op];
    const int64_t end = start + o.dur;
    if (monotone) {
      PS_ASSERT(start >= now, fmt::format("list_schedule: policy {} placed {} at {}, before an op placed at {}",
                                          pol.name(), dag.op_name(op), start, now));
      now = start;
    }
    out.start[op] = start;
    out.makespan = std::max(out.makespan, end);
    if (--left_of_mb[o.mb] == 0) {
      while (oldest_open_mb < dag.microbatches && left_of_mb[oldest_open_mb] == 0) ++oldest_open_mb;
      if (pol.serial)
        for (int d = 0; d < dag.devices; ++d) mark_stale(d);
    }
    if (o.is_transfer()) {
      stale_x = true;
      remove_one(avail_x, [op](const AvailTransfer& x) { return x.op == op; });
      int r[2] = {0, 0};
      dag.resources_of(op, r);
      for (int j : {0, 1}) {
        out.order[r[j]].push_back(op);
        free_at[r[j]] = end;
      }
      release_successors(op, end);
      return;
    }
    const int d = o.device;
    mark_stale(d);
    {
      std::vector<int>& a = avail[d];
      const int i = st[op].pos, last = a.back();
      a[i] = last;
      st[last].pos = i;
      a.pop_back();
    }
    out.order[d].push_back(op);
    free_at[d] = end;
    // Later ops of d start at or after `end`: the makespan is at least end + the work d has left.
    work_left[d] -= o.dur;
    if (end + work_left[d] >= abandon_at) abandoned = true;
    if (monotone) {
      if (d == busiest_left) {
        int64_t most = work_left[d];
        for (int e = 0; e < dag.devices; ++e) {
          if (work_left[e] > most) {
            most = work_left[e];
            busiest_left = e;
          }
        }
      }
      if (start + work_left[busiest_left] >= abandon_at) abandoned = true;
    }
    mem[d] += o.alloc_mem;
    out.peak_mem[d] = std::max(out.peak_mem[d], mem[d]);
    mem[d] -= o.free_mem;
    if (o.type == OpType::F) ++inflight[o.stage];
    if (o.type == OpType::I || o.type == OpType::B) --inflight[o.stage];
    release_successors(op, end);
  }

  void release_successors(int op, int64_t end) {
    for (const DagEdge& e : dag.successors(op)) {
      st[e.op].ready = std::max(st[e.op].ready, end + e.delay);
      if (--st[e.op].missing > 0) {
        if (!has_r) continue;
        // An I/B left waiting on its R alone raises the R's priority (klass): re-choose its device.
        const OpType t = dag.ops[e.op].type;
        if (st[e.op].missing == 1 && (t == OpType::I || t == OpType::B) &&
            dag.r_op(dag.ops[e.op].stage, dag.ops[e.op].mb) >= 0)
          mark_stale(st[e.op].home);
        continue;
      }
      const int d = st[e.op].home;
      if (d < 0) {
        int r[2] = {0, 0};
        dag.resources_of(e.op, r);
        avail_x.push_back({st[e.op].ready, r[0], r[1], e.op});
        // The streams' free times have not changed since the last full choice unless a transfer
        // was placed (stale_x): then the new transfer only has to beat that choice.
        if (!stale_x) offer_transfer(avail_x.back());
      } else {
        st[e.op].pos = static_cast<int>(avail[d].size());
        avail[d].push_back(e.op);
        if (incremental && !stale[d]) offer(d, e.op);
        else mark_stale(d);
      }
    }
  }

  // A newly available op of device d, whose state has not changed since its choice was made: the
  // choice becomes the better of the two (`better` is a strict total order there, so this is the
  // choice a rescan of d would make).
  void offer(int d, int op) {
    if (!admits_all && !allowed(op)) return;
    const int64_t start = std::max(free_at[d], st[op].ready);
    Choice& c = choice[d];
    if (c.op >= 0 && (start > c.start || (start == c.start && !better(op, c.op)))) return;
    c.op = op;
    c.start = start;
    if (!touched[d]) {
      touched[d] = 1;
      touched_list.push_back(d);
    }
  }

  bool rescan_only = false;                // list_schedule_rescanning: never `incremental`, always the tree

  Result<TimedOrder> run() {
    n = dag.num_ops();
    st.assign(n, {});
    avail.assign(dag.devices, {});
    avail_x.clear();
    free_at.assign(dag.num_resources(), 0);
    mem.assign(dag.devices, 0);
    out.order.assign(dag.num_resources(), {});
    for (int r = 0; r < dag.num_resources(); ++r) out.order[r].reserve(dag.resource_ops[r].size());
    out.start.assign(n, -1);
    out.peak_mem.assign(dag.devices, 0);
    reserve.assign(dag.stages, 0);
    r_reserve.assign(dag.stages, 0);
    r_room.assign(dag.stages, 0);
    inflight.assign(dag.stages, 0);
    inflight_cap.assign(dag.stages, 0);
    left_of_mb.assign(dag.microbatches, 0);
    jitter.assign(pol.noise > 0 ? n : 0, 0.0);
    for (size_t i = 0; i < jitter.size(); ++i) {
      // splitmix64 of (seed, op): deterministic, independent of the platform.
      uint64_t z = pol.seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      jitter[i] = static_cast<double>(z >> 11) * 0x1.0p-53;
    }
    work_left.assign(dag.devices, 0);
    for (int i = 0; i < n; ++i) {
      if (!dag.ops[i].is_transfer()) work_left[dag.ops[i].device] += dag.ops[i].dur;
      ++left_of_mb[dag.ops[i].mb];
      st[i].home = dag.ops[i].is_transfer() ? -1 : dag.ops[i].device;
      if (dag.ops[i].type == OpType::R) has_r = true;
    }
    for (int d = 0; d < dag.devices; ++d)
      if (work_left[d] > work_left[busiest_left]) busiest_left = d;
    // Every op released later becomes ready at or after the end of the op that released it, and
    // the ops a device can already run only become allowed through that device's own placements
    // (its memory, its stages' in-flight counts), which also move its free time past the current
    // start. Two things break that: the serial policy (a microbatch finished anywhere admits ops
    // that were ready long ago) and R ops (whose admission depends on their backward's other
    // predecessors). There the bound is the device's own.
    monotone = !pol.serial && !has_r;
    for (int t = 0; t < kNumOpTypes; ++t) class_of[t] = type_class(static_cast<OpType>(t));
    admits_all = !pol.serial && !dag.mem_limited && pol.inflight_factor <= 0;
    // From the last stage back: what the device's later stages allocate, and their largest R.
    std::vector<int64_t> later_alloc(dag.devices, 0), later_r(dag.devices, 0);
    for (int s = dag.stages - 1; s >= 0; --s) {
      const DagOp& f = dag.ops[dag.f_op(s, 0)];
      reserve[s] = later_alloc[f.device];
      r_reserve[s] = later_r[f.device];
      later_alloc[f.device] += f.alloc_mem;
      later_r[f.device] = std::max(later_r[f.device], r_own(s));
    }
    for (int s = 0; s < dag.stages; ++s) {
      r_room[s] = std::max(r_reserve[s], r_own(s));
      if (pol.inflight_factor > 0)
        inflight_cap[s] = std::max(1, static_cast<int>(std::ceil(pol.inflight_factor * (dag.stages - s) - 1e-9)));
    }
    for (int i = 0; i < n; ++i) {
      st[i].missing = static_cast<int>(dag.pred[i].size());
      if (st[i].missing == 0) {  // transfers always have a producer
        st[i].pos = static_cast<int>(avail[dag.ops[i].device].size());
        avail[dag.ops[i].device].push_back(i);
      }
    }
    stale.assign(dag.devices, 0);
    stale_list.clear();
    stale_list.reserve(dag.devices);
    for (int d = 0; d < dag.devices; ++d) mark_stale(d);
    choice.assign(dag.devices, Choice{});
    incremental = !rescan_only && !pol.serial && !has_r && !pol.by_tail &&
                  pol.w_mode != ListPolicy::WMode::kStrictGaps && !pol.wait_for_backward;
    touched.assign(dag.devices, 0);
    touched_list.clear();
    // The next op to place: the earliest start over the transfer choice and the devices' choices;
    // transfers go first on ties (they only occupy comm streams and unblock their consumers), then
    // the lower device. A tournament tree over the leaves (transfers, device 0, device 1, ...) keyed
    // by start * leaves + leaf keeps that minimum; only stale leaves are updated. With at most 32
    // leaves the minimum is instead taken over the leaves after each round of updates (one short
    // scan costs less than walking up the tree for each changed leaf).
    constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
    int leaves = 1, shift = 0;
    while (leaves < dag.devices + 1) leaves <<= 1, ++shift;
    const int64_t max_start = kNone >> (shift + 1);
    std::vector<int64_t> tree(2 * leaves, kNone);
    const bool flat = leaves <= 32 && !rescan_only;
    bool overflow = false;
    auto update = [&](int leaf, const Choice& c) {
      int i = leaves + leaf;
      if (c.op >= 0 && c.start > max_start) overflow = true;
      // The new minimum of each node on the way up, from the one below and its sibling (which this
      // update does not change), kept in a register rather than read back from the tree.
      int64_t v = c.op >= 0 ? (c.start << shift) | leaf : kNone;
      tree[i] = v;
      if (flat) return;
      for (; i > 1; i >>= 1) {
        v = std::min(v, tree[i ^ 1]);
        if (tree[i >> 1] == v) break;  // the ancestors are unchanged too
        tree[i >> 1] = v;
      }
    };
    for (int placed = 0; placed < n; ++placed) {
      if (stale_x) {
        choose_transfer();
        stale_x = false;
        transfer_changed = true;
      }
      if (transfer_changed) {
        transfer_changed = false;
        update(0, transfer);
      }
      for (int d : touched_list) {
        touched[d] = 0;
        update(1 + d, choice[d]);
      }
      touched_list.clear();
      for (int d : stale_list) {
        choice[d] = choose(d);
        stale[d] = 0;
        update(1 + d, choice[d]);
      }
      stale_list.clear();
      if (overflow) {
        return Status::error(ErrorCode::kBadInput,
                             fmt::format("policy {}: op start times beyond {} time units", pol.name(), max_start));
      }
      if (flat) {
        int64_t least = tree[leaves];
        for (int i = leaves + 1; i <= leaves + dag.devices; ++i) least = std::min(least, tree[i]);
        tree[1] = least;
      }
      if (tree[1] == kNone) {
        return Status::error(ErrorCode::kInfeasible,
                             fmt::format("policy {} got stuck after {} of {} ops", pol.name(), placed, n));
      }
      const int leaf = static_cast<int>(tree[1] & (leaves - 1));
      const Choice best = leaf == 0 ? transfer : choice[leaf - 1];
      place(best.op, best.start);
      if (abandoned) {
        return Status::error(ErrorCode::kInfeasible,
                             fmt::format("policy {} abandoned after {} of {} ops: its makespan reaches {}",
                                         pol.name(), placed + 1, n, abandon_at));
      }
    }
    return std::move(out);
  }
};

}  // namespace

namespace {

// One run of the scheduler; the makespan includes the data-parallel step's end.
Result<TimedOrder> schedule(const OpDag& dag, const ListPolicy& policy, int64_t abandon_at, bool* abandoned,
                            bool rescan_only) {
  Scheduler s(dag, policy);
  s.abandon_at = abandon_at;
  s.rescan_only = rescan_only;
  Result<TimedOrder> r = s.run();
  if (abandoned) *abandoned = s.abandoned;
  if (r.ok()) r->makespan = std::max(r->makespan, data_parallel_end(dag, r->start));
  return r;
}

}  // namespace

Result<TimedOrder> list_schedule(const OpDag& dag, const ListPolicy& policy, int64_t abandon_at, bool* abandoned) {
  return schedule(dag, policy, abandon_at, abandoned, false);
}

Result<TimedOrder> list_schedule_rescanning(const OpDag& dag, const ListPolicy& policy) {
  return schedule(dag, policy, std::numeric_limits<int64_t>::max(), nullptr, true);
}

std::vector<ListPolicy> heuristic_policies(const OpDag& dag) {
  // "Lowest stage first" only differs from "oldest first" on devices with several stages.
  const bool multi_stage = dag.stages > dag.devices;
  std::vector<ListPolicy> out;
  using WM = ListPolicy::WMode;
  for (bool wait : {false, true}) {
    for (double f : {0.0, 1.0, 2.0}) {
      for (WM w : {WM::kFillGaps, WM::kStrictGaps, WM::kEager}) {
        for (bool oldest : {true, false}) {
          if (!oldest && !multi_stage) continue;
          ListPolicy p;
          p.inflight_factor = f;
          p.w_mode = w;
          p.oldest_first = oldest;
          p.wait_for_backward = wait;
          out.push_back(p);
        }
      }
    }
  }
  ListPolicy fwd;
  fwd.backward_first = false;
  out.push_back(fwd);
  for (double f : {0.0, 1.0, 2.0}) {
    ListPolicy p;
    p.by_tail = true;
    p.inflight_factor = f;
    out.push_back(p);
  }
  return out;
}

namespace {

// The policies heuristic_schedule() runs before the perturbations.
std::vector<ListPolicy> portfolio_policies(const OpDag& dag, const HeuristicOptions& options) {
  std::vector<ListPolicy> policies = heuristic_policies(dag);
  if (!options.portfolio) policies.resize(1);
  if (options.lean)
    policies.erase(std::remove_if(policies.begin(), policies.end(),
                                  [](const ListPolicy& p) {
                                    return !p.by_tail && (p.w_mode == ListPolicy::WMode::kEager || !p.oldest_first);
                                  }),
                   policies.end());
  return policies;
}

}  // namespace

int portfolio_runs(const OpDag& dag, const HeuristicOptions& options) {
  const int restarts = options.portfolio ? std::max(0, options.random_restarts) : 0;
  return static_cast<int>(portfolio_policies(dag, options).size()) + restarts + (dag.mem_limited ? 1 : 0);
}

Result<HeuristicResult> heuristic_schedule(const OpDag& dag, const HeuristicOptions& options) {
  const std::vector<ListPolicy> policies = portfolio_policies(dag, options);
  ListPolicy serial;
  serial.serial = true;
  HeuristicResult res;
  bool have = false;
  struct Entry {
    TimedOrder order;
    std::string policy;
  };
  constexpr size_t kJustified = 4;
  std::vector<Entry> top;  // the shortest orders so far, shortest first
  auto consider = [&](const ListPolicy& p) {
    if (res.stopped || (options.stop && options.stop())) {
      res.stopped = true;
      return;
    }
    ++res.tried;
    // An order is kept only if shorter than the best (or, with justification, than the last of
    // the full top list): give up on it as soon as it cannot be.
    int64_t abandon_at = std::numeric_limits<int64_t>::max();
    if (options.abandon && (options.justify_rounds > 0 ? top.size() == kJustified : have))
      abandon_at = options.justify_rounds > 0 ? top.back().order.makespan : res.best.makespan;
    bool abandoned = false;
    Result<TimedOrder> r = list_schedule(dag, p, abandon_at, &abandoned);
    if (!r.ok()) {
      ++(abandoned ? res.abandoned : res.failed);
      return;
    }
    if (options.justify_rounds > 0) {
      // The few shortest orders go to justification at the end (the shortest before it is not
      // always the shortest after it).
      auto longer = [&](const Entry& e) { return r->makespan < e.order.makespan; };
      if (top.size() < kJustified || longer(top.back())) {
        if (top.size() == kJustified) top.pop_back();
        top.insert(std::find_if(top.begin(), top.end(), longer), Entry{*r, p.name()});
      }
    }
    if (!have || r->makespan < res.best.makespan) {
      res.best = std::move(r).value();
      res.policy = p.name();
      have = true;
    }
  };
  for (const ListPolicy& p : policies) consider(p);
  if (have && options.portfolio) {
    // Seeded perturbations of the winner's priorities (a cheap randomized local search).
    ListPolicy base;
    for (const ListPolicy& p : policies)
      if (p.name() == res.policy) base = p;
    for (int k = 0; k < options.random_restarts; ++k) {
      ListPolicy p = base;
      p.noise = k % 3 == 0 ? 0.4 : k % 3 == 1 ? 0.8 : 1.5;
      p.seed = static_cast<uint64_t>(k + 1);
      consider(p);
    }
  }
  if (!have || dag.mem_limited) consider(serial);
  if (res.stopped) return res;  // the caller discards it: no justification
  if (!have) {
    return Status::error(ErrorCode::kInfeasible,
                         "no policy (not even one microbatch at a time) respects the memory caps");
  }
  for (Entry& e : top) {
    if (!justify_in_place(dag, e.order, options.justify_rounds)) continue;
    if (e.order.makespan < res.best.makespan) {
      res.best = std::move(e.order);
      res.policy = e.policy + " + justified";
    }
  }
  // The winner's times are its order's earliest-start times (list scheduling never starts an op
  // later than it could given the order); re-timing guards that invariant.
  Result<TimedOrder> again = evaluate_order(dag, res.best.order);
  PS_ASSERT(again.ok() && again->makespan == res.best.makespan,
            fmt::format("heuristic policy {} produced times that its own order does not reproduce", res.policy));
  return res;
}

}  // namespace ps
