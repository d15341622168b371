// dependency.h — rule `dependency`: program order on one device must respect data flow.
//
// Checked, for every op on device d (a later op in d's program cannot feed an earlier one):
//   I/B(s,m) after F(s,m); W(s,m) after I(s,m); SEND_F(s,m) after F(s,m); SEND_B(s,m) after
//   I/B(s,m); F(s,m) after RECV_F(s,m) and I/B(s,m) after RECV_B(s,m) when those RECVs exist;
//   when stages s-1 and s share a device: F(s,m) after F(s-1,m) and I/B(s-1,m) after I/B(s,m).
// Precondition: check_structure reported nothing. Cross-device order is the deadlock analysis's job.
#pragma once

#include <vector>

#include "ir/schedule.h"
#include "verify/op_table.h"
#include "verify/report_types.h"

namespace ps::verify_detail {

void check_dependencies(const Schedule& s, const OpTable& t, std::vector<Violation>& out);

}  // namespace ps::verify_detail
