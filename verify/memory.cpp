// memory.cpp — see memory.h.
#include "verify/memory.h"

namespace ps::verify_detail {

std::vector<DeviceMemory> memory_by_program(const Schedule& s) {
  const Problem& pb = s.problem;
  std::vector<DeviceMemory> out(s.num_devices());
  for (int st = 0; st < pb.num_stages(); ++st) {
    const int d = pb.stages[st].device;
    if (d >= 0 && d < s.num_devices()) out[d].model_state_mb += pb.model_state_mb(StageId{st});
  }
  for (int d = 0; d < s.num_devices(); ++d) {
    DeviceMemory& dm = out[d];
    double cur = dm.model_state_mb;
    dm.peak_mb = cur;
    const auto& prog = s.programs[d];
    for (int i = 0; i < static_cast<int>(prog.size()); ++i) {
      const Action& a = prog[i];
      if (a.stage.value() < 0 || a.stage.value() >= pb.num_stages()) continue;
      if (!is_compute(a.type) && a.type != OpType::UNSHARD && a.type != OpType::RESHARD) continue;
      const StageSpec& st = at(pb.stages, a.stage);
      double delta = 0;
      switch (a.type) {
        case OpType::UNSHARD: delta = st.fsdp ? st.unsharded_mb : 0.0; break;
        case OpType::RESHARD: delta = st.fsdp ? -st.unsharded_mb : 0.0; break;
        case OpType::F: delta = st.fwd_alloc_mb(); break;
        case OpType::R: delta = st.recompute_alloc_mb(); break;
        case OpType::I: delta = -(st.activation_mb - st.wgrad_stash_mb); break;
        case OpType::W: delta = -st.wgrad_stash_mb; break;
        case OpType::B: delta = -st.activation_mb; break;
        default: break;
      }
      cur += delta;
      dm.steps.push_back({i, cur, a.type == OpType::F || a.type == OpType::R || a.type == OpType::UNSHARD});
      if (cur > dm.peak_mb) {
        dm.peak_mb = cur;
        dm.peak_op_index = i;
      }
    }
  }
  return out;
}

}  // namespace ps::verify_detail
