// comm_rules.h — the comm rules for schedules that carry SEND/RECV ops: comm.same-device,
// comm.unmatched-send, comm.unmatched-recv, comm.missing, comm.order.
//
// Pairing: SEND_F(s,m) ↔ RECV_F(s+1,m) and SEND_B(s,m) ↔ RECV_B(s-1,m) (a tensor's identity).
// comm.order: for every ordered device pair (a, b), the SENDs on a whose RECV is on b, taken in a's
// program order, must pair with the RECVs on b from a taken in b's program order — NCCL matches
// point-to-point ops by order per peer, not by tag. One violation per device pair (at the first
// out-of-order position; a note counts the others). Ops without a partner are left out of the
// order comparison (they are reported as unmatched).
// Precondition: check_structure reported nothing.
#pragma once

#include <vector>

#include "ir/schedule.h"
#include "verify/op_table.h"
#include "verify/report_types.h"

namespace ps::verify_detail {

struct CommRuleSummary {
  bool order_ok = true;        // comm.order held (deadlock analysis pairs ops by tensor only then)
  bool same_device_ok = true;  // no comm.same-device violation
};

CommRuleSummary check_comm_rules(const Schedule& s, const OpTable& t, std::vector<Violation>& out);

}  // namespace ps::verify_detail
