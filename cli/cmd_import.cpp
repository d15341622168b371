// `pipesmith import hf CONFIG.json -o MODEL.yaml` and `pipesmith import megatron ARGS_FILE -o MODEL.yaml` —
// a model YAML from what users have: a Hugging Face config.json or a Megatron-LM argument list
// (ir/hf_import.h, ir/megatron_import.h; docs/inputs.md, "Import"). The output is written whole or not
// at all; an output that names the input is refused before any work.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "ir/hf_import.h"
#include "ir/megatron_import.h"

namespace ps::cli {

namespace {

struct ImportFlags {
  std::string in;
  std::string out = "-";
  long long seq_length = 0;  // 0: not given
  long long micro_batch_size = 0;
  long long vocab_shards = 1;
  bool sublayers = false;
};

ImportOptions options_of(const ImportFlags& f) {
  ImportOptions o;
  if (f.seq_length > 0) o.seq_length = f.seq_length;
  if (f.micro_batch_size > 0) o.micro_batch_size = f.micro_batch_size;
  o.vocab_shards = f.vocab_shards;
  o.sublayers = f.sublayers;
  return o;
}

int run_import(const ImportFlags& f, bool megatron) {
  if (Status st = check_outputs({{f.out, "-o"}}, {f.in}); !st.is_ok()) return report_error(st);
  Result<std::string> yaml = megatron ? import_megatron_args(f.in, options_of(f)) : import_hf_config(f.in, options_of(f));
  if (!yaml.ok()) return report_error(yaml.status());
  if (Status st = write_text_file(f.out, *yaml); !st.is_ok()) return report_error(st);
  if (f.out != "-") {
    if (Status st = write_stdout(fmt::format("wrote {}\n", f.out)); !st.is_ok()) return report_error(st);
  }
  return 0;
}

void add_common(CLI::App* sub, ImportFlags& f, bool megatron) {
  sub->add_option("-o,--output", f.out, "Model YAML to write (default '-': standard output)");
  sub->add_option("--seq-length", f.seq_length,
                  megatron ? fmt::format("Tokens per sequence (default: the file's --seq-length, else {})",
                                         kDefaultImportSeqLength)
                           : fmt::format("Tokens per sequence (default {}: a config.json gives no training length)",
                                         kDefaultImportSeqLength))
      ->check(flags::option(limits::option::kImportSeqLength));
  sub->add_option("--micro-batch-size", f.micro_batch_size,
                  megatron ? "Sequences per microbatch (default: the file's --micro-batch-size, else 1)"
                           : "Sequences per microbatch (default 1)")
      ->check(flags::option(limits::option::kImportMicroBatchSize));
  sub->add_option("--vocab-shards", f.vocab_shards,
                  "Write the LM head (and each MTP head) as K vocabulary shards (docs/inputs.md, "
                  "\"Vocabulary-sharded heads\"; default 1)")
      ->check(flags::option(limits::option::kImportVocabShards));
  sub->add_flag("--sublayers", f.sublayers,
                "Write each decoder layer's mixer (attention, Mamba, ...) and its MLP/MoE as two layers joined by "
                "joins_next, so the search may cut between them (docs/inputs.md, \"Sublayers\")");
}

}  // namespace

Runner add_import(CLI::App& app) {
  auto hf = std::make_shared<ImportFlags>();
  auto mg = std::make_shared<ImportFlags>();
  auto* sub = app.add_subcommand("import",
                                 "Write a model YAML (docs/inputs.md) from a Hugging Face config.json or Megatron-LM "
                                 "arguments; costs are derived analytically from the architecture.");
  sub->require_subcommand(1);
  auto* h = sub->add_subcommand(
      "hf", fmt::format("From a Hugging Face config.json. model_types: {}. Another model_type is refused (exit 1): "
                        "write its YAML by hand (docs/inputs.md).",
                        hf_model_types()));
  h->add_option("CONFIG", hf->in, "The model's config.json")->required();
  add_common(h, *hf, false);
  auto* m = sub->add_subcommand(
      "megatron",
      "From a file of Megatron-LM arguments as a training script passes them (--num-layers 32 --hidden-size 4096 "
      "...; '#' comments and '\\' line ends are ignored). A --pipeline-model-parallel-layout is named in the "
      "header as the partition to compare with (synth --partition LAYOUT).");
  m->add_option("ARGS_FILE", mg->in, "The argument file")->required();
  add_common(m, *mg, true);
  return [hf, mg, h] { return h->parsed() ? run_import(*hf, false) : run_import(*mg, true); };
}

}  // namespace ps::cli
