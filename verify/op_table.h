// op_table.h — flat addressing of a schedule's ops for the checker's analyses.
//
// Guarantees: every op has a flat id (device offset + program index); `find` returns the flat id of
// the first occurrence of (type, stage, microbatch) in device-then-index order, or kNoOp; lookups are
// O(1) (a dense table over type × stage × microbatch). Ops whose stage or microbatch is out of range
// get a flat id but are not in the lookup table (structure.index reports them).
#pragma once

#include <string>
#include <vector>

#include "ir/schedule.h"

namespace ps::verify_detail {

inline constexpr int kNoOp = -1;
// Largest stages × microbatches the dense table accepts (structure.index reports larger problems).
inline constexpr long long kMaxStageMicrobatchPairs = 1LL << 22;

class OpTable {
 public:
  explicit OpTable(const Schedule& s);

  int devices() const { return static_cast<int>(offset_.size()) - 1; }
  int stages() const { return stages_; }
  int microbatches() const { return mbs_; }
  int size() const { return static_cast<int>(ops_.size()); }
  bool in_range(const Action& a) const {
    return a.stage.value() >= 0 && a.stage.value() < stages_ && a.mb.value() >= 0 && a.mb.value() < mbs_;
  }

  const Action& op(int id) const { return *ops_[id]; }
  int device(int id) const { return dev_[id]; }
  int index(int id) const { return id - offset_[dev_[id]]; }
  int id(int device, int index) const { return offset_[device] + index; }
  int begin(int device) const { return offset_[device]; }
  int end(int device) const { return offset_[device + 1]; }

  int find(OpType t, int stage, int mb) const;
  int find(OpType t, StageId stage, MicrobatchId mb) const { return find(t, stage.value(), mb.value()); }
  // The backward op of (stage, mb) that produces the input gradient: I if present, else B.
  int bwd(int stage, int mb) const;
  int bwd(StageId stage, MicrobatchId mb) const { return bwd(stage.value(), mb.value()); }
  // The other side of a SEND/RECV (the op that must exist for it to complete), or kNoOp.
  int partner(int id) const;
  // For a SEND: the compute producing its tensor; for a RECV: the compute consuming it.
  int compute_of_comm(int id) const;
  // For a compute: the RECV delivering its cross-device input, or kNoOp.
  int recv_for(int id) const;
  // The stage boundary b (between b and b+1) a comm op's tensor crosses; -1 if none.
  int boundary_of_comm(int id) const;

 private:
  long long key(OpType t, int stage, int mb) const {
    return (static_cast<long long>(stage) * mbs_ + mb) * kNumOpTypes + static_cast<int>(t);
  }
  int stages_ = 0;
  int mbs_ = 0;
  std::vector<int> offset_;
  std::vector<int> dev_;
  std::vector<const Action*> ops_;
  std::vector<int> slot_;  // key → first flat id or kNoOp
};

}  // namespace ps::verify_detail
