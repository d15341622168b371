// Tests of the pipesmith-schedule/1 YAML writer and reader, and of the canonical text.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "ir/schedule_io.h"
#include "test_util.h"

namespace {

ps::Action act(const char* text) {
  auto a = ps::parse_action(text);
  REQUIRE_MESSAGE(a.ok(), a.status().str());
  return *a;
}

std::vector<ps::Action> acts(std::initializer_list<const char*> xs) {
  std::vector<ps::Action> v;
  for (const char* x : xs) v.push_back(act(x));
  return v;
}

// A two-device schedule with comms and non-trivial numbers, built by hand.
ps::Schedule tiny_schedule() {
  ps::Schedule s;
  s.generator = "hand-written test";
  ps::Problem& p = s.problem;
  p.name = "tiny";
  p.devices = 2;
  p.microbatches = 2;
  p.memory_gb = 80;
  p.bytes_per_param = 18;
  p.link = ps::LinkModel{200, 5};
  p.devices_per_node = 0;
  p.inter_node_link = ps::LinkModel{25, 10};
  p.unit_costs = false;
  ps::StageSpec a;
  a.first_layer = 0;
  a.last_layer = 1;
  a.device = 0;
  a.fwd_ms = 1.5;
  a.bwd_input_ms = 2;
  a.bwd_weight_ms = 1;
  a.activation_mb = 100;
  a.wgrad_stash_mb = 20;
  a.output_mb = 8;
  a.params_m = 350;
  a.split_backward = true;
  ps::StageSpec b = a;
  b.first_layer = 2;
  b.last_layer = 3;
  b.device = 1;
  b.fwd_ms = 1.25;
  b.bwd_input_ms = 2.5;
  b.bwd_weight_ms = 0.75;
  b.activation_mb = 120.5;
  b.wgrad_stash_mb = 0;
  b.output_mb = 0;
  b.params_m = 400;
  b.split_backward = false;
  p.stages = {a, b};
  s.programs = {acts({"0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0I0", "0W0", "0RECV_B1", "0I1", "0W1"}),
                acts({"1RECV_F0", "1F0", "1B0", "1SEND_B0", "1RECV_F1", "1F1", "1B1", "1SEND_B1"})};
  return s;
}

const char* kTinyYaml =
    "format: pipesmith-schedule/1\n"
    "generator: hand-written test\n"
    "problem:\n"
    "  name: tiny\n"
    "  devices: 2\n"
    "  microbatches: 2\n"
    "  memory_gb: 80\n"
    "  bytes_per_param: 18\n"
    "  link: {bandwidth_gb_per_s: 200, latency_us: 5}\n"
    "  devices_per_node: 0\n"
    "  inter_node_link: {bandwidth_gb_per_s: 25, latency_us: 10}\n"
    "  unit_costs: false\n"
    "stages:\n"
    "  - {id: 0, device: 0, layers: [0, 1], fwd_ms: 1.5, bwd_input_ms: 2, bwd_weight_ms: 1, activation_mb: 100, "
    "wgrad_stash_mb: 20, output_mb: 8, params_m: 350, split_backward: true}\n"
    "  - {id: 1, device: 1, layers: [2, 3], fwd_ms: 1.25, bwd_input_ms: 2.5, bwd_weight_ms: 0.75, activation_mb: "
    "120.5, wgrad_stash_mb: 0, output_mb: 0, params_m: 400, split_backward: false}\n"
    "programs:\n"
    "  - device: 0\n"
    "    ops: [0F0, 0SEND_F0, 0F1, 0SEND_F1, 0RECV_B0, 0I0, 0W0, 0RECV_B1, 0I1, 0W1]\n"
    "  - device: 1\n"
    "    ops: [1RECV_F0, 1F0, 1B0, 1SEND_B0, 1RECV_F1, 1F1, 1B1, 1SEND_B1]\n";

// Replaces the first occurrence of `from` in `text` (which must be there).
std::string replace(std::string text, const std::string& from, const std::string& to) {
  size_t pos = text.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, "test bug: '" << from << "' not in the text");
  text.replace(pos, from.size(), to);
  return text;
}

// Parses `text`, expects a bad-input error at line:col whose message contains `substr`.
void expect_yaml_error(const std::string& text, int line, int col, const std::string& substr) {
  auto r = ps::parse_schedule_yaml(text, "bad.yaml");
  REQUIRE_MESSAGE(!r.ok(), "expected an error containing '" << substr << "'");
  const ps::Status& st = r.status();
  CHECK(st.code() == ps::ErrorCode::kBadInput);
  CHECK_MESSAGE(st.loc().file == "bad.yaml", st.str());
  CHECK_MESSAGE(st.loc().line == line, st.str());
  CHECK_MESSAGE(st.loc().col == col, st.str());
  CHECK_MESSAGE(st.message().find(substr) != std::string::npos, st.str());
}

}  // namespace

TEST_CASE("schedule yaml: writer output is exactly the documented layout") {
  CHECK(ps::format_schedule_yaml(tiny_schedule()) == kTinyYaml);
}

TEST_CASE("schedule yaml: read gives back the schedule, with file:line:col on every action") {
  auto r = ps::parse_schedule_yaml(kTinyYaml, "tiny.yaml");
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  const ps::Schedule& s = *r;
  ps::Schedule want = tiny_schedule();
  CHECK(s.generator == want.generator);
  CHECK(s.source == "tiny.yaml");
  CHECK(s.problem.name == "tiny");
  CHECK(s.problem.devices == 2);
  CHECK(s.problem.microbatches == 2);
  CHECK(s.problem.memory_gb == 80);
  CHECK(s.problem.inter_node_link.bandwidth_gb_per_s == 25);
  CHECK(s.problem.inter_node_link.latency_us == 10);
  CHECK_FALSE(s.problem.unit_costs);
  REQUIRE(s.problem.stages.size() == 2);
  CHECK(s.problem.stages[1].device == 1);
  CHECK(s.problem.stages[1].first_layer == 2);
  CHECK(s.problem.stages[1].activation_mb == 120.5);
  CHECK(s.problem.stages[1].bwd_weight_ms == 0.75);
  CHECK_FALSE(s.problem.stages[1].split_backward);
  CHECK(s.programs == want.programs);
  CHECK_FALSE(s.certificate.has_value());
  CHECK(s.predicted.empty());
  // "    ops: [0F0, 0SEND_F0, ..." is line 18; 0F0 at col 11, 0SEND_F0 at col 16.
  CHECK(s.programs[0][0].loc.str() == "tiny.yaml:18:11");
  CHECK(s.programs[0][1].loc.str() == "tiny.yaml:18:16");
  CHECK(s.programs[1][7].loc.str() == "tiny.yaml:20:61");
}

TEST_CASE("schedule yaml: write -> read -> write is byte-identical with predicted times and a certificate") {
  ps::Schedule s = tiny_schedule();
  s.problem.name = "odd: name \"quoted\" #1";
  s.problem.memory_gb = 0.1;
  s.problem.stages[0].fwd_ms = 1e-7;
  s.problem.stages[0].params_m = 123456.789;
  s.problem.stages[1].fwd_ms = 2.5e13;
  s.problem.stages[1].bwd_weight_ms = 1.0 / 3.0;
  s.predicted.resize(2);
  double t = 0;
  for (size_t d = 0; d < 2; ++d) {
    for (size_t i = 0; i < s.programs[d].size(); ++i) {
      s.predicted[d].push_back(ps::OpTime{t, t + 0.1});
      t += 0.1;
    }
  }
  ps::Certificate c;
  c.verdict = "valid";
  c.semantics = "rendezvous";
  c.makespan_ms = 12.345;
  c.lower_bound_ms = 11;
  c.bubble_ratio = 0.0625;
  c.peak_memory_gb = {6.3, 7.25};
  c.digest = "sha256:0123abcd";
  c.extra = {{"optimal", "true"}, {"z3_version", "4.8.12"}, {"seed", "7"}, {"note", "line1\nline2\t\"x\""}};
  s.certificate = c;

  std::string first = ps::format_schedule_yaml(s);
  auto r = ps::parse_schedule_yaml(first, "rt.yaml");
  REQUIRE_MESSAGE(r.ok(), r.status().str() << "\n" << first);
  std::string second = ps::format_schedule_yaml(*r);
  CHECK(first == second);
  // Values survive exactly (shortest round-trip printing).
  CHECK(r->problem.name == s.problem.name);
  CHECK(r->problem.memory_gb == 0.1);
  CHECK(r->problem.stages[0].fwd_ms == 1e-7);
  CHECK(r->problem.stages[0].params_m == 123456.789);
  CHECK(r->problem.stages[1].fwd_ms == 2.5e13);
  CHECK(r->problem.stages[1].bwd_weight_ms == 1.0 / 3.0);
  REQUIRE(r->predicted.size() == 2);
  CHECK(r->predicted[1].back().end_ms == s.predicted[1].back().end_ms);
  REQUIRE(r->certificate.has_value());
  CHECK(r->certificate->extra == c.extra);
  CHECK(r->certificate->peak_memory_gb == c.peak_memory_gb);
  CHECK(r->certificate->digest == c.digest);
  CHECK(r->certificate->makespan_ms == 12.345);
  CHECK(r->certificate->loc.line > 0);
  // Quoting: strings YAML would misread are quoted.
  CHECK(first.find("  name: \"odd: name \\\"quoted\\\" #1\"\n") != std::string::npos);
  CHECK(first.find("  digest: \"sha256:0123abcd\"\n") != std::string::npos);
  CHECK(first.find("    optimal: \"true\"\n") != std::string::npos);
}

TEST_CASE("schedule yaml: long programs wrap every 16 actions and keep exact locations") {
  ps::Schedule s = tiny_schedule();
  s.problem.devices = 1;
  s.problem.microbatches = 40;
  s.problem.stages.resize(1);
  s.problem.stages[0].device = 0;
  s.programs.assign(1, {});
  for (int m = 0; m < 40; ++m) s.programs[0].push_back(ps::Action{ps::OpType::F, ps::StageId{0}, ps::MicrobatchId{m}, {}});
  std::string text = ps::format_schedule_yaml(s);
  CHECK(text.find("    ops: [0F0, 0F1, 0F2, 0F3, 0F4, 0F5, 0F6, 0F7, 0F8, 0F9, 0F10, 0F11, 0F12, 0F13, 0F14, "
                  "0F15,\n          0F16, ") != std::string::npos);
  auto r = ps::parse_schedule_yaml(text, "w.yaml");
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  CHECK(r->programs == s.programs);
  CHECK(r->programs[0][16].loc.line == r->programs[0][0].loc.line + 1);
  CHECK(r->programs[0][16].loc.col == 11);
  CHECK(r->programs[0][32].loc.line == r->programs[0][0].loc.line + 2);
  CHECK(ps::format_schedule_yaml(*r) == text);
}

TEST_CASE("schedule yaml: a hand-written file with block style, comments and defaults") {
  const char* text =
      "# a schedule written by hand\n"
      "format: pipesmith-schedule/1\n"
      "generator:\n"
      "problem:\n"
      "  name: ~\n"
      "  devices: 1\n"
      "  microbatches: 1\n"
      "stages:\n"
      "  - id: 0\n"
      "    device: 0\n"
      "    fwd_ms: 2\n"
      "    bwd_input_ms: 3\n"
      "    bwd_weight_ms: 1\n"
      "programs:\n"
      "  - device: 0\n"
      "    ops:\n"
      "      - 0F0\n"
      "      - 0B0   # fused backward\n";
  auto r = ps::parse_schedule_yaml(text, "hand.yaml");
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  CHECK(r->problem.bytes_per_param == 18);  // default
  CHECK(r->problem.stages[0].first_layer == -1);
  CHECK(r->problem.stages[0].split_backward);
  CHECK(r->programs[0] == acts({"0F0", "0B0"}));
  CHECK(r->programs[0][1].loc.str() == "hand.yaml:18:9");
  CHECK(r->generator.empty());
  CHECK(r->problem.name.empty());
}

TEST_CASE("schedule yaml: each kind of error is rejected with its location") {
  const std::string ok = kTinyYaml;
  SUBCASE("syntax") { expect_yaml_error(replace(ok, "0W1]", "0W1"), 19, 11, "YAML syntax error: end of sequence flow not found"); }
  SUBCASE("empty file") { expect_yaml_error("", 1, 1, "empty schedule file"); }
  SUBCASE("text that makes yaml-cpp 0.7's LoadAll loop forever") {
    expect_yaml_error(",", 1, 1, "expected one YAML document, found more");
    auto r = ps::parse_schedule_yaml(pstest::read_file(pstest::source_path("fuzz/corpus/schedule_yaml/regress-loadall-loop.yaml")), "f.yaml");
    CHECK_FALSE(r.ok());
  }
  SUBCASE("not a map") { expect_yaml_error("- 1\n- 2\n", 1, 1, "expected a map"); }
  SUBCASE("two documents") { expect_yaml_error(ok + "---\nformat: x\n", 21, 1, "expected one YAML document, found more"); }
  SUBCASE("missing format") {
    expect_yaml_error(replace(ok, "format: pipesmith-schedule/1\n", ""), 1, 1, "missing 'format: pipesmith-schedule/1'");
  }
  SUBCASE("wrong format version") {
    expect_yaml_error(replace(ok, "schedule/1", "schedule/2"), 1, 9, "unsupported format version 'pipesmith-schedule/2'");
  }
  SUBCASE("not a schedule") { expect_yaml_error(replace(ok, "pipesmith-schedule/1", "model/1"), 1, 9, "expected 'pipesmith-schedule/1'"); }
  SUBCASE("unknown top-level key, with a suggestion") {
    expect_yaml_error(replace(ok, "programs:", "programz:"), 16, 1, "unknown key 'programz' (did you mean 'programs'?)");
  }
  SUBCASE("unknown key in problem") { expect_yaml_error(replace(ok, "  memory_gb:", "  memory:"), 7, 3, "problem: unknown key 'memory'"); }
  SUBCASE("unknown key in a link") {
    expect_yaml_error(replace(ok, "latency_us: 5}", "latency: 5}"), 9, 35, "problem.link: unknown key 'latency'");
  }
  SUBCASE("unknown key in a stage") {
    expect_yaml_error(replace(ok, "fwd_ms: 1.25", "fwd: 1.25"), 15, 40, "stage 1: unknown key 'fwd' (did you mean 'fwd_ms'?)");
  }
  SUBCASE("duplicate key") {
    expect_yaml_error(replace(ok, "  devices: 2\n", "  devices: 2\n  devices: 3\n"), 6, 3, "duplicate key 'devices' (first given at line 5)");
  }
  SUBCASE("bad action, full match") {
    expect_yaml_error(replace(ok, "0I0, 0W0", "0I0, 2BW0"), 18, 56, "bad action '2BW0'");
  }
  SUBCASE("action that is not a scalar") { expect_yaml_error(replace(ok, "[1RECV_F0,", "[[1RECV_F0],"), 20, 11, "expected an action"); }
  SUBCASE("integer field given text") { expect_yaml_error(replace(ok, "devices: 2", "devices: two"), 5, 12, "problem.devices: expected an integer, got 'two'"); }
  SUBCASE("integer field given a fraction") { expect_yaml_error(replace(ok, "microbatches: 2", "microbatches: 2.5"), 6, 17, "expected an integer"); }
  SUBCASE("zero devices") { expect_yaml_error(replace(ok, "devices: 2", "devices: 0"), 5, 12, "problem.devices must be an integer in [1,"); }
  SUBCASE("negative cost") { expect_yaml_error(replace(ok, "fwd_ms: 1.5", "fwd_ms: -1.5"), 14, 48, "stage 0.fwd_ms: must be >= 0, got -1.5"); }
  SUBCASE("non-finite number") { expect_yaml_error(replace(ok, "memory_gb: 80", "memory_gb: .inf"), 7, 14, "expected a finite number"); }
  SUBCASE("bad bool") { expect_yaml_error(replace(ok, "unit_costs: false", "unit_costs: maybe"), 12, 15, "expected true or false"); }
  SUBCASE("missing required key") {
    expect_yaml_error(replace(ok, "bwd_weight_ms: 1, ", ""), 14, 5, "stage 0: missing required key 'bwd_weight_ms'");
  }
  SUBCASE("stage ids out of order") { expect_yaml_error(replace(ok, "{id: 1,", "{id: 2,"), 15, 10, "entry 1 has id 2"); }
  SUBCASE("stage on a device that does not exist") {
    expect_yaml_error(replace(ok, "{id: 1, device: 1,", "{id: 1, device: 2,"), 15, 21, "device 2 is out of range (problem.devices is 2)");
  }
  SUBCASE("bad layer range") { expect_yaml_error(replace(ok, "[2, 3]", "[3, 2]"), 15, 32, "expected 0 <= first <= last"); }
  SUBCASE("stash larger than activation") {
    expect_yaml_error(replace(ok, "wgrad_stash_mb: 20", "wgrad_stash_mb: 200"), 14, 124, "wgrad_stash_mb (200) must be <= activation_mb (100)");
  }
  SUBCASE("no stages") {
    std::string t = ok.substr(0, ok.find("stages:")) + "stages: []\n" + ok.substr(ok.find("programs:"));
    expect_yaml_error(t, 13, 9, "stages: expected a non-empty sequence");
  }
  SUBCASE("programs missing a device") {
    std::string t = ok.substr(0, ok.find("  - device: 1\n"));
    expect_yaml_error(t, 16, 1, "programs: has 1 device entries, but problem.devices is 2");
  }
  SUBCASE("programs out of device order") {
    expect_yaml_error(replace(ok, "  - device: 1\n", "  - device: 3\n"), 19, 13, "entry 1 is for device 3; expected device 1");
  }
  SUBCASE("programs entry without ops") { expect_yaml_error(replace(ok, "    ops: [1RECV", "    opz: [1RECV"), 20, 5, "programs[1]: unknown key 'opz'"); }
  SUBCASE("predicted shape mismatch") {
    std::string t = ok +
                    "predicted:\n"
                    "  - device: 0\n"
                    "    times: [[0, 1], [1, 2]]\n"
                    "  - device: 1\n"
                    "    times: [[0, 1]]\n";
    expect_yaml_error(t, 23, 12, "predicted[0].times: has 2 entries, but device 0's program has 10 ops");
  }
  SUBCASE("predicted end before start") {
    std::string t = ok +
                    "predicted:\n"
                    "  - device: 0\n"
                    "    times: [[0, 1], [1, 2], [2, 3], [3, 4], [5, 4], [5, 6], [6, 7], [7, 8], [8, 9], [9, 10]]\n"
                    "  - device: 1\n"
                    "    times: [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7], [7, 8]]\n";
    expect_yaml_error(t, 23, 45, "predicted[0].times[4] (0RECV_B0): end_ms 4 is before start_ms 5");
  }
  SUBCASE("predicted device count") {
    std::string t = ok +
                    "predicted:\n"
                    "  - device: 0\n"
                    "    times: [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7], [7, 8], [8, 9], [9, 10]]\n";
    expect_yaml_error(t, 21, 1, "predicted: has 1 device entries, but problem.devices is 2");
  }
  SUBCASE("certificate with an unknown key") {
    expect_yaml_error(ok + "certificate:\n  verdict: valid\n  makespan: 3\n", 23, 3, "certificate: unknown key 'makespan' (did you mean 'makespan_ms'?)");
  }
  SUBCASE("certificate extra that is not a map of scalars") {
    expect_yaml_error(ok + "certificate:\n  extra:\n    seed: [1, 2]\n", 23, 11, "certificate.extra.seed: expected a string");
  }
}

TEST_CASE("schedule yaml: read_schedule_yaml reads files and reports missing ones") {
  std::string path = pstest::temp_path("tiny.yaml");
  REQUIRE(ps::write_schedule_yaml(tiny_schedule(), path).is_ok());
  auto r = ps::read_schedule_yaml(path);
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  CHECK(r->programs == tiny_schedule().programs);
  CHECK(r->programs[0][0].loc.file == path);
  std::remove(path.c_str());
  auto missing = ps::read_schedule_yaml(path);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ps::ErrorCode::kBadInput);
  CHECK(missing.status().message().find("cannot open") != std::string::npos);
}

TEST_CASE("schedule yaml: read_schedule_any checks --stages/--microbatches against a YAML problem") {
  std::string path = pstest::temp_path("any.yaml");
  REQUIRE(ps::write_schedule_yaml(tiny_schedule(), path).is_ok());
  ps::CsvReadOptions opt;
  opt.microbatches = 2;
  opt.stages = 2;
  CHECK(ps::read_schedule_any(path, opt).ok());
  opt.microbatches = 3;
  auto r = ps::read_schedule_any(path, opt);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("the microbatch count given is 3, but the schedule's problem has 2") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("canonical text: problem, placement and programs only") {
  ps::Schedule s = tiny_schedule();
  std::string text = ps::canonical_text(s);
  CHECK(text ==
        "pipesmith-canonical/1\n"
        "problem devices=2 microbatches=2 memory_gb=80 bytes_per_param=18 link=200,5 devices_per_node=0 "
        "inter_node_link=25,10 unit_costs=false\n"
        "stage 0 device=0 layers=0,1 fwd_ms=1.5 bwd_input_ms=2 bwd_weight_ms=1 activation_mb=100 "
        "wgrad_stash_mb=20 output_mb=8 params_m=350 split_backward=true\n"
        "stage 1 device=1 layers=2,3 fwd_ms=1.25 bwd_input_ms=2.5 bwd_weight_ms=0.75 activation_mb=120.5 "
        "wgrad_stash_mb=0 output_mb=0 params_m=400 split_backward=false\n"
        "program 0 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0I0 0W0 0RECV_B1 0I1 0W1\n"
        "program 1 1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1\n");

  // Not part of it: name, generator, source, predicted times, certificate, locations.
  ps::Schedule t = s;
  t.problem.name = "renamed";
  t.generator = "other";
  t.source = "elsewhere.yaml";
  t.predicted = {{}, {}};
  t.certificate = ps::Certificate{};
  t.certificate->digest = "sha256:ff";
  t.programs[0][0].loc = ps::SourceLoc{"x", 3, 4};
  CHECK(ps::canonical_text(t) == text);

  // Part of it: any op, cost or placement.
  ps::Schedule u = s;
  std::swap(u.programs[0][5], u.programs[0][6]);
  CHECK(ps::canonical_text(u) != text);
  ps::Schedule v = s;
  v.problem.stages[1].bwd_input_ms = 2.5000001;
  CHECK(ps::canonical_text(v) != text);
  ps::Schedule w = s;
  w.problem.stages[1].device = 0;
  CHECK(ps::canonical_text(w) != text);
}

TEST_CASE("docs/schedule-format.md: its example is what the writer prints, and its canonical text is exact") {
  std::string doc = pstest::read_file(pstest::source_path("docs/schedule-format.md"));
  auto block_after = [&](const std::string& marker) {
    size_t at = doc.find(marker);
    REQUIRE_MESSAGE(at != std::string::npos, marker);
    size_t open = doc.find('\n', at + marker.size()) + 1;
    size_t close = doc.find("```\n", open);
    REQUIRE(close != std::string::npos);
    return doc.substr(open, close - open);
  };
  std::string example = block_after("### Example\n\n```yaml");
  CHECK(example == pstest::read_file(pstest::source_path("fuzz/corpus/schedule_yaml/tiny.yaml")));
  auto r = ps::parse_schedule_yaml(example, "doc.yaml");
  REQUIRE_MESSAGE(r.ok(), r.status().str());
  CHECK(ps::format_schedule_yaml(*r) == example);
  CHECK(block_after("For the example above:\n\n```") == ps::canonical_text(*r));
}
