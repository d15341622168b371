#include "ir/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>


namespace ps {

double layer_time_ms(const Model& model, LayerId layer) {
  const LayerType& t = model.type_of(layer.value());
  return t.forward_ms + t.backward_input_ms + t.backward_weight_ms;
}

double layer_time_floor_ms(const Model& model, LayerId layer) {
  const LayerType& t = model.type_of(layer.value());
  return t.backward_ms ? t.forward_ms + t.least_backward_ms() : layer_time_ms(model, layer);
}

double layer_memory_mb(const Spec& spec, LayerId layer) {
  const LayerType& t = spec.model.type_of(layer.value());
  return t.params_m * spec.pipeline.bytes_per_param + t.activation_mb;
}

double range_time_ms(const Model& model, const LayerRange& r) {
  double sum = 0;
  for (int l = r.first; l <= r.last; ++l) sum += layer_time_ms(model, LayerId{l});
  return sum;
}

Status check_partition(const Partition& p, int num_layers) {
  if (p.empty()) return Status::bad_input("partition has no stages");
  int next = 0;
  for (size_t s = 0; s < p.size(); ++s) {
    if (p[s].first != next || p[s].last < p[s].first)
      return Status::bad_input(fmt::format(
          "partition stage {} covers layers [{}, {}], expected a non-empty range starting at "
          "layer {}",
          s, p[s].first, p[s].last, next));
    next = p[s].last + 1;
  }
  if (next != num_layers)
    return Status::bad_input(
        fmt::format("partition covers layers [0, {}), the model has {} layers", next, num_layers));
  return Status::ok();
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

Status check_stage_count(const Spec& spec, int stages, const char* what) {
  int n = static_cast<int>(spec.model.layers.size());
  if (stages < 1)
    return Status::bad_input(
        fmt::format("{} partition needs at least 1 stage, got {}", what, stages));
  if (stages > n)
    return Status::bad_input(fmt::format(
        "{} partition into {} stages is impossible: model '{}' has only {} layers (each stage "
        "needs at least one)",
        what, stages, spec.model.name, n));
  return Status::ok();
}

namespace {

// The cut points of the optimum of k stages over n layers, from the tables of the two searches
// below (best[s][j]: optimum of the first j layers in s stages; arg[s][j]: start of the last
// stage); empty when there is none.
std::vector<int> cuts_from(const std::vector<std::vector<double>>& best, const std::vector<std::vector<int>>& arg,
                           int n, int k) {
  if (best[k][n] == kInf) return {};
  std::vector<int> cuts(k + 1);
  cuts[k] = n;
  for (int s = k; s >= 1; --s) cuts[s - 1] = arg[s][cuts[s]];
  return cuts;
}

// Min over contiguous partitions of [0, n) into k non-empty ranges of max_r cost(r), where a range
// is allowed only if allowed(i, j) (layers [i, j)). Returns the cut points (size k+1) or empty.
template <class Cost, class Allowed>
std::vector<int> minmax_partition(int n, int k, Cost cost, Allowed allowed) {
  // best[s][j]: optimum for the first j layers in s stages; arg[s][j]: start of the last stage.
  std::vector<std::vector<double>> best(k + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int>> arg(k + 1, std::vector<int>(n + 1, -1));
  best[0][0] = -kInf;
  for (int s = 1; s <= k; ++s) {
    for (int j = s; j <= n - (k - s); ++j) {
      for (int i = s - 1; i < j; ++i) {
        if (best[s - 1][i] == kInf || !allowed(i, j)) continue;
        double v = std::max(best[s - 1][i], cost(i, j));
        // Strictly better only: keeps the earliest cut among ties (deterministic).
        if (v < best[s][j]) {
          best[s][j] = v;
          arg[s][j] = i;
        }
      }
    }
  }
  return cuts_from(best, arg, n, k);
}

// The same problem for a range cost that is a difference of prefix sums, pre[j] − pre[i] (non-
// decreasing pre: every difference is then exactly monotone in i and j, rounding included), with
// ranges [i, j) allowed only for i >= first[j]. The optimum of s stages over j layers is then
// non-decreasing in j, so for each (s, j) max(best[s−1][i], cost(i, j)) falls then rises in i and
// a binary search finds its minimum (the earliest i among ties): O(k·n·log n) time, O(k·n) memory,
// where the table above takes O(k·n²) and O(n²) (a 5,000-layer model: minutes and 400 MB).
std::vector<int> minmax_partition_prefix(int n, int k, const std::vector<double>& pre, const std::vector<int>& first) {
  std::vector<std::vector<double>> best(k + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int>> arg(k + 1, std::vector<int>(n + 1, -1));
  best[0][0] = -kInf;
  for (int s = 1; s <= k; ++s) {
    const std::vector<double>& g = best[s - 1];
    for (int j = s; j <= n - (k - s); ++j) {
      const int lo = std::max(s - 1, first[j]);
      if (lo > j - 1) continue;
      auto h = [&](int i) { return pre[j] - pre[i]; };
      // i0: the first i in [lo, j) with g(i) >= h(i) (j when none).
      int a = lo, b = j;
      while (a < b) {
        const int mid = a + (b - a) / 2;
        if (g[mid] >= h(mid)) b = mid; else a = mid + 1;
      }
      const int i0 = a;
      double m = kInf;
      int at = -1;
      if (i0 <= j - 1 && g[i0] != kInf) m = std::max(g[i0], h(i0)), at = i0;
      if (i0 - 1 >= lo && g[i0 - 1] != kInf) {
        const double v = h(i0 - 1);  // h > g left of i0
        if (v <= m) {
          // The earliest i in [lo, i0) with h(i) <= v (h does not increase with i).
          int c = lo, d = i0 - 1;
          while (c < d) {
            const int mid = c + (d - c) / 2;
            if (h(mid) <= v) d = mid; else c = mid + 1;
          }
          m = v, at = c;
        }
      }
      best[s][j] = m;
      arg[s][j] = at;
    }
  }
  return cuts_from(best, arg, n, k);
}

// The time limit of the memory tie-break: the worst stage time of `cuts` (range_time(i, j): layers
// [i, j)), with room for rounding.
template <class RangeTime>
double tie_break_limit(const std::vector<int>& cuts, RangeTime range_time) {
  double t_opt = 0;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) t_opt = std::max(t_opt, range_time(cuts[s], cuts[s + 1]));
  return t_opt * (1 + 1e-12) + 1e-12;
}

// Models up to this many layers keep the exact table (their partitions, and so the tuner's
// results, are unchanged); larger ones use minmax_partition_prefix.
constexpr int kTableLayers = 1024;

Partition cuts_to_partition(const std::vector<int>& cuts) {
  Partition p;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) p.push_back({cuts[s], cuts[s + 1] - 1});
  return p;
}

}  // namespace

Result<Partition> balanced_partition(const Spec& spec, int stages, PartitionCost cost) {
  PS_RETURN_IF_ERROR(check_stage_count(spec, stages, "balanced"));
  int n = static_cast<int>(spec.model.layers.size());
  std::vector<double> time(n), mem(n);
  for (int l = 0; l < n; ++l) {
    time[l] = layer_time_ms(spec.model, LayerId{l});
    mem[l] = layer_memory_mb(spec, LayerId{l});
  }
  if (n > kTableLayers) {
    std::vector<double> tpre(n + 1, 0.0), mpre(n + 1, 0.0);
    for (int l = 0; l < n; ++l) tpre[l + 1] = tpre[l] + time[l], mpre[l + 1] = mpre[l] + mem[l];
    std::vector<int> cuts = minmax_partition_prefix(n, stages, tpre, std::vector<int>(n + 1, 0));
    PS_ASSERT(!cuts.empty(), "an unconstrained partition always exists when stages <= layers");
    if (cost == PartitionCost::kTimeThenMemory) {
      const double limit = tie_break_limit(cuts, [&](int i, int j) { return tpre[j] - tpre[i]; });
      std::vector<int> first(n + 1, 0);  // the first i with time(i, j) <= limit
      for (int j = 1, i = 0; j <= n; ++j) {
        while (i < j && tpre[j] - tpre[i] > limit) ++i;
        first[j] = i;
      }
      std::vector<int> mcuts = minmax_partition_prefix(n, stages, mpre, first);
      PS_ASSERT(!mcuts.empty(), "the time-optimal partition satisfies its own limit");
      cuts = std::move(mcuts);
    }
    return cuts_to_partition(cuts);
  }
  // Range sums [i, j) accumulated left to right from i (O(n²) table, no prefix differences).
  auto table = [n](const std::vector<double>& v) {
    std::vector<std::vector<double>> t(n + 1, std::vector<double>(n + 1, 0.0));
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j <= n; ++j) t[i][j] = t[i][j - 1] + v[j - 1];
    return t;
  };
  const auto time_table = table(time);
  auto time_cost = [&](int i, int j) { return time_table[i][j]; };
  std::vector<int> cuts = minmax_partition(n, stages, time_cost, [](int, int) { return true; });
  PS_ASSERT(!cuts.empty(), "an unconstrained partition always exists when stages <= layers");
  if (cost == PartitionCost::kTimeThenMemory) {
    const double limit = tie_break_limit(cuts, time_cost);
    const auto mem_table = table(mem);
    auto mem_cost = [&](int i, int j) { return mem_table[i][j]; };
    std::vector<int> mcuts = minmax_partition(
        n, stages, mem_cost, [&](int i, int j) { return time_cost(i, j) <= limit; });
    PS_ASSERT(!mcuts.empty(), "the time-optimal partition satisfies its own limit");
    cuts = std::move(mcuts);
  }
  return cuts_to_partition(cuts);
}

}  // namespace ps
