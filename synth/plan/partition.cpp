// partition.cpp — Megatron's even partition and partitions chosen by name (see partition.h).
#include "synth/plan/partition.h"

#include <fmt/format.h>

#include "synth/plan/megatron_layout.h"

namespace ps {

Result<Partition> even_partition(const Spec& spec, int stages) {
  PS_RETURN_IF_ERROR(check_stage_count(spec, stages, "even"));
  // Megatron cuts between its own layers only: sublayers joined by `joins_next` stay together.
  const int layers = static_cast<int>(spec.model.layers.size());
  const MegatronLayers ml = megatron_layers(spec.model);
  int n = ml.size();
  if (n < stages) {
    return Status::bad_input(fmt::format(
        "even partition: {} stages but the model has {} layers counting joined sublayers as one ({} without); "
        "use at most {} stages or the balanced partition",
        stages, n, layers, n));
  }
  int head = 0;  // leading embedding layers
  while (head < n && ml.kinds[head] == 'E') ++head;
  int tail = 0;  // trailing loss / MTP layers
  auto is_tail = [&](int u) { return ml.kinds[u] == 'L' || ml.kinds[u] == 'm'; };
  while (tail < n - head && is_tail(n - 1 - tail)) ++tail;
  int body = n - head - tail;
  if (body < stages) {
    // Too few decoder layers to give each stage one: fall back to splitting all layers evenly.
    head = 0;
    tail = 0;
    body = n;
  }
  Partition p;
  int next = 0;
  for (int s = 0; s < stages; ++s) {
    int count = body / stages + (s < body % stages ? 1 : 0);
    if (s == 0) count += head;
    if (s == stages - 1) count += tail;
    p.push_back({ml.first[next], ml.end(next + count - 1, layers) - 1});
    next += count;
  }
  PS_ASSERT(next == n, "even partition must cover every layer");
  return p;
}

bool is_partition_method_name(const std::string& method) {
  return method == "balanced" || method == "balanced-memory" || method == "even";
}

Result<Partition> partition_by_name(const Spec& spec, int stages, const std::string& method) {
  if (method == "balanced") return balanced_partition(spec, stages, PartitionCost::kTime);
  if (method == "balanced-memory")
    return balanced_partition(spec, stages, PartitionCost::kTimeThenMemory);
  if (method == "even") return even_partition(spec, stages);
  return unknown_partition(method);
}

Status unknown_partition(const std::string& method) {
  return Status::bad_input(fmt::format(
      "unknown partition '{}': expected balanced, balanced-memory, even or a Megatron layout "
      "string such as \"Et*3|(tt|)*29,m|L\"",
      method));
}

}  // namespace ps
