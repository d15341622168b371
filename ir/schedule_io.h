// schedule_io.h — schedule files: `pipesmith-schedule/1` YAML and PyTorch pipelining CSV.
//
// Guarantees: writers are deterministic (identical schedule → byte-identical file); readers keep
// file:line:col on every action; readers reject malformed cells instead of guessing.
#pragma once

#include <string>

#include "ir/schedule.h"
#include "ir/status.h"

namespace ps {

// ---- pipesmith-schedule/1 (docs/schedule-format.md) ----
Result<Schedule> read_schedule_yaml(const std::string& path);
Result<Schedule> parse_schedule_yaml(const std::string& text, const std::string& file_name);
std::string format_schedule_yaml(const Schedule& s);
// Whole or not at all (ir/output_file.h; "-" = stdout); refuses a schedule holding a number that is not
// finite (exit 3: nothing that could not be read back is written).
Status write_schedule_yaml(const Schedule& s, const std::string& path);

// ---- PyTorch torch.distributed.pipelining CSV (docs/schedule-format.md; examples in tests/data/pytorch) ----
struct CsvReadResult {
  Schedule schedule;            // problem filled with unit costs; placement inferred from rows
  std::vector<std::string> notes;  // e.g. "4 idle cell(s) (rank 0: cells 2, 5; ...)"
};
struct CsvReadOptions {
  int microbatches = -1;  // -1: infer (max mb + 1); else checked against the file
  int stages = -1;        // -1: infer (max stage + 1); else checked against the file
};
Result<CsvReadResult> read_pytorch_csv(const std::string& path, const CsvReadOptions& opt = {});
Result<CsvReadResult> parse_pytorch_csv(const std::string& text, const std::string& file_name,
                                        const CsvReadOptions& opt = {});
// Compute-only schedules are written with idle cells where a device waits (from `predicted` times
// if present, else without idle cells); schedules with comms are written as-is.
// R ops have no PyTorch action: check_pytorch_csv_exportable refuses a schedule holding one
// (kBadInput naming the device and the op); write_pytorch_csv checks it, and a caller of
// format_pytorch_csv checks it first.
std::string format_pytorch_csv(const Schedule& s);
Status check_pytorch_csv_exportable(const Schedule& s);
Status write_pytorch_csv(const Schedule& s, const std::string& path);

// The compute ops only (predicted times kept for them when present), no certificate: the programs
// of a compute-only CSV, with idle cells where the predicted times leave a device waiting.
Schedule compute_only_view(const Schedule& s);

// Reads either format, chosen by content/extension (".csv" → CSV, otherwise YAML).
Result<Schedule> read_schedule_any(const std::string& path, const CsvReadOptions& opt = {},
                                   std::vector<std::string>* notes = nullptr);

// Canonical text of a schedule (problem + placement + programs, no certificate, no predicted
// times): the input of the certificate digest.
std::string canonical_text(const Schedule& s);

}  // namespace ps
