// packing_bound.cpp — see packing_bound.h.
#include "synth/bounds/packing_bound.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_set>
#include <vector>

#include "synth/plan/partition.h"

namespace ps {

namespace {

// The k+1 smallest of the k·P+1 largest items share a device (indices kP−k … kP, 0-based, decreasing
// order), for every k: the largest such sum, by prefix sums in one pass.
double pigeonhole(const std::vector<double>& sorted_desc, int devices) {
  const int L = static_cast<int>(sorted_desc.size());
  std::vector<double> prefix(L + 1, 0.0);
  for (int i = 0; i < L; ++i) prefix[i + 1] = prefix[i] + sorted_desc[i];
  double best = 0;
  for (int k = 0; k * devices < L; ++k) best = std::max(best, prefix[k * devices + 1] - prefix[k * devices - k]);
  return best;
}

// A memo key of a search state: how many items of each type are left (mixed radix over the counts)
// and the bin the search is at.
class StateKey {
 public:
  explicit StateKey(const std::vector<int>& count) : radix_(count.size(), 1) {
    for (size_t t = 1; t < count.size(); ++t) radix_[t] = radix_[t - 1] * (count[t - 1] + 1);
  }
  uint64_t operator()(const std::vector<int>& left, uint64_t bin) const {
    uint64_t k = 0;
    for (size_t t = 0; t < left.size(); ++t) k += radix_[t] * static_cast<uint64_t>(left[t]);
    return k * 1024 + bin;
  }

 private:
  std::vector<uint64_t> radix_;
};

// Can the items (count[t] of size w[t], w decreasing) be packed into bins of the given capacities
// (caps[k]; a negative one holds nothing)? Bins are filled in index order, each with a maximal set
// of what is left: any packing can be rearranged so (moving a later bin's item into an earlier bin
// with room keeps it a packing). With identical bins, each bin first takes an item of the largest
// type left (some bin must). Failed states are remembered. Returns 1 yes, 0 no, -1 undecided (the
// work budget spent: every node of the enumeration counts, not only the bins).
class BinSearch {
 public:
  enum class Bins { kIdentical, kInOrder };

  BinSearch(const std::vector<double>& w, const std::vector<int>& count, std::vector<double> caps, Bins bins,
            int64_t budget)
      : w_(w), count_(count), caps_(std::move(caps)), identical_(bins == Bins::kIdentical), budget_(budget),
        key_(count) {
    for (double& c : caps_) c = c * (1 + 1e-12) + 1e-9;  // a sum equal to the capacity fits
    room_after_.assign(caps_.size() + 1, 0.0);
    for (size_t k = caps_.size(); k-- > 0;) room_after_[k] = room_after_[k + 1] + std::max(0.0, caps_[k]);
  }

  int run() {
    std::vector<int> left = count_;
    const int r = fits(left, 0);
    return budget_ < 0 ? (r == 1 ? 1 : -1) : r;
  }
  int64_t budget_left() const { return std::max<int64_t>(0, budget_); }

 private:
  int fits(std::vector<int>& left, size_t bin) {
    double volume = 0;
    int first = -1;  // the largest type left
    for (size_t t = 0; t < left.size(); ++t) {
      volume += left[t] * w_[t];
      if (left[t] > 0 && first < 0) first = static_cast<int>(t);
    }
    if (first < 0) return 1;
    if (bin == caps_.size() || volume > room_after_[bin]) return 0;
    if (--budget_ < 0) return 0;
    const uint64_t k = key_(left, static_cast<uint64_t>(bin));
    if (failed_.count(k)) return 0;
    int r = 0;
    if (identical_) {
      left[first] -= 1;
      r = extend(left, first, caps_[bin] - w_[first], bin);
      left[first] += 1;
    } else {
      r = extend(left, 0, caps_[bin], bin);
    }
    if (r == 0) failed_.insert(k);
    return r;
  }

  // Chooses how many more of types t.. go into bin `bin` (largest counts first).
  int extend(std::vector<int>& left, size_t t, double room, size_t bin) {
    if (--budget_ < 0) return 0;
    if (t == left.size()) {
      for (size_t u = 0; u < left.size(); ++u)
        if (left[u] > 0 && w_[u] <= room) return 0;  // not maximal: another item fits
      return fits(left, bin + 1);
    }
    const int most = room < w_[t] ? 0 : std::min(left[t], static_cast<int>(std::floor(room / w_[t] + 1e-12)));
    for (int n = most; n >= 0; --n) {
      left[t] -= n;
      const int r = extend(left, t + 1, room - n * w_[t], bin);
      left[t] += n;
      if (r == 1) return 1;
    }
    return 0;
  }

  const std::vector<double>& w_;
  const std::vector<int>& count_;
  std::vector<double> caps_;
  bool identical_;
  int64_t budget_;
  StateKey key_;
  std::vector<double> room_after_;  // Σ max(0, cap) over bins k..end
  std::unordered_set<uint64_t> failed_;
};

// Items of equal size form a type; free items (size <= 0) are left out: they fit anywhere.
struct ItemTypes {
  std::vector<double> w;   // the sizes, decreasing
  std::vector<int> count;  // items of each size
  double states = 1;       // Π (count + 1): the search's state space

  explicit ItemTypes(const std::vector<double>& sizes) {
    std::map<double, int, std::greater<double>> types;
    for (double x : sizes)
      if (x > 0) ++types[x];
    for (const auto& [size, n] : types) {
      w.push_back(size);
      count.push_back(n);
      states *= n + 1;
    }
  }
  // Too many types (profiled models with per-layer costs), states or bins make the search pointless.
  bool searchable(int bins) const { return w.size() <= 12 && states <= 1e12 && bins < 1024; }
};

// Bisection on a capacity between lo (tried first: when it fits, it is the answer) and hi (known to
// fit); probe(c) returns 1 fits, 0 does not, -1 undecided. The result: lo the largest capacity
// proven too small (or lo itself when it fits), hi the least one found to fit, decided false when a
// probe was undecided (the bisection stops there).
struct Bisection {
  double lo = 0, hi = 0;
  bool decided = true;
};
template <class Probe>
Bisection bisect_capacity(double lo, double hi, const Probe& probe) {
  Bisection b{lo, hi, true};
  const int first = probe(lo);
  if (first == 1) {
    b.hi = lo;
    return b;
  }
  if (first < 0) {
    b.decided = false;
    return b;
  }
  for (int it = 0; it < 40 && b.hi - b.lo > 1e-6 * b.hi; ++it) {
    const double mid = 0.5 * (b.lo + b.hi);
    const int r = probe(mid);
    if (r == 1) {
      b.hi = mid;
    } else if (r == 0) {
      b.lo = mid;
    } else {
      b.decided = false;
      break;
    }
  }
  return b;
}

// Longest processing time first: an upper bound on the packing optimum.
double lpt(const std::vector<double>& sorted_desc, int devices) {
  std::vector<double> load(devices, 0);
  for (double c : sorted_desc) *std::min_element(load.begin(), load.end()) += c;
  return *std::max_element(load.begin(), load.end());
}

}  // namespace

PackingBound packing_bound(const std::vector<double>& layer_ms, int devices) {
  PackingBound b;
  if (devices < 1 || layer_ms.empty()) return b;
  std::vector<double> c = layer_ms;
  std::sort(c.begin(), c.end(), std::greater<double>());
  b.pigeonhole_ms = pigeonhole(c, devices);
  b.packing_ms = lpt(c, devices);
  double total = 0;
  for (double x : c) total += x;
  double lo = std::max(b.pigeonhole_ms, total / devices);  // a capacity below this cannot fit
  b.exact_ms = lo;
  // Where the search is pointless (ItemTypes::searchable), the pigeonhole bound stands.
  const ItemTypes items(c);
  if (!items.searchable(devices)) {
    b.decided = false;
    return b;
  }
  // Bisection between a capacity known too small (lo, or the pigeonhole bound itself, which may
  // be feasible: then the search says so at once) and the LPT packing.
  const Bisection r = bisect_capacity(lo, b.packing_ms, [&](double cap) {
    constexpr int64_t kBudgetPerProbe = 2'000'000;
    return BinSearch(items.w, items.count, std::vector<double>(devices, cap), BinSearch::Bins::kIdentical,
                     kBudgetPerProbe)
        .run();
  });
  b.exact_ms = r.lo;
  b.packing_ms = r.hi;
  b.decided = r.decided;
  return b;
}

OffsetPacking offset_packing_bound(const std::vector<double>& item_ms, const std::vector<double>& offset_ms) {
  OffsetPacking b;
  const int bins = static_cast<int>(offset_ms.size());
  if (bins < 1 || item_ms.empty()) return b;
  double total = 0, largest = 0;
  for (double x : item_ms) {
    total += std::max(0.0, x);
    largest = std::max(largest, x);
  }
  // Fractional: with the first j bins open (offsets ascending), C_j = (total + Σ_{k<j} offset_k) / j;
  // every C_j is at least the least C (fewer bins hold less), and the one for the bins open at it
  // equals it, so the least C is min_j C_j.
  double prefix = 0, frac = std::numeric_limits<double>::infinity(), all_bins = 0;
  for (int j = 1; j <= bins; ++j) {
    prefix += offset_ms[j - 1];
    all_bins = (total + prefix) / j;
    frac = std::min(frac, all_bins);
  }
  // Some bin holds the largest item, and none opens before offset_ms[0].
  b.fractional_ms = std::max(frac, offset_ms[0] + largest);
  b.bound_ms = b.fractional_ms;
  const ItemTypes items(item_ms);
  if (!items.searchable(bins)) {
    b.decided = false;
    return b;
  }
  // Next fit (bins in order, each filled until the next item does not fit) leaves less than the
  // largest item free in each bin, so all items fit once Q·C − Σ offsets − Q·largest >= total.
  const Bisection r = bisect_capacity(b.fractional_ms, all_bins + largest, [&](double c) {
    std::vector<double> caps(bins);
    for (int k = 0; k < bins; ++k) caps[k] = c - offset_ms[k];
    constexpr int64_t kBudgetPerProbe = 400'000;
    return BinSearch(items.w, items.count, std::move(caps), BinSearch::Bins::kInOrder, kBudgetPerProbe).run();
  });
  b.bound_ms = r.lo;
  b.decided = r.decided;
  return b;
}

namespace {

// The sizes rounded down to at most `levels` distinct values, each to the largest chosen value not
// above it, the smallest size always chosen: the choice with the least total rounding (a dynamic
// program over the distinct sizes in increasing order, each chosen value starting a group).
std::vector<double> rounded_down(const std::vector<double>& sizes, int levels) {
  std::map<double, int> count;
  for (double x : sizes) ++count[x];
  const int n = static_cast<int>(count.size());
  if (n <= levels) return sizes;
  std::vector<double> v, S(n + 1, 0.0), N(n + 1, 0.0);
  for (const auto& [x, c] : count) {
    v.push_back(x);
    S[v.size()] = S[v.size() - 1] + c * x;
    N[v.size()] = N[v.size() - 1] + c;
  }
  // loss(j, i): the sizes j..i (0-based, inclusive) all rounded down to v[j].
  auto loss = [&](int j, int i) { return (S[i + 1] - S[j]) - v[j] * (N[i + 1] - N[j]); };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[k][i]: sizes 0..i in k+1 groups; from[k][i]: where the last group starts.
  std::vector<std::vector<double>> best(levels, std::vector<double>(n, kInf));
  std::vector<std::vector<int>> from(levels, std::vector<int>(n, 0));
  for (int i = 0; i < n; ++i) best[0][i] = loss(0, i);
  for (int k = 1; k < levels; ++k)
    for (int i = k; i < n; ++i)
      for (int j = k; j <= i; ++j) {
        const double x = best[k - 1][j - 1] + loss(j, i);
        if (x < best[k][i]) {
          best[k][i] = x;
          from[k][i] = j;
        }
      }
  std::vector<double> level_of(n);
  for (int k = levels - 1, i = n - 1; i >= 0; --k) {
    const int j = k == 0 ? 0 : from[k][i];
    for (int t = j; t <= i; ++t) level_of[t] = v[j];
    i = j - 1;
  }
  std::vector<double> out;
  out.reserve(sizes.size());
  for (double x : sizes) out.push_back(level_of[std::lower_bound(v.begin(), v.end(), x) - v.begin()]);
  return out;
}

}  // namespace

double targeted_packing_bound(const std::vector<double>& item_ms, int devices, double target_ms,
                              int64_t& work_budget) {
  if (devices < 1 || item_ms.empty()) return 0;
  std::vector<double> c = item_ms;
  std::sort(c.begin(), c.end(), std::greater<double>());
  double total = 0;
  for (double x : c) total += x;
  const double cheap = std::max(pigeonhole(c, devices), total / devices);
  if (!(target_ms > cheap) || work_budget <= 0) return cheap;
  // The rounding's dynamic program takes 12·n² steps for n distinct sizes: past 256 the search is
  // not tried (and would hardly decide anything with so many items).
  if (std::set<double>(c.begin(), c.end()).size() > 256) return cheap;
  const ItemTypes items(rounded_down(c, 12));
  if (!items.searchable(devices)) return cheap;
  // 1 fits, 0 does not, -1 undecided; each probe's nodes come out of the budget.
  auto probe = [&](double cap) {
    if (work_budget <= 0) return -1;
    const int64_t given = work_budget;
    BinSearch search(items.w, items.count, std::vector<double>(devices, cap), BinSearch::Bins::kIdentical, given);
    const int r = search.run();
    work_budget -= given - search.budget_left();
    return r;
  };
  if (probe(target_ms) != 0) return cheap;
  // target_ms is too small; longest processing time first packs the rounded items into some capacity.
  std::vector<double> rounded;
  for (size_t t = 0; t < items.w.size(); ++t) rounded.insert(rounded.end(), items.count[t], items.w[t]);
  double lo = target_ms, hi = std::max(target_ms, lpt(rounded, devices));
  for (int it = 0; it < 40 && hi - lo > 1e-6 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    const int r = probe(mid);
    if (r == 1)
      hi = mid;
    else if (r == 0)
      lo = mid;
    else
      break;
  }
  return lo;
}

double layer_packing_bound_ms(const Model& model, int devices, int microbatches) {
  if (devices < 1 || microbatches < 1 || model.layers.empty()) return 0;
  std::vector<double> c;
  for (int l = 0; l < static_cast<int>(model.layers.size()); ++l) c.push_back(layer_time_floor_ms(model, LayerId{l}));
  return packing_bound(c, devices).exact_ms * microbatches;
}

}  // namespace ps
