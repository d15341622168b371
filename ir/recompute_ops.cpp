// recompute_ops.cpp — see recompute_ops.h.
#include "ir/recompute_ops.h"

namespace ps {

namespace {

bool is_backward_of_recomputing_stage(const Action& a, const Problem& pb) {
  return (a.type == OpType::I || a.type == OpType::B) && a.stage.value() >= 0 && a.stage.value() < pb.num_stages() &&
         at(pb.stages, a.stage).recomputes();
}

}  // namespace

Schedule insert_recompute_ops(Schedule s) {
  const Problem& pb = s.problem;
  for (auto& prog : s.programs) {
    bool any = false;
    for (const Action& a : prog) any = any || is_backward_of_recomputing_stage(a, pb);
    if (!any) continue;
    std::vector<Action> out;
    out.reserve(prog.size() * 2);
    for (const Action& a : prog) {
      if (is_backward_of_recomputing_stage(a, pb)) {
        Action r = a;
        r.type = OpType::R;
        r.overlap_next = false;
        out.push_back(r);
      }
      out.push_back(a);
    }
    prog = std::move(out);
  }
  return s;
}

Schedule without_recompute_ops(const Schedule& in) {
  Schedule s = in;
  const bool times = in.predicted.size() == in.programs.size();
  for (size_t d = 0; d < s.programs.size(); ++d) {
    const bool dev_times = times && in.predicted[d].size() == in.programs[d].size();
    std::vector<Action> ops;
    std::vector<OpTime> kept;
    for (size_t i = 0; i < in.programs[d].size(); ++i) {
      if (in.programs[d][i].type == OpType::R) {
        // An R that ends an OVERLAP_F_B cell: the cell ends at the op before it.
        if (!in.programs[d][i].overlap_next && !ops.empty() && is_compute(ops.back().type)) ops.back().overlap_next = false;
        continue;
      }
      ops.push_back(in.programs[d][i]);
      if (dev_times) kept.push_back(in.predicted[d][i]);
    }
    s.programs[d] = std::move(ops);
    if (dev_times) s.predicted[d] = std::move(kept);
  }
  return s;
}

Schedule recompute_at_backward(const Schedule& in) {
  Schedule s = insert_recompute_ops(without_recompute_ops(in));
  s.predicted.clear();
  s.certificate.reset();
  return s;
}

int recompute_ops_moved(const Schedule& s) {
  int moved = 0;
  for (const auto& prog : s.programs) {
    const Action* pending = nullptr;  // the last compute op seen, when it is an R
    for (const Action& a : prog) {
      if (!is_compute(a.type)) continue;
      if (pending && !((a.type == OpType::I || a.type == OpType::B) && a.stage == pending->stage &&
                       a.mb == pending->mb))
        ++moved;
      pending = a.type == OpType::R ? &a : nullptr;
    }
    if (pending) ++moved;
  }
  return moved;
}

}  // namespace ps
