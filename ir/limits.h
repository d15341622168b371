// limits.h — the bounds pipesmith accepts on its inputs, one table for the model file, the cluster
// file, schedule files and the command line alike (docs/inputs.md, "Limits", shows the same table).
//
// Guarantees: an input within these bounds is loaded, planned, checked and written within about 2 GB of
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
inline constexpr int64_t kMaxPlanOps = 400'000;          // compute ops of a plan: 3·S·M (F, I, W)
// Actions a schedule file may list (compute and SEND/RECV, an OVERLAP_F_B cell counting its sub-actions):
// a plan within kMaxPlanOps with its transfers. Each stage boundary of each microbatch carries at most
// two transfers (activation and gradient), a SEND and a RECV each: fewer than 4·S·M comm actions beside
// the 3·S·M compute ops, so 7/3 · kMaxPlanOps. Readers count while reading and refuse the action past it.
inline constexpr int64_t kMaxScheduleActions = kMaxPlanOps * 7 / 3;  // 933,333
// Nodes (scalars, sequences, maps) a YAML file may hold: a schedule at kMaxScheduleActions with its
// predicted times (4 nodes an action: the action, and the [start, end] pair) and 20 per stage. A YAML
// node costs ~0.3 KB in memory, so this bounds the parsed document of any input file (~2 GB at worst).
inline constexpr int64_t kMaxYamlNodes = 4 * kMaxScheduleActions + 20 * kMaxStages;  // 5,733,332
// Nesting of a YAML file (every pipesmith format needs fewer than 8 levels).
inline constexpr int kMaxYamlDepth = 64;
// Values (scalars, arrays, objects) and nesting of a JSON config file (`pipesmith import hf`): a model's
// config.json holds a few hundred values and 3 levels; the bound keeps the parsed tree under ~100 MB.
inline constexpr int64_t kMaxJsonValues = 1'000'000;
inline constexpr int kMaxJsonDepth = 64;
inline constexpr int64_t kMaxInputBytes = int64_t{128} << 20;  // any file read: 128 MiB
// A time limit (synth --time-limit) beyond this is no practical limit and is read as this: 10^6 s is
// 11.6 days, and every deadline and solver budget derived from it fits its clock and counters.
inline constexpr double kMaxTimeLimitS = 1e6;
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
// any int inputs); the error names `what` (e.g. "200000 microbatches (override), 8 devices").
Status check_plan_ops(int64_t stages, int64_t microbatches, const std::string& what, const SourceLoc& loc = {});

// The largest microbatch count a plan of `stages` stages may have (>= 0).
int64_t max_microbatches_for(int64_t stages);

// "1,000,000"
std::string with_commas(int64_t v);

}  // namespace ps::limits
