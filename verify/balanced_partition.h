// balanced_partition.h — the small exact partitioner the checker uses to cost a PyTorch CSV with a
// model (`pipesmith verify FILE.csv --model M.yaml`). The full partitioners live in synth/.
//
// Guarantees: returns the contiguous partition of the model's layers into `stages` non-empty ranges
// that minimizes the maximum stage time F+I+W (exact dynamic programming, O(stages · layers²));
// among optimal partitions, the one whose cuts are lexicographically smallest. Error if the model has
// fewer layers than stages.
#pragma once

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/status.h"

namespace ps {

Result<Partition> balanced_partition(const Model& model, int stages);

}  // namespace ps
