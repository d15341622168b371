// `pipesmith bound` — placeholder until issue #4 lands.
#include "cli/commands.h"

namespace ps::cli {

Runner add_bound(CLI::App& app) { return pending_command(app, "bound", "Lower bound on the iteration time", 4); }

}  // namespace ps::cli
