// `pipesmith export SCHEDULE --to pytorch -o DIR [--fsdp] [--model MODEL.yaml [--cluster C.yaml]]`
// — writes a checked schedule as the files PyTorch's torch.distributed.pipelining runs
// (export/pytorch_export.h; docs/pytorch.md): DIR/compute_only.csv, DIR/compute_comms.csv,
// DIR/plan.json, as one set: all three or none (ir/output_file.h). Before any work, a file of the
// set that names an input (--model, --cluster or SCHEDULE itself) is refused. Exit 3 with the
// checker's report when the schedule is invalid (nothing written), 1 on bad input or a failed write.
#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <vector>

#include "cli/commands.h"
#include "export/pytorch_export.h"
#include "report/report.h"

namespace ps::cli {

namespace {

struct ExportArgs {
  std::string schedule;
  std::string to;
  std::string out_dir;
  std::string model;
  std::string cluster;
  bool fsdp = false;
};

std::string summary(const PytorchExport& ex, const ExportInput& in) {
  const Problem& pb = ex.report.checked.problem;
  std::string s = fmt::format("pipesmith export: model '{}', P = {} ranks, S = {} stages, M = {} microbatches\n",
                              pb.name, pb.devices, pb.num_stages(), pb.microbatches);
  for (const std::string& n : in.notes) s += fmt::format("  note           {}\n", n);
  s += fmt::format("  checker        valid under {} semantics{}\n", semantics_name(ex.report.semantics),
                   ex.report.comms_inserted ? " (comms inserted by the shared rule)" : "");
  s += fmt::format("  certified      {:.3f} ms  compute_comms.csv: the certified SEND/RECV order + REDUCE_GRAD\n",
                   ex.certified_ms);
  if (ex.recomputes)
    s += fmt::format("  pytorch comms  {:.3f} ms ({:+.1f}%)  compute_comms.csv as PyTorch runs it: each R inside its "
                     "backward ({} R op(s) move there)\n",
                     ex.comms_at_backward_ms,
                     ex.certified_ms > 0 ? 100 * (ex.comms_at_backward_ms / ex.certified_ms - 1) : 0.0,
                     ex.recompute_ops_moved);
  if (!ex.pytorch_lowered) {
    s += fmt::format("  pytorch order  PyTorch's lowering of compute_only.csv stops: {}\n",
                     ex.pytorch_blocked.empty() ? "" : ex.pytorch_blocked.front());
  } else if (!ex.pytorch_valid) {
    s += "  pytorch order  PyTorch's lowering of compute_only.csv gives an order the checker rejects (rendezvous)\n";
  } else {
    std::string safe;
    for (const std::string& x : ex.pytorch_safe_under) safe += (safe.empty() ? "" : ", ") + x;
    s += fmt::format("  pytorch order  {:.3f} ms ({:+.1f}%)  compute_only.csv as PyTorch lowers it; deadlock-free under {}\n",
                     ex.pytorch_ms, ex.certified_ms > 0 ? 100 * (ex.pytorch_ms / ex.certified_ms - 1) : 0.0, safe);
  }
  for (const std::string& n : ex.notes) s += fmt::format("  note           {}\n", n);
  return s;
}

int run_export(const ExportArgs& a) {
  if (a.to != "pytorch")
    return report_error(Status::bad_input(fmt::format("--to must be 'pytorch', got '{}'", a.to)));
  const OutputPath out_dir{a.out_dir, "-o"};
  if (Status st = check_export_dir(out_dir, {a.schedule, a.model, a.cluster}); !st.is_ok()) return report_error(st);
  if (a.model.empty() && !a.cluster.empty())
    return report_error(Status::bad_input("--cluster needs --model (the cluster only matters with a model's costs)"));
  auto in = load_export_input(a.schedule, a.model, a.cluster);
  if (!in) return report_error(in.status());
  PytorchExportOptions o;
  o.fsdp = a.fsdp;
  o.spec = in->spec ? &*in->spec : nullptr;
  o.model_file = a.model;
  auto ex = export_pytorch(in->schedule, o);
  if (!ex) return report_error(ex.status());
  if (!ex->valid) {
    std::fputs(format_report(ex->report).c_str(), stdout);
    std::fprintf(stderr, "pipesmith: error: '%s' is not a valid schedule: nothing written\n", a.schedule.c_str());
    return exit_code(ErrorCode::kInvalidSchedule);
  }
  std::string s = summary(*ex, *in);
  auto written = write_pytorch_export(*ex, out_dir);
  if (!written.ok()) return report_error(written.status());
  for (const std::string& path : *written) s += fmt::format("wrote {}\n", path);
  std::fputs(s.c_str(), stdout);
  return 0;
}

}  // namespace

Runner add_export(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  auto* sub = app.add_subcommand(
      "export",
      "Write a checked schedule as the files PyTorch's torch.distributed.pipelining runs: a compute-only CSV, "
      "the certified order with SEND/RECV and REDUCE_GRAD, and plan.json (docs/pytorch.md)");
  sub->add_option("SCHEDULE", a->schedule, "pipesmith-schedule/1 YAML, or a PyTorch CSV with --model")->required();
  sub->add_option("--to", a->to, "Target framework: pytorch")->required();
  sub->add_option("-o,--output", a->out_dir, "Directory to write (created if missing)")->required();
  sub->add_flag("--fsdp", a->fsdp, "Also write UNSHARD/RESHARD into compute_comms.csv, as PyTorch's FSDP lowering does");
  sub->add_option("--model", a->model,
                  "Model YAML: costs a CSV's stages; names layer types and modules (module:) in plan.json");
  sub->add_option("--cluster", a->cluster, "Cluster YAML (with --model)");
  return [a] { return run_export(*a); };
}

}  // namespace ps::cli
