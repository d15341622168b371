// `pipesmith verify`, `simulate` and `render` through the command line, as a user runs them:
// verdicts and exit codes on the PyTorch examples and the invalid-schedule files, JSON output,
// pictures, semantics and memory flags, CSV + model, bad input.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace {

std::string ex(const std::string& name) { return pstest::data_path("pytorch/" + name); }
std::string bad(const std::string& name) { return pstest::source_path("configs/invalid-schedules/" + name); }

bool has(const std::string& out, const std::string& what) { return out.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("pipesmith verify: the PyTorch examples, verdict first, exit 0 / 3") {
  for (const char* ok : {"ScheduleGPipe_p2_m4_v1.csv", "ScheduleInterleaved1F1B_p2_m4_v2.csv",
                         "ScheduleInterleaved1F1B_p2_m4_v2_comms.csv", "ScheduleZBVZeroBubble_p2_m4_v2_comms.csv"}) {
    auto r = pstest::run_cli("verify " + ex(ok));
    INFO(ok, "\n", r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.rfind("VALID under rendezvous semantics", 0) == 0);
    CHECK(has(r.output, "unit costs"));  // CSV without a model says so
    CHECK(has(r.output, "makespan"));
  }
  auto dep = pstest::run_cli("verify " + ex("ScheduleZBVZeroBubble_p2_m4_v2_I_before_F.csv"));
  INFO(dep.output);
  CHECK(dep.exit_code == 3);
  CHECK(dep.output.rfind("INVALID under rendezvous semantics: 1 violation (dependency x1)", 0) == 0);
  CHECK(has(dep.output, "ScheduleZBVZeroBubble_p2_m4_v2_I_before_F.csv:1:79: dependency: [device 0, op 12 '3I1'] "
                        "'3I1' runs before '3F1', its forward"));

  auto recv = pstest::run_cli("verify " + ex("ScheduleGPipe_p2_m4_v1_spurious_recv.csv"));
  INFO(recv.output);
  CHECK(recv.exit_code == 3);
  CHECK(has(recv.output, "ScheduleGPipe_p2_m4_v1_spurious_recv.csv:2:53: comm.unmatched-recv: [device 1, op 8 "
                         "'1RECV_B0']"));
  CHECK(has(recv.output, "stage 1 is the last stage"));
}

TEST_CASE("pipesmith verify: every invalid-schedule file exits 3 naming its rule and location") {
  const std::pair<const char*, const char*> files[] = {
      {"structure-index.yaml", "structure-index.yaml:19:16: structure.index"},
      {"structure-stage-placement.csv", "structure-stage-placement.csv:2:17: structure.stage-placement"},
      {"structure-duplicate.csv", "structure-duplicate.csv:1:5: structure.duplicate"},
      {"structure-missing.csv", "structure-missing.csv:2: structure.missing"},
      {"structure-backward-mix.csv", "structure-backward-mix.csv:1:5: structure.backward-mix"},
      {"dependency.csv", "dependency.csv:1:5: dependency"},
      {"comm-same-device.csv", "comm-same-device.csv:1:5: comm.same-device"},
      {"comm-unmatched-send.csv", "comm-unmatched-send.csv:1:5: comm.unmatched-send"},
      {"comm-unmatched-recv.csv", "comm-unmatched-recv.csv:2:14: comm.unmatched-recv"},
      {"comm-missing.csv", "comm-missing.csv:2:1: comm.missing"},
      {"comm-order.csv", "comm-order.csv:1:9: comm.order"},
      {"deadlock.csv", "deadlock.csv:1:18: deadlock"},
      {"memory-limit.yaml", "memory-limit.yaml:20:16: memory.limit"},
      {"certificate-mismatch.yaml", "certificate-mismatch.yaml:23:1: certificate.mismatch"},
  };
  for (const auto& f : files) {
    auto r = pstest::run_cli("verify " + bad(f.first));
    INFO(f.first, "\n", r.output);
    CHECK(r.exit_code == 3);
    CHECK(has(r.output, f.second));
  }
}

TEST_CASE("pipesmith verify --semantics: the naive-comms 1F1B deadlocks only under rendezvous") {
  auto r = pstest::run_cli("verify " + bad("deadlock.csv"));
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(has(r.output, "deadlock under rendezvous: devices 0 -> 1 -> 0 wait for each other in a cycle"));
  CHECK(has(r.output, "note: device 0 is blocked on op 3 '0SEND_F1'"));
  CHECK(has(r.output, "note: device 1 is blocked on op 3 '1SEND_B0'"));
  CHECK(has(r.output, "deadlocks under rendezvous; safe under grouped, buffered and posted"));
  CHECK(pstest::run_cli("verify " + bad("deadlock.csv") + " --semantics grouped").exit_code == 0);
  CHECK(pstest::run_cli("verify " + bad("deadlock.csv") + " --semantics buffered").exit_code == 0);
  auto wrong = pstest::run_cli("verify " + bad("deadlock.csv") + " --semantics eager");
  CHECK(wrong.exit_code == 1);
  CHECK(has(wrong.output, "--semantics must be rendezvous, grouped, buffered or posted"));
}

TEST_CASE("pipesmith verify --json: the documented schema") {
  auto r = pstest::run_cli("verify " + bad("deadlock.csv") + " --json");
  CHECK(r.exit_code == 3);
  auto j = nlohmann::json::parse(r.output);
  CHECK(j["valid"] == false);
  CHECK(j["semantics"] == "rendezvous");
  REQUIRE(j["violations"].size() == 1);
  const auto& v = j["violations"][0];
  CHECK(v["rule"] == "deadlock");
  CHECK(v["device"] == 0);
  CHECK(v["op_index"] == 3);
  CHECK(v["action"] == "0SEND_F1");
  CHECK(v["line"] == 1);
  CHECK(v["col"] == 18);
  CHECK(v["notes"].size() == 3);
  CHECK(j["safe_under"] == nlohmann::json::array({"grouped", "buffered", "posted"}));
  CHECK(j["makespan_ms"].is_null());
  for (const char* key : {"lower_bound_ms", "bubble_ratio", "peak_memory_gb", "notes", "comms_inserted"})
    CHECK_MESSAGE(j.contains(key), key);

  auto ok = pstest::run_cli("verify " + ex("ScheduleZBVZeroBubble_p2_m4_v2_comms.csv") + " --json");
  CHECK(ok.exit_code == 0);
  auto jo = nlohmann::json::parse(ok.output);
  CHECK(jo["valid"] == true);
  CHECK(jo["makespan_ms"] == 25);
  CHECK(jo["lower_bound_ms"] == 25);
  CHECK(jo["peak_memory_gb"].size() == 2);
}

TEST_CASE("pipesmith verify --memory-limit-gb, --model and --cluster") {
  const std::string csv = ex("ScheduleInterleaved1F1B_p2_m4_v2.csv");
  const std::string model = pstest::source_path("configs/models/llama2-7b.yaml");
  auto fits = pstest::run_cli("verify " + csv + " --model " + model + " --cluster " +
                              pstest::source_path("configs/clusters/8xh200.yaml"));
  INFO(fits.output);
  CHECK(fits.exit_code == 0);
  CHECK(has(fits.output, "balanced partition"));
  CHECK_FALSE(has(fits.output, "unit costs"));
  auto tight = pstest::run_cli("verify " + csv + " --model " + model + " --memory-limit-gb 60");
  INFO(tight.output);
  CHECK(tight.exit_code == 3);
  CHECK(has(tight.output, "memory.limit: [device 0, op 6 '0F3'] device 0 peaks at"));
  CHECK(has(tight.output, "above the limit of 60.000 GB"));
  // Unit costs: 1 MB activations; a 0.004 GB limit is exceeded by device 0 (5 MB peak).
  auto unit = pstest::run_cli("verify " + csv + " --memory-limit-gb 0.004");
  CHECK(unit.exit_code == 3);
  CHECK(pstest::run_cli("verify " + csv + " --memory-limit-gb 0.005").exit_code == 0);
}

TEST_CASE("pipesmith verify: bad input exits 1 with a located message") {
  auto missing = pstest::run_cli("verify /nonexistent/x.csv");
  CHECK(missing.exit_code == 1);
  CHECK(has(missing.output, "cannot open '/nonexistent/x.csv'"));
  const std::string path = pstest::temp_path("bad.csv");
  {
    std::ofstream out(path);
    out << "0F0,0B0\n1F0,1BW0\n";
  }
  auto malformed = pstest::run_cli("verify " + path);
  CHECK(malformed.exit_code == 1);
  CHECK(has(malformed.output, path + ":2:5: bad action '1BW0'"));
  auto flags = pstest::run_cli("verify " + ex("ScheduleGPipe_p2_m4_v1.csv") + " --microbatches 8");
  CHECK(flags.exit_code == 1);
  CHECK(has(flags.output, "--microbatches is 8"));
  auto model_yaml = pstest::run_cli("verify " + bad("memory-limit.yaml") + " --model " +
                                    pstest::source_path("configs/models/llama2-7b.yaml"));
  CHECK(model_yaml.exit_code == 1);
  std::remove(path.c_str());
}

TEST_CASE("pipesmith verify --svg --trace, pipesmith render and simulate") {
  const std::string svg = pstest::temp_path("v.svg"), trace = pstest::temp_path("v.json");
  auto r = pstest::run_cli("verify " + ex("ScheduleZBVZeroBubble_p2_m4_v2_comms.csv") + " --svg " + svg +
                           " --trace " + trace);
  CHECK(r.exit_code == 0);
  const std::string s = pstest::read_file(svg);
  CHECK(s.rfind("<svg", 0) == 0);
  CHECK(has(s, "ScheduleZBVZeroBubble_p2_m4_v2_comms.csv"));
  auto t = nlohmann::json::parse(pstest::read_file(trace));
  CHECK(t["traceEvents"].size() > 80);

  const std::string svg2 = pstest::temp_path("r.svg");
  auto rr = pstest::run_cli("render " + ex("ScheduleGPipe_p2_m4_v1.csv") + " --svg " + svg2 + " --title GPipe");
  CHECK(rr.exit_code == 0);
  CHECK(has(pstest::read_file(svg2), ">GPipe<"));
  // Same input, byte-identical picture.
  const std::string first = pstest::read_file(svg2);
  CHECK(pstest::run_cli("render " + ex("ScheduleGPipe_p2_m4_v1.csv") + " --svg " + svg2 + " --title GPipe").exit_code == 0);
  CHECK(pstest::read_file(svg2) == first);
  CHECK(pstest::run_cli("render " + ex("ScheduleGPipe_p2_m4_v1.csv")).exit_code == 1);  // nothing to write
  auto dead = pstest::run_cli("render " + bad("deadlock.csv") + " --svg " + svg2);
  CHECK(dead.exit_code == 3);
  CHECK(has(dead.output, "nothing drawn"));

  auto sim = pstest::run_cli("simulate " + ex("ScheduleGPipe_p2_m4_v1.csv") + " --ops");
  INFO(sim.output);
  CHECK(sim.exit_code == 0);
  CHECK(has(sim.output, "makespan_ms     15"));
  CHECK(has(sim.output, "0       0   0F0           0            1"));  // device, op, action, start, end
  auto simd = pstest::run_cli("simulate " + bad("deadlock.csv"));
  CHECK(simd.exit_code == 3);
  std::remove(svg.c_str());
  std::remove(trace.c_str());
  std::remove(svg2.c_str());
}
