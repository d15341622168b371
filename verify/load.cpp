// load.cpp — see load.h.
#include "verify/load.h"

#include <fmt/format.h>

#include "ir/model.h"
#include "ir/problem.h"
#include "ir/schedule_io.h"
#include "ir/partition.h"

namespace ps {

Result<LoadedSchedule> load_schedule_for_check(const CheckInput& in) {
  LoadedSchedule out;
  CsvReadOptions opt;
  opt.microbatches = in.microbatches;
  opt.stages = in.stages;
  auto s = read_schedule_any(in.file, opt, &out.notes);
  if (!s) return s.status();
  out.schedule = std::move(*s);
  Schedule& sch = out.schedule;
  const bool is_csv = sch.generator == "pytorch-csv";
  if (in.model.empty()) {
    if (!in.cluster.empty())
      return Status::bad_input("a cluster file needs a model file (the cluster only matters with a model's costs)");
    return out;
  }
  if (!is_csv)
    return Status::bad_input(
        fmt::format("'{}' is a pipesmith schedule, which embeds its problem (costs, placement, links); "
                    "a model file applies only to PyTorch CSV files",
                    in.file),
        SourceLoc{in.file, 0, 0});
  SpecOverrides ov;
  ov.devices = sch.num_devices();
  ov.microbatches = sch.problem.microbatches;
  auto spec = load_spec(in.model, in.cluster, ov);
  if (!spec) return spec.status();
  const int S = sch.problem.num_stages();
  auto part = balanced_partition(*spec, S);
  if (!part) return part.status();
  std::vector<int> placement;
  for (const StageSpec& st : sch.problem.stages) placement.push_back(st.device);
  auto pb = make_problem(*spec, *part, placement);
  if (!pb) return pb.status();
  // A data-parallel op the CSV places on a stage the model gives no such step stays a 0 ms, 0 MB op (as
  // the reader made it, and as PyTorch runs it there: no peers, nothing sharded), so its place is checked.
  std::string no_step, no_shard;  // the stages concerned, for the notes
  for (size_t k = 0; k < pb->stages.size(); ++k) {
    StageSpec& to = pb->stages[k];
    const StageSpec& from = sch.problem.stages[k];
    if (from.reduces_grad && !to.reduces_grad) {
      to.reduces_grad = true, to.reduce_grad_ms = 0;
      no_step += fmt::format("{}{}", no_step.empty() ? "" : ", ", k);
    }
    if (from.fsdp && !to.fsdp) {
      to.fsdp = true, to.unshard_ms = to.unsharded_mb = 0;
      no_shard += fmt::format("{}{}", no_shard.empty() ? "" : ", ", k);
    }
  }
  sch.problem = std::move(*pb);
  std::string ranges;
  for (size_t k = 0; k < part->size(); ++k)
    ranges += fmt::format("{}stage {}: layers {}-{}", k ? ", " : "", k, (*part)[k].first, (*part)[k].last);
  out.notes.push_back(fmt::format(
      "costs from model '{}' ({}{}): balanced partition of its {} layers into {} stages minimizing the "
      "max stage F+I+W time ({}), placed as in the CSV",
      spec->model.name, in.model, in.cluster.empty() ? "" : ", cluster " + in.cluster,
      spec->model.layers.size(), S, ranges));
  if (!no_step.empty())
    out.notes.push_back(fmt::format("the model gives stage(s) {} no data-parallel step: the CSV's REDUCE_GRAD there "
                                    "takes 0 ms",
                                    no_step));
  if (!no_shard.empty())
    out.notes.push_back(fmt::format("the model does not shard stage(s) {} with FSDP: the CSV's UNSHARD/RESHARD there "
                                    "take 0 ms and 0 MB (no-ops, as PyTorch runs them on a stage without FSDP)",
                                    no_shard));
  return out;
}

}  // namespace ps
