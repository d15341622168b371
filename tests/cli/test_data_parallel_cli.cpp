// The data-parallel step through the command line, as a user runs it: a mesh with data parallelism
// writes one REDUCE_GRAD per stage into every schedule; ZB-H1, which defers weight gradients, leaves
// the last reduction exposed while the search hides most of it; the checker refuses a reduction moved
// before its stage's last backward (exit 3, located); export keeps the certified place.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>

#include "ir/schedule_io.h"
#include "test_util.h"

namespace data_parallel_cli_test {

using pstest::contains;
using pstest::read_file;
using pstest::run_cli;

const std::string kModel = pstest::source_path("tests/data/llama3-8b-dp8.yaml");

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

nlohmann::json verify_json(const std::string& file) {
  const pstest::CliResult r = run_cli("verify " + file + " --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output);
}

TEST_CASE("cli data-parallel: ZB-H1 exposes the last reduction; the search hides it and is faster") {
  const std::string dir = pstest::fresh_dir("dp-cli");
  const std::string zb = dir + "/zb.yaml", onef = dir + "/1f1b.yaml", syn = dir + "/synth.yaml";
  for (const auto& [sched, out] : {std::pair{"zb-h1", zb}, std::pair{"1f1b", onef}}) {
    const pstest::CliResult r = run_cli(fmt::format("baseline {} --schedule {} -o {}", kModel, sched, out));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.output, "data-parallel"));
    // One REDUCE_GRAD per stage (4 stages), and each stage's entry carries its step's time.
    const std::string text = read_file(out);
    CHECK(count(text, "REDUCE_GRAD") == 4);
    CHECK(count(text, "reduce_grad_ms: ") == 4);
  }
  const pstest::CliResult s = run_cli(fmt::format("synth {} --evaluations 300 --time-limit 5 --quiet -o {}", kModel, syn));
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  const nlohmann::json jz = verify_json(zb), j1 = verify_json(onef), js = verify_json(syn);
  const double zb_exposed = jz["exposed_data_parallel_ms"], syn_exposed = js["exposed_data_parallel_ms"];
  // ZB-H1 and 1F1B end with stage 0's last backward on device 0, so its whole reduction is exposed.
  CHECK(zb_exposed > 0);
  CHECK(zb_exposed == doctest::Approx(j1["exposed_data_parallel_ms"].get<double>()));
  // The search ends the pipeline on a stage whose reduction is small, and is faster overall.
  CHECK(syn_exposed < 0.5 * zb_exposed);
  CHECK(js["makespan_ms"].get<double>() < jz["makespan_ms"].get<double>());
  // Every makespan is at least the bound, which counts the reductions.
  for (const nlohmann::json* j : {&jz, &j1, &js})
    CHECK((*j)["makespan_ms"].get<double>() >= (*j)["lower_bound_ms"].get<double>() - 1e-6);
}

TEST_CASE("cli data-parallel: a REDUCE_GRAD before its stage's last backward is refused, located (exit 3)") {
  const std::string dir = pstest::fresh_dir("dp-cli-moved");
  const std::string good = dir + "/good.yaml", bad = dir + "/bad.yaml";
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", kModel, good)).exit_code == 0);
  // Move device 0's reduction to just after its first op.
  const std::string written = read_file(good);
  std::string text = std::regex_replace(written, std::regex(",\\s*0REDUCE_GRAD"), "");
  REQUIRE(text != written);
  const size_t first = text.find("ops: [0F0");
  REQUIRE(first != std::string::npos);
  text.insert(first + std::string("ops: [0F0").size(), ", 0REDUCE_GRAD");
  std::ofstream(bad) << text;
  const pstest::CliResult r = run_cli("verify " + bad);
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(contains(r.output, "dependency: [device 0, op 1 '0REDUCE_GRAD']"));
  CHECK(std::regex_search(r.output, std::regex(bad + ":[0-9]+:[0-9]+: dependency")));
}

TEST_CASE("cli data-parallel: export keeps one REDUCE_GRAD per stage, where the checker certified it") {
  const std::string dir = pstest::fresh_dir("dp-cli-export");
  const std::string sched = dir + "/s.yaml", out = dir + "/pt";
  REQUIRE(run_cli(fmt::format("baseline {} --schedule zb-h1 -o {}", kModel, sched)).exit_code == 0);
  const pstest::CliResult r = run_cli(fmt::format("export --to pytorch {} -o {}", sched, out));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string csv = read_file(out + "/compute_comms.csv");
  CHECK(count(csv, "REDUCE_GRAD") == 4);
  for (int s = 0; s < 4; ++s) CHECK(count(csv, fmt::format("{}REDUCE_GRAD", s)) == 1);
  CHECK_FALSE(contains(read_file(out + "/compute_only.csv"), "REDUCE_GRAD"));
}

TEST_CASE("cli data-parallel: FSDP gathers each stage before its first op and frees it after its reduction") {
  const std::string dir = pstest::fresh_dir("dp-cli-fsdp");
  const std::string dist = dir + "/dist.yaml", fsdp = dir + "/fsdp.yaml", out = dir + "/pt";
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", kModel, dist)).exit_code == 0);
  const pstest::CliResult r = run_cli(fmt::format("baseline {} --optimizer fsdp --schedule 1f1b -o {}", kModel, fsdp));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string text = read_file(fsdp);
  for (const char* op : {"UNSHARD", "RESHARD", "REDUCE_GRAD"}) CHECK(count(text, op) == 4);
  CHECK(count(text, "unsharded_mb: ") == 4);
  CHECK(contains(text, "ops: [0UNSHARD, 0F0"));
  CHECK(std::regex_search(text, std::regex("0B7,\\s*0REDUCE_GRAD,\\s*0RESHARD")));
  // FSDP's first forward waits for its stage's gather; the distributed optimizer gathers the updated
  // weights after the last reduction instead. The stages are alike, so 1F1B exposes one such gather
  // either way: the same iteration.
  const nlohmann::json jf = verify_json(fsdp), jd = verify_json(dist);
  CHECK(jf["makespan_ms"].get<double>() == doctest::Approx(jd["makespan_ms"].get<double>()));
  CHECK(jf["valid"] == true);
  // Export with --fsdp keeps the certified gathers: one UNSHARD and one RESHARD per stage.
  const pstest::CliResult e = run_cli(fmt::format("export --to pytorch {} -o {} --fsdp", fsdp, out));
  INFO(e.output);
  REQUIRE(e.exit_code == 0);
  CHECK(contains(e.output, "compute_comms.csv keeps REDUCE_GRAD, UNSHARD and RESHARD where the checker certified"));
  const std::string csv = read_file(out + "/compute_comms.csv");
  for (int s = 0; s < 4; ++s)
    for (const char* op : {"UNSHARD", "RESHARD", "REDUCE_GRAD"}) CHECK(count(csv, fmt::format("{}{}", s, op)) == 1);
  // The exported file read back: its data-parallel ops are checked where it holds them.
  const pstest::CliResult v = run_cli("verify " + out + "/compute_comms.csv");
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(contains(v.output, "12 UNSHARD/RESHARD/REDUCE_GRAD action(s): kept where the file places them"));
}

TEST_CASE("cli data-parallel: synth --csv of an FSDP mesh reads back to the same programs, costed by the model") {
  const std::string dir = pstest::fresh_dir("dp-cli-csv");
  const std::string yaml = dir + "/s.yaml", csv = dir + "/s.csv";
  const pstest::CliResult r =
      run_cli(fmt::format("synth {} --optimizer fsdp --evaluations 20 --quiet -o {} --csv {}", kModel, yaml, csv));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto y = ps::read_schedule_yaml(yaml);
  REQUIRE_MESSAGE(y.ok(), y.status().str());
  auto c = ps::read_pytorch_csv(csv);
  REQUIRE_MESSAGE(c.ok(), c.status().str());
  CHECK(c->schedule.programs == y->programs);
  REQUIRE(c->schedule.problem.num_stages() == y->problem.num_stages());
  for (const ps::StageSpec& st : c->schedule.problem.stages) {
    CHECK(st.reduces_grad);
    CHECK(st.fsdp);
  }
  // Read alone (unit costs) the reductions take no time; costed by the model they do.
  CHECK(verify_json(csv)["exposed_data_parallel_ms"].get<double>() == 0);
  // Costed by the model's mesh (distributed optimizer): the reductions take their time where the CSV
  // puts them; FSDP's UNSHARD/RESHARD, which that mesh does not have, take none.
  const pstest::CliResult m = run_cli("verify " + csv + " --model " + kModel + " --json");
  INFO(m.output);
  REQUIRE(m.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(m.output);
  CHECK(j["exposed_data_parallel_ms"].get<double>() > 0);
  CHECK(contains(m.output, "the model does not shard stage(s) 0, 1, 2, "));
}

}  // namespace data_parallel_cli_test
