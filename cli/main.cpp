// pipesmith — synthesize, certify and run pipeline-parallel training schedules.
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <new>

#include "cli/commands.h"

namespace ps::cli {

int exit_code(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return 0;
    case ErrorCode::kBadInput: return 1;
    case ErrorCode::kInfeasible: return 2;
    case ErrorCode::kInvalidSchedule: return 3;
    case ErrorCode::kRuntime: return 4;
    case ErrorCode::kInterrupted: return 130;  // as SIGINT would end the command
  }
  return 1;
}

int report_error(const Status& st) {
  std::fprintf(stderr, "pipesmith: error: %s\n", st.str().c_str());
  return st.is_ok() ? 1 : exit_code(st.code());
}

Status check_writable(const std::string& path, const char* flag) { return check_outputs({{path, flag}}, {}); }

Status check_outputs(const std::vector<OutputPath>& outputs, const std::vector<std::string>& inputs) {
  return check_output_paths(outputs, inputs);
}

Status write_text_file(const std::string& path, const std::string& text) { return write_output_file(path, text); }

}  // namespace ps::cli

int main(int argc, char** argv) {
  CLI::App app{
      "pipesmith — synthesize, certify and run pipeline-parallel training schedules.\n"
      "Exit codes: 0 ok, 1 bad input or usage, 2 infeasible, 3 schedule invalid, 4 runtime failure."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "pipesmith 0.1.0");
  std::map<CLI::App*, ps::cli::Runner> runners;
  auto add = [&](ps::cli::Runner (*f)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    ps::cli::Runner r = f(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) runners[subs.back()] = std::move(r);
  };
  add(ps::cli::add_lower);
  add(ps::cli::add_convert);
  add(ps::cli::add_verify);
  add(ps::cli::add_simulate);
  add(ps::cli::add_render);
  add(ps::cli::add_baseline);
  add(ps::cli::add_bound);
  add(ps::cli::add_synth);
  add(ps::cli::add_plan);
  add(ps::cli::add_run);
  add(ps::cli::add_profile);
  add(ps::cli::add_export);
  add(ps::cli::add_import);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }
  for (auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    int rc = 0;
    try {
      rc = run();
    } catch (const std::bad_alloc&) {
      // The limits (docs/inputs.md, "Limits") and run/profile's estimates refuse what cannot fit before
      // allocating it; what still runs out (other processes took the memory) ends here, said as it is.
      std::fprintf(stderr,
                   "pipesmith: error: out of memory while running '%s' (the machine or the address-space limit, "
                   "ulimit -v, gave no more; docs/inputs.md, \"Limits\", gives what inputs at the limits need)\n",
                   sub->get_name().c_str());
      rc = 4;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pipesmith: internal error: %s\n", e.what());
      rc = 4;
    }
    // Output lost on the way to stdout (a full disk, a closed pipe) fails the command.
    if (ps::Status st = ps::finish_stdout(); !st.is_ok()) return rc != 0 ? rc : ps::cli::report_error(st);
    return rc;
  }
  return 1;
}
