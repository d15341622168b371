// mem_bound.h — lower bounds on the makespan of an op DAG that see the memory cap.
//
// Guarantees: every figure returned is a valid lower bound on the makespan of any schedule of the
// DAG (all its edges, including the memory edges of op_dag.h, which the cap implies under microbatch
// symmetry). The memory cap enters through those edges: an F that must wait for an earlier
// microbatch's backward gets a late head, and the device's forced idle time shows up in
//  * the critical path (longest path through data, symmetry and memory edges), and
//  * the single-resource relaxation: device d (or its comm stream) as one machine with release
//    times (head), processing times and delivery times (tail), preemption allowed — Jackson's
//    preemptive schedule solves that relaxation exactly in O(n log n).
#pragma once

#include <cstdint>
#include <string>

#include "synth/op_dag.h"

namespace ps {

struct DagBound {
  int64_t units = 0;   // the bound, time units
  std::string reason;  // "critical path" or "device 3 (single-resource relaxation ...)"
  int device = -1;     // the resource whose relaxation gives the bound, -1 for the critical path
};

// Jackson's preemptive bound for one resource (a device, or P + d for device d's comm stream).
int64_t device_relaxation_bound(const OpDag& dag, int resource);

// max(critical path, every device's relaxation).
DagBound dag_lower_bound(const OpDag& dag);

}  // namespace ps
