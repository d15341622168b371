// `pipesmith simulate` — placeholder until issue #3 lands.
#include "cli/commands.h"

namespace ps::cli {

Runner add_simulate(CLI::App& app) { return pending_command(app, "simulate", "Simulate a schedule's timing", 3); }

}  // namespace ps::cli
