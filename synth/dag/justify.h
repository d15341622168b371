// justify.h — double justification: a cheap improvement step for a list schedule's order.
//
// Given a timed order on an op DAG, the right pass moves every op, latest finish first, as late as
// it can go without passing the makespan, its successors (plus edge delays) or the ops already moved
// on its resources — into any gap, so ops may overtake each other. The left pass then moves every
// op, earliest right-pass start first, as early as its predecessors and the ops already moved allow,
// again into gaps. Neither pass makes the schedule longer, and a gap closed on one device often
// shortens a path that several devices wait on (Valls, Ballestín and Quintanilla 2005 measured it
// on list schedules of resource-constrained projects).
// Guarantees: the result is an order of the same DAG that evaluate_order() accepts with every edge
// and every device's memory cap, and it is no longer than the input (the input comes back when no
// round helps). Deterministic.
#pragma once

#include "synth/dag/op_dag.h"

namespace ps {

// At most `rounds` right-left rounds; stops at the first round that does not shorten the makespan.
TimedOrder justify(const OpDag& dag, const TimedOrder& order, int rounds = 4);

// Replaces `order` by its justification when that is shorter and says so.
bool justify_in_place(const OpDag& dag, TimedOrder& order, int rounds = 4);

}  // namespace ps
