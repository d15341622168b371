// number_flags.h — the one check of numeric flags that every command shares; an integer option's range
// is the library's (ir/limits.h, limits::option), the flag only its spelling. A flag's text must be a
// finite number (or an integer) within the flag's range; a refusal names the flag, the range with its
// unit and the text given ("--timeout: must be a finite number in (0, 1e+06] s, got 'nan'"); a memory
// limit is held to the library's own rule (ir/units.h), in its words. CLI11 runs the check while
// parsing, so a bad value ends any command with exit 1 before any work, and the same flag is refused
// with the same words by every command that has it.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "ir/limits.h"

namespace ps::cli::flags {

// A finite number x with lo <= x <= hi (lo < x when `open_low`), in `unit` ("GB", "s"; "" for none).
CLI::Validator number_in(double lo, double hi, const std::string& unit, bool open_low = false);
// An integer option of the library's table (ir/limits.h, limits::option): its range and its check
// (limits::in_range), the flag's text quoted in the refusal ("must be an integer in [1, 64], got '0'").
CLI::Validator option(const limits::IntOption& o);
// The check behind option() for a value given inside another flag's text (plan --fix tensor=8): the
// whole text in decimal digits ("1e9" is not one) within the option's range, else kBadInput
// "must be an integer in [lo, hi], got 'TEXT'" (the caller puts its spelling in front).
Result<long long> option_value(const limits::IntOption& o, const std::string& text);
// A time limit in seconds: a number > 0; one beyond limits::kMaxTimeLimitS (`inf` included) means no
// practical limit and is read as kMaxTimeLimitS, so no deadline derived from it overflows its clock
// (it rewrites the text: declare it with ->transform, not ->check).
CLI::Validator time_limit_s();

// The ranges of the flags several commands share.
CLI::Validator memory_limit_gb();  // --memory-limit-gb: ir/units.h check_memory_limit_gb ([0, 1e15] GB, 0 = unlimited)
CLI::Validator timeout_s();        // --timeout (the watchdog): (0, 1e6] s
CLI::Validator scale();            // --scale: (0, 64]

}  // namespace ps::cli::flags
