// check_options.h — the flags shared by `pipesmith verify`, `simulate` and `render`: which schedule,
// how to cost it, which semantics, which memory limit; and running the checker on them.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "ir/limits.h"
#include "report/report.h"
#include "verify/load.h"
#include "verify/verify.h"

namespace ps::cli {

struct CheckFlags {
  CheckInput input;
  std::string semantics = "rendezvous";
  std::optional<double> memory_limit_gb;  // empty: the problem's own limit

  void add_to(CLI::App* sub) {
    sub->add_option("file", input.file, "Schedule: pipesmith-schedule/1 YAML or PyTorch CSV")->required();
    sub->add_option("--model", input.model, "Model YAML: cost a CSV's stages with it (balanced partition)");
    sub->add_option("--cluster", input.cluster, "Cluster YAML (with --model)");
    sub->add_option("--microbatches", input.microbatches, "Expected microbatch count (checked against the file)")
        ->check(flags::option(limits::option::kExpectedMicrobatches));
    sub->add_option("--stages", input.stages, "Expected stage count (checked against the file)")
        ->check(flags::option(limits::option::kExpectedStages));
    sub->add_option("--semantics", semantics, "Send/recv semantics: rendezvous (default), grouped, buffered, posted (PyTorch's pipelining runtime; docs/semantics.md)");
    sub->add_option("--memory-limit-gb", memory_limit_gb, "Per-device memory limit in GB (0 = unlimited; "
                                                          "default: the problem's)")
        ->check(flags::memory_limit_gb());
  }

  // The files the flags name as inputs (for check_outputs).
  std::vector<std::string> input_files() const { return {input.file, input.model, input.cluster}; }

  // Loads and verifies; on bad input prints the error (and, with `json_errors`, a JSON report of it on
  // stdout) and returns its exit code in `rc`.
  std::unique_ptr<Report> run(int& rc, std::vector<std::string>* load_notes = nullptr, bool json_errors = false) const {
    auto fail = [&](const Status& st) -> std::unique_ptr<Report> {
      if (json_errors) std::fputs(format_error_json(st, input.file).c_str(), stdout);
      rc = report_error(st);
      return nullptr;
    };
    auto sem = parse_semantics(semantics);
    if (!sem)
      return fail(Status::bad_input("--semantics must be rendezvous, grouped, buffered or posted, got '" + semantics +
                                    "'"));
    if (input.model.empty() && !input.cluster.empty())
      return fail(Status::bad_input("--cluster needs --model (the cluster only matters with a model's costs)"));
    auto loaded = load_schedule_for_check(input);
    if (!loaded) return fail(loaded.status());
    VerifyOptions opt;
    opt.semantics = *sem;
    opt.memory_limit_gb = memory_limit_gb;
    auto report = std::make_unique<Report>(verify(loaded->schedule, opt));
    report->notes.insert(report->notes.begin(), loaded->notes.begin(), loaded->notes.end());
    if (load_notes) *load_notes = loaded->notes;
    rc = report->valid ? 0 : exit_code(ErrorCode::kInvalidSchedule);
    return report;
  }
};

}  // namespace ps::cli
