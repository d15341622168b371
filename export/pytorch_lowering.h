// pytorch_lowering.h — PyTorch torch.distributed.pipelining's lowering passes, in pipesmith's terms.
//
// PyTorch's `_PipelineScheduleRuntime` loads a compute-only CSV and lowers each rank's program in
// three passes before it runs it; docs/pytorch.md states the rules, and this file implements them
// on pipesmith's Action (no PyTorch code):
//
//  1. UNSHARD/RESHARD (FSDP): walking a rank's compute cells in order, before each cell the rank
//     keeps "active" the next `max_active` (3) distinct stages its remaining cells compute (an
//     OVERLAP_F_B cell contributes all its sub-actions' stages, possibly one past the window):
//     RESHARD every active stage outside that window, UNSHARD every window stage not active (in
//     window order), then the cell. After the last cell, RESHARD what is still active.
//  2. REDUCE_GRAD: counting B and W (sub-actions included) per stage, REDUCE_GRAD(s) follows the
//     cell in which stage s's count reaches M — once per stage, after its last backward.
//  3. SEND/RECV: sweeps over the ranks in ascending order; in one sweep each rank looks at its next
//     cell and, if it is ready, appends it and pops it. A cell is ready when each of its
//     sub-actions is: F(s,m) with s > 0 needs RECV_F(s,m) or F(s-1,m) already appended on its
//     rank; I/B(s,m) with s < S-1 needs RECV_B(s,m) or I/B(s+1,m) there; everything else (W,
//     markers) is always ready. Appending a cell appends, for each sub-action whose tensor crosses
//     to another rank (F → stage s+1, I/B → stage s-1), the SEND on this rank and the matching RECV
//     at the current end of the receiving rank's program. A sweep in which no rank moves means the
//     compute order has a cyclic wait: lowering fails and names each rank's next cell.
//
// Every appended SEND/RECV pair sits at one point of a single global order (the order of
// appends), so the result is deadlock-free even under rendezvous semantics; its *timing* differs
// from ir/comm_insert.h's rule, which places each RECV by simulated time rather than by sweeps in
// which every cell counts as one step.
//
// `certified_pytorch_programs` goes the other way: it writes a schedule that already has its
// SEND/RECV order (the checker's, certified) as PyTorch programs, adding REDUCE_GRAD after each
// stage's last backward (and, for FSDP, UNSHARD/RESHARD by rule 1) without moving any op.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/schedule.h"

namespace ps {

enum class MarkerKind : unsigned char { kUnshard, kReshard, kReduceGrad };
const char* marker_name(MarkerKind k);  // "UNSHARD"

// One cell of a PyTorch program: one op, the sub-actions of an OVERLAP_F_B, or a marker.
struct PtCell {
  std::vector<Action> ops;            // empty for a marker
  std::optional<MarkerKind> marker;
  int marker_stage = -1;

  bool is_compute() const { return !ops.empty() && ps::is_compute(ops.front().type); }
};
using PtProgram = std::vector<PtCell>;

// "3F1", "(0F1;1B0)OVERLAP_F_B", "2REDUCE_GRAD".
std::string to_string(const PtCell& c);
// One row per rank, cells joined by ',' (no idle cells), '\n' after each row.
std::string format_pt_csv(const std::vector<PtProgram>& programs);

// The cells of a program: consecutive compute ops chained by `overlap_next` form one cell; every
// other op is a cell of its own.
PtProgram cells_of(const std::vector<Action>& program);

// Rule 1 on a compute-only program (cells without markers).
PtProgram add_unshard_reshard(const PtProgram& compute_only, int max_active = 3);
// Rule 2.
PtProgram add_reduce_grad(const PtProgram& program, int microbatches);

struct PtLowering {
  bool ok = false;
  std::vector<PtProgram> programs;   // with SEND/RECV (and the markers given)
  std::vector<std::string> blocked;  // when !ok: "rank 1 waits at '1F0'", one per stuck rank
};
// Rule 3. `stage_rank[s]` is stage s's rank.
PtLowering add_send_recv(const std::vector<PtProgram>& programs, const std::vector<int>& stage_rank);

// All three rules, as `_load_csv(format="compute_only")` runs them, on a compute-only schedule.
PtLowering pytorch_lower(const Schedule& compute_only);

// The ops of lowered programs with the markers dropped (what the checker and simulator read).
std::vector<std::vector<Action>> ops_of(const std::vector<PtProgram>& programs);

// A schedule with SEND/RECV (its order kept) as PyTorch programs: REDUCE_GRAD after each stage's
// last B or W and the SEND/RECV ops that directly follow it; with `fsdp`, UNSHARD/RESHARD by rule 1
// right before the compute cells and at the end. An OVERLAP_F_B pair split by a comm op is written
// as its two sub-actions.
std::vector<PtProgram> certified_pytorch_programs(const Schedule& with_comms, bool fsdp);

}  // namespace ps
