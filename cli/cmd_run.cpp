// `pipesmith run` — placeholder until issue #7 lands.
#include "cli/commands.h"

namespace ps::cli {

Runner add_run(CLI::App& app) { return pending_command(app, "run", "Replay a schedule with real math", 7); }

}  // namespace ps::cli
