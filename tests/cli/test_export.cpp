// `pipesmith export --to pytorch` through the command line, as a user runs it: every baseline and a
// synthesized schedule with an irregular placement, checked against the tests' own reading of
// PyTorch's rules (tests/pytorch_rules.h).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "pytorch_rules.h"
#include "test_util.h"

using pstest::contains;
using pstest::dir_entries;
using pstest::fresh_dir;
using pstest::read_file;
using pstest::run_cli;
using pstest::source_path;
using pstest::temp_path;
namespace pt = pstest::pt;

namespace {

const std::string kExportLlama = source_path("configs/models/llama2-7b.yaml");
const std::string kExportGemma = source_path("configs/models/gemma-like.yaml");

struct Exported {
  std::vector<pt::Row> only, comms;
  nlohmann::json plan;
  std::string output;
};

Exported export_ok(const std::string& schedule, const std::string& extra, const std::string& dir) {
  std::filesystem::remove_all(dir);
  auto r = run_cli(fmt::format("export {} --to pytorch -o {} {}", schedule, dir, extra));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Exported e;
  e.output = r.output;
  REQUIRE(pt::parse_csv(read_file(dir + "/compute_only.csv"), e.only) == "");
  REQUIRE(pt::parse_csv(read_file(dir + "/compute_comms.csv"), e.comms) == "");
  e.plan = nlohmann::json::parse(read_file(dir + "/plan.json"));
  return e;
}

// The compute cells of each rank, in order (idle cells and comms dropped).
std::vector<std::vector<std::string>> compute_order(const std::vector<pt::Row>& rows) {
  std::vector<std::vector<std::string>> out(rows.size());
  for (size_t r = 0; r < rows.size(); ++r)
    for (const auto& c : rows[r])
      if (c && pt::is_compute(c->type))
        for (const pt::Act& a : pt::leaves(*c)) out[r].push_back(fmt::format("{}{}{}", a.stage, a.type, a.mb));
  return out;
}

// Everything the export promises, read back from the three files.
void check_export(const Exported& e, int P, int M) {
  const nlohmann::json& plan = e.plan;
  REQUIRE(plan["schema"] == "pipesmith-plan/1");
  CHECK(plan["devices"] == P);
  CHECK(plan["microbatches"] == M);
  const int S = plan["num_stages"].get<int>();
  const auto s2r = plan["stage_to_rank"].get<std::vector<int>>();
  REQUIRE(static_cast<int>(s2r.size()) == S);
  const auto r2s = plan["rank_to_stages"].get<std::vector<std::vector<int>>>();
  REQUIRE(static_cast<int>(r2s.size()) == P);
  for (int r = 0; r < P; ++r) {
    CHECK(std::is_sorted(r2s[r].begin(), r2s[r].end()));
    for (int s : r2s[r]) CHECK(s2r.at(s) == r);
  }
  REQUIRE(plan["stages"].size() == static_cast<size_t>(S));
  int next_layer = 0;
  for (int s = 0; s < S; ++s) {
    const auto& st = plan["stages"][s];
    CHECK(st["stage"] == s);
    CHECK(st["rank"] == s2r[s]);
    CHECK(st["layers"][0] == next_layer);
    next_layer = st["layers"][1].get<int>() + 1;
    CHECK(st["layer_types"].size() == static_cast<size_t>(st["layers"][1].get<int>() - st["layers"][0].get<int>() + 1));
  }

  // compute_only.csv: what `_load_csv(path)` accepts, placing stages as the plan says.
  CHECK(pt::compute_only(e.only) == "");
  std::vector<int> rank_only, rank_comms;
  CHECK(pt::validate(e.only, P, S, M, rank_only) == "");
  CHECK(rank_only == s2r);

  // compute_comms.csv: no idle cell, valid, completes, messages pair up in order, one REDUCE_GRAD
  // per stage after its last backward; the same compute order as compute_only.csv.
  for (const auto& row : e.comms)
    for (const auto& c : row) CHECK(c.has_value());
  CHECK(pt::validate(e.comms, P, S, M, rank_comms) == "");
  CHECK(rank_comms == s2r);
  CHECK(pt::dry_run(e.comms, s2r) == "");
  CHECK(pt::pairwise_order(e.comms, s2r) == "");
  CHECK(pt::reduce_grad_once(e.comms, s2r) == "");
  CHECK(compute_order(e.comms) == compute_order(e.only));
  CHECK(contains(e.output, "certified"));
  CHECK(contains(e.output, "pytorch order"));
  CHECK(contains(e.output, "deadlock-free under rendezvous"));
}

}  // namespace

TEST_CASE("cli export: every baseline, read back by PyTorch's rules") {
  const std::string yaml = temp_path("export-baseline.yaml");
  const std::string dir = temp_path("export-baseline");
  for (const char* kind : {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "zbv", "dualpipev"}) {
    INFO(kind);
    auto b = run_cli(fmt::format("baseline {} --schedule {} --devices 4 --microbatches 8 -o {}", kExportLlama, kind, yaml));
    INFO(b.output);
    REQUIRE(b.exit_code == 0);
    Exported e = export_ok(yaml, "--model " + kExportLlama, dir);
    check_export(e, 4, 8);
    CHECK(e.plan["whole_modules"] == true);
    // REDUCE_GRAD is PyTorch's to add when it lowers a compute-only file.
    for (const auto& row : e.only)
      for (const auto& c : row) CHECK((!c || c->type != "REDUCE_GRAD"));
  }
  std::filesystem::remove(yaml);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli export: a synthesized schedule with an irregular placement and uneven stage counts") {
  const std::string yaml = temp_path("export-synth.yaml");
  const std::string dir = temp_path("export-synth");
  // 7 stages on 4 devices, not looped: devices 0-2 hold two stages, device 3 one.
  auto r = run_cli(fmt::format("synth {} --devices 4 --microbatches 8 --placement 0,1,2,3,1,0,2 --evaluations 50 "
                               "--time-limit 5 --quiet -o {}",
                               kExportGemma, yaml));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Exported e = export_ok(yaml, "--model " + kExportGemma + " --fsdp", dir);
  check_export(e, 4, 8);
  CHECK(e.plan["stage_to_rank"] == nlohmann::json::array({0, 1, 2, 3, 1, 0, 2}));
  CHECK(e.plan["rank_to_stages"] == nlohmann::json::parse("[[0, 5], [1, 4], [2, 6], [3]]"));
  CHECK(e.plan["fsdp"] == true);
  // Gemma-like's 16 head shards sit in the last stage(s): flagged, and the plan is not whole modules.
  CHECK(e.plan["stages"][6]["vocab_shards"] == true);
  CHECK(e.plan["whole_modules"] == false);
  CHECK(contains(e.output, "vocabulary shards"));
  // --fsdp: every stage is unsharded before its first compute and resharded after its last.
  const auto s2r = e.plan["stage_to_rank"].get<std::vector<int>>();
  for (int s = 0; s < 7; ++s) {
    const auto& row = e.comms[s2r[s]];
    int unshard = -1, reshard = -1, first = -1, last = -1;
    for (int i = 0; i < static_cast<int>(row.size()); ++i) {
      const pt::Act& c = *row[i];
      if (c.stage == s && c.type == "UNSHARD" && unshard < 0) unshard = i;
      if (c.stage == s && c.type == "RESHARD") reshard = i;
      for (const pt::Act& a : pt::leaves(c))
        if (a.stage == s && pt::is_compute(a.type)) last = i, first = first < 0 ? i : first;
    }
    INFO("stage ", s);
    CHECK(unshard >= 0);
    CHECK(unshard < first);
    CHECK(reshard > last);
  }
  std::filesystem::remove(yaml);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli export: a PyTorch CSV with --model, and bad input") {
  const std::string dir = temp_path("export-csv");
  const std::string csv = source_path("tests/data/pytorch/ScheduleInterleaved1F1B_p2_m4_v2.csv");
  std::filesystem::remove_all(dir);
  // A CSV holds neither layers nor costs: --model is required, and nothing is written without it.
  auto r = run_cli(fmt::format("export {} --to pytorch -o {}", csv, dir));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "holds neither layers nor costs: give a model file"));
  CHECK(!std::filesystem::exists(dir));
  Exported e = export_ok(csv, "--model " + kExportGemma, dir);
  check_export(e, 2, 4);
  CHECK(e.plan["stages"][0]["layer_types"][0] == "embedding");

  // An invalid schedule: the checker's report, exit 3, nothing written.
  std::filesystem::remove_all(dir);
  r = run_cli(fmt::format("export {} --to pytorch -o {} --model {}",
                          source_path("configs/invalid-schedules/deadlock.csv"), dir, kExportLlama));
  CHECK(r.exit_code == 3);
  CHECK(contains(r.output, "deadlock"));
  CHECK(contains(r.output, "nothing written"));
  CHECK(!std::filesystem::exists(dir));

  // -o naming an existing file, an unknown target.
  const std::string file = temp_path("export-not-a-dir");
  std::ofstream(file) << "x";
  r = run_cli(fmt::format("export {} --to pytorch -o {} --model {}", csv, file, kExportLlama));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "is not a directory"));
  CHECK(read_file(file) == "x");
  r = run_cli(fmt::format("export {} --to jax -o {} --model {}", csv, dir, kExportLlama));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "--to must be 'pytorch'"));
  std::filesystem::remove(file);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli synth --cuts layers: stages a module splitter can build, and the plan says so") {
  const std::string yaml = temp_path("export-cuts.yaml");
  const std::string dir = temp_path("export-cuts");
  for (const char* cuts : {"layers", "sublayers"}) {
    INFO(cuts);
    auto r = run_cli(fmt::format("synth {} --devices 4 --microbatches 8 --evaluations 50 --time-limit 5 --quiet "
                                 "--cuts {} -o {}",
                                 kExportGemma, cuts, yaml));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    Exported e = export_ok(yaml, "--model " + kExportGemma, dir);
    check_export(e, 4, 8);
    int inside = 0;
    for (const auto& st : e.plan["stages"])
      inside += st["starts_inside_joined_layer"].get<bool>() + st["ends_inside_joined_layer"].get<bool>();
    if (std::string(cuts) == "layers") CHECK(inside == 0);
  }
  auto bad = run_cli(fmt::format("synth {} --cuts modules -o {}", kExportGemma, yaml));
  CHECK(bad.exit_code == 1);
  CHECK(contains(bad.output, "--cuts"));
  std::filesystem::remove(yaml);
  std::filesystem::remove_all(dir);
}

namespace {

// A shipped model synthesized on 4 devices, M = 8, and exported with its model file.
void check_model_export(const char* name) {
  INFO(name);
  const std::string yaml = temp_path("export-model.yaml");
  const std::string dir = temp_path("export-model");
  const std::string model = source_path(fmt::format("configs/models/{}.yaml", name));
  auto r = run_cli(fmt::format("synth {} --devices 4 --microbatches 8 --evaluations 50 --time-limit 5 --quiet -o {}",
                               model, yaml));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Exported e = export_ok(yaml, "--model " + model, dir);
  check_export(e, 4, 8);
  bool skip = false;
  for (const auto& st : e.plan["stages"]) skip = skip || st["skip_inputs_cross"].get<bool>();
  // DeepSeek-like's MTP module reads the embedding: that tensor crosses every boundary before it.
  CHECK(skip == (std::string(name) == "deepseek-like"));
  if (skip) CHECK(e.plan["whole_modules"] == false);
  std::filesystem::remove(yaml);
  std::filesystem::remove_all(dir);
}

}  // namespace

TEST_CASE("cli export: a synthesized schedule of a shipped model whose inputs skip stages (deepseek-like)") {
  check_model_export("deepseek-like");
}

TEST_CASE("[slow] cli export: a synthesized schedule of every other shipped model") {
  for (const char* name : {"gemma-like", "gpt-oss-like", "llama2-7b", "minimax-like", "nemotron-h-like"})
    check_model_export(name);
}

namespace {

const char* const kExportNames[] = {"compute_only.csv", "compute_comms.csv", "plan.json"};

// The three files of an export in `dir`, by name ("" for one that is missing or not a regular file).
std::map<std::string, std::string> export_set(const std::string& dir) {
  std::map<std::string, std::string> set;
  for (const char* name : kExportNames) {
    const std::string path = dir + "/" + name;
    set[name] = std::filesystem::is_regular_file(path) ? read_file(path) : "";
  }
  return set;
}

}  // namespace

TEST_CASE("cli export: an input under one of the three output names is refused before any work, the input untouched") {
  namespace fs = std::filesystem;
  const std::string yaml = temp_path("export-inputs.yaml");
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b --devices 4 --microbatches 8 -o {}", kExportLlama, yaml))
              .exit_code == 0);
  const std::string csv = source_path("tests/data/pytorch/ScheduleGPipe_p2_m4_v1.csv");
  const std::string cluster = source_path("configs/clusters/8xh100-80gb.yaml");
  const std::string outside = temp_path("export-inputs-model.yaml");
  fs::copy_file(kExportLlama, outside, fs::copy_options::overwrite_existing);
  struct Case {
    const char* name;        // the output name the input sits under in DIR
    std::string source;      // what the input holds
    std::string args;        // {0} = DIR
    std::string input;       // the input as the message names it
    bool symlink = false;    // DIR/name is a symbolic link to `source` (the input named by `input`)
  };
  const std::string dir = temp_path("export-inputs");
  const Case cases[] = {
      {"plan.json", yaml, "export {0}/plan.json --to pytorch -o {0}", dir + "/plan.json"},
      {"compute_only.csv", csv, "export {0}/compute_only.csv --to pytorch -o {0} --model " + kExportLlama,
       dir + "/compute_only.csv"},
      {"compute_only.csv", kExportLlama, "export " + yaml + " --to pytorch -o {0} --model {0}/compute_only.csv",
       dir + "/compute_only.csv"},
      {"compute_comms.csv", cluster,
       "export " + csv + " --to pytorch -o {0} --model " + kExportLlama + " --cluster {0}/compute_comms.csv",
       dir + "/compute_comms.csv"},
      {"plan.json", outside, "export " + yaml + " --to pytorch -o {0} --model " + outside, outside, true},
  };
  for (const Case& c : cases) {
    fresh_dir("export-inputs");
    const std::string in_dir = dir + "/" + c.name;
    if (c.symlink) fs::create_symlink(c.source, in_dir);
    else fs::copy_file(c.source, in_dir);
    const std::string before = read_file(in_dir);
    const std::string args = fmt::format(fmt::runtime(c.args), dir);
    auto r = run_cli(args);
    INFO(args, "\n", r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, fmt::format("pipesmith: error: refusing to write '{}' (-o): it is the input file '{}', "
                                         "which the output would replace",
                                         in_dir, c.input)));
    CHECK_FALSE(contains(r.output, "pipesmith export:"));  // refused before the schedule was read
    CHECK_FALSE(contains(r.output, "wrote"));
    CHECK(read_file(in_dir) == before);
    CHECK(read_file(c.source) == before);
    CHECK(fs::is_symlink(fs::symlink_status(in_dir)) == c.symlink);
    CHECK(dir_entries(dir) == std::set<std::string>{c.name});
  }
  fs::remove_all(dir);
  fs::remove(yaml);
  fs::remove(outside);
}

TEST_CASE("cli export: the three files are one set — a failure at the third leaves the old set whole, no temporary") {
  namespace fs = std::filesystem;
  const std::string old_yaml = temp_path("export-set-old.yaml"), new_yaml = temp_path("export-set-new.yaml");
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b --devices 4 --microbatches 8 -o {}", kExportLlama, old_yaml))
              .exit_code == 0);
  REQUIRE(run_cli(fmt::format("baseline {} --schedule interleaved-1f1b --devices 4 --microbatches 8 -o {}", kExportLlama,
                              new_yaml))
              .exit_code == 0);
  const std::string dir = fresh_dir("export-set");
  const std::string model_arg = "--model " + kExportLlama;
  auto export_into = [&](const std::string& yaml, const std::string& to, const std::string& env = "") {
    return run_cli(fmt::format("export {} --to pytorch -o {} {}", yaml, to, model_arg), env);
  };
  REQUIRE(export_into(old_yaml, dir).exit_code == 0);
  const auto old_set = export_set(dir);
  const std::set<std::string> three = {"compute_only.csv", "compute_comms.csv", "plan.json"};
  const std::string none_changed =
      fmt::format("none of '{0}/compute_only.csv', '{0}/compute_comms.csv' and '{0}/plan.json' was changed", dir);

  // The third file fails at each step of the writer, the first two already whole in their temporaries
  // ("rename": the first two already renamed into place, and put back).
  for (const char* fault : {"enospc:0", "enospc:100", "fsync", "close", "rename", "named,enospc:100", "named,fsync",
                            "named,close", "named,rename"}) {
    const std::string env = fmt::format("PIPESMITH_WRITE_FAULT={},on:plan.json", fault);
    CAPTURE(env);
    auto r = export_into(new_yaml, dir, env);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, fmt::format("pipesmith: error: cannot write '{}/plan.json': ", dir)));
    CHECK(contains(r.output, none_changed));
    CHECK_FALSE(contains(r.output, "wrote"));
    CHECK(export_set(dir) == old_set);
    CHECK(dir_entries(dir) == three);  // no temporary, no kept-aside copy
  }
  // The first file's rename fails: nothing to put back.
  auto first = export_into(new_yaml, dir, "PIPESMITH_WRITE_FAULT=rename,on:compute_only.csv");
  CHECK(first.exit_code == 1);
  CHECK(contains(first.output, fmt::format("cannot write '{}/compute_only.csv': cannot rename the temporary file over it: "
                                           "Input/output error; {}",
                                           dir, none_changed)));
  CHECK(export_set(dir) == old_set);
  CHECK(dir_entries(dir) == three);

  // plan.json a directory: refused before any work; the CSVs stay the old ones.
  const std::string dir2 = fresh_dir("export-set-dir");
  REQUIRE(export_into(old_yaml, dir2).exit_code == 0);
  fs::remove(dir2 + "/plan.json");
  fs::create_directory(dir2 + "/plan.json");
  const auto old_csvs = export_set(dir2);
  auto r = export_into(new_yaml, dir2);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, fmt::format("pipesmith: error: cannot write '{}/plan.json' (-o): it is a directory", dir2)));
  CHECK_FALSE(contains(r.output, "pipesmith export:"));
  CHECK(export_set(dir2) == old_csvs);
  CHECK(fs::is_directory(dir2 + "/plan.json"));
  CHECK(dir_entries(dir2) == three);

  // A DIR the export creates is removed again when the set fails.
  const std::string fresh = temp_path("export-set-new") + "/a/b";
  fs::remove_all(temp_path("export-set-new"));
  auto created = export_into(new_yaml, fresh, "PIPESMITH_WRITE_FAULT=fsync,on:plan.json");
  CHECK(created.exit_code == 1);
  CHECK_FALSE(fs::exists(temp_path("export-set-new")));

  // Without a fault the new set replaces the old one whole.
  REQUIRE(export_into(new_yaml, dir).exit_code == 0);
  const auto new_set = export_set(dir);
  CHECK(new_set.at("compute_only.csv") != old_set.at("compute_only.csv"));
  const std::string ref = fresh_dir("export-set-ref");
  REQUIRE(export_into(new_yaml, ref).exit_code == 0);
  CHECK(export_set(ref) == new_set);
  CHECK(dir_entries(dir) == three);
  for (const std::string& d : {dir, dir2, ref}) fs::remove_all(d);
  fs::remove(old_yaml);
  fs::remove(new_yaml);
}
