// decode.cpp — order_to_schedule and schedule_to_dag_order.
#include "synth/decode.h"

#include <fmt/format.h>

namespace ps {

Schedule order_to_schedule(const Problem& problem, const OpDag& dag, const TimedOrder& order,
                           const std::string& generator) {
  Schedule s;
  s.problem = problem;
  s.generator = generator;
  s.programs.assign(dag.devices, {});
  s.predicted.assign(dag.devices, {});
  for (int d = 0; d < dag.devices; ++d) {
    for (int op : order.order[d]) {
      const DagOp& o = dag.ops[op];
      Action a;
      a.type = o.type;
      a.stage = o.stage;
      a.mb = o.mb;
      s.programs[d].push_back(a);
      OpTime t;
      t.start_ms = dag.to_ms(order.start[op]);
      t.end_ms = dag.to_ms(order.start[op] + o.dur);
      s.predicted[d].push_back(t);
    }
  }
  return s;
}

Result<std::vector<std::vector<int>>> schedule_to_dag_order(const OpDag& dag, const Schedule& schedule) {
  if (schedule.num_devices() != dag.devices) {
    return Status::bad_input(
        fmt::format("schedule has {} device programs, the problem has {} devices", schedule.num_devices(), dag.devices));
  }
  std::vector<std::vector<int>> order(dag.devices);
  auto fail = [&](int d, const Action& a, const std::string& why) -> Status {
    return Status::bad_input(fmt::format("device {}: op '{}' {}", d, to_string(a), why), a.loc);
  };
  for (int d = 0; d < dag.devices; ++d) {
    for (const Action& a : schedule.programs[d]) {
      if (is_comm(a.type)) continue;
      if (a.stage < 0 || a.stage >= dag.stages || a.mb < 0 || a.mb >= dag.microbatches) {
        return fail(d, a, "is out of range");
      }
      const int f = dag.f_op(a.stage, a.mb), b = dag.bwd_op(a.stage, a.mb), w = dag.w_op(a.stage, a.mb);
      switch (a.type) {
        case OpType::F: order[d].push_back(f); break;
        case OpType::I:
          if (w < 0) return fail(d, a, "is an I, but the stage runs a fused B");
          order[d].push_back(b);
          break;
        case OpType::W:
          if (w < 0) return fail(d, a, "is a W, but the stage runs a fused B");
          order[d].push_back(w);
          break;
        case OpType::B:
          order[d].push_back(b);
          if (w >= 0) order[d].push_back(w);
          break;
        default: break;
      }
    }
  }
  return order;
}

}  // namespace ps
