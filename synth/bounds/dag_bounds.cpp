// dag_bounds.cpp — critical path, Jackson's preemptive single-device bound, and the destructive bound
// (constraint propagation and a complete search on trial makespans; see dag_bounds.h).
#include "synth/bounds/dag_bounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <limits>
#include <queue>
#include <vector>

#include "ir/status.h"

namespace ps {

int64_t device_relaxation_bound(const OpDag& dag, int resource) {
  // Preemptive schedule: at every moment run the released op with the longest tail.
  // The bound is max over ops of (completion + tail).
  std::vector<int> ops = dag.resource_ops[resource];
  std::sort(ops.begin(), ops.end(), [&](int a, int b) {
    return dag.head[a] != dag.head[b] ? dag.head[a] < dag.head[b] : a < b;
  });
  struct Item {
    int64_t tail;
    int op;
    bool operator<(const Item& o) const { return tail != o.tail ? tail < o.tail : op > o.op; }
  };
  std::priority_queue<Item> q;
  std::vector<int64_t> left(dag.num_ops(), 0);
  int64_t t = 0, bound = 0;
  size_t next = 0;
  while (next < ops.size() || !q.empty()) {
    if (q.empty()) t = std::max(t, dag.head[ops[next]]);
    while (next < ops.size() && dag.head[ops[next]] <= t) {
      const int op = ops[next++];
      left[op] = dag.ops[op].dur;
      q.push({dag.tail[op], op});
    }
    const Item it = q.top();
    // Run it until it ends or the next release, whichever comes first.
    const int64_t until = next < ops.size() ? dag.head[ops[next]] : t + left[it.op];
    const int64_t run = std::min(left[it.op], until - t);
    t += run;
    left[it.op] -= run;
    if (left[it.op] == 0) {
      q.pop();
      bound = std::max(bound, t + it.tail);
    }
  }
  return bound;
}

DagBound dag_lower_bound(const OpDag& dag) {
  DagBound b;
  b.units = dag.critical_path();
  b.reason = "critical path";
  for (int r = 0; r < dag.num_resources(); ++r) {
    const int64_t x = device_relaxation_bound(dag, r);
    if (x > b.units) {
      b.units = x;
      b.device = r;
      b.reason = fmt::format("{} {} (single-resource relaxation with heads and tails)",
                             r < dag.devices ? "device" : "comm stream of device", r % dag.devices);
    }
  }
  return b;
}

// ---------------------------------------------------------------------------------------------
// The destructive bound.

namespace {

// Window values stay within ±kMaxTime (trial makespans are capped by the DAG's serial length), so
// the Θ-Λ tree's "empty" value kNegInf lies below every real one and sums of durations added to it
// cannot overflow.
constexpr int64_t kMaxTime = int64_t{1} << 60;
constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min() / 2;

using Times = std::vector<int64_t>;

// Vilím's Θ-Λ tree: a balanced binary tree whose leaves are one resource's ops sorted by earliest
// start. Θ ops are "white", Λ ops "gray" (at most one gray op counts in any figure). The root gives
// ECT(Θ) = max over Ω ⊆ Θ of est(Ω) + p(Ω) — a lower bound on when all of Θ can be done — and
// ECT̄ = the largest ECT(Θ ∪ {g}) over gray g, with the gray op responsible for it.
class ThetaLambdaTree {
 public:
  explicit ThetaLambdaTree(uint64_t& work) : work_(work) {}

  void reset(int n) {
    size_ = 1;
    depth_ = 0;
    while (size_ < n) size_ *= 2, ++depth_;
    nodes_.assign(2 * static_cast<size_t>(size_), Node{});
    work_ += 2 * static_cast<uint64_t>(size_);
  }
  void insert(int pos, int64_t est, int64_t p) {
    Node& x = nodes_[size_ + pos];
    x = Node{p, est + p, p, est + p, -1, -1};
    pull(pos);
  }
  void make_gray(int pos, int id) {
    Node& x = nodes_[size_ + pos];
    x = Node{0, kNegInf, x.sum_p, x.ect, id, id};
    pull(pos);
  }
  void remove(int pos) {
    nodes_[size_ + pos] = Node{};
    pull(pos);
  }
  int64_t ect() const { return nodes_[1].ect; }
  int64_t ect_bar() const { return nodes_[1].ect_bar; }
  int responsible() const { return nodes_[1].resp_ect; }

 private:
  struct Node {
    int64_t sum_p = 0, ect = kNegInf;          // Θ only
    int64_t sum_p_bar = 0, ect_bar = kNegInf;  // Θ plus at most one gray op
    int resp_p = -1, resp_ect = -1;            // the gray op behind sum_p_bar / ect_bar (-1: none)
  };
  // Larger value wins; on a tie the candidate with a gray op, so that a root ECT̄ above ECT always
  // names its gray op.
  static void pick(int64_t& v, int& resp, int64_t cv, int cresp) {
    if (cv > v || (cv == v && resp < 0 && cresp >= 0)) {
      v = cv;
      resp = cresp;
    }
  }
  void pull(int pos) {
    work_ += static_cast<uint64_t>(depth_) + 1;
    for (int v = (pos + size_) / 2; v >= 1; v /= 2) {
      const Node& l = nodes_[2 * v];
      const Node& r = nodes_[2 * v + 1];
      Node x;
      x.sum_p = l.sum_p + r.sum_p;
      x.ect = std::max(r.ect, l.ect + r.sum_p);
      x.sum_p_bar = l.sum_p_bar + r.sum_p;
      x.resp_p = l.resp_p;
      pick(x.sum_p_bar, x.resp_p, l.sum_p + r.sum_p_bar, r.resp_p);
      x.ect_bar = r.ect_bar;
      x.resp_ect = r.resp_ect;
      pick(x.ect_bar, x.resp_ect, l.ect + r.sum_p_bar, r.resp_p);
      pick(x.ect_bar, x.resp_ect, l.ect_bar + r.sum_p, l.resp_ect);
      nodes_[v] = x;
    }
  }

  uint64_t& work_;
  int size_ = 1, depth_ = 0;
  std::vector<Node> nodes_;
};

// One resource's ops as local arrays (index 0..k-1): earliest starts, latest completions, durations.
struct Window {
  Times est, lct, p;
  int size() const { return static_cast<int>(p.size()); }
  Window mirrored() const {  // time reversed: t -> -t
    Window m;
    m.p = p;
    m.est.resize(est.size());
    m.lct.resize(lct.size());
    for (size_t i = 0; i < p.size(); ++i) m.est[i] = -lct[i], m.lct[i] = -est[i];
    return m;
  }
};

// A window's ops (local indices) in the four orders the filters walk: by earliest start, latest
// completion, latest start and earliest completion, ascending.
struct Orders {
  std::vector<int> by_est, by_lct, by_lst, by_ect;
  // The orders of the mirrored window: each is another order reversed.
  Orders mirrored() const {
    Orders m;
    m.by_est.assign(by_lct.rbegin(), by_lct.rend());
    m.by_lct.assign(by_est.rbegin(), by_est.rend());
    m.by_lst.assign(by_ect.rbegin(), by_ect.rend());
    m.by_ect.assign(by_lst.rbegin(), by_lst.rend());
    return m;
  }
};

// Sorts idx by (key, index) by insertion: the orders are kept from one call to the next and
// change little, so this is close to linear; the result does not depend on the previous order.
// The first call, and one after a large change, would be quadratic: once the moves pass a few
// times k·log k the rest is left to std::sort (the order is total, so the result is the same).
void resort(std::vector<int>& idx, const Times& key, uint64_t& work) {
  auto less = [&](int a, int b) { return key[a] != key[b] ? key[a] < key[b] : a < b; };
  const size_t k = idx.size();
  const uint64_t full_sort = static_cast<uint64_t>(k) * (std::bit_width(k) + 1);
  uint64_t moves = 0;
  for (size_t x = 1; x < k; ++x) {
    const int v = idx[x];
    size_t y = x;
    while (y > 0 && less(v, idx[y - 1])) idx[y] = idx[y - 1], --y;
    idx[y] = v;
    moves += 1 + (x - y);
    if (moves > 4 * full_sort) {
      std::sort(idx.begin(), idx.end(), less);
      moves += full_sort;
      break;
    }
  }
  work += moves;
}

// A window's Θ-Λ tree addressed by op (local index): an op's leaf is its rank in earliest-start
// order. Starts empty.
class WindowTree {
 public:
  WindowTree(const Window& w, const Orders& o, uint64_t& work)
      : w_(w), pos_(w.size()), in_(w.size(), 0), tree_(work) {
    for (size_t r = 0; r < o.by_est.size(); ++r) pos_[o.by_est[r]] = static_cast<int>(r);
    tree_.reset(w.size());
  }
  void insert(int i) {
    tree_.insert(pos_[i], w_.est[i], w_.p[i]);
    in_[i] = 1;
  }
  void remove(int i) {
    tree_.remove(pos_[i]);
    in_[i] = 0;
  }
  void make_gray(int i) { tree_.make_gray(pos_[i], i); }
  int64_t ect() const { return tree_.ect(); }
  int64_t ect_bar() const { return tree_.ect_bar(); }
  int responsible() const { return tree_.responsible(); }
  // ECT of Θ without op i (taken out and put back when it is in).
  int64_t ect_without(int i) {
    if (!in_[i]) return tree_.ect();
    tree_.remove(pos_[i]);
    const int64_t ect = tree_.ect();
    tree_.insert(pos_[i], w_.est[i], w_.p[i]);
    return ect;
  }
  // The sweep detectable precedences and not-last share: inserts the ops of by_lst from position q
  // on while their latest start is below t; returns the new q (how many of by_lst are in).
  int insert_starting_before(int64_t t, const std::vector<int>& by_lst, int q) {
    while (q < w_.size() && t > w_.lct[by_lst[q]] - w_.p[by_lst[q]]) insert(by_lst[q++]);
    return q;
  }

 private:
  const Window& w_;
  std::vector<int> pos_;  // op -> leaf
  std::vector<char> in_;  // op inserted (white or gray)
  ThetaLambdaTree tree_;
};

// Overload check and edge finding (Vilím 2004). Θ = the ops with lct <= lct_j for decreasing j:
// ECT(Θ) > lct(Θ) is an overload (no schedule); an op g outside Θ with ECT(Θ ∪ {g}) > lct(Θ) must
// run after all of Θ (were some op of Θ last, all of Θ ∪ {g} would be done by lct(Θ)), so
// est_g >= ECT(Θ). Raises new_est; false on overload.
bool edge_finding(const Window& w, const Orders& o, Times& new_est, uint64_t& work) {
  const int k = w.size();
  WindowTree tree(w, o, work);
  for (int i = 0; i < k; ++i) tree.insert(i);
  for (int q = k - 1; q >= 0; --q) {  // decreasing lct
    const int j = o.by_lct[q];
    if (tree.ect() > w.lct[j]) return false;
    if (q == 0) break;
    tree.make_gray(j);
    const int64_t lct_theta = w.lct[o.by_lct[q - 1]];
    while (tree.ect_bar() > lct_theta) {
      const int g = tree.responsible();
      if (g < 0) break;  // cannot happen: ECT̄ > lct(Θ) >= ECT(Θ) needs a gray op
      new_est[g] = std::max(new_est[g], tree.ect());
      tree.remove(g);
    }
  }
  return true;
}

// Detectable precedences (Vilím): j precedes i whenever i cannot end before j's latest start
// (est_i + p_i > lct_j − p_j), so i starts after all such j end: est_i >= ECT({those j}).
void detectable_precedences(const Window& w, const Orders& o, Times& new_est, uint64_t& work) {
  WindowTree tree(w, o, work);
  int q = 0;
  for (int i : o.by_ect) {
    q = tree.insert_starting_before(w.est[i] + w.p[i], o.by_lst, q);
    new_est[i] = std::max(new_est[i], tree.ect_without(i));
  }
}

// Not-last (Vilím): with Ω = the other ops whose latest start is before lct_i, if ECT(Ω) > lst_i
// then i cannot come after all of Ω, so it ends by the latest start of Ω's last-starting op.
void not_last(const Window& w, const Orders& o, Times& new_lct, uint64_t& work) {
  WindowTree tree(w, o, work);
  int q = 0;
  for (int i : o.by_lct) {
    q = tree.insert_starting_before(w.lct[i], o.by_lst, q);
    // The last-starting op of Ω = Θ \ {i}.
    int last = q - 1;
    if (last >= 0 && o.by_lst[last] == i) --last;
    if (last < 0) continue;
    if (tree.ect_without(i) > w.lct[i] - w.p[i]) {
      const int j = o.by_lst[last];
      new_lct[i] = std::min(new_lct[i], w.lct[j] - w.p[j]);
    }
  }
}

// Narrows op windows to a common fixpoint of the edge rule and the resource rules. It owns the
// windows: est[i] (earliest start) and lct[i] (latest completion). Besides the DAG's edges it takes
// precedences decided by a search, and records on a trail each window's first change after a mark,
// so that a search can undo back to it (a window that propagation moves many times is recorded once:
// the trail holds at most the ops times the marks under way).
class Propagator {
 public:
  enum class Outcome { kFixpoint, kRefuted, kOutOfWork };

  Times est, lct;

  Propagator(const OpDag& dag, uint64_t& work) : dag_(dag), work_(work) {
    const int n = dag.num_ops();
    res_ops_.resize(dag.num_resources());
    orders_.resize(dag.num_resources());
    for (int r = 0; r < dag.num_resources(); ++r) {
      for (int op : dag.resource_ops[r])
        if (dag.ops[op].dur > 0) res_ops_[r].push_back(op);  // zero-length ops never conflict
      Orders& o = orders_[r];
      for (std::vector<int>* v : {&o.by_est, &o.by_lct, &o.by_lst, &o.by_ect}) {
        v->resize(res_ops_[r].size());
        for (size_t i = 0; i < v->size(); ++i) (*v)[i] = static_cast<int>(i);
      }
    }
    extra_succ_.resize(n);
    extra_pred_.resize(n);
    in_fwd_.assign(n, 0);
    in_bwd_.assign(n, 0);
    dirty_.assign(dag.num_resources(), 0);
    saved_in_.assign(n, 0);
    fwd_pops_.assign(n, {});
    bwd_pops_.assign(n, {});
  }

  const std::vector<int>& resource_ops(int r) const { return res_ops_[r]; }
  void set_cap(uint64_t cap) { cap_ = cap; }
  void set_interrupt(const std::atomic<bool>* flag) { interrupt_ = flag; }
  // The work cap, or an interrupt: either ends a trial as out of work (the bound stays valid).
  bool out_of_work() const { return work_ > cap_ || (interrupt_ && interrupt_->load(std::memory_order_relaxed)); }

  // The windows of a trial makespan: [head, makespan − tail], then the fixpoint. Clears the trail
  // and the decided precedences.
  Outcome start(int64_t makespan) {
    PS_ASSERT(makespan <= kMaxTime, "trial makespan out of range");
    const int n = dag_.num_ops();
    est = dag_.head;
    lct.resize(n);
    for (int i = 0; i < n; ++i) lct[i] = makespan - dag_.tail[i];
    work_ += 2 * static_cast<uint64_t>(n);
    trail_.clear();
    ++epoch_;
    while (!decided_.empty()) pop_precedence();
    for (int i = 0; i < n; ++i)
      if (est[i] + dag_.ops[i].dur > lct[i]) return Outcome::kRefuted;
    for (int u : dag_.topo) enqueue_fwd(u);
    for (auto it = dag_.topo.rbegin(); it != dag_.topo.rend(); ++it) enqueue_bwd(*it);
    std::fill(dirty_.begin(), dirty_.end(), 1);
    return fixpoint();
  }

  // A decided precedence (`from` ends before `to` starts) and the fixpoint after it.
  Outcome push_precedence(int from, int to) {
    extra_succ_[from].push_back(to);
    extra_pred_[to].push_back(from);
    decided_.emplace_back(from, to);
    enqueue_fwd(from);
    enqueue_bwd(to);
    return fixpoint();
  }
  // Whether a decided precedence orders i and j directly (each op has few).
  bool decided(int i, int j) const {
    for (int v : extra_succ_[i])
      if (v == j) return true;
    for (int v : extra_succ_[j])
      if (v == i) return true;
    return false;
  }
  // Removes the last decided precedence (the windows are restored with undo()).
  void pop_precedence() {
    const auto [from, to] = decided_.back();
    decided_.pop_back();
    extra_succ_[from].pop_back();
    extra_pred_[to].pop_back();
  }

  // A point to undo() back to. It opens an epoch: the first change of an op's window after it is
  // put on the trail, the later ones in the epoch are not (undo restores the first's old window).
  size_t mark() {
    ++epoch_;
    return trail_.size();
  }
  void undo(size_t mark) {
    while (trail_.size() > mark) {
      const Change& c = trail_.back();
      est[c.op] = c.est;
      lct[c.op] = c.lct;
      trail_.pop_back();
    }
    ++epoch_;  // the windows are as at the mark again: their next changes must be recorded
    work_ += 1;
  }
  // The most window changes the trail has held at once (at most the ops times the marks under way).
  size_t trail_peak() const { return trail_peak_; }

 private:
  struct Change {
    int op;
    int64_t est, lct;  // before the change
  };

  void enqueue_fwd(int op) {
    if (!in_fwd_[op]) in_fwd_[op] = 1, fwd_.push_back(op);
  }
  void enqueue_bwd(int op) {
    if (!in_bwd_[op]) in_bwd_[op] = 1, bwd_.push_back(op);
  }
  void mark_resources(int op) {
    int r[2] = {0, 0};
    const int k = dag_.resources_of(op, r);
    for (int j = 0; j < k; ++j) dirty_[r[j]] = 1;
  }
  // Puts op's window on the trail unless it is there already for this epoch.
  void save(int op) {
    if (saved_in_[op] == epoch_) return;
    saved_in_[op] = epoch_;
    trail_.push_back({op, est[op], lct[op]});
    trail_peak_ = std::max(trail_peak_, trail_.size());
  }
  // est[v] >= t (lct[u] <= t); false when the window empties.
  bool raise(int v, int64_t t) {
    if (t <= est[v]) return true;
    save(v);
    est[v] = t;
    mark_resources(v);
    enqueue_fwd(v);
    return t + dag_.ops[v].dur <= lct[v];
  }
  bool lower(int u, int64_t t) {
    if (t >= lct[u]) return true;
    save(u);
    lct[u] = t;
    mark_resources(u);
    enqueue_bwd(u);
    return est[u] + dag_.ops[u].dur <= t;
  }

  Outcome fixpoint() {
    const Outcome o = fixpoint_inner();
    for (size_t x = fwd_head_; x < fwd_.size(); ++x) in_fwd_[fwd_[x]] = 0;
    for (size_t x = bwd_head_; x < bwd_.size(); ++x) in_bwd_[bwd_[x]] = 0;
    fwd_.clear();
    bwd_.clear();
    fwd_head_ = bwd_head_ = 0;
    std::fill(dirty_.begin(), dirty_.end(), 0);
    return o;
  }
  Outcome fixpoint_inner() {
    const int R = dag_.num_resources();
    for (;;) {
      if (const Outcome o = propagate_edges(); o != Outcome::kFixpoint) return o;
      if (out_of_work()) return Outcome::kOutOfWork;
      bool any = false;
      for (int r = 0; r < R; ++r) {
        if (!dirty_[r]) continue;
        dirty_[r] = 0;
        any = true;
        if (!filter_resource(r)) return Outcome::kRefuted;
        if (out_of_work()) return Outcome::kOutOfWork;  // one resource's filter can be long (k log k)
      }
      if (!any && fwd_head_ == fwd_.size() && bwd_head_ == bwd_.size()) return Outcome::kFixpoint;
    }
  }

  // Earliest starts forwards and latest completions backwards along every edge and decided
  // precedence, from the queued ops (FIFO: a fresh start queues in topological order, so the DAG
  // alone takes one sweep each way). kFixpoint: no edge moves a window any more.
  //
  // Decided precedences can close a cycle with the DAG's paths (the search orders pairs that the DAG
  // leaves open, not their transitive effects). A cycle of positive length has no schedule, and here
  // it would raise its windows by its length per lap until one empties: with 1 us ops in windows of
  // seconds, millions of laps in one call. FIFO order pops an op at most once per pass, and without
  // such a cycle a pass past the (n - 1)-th moves nothing (a longest path has at most n - 1 edges):
  // an op popped more than n + 1 times in one call proves the cycle, refuted at once. The work cap
  // and the interrupt are polled inside the call too.
  Outcome propagate_edges() {
    ++edge_call_;
    const uint32_t max_pops = static_cast<uint32_t>(dag_.num_ops()) + 1;
    uint32_t since_poll = 0;
    while (fwd_head_ < fwd_.size() || bwd_head_ < bwd_.size()) {
      while (fwd_head_ < fwd_.size()) {
        const int u = fwd_[fwd_head_++];
        in_fwd_[u] = 0;
        if (count_pop(fwd_pops_[u]) > max_pops) return Outcome::kRefuted;
        if (++since_poll == kPollEvery && (since_poll = 0, out_of_work())) return Outcome::kOutOfWork;
        const int64_t end = est[u] + dag_.ops[u].dur;
        work_ += 1 + dag_.succ[u].size() + extra_succ_[u].size();
        for (const DagEdge& e : dag_.succ[u])
          if (!raise(e.op, end + e.delay)) return Outcome::kRefuted;
        for (int v : extra_succ_[u])
          if (!raise(v, end)) return Outcome::kRefuted;
      }
      while (bwd_head_ < bwd_.size()) {
        const int v = bwd_[bwd_head_++];
        in_bwd_[v] = 0;
        if (count_pop(bwd_pops_[v]) > max_pops) return Outcome::kRefuted;
        if (++since_poll == kPollEvery && (since_poll = 0, out_of_work())) return Outcome::kOutOfWork;
        const int64_t start = lct[v] - dag_.ops[v].dur;
        work_ += 1 + dag_.pred[v].size() + extra_pred_[v].size();
        for (const DagEdge& e : dag_.pred[v])
          if (!lower(e.op, start - e.delay)) return Outcome::kRefuted;
        for (int u : extra_pred_[v])
          if (!lower(u, start)) return Outcome::kRefuted;
      }
      if (fwd_head_ == fwd_.size()) fwd_.clear(), fwd_head_ = 0;
      if (bwd_head_ == bwd_.size()) bwd_.clear(), bwd_head_ = 0;
    }
    return Outcome::kFixpoint;
  }

  // An op's pops in the current propagate_edges() call (the call it last counted in, and how many).
  struct Pops {
    uint64_t call = 0;
    uint32_t count = 0;
  };
  uint32_t count_pop(Pops& p) {
    if (p.call != edge_call_) p = {edge_call_, 0};
    return ++p.count;
  }
  static constexpr uint32_t kPollEvery = 1024;  // pops between two polls of the cap and the interrupt

  // The disjunctive rules on one resource, both time directions, from one snapshot of its windows.
  bool filter_resource(int r) {
    const std::vector<int>& ops = res_ops_[r];
    const int k = static_cast<int>(ops.size());
    if (k < 2) return true;
    Window w;
    w.est.resize(k);
    w.lct.resize(k);
    w.p.resize(k);
    for (int i = 0; i < k; ++i) {
      w.est[i] = est[ops[i]];
      w.lct[i] = lct[ops[i]];
      w.p[i] = dag_.ops[ops[i]].dur;
    }
    Orders& o = orders_[r];
    Times key(k);
    resort(o.by_est, w.est, work_);
    resort(o.by_lct, w.lct, work_);
    for (int i = 0; i < k; ++i) key[i] = w.lct[i] - w.p[i];
    resort(o.by_lst, key, work_);
    for (int i = 0; i < k; ++i) key[i] = w.est[i] + w.p[i];
    resort(o.by_ect, key, work_);
    const Window m = w.mirrored();
    const Orders mo = o.mirrored();
    Times ne = w.est, nl = w.lct, me = m.est, ml = m.lct;
    if (!edge_finding(w, o, ne, work_) || !edge_finding(m, mo, me, work_)) return false;
    detectable_precedences(w, o, ne, work_);
    detectable_precedences(m, mo, me, work_);
    not_last(w, o, nl, work_);
    not_last(m, mo, ml, work_);  // not-first, seen backwards
    for (int i = 0; i < k; ++i) {
      if (!raise(ops[i], std::max(ne[i], -ml[i]))) return false;
      if (!lower(ops[i], std::min(nl[i], -me[i]))) return false;
    }
    return true;
  }

  const OpDag& dag_;
  uint64_t& work_;
  uint64_t cap_ = 0;
  const std::atomic<bool>* interrupt_ = nullptr;
  std::vector<std::vector<int>> res_ops_;
  std::vector<Orders> orders_;  // per resource, kept between calls (see resort)
  std::vector<std::vector<int>> extra_succ_, extra_pred_;
  std::vector<std::pair<int, int>> decided_;
  // Each op's first window change after the latest mark(), undo() or start() (an epoch; the
  // propagation of one trial or one search decision can move a window many times).
  std::vector<Change> trail_;
  std::vector<uint64_t> saved_in_;  // per op: the epoch in which its window was last put on the trail
  std::vector<Pops> fwd_pops_, bwd_pops_;  // per op, the pops of propagate_edges() (cycle detection)
  uint64_t edge_call_ = 0;
  uint64_t epoch_ = 1;
  size_t trail_peak_ = 0;
  std::vector<int> fwd_, bwd_;
  size_t fwd_head_ = 0, bwd_head_ = 0;
  std::vector<char> in_fwd_, in_bwd_, dirty_;
};

using Outcome = Propagator::Outcome;

// A complete depth-first search for a schedule inside a trial makespan's windows: take two ops of
// one resource whose order is still open, and try each order (every schedule takes one), with
// propagation after each decision. When every branch is refuted, no schedule has that makespan.
// A leaf where every pair is ordered is a schedule: its earliest starts.
class PairSearch {
 public:
  PairSearch(const OpDag& dag, const DeviceReach& reach, Propagator& prop, uint64_t& work)
      : dag_(dag), reach_(reach), prop_(prop), work_(work) {}

  int64_t nodes = 0;
  Times found;  // start times of the schedule found (kFixpoint)

  // From a propagation fixpoint. kRefuted: no schedule; kFixpoint: a schedule (in `found`).
  Outcome run() {
    std::vector<Frame> stack;
    for (;;) {
      ++nodes;
      int a = -1, b = -1;
      if (!pick(a, b)) {
        found = prop_.est;
        unwind(stack);
        return Outcome::kFixpoint;
      }
      stack.push_back({a, b, 0, prop_.mark()});
      Outcome o = decide(stack.back());
      // Backtrack while the current branch is refuted.
      while (o == Outcome::kRefuted) {
        Frame& f = stack.back();
        retract(f);
        if (f.branch == 0) {
          f.branch = 1;
          o = decide(f);
          continue;
        }
        stack.pop_back();
        if (stack.empty()) return Outcome::kRefuted;
      }
      if (o == Outcome::kOutOfWork) {
        retract(stack.back());
        stack.pop_back();
        unwind(stack);
        return o;
      }
    }
  }

 private:
  // One decision on the stack: `first` before `second` (branch 0), then the reverse (branch 1).
  struct Frame {
    int first, second;
    int branch;
    size_t mark;  // the propagator's trail before the decision
  };

  Outcome decide(const Frame& f) {
    const int from = f.branch == 0 ? f.first : f.second, to = f.branch == 0 ? f.second : f.first;
    return prop_.push_precedence(from, to);
  }
  void retract(const Frame& f) {
    prop_.pop_precedence();
    prop_.undo(f.mark);
  }
  void unwind(std::vector<Frame>& stack) {
    while (!stack.empty()) {
      retract(stack.back());
      stack.pop_back();
    }
  }

  // Branching: compute ops first, then transfers, then W (a W only fills idle time, so its order
  // rarely decides anything). Within a class, the open pair whose looser order has the least slack:
  // both orders are tight, so both branches propagate far (refuting 223 ms for P = 8, M = 16 with
  // a cap takes 171 nodes this way, 7741 when taking the tightest order first).
  // The looser order is tried first. False when every pair is ordered.
  bool pick(int& a, int& b) {
    const Times& est = prop_.est;
    const Times& lct = prop_.lct;
    int best_cls = 3;
    int64_t best_hi = 0, best_lo = 0;
    for (int r = 0; r < dag_.num_resources(); ++r) {
      const std::vector<int>& ops = prop_.resource_ops(r);
      work_ += ops.size() * ops.size() / 4 + 1;
      for (size_t x = 0; x < ops.size(); ++x) {
        const int i = ops[x];
        const int ci = cls(i);
        if (ci > best_cls) continue;
        const int64_t ect_i = est[i] + dag_.ops[i].dur, lst_i = lct[i] - dag_.ops[i].dur;
        for (size_t y = x + 1; y < ops.size(); ++y) {
          const int j = ops[y];
          const int c = std::max(ci, cls(j));
          if (c > best_cls) continue;
          const int64_t s_ij = lct[j] - dag_.ops[j].dur - ect_i;  // slack of i before j
          if (s_ij < 0) continue;                                  // j before i is forced
          const int64_t s_ji = lst_i - est[j] - dag_.ops[j].dur;
          if (s_ji < 0) continue;
          if (reach_.reaches(i, j) || reach_.reaches(j, i) || prop_.decided(i, j)) continue;
          const int64_t hi = std::max(s_ij, s_ji), lo = std::min(s_ij, s_ji);
          if (c < best_cls || hi < best_hi || (hi == best_hi && lo < best_lo)) {
            best_cls = c;
            best_hi = hi;
            best_lo = lo;
            a = s_ij >= s_ji ? i : j;
            b = s_ij >= s_ji ? j : i;
          }
        }
      }
    }
    return a >= 0;
  }

  int cls(int op) const {
    return dag_.ops[op].type == OpType::W ? 2 : dag_.ops[op].is_transfer() ? 1 : 0;
  }

  const OpDag& dag_;
  const DeviceReach& reach_;
  Propagator& prop_;
  uint64_t& work_;
};

// The per-resource order of a schedule given by start times, timed. Ties (zero-length ops) go in
// topological order, which the edges agree with.
std::optional<TimedOrder> order_of(const OpDag& dag, const Times& start) {
  std::vector<int> rank(dag.num_ops());
  for (size_t x = 0; x < dag.topo.size(); ++x) rank[dag.topo[x]] = static_cast<int>(x);
  std::vector<std::vector<int>> order(dag.num_resources());
  for (int r = 0; r < dag.num_resources(); ++r) {
    order[r] = dag.resource_ops[r];
    std::sort(order[r].begin(), order[r].end(), [&](int a, int b) {
      return start[a] != start[b] ? start[a] < start[b] : rank[a] < rank[b];
    });
  }
  Result<TimedOrder> t = evaluate_order(dag, std::move(order));
  if (!t.ok()) return std::nullopt;  // e.g. over a cap the DAG's memory edges do not imply
  return std::move(t).value();
}

}  // namespace

uint64_t bound_steps_per_second() { return 200'000'000; }

DestructiveBound destructive_lower_bound(const OpDag& dag, const DestructiveOptions& opt) {
  DestructiveBound out;
  out.bound = dag_lower_bound(dag);
  if (opt.start > out.bound.units) {
    out.bound.units = opt.start;
    out.bound.reason = "given";
    out.bound.device = -1;
  }
  // Running the ops one at a time in topological order takes at most their durations plus every
  // edge's delay: no valid rule refutes a makespan at or above that (the DAG has such a schedule).
  int64_t serial = 1;
  for (int i = 0; i < dag.num_ops(); ++i) {
    serial += dag.ops[i].dur;
    for (const DagEdge& e : dag.succ[i]) serial += e.delay;
  }
  const int64_t upper = std::min({opt.upper, serial, kMaxTime});
  if (out.bound.units >= upper) {
    out.bound.units = std::max<int64_t>(std::min(out.bound.units, opt.upper), 0);
    return out;
  }
  uint64_t& work = out.work;
  Propagator prop(dag, work);
  int64_t refuted = out.bound.units - 1;  // the largest makespan proven impossible
  int64_t open = upper;               // the smallest one not refuted (a schedule, or open)
  const char* how = nullptr;

  // 1. Propagation alone: doubling steps from the starting bound, then bisection.
  prop.set_cap(opt.work_cap);
  prop.set_interrupt(opt.interrupt);
  auto propagated = [&](int64_t c) {
    ++out.trials;
    return prop.start(c);
  };
  for (int64_t step = 1, c = refuted + 1; c < open && !out.capped;) {
    const Outcome o = propagated(c);
    if (o == Outcome::kOutOfWork) out.capped = true;
    if (o == Outcome::kFixpoint) open = c;
    if (o != Outcome::kRefuted) break;
    refuted = c;
    how = "propagation";
    c = std::min(open - 1, c + step);
    step *= 2;
    if (c <= refuted) break;
  }
  while (!out.capped && open - refuted > 1) {
    const int64_t mid = refuted + (open - refuted) / 2;
    const Outcome o = propagated(mid);
    if (o == Outcome::kOutOfWork) out.capped = true;
    if (o == Outcome::kFixpoint) open = mid;
    if (o == Outcome::kRefuted) refuted = mid, how = "propagation";
  }

  // 2. The search: bisection between the bound and the best schedule (on P = 8, M = 16 with a cap,
  // half the steps of going up from the bound, which spends most on refutations close to the
  // optimum that the bisection skips). Each trial gets at most half of what is left (the last one,
  // which closes the gap either way, all of it), and the first trial that runs out ends the search:
  // where the bound is already tight every trial must find an order at or near the optimum, the
  // hard part, and this wastes at most that half.
  int64_t hi = upper;  // trials stay below this
  if (opt.search_work > 0 && refuted + 1 < hi && DeviceReach::affordable(dag)) {
    DeviceReach reach(dag);
    PairSearch search(dag, reach, prop, work);
    const uint64_t limit = work + opt.search_work;
    while (refuted + 1 < hi && work < limit) {
      const int64_t c = refuted + 1 + (hi - refuted - 1) / 2;
      // The last trial between the two (c = hi - 1) decides the gap: it may use all that is left.
      prop.set_cap(c == hi - 1 ? limit : work + (limit - work) / 2);
      ++out.trials;
      Outcome o = prop.start(c);
      if (o == Outcome::kFixpoint) o = search.run();
      if (o == Outcome::kRefuted) {
        refuted = c;
        how = "search";
        continue;
      }
      if (o == Outcome::kOutOfWork) {
        out.capped = true;
        break;
      }
      // A schedule of makespan <= c: the bound cannot pass it. Keep it when it is a real one.
      hi = c;
      std::optional<TimedOrder> t = order_of(dag, search.found);
      if (t && t->makespan <= c && (!out.order || t->makespan < out.order->makespan)) {
        hi = std::min(hi, t->makespan);
        out.order = std::move(t);
      }
    }
    out.nodes = search.nodes;
  }
  out.trail_peak = prop.trail_peak();
  if (how) {
    out.bound.units = refuted + 1;
    out.bound.device = -1;
    out.bound.reason = fmt::format("destructive: a makespan of {} is refuted by {}", refuted, how);
  }
  return out;
}

bool propagate_windows(const OpDag& dag, int64_t makespan, std::vector<int64_t>& est,
                       std::vector<int64_t>& lct, bool* refuted, uint64_t work_cap, uint64_t* work_used) {
  uint64_t work = 0;
  Propagator prop(dag, work);
  prop.set_cap(work_cap);
  const Outcome o = prop.start(makespan);
  est = prop.est;
  lct = prop.lct;
  if (refuted) *refuted = o == Outcome::kRefuted;
  if (work_used) *work_used = work;
  return o == Outcome::kFixpoint;
}

}  // namespace ps
