// deadlock.h — rule `deadlock`: decides whether the comm ops of a schedule can all complete under a
// semantics, and if not, gives the witness.
//
// Decision procedure (docs/semantics.md): the logical execution of the semantics, run to its
// fixpoint with one pointer per device and a worklist of devices (each step completes at least one
// op, so it is O(total ops) and never gives up). Compute ops complete when a device reaches them
// (the dependency and comm rules make their inputs arrive through earlier RECVs). Comm ops:
//   rendezvous: a SEND and its RECV complete together, when both devices' pointers are at them.
//   grouped:    a maximal run of consecutive comm ops is a group; a device is at a group when all
//               earlier ops completed; an op of the group completes when its partner's device is at
//               the partner's group; the device passes the group when all its ops completed.
//   buffered:   a SEND completes when reached; a RECV completes once its SEND has completed.
//   posted:     SEND and RECV complete when reached (posted, as PyTorch's pipelining runtime posts
//               isend/irecv); a compute op whose input a RECV delivers completes once that RECV's
//               SEND has completed (the runtime waits for the receive there).
// The fixpoint is unique (each device is a sequential program and pairing is by tensor), so "ops
// remain" means the schedule deadlocks under that semantics. Witness: among the stuck devices, each
// waits for the device owning the partner of the op it is blocked on (for grouped: the first
// incomplete op of its group; for posted: the SEND of the blocked compute op's RECV), or for nothing
// if that partner does not exist. That graph has out-
// degree ≤ 1, so following it from any stuck device ends in a cycle or at a device waiting for a
// partner that can never come; one violation per such cycle / dead end, with a note per device.
// Precondition: structure, dependency and comm.same-device/comm.order rules reported nothing.
#pragma once

#include <vector>

#include "ir/schedule.h"
#include "verify/op_table.h"
#include "verify/report_types.h"

namespace ps::verify_detail {

struct DeadlockResult {
  bool safe = true;
  std::vector<Violation> witnesses;  // rule "deadlock", when !safe
};

DeadlockResult analyze_deadlock(const Schedule& s, const OpTable& t, Semantics sem);

}  // namespace ps::verify_detail
