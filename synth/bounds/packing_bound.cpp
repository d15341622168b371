// packing_bound.cpp — see packing_bound.h.
#include "synth/bounds/packing_bound.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <vector>

#include "ir/status.h"
#include "synth/plan/partition.h"

namespace ps {

namespace {

constexpr int kMaxPackingDims = 8;  // BinSearch's dimensions at most

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

// Can the items (count[t] of type t, of size w[t·D + k] in each dimension k < D, types in decreasing
// order of size) be packed into bins of the given capacities (caps[b·D + k]; an item fits a bin when
// in every dimension its size is 0 or at most the room left, so a negative capacity holds nothing of
// that dimension)? Bins are filled in index order, each with a maximal set of what is left: any
// packing can be rearranged so (moving a later bin's item into an earlier bin with room in every
// dimension keeps it a packing). With identical bins, each bin first takes an item of the first type
// left (some bin must, and the bins left are interchangeable). Failed states are remembered. Returns
// 1 yes, 0 no, -1 undecided (the work budget spent: every node of the enumeration counts, not only
// the bins).
class BinSearch {
 public:
  enum class Bins { kIdentical, kInOrder };

  BinSearch(const std::vector<double>& w, const std::vector<int>& count, std::vector<double> caps, Bins bins,
            int64_t budget, int dims = 1)
      : w_(w), count_(count), caps_(std::move(caps)), dims_(dims), identical_(bins == Bins::kIdentical),
        budget_(budget), key_(count) {
    PS_ASSERT(dims_ >= 1 && dims_ <= kMaxPackingDims, "BinSearch: dimensions out of range");
    for (double& c : caps_) c = c * (1 + 1e-12) + 1e-9;  // a sum equal to the capacity fits
    const size_t bins_n = caps_.size() / dims_;
    room_after_.assign((bins_n + 1) * dims_, 0.0);
    for (size_t b = bins_n; b-- > 0;)
      for (int k = 0; k < dims_; ++k)
        room_after_[b * dims_ + k] = room_after_[(b + 1) * dims_ + k] + std::max(0.0, caps_[b * dims_ + k]);
    volume_.assign(dims_, 0.0);
  }

  int run() {
    std::vector<int> left = count_;
    const int r = fits(left, 0);
    return budget_ < 0 ? (r == 1 ? 1 : -1) : r;
  }
  int64_t budget_left() const { return std::max<int64_t>(0, budget_); }

 private:
  using Room = std::array<double, kMaxPackingDims>;
  const double* size(size_t t) const { return &w_[t * dims_]; }
  bool fits_in(size_t t, const double* room) const {
    const double* x = size(t);
    for (int k = 0; k < dims_; ++k)
      if (x[k] > 0 && x[k] > room[k]) return false;
    return true;
  }

  int fits(std::vector<int>& left, size_t bin) {
    int first = -1;  // the first type left
    std::fill(volume_.begin(), volume_.end(), 0.0);
    for (size_t t = 0; t < left.size(); ++t) {
      if (left[t] == 0) continue;
      const double* x = size(t);
      for (int k = 0; k < dims_; ++k) volume_[k] += left[t] * x[k];
      if (first < 0) first = static_cast<int>(t);
    }
    if (first < 0) return 1;
    if (bin == caps_.size() / dims_) return 0;
    for (int k = 0; k < dims_; ++k)
      if (volume_[k] > room_after_[bin * dims_ + k]) return 0;
    if (--budget_ < 0) return 0;
    const uint64_t key = key_(left, static_cast<uint64_t>(bin));
    if (failed_.count(key)) return 0;
    Room room{};
    for (int k = 0; k < dims_; ++k) room[k] = caps_[bin * dims_ + k];
    int r = 0;
    if (identical_) {
      if (fits_in(first, room.data())) {
        left[first] -= 1;
        for (int k = 0; k < dims_; ++k) room[k] -= size(first)[k];
        r = extend(left, first, room, bin);
        left[first] += 1;
      }
    } else {
      r = extend(left, 0, room, bin);
    }
    if (r == 0) failed_.insert(key);
    return r;
  }

  // Chooses how many more of types t.. go into bin `bin` (largest counts first).
  int extend(std::vector<int>& left, size_t t, const Room& room, size_t bin) {
    if (--budget_ < 0) return 0;
    if (t == left.size()) {
      for (size_t u = 0; u < left.size(); ++u)
        if (left[u] > 0 && fits_in(u, room.data())) return 0;  // not maximal: another item fits
      return fits(left, bin + 1);
    }
    const double* x = size(t);
    int most = left[t];
    for (int k = 0; k < dims_ && most > 0; ++k)
      if (x[k] > 0) most = room[k] < x[k] ? 0 : std::min(most, static_cast<int>(std::floor(room[k] / x[k] + 1e-12)));
    for (int n = most; n >= 0; --n) {
      Room rest = room;
      for (int k = 0; k < dims_; ++k) rest[k] -= n * x[k];
      left[t] -= n;
      const int r = extend(left, t + 1, rest, bin);
      left[t] += n;
      if (r == 1) return 1;
    }
    return 0;
  }

  const std::vector<double>& w_;
  const std::vector<int>& count_;
  std::vector<double> caps_;
  int dims_;
  bool identical_;
  int64_t budget_;
  StateKey key_;
  std::vector<double> room_after_;  // Σ max(0, cap) over bins b..end, per dimension
  std::vector<double> volume_;  // scratch: the size left per dimension
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

// The largest capacity in [lo, hi] that `probe` (1 fits, 0 does not, -1 undecided) proves too small,
// by bisection from lo (too small) and hi (fits): the first undecided probe ends it with what is
// proven so far.
template <class Probe>
double largest_refuted(double lo, double hi, const Probe& probe) {
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
  return largest_refuted(target_ms, std::max(target_ms, lpt(rounded, devices)), probe);
}

namespace {

// The items' vectors rounded down to at most `max_types` distinct ones: the items of each kind, in
// the order given, are cut into runs, and every item of a run takes the run's least size in each
// dimension. Starting from one run per kind, the run that loses the most (Σ over its items and
// dimensions of size − the run's least) is cut where the two halves lose the least, while runs are
// fewer than max_types and the search's state space Π (count + 1) stays within max_states. Returns
// the runs' vectors (flat, D per run) and counts, or nothing when the kinds alone are too many.
struct VectorTypes {
  std::vector<double> w;   // D per type
  std::vector<int> count;  // items of each type
};
std::optional<VectorTypes> vector_types(const std::vector<std::vector<double>>& item_ms, const std::vector<int>& kind,
                                        int dims, size_t max_types, double max_states) {
  std::map<int, std::vector<int>> by_kind;
  for (size_t i = 0; i < item_ms.size(); ++i) by_kind[kind[i]].push_back(static_cast<int>(i));
  if (by_kind.size() > max_types) return std::nullopt;
  std::vector<std::vector<int>> runs;
  for (auto& [k, items] : by_kind) runs.push_back(std::move(items));
  // The best cut of a run and what it saves: the loss of [0, i) and of [i, n) by prefix and suffix
  // minima, one pass each.
  auto best_cut = [&](const std::vector<int>& run, double& gain, double& loss) {
    const size_t n = run.size();
    std::vector<double> prefix(n + 1, 0.0), suffix(n + 1, 0.0);  // loss of [0, i) and [i, n)
    for (int k = 0; k < dims; ++k) {
      double least = std::numeric_limits<double>::infinity(), sum = 0;
      for (size_t i = 0; i < n; ++i) {
        least = std::min(least, item_ms[run[i]][k]);
        sum += item_ms[run[i]][k];
        prefix[i + 1] += sum - least * static_cast<double>(i + 1);
      }
      least = std::numeric_limits<double>::infinity(), sum = 0;
      for (size_t i = n; i-- > 0;) {
        least = std::min(least, item_ms[run[i]][k]);
        sum += item_ms[run[i]][k];
        suffix[i] += sum - least * static_cast<double>(n - i);
      }
    }
    // The cut that saves the most; where none saves anything (a run whose odd item sits inside it
    // needs two cuts) the one whose larger half loses the least.
    size_t cut = 0;
    gain = 0;
    double balance = std::numeric_limits<double>::infinity();
    for (size_t i = 1; i < n; ++i) {
      const double g = prefix[n] - (prefix[i] + suffix[i]), b = std::max(prefix[i], suffix[i]);
      if (g > gain || (g == gain && b < balance && gain == 0)) {
        gain = g;
        balance = b;
        cut = i;
      }
    }
    loss = prefix[n];
    return cut;
  };
  auto states = [&] {
    double x = 1;
    for (const auto& run : runs) x *= static_cast<double>(run.size() + 1);
    return x;
  };
  while (runs.size() < max_types) {
    // The run whose cut saves the most, or else the run that loses the most.
    size_t at = 0, cut = 0;
    double best_gain = 0, best_loss = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
      double gain = 0, loss = 0;
      const size_t c = best_cut(runs[r], gain, loss);
      if (gain > best_gain || (best_gain == 0 && gain == 0 && loss > best_loss)) {
        best_gain = gain;
        best_loss = loss;
        at = r;
        cut = c;
      }
    }
    if (best_gain <= 0 && best_loss <= 0) break;
    const double n = static_cast<double>(runs[at].size());
    if (states() / (n + 1) * (cut + 1) * (n - cut + 1) > max_states) break;
    std::vector<int> tail(runs[at].begin() + static_cast<std::ptrdiff_t>(cut), runs[at].end());
    runs[at].resize(cut);
    runs.insert(runs.begin() + static_cast<std::ptrdiff_t>(at) + 1, std::move(tail));
  }
  // Each run's least vector; runs of zero size everywhere fit anywhere and are left out; types in
  // decreasing order of their total size (ties by their first item: deterministic).
  struct Type {
    std::vector<double> w;
    int count, first;
    double total;
  };
  std::vector<Type> types;
  for (const auto& run : runs) {
    if (run.empty()) continue;
    Type t{std::vector<double>(dims, std::numeric_limits<double>::infinity()), static_cast<int>(run.size()), run[0], 0};
    for (int i : run)
      for (int k = 0; k < dims; ++k) t.w[k] = std::min(t.w[k], item_ms[i][k]);
    for (double& x : t.w) x = std::max(0.0, x);
    for (double x : t.w) t.total += x;
    if (t.total > 0) types.push_back(std::move(t));
  }
  std::stable_sort(types.begin(), types.end(), [](const Type& x, const Type& y) {
    return x.total != y.total ? x.total > y.total : x.first < y.first;
  });
  VectorTypes out;
  for (const auto& t : types) {
    out.w.insert(out.w.end(), t.w.begin(), t.w.end());
    out.count.push_back(t.count);
  }
  if (states() > max_states) return std::nullopt;
  return out;
}

// The least C at which the greedy dealing fits: items in the order given by their total size,
// each onto the bin where max_k (offset_k + load_k) over the dimensions it loads grows least. An
// upper bound on the optimum (a packing at that C exists).
double greedy_vector_packing(const std::vector<double>& w, const std::vector<int>& count, int dims,
                             const std::vector<double>& offset_ms, int devices) {
  std::vector<double> load(static_cast<size_t>(devices) * dims, 0.0);
  auto value = [&](const double* l, const double* add) {
    double v = 0;
    for (int k = 0; k < dims; ++k) {
      const double x = l[k] + (add ? add[k] : 0.0);
      if (x > 0) v = std::max(v, offset_ms[k] + x);
    }
    return v;
  };
  for (size_t t = 0; t < count.size(); ++t)
    for (int n = 0; n < count[t]; ++n) {
      int best = 0;
      double best_v = std::numeric_limits<double>::infinity();
      for (int d = 0; d < devices; ++d) {
        const double v = value(&load[d * dims], &w[t * dims]);
        if (v < best_v) {
          best_v = v;
          best = d;
        }
      }
      for (int k = 0; k < dims; ++k) load[best * dims + k] += w[t * dims + k];
    }
  double worst = 0;
  for (int d = 0; d < devices; ++d) worst = std::max(worst, value(&load[d * dims], nullptr));
  return worst;
}

}  // namespace

double vector_packing_bound(const std::vector<std::vector<double>>& item_ms, const std::vector<int>& item_kind,
                            const std::vector<double>& offset_ms, int devices, double target_ms,
                            int64_t& work_budget) {
  const int dims = static_cast<int>(offset_ms.size());
  if (devices < 1 || item_ms.empty() || dims < 1 || dims > kMaxPackingDims) return 0;
  // The cheap bound: in each dimension the mean load of the devices that load it, and each item on
  // some device.
  double cheap = 0;
  for (int k = 0; k < dims; ++k) {
    double total = 0;
    for (const auto& x : item_ms) {
      total += std::max(0.0, x[k]);
      if (x[k] > 0) cheap = std::max(cheap, offset_ms[k] + x[k]);
    }
    if (total > 0) cheap = std::max(cheap, offset_ms[k] + total / devices);
  }
  if (!(target_ms > cheap) || work_budget <= 0 || devices >= 1024) return cheap;
  constexpr size_t kMaxTypes = 16;
  constexpr double kMaxStates = 1e15;  // the memo key's mixed radix times 1024 bins fits 64 bits
  const std::optional<VectorTypes> types = vector_types(item_ms, item_kind, dims, kMaxTypes, kMaxStates);
  if (!types || types->count.empty()) return cheap;
  // 1 fits, 0 does not, -1 undecided; each probe's nodes come out of the budget.
  auto probe = [&](double c) {
    if (work_budget <= 0) return -1;
    std::vector<double> caps(static_cast<size_t>(devices) * dims);
    for (int d = 0; d < devices; ++d)
      for (int k = 0; k < dims; ++k) caps[d * dims + k] = c - offset_ms[k];
    const int64_t given = work_budget;
    BinSearch search(types->w, types->count, std::move(caps), BinSearch::Bins::kIdentical, given, dims);
    const int r = search.run();
    work_budget -= given - search.budget_left();
    return r;
  };
  if (probe(target_ms) != 0) return cheap;
  return largest_refuted(target_ms,
                         std::max(target_ms, greedy_vector_packing(types->w, types->count, dims, offset_ms, devices)),
                         probe);
}

double layer_packing_bound_ms(const Model& model, int devices, int microbatches) {
  if (devices < 1 || microbatches < 1 || model.layers.empty()) return 0;
  std::vector<double> c;
  for (int l = 0; l < static_cast<int>(model.layers.size()); ++l) c.push_back(layer_time_floor_ms(model, LayerId{l}));
  return packing_bound(c, devices).exact_ms * microbatches;
}

}  // namespace ps
