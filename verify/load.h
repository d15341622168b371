// load.h — reading a schedule for checking: `pipesmith verify|simulate|render FILE [--model ...]`.
//
// Guarantees: FILE is a pipesmith-schedule/1 YAML or a PyTorch CSV (read_schedule_any). A CSV
// without a model keeps the reader's unit costs (the report says so). With a model (and optional
// cluster file), a CSV's stages get the model's balanced partition (verify/balanced_partition.h) on
// the CSV's own placement, and costs, memory and links from the model and cluster; the notes say
// which layers each stage got; a REDUCE_GRAD, UNSHARD or RESHARD the CSV places on a stage the model
// gives no data-parallel step or FSDP sharding stays there at 0 ms and 0 MB (noted). A YAML schedule
// embeds its problem, so a model is refused for it.
// Errors are bad-input Statuses with file:line:col.
#pragma once

#include <string>
#include <vector>

#include "ir/schedule.h"
#include "ir/status.h"

namespace ps {

struct CheckInput {
  std::string file;         // schedule file (.yaml/.yml or .csv; sniffed otherwise)
  std::string model;        // optional model YAML (CSV only)
  std::string cluster;      // optional cluster YAML (with model)
  int microbatches = -1;    // -1: from the file; else checked against it
  int stages = -1;          // -1: from the file; else checked against it
};

struct LoadedSchedule {
  Schedule schedule;
  std::vector<std::string> notes;  // reader notes and how the problem was costed
};

Result<LoadedSchedule> load_schedule_for_check(const CheckInput& in);

}  // namespace ps
