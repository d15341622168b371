// partition.h — cutting the layer chain into contiguous stages: the balanced (min-max) partition
// that the synthesizer and the checker share.
//
// Layers are in topological order (ir/model.h), so every contiguous range is a convex set of the
// layer DAG; a Partition (ir/problem.h) is a list of such ranges covering all layers in order.
//
// Guarantees:
//  * balanced_partition is EXACT: no contiguous partition into the same number of stages has a
//    smaller maximum stage time (F+I+W summed over the stage's layers, one microbatch). It is found
//    by dynamic programming over the chain (O(S·n²) up to 1024 layers; above, O(S·n·log n) by prefix
//    sums and a binary search), not by a greedy cut. With PartitionCost::kTimeThenMemory, among all
//    partitions that reach that optimal time it returns one with the smallest maximum stage memory
//    (model states + one microbatch's activations), again exactly.
//  * Results are deterministic (ties are broken towards earlier cuts).
// Megatron's even partition and the partitions chosen by name live in synth/plan/partition.h.
#pragma once

#include <vector>

#include "ir/ids.h"
#include "ir/model.h"
#include "ir/problem.h"
#include "ir/status.h"

namespace ps {

enum class PartitionCost {
  kTime,           // minimize the max stage F+I+W time
  kTimeThenMemory  // same optimum; ties broken by the max stage memory
};

// F+I+W of one layer for one microbatch, ms.
double layer_time_ms(const Model& model, LayerId layer);
// The least time one layer's work for one microbatch can take, ms: F plus its least backward
// (LayerType::least_backward_ms: B when the layer gives a cheaper fused backward_ms or cannot split);
// layer_time_ms when the type gives no backward_ms. Lower bounds use it.
double layer_time_floor_ms(const Model& model, LayerId layer);
// Model states + one microbatch's activations of one layer, MB.
double layer_memory_mb(const Spec& spec, LayerId layer);
// Sum of layer_time_ms over [first, last].
double range_time_ms(const Model& model, const LayerRange& r);

Result<Partition> balanced_partition(const Spec& spec, int stages,
                                     PartitionCost cost = PartitionCost::kTime);

// Checks that `p` covers layers [0, n) contiguously with non-empty ranges.
Status check_partition(const Partition& p, int num_layers);
// Checks that `stages` is in [1, layers of the model]; `what` names the partition ("balanced").
Status check_stage_count(const Spec& spec, int stages, const char* what);

}  // namespace ps
