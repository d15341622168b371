// check_options.h — the flags shared by `pipesmith verify`, `simulate` and `render`: which schedule,
// how to cost it, which semantics, which memory limit; and running the checker on them.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "verify/load.h"
#include "verify/verify.h"

namespace ps::cli {

struct CheckFlags {
  CheckInput input;
  std::string semantics = "rendezvous";
  double memory_limit_gb = -1;  // < 0: the problem's own limit

  void add_to(CLI::App* sub) {
    sub->add_option("file", input.file, "Schedule: pipesmith-schedule/1 YAML or PyTorch CSV")->required();
    sub->add_option("--model", input.model, "Model YAML: cost a CSV's stages with it (balanced partition)");
    sub->add_option("--cluster", input.cluster, "Cluster YAML (with --model)");
    sub->add_option("--microbatches", input.microbatches, "Expected microbatch count (checked against the file)");
    sub->add_option("--stages", input.stages, "Expected stage count (checked against the file)");
    sub->add_option("--semantics", semantics, "Send/recv semantics: rendezvous (default), grouped, buffered");
    sub->add_option("--memory-limit-gb", memory_limit_gb, "Per-device memory limit in GB (0 = unlimited; "
                                                          "default: the problem's)");
  }

  // The files the flags name as inputs (for check_outputs).
  std::vector<std::string> input_files() const { return {input.file, input.model, input.cluster}; }

  // Loads and verifies; on bad input prints the error and returns its exit code in `rc`.
  std::unique_ptr<Report> run(int& rc, std::vector<std::string>* load_notes = nullptr) const {
    auto sem = parse_semantics(semantics);
    if (!sem) {
      rc = report_error(Status::bad_input("--semantics must be rendezvous, grouped or buffered, got '" +
                                          semantics + "'"));
      return nullptr;
    }
    auto loaded = load_schedule_for_check(input);
    if (!loaded) {
      rc = report_error(loaded.status());
      return nullptr;
    }
    VerifyOptions opt;
    opt.semantics = *sem;
    if (memory_limit_gb >= 0) opt.memory_limit_gb = memory_limit_gb;
    auto report = std::make_unique<Report>(verify(loaded->schedule, opt));
    report->notes.insert(report->notes.begin(), loaded->notes.begin(), loaded->notes.end());
    if (load_notes) *load_notes = loaded->notes;
    rc = report->valid ? 0 : static_cast<int>(ErrorCode::kInvalidSchedule);
    return report;
  }
};

}  // namespace ps::cli
