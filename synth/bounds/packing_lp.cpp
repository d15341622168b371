// packing_lp.cpp — see packing_lp.h.
#include "synth/bounds/packing_lp.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <utility>

namespace ps {

namespace {

constexpr double kSlack = 1e-9;        // relative to C: room given to every fit, and sizes below it count as 0
constexpr double kProofMargin = 1e-9;  // Σ y⁺ / v must exceed devices by this much, relative
constexpr double kEnter = 1e-9;        // a column enters when its reduced cost is below −kEnter
constexpr int kMaxItems = 160;         // the basis inverse is items × items and refactored now and then
constexpr int kBoundDims = 4;          // dimensions the knapsack's fractional bounds look at
constexpr int kRefactorEvery = 64;     // pivots between two refactorizations of the basis inverse
constexpr size_t kMaxPool = 4096;      // configurations remembered across capacities
constexpr int64_t kProofSlice = 4'000'000;  // the budget one try of the weights' own proof may take

enum class Verdict { kRefuted, kFits, kUndecided };

// The items at one capacity C: sizes in the dimensions some item loads, and each dimension's room.
struct Instance {
  int n = 0, dims = 0;
  std::vector<double> size;  // n × dims
  std::vector<double> room;  // C − offset_k, plus the slack
  bool fits(const std::vector<int>& set) const {
    for (int k = 0; k < dims; ++k) {
      double load = 0;
      for (int i : set) load += size[static_cast<size_t>(i) * dims + k];
      if (load > room[k]) return false;
    }
    return true;
  }
};

// The heaviest set under the weights y (items with y_i > 0) that fits one bin, searched only for sets
// heavier than `bar`: depth first over the items by decreasing weight, each taken (where it fits) then
// left, a node pruned when its weight plus what the undecided items can add is at most the best so
// far (`bar` at first). What they can add is bounded by the weight of the heaviest `count` of them,
// where no dimension has room for more than `count` of the smallest items, and, for each of a few
// tight dimensions, by the fractional knapsack of that dimension alone (items by weight per size): a
// set that fits every dimension fits each one, so both are valid.
class Knapsack {
 public:
  Knapsack(const Instance& in, const std::vector<double>& y, double bar, int64_t& budget)
      : in_(in), budget_(budget), best_(bar), load_(in.dims, 0.0) {
    for (int i = 0; i < in.n; ++i)
      if (y[i] > 0) cand_.push_back(i);
    std::stable_sort(cand_.begin(), cand_.end(), [&](int a, int b) { return y[a] > y[b]; });
    const int m = static_cast<int>(cand_.size());
    w_.resize(m);
    for (int p = 0; p < m; ++p) w_[p] = y[cand_[p]];
    suffix_.assign(m + 1, 0.0);
    for (int p = m - 1; p >= 0; --p) suffix_[p] = suffix_[p + 1] + w_[p];
    // The tight dimensions: where the candidates together overfill the room most.
    std::vector<std::pair<double, int>> tight;
    for (int k = 0; k < in.dims; ++k) {
      double total = 0;
      for (int i : cand_) total += in.size[static_cast<size_t>(i) * in.dims + k];
      if (total > in.room[k]) tight.emplace_back(in.room[k] / total, k);
    }
    std::stable_sort(tight.begin(), tight.end());
    for (size_t t = 0; t < tight.size() && t < static_cast<size_t>(kBoundDims); ++t) {
      const int k = tight[t].second;
      std::vector<int> order(m);
      std::iota(order.begin(), order.end(), 0);
      auto ratio = [&](int p) {
        const double s = in.size[static_cast<size_t>(cand_[p]) * in.dims + k];
        return s > 0 ? w_[p] / s : std::numeric_limits<double>::infinity();
      };
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ratio(a) > ratio(b); });
      bound_dims_.push_back(k);
      bound_order_.push_back(std::move(order));
    }
    // Per dimension, the candidates' sizes in increasing order, summed: how many items at most still
    // fit a room (the smallest ones, decided or not: an over-count, so a valid bound).
    small_sums_.assign(static_cast<size_t>(in.dims) * (m + 1), 0.0);
    std::vector<double> sizes(m);
    for (int k = 0; k < in.dims; ++k) {
      for (int p = 0; p < m; ++p) sizes[p] = in.size[static_cast<size_t>(cand_[p]) * in.dims + k];
      std::sort(sizes.begin(), sizes.end());
      double* sums = &small_sums_[static_cast<size_t>(k) * (m + 1)];
      for (int p = 0; p < m; ++p) sums[p + 1] = sums[p] + sizes[p];
    }
    cost_ = 1 + static_cast<int64_t>((bound_dims_.size() + 1) * static_cast<size_t>(m) + in.dims * 6) / 16;
  }

  // The set found (empty: none heavier than the bar) and whether the search ended within the budget.
  bool run() {
    dfs(0, 0.0);
    return !out_of_budget_;
  }
  const std::vector<int>& best_set() const { return best_set_; }
  double best_weight() const { return best_; }

 private:
  double upper(int p, double value) const {
    // At most `count` more items fit (the fewest any dimension allows); the heaviest undecided ones
    // are the next `count` in the order.
    const int m = static_cast<int>(cand_.size());
    int count = m - p;
    for (int k = 0; k < in_.dims && count > 0; ++k) {
      const double* sums = &small_sums_[static_cast<size_t>(k) * (m + 1)];
      const double rem = in_.room[k] - load_[k];
      const int fit = static_cast<int>(std::upper_bound(sums, sums + m + 1, rem) - sums) - 1;
      count = std::min(count, std::max(fit, 0));
    }
    double ub = value + suffix_[p] - suffix_[p + count];
    if (ub <= best_) return ub;
    for (size_t b = 0; b < bound_dims_.size(); ++b) {
      const int k = bound_dims_[b];
      double rem = in_.room[k] - load_[k], add = 0;
      for (int q : bound_order_[b]) {
        if (q < p) continue;
        const double s = in_.size[static_cast<size_t>(cand_[q]) * in_.dims + k];
        if (s <= rem) {
          add += w_[q];
          rem -= s;
        } else {
          add += w_[q] * rem / s;
          break;
        }
      }
      ub = std::min(ub, value + add);
    }
    return ub;
  }

  void dfs(int p, double value) {
    if (out_of_budget_) return;
    budget_ -= cost_;
    if (budget_ < 0) {
      out_of_budget_ = true;
      return;
    }
    if (p == static_cast<int>(cand_.size()) || upper(p, value) <= best_) return;
    const int i = cand_[p];
    const double* s = &in_.size[static_cast<size_t>(i) * in_.dims];
    bool fits = true;
    for (int k = 0; k < in_.dims && fits; ++k) fits = load_[k] + s[k] <= in_.room[k];
    if (fits) {
      for (int k = 0; k < in_.dims; ++k) load_[k] += s[k];
      taken_.push_back(i);
      if (value + w_[p] > best_) {
        best_ = value + w_[p];
        best_set_ = taken_;
      }
      dfs(p + 1, value + w_[p]);
      taken_.pop_back();
      for (int k = 0; k < in_.dims; ++k) load_[k] -= s[k];
    }
    dfs(p + 1, value);
  }

  const Instance& in_;
  int64_t& budget_;
  double best_;
  std::vector<double> load_;
  std::vector<int> cand_, taken_, best_set_, bound_dims_;
  std::vector<double> w_, suffix_, small_sums_;
  std::vector<std::vector<int>> bound_order_;
  int64_t cost_ = 1;
  bool out_of_budget_ = false;
};

// Revised simplex for: min Σ_p x_p subject to Σ_{p ∋ i} x_p ≥ 1 for every item i, x ≥ 0, over the
// configurations p (columns) and the surplus columns −e_i. The basis starts at the singletons (x = 1,
// feasible); its inverse is dense and refactored every kRefactorEvery pivots.
class CoverLp {
 public:
  explicit CoverLp(int n) : n_(n), binv_(static_cast<size_t>(n) * n, 0.0), xb_(n, 1.0), cols_(n), surplus_(n, -1) {
    singletons();
  }
  // y_j = Σ_i c_B[i] · Binv[i][j]: a configuration costs 1, a surplus column 0.
  std::vector<double> duals() const {
    std::vector<double> y(n_, 0.0);
    for (int i = 0; i < n_; ++i) {
      if (surplus_[i] >= 0) continue;
      const double* row = &binv_[static_cast<size_t>(i) * n_];
      for (int j = 0; j < n_; ++j) y[j] += row[j];
    }
    return y;
  }
  double objective() const {
    double z = 0;
    for (int i = 0; i < n_; ++i)
      if (surplus_[i] < 0) z += xb_[i];
    return z;
  }
  // Enters the configuration `set` (surplus < 0) or the surplus column of item `surplus`; false when
  // the ratio test finds no row (it cannot happen in exact arithmetic: the LP is bounded below).
  bool enter(const std::vector<int>& set, int surplus) {
    std::vector<double> d(n_, 0.0);
    for (int r = 0; r < n_; ++r) {
      const double* row = &binv_[static_cast<size_t>(r) * n_];
      if (surplus >= 0) {
        d[r] = -row[surplus];
      } else {
        for (int i : set) d[r] += row[i];
      }
    }
    int leave = -1;
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < n_; ++r) {
      if (d[r] <= 1e-11) continue;
      const double t = std::max(0.0, xb_[r]) / d[r];
      if (t < best - 1e-14 || (t <= best + 1e-14 && leave >= 0 && d[r] > d[leave])) {
        best = t;
        leave = r;
      }
    }
    if (leave < 0) return false;
    const double piv = d[leave];
    double* lrow = &binv_[static_cast<size_t>(leave) * n_];
    for (int j = 0; j < n_; ++j) lrow[j] /= piv;
    const double theta = std::max(0.0, xb_[leave]) / piv;
    for (int r = 0; r < n_; ++r) {
      if (r == leave || d[r] == 0) continue;
      double* row = &binv_[static_cast<size_t>(r) * n_];
      for (int j = 0; j < n_; ++j) row[j] -= d[r] * lrow[j];
      xb_[r] = std::max(0.0, xb_[r] - theta * d[r]);
    }
    xb_[leave] = theta;
    cols_[leave] = surplus >= 0 ? std::vector<int>{} : set;
    surplus_[leave] = surplus;
    if (++pivots_ % kRefactorEvery == 0) return refactor();
    return true;
  }
  int64_t pivot_cost() const { return 1 + static_cast<int64_t>(n_) * n_ / 16; }

 private:
  // Binv from the basis columns by Gauss–Jordan with partial pivoting, and x_B = Binv · 1; false when
  // the basis has become singular in floating point (the caller then stops on this capacity).
  bool refactor() {
    const size_t n = n_;
    std::vector<double> a(n * n, 0.0), inv(n * n, 0.0);
    for (size_t c = 0; c < n; ++c) {
      if (surplus_[c] >= 0) {
        a[static_cast<size_t>(surplus_[c]) * n + c] = -1;
      } else {
        for (int i : cols_[c]) a[static_cast<size_t>(i) * n + c] = 1;
      }
      inv[c * n + c] = 1;
    }
    for (size_t c = 0; c < n; ++c) {
      size_t p = c;
      for (size_t r = c + 1; r < n; ++r)
        if (std::abs(a[r * n + c]) > std::abs(a[p * n + c])) p = r;
      if (std::abs(a[p * n + c]) < 1e-12) return false;
      if (p != c)
        for (size_t j = 0; j < n; ++j) {
          std::swap(a[p * n + j], a[c * n + j]);
          std::swap(inv[p * n + j], inv[c * n + j]);
        }
      const double piv = a[c * n + c];
      for (size_t j = 0; j < n; ++j) {
        a[c * n + j] /= piv;
        inv[c * n + j] /= piv;
      }
      for (size_t r = 0; r < n; ++r) {
        const double f = a[r * n + c];
        if (r == c || f == 0) continue;
        for (size_t j = 0; j < n; ++j) {
          a[r * n + j] -= f * a[c * n + j];
          inv[r * n + j] -= f * inv[c * n + j];
        }
      }
    }
    binv_ = std::move(inv);
    for (size_t r = 0; r < n; ++r) {
      double x = 0;
      for (size_t j = 0; j < n; ++j) x += binv_[r * n + j];
      xb_[r] = std::max(0.0, x);
    }
    return true;
  }

  void singletons() {
    std::fill(binv_.begin(), binv_.end(), 0.0);
    for (int i = 0; i < n_; ++i) {
      binv_[static_cast<size_t>(i) * n_ + i] = 1;
      xb_[i] = 1;
      cols_[i] = {i};
      surplus_[i] = -1;
    }
  }

  int n_;
  std::vector<double> binv_, xb_;
  std::vector<std::vector<int>> cols_;
  std::vector<int> surplus_;  // the item of a surplus column, -1 for a configuration
  int64_t pivots_ = 0;
};

double weight(const std::vector<int>& set, const std::vector<double>& y) {
  double w = 0;
  for (int i : set) w += y[i];
  return w;
}

// Greedy configurations: the items in a few orders, each taken where it fits. Returns the heaviest.
std::vector<int> greedy(const Instance& in, const std::vector<double>& y, int64_t& budget) {
  const int n = in.n, D = in.dims;
  std::vector<double> by_sum(n, 0.0), by_max(n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < D; ++k) {
      const double r = in.size[static_cast<size_t>(i) * D + k] / std::max(in.room[k], 1e-300);
      by_sum[i] += r;
      by_max[i] = std::max(by_max[i], r);
    }
  std::vector<int> best;
  double best_w = 0;
  for (int rule = 0; rule < 3; ++rule) {
    std::vector<int> order;
    for (int i = 0; i < n; ++i)
      if (y[i] > 0) order.push_back(i);
    auto key = [&](int i) {
      return rule == 0 ? y[i] : y[i] / std::max(rule == 1 ? by_sum[i] : by_max[i], 1e-300);
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) > key(b); });
    std::vector<double> load(D, 0.0);
    std::vector<int> set;
    for (int i : order) {
      const double* s = &in.size[static_cast<size_t>(i) * D];
      bool fits = true;
      for (int k = 0; k < D && fits; ++k) fits = load[k] + s[k] <= in.room[k];
      if (!fits) continue;
      for (int k = 0; k < D; ++k) load[k] += s[k];
      set.push_back(i);
    }
    budget -= 1 + static_cast<int64_t>(n) * D / 16;
    const double w = weight(set, y);
    if (w > best_w) {
      best_w = w;
      best = std::move(set);
    }
  }
  return best;
}

// Refutes the capacity C (packing_lp.h) or not. `pool` keeps configurations across capacities.
Verdict refute(const std::vector<double>& item_ms, int items, const std::vector<double>& offset_ms, int devices,
               double C, std::vector<std::vector<int>>& pool, int& columns, int64_t& budget) {
  const int all_dims = static_cast<int>(offset_ms.size());
  const double slack = kSlack * std::max(1.0, std::abs(C));
  Instance in;
  in.n = items;
  std::vector<int> active;
  for (int k = 0; k < all_dims; ++k) {
    bool used = false;
    for (int i = 0; i < items && !used; ++i) used = item_ms[static_cast<size_t>(i) * all_dims + k] > slack;
    if (!used) continue;
    // An item that loads a window past its room fits no bin.
    for (int i = 0; i < items; ++i)
      if (item_ms[static_cast<size_t>(i) * all_dims + k] > slack &&
          item_ms[static_cast<size_t>(i) * all_dims + k] > C - offset_ms[k] + slack)
        return Verdict::kRefuted;
    active.push_back(k);
  }
  in.dims = static_cast<int>(active.size());
  if (in.dims == 0) return Verdict::kFits;
  in.size.resize(static_cast<size_t>(items) * in.dims);
  for (int i = 0; i < items; ++i)
    for (int a = 0; a < in.dims; ++a) {
      const double s = item_ms[static_cast<size_t>(i) * all_dims + active[a]];
      in.size[static_cast<size_t>(i) * in.dims + a] = s > slack ? s : 0.0;  // in the items' favour
    }
  for (int k : active) in.room.push_back(C - offset_ms[k] + slack);

  CoverLp lp(items);
  double checked = -1;  // Σ y⁺ when the weights' own proof was last tried
  const int max_pivots = 40 * items + 400;
  for (int it = 0; it < max_pivots; ++it) {
    if (budget <= 0) return Verdict::kUndecided;
    // No more configurations than devices cover every item: the LP cannot refute C.
    if (lp.objective() <= devices * (1 + kProofMargin)) return Verdict::kFits;
    std::vector<double> y = lp.duals();
    int most_negative = -1;
    for (int j = 0; j < items; ++j)
      if (y[j] < -kEnter && (most_negative < 0 || y[j] < y[most_negative])) most_negative = j;
    budget -= lp.pivot_cost();
    if (most_negative >= 0) {
      if (!lp.enter({}, most_negative)) return Verdict::kUndecided;
      continue;
    }
    for (double& v : y) v = std::max(0.0, v);
    const double total = std::accumulate(y.begin(), y.end(), 0.0);
    // The column to enter: the heaviest of the greedy orders, else of the pool's configurations.
    std::vector<int> enter_set = greedy(in, y, budget);
    double enter_w = weight(enter_set, y);
    if (enter_w <= 1 + kEnter) {
      for (const auto& set : pool) {
        budget -= 1 + static_cast<int64_t>(set.size());
        const double w = weight(set, y);
        if (w > enter_w && in.fits(set)) {
          enter_w = w;
          enter_set = set;
        }
      }
    }
    // The weights' own proof: no configuration heavier than Σ y⁺ / devices refutes C before the LP
    // is solved. The knapsack under that bar prunes far more than under the simplex's bar of 1; it is
    // tried only where the greedy's configuration (a lower bound on the heaviest) leaves it a chance,
    // and again only once the weights have fallen by half a percent. One found above the bar enters.
    const double proof_bar = total / (devices * (1 + kProofMargin));
    if (proof_bar > 1 + kEnter && enter_w < proof_bar && (checked < 0 || total <= checked * 0.995)) {
      checked = total;
      int64_t slice = std::min(budget, kProofSlice);
      const int64_t given = slice;
      Knapsack ks(in, y, proof_bar, slice);
      const bool done = ks.run();
      budget -= given - slice;
      if (done && ks.best_set().empty()) return Verdict::kRefuted;
      if (!ks.best_set().empty()) {
        enter_set = ks.best_set();
        enter_w = ks.best_weight();
      }
    }
    if (enter_w <= 1 + kEnter) {
      // The exact knapsack: a configuration heavier than the bar enters; none proves the bar.
      const double bar = std::max(1 + kEnter, proof_bar);
      Knapsack ks(in, y, bar, budget);
      if (!ks.run()) return Verdict::kUndecided;
      if (ks.best_set().empty()) return bar == proof_bar ? Verdict::kRefuted : Verdict::kFits;
      enter_set = ks.best_set();
    }
    if (pool.size() < kMaxPool) pool.push_back(enter_set);
    ++columns;
    if (!lp.enter(enter_set, -1)) return Verdict::kUndecided;
  }
  return Verdict::kUndecided;
}

}  // namespace

PackingLpBound vector_packing_lp_bound(const std::vector<double>& item_ms, int items,
                                       const std::vector<double>& offset_ms, int devices, double floor_ms,
                                       double ceiling_ms, int64_t& work_budget) {
  PackingLpBound out;
  const size_t dims = offset_ms.size();
  if (devices < 2 || items < 2 || items > kMaxItems || dims == 0 || item_ms.size() != dims * items ||
      !(floor_ms > 0) || !(ceiling_ms > floor_ms) || work_budget <= 0)
    return out;
  std::vector<std::vector<int>> pool;
  // Each capacity gets at most an eighth of the budget: one near the LP's own value (where the
  // column generation tails off) must not starve the others. Undecided counts as fitting.
  const int64_t slice_of = std::max<int64_t>(1, work_budget / 8);
  auto ask = [&](double c) {
    ++out.capacities;
    int64_t slice = std::min(work_budget, slice_of);
    const int64_t given = slice;
    const Verdict v = refute(item_ms, items, offset_ms, devices, c, pool, out.columns, slice);
    work_budget -= given - slice;
    if (v == Verdict::kUndecided) out.decided = false;
    return v == Verdict::kRefuted;
  };
  double lo = floor_ms * (1 + 1e-9), hi = ceiling_ms;
  if (!ask(lo)) return out;
  out.bound_ms = lo;
  // Up from the floor in steps that double (most capacities refuted are near it), then bisection.
  for (double step = 0.005 * lo; lo + step < hi && work_budget > 0; step *= 2) {
    if (!ask(lo + step)) {
      hi = lo + step;
      break;
    }
    lo += step;
    out.bound_ms = lo;
  }
  while (hi - lo > 1e-4 * lo && work_budget > 0) {
    const double mid = 0.5 * (lo + hi);
    if (ask(mid)) {
      lo = mid;
      out.bound_ms = lo;
    } else {
      hi = mid;
    }
  }
  return out;
}

}  // namespace ps
