// op_table.cpp — see op_table.h.
#include "verify/op_table.h"

#include <fmt/format.h>

namespace ps::verify_detail {

OpTable::OpTable(const Schedule& s) {
  stages_ = s.problem.num_stages();
  mbs_ = s.problem.microbatches;
  const long long pairs = static_cast<long long>(stages_) * mbs_;
  const bool dense = stages_ > 0 && mbs_ > 0 && pairs <= kMaxStageMicrobatchPairs;
  if (dense) slot_.assign(static_cast<size_t>(pairs * kNumOpTypes), kNoOp);
  offset_.assign(s.programs.size() + 1, 0);
  ops_.reserve(s.num_ops());
  dev_.reserve(s.num_ops());
  for (size_t d = 0; d < s.programs.size(); ++d) {
    offset_[d] = static_cast<int>(ops_.size());
    for (const Action& a : s.programs[d]) {
      if (dense && in_range(a)) {
        int& sl = slot_[key(a.type, a.stage.value(), a.mb.value())];
        if (sl == kNoOp) sl = static_cast<int>(ops_.size());
      }
      ops_.push_back(&a);
      dev_.push_back(static_cast<int>(d));
    }
  }
  offset_[s.programs.size()] = static_cast<int>(ops_.size());
}

int OpTable::find(OpType t, int stage, int mb) const {
  if (slot_.empty() || stage < 0 || stage >= stages_ || mb < 0 || mb >= mbs_) return kNoOp;
  return slot_[key(t, stage, mb)];
}

int OpTable::bwd(int stage, int mb) const {
  int i = find(OpType::I, stage, mb);
  return i != kNoOp ? i : find(OpType::B, stage, mb);
}

int OpTable::partner(int id) const {
  const Action& a = op(id);
  switch (a.type) {
    case OpType::SEND_F: return find(OpType::RECV_F, a.stage.value() + 1, a.mb.value());
    case OpType::RECV_F: return find(OpType::SEND_F, a.stage.value() - 1, a.mb.value());
    case OpType::SEND_B: return find(OpType::RECV_B, a.stage.value() - 1, a.mb.value());
    case OpType::RECV_B: return find(OpType::SEND_B, a.stage.value() + 1, a.mb.value());
    default: return kNoOp;
  }
}

int OpTable::compute_of_comm(int id) const {
  const Action& a = op(id);
  switch (a.type) {
    case OpType::SEND_F:
    case OpType::RECV_F: return find(OpType::F, a.stage, a.mb);
    case OpType::SEND_B:
    case OpType::RECV_B: return bwd(a.stage, a.mb);
    default: return kNoOp;
  }
}

int OpTable::recv_for(int id) const {
  const Action& a = op(id);
  switch (a.type) {
    case OpType::F: return find(OpType::RECV_F, a.stage, a.mb);
    case OpType::I:
    case OpType::B: return find(OpType::RECV_B, a.stage, a.mb);
    default: return kNoOp;
  }
}

int OpTable::boundary_of_comm(int id) const {
  const Action& a = op(id);
  switch (a.type) {
    case OpType::SEND_F: return a.stage.value();
    case OpType::RECV_F: return a.stage.value() - 1;
    case OpType::SEND_B: return a.stage.value() - 1;
    case OpType::RECV_B: return a.stage.value();
    default: return -1;
  }
}

}  // namespace ps::verify_detail
