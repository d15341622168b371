// comm_insert.h — THE rule that turns a compute-only schedule into one with SEND/RECV ops.
// Shared by the checker (verify/) and the runtime (runtime/): one function, no copies.
//
// Rule (docs/verifier-rules.md, "comm insertion"):
//  1. Simulate the compute-only programs in the data-flow timing model (each compute op starts when
//     its device's previous compute ended and its inputs arrived; transfers take the link time).
//  2. Every cross-device edge becomes a SEND placed right after its producing compute, and a RECV
//     placed in the receiver's program at the same point of the global timeline (after the receiver's
//     computes that started before the producer ended), hence always before the consuming compute.
//     Ties are broken by (time, device, index), the same on both sides.
// Because every device's program is then a subsequence of one global order in which each SEND/RECV
// pair occupies a single position, the result is deadlock-free even under rendezvous semantics.
// If the compute-only programs have a cyclic wait (a data-flow deadlock), insertion fails and
// `cycle` names the blocked ops.
#pragma once

#include <optional>
#include <vector>

#include "ir/ids.h"
#include "ir/schedule.h"
#include "ir/status.h"

namespace ps {

// A device stopped at an op, and what it waits for: the witness of a wait that the comm insertion,
// the runtime's watchdog (runtime/executor.h) and the checker's deadlock report pass between them.
struct BlockedOp {
  DeviceId device;
  int op_index = 0;    // index in that device's program
  Action op;           // the op it is blocked on
  Action waits_for;    // the producer it needs
  std::optional<DeviceId> waits_for_device;  // where that producer runs; empty: no device runs it
};

struct CommInsertResult {
  Schedule schedule;               // with comms (valid only if ok)
  bool ok = false;
  std::vector<BlockedOp> blocked;  // when !ok: every device's blocked op (the wait cycle among them)
};

// Precondition: the schedule has no comm ops and passes the structural rules.
CommInsertResult insert_comms(const Schedule& compute_only);

}  // namespace ps
