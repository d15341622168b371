// `pipesmith render` — draw a schedule: SVG Gantt chart with memory curves and/or a Chrome/Perfetto
// trace. Exit 0 when drawn and valid, 3 when the schedule is invalid (drawn anyway if it could be
// simulated), 1 on bad input or usage.
#include <fmt/format.h>

#include "cli/check_options.h"
#include "cli/commands.h"
#include "report/report.h"

namespace ps::cli {

Runner add_render(CLI::App& app) {
  auto* sub = app.add_subcommand("render", "Draw a schedule as an SVG Gantt chart and/or a Chrome trace");
  auto flags = std::make_shared<CheckFlags>();
  auto svg = std::make_shared<std::string>();
  auto trace = std::make_shared<std::string>();
  auto title = std::make_shared<std::string>();
  flags->add_to(sub);
  sub->add_option("--svg", *svg, "Write the SVG Gantt chart here");
  sub->add_option("--trace", *trace, "Write the Chrome/Perfetto trace JSON here");
  sub->add_option("--title", *title, "Chart title (default: the file name)");
  return [flags, svg, trace, title] {
    if (svg->empty() && trace->empty())
      return report_error(Status::bad_input("render needs --svg OUT and/or --trace OUT"));
    if (Status st = check_outputs({{*svg, "--svg"}, {*trace, "--trace"}}, flags->input_files()); !st.is_ok())
      return report_error(st);
    int rc = 0;
    auto report = flags->run(rc);
    if (!report) return rc;
    if (!report->sim) {
      std::fputs(format_report(*report).c_str(), stdout);
      std::fprintf(stderr, "pipesmith render: nothing drawn: the schedule cannot be simulated\n");
      return rc == 0 ? exit_code(ErrorCode::kInvalidSchedule) : rc;
    }
    if (!svg->empty()) {
      Status st = write_text_file(*svg, format_svg(*report, *title));
      if (!st) return report_error(st);
      std::printf("wrote %s\n", svg->c_str());
    }
    if (!trace->empty()) {
      Status st = write_text_file(*trace, format_chrome_trace(*report));
      if (!st) return report_error(st);
      std::printf("wrote %s\n", trace->c_str());
    }
    if (!report->valid) {
      std::printf("warning: the schedule is INVALID (%zu violations); drawn anyway:\n", report->violations.size());
      std::fputs(format_report(*report).c_str(), stdout);
    }
    return rc;
  };
}

}  // namespace ps::cli
