// Recomputation through the `pipesmith` binary: `baseline --recompute` writes R ops and recompute
// fields that `verify` accepts with a lower peak, `run --backend host` replays them with exact
// gradients and the memory rule, and the CSV outputs refuse R.
#include <doctest/doctest.h>

#include <algorithm>

#include "ir/schedule_io.h"
#include "test_util.h"

namespace recompute_cli_test {

using pstest::run_cli;

std::string llama() { return pstest::source_path("configs/models/llama2-7b.yaml"); }

std::string write_baseline(const std::string& kind, const std::string& mode, int P, int M) {
  const std::string out = pstest::temp_path("rc-" + kind + "-" + mode + "-p" + std::to_string(P) + ".yaml");
  auto r = run_cli("baseline " + llama() + " --schedule " + kind + " --devices " + std::to_string(P) +
                   " --microbatches " + std::to_string(M) + " --recompute " + mode + " -o " + out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  if (mode != "none") CHECK(pstest::contains(r.output, "recompute     " + mode + " on every stage"));
  return out;
}

TEST_CASE("cli recompute: baseline 1f1b --recompute full verifies VALID with a lower peak, as worked out by hand") {
  const std::string none = write_baseline("1f1b", "none", 4, 8);
  const std::string full = write_baseline("1f1b", "full", 4, 8);
  auto v = run_cli("verify " + full);
  CHECK_MESSAGE(v.exit_code == 0, v.output);
  CHECK(pstest::contains(v.output, "VALID under rendezvous semantics"));
  auto a = ps::read_schedule_yaml(none);
  auto b = ps::read_schedule_yaml(full);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->certificate);
  REQUIRE(b->certificate);
  // Every stage recomputes fully, and every I/B has its R right before it.
  for (const auto& st : b->problem.stages) CHECK(st.recompute == ps::RecomputeMode::kFull);
  for (const auto& prog : b->programs)
    for (size_t i = 0; i < prog.size(); ++i)
      if (prog[i].type == ps::OpType::B) {
        REQUIRE(i > 0);
        size_t j = i - 1;
        while (j > 0 && ps::is_comm(prog[j].type)) --j;
        CHECK(prog[j].type == ps::OpType::R);
        CHECK(prog[j].stage == prog[i].stage);
        CHECK(prog[j].mb == prog[i].mb);
      }
  // Device 0 under 1F1B on P = 4 has 4 forwards in flight when its first backward comes:
  // without recomputation 4 activations; with it, 4 kept inputs, then R adds one activation less its kept
  // part: states + 3·kept + activation.
  const auto& s0 = b->problem.stages[0];
  const double states = s0.params_m * b->problem.bytes_per_param;
  const double by_hand_none = states + 4 * s0.activation_mb;
  const double by_hand_full = states + 3 * s0.recompute_kept_mb + s0.activation_mb;
  CHECK(a->certificate->peak_memory_gb[0] * 1000 == doctest::Approx(by_hand_none).epsilon(1e-6));
  CHECK(b->certificate->peak_memory_gb[0] * 1000 == doctest::Approx(by_hand_full).epsilon(1e-6));
  const double peak_none = *std::max_element(a->certificate->peak_memory_gb.begin(), a->certificate->peak_memory_gb.end());
  const double peak_full = *std::max_element(b->certificate->peak_memory_gb.begin(), b->certificate->peak_memory_gb.end());
  CHECK(peak_full < peak_none);
  // R costs time: the same order with R ops is slower.
  CHECK(b->certificate->makespan_ms > a->certificate->makespan_ms);
  // Without --recompute, the file is the one written before: no recompute words in it.
  CHECK_FALSE(pstest::contains(pstest::read_file(none), "recompute"));
}

TEST_CASE("cli recompute: run --backend host replays R with exact gradients and the memory rule") {
  for (const char* mode : {"full", "selective"}) {
    CAPTURE(mode);
    const std::string file = write_baseline("zb-h1", mode, 2, 4);
    auto r = run_cli("run " + file + " --model " + llama() + " --backend host --check-gradients --scale 0.125 --tokens 8");
    CHECK_MESSAGE(r.exit_code == 0, r.output);
    CHECK_MESSAGE(pstest::contains(r.output, "max |diff| 0, max relative 0"), r.output);
    CHECK(pstest::contains(r.output, "equal the memory rule (this model's sizes) after every op on 2/2 devices"));
  }
}

TEST_CASE("cli recompute: CSV outputs refuse a schedule with R; --help names the flag; bad modes are refused") {
  const std::string csv = pstest::temp_path("rc-refused.csv");
  auto r = run_cli("baseline " + llama() + " --schedule 1f1b --devices 2 --microbatches 4 --recompute full --csv " + csv);
  CHECK(r.exit_code != 0);
  CHECK(pstest::contains(r.output, "cannot write a PyTorch CSV"));
  const std::string file = write_baseline("1f1b", "full", 2, 4);
  auto c = run_cli("convert " + file + " " + csv);
  CHECK(c.exit_code != 0);
  CHECK(pstest::contains(c.output, "'0R0'"));
  auto h = run_cli("baseline --help");
  CHECK(pstest::contains(h.output, "--recompute"));
  auto bad = run_cli("baseline " + llama() + " --schedule 1f1b --recompute partial");
  CHECK(bad.exit_code != 0);
}

std::string without_idle_cells(std::string csv) {
  for (size_t at; (at = csv.find(",,")) != std::string::npos;) csv.erase(at, 1);
  for (size_t at; (at = csv.find("\n,")) != std::string::npos;) csv.erase(at + 1, 1);
  if (!csv.empty() && csv[0] == ',') csv.erase(0, 1);
  return csv;
}

// "  pytorch order  1234.567 ms (+1.0%) ..." -> 1234.567 (-1 when the line is missing).
double figure_ms(const std::string& out, const std::string& label) {
  const size_t at = out.find("  " + label + "  ");
  if (at == std::string::npos) return -1;
  return std::stod(out.substr(at + label.size() + 4));
}

TEST_CASE("cli recompute: export --to pytorch drops R, marks the stages in plan.json and prices R inside the backward") {
  const std::string none = write_baseline("1f1b", "none", 2, 4);
  const std::string full = write_baseline("1f1b", "full", 2, 4);
  const std::string dn = pstest::fresh_dir("rc-export-none");
  const std::string df = pstest::fresh_dir("rc-export-full");
  auto en = run_cli("export " + none + " --to pytorch -o " + dn + " --model " + llama());
  auto ef = run_cli("export " + full + " --to pytorch -o " + df + " --model " + llama());
  REQUIRE_MESSAGE(en.exit_code == 0, en.output);
  REQUIRE_MESSAGE(ef.exit_code == 0, ef.output);
  // The files hold no R: they are the plain schedule's files, whose backwards carry the R (the
  // compute-only file's idle cells follow the certified times, which R lengthens).
  CHECK(pstest::read_file(df + "/compute_comms.csv") == pstest::read_file(dn + "/compute_comms.csv"));
  CHECK(without_idle_cells(pstest::read_file(df + "/compute_only.csv")) ==
        without_idle_cells(pstest::read_file(dn + "/compute_only.csv")));
  const std::string plan = pstest::read_file(df + "/plan.json");
  size_t marked = 0;
  for (size_t at = plan.find("\"recompute\": \"full\""); at != std::string::npos;
       at = plan.find("\"recompute\": \"full\"", at + 1))
    ++marked;
  CHECK(marked == 2);
  CHECK_FALSE(pstest::contains(pstest::read_file(dn + "/plan.json"), "recompute"));
  // R costs time in PyTorch's runs of both files, and the plain export states no comms figure.
  CHECK(pstest::contains(ef.output, "R op(s) move there"));
  CHECK(figure_ms(en.output, "pytorch comms") < 0);
  const double order_none = figure_ms(en.output, "pytorch order");
  const double order_full = figure_ms(ef.output, "pytorch order");
  const double comms_full = figure_ms(ef.output, "pytorch comms");
  const double certified_full = figure_ms(ef.output, "certified");
  REQUIRE(order_none > 0);
  CHECK(order_full > order_none);
  CHECK(comms_full >= certified_full - 1e-3);
  CHECK(pstest::contains(ef.output, "2 stage(s) recompute"));
}

TEST_CASE("cli recompute: synth gives stages recomputation where no plan fits without it, certified") {
  const std::string model = pstest::source_path("tests/data/recompute/needs-recompute.yaml");
  const std::string out = pstest::temp_path("rc-synth.yaml");
  auto none = run_cli("synth " + model + " --evaluations 30 --recompute none --quiet -o " + out);
  CHECK_MESSAGE(none.exit_code == 2, none.output);
  auto r = run_cli("synth " + model + " --evaluations 30 --rlimit 3000000 --time-limit 120 --quiet -o " + out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK_MESSAGE(pstest::contains(r.output, "  recompute     full "), r.output);
  auto s = ps::read_schedule_yaml(out);
  REQUIRE(s.ok());
  int recomputing = 0, r_ops = 0;
  for (const auto& st : s->problem.stages) recomputing += st.recomputes();
  for (const auto& prog : s->programs)
    for (const auto& a : prog) r_ops += a.type == ps::OpType::R;
  CHECK(recomputing > 0);
  CHECK(r_ops == recomputing * s->problem.microbatches);
  auto v = run_cli("verify " + out);
  CHECK_MESSAGE(v.exit_code == 0, v.output);
  CHECK(pstest::contains(v.output, "VALID under rendezvous semantics"));
  // The same file again: deterministic with --evaluations.
  const std::string again = pstest::temp_path("rc-synth-again.yaml");
  auto r2 = run_cli("synth " + model + " --evaluations 30 --rlimit 3000000 --time-limit 120 --quiet -o " + again);
  REQUIRE(r2.exit_code == 0);
  CHECK(pstest::read_file(out) == pstest::read_file(again));
  auto h = run_cli("synth --help");
  CHECK(pstest::contains(h.output, "--recompute"));
  auto bad = run_cli("synth " + model + " --recompute partial");
  CHECK(bad.exit_code != 0);
}

}  // namespace recompute_cli_test
