// limits.h — the bounds pipesmith accepts on its inputs, one table for the model file, the cluster
// file, schedule files and the command line alike (docs/inputs.md, "Limits", shows the same table).
//
// Guarantees: an input within these bounds is loaded, planned, checked and written within a few GB of
// memory (docs/inputs.md gives the measurements) and every count derived from them fits in 64 bits;
// an input beyond them is refused before any large allocation, with the flag or file:line:col that
// named it.
#pragma once

#include <cstdint>
#include <string>

#include "ir/status.h"

namespace ps::limits {

inline constexpr int64_t kMaxDevices = 100'000;          // P (a device needs a stage, a stage a layer)
inline constexpr int64_t kMaxMicrobatches = 1'000'000;   // M
inline constexpr int64_t kMaxLayers = 100'000;           // layers of a model
inline constexpr int64_t kMaxStages = 100'000;           // S = V·P (a stage holds at least one layer)
inline constexpr int64_t kMaxPlanOps = 1'000'000;        // compute ops of a plan: 3·S·M (F, I, W)
inline constexpr int64_t kMaxInputBytes = int64_t{128} << 20;  // any file read: 128 MiB
// Any sum over an iteration: F+I+W time and transfer time (ms), activation and model-state memory (MB),
// for the model's layers and for a schedule's stages. 1e15 ms is 31,000 years; the bound keeps every
// derived figure (per stage, per device, per iteration; bounds; the simulated makespan) finite.
inline constexpr double kMaxIterationTotal = 1e15;

// Which of an iteration's running totals is past kMaxIterationTotal (or not a number), in words for
// a message; nullptr when all are within it.
inline const char* total_over_limit(double time_ms, double act_mb, double state_mb, double comm_ms) {
  return !(time_ms <= kMaxIterationTotal)    ? "F+I+W time (ms)"
         : !(act_mb <= kMaxIterationTotal)   ? "activation memory (MB)"
         : !(state_mb <= kMaxIterationTotal) ? "model-state memory (MB)"
         : !(comm_ms <= kMaxIterationTotal)  ? "transfer time (ms)"
                                             : nullptr;
}

// A plan of `stages` stages and `microbatches` microbatches within kMaxPlanOps (64-bit, no overflow for
// any int inputs); the error names `what` (e.g. "--microbatches 200000 with 8 stages").
Status check_plan_ops(int64_t stages, int64_t microbatches, const std::string& what, const SourceLoc& loc = {});

// The largest microbatch count a plan of `stages` stages may have (>= 0).
int64_t max_microbatches_for(int64_t stages);

// "1,000,000"
std::string with_commas(int64_t v);

}  // namespace ps::limits
