// dp_ops.cpp — the data-parallel op rule of ir/dp_ops.h.
#include "ir/dp_ops.h"

#include <algorithm>

namespace ps {

bool needs_data_parallel_ops(const Problem& p) {
  return std::any_of(p.stages.begin(), p.stages.end(), [](const StageSpec& st) { return st.reduces_grad; });
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
  for (int d = 0; d < s.num_devices(); ++d) {
    const std::vector<Action>& prog = s.programs[d];
    const int n = static_cast<int>(prog.size());
    std::vector<int> last_of_stage(S, -1);  // program index of each stage's last B or W
    for (int i = 0; i < n; ++i) {
      const Action& a = prog[i];
      if ((a.type == OpType::B || a.type == OpType::W) && a.stage >= 0 && a.stage < S) last_of_stage[a.stage] = i;
    }
    std::vector<Action> next;
    next.reserve(prog.size() + S);
    for (int i = 0; i < n;) {
      // One cell: an op, or a whole OVERLAP_F_B group (the reduction never splits it).
      int j = i;
      while (j + 1 < n && prog[j].overlap_next) ++j;
      for (int k = i; k <= j; ++k) next.push_back(prog[k]);
      for (int k = i; k <= j; ++k) {
        const Action& a = prog[k];
        if (a.stage < 0 || a.stage >= S || last_of_stage[a.stage] != k) continue;
        const StageSpec& st = s.problem.stages[a.stage];
        if (!st.reduces_grad || st.device != d) continue;
        Action r;
        r.type = OpType::REDUCE_GRAD;
        r.stage = a.stage;
        next.push_back(r);
      }
      i = j + 1;
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
