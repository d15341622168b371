// `pipesmith render` — placeholder until issue #3 lands.
#include "cli/commands.h"

namespace ps::cli {

Runner add_render(CLI::App& app) { return pending_command(app, "render", "Draw a schedule as SVG / Chrome trace", 3); }

}  // namespace ps::cli
