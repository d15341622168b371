// pipesmith — synthesize, certify and run pipeline-parallel training schedules.
#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli/commands.h"

namespace ps::cli {

int report_error(const Status& st) {
  std::fprintf(stderr, "pipesmith: error: %s\n", st.str().c_str());
  return st.exit_code() == 0 ? 1 : st.exit_code();
}

Status check_writable(const std::string& path, const char* flag) {
  namespace fs = std::filesystem;
  if (path.empty() || path == "-") return Status::ok();
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return Status::bad_input(fmt::format("cannot write '{}' ({}): it is a directory", path, flag));
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::exists(dir, ec))
    return Status::bad_input(fmt::format("cannot write '{}' ({}): directory '{}' does not exist", path, flag, dir.string()));
  if (!fs::is_directory(dir, ec))
    return Status::bad_input(fmt::format("cannot write '{}' ({}): '{}' is not a directory", path, flag, dir.string()));
  const bool exists = fs::exists(p, ec);
  if ((exists && ::access(path.c_str(), W_OK) != 0) || (!exists && ::access(dir.c_str(), W_OK) != 0))
    return Status::bad_input(fmt::format("cannot write '{}' ({}): permission denied", path, flag));
  return Status::ok();
}

Status write_text_file(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::ok();
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) return Status::bad_input(fmt::format("cannot open '{}' for writing", path));
  out << text;
  out.close();
  if (!out) return Status::bad_input(fmt::format("failed writing '{}'", path));
  return Status::ok();
}

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
  add(ps::cli::add_run);
  add(ps::cli::add_profile);
  add(ps::cli::add_export);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }
  for (auto& [sub, run] : runners) {
    if (sub->parsed()) {
      try {
        return run();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "pipesmith: internal error: %s\n", e.what());
        return 4;
      }
    }
  }
  return 1;
}
