// `pipesmith convert` — placeholder until issue #2 lands.
#include "cli/commands.h"

namespace ps::cli {

Runner add_convert(CLI::App& app) { return pending_command(app, "convert", "Convert schedule YAML <-> PyTorch CSV", 2); }

}  // namespace ps::cli
