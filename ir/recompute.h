// recompute.h — activation recomputation's words: a stage's mode (what its R op recomputes) and the
// synthesizer's choice over a plan (search the modes per stage, or one mode everywhere), their names,
// and the one reader of each spelling, whose refusal names the option and what it accepts.
// docs/synth.md ("Recomputation") and docs/tuner.md give the semantics; ir/recompute_ops.h builds the
// R ops, ir/problem.h set_recompute puts a mode on each stage.
#pragma once

#include <optional>
#include <string_view>

#include "ir/status.h"

namespace ps {

// What a stage recomputes in its R op (docs/schedule-format.md): nothing, the attention cores
// (selective), or the whole forward from each layer's kept input (full).
enum class RecomputeMode : unsigned char { kNone, kSelective, kFull };
const char* recompute_mode_name(RecomputeMode m);  // "none", "selective", "full"
std::optional<RecomputeMode> parse_recompute_mode(std::string_view text);

// Recomputation in the search (docs/tuner.md, "Recomputation").
enum class RecomputeChoice : unsigned char {
  kSearch,     // per stage where memory binds: the search raises the modes of a device's stages
               // (none → selective → full) when the plan does not fit or its peak leaves no room for
               // another microbatch, and lowers them again; only a shorter plan keeps them
  kNone,       // no stage recomputes
  kSelective,  // every stage selective
  kFull,       // every stage full
};
const char* recompute_choice_name(RecomputeChoice c);  // "search", "none", "selective", "full"
std::optional<RecomputeChoice> parse_recompute_choice(std::string_view text);

// The readers of an option's text: kBadInput "<option>: expected none, selective or full, got 'x'"
// (resp. "search, none, selective or full"). `option` is the spelling the caller was given it under
// ("--recompute", "recompute").
Result<RecomputeMode> read_recompute_mode(std::string_view text, std::string_view option);
Result<RecomputeChoice> read_recompute_choice(std::string_view text, std::string_view option);

}  // namespace ps
