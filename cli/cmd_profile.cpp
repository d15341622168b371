// `pipesmith profile` — placeholder until issue #7 lands.
#include "cli/commands.h"

namespace ps::cli {

Runner add_profile(CLI::App& app) { return pending_command(app, "profile", "Profile layer costs on a backend", 7); }

}  // namespace ps::cli
