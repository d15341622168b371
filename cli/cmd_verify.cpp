// `pipesmith verify` — placeholder until issue #3 lands.
#include "cli/commands.h"

namespace ps::cli {

Runner add_verify(CLI::App& app) { return pending_command(app, "verify", "Check a schedule: validity, memory, deadlock-freedom", 3); }

}  // namespace ps::cli
