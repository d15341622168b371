// units.h — the units of pipesmith's quantities and the one check of a memory limit.
//
// Memory is in decimal units throughout (docs/inputs.md): 1 GB = 1000 MB = 10^9 bytes. Limits and
// device sizes are given in GB (the inputs, --memory-limit-gb); model states and activations are
// counted in MB. A memory limit of 0 means unlimited.
#pragma once

#include <string>
#include <string_view>

#include "ir/status.h"

namespace ps {

inline constexpr double kMbPerGb = 1000.0;
constexpr double gb_to_mb(double gb) { return gb * kMbPerGb; }
constexpr double mb_to_gb(double mb) { return mb / kMbPerGb; }

// Whether a device's peak of `peak_mb` fits a limit of `limit_gb` (0 = unlimited): the one comparison.
// Peaks are sums of MB figures in floating point, so a peak within a relative 10^-9 of the limit (16
// bytes of 16 GB) fits: a program exactly at the limit is not refused for the rounding of its sums.
constexpr bool fits_memory_limit(double peak_mb, double limit_gb) {
  return limit_gb <= 0 || peak_mb <= gb_to_mb(limit_gb) * (1 + 1e-9);
}

// A memory limit per device, in GB: a number in [0, limits::kMaxIterationTotal] (0 = unlimited; NaN and
// infinities refused). `what` names where it came from ("--memory-limit-gb", "cluster: memory_gb", ...);
// kBadInput "<what> must be a finite number of GB in [0, 1e+15] (0 = unlimited), got <gb>" otherwise.
// The one validation of a memory limit: the readers, the command's flags, the bindings and the
// library entry points that take one all call it.
Status check_memory_limit_gb(double gb, std::string_view what);
// Its condition and its words, for a caller that reports the value as it was written (the command's
// flags quote the text given: "--memory-limit-gb: must be <memory_limit_rule()>, got '1e400'").
bool memory_limit_ok(double gb);
std::string memory_limit_rule();  // "a finite number of GB in [0, 1e+15] (0 = unlimited)"

// A time limit in seconds (synth, plan): a number > 0; one beyond limits::kMaxTimeLimitS (`inf`
// included) is no practical limit and is read as that, so no deadline derived from it overflows its
// clock. The one check: kBadInput "<what> must be <time_limit_rule()>, got v", else the limit as read.
Result<double> read_time_limit_s(double s, std::string_view what);
bool time_limit_ok(double s);   // > 0 (NaN is not)
std::string time_limit_rule();  // "a number of seconds > 0 ('inf' for no limit)"

}  // namespace ps
