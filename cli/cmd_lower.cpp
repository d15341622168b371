// `pipesmith lower` — placeholder until issue #2 lands.
#include "cli/commands.h"

namespace ps::cli {

Runner add_lower(CLI::App& app) { return pending_command(app, "lower", "Lower a model and print its IR summary", 2); }

}  // namespace ps::cli
