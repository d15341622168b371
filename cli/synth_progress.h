// synth_progress.h — the progress lines `pipesmith synth` prints for synthesize()'s reports
// (synth/synthesize.h), e.g. "[bound] 59.000 ms: destructive bound ... ; incumbent 61.000 ms  0.02 s".
#pragma once

#include <string>

#include "synth/synthesize.h"

namespace ps::cli {

// One line, without the "synth: " prefix and the newline.
std::string synth_progress_line(const SynthProgress& p);

}  // namespace ps::cli
