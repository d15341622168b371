// schedule_io_detail.h — what the schedule formats' readers and writers share (ir/schedule_yaml.cpp,
// ir/schedule_csv.cpp, ir/schedule_io.cpp): the limits they read within, the file reading, number
// writing, the actions-limit refusal and the cells of a program. Not part of the library's interface.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/limits.h"
#include "ir/schedule.h"
#include "ir/status.h"

namespace ps::schedule_io_detail {

inline constexpr std::string_view kFormat = "pipesmith-schedule/1";
inline constexpr size_t kOpsPerLine = 16;    // actions per line in `ops: [...]`
inline constexpr size_t kTimesPerLine = 8;   // [start, end] pairs per line in `times: [...]`
inline constexpr int kMaxDevices = static_cast<int>(limits::kMaxDevices);
inline constexpr int kMaxMicrobatches = static_cast<int>(limits::kMaxMicrobatches);
inline constexpr int kMaxStages = static_cast<int>(limits::kMaxStages);

// The file's text, or kBadInput "cannot open|read 'path': why".
Result<std::string> read_text_file(const std::string& path);
// Writes the file whole or not at all (ir/output_file.h).
Status write_text(const std::string& path, const std::string& text);
// A number in its shortest round-trip form (yamlu::format_number).
std::string num(double v);
// Both readers refuse the action past limits::kMaxScheduleActions with this, at the action.
Status too_many_actions(const SourceLoc& loc);
// The cells writers emit for a program, as [first, last] op ranges: a run of compute ops chained by
// overlap_next is one OVERLAP_F_B cell; every other op is a cell of its own.
std::vector<std::pair<size_t, size_t>> program_cells(const std::vector<Action>& prog);
const char* boolstr(bool b);
// A recomputing stage's fields, each preceded by `sep` and written key`eq`value; "" for a stage
// that does not recompute (so such stages read and digest exactly as without the fields).
std::string recompute_fields(const StageSpec& st, std::string_view sep, std::string_view eq);
// A stage's fused-B time, `sep`bwd_ms`eq`value, when it differs from I + W; "" otherwise (so stages
// without one read and digest exactly as without the field).
std::string fused_field(const StageSpec& st, std::string_view sep, std::string_view eq);
// A stage's data-parallel fields, each preceded by `sep` (reduce_grad_ms when it has the step,
// unshard_ms and unsharded_mb when FSDP shards it); "" for a stage with neither.
std::string reduce_grad_field(const StageSpec& st, std::string_view sep, std::string_view eq);

}  // namespace ps::schedule_io_detail
