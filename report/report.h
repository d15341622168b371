// report.h — the checker's Report presented: text (verdict first), JSON (docs/verifier-rules.md
// documents the schema), a Chrome/Perfetto trace of the simulated timeline and an SVG Gantt chart with
// memory curves. Presentation only: every figure comes from the Report, none is computed here.
#pragma once

#include <string>

#include "ir/status.h"
#include "verify/report_types.h"

namespace ps {

// Human text report: verdict first, then violations with notes, then figures.
std::string format_report(const Report& report);
// JSON report (docs/verifier-rules.md documents the schema).
std::string format_report_json(const Report& report);
// JSON for a schedule that could not be checked at all (unreadable, malformed): "valid": false and an
// "error" object with file, line, column (0 when unknown) and message.
std::string format_error_json(const Status& error, const std::string& schedule_file);

// Pictures: Chrome/Perfetto trace JSON and an SVG Gantt chart with memory curves.
std::string format_chrome_trace(const Report& report);
std::string format_svg(const Report& report, const std::string& title = "");

}  // namespace ps
