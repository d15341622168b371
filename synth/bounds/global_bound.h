// global_bound.h — lower bounds on the iteration time over ALL partitions and placements.
//
// `pipesmith bound` answers "how fast could any schedule of this model on P devices with M
// microbatches possibly be?" before anything is partitioned. Each term is a valid lower bound for
// every contiguous partition of the layer chain, every stage → device placement and every order
// (comm times only ever add, so they are taken as zero, and so does the cluster's op_overhead_ms).
// With c_l = F_l + I_l + W_l of layer l, I_l its input gradient and W_0 layer 0's weight gradient
// (a type with a fused backward_ms B_l: c_l = F_l + min(B_l, I_l + W_l), I_l → min(I_l, B_l),
// W_0 → min(W_0, B_0 − min(I_0, B_0)), I_0 + W_0 → min(B_0, I_0 + W_0); B_l alone where the type
// cannot split, since a schedule may run either backward),
// a_l = F_0 + … + F_{l−1} (the earliest time any op of layer l can start), L layers and
// Q = min(P, L) devices that can hold work:
//   total_work      M·Σ c_l / Q                       the work has to be shared by Q devices
//   heaviest_layer  max_l a_l + M·c_l                 a layer is never split across devices and
//                                                     none of its ops starts before a_l
//   critical_path   max( (M−1)·F_0 + ΣF + ΣI + W_0,   the last F_0 to run starts after the other
//                        ΣF + Σ_{l≥1} I_l + M·(I_0+W_0) )  M−1, then its microbatch goes forward
//                                                     through every layer and back; and no I_0
//                                                     can start before one full forward and the
//                                                     input-gradients of layers ≥ 1
//   ramp            (M·Σ c_l + Σ_{j=1}^{Q−1} a_j) / Q before a_j at most j layers (so j devices)
//                                                     can have work: the Q devices lose at least
//                                                     Σ a_j of capacity
// The bound is their maximum. docs/baselines.md repeats the derivations.
//
// Memory: every layer's model states (params_m · bytes_per_param) live on one device for the whole
// iteration, so with a per-device limit the devices must hold Σ states together (at least
// ceil(Σ states / limit) devices) and each layer's states plus one microbatch's activations must
// fit one device. When even P devices cannot, the problem is infeasible.
#pragma once

#include <string>

#include "ir/model.h"
#include "ir/status.h"

namespace ps {

struct GlobalBound {
  int devices = 0;
  int microbatches = 0;
  double total_work_ms = 0;
  double heaviest_layer_ms = 0;  // max_l a_l + M·c_l (the "single layer" term)
  int heaviest_layer = -1;       // the layer l reaching it
  double critical_path_ms = 0;
  double ramp_ms = 0;
  double bound_ms = 0;  // max of the terms above
  std::string binding;  // name of the term that gives bound_ms: "total_work", ...

  double model_state_gb = 0;       // Σ states over all layers
  double memory_limit_gb = 0;      // per device; 0 = unlimited
  int min_devices_for_memory = 0;  // ceil(Σ states / limit); 0 when unlimited
  bool memory_feasible = true;
  std::string memory_reason;  // why it is infeasible (empty when feasible)
};

// Never fails on a validated Spec with devices, microbatches >= 1; returns kBadInput otherwise.
// memory_limit_gb = 0 means unlimited. Infeasibility is reported in the result, not as an error,
// so that callers can print the time bound too.
Result<GlobalBound> global_lower_bound(const Spec& spec, int devices, int microbatches,
                                       double memory_limit_gb);

}  // namespace ps
