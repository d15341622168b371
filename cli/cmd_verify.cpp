// `pipesmith verify` — check a schedule (YAML or PyTorch CSV): structure, dependencies, comms,
// deadlock-freedom under a semantics, memory, certificate; timing figures; optional pictures.
// Exit 0 valid, 3 invalid, 1 bad input.
#include <fmt/format.h>

#include "cli/check_options.h"
#include "cli/commands.h"
#include "report/report.h"

namespace ps::cli {

Runner add_verify(CLI::App& app) {
  auto* sub = app.add_subcommand("verify", "Check a schedule: validity, memory, deadlock-freedom, timing");
  auto flags = std::make_shared<CheckFlags>();
  auto json = std::make_shared<bool>(false);
  auto trace = std::make_shared<std::string>();
  auto svg = std::make_shared<std::string>();
  flags->add_to(sub);
  sub->add_flag("--json", *json, "Print the report as JSON (schema: docs/verifier-rules.md)");
  sub->add_option("--trace", *trace, "Write a Chrome/Perfetto trace JSON of the simulated timing");
  sub->add_option("--svg", *svg, "Write an SVG Gantt chart with memory curves");
  return [flags, json, trace, svg] {
    if (Status st = check_outputs({{*trace, "--trace"}, {*svg, "--svg"}}, flags->input_files()); !st.is_ok()) {
      if (*json) std::fputs(format_error_json(st, flags->input.file).c_str(), stdout);
      return report_error(st);
    }
    int rc = 0;
    auto report = flags->run(rc, nullptr, *json);
    if (!report) return rc;
    std::fputs((*json ? format_report_json(*report) : format_report(*report)).c_str(), stdout);
    if (!trace->empty()) {
      Status st = write_text_file(*trace, format_chrome_trace(*report));
      if (!st) return report_error(st);
    }
    if (!svg->empty()) {
      Status st = write_text_file(*svg, format_svg(*report));
      if (!st) return report_error(st);
    }
    return rc;
  };
}

}  // namespace ps::cli
