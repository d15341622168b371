// partition.h — cutting the layer chain into contiguous stages.
//
// Layers are in topological order (ir/model.h), so every contiguous range is a convex set of the
// layer DAG; a Partition (ir/problem.h) is a list of such ranges covering all layers in order.
//
// Guarantees:
//  * balanced_partition is EXACT: no contiguous partition into the same number of stages has a
//    smaller maximum stage time (F+I+W summed over the stage's layers, one microbatch). It is found
//    by dynamic programming over the chain (O(S·n²)), not by a greedy cut. With
//    PartitionCost::kTimeThenMemory, among all partitions that reach that optimal time it returns
//    one with the smallest maximum stage memory (model states + one microbatch's activations),
//    again exactly.
//  * even_partition is Megatron's default: leading embedding layers stay with the first stage,
//    trailing loss/MTP layers with the last (kinds as synth/plan/megatron_layout.h maps them: symbols
//    'E', 'L', 'm' or type kinds/names embedding, head, mtp), and the remaining ("decoder")
//    layers are split evenly; when they do not divide, the first stages get one extra layer each.
//    With fewer decoder layers than stages, all layers are split evenly instead.
//  * Results are deterministic (ties are broken towards earlier cuts).
#pragma once

#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/status.h"

namespace ps {

enum class PartitionCost {
  kTime,           // minimize the max stage F+I+W time
  kTimeThenMemory  // same optimum; ties broken by the max stage memory
};

// F+I+W of one layer for one microbatch, ms.
double layer_time_ms(const Model& model, int layer);
// Model states + one microbatch's activations of one layer, MB.
double layer_memory_mb(const Spec& spec, int layer);
// Sum of layer_time_ms over [first, last].
double range_time_ms(const Model& model, const LayerRange& r);

Result<Partition> balanced_partition(const Spec& spec, int stages,
                                     PartitionCost cost = PartitionCost::kTime);
Result<Partition> even_partition(const Spec& spec, int stages);

// "balanced" | "balanced-memory" | "even" → the matching partition. (Megatron layout strings are
// read by synth/plan/megatron_layout.h because they also fix the placement.)
Result<Partition> partition_by_name(const Spec& spec, int stages, const std::string& method);
bool is_partition_method_name(const std::string& method);

// Checks that `p` covers layers [0, n) contiguously with non-empty ranges.
Status check_partition(const Partition& p, int num_layers);

}  // namespace ps
