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
#include <string_view>

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

// The integer options of the library's calls (synth, plan, run, profile, import) and the integer fields
// of the input files that size the problem (the cluster's devices and GPUs, a schedule file's devices,
// microbatches and GPUs), each with its range: one table that the command's flags (cli/number_flags.h),
// the Python keywords (pipesmith._tables) and the file readers check through check_option, so a quantity
// has one range and one wording under every spelling. `name`
// is the library's (the field of the options struct, Python's keyword); the CLI's flag spelling and
// "absent" are the callers' (synth's evaluations is 0 when not given, as Python's default).
struct IntOption {
  const char* call;  // "synth": the call (subcommand) it belongs to; call.name is its key in the tables
  const char* name;  // "evaluations"
  int64_t lo;        // 1
  int64_t hi;        // 1,000,000,000
};

namespace option {
inline constexpr IntOption kDevices{"spec", "devices", 1, kMaxDevices};                // every command's P override
inline constexpr IntOption kMicrobatches{"spec", "microbatches", 1, kMaxMicrobatches};  // and its M override
inline constexpr IntOption kDevicesPerNode{"cluster", "devices_per_node", 1, kMaxDevices};  // pipeline devices a node
inline constexpr IntOption kEvaluations{"synth", "evaluations", 1, 1'000'000'000};  // synth: search candidates
inline constexpr IntOption kZ3Threads{"synth", "z3_threads", 1, 64};                // synth --threads: Z3's portfolio
inline constexpr IntOption kSearchThreads{"synth", "search_threads", 1, 256};       // synth: candidates at once
inline constexpr IntOption kSeed{"synth", "seed", 0, 4'294'967'295};                // synth, run: 32-bit seeds
inline constexpr IntOption kStagesPerDevice{"synth", "stages_per_device", 1, kMaxStages};  // V, where one is given
// Z3's deterministic budget, all contexts together; 0: Z3's share of the time limit at a fixed rate
// (synth/z3/solve.h). 10^15 units is past what the longest time limit derives (1e6 s x 2e6 a second x 64).
inline constexpr IntOption kRlimit{"synth", "rlimit", 0, 1'000'000'000'000'000};
inline constexpr IntOption kMeshTop{"plan", "top", 1, 1'000};                       // plan: meshes synthesized
inline constexpr IntOption kMeshEvaluations{"plan", "evaluations", 1, 1'000'000};   // plan: candidates a mesh
inline constexpr IntOption kMeshDevices{"plan", "devices", 1, kMaxDevices};         // plan --devices: the pipeline's P
// A mesh's degrees (ir/mesh.h, ParallelInput: the cluster's gpus and the parallel: block's fields, the
// overrides of every command and of plan's --fix/--candidate): each at most the mesh's GPUs (kMaxGpus,
// ir/mesh.h: limits.cpp asserts the two agree), the global batch at most that many microbatches of each.
inline constexpr int64_t kMaxMeshGpus = 1'048'576;
inline constexpr IntOption kMeshGpus{"mesh", "gpus", 1, kMaxMeshGpus};
inline constexpr IntOption kMeshGpusPerNode{"mesh", "gpus_per_node", 1, kMaxMeshGpus};
inline constexpr IntOption kMeshTensor{"mesh", "tensor", 1, kMaxMeshGpus};
inline constexpr IntOption kMeshContext{"mesh", "context", 1, kMaxMeshGpus};
inline constexpr IntOption kMeshExpert{"mesh", "expert", 1, kMaxMeshGpus};
inline constexpr IntOption kMeshExpertTensor{"mesh", "expert_tensor", 1, kMaxMeshGpus};
inline constexpr IntOption kMeshData{"mesh", "data", 1, kMaxMeshGpus};
inline constexpr IntOption kMeshMicroBatch{"mesh", "micro_batch", 1, kMaxMeshGpus};
inline constexpr IntOption kMeshGlobalBatch{"mesh", "global_batch", 1, kMaxMeshGpus * kMaxMicrobatches};
inline constexpr IntOption kTokens{"run", "tokens", 1, 65'536};                     // run, profile: tokens an mb
// A measured microbatch's activations are held until its W, so repeats (and warmup) bound a profile's memory.
inline constexpr IntOption kProfileRepeats{"profile", "repeats", 1, 1'000};         // profile: measured microbatches
inline constexpr IntOption kProfileWarmup{"profile", "warmup", 0, 1'000};           // profile: unmeasured ones first
inline constexpr IntOption kProfileLayers{"profile", "layers", 1, kMaxLayers};      // profile --hf: layers kept
inline constexpr IntOption kProfileHidden{"profile", "hidden", 2, 65'536};          // torch: hidden size
inline constexpr IntOption kProfileSeq{"profile", "seq", 1, 65'536};                // torch: tokens a sequence
inline constexpr IntOption kProfileVocab{"profile", "vocab", 2, 1'048'576};         // torch: vocabulary
inline constexpr IntOption kProfileRows{"profile", "rows", 1, 65'536};              // torch: sequences a microbatch
inline constexpr IntOption kProfileThreads{"profile", "threads", 1, 1'024};         // torch: torch.set_num_threads
inline constexpr IntOption kProfileConcurrent{"profile", "concurrent", 1, 64};      // torch: processes at once
inline constexpr IntOption kImportSeqLength{"import", "seq_length", 1, 100'000'000};  // import: tokens a sequence
inline constexpr IntOption kImportMicroBatchSize{"import", "micro_batch_size", 1, 1'000'000};  // import: sequences
inline constexpr IntOption kImportVocabShards{"import", "vocab_shards", 1, 4'096};  // import: LM head shards
// The expected counts `verify`/`simulate` compare a schedule file with.
inline constexpr IntOption kExpectedMicrobatches{"verify", "microbatches", 1, kMaxMicrobatches};
inline constexpr IntOption kExpectedStages{"verify", "stages", 1, kMaxStages};
// Every entry, for the tables Python reads (pipesmith._tables) and the docs' table.
inline constexpr IntOption kAll[] = {
    kDevices, kMicrobatches, kDevicesPerNode, kEvaluations, kZ3Threads, kSearchThreads, kSeed, kStagesPerDevice,
    kRlimit, kMeshTop, kMeshEvaluations, kMeshDevices, kMeshGpus, kMeshGpusPerNode, kMeshTensor, kMeshContext,
    kMeshExpert, kMeshExpertTensor, kMeshData, kMeshMicroBatch, kMeshGlobalBatch, kTokens, kProfileRepeats,
    kProfileWarmup, kProfileLayers, kProfileHidden, kProfileSeq, kProfileVocab, kProfileRows, kProfileThreads,
    kProfileConcurrent, kImportSeqLength, kImportMicroBatchSize, kImportVocabShards, kExpectedMicrobatches,
    kExpectedStages};
}  // namespace option

// Whether v is within the option's range.
constexpr bool in_range(const IntOption& o, int64_t v) { return o.lo <= v && v <= o.hi; }
// "[1, 1000000000]"
std::string range_text(const IntOption& o);
// The one check of an integer option: kBadInput "<spelling> must be an integer in [lo, hi], got v" when v
// is outside; `spelling` is how the caller names it (a flag, a keyword), the option's name when empty;
// `loc` where a file gave it.
Status check_option(const IntOption& o, int64_t v, std::string_view spelling = {}, const SourceLoc& loc = {});

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
