// window.cpp — the windowed search of window.h: the incumbent's order graph, one window's problem
// as an op DAG of its own, rounds of windows solved side by side, and the splice back.
#include "synth/z3/window.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "ir/output_file.h"
#include "synth/z3/encode.h"
#include "synth/z3/z3_util.h"

namespace ps {

// Named, so that a unity build of synth/ sees no clash with the other files' helpers.
namespace window_impl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kNone = std::numeric_limits<int64_t>::min() / 4;

// The incumbent with what every window needs: its resource lists (devices, then comm streams),
// each op's position in them, a topological order of its order graph (DAG edges plus list order),
// and its ops sorted by start.
struct Incumbent {
  const OpDag& dag;
  TimedOrder t;
  std::vector<int> topo;     // order graph, Kahn's algorithm (min op id first): deterministic
  std::vector<int> by_start; // ops by (start, op id)
  std::vector<std::array<int, 2>> pos;  // position in each of the op's resources' lists

  Incumbent(const OpDag& d, TimedOrder order) : dag(d), t(std::move(order)) {
    const int n = dag.num_ops();
    pos.assign(n, {-1, -1});
    for (int r = 0; r < static_cast<int>(t.order.size()); ++r) {
      for (size_t p = 0; p < t.order[r].size(); ++p) {
        const int op = t.order[r][p];
        int rs[2];
        dag.resources_of(op, rs);
        pos[op][rs[0] == r ? 0 : 1] = static_cast<int>(p);
      }
    }
    order_graph_topo();
    by_start.resize(n);
    for (int i = 0; i < n; ++i) by_start[i] = i;
    std::sort(by_start.begin(), by_start.end(),
              [&](int a, int b) { return t.start[a] != t.start[b] ? t.start[a] < t.start[b] : a < b; });
  }

  // The op after `op` on its j-th resource (-1 at the end).
  int next_on(int op, int j) const {
    int rs[2];
    dag.resources_of(op, rs);
    const auto& list = t.order[rs[j]];
    const size_t p = static_cast<size_t>(pos[op][j]) + 1;
    return p < list.size() ? list[p] : -1;
  }

 private:
  void order_graph_topo() {
    const int n = dag.num_ops();
    std::vector<int> indeg(n, 0);
    for (int i = 0; i < n; ++i) {
      indeg[i] += static_cast<int>(dag.pred[i].size());
      int rs[2];
      const int k = dag.resources_of(i, rs);
      for (int j = 0; j < k; ++j) indeg[i] += pos[i][j] > 0;
    }
    std::vector<int> heap;
    auto push = [&](int v) {
      heap.push_back(v);
      std::push_heap(heap.begin(), heap.end(), std::greater<int>());
    };
    for (int i = 0; i < n; ++i)
      if (indeg[i] == 0) push(i);
    topo.reserve(n);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<int>());
      const int u = heap.back();
      heap.pop_back();
      topo.push_back(u);
      for (const DagEdge& e : dag.succ[u])
        if (--indeg[e.op] == 0) push(e.op);
      int rs[2];
      const int k = dag.resources_of(u, rs);
      for (int j = 0; j < k; ++j) {
        const int v = next_on(u, j);
        if (v >= 0 && --indeg[v] == 0) push(v);
      }
    }
  }
};

enum Class : unsigned char { kBefore, kIn, kAfter };

// One window: its ops, and the figures of window.h's formula in the incumbent.
struct Window {
  std::vector<int> ops;           // W, ascending op id
  std::vector<Class> cls;         // per op of the whole DAG
  int64_t l0 = 0;                 // longest path avoiding W
  int64_t value = 0;              // V: max over W of end + Q
  std::unique_ptr<OpDag> sub;     // W as an op DAG (heads = releases, tails = Q)
  std::vector<int> sub_of;        // whole op id -> sub id (-1 outside W)
  double load_s = 0;              // encoding_load_seconds(*sub)
};

// The last op before the window on each resource (-1: none), and the first after it.
struct Boundaries {
  std::vector<int> last_before, first_after;
};

Boundaries boundaries(const Incumbent& inc, const std::vector<Class>& cls) {
  const int R = inc.dag.num_resources();
  Boundaries b{std::vector<int>(R, -1), std::vector<int>(R, -1)};
  for (int r = 0; r < R; ++r) {
    for (int op : inc.t.order[r]) {
      if (cls[op] == kBefore) b.last_before[r] = op;
      if (cls[op] == kAfter && b.first_after[r] < 0) b.first_after[r] = op;
    }
  }
  return b;
}

// L0: the order graph's longest path that avoids W; an op after W follows, on each resource, the
// previous op outside W (W's ops lie between them, so that edge only weakens the true one).
int64_t longest_path_avoiding(const Incumbent& inc, const std::vector<Class>& cls, const Boundaries& b) {
  const OpDag& dag = inc.dag;
  std::vector<int64_t> est(dag.num_ops(), 0);
  int64_t l0 = 0;
  for (int v : inc.topo) {
    if (cls[v] == kIn) continue;
    if (cls[v] == kBefore) {
      est[v] = inc.t.start[v];
    } else {
      int64_t s = 0;
      for (const DagEdge& e : dag.pred[v])
        if (cls[e.op] != kIn) s = std::max(s, est[e.op] + dag.ops[e.op].dur + e.delay);
      int rs[2];
      const int k = dag.resources_of(v, rs);
      for (int j = 0; j < k; ++j) {
        const int p = inc.pos[v][j];
        int prev = p > 0 ? inc.t.order[rs[j]][p - 1] : -1;
        if (prev >= 0 && cls[prev] == kIn) prev = b.last_before[rs[j]];
        if (prev >= 0) s = std::max(s, est[prev] + dag.ops[prev].dur);
      }
      est[v] = s;
    }
    l0 = std::max(l0, est[v] + dag.ops[v].dur);
  }
  return l0;
}

// Q of every op of W (window.h), from the tails of the ops after it in the order graph.
std::vector<int64_t> tails_after(const Incumbent& inc, const std::vector<Class>& cls, const Boundaries& b) {
  const OpDag& dag = inc.dag;
  std::vector<int64_t> q(dag.num_ops(), 0);  // for ops after W: dur + longest path after their end
  for (auto it = inc.topo.rbegin(); it != inc.topo.rend(); ++it) {
    const int v = *it;
    if (cls[v] == kBefore) continue;
    int64_t rest = 0;
    for (const DagEdge& e : dag.succ[v])
      if (cls[e.op] == kAfter) rest = std::max(rest, e.delay + q[e.op]);
    int rs[2];
    const int k = dag.resources_of(v, rs);
    for (int j = 0; j < k; ++j) {
      const int next = cls[v] == kIn ? b.first_after[rs[j]] : inc.next_on(v, j);
      if (next >= 0) rest = std::max(rest, q[next]);
    }
    q[v] = cls[v] == kIn ? rest : dag.ops[v].dur + rest;
  }
  return q;
}

// Release of every op of W: the ends of its predecessors before W and of the last op before W on
// each of its resources.
int64_t release_of(const Incumbent& inc, const std::vector<Class>& cls, const Boundaries& b, int v) {
  const OpDag& dag = inc.dag;
  int64_t r = 0;
  for (const DagEdge& e : dag.pred[v])
    if (cls[e.op] == kBefore) r = std::max(r, inc.t.start[e.op] + dag.ops[e.op].dur + e.delay);
  int rs[2];
  const int k = dag.resources_of(v, rs);
  for (int j = 0; j < k; ++j) {
    const int p = b.last_before[rs[j]];
    if (p >= 0) r = std::max(r, inc.t.start[p] + dag.ops[p].dur);
  }
  return r;
}

// W's own op DAG: its ops and the edges among them; heads and tails raised to the releases and Q;
// caps less what the ops before W leave live on each device.
Result<std::unique_ptr<OpDag>> window_dag(const Incumbent& inc, Window& w, const Boundaries& b,
                                          const std::vector<int64_t>& q) {
  const OpDag& dag = inc.dag;
  auto sub = std::make_unique<OpDag>();
  sub->devices = dag.devices;
  sub->stages = dag.stages;
  sub->microbatches = dag.microbatches;
  sub->ms_per_unit = dag.ms_per_unit;
  sub->time_exact = dag.time_exact;
  sub->mb_per_mem_unit = dag.mb_per_mem_unit;
  sub->mem_exact = dag.mem_exact;
  sub->comm_streams = dag.comm_streams;
  w.sub_of.assign(dag.num_ops(), -1);
  for (int op : w.ops) {
    w.sub_of[op] = sub->num_ops();
    sub->ops.push_back(dag.ops[op]);
  }
  const int n = sub->num_ops();
  sub->succ.assign(n, {});
  sub->pred.assign(n, {});
  sub->device_ops.assign(dag.devices, {});
  sub->resource_ops.assign(sub->num_resources(), {});
  for (int op : w.ops) {
    const int i = w.sub_of[op];
    for (const DagEdge& e : dag.succ[op]) {
      if (w.sub_of[e.op] < 0) continue;
      sub->succ[i].push_back({.op = w.sub_of[e.op], .kind = e.kind, .delay = e.delay});
      sub->pred[w.sub_of[e.op]].push_back({.op = i, .kind = e.kind, .delay = e.delay});
    }
    if (!sub->ops[i].is_transfer()) sub->device_ops[sub->ops[i].device].push_back(i);
    int rs[2];
    const int k = sub->resources_of(i, rs);
    for (int j = 0; j < k; ++j) sub->resource_ops[rs[j]].push_back(i);
  }
  PS_RETURN_IF_ERROR(sub->recompute_paths());
  for (int i : sub->topo) {
    sub->head[i] = std::max(sub->head[i], release_of(inc, w.cls, b, w.ops[i]));
    for (const DagEdge& e : sub->succ[i])
      sub->head[e.op] = std::max(sub->head[e.op], sub->head[i] + sub->ops[i].dur + e.delay);
  }
  for (auto it = sub->topo.rbegin(); it != sub->topo.rend(); ++it) {
    const int i = *it;
    sub->tail[i] = std::max(sub->tail[i], q[w.ops[i]]);
    for (const DagEdge& e : sub->pred[i])
      sub->tail[e.op] = std::max(sub->tail[e.op], e.delay + sub->ops[i].dur + sub->tail[i]);
  }
  sub->mem_limited = dag.mem_limited;
  sub->state_mem = dag.state_mem;
  sub->cap_mem = dag.cap_mem;
  if (dag.mem_limited) {
    for (int d = 0; d < dag.devices; ++d)
      for (int op : inc.t.order[d])
        if (w.cls[op] == kBefore) sub->cap_mem[d] -= dag.ops[op].alloc_mem - dag.ops[op].free_mem;
  }
  return sub;
}

// The window of the ops whose start lies in [start of by_start[lo], start of by_start[hi]).
Result<Window> make_window(const Incumbent& inc, int lo, int hi) {
  const OpDag& dag = inc.dag;
  const int n = dag.num_ops();
  const int64_t t0 = inc.t.start[inc.by_start[lo]];
  const int64_t t1 = hi < n ? inc.t.start[inc.by_start[hi]] : std::numeric_limits<int64_t>::max();
  Window w;
  w.cls.assign(n, kBefore);
  for (int i = 0; i < n; ++i) {
    const int64_t s = inc.t.start[i];
    w.cls[i] = s < t0 ? kBefore : s < t1 ? kIn : kAfter;
    if (w.cls[i] == kIn) w.ops.push_back(i);
  }
  if (w.ops.empty()) return w;
  const Boundaries b = boundaries(inc, w.cls);
  w.l0 = longest_path_avoiding(inc, w.cls, b);
  const std::vector<int64_t> q = tails_after(inc, w.cls, b);
  for (int op : w.ops) w.value = std::max(w.value, inc.t.start[op] + dag.ops[op].dur + q[op]);
  if (w.value <= w.l0) return w;  // cannot shorten the makespan: no problem built
  Result<std::unique_ptr<OpDag>> sub = window_dag(inc, w, b, q);
  if (!sub.ok()) return sub.status();
  w.sub = std::move(sub).value();
  return w;
}

// `order` with W's ops in each list replaced by `w_order` (per resource, whole op ids); W's ops are
// a contiguous slice of each list (a window never moves ops outside it).
std::vector<std::vector<int>> splice(std::vector<std::vector<int>> order, const Window& w,
                                     const std::vector<std::vector<int>>& w_order) {
  for (size_t r = 0; r < order.size(); ++r) {
    auto& list = order[r];
    const auto first = std::find_if(list.begin(), list.end(), [&](int op) { return w.sub_of[op] >= 0; });
    size_t k = static_cast<size_t>(first - list.begin());
    for (int op : w_order[r]) list[k++] = op;
  }
  return order;
}

// One window's descent on its own context: C <= V - 1, then below each model found, until UNSAT,
// unknown or the share is spent. Keeps W's best order (whole op ids per resource) and its makespan
// once spliced into the incumbent.
struct WindowRun {
  std::optional<std::vector<std::vector<int>>> w_order;
  int64_t makespan = 0;
  int checks = 0;
  uint64_t used = 0;
  bool dumped = false;
  Status dump_status = Status::ok();  // writing its --dump-smt2 file, when asked
  std::string error;
};

// A model's order of W, in whole op ids per resource.
std::vector<std::vector<int>> window_order(const Window& w, const std::vector<int64_t>& starts) {
  std::vector<std::vector<int>> order = order_by_starts(*w.sub, starts);
  for (auto& list : order)
    for (int& i : list) i = w.ops[i];
  return order;
}

// The incumbent's order of W in the window's own op ids (what Encoding::orientation reads).
TimedOrder incumbent_in(const Incumbent& inc, const Window& w) {
  TimedOrder t;
  t.order.resize(inc.t.order.size());
  for (size_t r = 0; r < inc.t.order.size(); ++r)
    for (int op : inc.t.order[r])
      if (w.sub_of[op] >= 0) t.order[r].push_back(w.sub_of[op]);
  return t;
}

// The incumbent restricted to W in the window's own op ids, with its starts (absolute, as the
// window's heads are) and the window's value as its makespan: what Encoding::warm_start reads.
TimedOrder incumbent_timed_in(const Incumbent& inc, const Window& w) {
  TimedOrder t = incumbent_in(inc, w);
  t.start.resize(w.ops.size());
  for (size_t i = 0; i < w.ops.size(); ++i) t.start[i] = inc.t.start[w.ops[i]];
  t.makespan = w.value;
  return t;
}

WindowRun run_window(const Incumbent& inc, const Window& w, unsigned seed, bool memory, bool warm_start, uint64_t share,
                     Clock::time_point deadline, const std::string& dump_path, const std::atomic<bool>* interrupt) {
  WindowRun out;
  EncodeOptions eo;
  eo.memory = memory;
  eo.seed = seed;
  eo.name_vars = !dump_path.empty();
  const DeviceReach reach(*w.sub);
  Result<std::unique_ptr<Encoding>> er = Encoding::create(*w.sub, reach, eo);
  if (!er.ok()) {
    out.error = er.status().message();
    return out;
  }
  Encoding& enc = **er;
  if (warm_start) {
    if (Status st = enc.warm_start(incumbent_timed_in(inc, w)); !st.is_ok()) {
      out.error = st.message();
      return out;
    }
  }
  int64_t target = w.value - 1;
  try {
    // Solution-guided start: C <= V under the incumbent's orientations is satisfiable by
    // construction, loads the encoding and leaves Z3's saved phases on the incumbent's order.
    enc.solver().add(enc.makespan() <= enc.ctx().int_val(w.value));
    if (!dump_path.empty()) {
      enc.solver().push();
      enc.solver().add(enc.makespan() <= enc.ctx().int_val(target));
      out.dump_status = write_output_file(dump_path, enc.to_smt2());
      out.dumped = out.dump_status.is_ok();
      enc.solver().pop();
    }
    const double wall = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (wall <= 0.01) return out;
    if (Status st = enc.set_limits(static_cast<unsigned>(wall * 1000), share); !st.is_ok()) {
      out.error = st.message();
      return out;
    }
    const InterruptWatcher watch(interrupt, [&enc] { enc.ctx().interrupt(); });
    const uint64_t before = rlimit_count(enc.solver());
    const z3::check_result guided = enc.solver().check(enc.orientation(incumbent_in(inc, w), [](int, int) { return true; }));
    out.used += rlimit_count(enc.solver()) - before;
    ++out.checks;
    if (guided != z3::sat) return out;
    // Descent in probes: C <= best - step as an assumption; UNSAT with step > 1 shrinks the step,
    // UNSAT with step 1 ends the window (locally optimal), SAT keeps the model and tightens.
    int64_t best = w.value;
    int64_t step = std::max<int64_t>(1, (w.value - w.l0) / 8);
    while (out.used < share) {
      step = std::min(step, best - w.l0);
      if (step <= 0) break;
      target = best - step;
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left <= 0.01) break;
      if (Status st = enc.set_limits(static_cast<unsigned>(left * 1000), share - out.used); !st.is_ok()) {
        out.error = st.message();
        return out;
      }
      const uint64_t before = rlimit_count(enc.solver());
      z3::expr_vector goal(enc.ctx());
      goal.push_back(enc.makespan() <= enc.ctx().int_val(target));
      const z3::check_result r = enc.solver().check(goal);
      out.used += rlimit_count(enc.solver()) - before;
      ++out.checks;
      if (r == z3::unsat && step > 1) {
        step = std::max<int64_t>(1, step / 4);
        continue;
      }
      if (r != z3::sat) break;
      Result<std::vector<int64_t>> starts = enc.model_starts();
      if (!starts.ok()) break;
      std::vector<std::vector<int>> order = window_order(w, *starts);
      Result<TimedOrder> t = evaluate_order(inc.dag, splice(inc.t.order, w, order));
      if (!t.ok() || t->makespan >= inc.t.makespan) break;  // not expected: the formula is exact
      if (!out.w_order || t->makespan < out.makespan) {
        out.w_order = std::move(order);
        out.makespan = t->makespan;
      }
      int64_t achieved = 0;
      for (int i = 0; i < w.sub->num_ops(); ++i)
        achieved = std::max(achieved, (*starts)[i] + w.sub->ops[i].dur + w.sub->tail[i]);
      best = std::min(target, achieved);
      enc.solver().add(enc.makespan() <= enc.ctx().int_val(best));
    }
  } catch (const z3::exception& e) {
    out.error = e.msg();
  }
  return out;
}

// Rounds of windows over passes (window.h): the state of one window_search call.
class Search {
 public:
  Search(const OpDag& dag, const WindowOptions& opt) : dag_(dag), opt_(opt) {}

  Status run(const TimedOrder& incumbent) {
    res_.best = incumbent;
    if (static_cast<int>(res_.best.order.size()) != dag_.num_resources()) {
      Result<TimedOrder> full = evaluate_order(dag_, res_.best.order);
      if (!full.ok()) return full.status();
      res_.best = std::move(full).value();
    }
    const int K = std::max(1, opt_.contexts);
    budget_ = rlimit_budget(opt_.rlimit, opt_.time_limit_s, K);
    total_ = budget_;
    max_load_ = opt_.max_load_s;
    window_ops_ = std::max(8, 12 * dag_.num_resources());
    bool any = false;
    bool calibrated = false;
    for (int pass = 0; !out_of_time(); ++pass) {
      if (!calibrated) calibrate_tile();
      calibrated = true;
      Result<bool> improved = run_pass(pass, K);
      if (!improved.ok()) return improved.status();
      any = any || *improved;
      if (*improved || pass % 2 == 0) continue;  // both offsets are tried at each size
      // Nothing improved at this size: larger windows, while four loads of every context fit in
      // a quarter of what is left.
      const double next_share = 2 * max_load_ * 4 * K * static_cast<double>(rlimit_per_second());
      if (next_share > static_cast<double>(budget_) / 4) {
        res_.status = any ? "no window improves further" : "no window improves";
        return Status::ok();
      }
      max_load_ *= 2;
      calibrated = false;
    }
    res_.status = interrupted() ? "stopped: interrupted" : budget_ == 0 ? "budget exhausted" : "time limit";
    return Status::ok();
  }

  WindowResult& result() { return res_; }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

 private:
  bool interrupted() const { return opt_.interrupt && opt_.interrupt->load(); }
  // A window's encoding loads without looking at the clock: no round starts unless a load of the
  // current size fits in what is left.
  bool out_of_time() const {
    return elapsed() >= opt_.time_limit_s - std::max(0.01, max_load_) || budget_ == 0 || interrupted();
  }

  // The window of by_start positions [lo, hi), its upper end pulled in until its encoding loads in
  // max_load_ seconds.
  Result<Window> sized_window(const Incumbent& inc, int lo, int hi) {
    for (;;) {
      Result<Window> w = make_window(inc, lo, hi);
      if (!w.ok() || !w->sub) return w;
      w->load_s = encoding_load_seconds(*w->sub);
      if (hi - lo <= 8 || w->load_s <= max_load_) return w;
      hi = lo + std::max(8, (hi - lo) * 2 / 3);
    }
  }

  // The tile (ops per window) whose encoding, in the middle of the schedule, loads in about
  // max_load_ seconds: encoding sizes grow about quadratically with the ops of a window.
  void calibrate_tile() {
    const Incumbent inc(dag_, res_.best);
    const int n = dag_.num_ops();
    for (int round = 0; round < 4; ++round) {
      const int lo = std::max(0, n / 2 - window_ops_ / 2);
      Result<Window> w = make_window(inc, lo, std::min(n, lo + window_ops_));
      if (!w.ok() || !w->sub) return;
      const double load = std::max(1e-4, encoding_load_seconds(*w->sub));
      const double f = std::clamp(std::sqrt(max_load_ / load), 0.5, 2.0);
      const int next = std::clamp(static_cast<int>(window_ops_ * f), 8, n);
      if (std::abs(next - window_ops_) * 10 < window_ops_) return;
      window_ops_ = next;
    }
  }

  // One pass over the schedule in tiles of window_ops_ ops by start (odd passes shifted by half a
  // tile), taken from both ends inwards: the fill and drain of a pipeline, where its bubbles are,
  // come first. Returns whether it improved.
  Result<bool> run_pass(int pass, int K) {
    const int n = dag_.num_ops();
    std::vector<int> tiles;
    for (int lo = pass % 2 == 1 ? window_ops_ / 2 : 0; lo < n; lo += window_ops_) tiles.push_back(lo);
    std::vector<int> order;
    for (size_t a = 0, b = tiles.size(); a < b; ++a) {
      order.push_back(tiles[a]);
      if (a + 1 < b) order.push_back(tiles[--b]);
    }
    const int tile = window_ops_;
    bool improved = false;
    for (size_t next = 0; next < order.size() && !out_of_time();) {
      const Incumbent inc(dag_, res_.best);
      std::vector<Window> ws;
      while (static_cast<int>(ws.size()) < K && next < order.size()) {
        const int lo = order[next++];
        Result<Window> w = sized_window(inc, lo, std::min(n, lo + tile));
        if (!w.ok()) return w.status();
        if (w->sub) ws.push_back(std::move(w).value());
      }
      if (ws.empty()) continue;
      Result<bool> better = run_round(inc, ws);
      if (!better.ok()) return better.status();
      improved = improved || *better;
    }
    return improved;
  }

  // The windows side by side (one thread and context each), then their orders spliced into the
  // incumbent in window order, each kept when the whole order gets strictly shorter.
  Result<bool> run_round(const Incumbent& inc, std::vector<Window>& ws) {
    const int k_count = static_cast<int>(ws.size());
    std::vector<WindowRun> runs(k_count);
    const auto deadline = t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt_.time_limit_s));
    std::vector<std::string> dumps(k_count);
    std::vector<uint64_t> shares(k_count);
    if (budget_ < static_cast<uint64_t>(k_count)) {
      budget_ = 0;
      return false;
    }
    for (int k = 0; k < k_count; ++k) {
      const uint64_t load = static_cast<uint64_t>(ws[k].load_s * rlimit_per_second());
      shares[k] = std::min(budget_ / k_count, std::max(4 * load, total_ / 64 / k_count));
      if (!opt_.dump_smt2.empty() && dumps_ < opt_.max_dumps) dumps[k] = window_dump_path(opt_.dump_smt2, ++dumps_);
    }
    auto one = [&](int k) {
      runs[k] = run_window(inc, ws[k], opt_.seed + static_cast<unsigned>(res_.windows + k), opt_.memory,
                           opt_.warm_start, shares[k], deadline, dumps[k], opt_.interrupt);
    };
    if (k_count == 1) {
      one(0);
    } else {
      std::vector<std::thread> threads;
      for (int k = 0; k < k_count; ++k) threads.emplace_back(one, k);
      for (auto& t : threads) t.join();
    }
    bool better = false;
    std::vector<std::vector<int>> order = res_.best.order;
    for (int k = 0; k < k_count; ++k) {
      WindowRun& r = runs[k];
      ++res_.windows;
      res_.checks += r.checks;
      res_.rlimit_used += r.used;
      res_.smt2_written += r.dumped;
      if (!r.dump_status.is_ok()) return r.dump_status;  // a dump asked for and not written is an error, as for the whole plan's
      budget_ -= std::min(budget_, r.used);
      if (!r.error.empty()) return Status::error(ErrorCode::kRuntime, fmt::format("Z3 failed on a window: {}", r.error));
      if (!r.w_order) continue;
      Result<TimedOrder> t = evaluate_order(dag_, splice(order, ws[k], *r.w_order));
      if (!t.ok() || t->makespan >= res_.best.makespan) continue;
      res_.best = std::move(t).value();
      order = res_.best.order;
      ++res_.improving_windows;
      better = true;
      if (opt_.progress) opt_.progress(SolveProgress{res_.best.makespan, 0, elapsed(), "window"});
    }
    return better;
  }

  const OpDag& dag_;
  const WindowOptions& opt_;
  const Clock::time_point t0_ = Clock::now();
  uint64_t budget_ = 0, total_ = 0;
  double max_load_ = 0.25;
  int window_ops_ = 64;
  int dumps_ = 0;
  WindowResult res_;
};

}  // namespace
}  // namespace window_impl

std::string window_dump_path(const std::string& dump_smt2, int n) {
  const std::string suffix = ".smt2";
  const bool has = dump_smt2.size() > suffix.size() &&
                   dump_smt2.compare(dump_smt2.size() - suffix.size(), suffix.size(), suffix) == 0;
  return fmt::format("{}.w{}.smt2", has ? dump_smt2.substr(0, dump_smt2.size() - suffix.size()) : dump_smt2, n);
}

std::vector<std::string> window_dump_paths(const std::string& dump_smt2) {
  std::vector<std::string> paths;
  for (int n = 1; n <= kMaxWindowDumps; ++n) paths.push_back(window_dump_path(dump_smt2, n));
  return paths;
}

Result<WindowResult> window_search(const OpDag& dag, const TimedOrder& incumbent, const WindowOptions& options) {
  window_impl::Search search(dag, options);
  Status st = search.run(incumbent);
  search.result().seconds = search.elapsed();
  if (!st.is_ok()) return st;
  return std::move(search.result());
}

}  // namespace ps
