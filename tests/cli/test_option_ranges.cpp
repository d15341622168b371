// The integer options' ranges through the command line: each flag of an integer option of the library's
// table (ir/limits.h, limits::option) refuses a value just below and just above its range with exit 1
// and one wording naming the flag, the table's range and the text given, before any work (the input
// files named here are never read); `--help` shows the same range.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "ir/limits.h"
#include "test_util.h"

using pstest::contains;
using pstest::check_refused;
using pstest::run_cli;

namespace {

namespace opt = ps::limits::option;

struct FlagCase {
  std::string command;  // "synth m.yaml": the subcommand and its positionals
  std::string flag;     // "--threads"
  ps::limits::IntOption option;
};

const std::vector<FlagCase>& flag_cases() {
  static const std::vector<FlagCase> cases = {
      {"lower m.yaml", "--devices", opt::kDevices},
      {"lower m.yaml", "--microbatches", opt::kMicrobatches},
      {"synth m.yaml", "--devices", opt::kDevices},
      {"baseline m.yaml --schedule 1f1b", "--microbatches", opt::kMicrobatches},
      {"synth m.yaml", "--evaluations", opt::kEvaluations},
      {"synth m.yaml", "--threads", opt::kZ3Threads},
      {"synth m.yaml", "--search-threads", opt::kSearchThreads},
      {"synth m.yaml", "--seed", opt::kSeed},
      {"synth m.yaml", "--rlimit", opt::kRlimit},
      {"synth m.yaml", "--gpus", opt::kMeshGpus},
      {"synth m.yaml", "--tensor-parallel", opt::kMeshTensor},
      {"lower m.yaml", "--context-parallel", opt::kMeshContext},
      {"bound m.yaml", "--expert-parallel", opt::kMeshExpert},
      {"baseline m.yaml --schedule 1f1b", "--expert-tensor-parallel", opt::kMeshExpertTensor},
      {"synth m.yaml", "--data-parallel", opt::kMeshData},
      {"synth m.yaml", "--micro-batch", opt::kMeshMicroBatch},
      {"synth m.yaml", "--global-batch", opt::kMeshGlobalBatch},
      {"plan m.yaml --global-batch 8", "--gpus", opt::kMeshGpus},
      {"plan m.yaml --gpus 8", "--global-batch", opt::kMeshGlobalBatch},
      {"run s.yaml", "--seed", opt::kSeed},
      {"plan m.yaml --gpus 8 --global-batch 8", "--top", opt::kMeshTop},
      {"plan m.yaml --gpus 8 --global-batch 8", "--evaluations", opt::kMeshEvaluations},
      {"plan m.yaml --gpus 8 --global-batch 8", "--devices", opt::kMeshDevices},
      {"run s.yaml", "--tokens", opt::kTokens},
      {"profile m.yaml", "--tokens", opt::kTokens},
      {"profile m.yaml", "--repeats", opt::kProfileRepeats},
      {"profile m.yaml", "--warmup", opt::kProfileWarmup},
      {"profile --backend torch --hf c.json", "--layers", opt::kProfileLayers},
      {"profile --backend torch m.yaml", "--hidden", opt::kProfileHidden},
      {"profile --backend torch m.yaml", "--seq", opt::kProfileSeq},
      {"profile --backend torch m.yaml", "--vocab", opt::kProfileVocab},
      {"profile --backend torch m.yaml", "--rows", opt::kProfileRows},
      {"profile --backend torch m.yaml", "--threads", opt::kProfileThreads},
      {"profile --backend torch m.yaml", "--concurrent", opt::kProfileConcurrent},
      {"import hf c.json", "--seq-length", opt::kImportSeqLength},
      {"import megatron a.txt", "--micro-batch-size", opt::kImportMicroBatchSize},
      {"import hf c.json", "--vocab-shards", opt::kImportVocabShards},
      {"verify s.yaml", "--microbatches", opt::kExpectedMicrobatches},
      {"simulate s.yaml", "--stages", opt::kExpectedStages},
      {"run s.yaml", "--microbatches", opt::kExpectedMicrobatches},
      {"convert s.csv s.yaml", "--microbatches", opt::kExpectedMicrobatches},
      {"convert s.csv s.yaml", "--stages", opt::kExpectedStages},
  };
  return cases;
}

}  // namespace

TEST_CASE("cli option ranges: every integer option's flag refuses the values next to its range") {
  for (const FlagCase& c : flag_cases()) {
    for (const long long v : {c.option.lo - 1, c.option.hi + 1}) {
      const auto r = run_cli(fmt::format("{} {} {}", c.command, c.flag, v));
      const std::string want =
          fmt::format("{}: must be an integer in [{}, {}], got '{}'", c.flag, c.option.lo, c.option.hi, v);
      INFO(c.command, " ", c.flag, " ", v, "\n", r.output);
      CHECK(r.exit_code == 1);
      CHECK(contains(r.output, want));
    }
  }
}

TEST_CASE("cli option ranges: plan --fix and --candidate values take the table's ranges and wording") {
  // Each dimension's range is its mesh option's (pipeline: plan --devices'); the model file is never read.
  struct Dim {
    const char* key;
    ps::limits::IntOption option;
  };
  for (const Dim& d : {Dim{"pipeline", opt::kMeshDevices}, Dim{"tensor", opt::kMeshTensor},
                       Dim{"context", opt::kMeshContext}, Dim{"expert", opt::kMeshExpert},
                       Dim{"expert_tensor", opt::kMeshExpertTensor}, Dim{"data", opt::kMeshData},
                       Dim{"micro_batch", opt::kMeshMicroBatch}}) {
    const std::string below = fmt::format("{}", d.option.lo - 1), above = fmt::format("{}", d.option.hi + 1);
    for (const std::string& v : {below, above, std::string("2x")}) {
      const auto r = run_cli(fmt::format("plan m.yaml --gpus 8 --global-batch 8 --fix {}={}", d.key, v));
      INFO(d.key, "=", v, "\n", r.output);
      CHECK(r.exit_code == 1);
      CHECK(contains(r.output, fmt::format("--fix {}: must be an integer in [{}, {}], got '{}'", d.key, d.option.lo,
                                           d.option.hi, v)));
    }
  }
  check_refused("plan m.yaml --gpus 8 --global-batch 8 --candidate pipeline=100001,tensor=2",
                "--candidate pipeline: must be an integer in [1, 100000], got '100001'");
  check_refused("plan m.yaml --gpus 8 --global-batch 8 --fix tensr=0", "--fix 'tensr=0': unknown dimension 'tensr'");
}

TEST_CASE("cli option ranges: the wording, the help and the library's own check are the table's") {
  // The table's numbers as the documentation gives them (docs/inputs.md, "Limits").
  check_refused("synth m.yaml --threads 65", "--threads: must be an integer in [1, 64], got '65'");
  check_refused("run s.yaml --tokens 2e3", "--tokens: must be an integer in [1, 65536], got '2e3'");
  check_refused("synth m.yaml --evaluations 1000000001",
                "--evaluations: must be an integer in [1, 1000000000], got '1000000001'");
  // --help shows each flag's range from the same table.
  const auto help = run_cli("synth --help");
  CHECK(help.exit_code == 0);
  for (const char* line : {"--evaluations INT:INT in [1, 1000000000]", "--threads INT:INT in [1, 64]",
                           "--search-threads INT:INT in [1, 256]", "--seed UINT:INT in [0, 4294967295]"})
    CHECK_MESSAGE(contains(help.output, line), line);
  CHECK(contains(help.output, "--rlimit UINT:INT in [0, 1000000000000000]"));
  CHECK(contains(help.output, "--tensor-parallel INT:INT in [1, 1048576]"));
  CHECK(contains(help.output, "--global-batch INT:INT in [1, 1048576000000]"));
  const auto plan = run_cli("plan --help");
  CHECK(contains(plan.output, "--gpus INT:INT in [1, 1048576]"));
  CHECK(contains(plan.output, "--top INT:INT in [1, 1000]"));
  CHECK(contains(plan.output, "--evaluations INT:INT in [1, 1000000]"));
  // The library's one check (the CLI's flags take their ranges from the same table), in its words.
  ps::Status st = ps::limits::check_option(opt::kZ3Threads, 0);
  CHECK(st.code() == ps::ErrorCode::kBadInput);
  CHECK(st.message() == "z3_threads must be an integer in [1, 64], got 0");
  CHECK(ps::limits::check_option(opt::kTokens, 70000, "--tokens").message() ==
        "--tokens must be an integer in [1, 65536], got 70000");
  CHECK(ps::limits::check_option(opt::kProfileWarmup, 0).is_ok());
  // A mesh's degrees from a file: the same check, located at the value.
  const ps::Status located =
      ps::limits::check_option(opt::kMeshTensor, 0, "parallel.tensor", ps::SourceLoc{"m.yaml", 3, 11});
  CHECK(located.str() == "m.yaml:3:11: parallel.tensor must be an integer in [1, 1048576], got 0");
}
