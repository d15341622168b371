// `pipesmith convert IN OUT` — converts a schedule between pipesmith-schedule/1 YAML and PyTorch CSV.
// The input format is chosen by IN's extension (or content), the output format by OUT's extension
// (.csv → CSV, .yaml/.yml → YAML). Notes (ignored or expanded actions, what a CSV cannot hold) go to
// stderr; errors exit 1 with file:line:col.
#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "ir/schedule_io.h"

namespace ps::cli {

namespace {

struct ConvertOptions {
  std::string in;
  std::string out;
  int microbatches = -1;
  int stages = -1;
};

std::string lower_extension(const std::string& path) {
  size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

int run_convert(const ConvertOptions& o) {
  std::string ext = lower_extension(o.out);
  bool to_csv = ext == ".csv";
  if (!to_csv && ext != ".yaml" && ext != ".yml") {
    return report_error(Status::bad_input(fmt::format(
        "cannot tell the output format from '{}': OUT must end in .csv (PyTorch CSV) or .yaml/.yml "
        "(pipesmith-schedule/1)",
        o.out)));
  }
  if (Status st = check_outputs({{o.out, "OUT"}}, {o.in}); !st.is_ok()) return report_error(st);
  CsvReadOptions opt;
  opt.microbatches = o.microbatches;
  opt.stages = o.stages;
  std::vector<std::string> notes;
  auto sched = read_schedule_any(o.in, opt, &notes);
  if (!sched) return report_error(sched.status());
  const Schedule& s = *sched;
  for (const auto& n : notes) std::fprintf(stderr, "pipesmith convert: note: %s: %s\n", o.in.c_str(), n.c_str());

  std::string text;
  if (to_csv) {
    if (Status st = check_pytorch_csv_exportable(s); !st.is_ok()) return report_error(st);
    text = format_pytorch_csv(s);
    std::string lost = "a CSV holds only each rank's action order";
    if (!s.problem.unit_costs) lost += "; costs, memory and link figures are dropped";
    if (s.certificate) lost += "; the certificate is dropped";
    if (!s.predicted.empty()) {
      lost += s.has_comms() ? "; predicted times are dropped"
                            : "; predicted times are kept only as idle cells (column order)";
    }
    std::fprintf(stderr, "pipesmith convert: note: %s\n", lost.c_str());
  } else {
    text = format_schedule_yaml(s);
    if (s.problem.unit_costs && s.generator == "pytorch-csv") {
      std::fprintf(stderr,
                   "pipesmith convert: note: the CSV has no costs: the YAML uses unit costs (F = I = W = 1 "
                   "ms, B = 2 ms)\n");
    }
  }
  Status st = write_text_file(o.out, text);
  if (!st) return report_error(st);
  std::printf("wrote %s: %d devices, %d stages, %d microbatches, %zu actions\n", o.out.c_str(),
              s.num_devices(), s.problem.num_stages(), s.problem.microbatches, s.num_ops());
  return 0;
}

}  // namespace

Runner add_convert(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  auto* sub = app.add_subcommand(
      "convert",
      "Convert a schedule between pipesmith-schedule/1 YAML and PyTorch pipelining CSV.\n"
      "The output format follows OUT's extension: .csv -> PyTorch CSV, .yaml/.yml -> YAML.\n"
      "docs/schedule-format.md describes both formats and what a CSV cannot hold.");
  sub->add_option("IN", o->in, "Input schedule (.csv = PyTorch CSV; .yaml/.yml = pipesmith-schedule/1)")
      ->required();
  sub->add_option("OUT", o->out, "Output file (.csv or .yaml/.yml)")->required();
  sub->add_option("--microbatches", o->microbatches,
                  "Expected number of microbatches (default: inferred from a CSV as max + 1; checked)")
      ->check(flags::option(limits::option::kExpectedMicrobatches));
  sub->add_option("--stages", o->stages,
                  "Expected number of stages (default: inferred from a CSV as max + 1; checked)")
      ->check(flags::option(limits::option::kExpectedStages));
  return [o] { return run_convert(*o); };
}

}  // namespace ps::cli
