// `pipesmith baseline` — placeholder until issue #4 lands.
#include "cli/commands.h"

namespace ps::cli {

Runner add_baseline(CLI::App& app) { return pending_command(app, "baseline", "Generate GPipe/1F1B/ZB schedules", 4); }

}  // namespace ps::cli
