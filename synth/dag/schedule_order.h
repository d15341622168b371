// schedule_order.h — between op-DAG orders and compute-only Schedules.
//
// Guarantees:
//  * order_to_schedule writes each device's program: its compute ops in the order's sequence and,
//    when the order has comm streams, its SEND/RECV ops in its stream's sequence, merged by start
//    time (a SEND after its producer, a RECV before its consumer). Every program is then a
//    subsequence of one global time order in which each SEND/RECV pair sits at one point, so it is
//    deadlock-free under rendezvous semantics, and the checker's simulation reproduces the order's
//    earliest-start timing. Predicted start/end times in ms are written alongside. Without comm
//    streams the schedule is compute-only (ir/comm_insert.h adds the comms).
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
#include "synth/dag/op_dag.h"

namespace ps {

Schedule order_to_schedule(const Problem& problem, const OpDag& dag, const TimedOrder& order,
                           const std::string& generator);

Result<std::vector<std::vector<int>>> schedule_to_dag_order(const OpDag& dag, const Schedule& schedule);

}  // namespace ps
