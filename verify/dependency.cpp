// dependency.cpp — see dependency.h.
#include "verify/dependency.h"

#include <fmt/format.h>

#include "verify/diag.h"
#include "verify/rules.h"

namespace ps::verify_detail {

void check_dependencies(const Schedule& s, const OpTable& t, std::vector<Violation>& out) {
  const Problem& pb = s.problem;
  const int S = pb.num_stages();
  for (int d = 0; d < s.num_devices(); ++d) {
    const auto& prog = s.programs[d];
    for (int i = 0; i < static_cast<int>(prog.size()); ++i) {
      const Action& a = prog[i];
      // `need` must come before op i on this device; `why` explains the data flow.
      auto require_before = [&](int need, const char* why) {
        if (need == kNoOp || t.device(need) != d || t.index(need) < i) return;
        out.push_back(op_violation(
            rules::kDependency, d, i, a,
            fmt::format("'{}' runs before '{}', {}", to_string(a), to_string(t.op(need)), why),
            {fmt::format("it needs {}, which comes later in the program",
                         describe_op_on(d, t.index(need), t.op(need)))}));
      };
      const int st = a.stage.value();
      const int m = a.mb.value();
      if (is_compute(a.type) && st >= 0 && st < S && pb.stages[st].fsdp)
        require_before(t.find(OpType::UNSHARD, st, 0), "which gathers the weights it computes with (FSDP)");
      switch (a.type) {
        case OpType::F:
          if (st > 0 && pb.device_of(StageId{st - 1}) == d)
            require_before(t.find(OpType::F, st - 1, m), "which produces its input (same device)");
          require_before(t.find(OpType::RECV_F, st, m), "the RECV that delivers its input");
          break;
        case OpType::R:
          require_before(t.find(OpType::F, st, m), "the forward it recomputes");
          break;
        case OpType::I:
        case OpType::B:
          require_before(t.find(OpType::F, st, m), "its forward");
          require_before(t.find(OpType::R, st, m), "the recomputation of the activations it reads");
          if (st + 1 < S && pb.device_of(StageId{st + 1}) == d)
            require_before(t.bwd(st + 1, m), "which produces its output gradient (same device)");
          require_before(t.find(OpType::RECV_B, st, m), "the RECV that delivers its output gradient");
          break;
        case OpType::W:
          require_before(t.find(OpType::I, st, m), "which computes the gradient it needs");
          break;
        case OpType::SEND_F:
          require_before(t.find(OpType::F, st, m), "the forward that produces what it sends");
          break;
        case OpType::SEND_B:
          require_before(t.bwd(st, m), "the backward that produces what it sends");
          break;
        case OpType::REDUCE_GRAD:
        case OpType::RESHARD: {
          // The stage's gradients are complete only after its last backward (B or W) has run.
          int last = kNoOp;
          for (int mb = 0; mb < pb.microbatches; ++mb) {
            int w = t.find(OpType::W, st, mb);
            if (w == kNoOp) w = t.find(OpType::B, st, mb);
            if (w != kNoOp && t.device(w) == d && (last == kNoOp || t.index(w) > t.index(last))) last = w;
          }
          require_before(last, "the last backward of its stage (the stage's gradients are complete only after "
                               "every B or W of it)");
          if (a.type == OpType::RESHARD)
            require_before(t.find(OpType::REDUCE_GRAD, st, 0), "which reduces the gradients RESHARD frees");
          break;
        }
        default:
          break;
      }
    }
  }
}

}  // namespace ps::verify_detail
