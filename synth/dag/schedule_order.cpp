// schedule_order.cpp — order_to_schedule and schedule_to_dag_order.
#include "synth/dag/schedule_order.h"

#include <fmt/format.h>

#include <algorithm>

namespace ps {

Schedule order_to_schedule(const Problem& problem, const OpDag& dag, const TimedOrder& order,
                           const std::string& generator) {
  Schedule s;
  s.problem = problem;
  s.generator = generator;
  s.programs.assign(dag.devices, {});
  s.predicted.assign(dag.devices, {});
  std::vector<int> topo_pos(dag.num_ops(), 0);
  for (size_t k = 0; k < dag.topo.size(); ++k) topo_pos[dag.topo[k]] = static_cast<int>(k);
  const bool with_comms = static_cast<int>(order.order.size()) > dag.devices;
  for (int d = 0; d < dag.devices; ++d) {
    // The device's computes and its comm stream's transfers, merged by start time. At one start
    // time: ops that take no time first (a producer before its SEND), then transfers, then computes,
    // each by topological position. A SEND issued when its producer ends thus sits right after the
    // producer, not after the compute that starts at that moment: a runtime that posts its comm ops
    // as its program reaches them (PyTorch's) posts it then, as the two-stream model times it.
    std::vector<int> ops = order.order[d];
    if (with_comms) ops.insert(ops.end(), order.order[dag.devices + d].begin(), order.order[dag.devices + d].end());
    auto tie_class = [&](int op) { return dag.ops[op].dur == 0 ? 0 : dag.ops[op].is_transfer() ? 1 : 2; };
    std::stable_sort(ops.begin(), ops.end(), [&](int a, int b) {
      if (order.start[a] != order.start[b]) return order.start[a] < order.start[b];
      if (tie_class(a) != tie_class(b)) return tie_class(a) < tie_class(b);
      return topo_pos[a] < topo_pos[b];
    });
    for (int op : ops) {
      const DagOp& o = dag.ops[op];
      Action a;
      a.mb = MicrobatchId{o.mb};
      a.stage = StageId{o.stage};
      a.type = o.type;
      if (o.is_transfer() && o.peer == d) {  // the receiving side
        a.type = o.type == OpType::SEND_F ? OpType::RECV_F : OpType::RECV_B;
        a.stage = StageId{o.type == OpType::SEND_F ? o.stage + 1 : o.stage - 1};
      }
      s.programs[d].push_back(a);
      s.predicted[d].push_back(OpTime{dag.to_ms(order.start[op]), dag.to_ms(order.start[op] + o.dur)});
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
      if (!is_compute(a.type)) continue;  // SEND/RECV and the data-parallel step are placed by rule
      const int st = a.stage.value(), m = a.mb.value();
      if (st < 0 || st >= dag.stages || m < 0 || m >= dag.microbatches) {
        return fail(d, a, "is out of range");
      }
      const int f = dag.f_op(st, m), b = dag.bwd_op(st, m), w = dag.w_op(st, m);
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
        case OpType::R: {
          const int r = dag.r_op(st, m);
          if (r < 0) return fail(d, a, "is a recomputation, but the stage does not recompute");
          order[d].push_back(r);
          break;
        }
        default: break;
      }
    }
  }
  return order;
}

}  // namespace ps
