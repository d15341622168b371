// `pipesmith synth` — placeholder until issue #5 lands.
#include "cli/commands.h"

namespace ps::cli {

Runner add_synth(CLI::App& app) { return pending_command(app, "synth", "Synthesize a certified schedule with Z3", 5); }

}  // namespace ps::cli
