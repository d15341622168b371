// pending_command: subcommands whose implementation lands in a later issue say which issue fills them
// and exit 1; none prints fake output.
#include <fmt/format.h>

#include <cstdio>

#include "cli/commands.h"

namespace ps::cli {

Runner pending_command(CLI::App& app, const char* name, const char* what, int issue) {
  auto* sub = app.add_subcommand(name, fmt::format("{} (not implemented yet: issue #{})", what, issue));
  sub->allow_extras();
  return [name, issue] {
    std::fprintf(stderr, "pipesmith %s: not implemented yet; issue #%d fills this subcommand\n", name, issue);
    return 1;
  };
}

}  // namespace ps::cli
