// tuner_bound.cpp — see tuner_bound.h.
#include "synth/tuner_bound.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "synth/partition.h"

namespace ps {

double layer_packing_bound_ms(const Model& model, int devices, int microbatches) {
  if (devices < 1 || microbatches < 1 || model.layers.empty()) return 0;
  std::vector<double> c;
  for (int l = 0; l < static_cast<int>(model.layers.size()); ++l) c.push_back(layer_time_ms(model, l));
  std::sort(c.begin(), c.end(), std::greater<double>());
  const int L = static_cast<int>(c.size());
  double best = 0;
  for (int k = 0; k * devices < L; ++k) {
    // The k+1 smallest of the k·P+1 largest: indices kP−k … kP (0-based, decreasing order).
    double sum = 0;
    for (int i = k * devices - k; i <= k * devices; ++i) sum += c[i];
    best = std::max(best, sum);
  }
  return best * microbatches;
}

}  // namespace ps
