// decode.h — between op-DAG orders and compute-only Schedules.
//
// Guarantees:
//  * order_to_schedule writes each device's program in the order's sequence (F, I, W, B actions of
//    the DAG's ops), the Problem copied in, and predicted start/end times in ms from the order's
//    earliest-start timing. No comm ops: ir/comm_insert.h adds them.
//  * schedule_to_dag_order maps a compute-only schedule's programs onto the DAG's op ids. A fused
//    B(s,m) on a stage whose DAG splits the backward becomes I(s,m) immediately followed by W(s,m):
//    same device time, same memory at every later op. Comm ops are skipped. Anything that does not
//    match the DAG (a missing or extra op, an I/W where the DAG has B) is an error naming the op.
#pragma once

#include <string>
#include <vector>

#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/status.h"
#include "synth/op_dag.h"

namespace ps {

Schedule order_to_schedule(const Problem& problem, const OpDag& dag, const TimedOrder& order,
                           const std::string& generator);

Result<std::vector<std::vector<int>>> schedule_to_dag_order(const OpDag& dag, const Schedule& schedule);

}  // namespace ps
