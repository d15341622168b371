// window.h — Z3 as the neighbourhood solver of a large-neighbourhood search: improve an order
// window by window where the whole encoding is too large to load.
//
// A window is the set W of ops whose start, in the incumbent, lies in a time interval [t0, t1).
// Every op before it (start < t0) keeps its time; every op after it (start >= t1) keeps its place
// in its resources' lists. Along a resource the incumbent's starts never decrease and every edge
// goes forward in time, so W is a contiguous slice of every resource's list and no edge runs from
// a later class to an earlier one. With the rest fixed, the makespan of any order of W is exactly
//
//     max(L0, max over i in W of end(i) + Q(i))
//
// where L0 is the longest path of the incumbent's order graph (DAG edges and resource lists) that
// avoids W, and Q(i) the longest path from the end of i through the ops after the window (its
// successors there, and the first later op of each of its resources). Ops of W get release times
// from the fixed earlier ops. The window's problem is therefore an op DAG of its own — W's ops and
// the edges among them, heads = releases, tails = Q, each device's cap less the memory the earlier
// ops leave live — and encode.h encodes it as it encodes a whole plan (same order literals,
// difference atoms, memory constraints). Z3 is asked for C <= V - 1, where V is the window's value
// in the incumbent; a model is spliced back into the whole order and re-timed with evaluate_order
// (edges and caps): only a strictly shorter, valid order replaces the incumbent.
//
// Windows are sized by the encoding's load cost (solve.h's rate), slide by half a window from
// the start of the schedule, and are skipped where the window cannot shorten the makespan
// (L0 equals it). Passes repeat while one improves; after a pass without improvement the windows
// double (as long as they load in their share). Every window's encoding can be written as
// SMT-LIB2 (C <= target included) and replayed with the `z3` binary.
//
// Guarantees:
//  * The result is a valid order of the DAG (edges, memory caps), never longer than the incumbent.
//  * Proves no bound: an UNSAT window is optimal only with the rest of the order fixed.
//  * Deterministic for a fixed seed and rlimit budget while the wall-clock cap is not what stops it
//    (checks get rlimit shares; a round's results are taken in context order).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "synth/dag/op_dag.h"
#include "synth/z3/solve.h"

namespace ps {

// The most window encodings one search writes for --dump-smt2.
inline constexpr int kMaxWindowDumps = 200;

struct WindowOptions {
  double time_limit_s = 10;   // wall-clock cap
  uint64_t rlimit = 0;        // Z3 budget, all contexts together; 0 = time × rlimit_per_second() × contexts
  unsigned seed = 0;
  int contexts = 1;           // windows solved side by side (one thread and one Z3 context each)
  double max_load_s = 0.25;   // the largest window: its encoding loads in this many seconds (solve.h's rate)
  bool memory = true;         // encode the caps
  bool warm_start = false;    // seed every window with the incumbent as Z3's initial values (encode.h)
  // Write each window's encoding (with its target C <= V - 1) to window_dump_path(dump_smt2, N),
  // N = 1, 2, ... in the order the windows are checked, at most max_dumps files.
  std::string dump_smt2;
  int max_dumps = kMaxWindowDumps;
  std::function<void(const SolveProgress&)> progress;  // phase "window": each better incumbent
  const std::atomic<bool>* interrupt = nullptr;
};

struct WindowResult {
  TimedOrder best;
  int windows = 0;           // windows checked
  int improving_windows = 0; // windows whose order was accepted
  int checks = 0;
  uint64_t rlimit_used = 0;
  double seconds = 0;
  int smt2_written = 0;
  std::string status;        // "time limit", "budget exhausted", "no window improves", "stopped: interrupted"
};

// Where window N's encoding goes for --dump-smt2 PATH: PATH less a ".smt2" suffix, then ".wN.smt2".
std::string window_dump_path(const std::string& dump_smt2, int n);
// Every name a search may write for --dump-smt2 PATH (windows 1 .. kMaxWindowDumps), for checking
// them against the inputs before any work.
std::vector<std::string> window_dump_paths(const std::string& dump_smt2);

Result<WindowResult> window_search(const OpDag& dag, const TimedOrder& incumbent, const WindowOptions& options);

}  // namespace ps
