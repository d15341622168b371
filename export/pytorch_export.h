// pytorch_export.h — a checked schedule as the files PyTorch's torch.distributed.pipelining runs
// (`pipesmith export --to pytorch`; docs/pytorch.md is the user's description).
//
// Guarantees:
//  * Nothing is produced for a schedule the checker rejects (rendezvous semantics): `valid` is
//    false and `report` says why.
//  * compute_only_csv holds only F/I/W/B cells (OVERLAP_F_B pairs kept) and idle cells, rows =
//    ranks: what `_load_csv(path)` loads by default.
//  * compute_comms_csv is the certified programs — their SEND/RECV order exactly as checked — plus
//    one REDUCE_GRAD per stage after its last B or W on its rank (and, with `fsdp`,
//    UNSHARD/RESHARD as PyTorch's lowering places them): `_load_csv(path, format="compute_comms")`.
//    The k-th send from rank a to rank b matches the k-th receive on b from a (checked here).
//  * plan_json (schema pipesmith-plan/1) describes the ranks, stages, layers, module names and what
//    a module splitter cannot realize; it agrees with both CSVs.
//  * pytorch_* figures are those of the order PyTorch's own lowering gives compute_only_csv
//    (export/pytorch_lowering.h), run through the same checker and simulator.
//  * Recomputation: PyTorch's CSV has no R action, so neither CSV holds one; plan_json marks each
//    recomputing stage ("recompute": "selective" | "full"; absent for the others, so the plan of a
//    schedule without R is as without this rule) and the stage's module runs under
//    torch.utils.checkpoint, recomputing when its backward starts. The pytorch_* figures and
//    comms_at_backward_ms are of the orders with every R right before its I/B
//    (ir/recompute_ops.h, recompute_at_backward), simulated with each R waiting for its backward's
//    gradient (VerifyOptions::recompute_in_backward): what PyTorch runs.
//  * The last stage runs its forwards as microbatches 0, 1, ..., M-1 in both CSVs (microbatches are
//    renumbered if the schedule runs them otherwise; the renumbered schedule is re-checked and must
//    time the same), because PyTorch hands the k-th loss computed to the backward of microbatch k.
//  * Deterministic: the same inputs give byte-identical texts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/model.h"
#include "ir/output_file.h"
#include "ir/schedule.h"
#include "ir/status.h"
#include "verify/verify.h"

namespace ps {

struct PytorchExportOptions {
  bool fsdp = false;          // add UNSHARD/RESHARD to compute_comms_csv
  const Spec* spec = nullptr; // optional: names layer types and modules in the plan
  std::string model_file;     // for messages about `spec`
};

struct PytorchExport {
  bool valid = false;        // the checker accepted the schedule; nothing else is set otherwise
  Report report;             // the checker's report on the schedule
  std::string compute_only_csv;
  std::string compute_comms_csv;
  std::string plan_json;
  double certified_ms = 0;   // simulated iteration of the certified order
  bool pytorch_lowered = false;          // PyTorch's lowering of compute_only_csv completed
  std::vector<std::string> pytorch_blocked;  // otherwise: where it stopped
  bool pytorch_valid = false;            // the checker accepts that order (rendezvous)
  std::vector<std::string> pytorch_safe_under;  // semantics under which it is deadlock-free
  double pytorch_ms = 0;                 // its simulated iteration (0 if not simulated)
  bool recomputes = false;               // the schedule holds R ops
  int recompute_ops_moved = 0;           // R ops of the certified order not right before their I/B
  double comms_at_backward_ms = 0;       // with R ops: the certified order as PyTorch runs
                                         // compute_comms.csv (each R inside its backward);
                                         // else certified_ms
  int stages_split_inside_joined = 0;    // stages that start or end inside a joins_next group
  int stages_with_vocab_shards = 0;      // stages holding vocabulary shards
  int stages_with_skip_inputs = 0;       // stages a skip input (a non-chain layer input) crosses
  // Empty when the last stage runs its forwards in microbatch order; otherwise the files renumber
  // the microbatches so that it does (PyTorch pairs losses with backwards in that order), and
  // microbatch_renumbering[k] is the schedule's microbatch that the files call k.
  std::vector<int> microbatch_renumbering;
  // The model's tied parameters (tied_embeddings): the embedding's and the head projection's weight,
  // by module name + ".weight", with the stage holding each side (plan.json tied_parameters).
  struct Tie {
    std::vector<std::string> parameters;  // {"model.embed_tokens.weight", "lm_head.weight"}
    std::vector<int> stages;              // {0, 7}
  };
  std::vector<Tie> ties;
  std::vector<std::string> notes;
};

// What `pipesmith export` reads: a pipesmith-schedule/1 YAML (with an optional model, for names),
// or a PyTorch CSV with the model that costs it (verify/load.h: the model's balanced partition on
// the CSV's placement). A CSV without a model is bad input: it has neither layers nor costs.
struct ExportInput {
  Schedule schedule;
  std::optional<Spec> spec;
  std::string model_file;
  std::vector<std::string> notes;  // reader notes and how a CSV was costed
};
Result<ExportInput> load_export_input(const std::string& file, const std::string& model_file,
                                      const std::string& cluster_file);

// `schedule` carries its problem (YAML, or a CSV costed with a model). Errors: bad input (a spec
// whose layers do not match the stages' layer ranges); an internal error if a rule the export
// relies on fails.
Result<PytorchExport> export_pytorch(const Schedule& schedule, const PytorchExportOptions& options);

// The files an export writes into its directory, in this order: compute_only.csv, compute_comms.csv,
// plan.json.
const std::vector<std::string>& pytorch_export_file_names();

// Before any work: the directory `dir.path` exists or can be created (its nearest existing ancestor is a
// writable directory), and none of the export's files there is a directory, a dangling link or one of
// `inputs`. Messages name the directory by `dir.flag` ("-o", "out_dir").
Status check_export_dir(const OutputPath& dir, const std::vector<std::string>& inputs);

// Writes the three files of a valid export into `dir.path` as one set (ir/output_file.h: all or none),
// creating the directory and missing parents (removed again when the write fails). Returns the paths
// written, in the order of pytorch_export_file_names. An invalid export is kInvalidSchedule.
Result<std::vector<std::string>> write_pytorch_export(const PytorchExport& ex, const OutputPath& dir);

}  // namespace ps
