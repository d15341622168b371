// sequential_reference.h — the gradient oracle: the same executable model run on one device, one
// microbatch at a time (F through all stages, then the backward through all stages), on the host.
//
// Guarantees: independent of any schedule, placement or backend; gradients are summed over
// microbatches in order 0..M-1 (as the executor does), so a correct pipelined host run matches it
// bit for bit and any backend within floating-point tolerance.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/exec_model.h"

namespace ps::rt {

struct ReferenceResult {
  std::map<int, std::vector<std::vector<float>>> gradients;  // stage → gradient per parameter
  std::map<int, double> losses;                              // microbatch → loss
};

// `progress`, when given, is called after each microbatch with (microbatches done, M).
Result<ReferenceResult> run_sequential_reference(const ExecModel& model,
                                                 const std::function<void(int done, int total)>& progress = {});

struct GradientComparison {
  bool ok = false;
  size_t tensors = 0;          // parameters compared
  size_t elements = 0;
  double max_abs_diff = 0;     // max |got − ref| over all elements
  double max_rel_diff = 0;     // max over tensors of max|got − ref| / max|ref|
  std::string worst_param;     // parameter with the largest relative difference: "s2.b0.w1"
  double max_loss_diff = 0;    // max |loss got − loss ref| over microbatches compared
  std::string problem;         // why !ok beyond tolerance (missing stage or loss, shape, loss)
};

// Compares a run's gradients and losses with the reference. ok iff every stage of the model has
// gradients in `got` and every tensor is within rel_tol (relative to its largest reference
// magnitude), and every microbatch of the reference has a loss in `got_losses` within rel_tol
// (relative to max(|reference loss|, 1)). A missing stage or loss fails the comparison.
GradientComparison compare_gradients(const ExecModel& model,
                                     const std::map<int, std::vector<std::vector<float>>>& got,
                                     const std::map<int, double>& got_losses, const ReferenceResult& ref,
                                     double rel_tol = 1e-5);

}  // namespace ps::rt
