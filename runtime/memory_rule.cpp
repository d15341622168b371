#include "runtime/memory_rule.h"

namespace ps::rt {

StageBytes stage_slot_bytes(const ExecModel& model, int stage) {
  const size_t T = static_cast<size_t>(model.tokens), D = static_cast<size_t>(model.d_model);
  StageBytes b;
  bool shard_seen = false;  // the stage's head shards share X and the targets (each storage counted once)
  for (const BlockSpec& blk : model.stages.at(stage)) {
    const size_t H = static_cast<size_t>(blk.hidden), V = static_cast<size_t>(blk.classes);
    switch (blk.kind) {
      case BlockKind::kEmbedding:  // F: {tokens}; I: {tokens, dY}
        b.after_forward += 4 * T;
        b.after_input += 4 * (T + T * D);
        break;
      case BlockKind::kMlp:  // F: {X, H, A}; I: {X, A, dY, dH}
        b.after_forward += 4 * (T * D + 2 * T * H);
        b.after_input += 4 * (2 * T * D + 2 * T * H);
        break;
      case BlockKind::kHead:  // F: {X, targets, P}; I: {X, dlogits}
        if (blk.is_head_shard()) {  // F: {X, targets, P, weights [2T]}; I: {X, dlogits}
          if (!shard_seen) {
            b.after_forward += 4 * (T * D + T);
            b.after_input += 4 * T * D;
          }
          shard_seen = true;
          b.after_forward += 4 * (T * V + 2 * T);
          b.after_input += 4 * T * V;
          break;
        }
        b.after_forward += 4 * (T * D + T + T * V);
        b.after_input += 4 * (T * D + T * V);
        break;
    }
  }
  if (!model.stages.at(stage).empty() && model.stages.at(stage).front().kind != BlockKind::kEmbedding && stage > 0)
    b.recompute_kept = 4 * model.boundary_count(stage - 1);
  return b;
}

std::vector<RuleMemory> memory_by_rule(const Schedule& schedule, const ExecModel& model) {
  std::vector<StageBytes> sizes;
  for (int s = 0; s < model.num_stages(); ++s) sizes.push_back(stage_slot_bytes(model, s));
  std::vector<RuleMemory> out(schedule.programs.size());
  for (size_t d = 0; d < schedule.programs.size(); ++d) {
    long long held = 0;
    RuleMemory& r = out[d];
    for (const Action& a : schedule.programs[d]) {
      if (a.stage.value() >= 0 && a.stage.value() < model.num_stages()) {
        const StageBytes& sb = at(sizes, a.stage);
        const auto f = static_cast<long long>(sb.after_forward), i = static_cast<long long>(sb.after_input);
        const bool rc =
            a.stage.value() < schedule.problem.num_stages() && at(schedule.problem.stages, a.stage).recomputes();
        const auto kept = rc ? static_cast<long long>(sb.recompute_kept) : f;
        switch (a.type) {
          case OpType::F: held += kept; break;
          case OpType::R: held += rc ? f - kept : 0; break;
          case OpType::I: held += i - f; break;
          case OpType::W: held -= i; break;
          case OpType::B: held -= f; break;
          default: break;
        }
      }
      const size_t h = held > 0 ? static_cast<size_t>(held) : 0;
      r.held_bytes.push_back(h);
      if (r.peak_op_index < 0 || h > r.peak_bytes) {
        r.peak_bytes = h;
        r.peak_op_index = static_cast<int>(r.held_bytes.size()) - 1;
      }
    }
  }
  return out;
}

}  // namespace ps::rt
