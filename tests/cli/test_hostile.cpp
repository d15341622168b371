// Hostile inputs through the command line: out-of-range numbers, sums that overflow, unbounded files,
// flags that make no sense. Each is refused with a located message and the documented exit code — no
// signal death, no assertion, no run past --time-limit, no certificate with a number that is not finite.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_util.h"

using pstest::contains;
using pstest::read_file;
using pstest::run_cli;
using pstest::source_path;
using pstest::temp_path;

namespace {

// 4 unit layers on 2 devices, M = 4; `extra` replaces the layer list.
std::string model_file(const std::string& name, const std::string& big_type = "", const std::string& layers = "TTTT") {
  const std::string path = temp_path(name);
  std::ofstream(path) << "schema: 1\nmodel:\n  name: m\n  layer_types:\n"
                         "    T: {name: block, forward_ms: 1, backward_input_ms: 1, backward_weight_ms: 1, "
                         "activation_mb: 10, wgrad_stash_mb: 4, output_mb: 1, params_m: 1}\n"
                      << big_type << "  layers: \"" << layers << "\"\n"
                      << "cluster: {devices: 2, memory_gb: 0}\npipeline: {microbatches: 4}\n";
  return path;
}

const char* kHuge =
    "    H: {name: huge, forward_ms: 1e308, backward_input_ms: 1e308, backward_weight_ms: 1, activation_mb: 10, "
    "wgrad_stash_mb: 4, output_mb: 1, params_m: 1}\n";

struct Case {
  std::string args;
  int exit_code;
  std::string said;
};

void check_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    auto r = run_cli(c.args);
    INFO(c.args, "\n", r.output);
    CHECK(r.exit_code == c.exit_code);  // -1 for a death by signal
    CHECK(contains(r.output, c.said));
    CHECK_FALSE(contains(r.output, "internal error"));
  }
}

}  // namespace

TEST_CASE("cli hostile: out-of-range counts on the command line are refused, naming the flag") {
  const std::string m = model_file("hostile-m.yaml");
  const std::string out = temp_path("hostile-out.yaml");
  check_cases({
      {fmt::format("synth {} --microbatches 1073741824 --time-limit 2 -o {}", m, out), 1,
       "--microbatches: must be an integer in [1, 1000000], got '1073741824'"},
      {fmt::format("synth {} --microbatches 2147483647 --time-limit 2 -o {}", m, out), 1,
       "--microbatches: must be an integer in [1, 1000000]"},
      {fmt::format("synth {} --microbatches 200000 --time-limit 2 -o {}", m, out), 1,
       "(override): a plan of 2 stages x 200000 microbatches has 1,200,000 F/I/W ops, more than the 400,000"},
      {fmt::format("baseline {} --schedule 1f1b --microbatches 10000000", m), 1, "--microbatches: must be an integer in [1, 1000000]"},
      {fmt::format("baseline {} --schedule gpipe --microbatches 500000", m), 1, "at most 66,666 microbatches"},
      {fmt::format("bound {} --devices 200000", m), 1, "--devices: must be an integer in [1, 100000], got '200000'"},
      {fmt::format("synth {} --stages-per-device 2147483647 --time-limit 2", m), 1,
       "--stages-per-device must be an integer in [1, 100000], got 2147483647"},
      {fmt::format("baseline {} --schedule interleaved-1f1b --stages-per-device 2147483647", m), 1,
       "--stages-per-device must be an integer in [1, 100000], got 2147483647"},
      {fmt::format("bound {} --stages-per-device 1073741824", m), 1,
       "--stages-per-device must be an integer in [1, 100000], got 1073741824"},
      // Within the table's range, past the model's layers.
      {fmt::format("bound {} --stages-per-device 3", m), 1,
       "--stages-per-device 3 on 2 devices makes 6 stages, more than the model's 4 layers"},
      {fmt::format("synth {} --stages-per-device -3 --time-limit 2", m), 1, "--stages-per-device must be an integer in [1, 100000], got -3"},
  });
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("cli hostile: finite costs whose sum over an iteration overflows are refused at the layer") {
  const std::string m = model_file("hostile-huge.yaml", kHuge, "TTHT");
  const std::string out = temp_path("hostile-huge-out.yaml");
  const std::string said = "hostile-huge.yaml:7:14: layer 2 (type 'H', huge): the iteration's total F+I+W time (ms)";
  check_cases({
      {fmt::format("synth {} --time-limit 2 -o {}", m, out), 1, said},  // was SIGABRT in the partition
      {fmt::format("baseline {} --schedule 1f1b --partition even -o {}", m, out), 1, said},  // was .inf in a certificate
      {fmt::format("lower {}", m), 1, said},
  });
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("cli hostile: a schedule whose stage costs make the makespan infinite is refused, not certified") {
  const std::string m = model_file("hostile-ok.yaml");
  const std::string good = temp_path("hostile-good.yaml"), bad = temp_path("hostile-inf.yaml");
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", m, good)).exit_code == 0);
  std::string text = read_file(good);
  const size_t at = text.find("fwd_ms: ");
  REQUIRE(at != std::string::npos);
  text.replace(at, text.find(',', at) - at, "fwd_ms: 1e308");
  std::ofstream(bad) << text;
  auto r = run_cli("verify " + bad);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "hostile-inf.yaml:"));
  CHECK(contains(r.output, "stage 0: the iteration's total F+I+W time (ms) over 4 microbatches exceeds 1e+15"));
  CHECK_FALSE(contains(r.output, "VALID"));
  // Every number in a written certificate is finite.
  CHECK_FALSE(contains(read_file(good), ".inf"));
  CHECK_FALSE(contains(read_file(good), ".nan"));
}

TEST_CASE("cli hostile: reads are bounded") {
  check_cases({
      {"verify /dev/zero", 1, "cannot read '/dev/zero': it is larger than the 128 MiB pipesmith reads"},
      {"lower /dev/zero", 1, "/dev/zero: cannot read model file: it is larger than the 128 MiB"},
      {"verify /tmp", 1, "it is a directory"},
  });
}

TEST_CASE("cli hostile: small flag gaps") {
  const std::string csv = source_path("tests/data/pytorch/ScheduleGPipe_p2_m4_v1.csv");
  const std::string m = model_file("hostile-flags.yaml");
  const std::string sched = temp_path("hostile-flags-s.yaml");
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", m, sched)).exit_code == 0);
  check_cases({
      {fmt::format("verify {} --stages -5", csv), 1, "--stages"},
      {fmt::format("verify {} --microbatches -100", csv), 1, "--microbatches"},
      {fmt::format("verify {} --microbatches 0", csv), 1, "--microbatches"},
      {fmt::format("verify {} --memory-limit-gb inf", csv), 1, "--memory-limit-gb: must be a finite number of GB in [0, 1e+15] (0 = unlimited), got 'inf'"},
      {fmt::format("run {} --timeout inf", sched), 1, "--timeout: must be a finite number in (0, 1e+06] s, got 'inf'"},
      {fmt::format("run {} --timeout 0", sched), 1, "--timeout: must be a finite number in (0, 1e+06] s"},
      {fmt::format("run {} --timeout -1", sched), 1, "--timeout: must be a finite number in (0, 1e+06] s"},
      {fmt::format("run {} --microbatches -1", sched), 1, "--microbatches"},
  });
  auto zero = run_cli(fmt::format("verify {} --microbatches 0", csv));
  CHECK_FALSE(contains(zero.output, "0..-1"));
}

TEST_CASE("cli hostile: a CSV action beyond --microbatches or --stages is an invalid schedule (structure.index)") {
  const std::string csv = temp_path("hostile-index.csv");
  std::ofstream(csv) << "0F0,0F1,0B0,0B1\n";
  for (const std::string flags : {"--microbatches 1", "--stages 1 --microbatches 2"}) {
    const std::string file = flags == "--microbatches 1" ? csv : temp_path("hostile-index2.csv");
    if (flags != "--microbatches 1") std::ofstream(file) << "0F0,0F1,1F0,1F1,1B0,1B1,0B0,0B1\n";
    auto r = run_cli(fmt::format("verify {} {} --json", file, flags));
    INFO(flags, "\n", r.output);
    CHECK(r.exit_code == 3);
    const size_t brace = r.output.find('{');
    REQUIRE(brace != std::string::npos);
    auto j = nlohmann::json::parse(r.output.substr(brace, r.output.rfind('}') - brace + 1));
    CHECK(j["valid"] == false);
    bool index = false;
    for (const auto& v : j["violations"]) index = index || v["rule"] == "structure.index";
    CHECK(index);
  }
}

TEST_CASE("cli hostile: verify --json prints a JSON document for input errors too") {
  const std::string csv = temp_path("hostile-bad.csv");
  std::ofstream(csv) << "0F0,0F1\n0B0,xyz\n";
  struct JsonCase {
    std::string args;
    int line, col;  // expected location; -1: not checked
  };
  const JsonCase cases[] = {{"verify " + csv + " --json", 2, 5},
                            {"verify /nonexistent/x.csv --json", -1, -1},
                            {"verify " + csv + " --json --semantics sideways", -1, -1}};
  for (const JsonCase& c : cases) {
    const std::string out = temp_path("hostile-json.out");
    auto r = run_cli(c.args + " 2>/dev/null >" + out + "; exit $?");  // stdout alone to the file
    const std::string text = read_file(out);
    INFO(c.args, "\n", text);
    CHECK(r.exit_code == 1);
    auto j = nlohmann::json::parse(text);  // throws (fails the test) unless stdout is one JSON document
    CHECK(j["valid"] == false);
    CHECK(j["error"]["message"].is_string());
    CHECK(j["error"]["file"].is_string());
    if (c.line >= 0) {
      CHECK(j["error"]["line"] == c.line);
      CHECK(j["error"]["column"] == c.col);
    }
  }
}

TEST_CASE("cli hostile: a message quotes at most ~80 characters of a cell, non-printable bytes escaped") {
  const std::string csv = temp_path("hostile-cell.csv");
  std::ofstream(csv, std::ios::binary) << "0F0," << std::string(1'000'000, 'Z') << "\n";
  auto r = run_cli("verify " + csv);
  CHECK(r.exit_code == 1);
  CHECK(r.output.size() < 600);
  CHECK(contains(r.output, "... (1000000 bytes)"));
  std::ofstream(csv, std::ios::binary) << "0F0,0F\x01\xff\n";
  auto e = run_cli("verify " + csv);
  INFO(e.output);
  CHECK(e.exit_code == 1);
  CHECK(contains(e.output, "0F\\x01\\xff"));
}

TEST_CASE("[slow] cli hostile: --time-limit holds on a 100,000-layer model") {
  std::string layers(100'000, 'T');
  const std::string m = model_file("hostile-long.yaml", "", layers);
  const std::string out = temp_path("hostile-long-out.yaml");
  std::filesystem::remove(out);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_cli(fmt::format("synth {} --devices 8 --microbatches 16 --time-limit 3 --quiet -o {}", m, out));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.output, "\nseconds: ", seconds);
  // Either a checked schedule in time, or the time limit's own error; never a run far past it.
  CHECK((r.exit_code == 0 || (r.exit_code == 1 && contains(r.output, "--time-limit 3 s reached while"))));
  // The backstop's grace (0.85 s; tests/CMakeLists.txt widens it for ctest), process start and exit.
  const char* grace = std::getenv("PIPESMITH_TIME_LIMIT_GRACE_S");
  CHECK(seconds < 3 + (grace ? std::atof(grace) : 0.85) + 1.65);
  if (r.exit_code == 0) CHECK(run_cli("verify " + out).exit_code == 0);
}

namespace {

using pstest::run_cli_2gb;

// A pipesmith schedule YAML with `problem_link` as problem.link and `ops` as device 0's program (device 1's
// is empty): the header of a real schedule, so that only what a test changes is wrong.
std::string schedule_with(const std::string& name, const std::string& problem_link, const std::string& ops) {
  const std::string path = temp_path(name);
  std::ofstream(path) << "format: pipesmith-schedule/1\nproblem:\n  name: m\n  devices: 2\n  microbatches: 1\n"
                      << "  link: " << problem_link << "\n"
                      << "stages:\n"
                         "  - {id: 0, device: 0, fwd_ms: 1, bwd_input_ms: 1, bwd_weight_ms: 1}\n"
                         "  - {id: 1, device: 1, fwd_ms: 1, bwd_input_ms: 1, bwd_weight_ms: 1}\n"
                         "programs:\n  - device: 0\n    ops: ["
                      << ops << "]\n  - device: 1\n    ops: []\n";
  return path;
}

std::string repeated(const std::string& cell, size_t n, const std::string& sep) {
  std::string out;
  out.reserve(n * (cell.size() + sep.size()));
  for (size_t i = 0; i < n; ++i) out += (i ? sep : "") + cell;
  return out;
}

}  // namespace

TEST_CASE("cli hostile: a schedule file listing more actions than the limit is refused while it is read") {
  // 5,000,000 cells of `0F0` (20 MB) in one CSV row: refused at the 933,334th, in bounded memory.
  const std::string csv = temp_path("hostile-big.csv");
  std::ofstream(csv) << repeated("0F0", 5'000'000, ",") << "\n";
  auto r = run_cli_2gb("verify " + csv);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, csv + ":1:3733333: more than 933,333 actions in the file"));
  CHECK_FALSE(contains(r.output, "internal error"));
  // The same through the YAML reader: 2,000,000 ops in device 0's program (8 MB).
  const std::string yaml = schedule_with("hostile-big.yaml", "{bandwidth_gb_per_s: 200, latency_us: 5}",
                                         repeated("0F0", 2'000'000, ", "));
  r = run_cli_2gb("verify " + yaml);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, yaml + ":12:4666676: more than 933,333 actions in the file"));
  // An OVERLAP_F_B cell counts its sub-actions.
  const std::string overlap = schedule_with("hostile-overlap.yaml", "{bandwidth_gb_per_s: 200, latency_us: 5}",
                                            repeated("(0F0;0F1)OVERLAP_F_B", 466'667, ", "));
  r = run_cli_2gb("verify " + overlap);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "more than 933,333 actions"));
  // Any YAML holds at most 5,733,332 nodes, whatever they are (12 MB of `0,`).
  const std::string nodes = temp_path("hostile-nodes.yaml");
  std::ofstream(nodes) << "format: pipesmith-schedule/1\njunk: [" << repeated("0", 5'800'000, ",") << "]\n";
  r = run_cli_2gb("verify " + nodes);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, nodes + ":2:11466662: more than 5,733,332 YAML nodes"));
  for (const std::string& p : {csv, yaml, overlap, nodes}) std::filesystem::remove(p);
}

TEST_CASE("cli hostile: a CSV of more rows than devices is refused, so convert never writes an unreadable YAML") {
  const std::string csv = temp_path("hostile-rows.csv");
  const std::string out = temp_path("hostile-rows.yaml");
  std::ofstream(csv) << repeated("0F0", 200'000, "\n") << "\n";
  auto r = run_cli_2gb(fmt::format("convert {} {}", csv, out));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, csv + ":100001:1: more than 100,000 rows; a row is a rank"));
  CHECK_FALSE(std::filesystem::exists(out));
  std::filesystem::remove(csv);
}

TEST_CASE("cli hostile: a schedule's link numbers are held to the cluster file's rules") {
  check_cases({
      {"verify " + schedule_with("hostile-bw0.yaml", "{bandwidth_gb_per_s: 0, latency_us: 5}", "0F0"), 1,
       "hostile-bw0.yaml:6:30: problem.link.bandwidth_gb_per_s: must be > 0, got 0"},
      {"verify " + schedule_with("hostile-bwneg.yaml", "{bandwidth_gb_per_s: -3, latency_us: 5}", "0F0"), 1,
       "problem.link.bandwidth_gb_per_s: must be > 0, got -3"},
      {"verify " + schedule_with("hostile-lat.yaml", "{bandwidth_gb_per_s: 200, latency_us: -1}", "0F0"), 1,
       "problem.link.latency_us: must be >= 0, got -1"},
      {"verify " + schedule_with("hostile-latnan.yaml", "{bandwidth_gb_per_s: 200, latency_us: .nan}", "0F0"), 1,
       "problem.link.latency_us: expected a finite number, got '.nan'"},
  });
}

TEST_CASE("cli hostile: numeric flags get one check in every command") {
  const std::string m = model_file("hostile-numbers.yaml");
  const std::string sched = temp_path("hostile-numbers-s.yaml");
  const std::string out = temp_path("hostile-numbers-out.yaml");
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", m, sched)).exit_code == 0);
  const std::string gb = "--memory-limit-gb: must be a finite number of GB in [0, 1e+15] (0 = unlimited), got ";
  check_cases({
      {fmt::format("run {} --memory-limit-gb nan", sched), 1, gb + "'nan'"},
      {fmt::format("run {} --memory-limit-gb -1", sched), 1, gb + "'-1'"},
      {fmt::format("verify {} --memory-limit-gb -1", sched), 1, gb + "'-1'"},
      {fmt::format("baseline {} --schedule 1f1b --memory-limit-gb nan", m), 1, gb + "'nan'"},
      {fmt::format("lower {} --memory-limit-gb -1", m), 1, gb + "'-1'"},
      {fmt::format("run {} --seed -1", sched), 1, "--seed: must be an integer in [0, 4294967295], got '-1'"},
      {fmt::format("synth {} --seed -1 -o {}", m, out), 1, "--seed: must be an integer in [0, 4294967295], got '-1'"},
      {fmt::format("run {} --tokens 1e9", sched), 1, "--tokens: must be an integer in [1, 65536], got '1e9'"},
      {fmt::format("profile {} --repeats 1e9", m), 1, "--repeats: must be an integer in [1, 1000], got '1e9'"},
      {fmt::format("profile {} --repeats 1000000", m), 1, "--repeats: must be an integer in [1, 1000]"},
      {fmt::format("synth {} --time-limit 0 -o {}", m, out), 1, "--time-limit: must be a number of seconds > 0"},
      {fmt::format("synth {} --time-limit nan -o {}", m, out), 1, "--time-limit: must be a number of seconds > 0"},
  });
  // A time limit beyond any run is no practical limit: the run ends when its work does.
  for (const char* t : {"1e10", "inf"}) {
    auto r = run_cli(fmt::format("synth {} --time-limit {} --quiet -o {}", m, t, out));
    INFO(t, "\n", r.output);
    CHECK(r.exit_code == 0);
    CHECK_FALSE(contains(r.output, "reached"));
  }
  std::filesystem::remove(out);
}

TEST_CASE("cli hostile: YAML nested too deep or holding a NUL byte is refused at the place") {
  const std::string deep = temp_path("hostile-deep.yaml");
  std::ofstream(deep) << "format: pipesmith-schedule/1\nproblem: " << std::string(3000, '[') << std::string(3000, ']')
                      << "\n";
  const std::string nul = temp_path("hostile-nul.yaml");
  std::ofstream(nul) << "format: pipesmith-schedule/1\ngenerator: \"a" << '\0' << "b\"\n";
  const std::string m = temp_path("hostile-deep-model.yaml");
  std::ofstream(m) << "schema: 1\nmodel: " << std::string(100, '{') << std::string(100, '}') << "\n";
  check_cases({
      {"verify " + deep, 1, deep + ":2:73: nested deeper than 64 levels"},
      {"verify " + nul, 1, nul + ":2:14: NUL byte at 2:14"},
      {"lower " + m, 1, m + ":2:71: nested deeper than 64 levels"},
  });
}

TEST_CASE("cli hostile: run and profile refuse what would not fit in the machine's memory, naming both numbers") {
  const std::string m = model_file("hostile-mem.yaml");
  const std::string sched = temp_path("hostile-mem-s.yaml");
  REQUIRE(run_cli(fmt::format("baseline {} --schedule 1f1b -o {}", m, sched)).exit_code == 0);
  // Under ulimit -v 2000000 the address space left is the smaller figure, whatever the machine has.
  // (Without it, under AddressSanitizer, the verdict would depend on this machine's memory.)
  if (pstest::kAddressSanitizer) return;
  const std::vector<std::string> cases = {
      fmt::format("run {} --scale 64 --tokens 65536", sched),
      fmt::format("run {} --model {} --widths params --tokens 65536", sched, m),
      fmt::format("profile {} --scale 64 --tokens 65536", m),
  };
  for (const std::string& args : cases) {
    auto r = run_cli_2gb(args);
    INFO(args, "\n", r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, "needs about "));
    CHECK(contains(r.output, " available ("));
    CHECK(contains(r.output, "ulimit -v leaves"));
    CHECK_FALSE(contains(r.output, "internal error"));
  }
}
