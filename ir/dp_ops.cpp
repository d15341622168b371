// dp_ops.cpp — the data-parallel op rule of ir/dp_ops.h.
#include "ir/dp_ops.h"

#include <algorithm>

namespace ps {

bool needs_data_parallel_ops(const Problem& p) {
  return std::any_of(p.stages.begin(), p.stages.end(), [](const StageSpec& st) { return st.reduces_grad || st.fsdp; });
}

bool has_data_parallel_ops(const Schedule& s) {
  for (const auto& prog : s.programs)
    for (const Action& a : prog)
      if (is_data_parallel(a.type)) return true;
  return false;
}

Schedule with_data_parallel_ops(const Schedule& s) {
  Schedule out = s;
  out.predicted.clear();  // the programs change shape
  const int S = s.problem.num_stages();
  auto op = [](OpType t, int stage) {
    Action a;
    a.type = t;
    a.stage = StageId{stage};
    return a;
  };
  for (int d = 0; d < s.num_devices(); ++d) {
    const std::vector<Action>& prog = s.programs[d];
    const int n = static_cast<int>(prog.size());
    // Cells: an op, or a whole OVERLAP_F_B group (data-parallel ops never split one).
    std::vector<std::pair<int, int>> cells;
    for (int i = 0; i < n;) {
      int j = i;
      while (j + 1 < n && prog[j].overlap_next) ++j;
      cells.push_back({i, j});
      i = j + 1;
    }
    const int C = static_cast<int>(cells.size());
    std::vector<int> first_cell(S, -1), last_cell(S, -1);  // per stage: its first compute cell, last backward's cell
    for (int k = 0; k < C; ++k)
      for (int i = cells[k].first; i <= cells[k].second; ++i) {
        const Action& a = prog[i];
        const int st = a.stage.value();
        if (st < 0 || st >= S || !is_compute(a.type)) continue;
        if (first_cell[st] < 0) first_cell[st] = k;
        if (a.type == OpType::B || a.type == OpType::W) last_cell[st] = k;
      }
    std::vector<std::vector<int>> unshard_before(C), after(C);
    for (int k = 0; k < C; ++k)  // stages in the order their first cells run
      for (int i = cells[k].first; i <= cells[k].second; ++i) {
        const int st = prog[i].stage.value();
        if (st < 0 || st >= S || first_cell[st] != k || s.problem.stages[st].device != d) continue;
        if (!s.problem.stages[st].fsdp) continue;
        std::vector<int>& at = unshard_before[std::max(0, k - 1)];  // gathered one cell ahead
        if (std::find(at.begin(), at.end(), st) == at.end()) at.push_back(st);
      }
    for (int k = 0; k < C; ++k)
      for (int i = cells[k].first; i <= cells[k].second; ++i) {
        const Action& a = prog[i];
        const int st = a.stage.value();
        if (st < 0 || st >= S || last_cell[st] != k || (a.type != OpType::B && a.type != OpType::W))
          continue;
        if (s.problem.stages[st].device == d) after[k].push_back(st);
      }
    std::vector<Action> next;
    next.reserve(prog.size() + 3 * S);
    for (int k = 0; k < C; ++k) {
      for (int st : unshard_before[k]) next.push_back(op(OpType::UNSHARD, st));
      for (int i = cells[k].first; i <= cells[k].second; ++i) next.push_back(prog[i]);
      for (int st : after[k]) {
        if (s.problem.stages[st].reduces_grad) next.push_back(op(OpType::REDUCE_GRAD, st));
        if (s.problem.stages[st].fsdp) next.push_back(op(OpType::RESHARD, st));
      }
    }
    out.programs[d] = std::move(next);
  }
  return out;
}

Schedule without_data_parallel_ops(const Schedule& s) {
  Schedule out = s;
  for (auto& prog : out.programs)
    prog.erase(std::remove_if(prog.begin(), prog.end(), [](const Action& a) { return is_data_parallel(a.type); }),
               prog.end());
  out.predicted.clear();
  return out;
}

}  // namespace ps
