// commands.h — the `pipesmith` subcommands. Each cli/cmd_<name>.cpp registers one subcommand:
// it declares its options on the CLI::App and returns the function that runs it (exit code).
// No logic here that a library user would also need: commands parse flags, call the libraries,
// print, and map Status codes to exit codes (0 ok, 1 bad input/usage, 2 infeasible, 3 invalid
// schedule, 4 runtime failure).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "ir/output_file.h"
#include "ir/status.h"

namespace ps::cli {

using Runner = std::function<int()>;

Runner add_lower(CLI::App& app);
Runner add_convert(CLI::App& app);
Runner add_verify(CLI::App& app);
Runner add_simulate(CLI::App& app);
Runner add_render(CLI::App& app);
Runner add_baseline(CLI::App& app);
Runner add_bound(CLI::App& app);
Runner add_synth(CLI::App& app);
Runner add_plan(CLI::App& app);
Runner add_run(CLI::App& app);
Runner add_profile(CLI::App& app);
Runner add_export(CLI::App& app);
Runner add_import(CLI::App& app);

// The command's exit code for a library error class: 0 ok, 1 bad input or usage, 2 infeasible,
// 3 invalid schedule, 4 runtime failure, 130 interrupted (as SIGINT would end it).
int exit_code(ErrorCode code);
// Prints "pipesmith: error: <status>" to stderr and returns its exit code (1 for an ok Status).
int report_error(const Status& st);
// Before any work: every output (a path and the flag that named it; "" or "-" = nothing to check) can
// be written, no two name the same file, and none names one of `inputs` (ir/output_file.h). Writing can
// still fail later (a full disk); this spares a user a search that ends in "cannot open", and an input
// replaced by an output.
Status check_outputs(const std::vector<OutputPath>& outputs, const std::vector<std::string>& inputs);
// check_outputs for one output and no inputs.
Status check_writable(const std::string& path, const char* flag);
// Writes text to a file whole or not at all (temporary, fsync, rename), or to stdout for "-"; errors
// become a Status with the path and the system's reason.
Status write_text_file(const std::string& path, const std::string& text);

}  // namespace ps::cli
