// balanced_partition.cpp — see balanced_partition.h.
#include "verify/balanced_partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace ps {

Result<Partition> balanced_partition(const Model& model, int stages) {
  const int n = static_cast<int>(model.layers.size());
  if (stages <= 0) return Status::bad_input(fmt::format("cannot partition into {} stages", stages));
  if (n < stages)
    return Status::bad_input(fmt::format("model '{}' has {} layers, too few for {} stages (each stage "
                                         "needs at least one layer)",
                                         model.name, n, stages),
                             model.loc);
  std::vector<double> pre(n + 1, 0.0);
  for (int i = 0; i < n; ++i) {
    const LayerType& t = model.type_of(i);
    pre[i + 1] = pre[i] + t.forward_ms + t.backward_input_ms + t.backward_weight_ms;
  }
  const double kInf = std::numeric_limits<double>::infinity();
  // best[k][i]: min over partitions of layers [0, i) into k stages of the max stage time.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, -1));
  best[0][0] = 0;
  for (int k = 1; k <= stages; ++k) {
    for (int i = k; i <= n - (stages - k); ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (best[k - 1][j] == kInf) continue;
        const double v = std::max(best[k - 1][j], pre[i] - pre[j]);
        if (v < best[k][i]) {  // strict: the smallest j wins ties
          best[k][i] = v;
          cut[k][i] = j;
        }
      }
    }
  }
  Partition p(stages);
  int i = n;
  for (int k = stages; k >= 1; --k) {
    const int j = cut[k][i];
    p[k - 1] = LayerRange{j, i - 1};
    i = j;
  }
  return p;
}

}  // namespace ps
