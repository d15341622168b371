// `pipesmith verify`, `simulate` and `render` through the command line, as a user runs them:
// verdicts and exit codes on the PyTorch examples and the invalid-schedule files, JSON output,
// pictures, semantics and memory flags, CSV + model, bad input; certificate claims the checker
// cannot back (tampered files, re-sealed) and layer ranges that overlap (verify and export).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "ir/schedule_io.h"
#include "test_util.h"
#include "verify/digest.h"
#include "verify/verify.h"

namespace {

std::string ex(const std::string& name) { return pstest::data_path("pytorch/" + name); }
std::string bad(const std::string& name) { return pstest::source_path("configs/invalid-schedules/" + name); }

bool has(const std::string& out, const std::string& what) { return out.find(what) != std::string::npos; }

// A copy of configs/invalid-schedules/certificate-mismatch.yaml with a true certificate, edited by
// `edit` and re-sealed (a forger can recompute SHA-256), written to a temp file; returns its path.
std::string tampered(const std::string& name, const std::function<void(ps::Schedule&)>& edit) {
  auto s = ps::read_schedule_yaml(bad("certificate-mismatch.yaml"));
  REQUIRE_MESSAGE(s.ok(), s.status().str());
  ps::VerifyOptions o;
  o.check_certificate = false;
  const ps::Report r = ps::verify(*s, o);
  REQUIRE(r.valid);
  s->certificate = ps::make_certificate(*s, r);
  edit(*s);
  ps::seal_certificate(*s);
  const std::string path = pstest::temp_path(name);
  std::ofstream(path) << ps::format_schedule_yaml(*s);
  return path;
}

// "FILE:LINE:COL" of the value on the first line of FILE that holds `key`.
std::string value_loc(const std::string& path, const std::string& key) {
  const std::string text = pstest::read_file(path);
  const size_t at = text.find(key);
  REQUIRE(at != std::string::npos);
  const size_t bol = text.rfind('\n', at) + 1;
  int line = 1;
  for (size_t i = 0; i < bol; ++i) line += text[i] == '\n';
  return fmt::format("{}:{}:{}", path, line, at + key.size() - bol + 1);
}

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

TEST_CASE("pipesmith verify: PyTorch's UNSHARD/RESHARD/REDUCE_GRAD certified in its place, refused elsewhere") {
  for (const char* name : {"ScheduleInterleaved1F1B_p2_m4_v2_dp.csv", "ScheduleZBVZeroBubble_p2_m4_v2_dp.csv"}) {
    auto r = pstest::run_cli(std::string("verify ") + ex(name));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.rfind("VALID under rendezvous semantics", 0) == 0);
    CHECK(has(r.output, "12 UNSHARD/RESHARD/REDUCE_GRAD action(s): kept where the file places them"));
  }
  // 4 stages per rank: PyTorch's FSDP lowering gathers stages again; a schedule gathers a stage once.
  auto v4 = pstest::run_cli("verify " + ex("ScheduleInterleaved1F1B_p2_m4_v4_dp.csv"));
  INFO(v4.output);
  CHECK(v4.exit_code == 0);
  CHECK(has(v4.output,
            "stage(s) 0 (again at " + ex("ScheduleInterleaved1F1B_p2_m4_v4_dp.csv") + ":1:143), 1 (again at "));
  CHECK(has(v4.output, "are unsharded more than once, as PyTorch's FSDP lowering does on a rank with more than three "
                       "stages"));
  const std::string early = ex("ScheduleInterleaved1F1B_p2_m4_v2_dp_early_reduce.csv");
  auto r = pstest::run_cli("verify " + early);
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(r.output.rfind("INVALID under rendezvous semantics: 1 violation (dependency x1)", 0) == 0);
  CHECK(has(r.output, early + ":1:308: dependency: [device 0, op 42 '0REDUCE_GRAD'] '0REDUCE_GRAD' runs before "
                                 "'0B3', the last backward of its stage"));
  // Costed by a model with a mesh (data 8 x tensor 2, distributed optimizer): each REDUCE_GRAD takes the
  // stage's reduce-scatter where PyTorch put it; PyTorch's UNSHARD/RESHARD on stages FSDP does not shard
  // stay, as the no-ops PyTorch runs them as.
  const std::string mesh = pstest::data_path("llama3-8b-dp8.yaml");
  auto m = pstest::run_cli("verify " + ex("ScheduleInterleaved1F1B_p2_m4_v2_dp.csv") + " --model " + mesh + " --json");
  INFO(m.output);
  CHECK(m.exit_code == 0);
  auto j = nlohmann::json::parse(m.output);
  CHECK(j["valid"] == true);
  CHECK(j["exposed_data_parallel_ms"].get<double>() > 0);
  bool noted = false;
  for (const auto& n : j["notes"])
    noted |= has(n.get<std::string>(), "the model does not shard stage(s) 0, 1, 2, 3 with FSDP: the CSV's "
                                       "UNSHARD/RESHARD there take 0 ms and 0 MB");
  CHECK(noted);
  auto bad_m = pstest::run_cli("verify " + early + " --model " + mesh);
  CHECK(bad_m.exit_code == 3);
  CHECK(has(bad_m.output, early + ":1:308: dependency: [device 0, op 42 '0REDUCE_GRAD']"));
}

TEST_CASE("pipesmith verify: every invalid-schedule file exits 3 naming its rule and location") {
  const std::pair<const char*, const char*> files[] = {
      {"problem-layers.yaml", "problem-layers.yaml:17:32: problem.layers"},
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
      {"certificate-mismatch.yaml", "certificate-mismatch.yaml:26:16: certificate.mismatch"},
      {"certificate-claim.yaml", "certificate-claim.yaml:33:19: certificate.claim"},
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
  CHECK(has(flags.output, "the microbatch count given is 8"));
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

TEST_CASE("pipesmith verify: certificate figures the checker's own computation rules out exit 3 at the field") {
  // (a) a heuristic makespan below the checker's lower bound (72.325 ms for this file).
  const std::string low = tampered("claim-heuristic.yaml", [](ps::Schedule& s) { s.certificate->extra["heuristic_ms"] = "60.5"; });
  auto a = pstest::run_cli("verify " + low);
  INFO(a.output);
  CHECK(a.exit_code == 3);
  CHECK(a.output.rfind("INVALID under rendezvous semantics: 1 violation (certificate.claim x1)", 0) == 0);
  CHECK(has(a.output, value_loc(low, "heuristic_ms: ") +
                          ": certificate.claim: certificate field 'extra.heuristic_ms' claims a makespan of 60.5 ms, "
                          "below the checker's lower bound 72.325 ms: no order of this partition and placement is that fast"));

  // (b) a negative proven bound, and a NaN one.
  const std::string neg = tampered("claim-negative.yaml", [](ps::Schedule& s) { s.certificate->extra["bound_proven_ms"] = "-12.5"; });
  auto b = pstest::run_cli("verify " + neg);
  INFO(b.output);
  CHECK(b.exit_code == 3);
  CHECK(has(b.output, value_loc(neg, "bound_proven_ms: ") +
                          ": certificate.claim: certificate field 'extra.bound_proven_ms' claims -12.5, a negative figure"));
  const std::string nan = tampered("claim-nan.yaml", [](ps::Schedule& s) { s.certificate->extra["bound_proven_ms"] = "nan"; });
  auto n = pstest::run_cli("verify " + nan + " --json");
  CHECK(n.exit_code == 3);
  auto jn = nlohmann::json::parse(n.output);
  REQUIRE(jn["violations"].size() == 1);
  CHECK(jn["violations"][0]["rule"] == "certificate.mismatch");
  CHECK(jn["violations"][0]["message"] ==
        "certificate field 'extra.bound_proven_ms' claims 'nan' but the checker requires a finite number");

  // (e) a bound above the makespan: the message says "at most".
  const std::string over = tampered("claim-over.yaml", [](ps::Schedule& s) { s.certificate->extra["bound_ms"] = "1000"; });
  auto e = pstest::run_cli("verify " + over);
  INFO(e.output);
  CHECK(e.exit_code == 3);
  CHECK(has(e.output, "certificate field 'extra.bound_ms' claims 1000 ms but the checker requires a bound at most the "
                      "makespan"));
  CHECK_FALSE(has(e.output, "requires a bound above"));
  for (const std::string& p : {low, neg, nan, over}) std::remove(p.c_str());
}

TEST_CASE("pipesmith verify: a proven bound the checker cannot recheck is an UNCHECKED CLAIM, text and JSON") {
  // (d) optimal: true with bound_proven_ms raised to the makespan: consistent, but the proof is not in the file.
  std::string mk;
  const std::string path = tampered("claim-unchecked.yaml", [&](ps::Schedule& s) {
    mk = fmt::format("{}", s.certificate->makespan_ms);
    s.certificate->extra["optimal"] = "true";
    s.certificate->extra["bound_proven_ms"] = mk;
  });
  auto r = pstest::run_cli("verify " + path);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.rfind("VALID under rendezvous semantics, with 1 unchecked claim (see below)\n", 0) == 0);
  const std::string claim = fmt::format("certificate claims bound_proven_ms {} ms (optimal: true); the checker's own "
                                        "bound is 72.325 ms: the claim is not rechecked",
                                        mk);
  CHECK(has(r.output, value_loc(path, "bound_proven_ms: ") + ": UNCHECKED CLAIM: " + claim + "\n"));

  auto j = pstest::run_cli("verify " + path + " --json");
  CHECK(j.exit_code == 0);
  auto jj = nlohmann::json::parse(j.output);
  CHECK(jj["valid"] == true);
  CHECK(jj["violations"].empty());
  REQUIRE(jj["unchecked_claims"].size() == 1);
  CHECK(jj["unchecked_claims"][0]["field"] == "extra.bound_proven_ms");
  CHECK(jj["unchecked_claims"][0]["message"] == claim);
  CHECK(jj["unchecked_claims"][0]["file"] == path);

  // The same certificate without the claim: nothing unchecked, the plain verdict.
  const std::string plain = tampered("claim-plain.yaml", [](ps::Schedule&) {});
  auto p = pstest::run_cli("verify " + plain);
  CHECK(p.exit_code == 0);
  CHECK(p.output.rfind("VALID under rendezvous semantics\n", 0) == 0);
  CHECK_FALSE(has(p.output, "UNCHECKED"));
  CHECK(nlohmann::json::parse(pstest::run_cli("verify " + plain + " --json").output)["unchecked_claims"].empty());
  std::remove(path.c_str());
  std::remove(plain.c_str());
}

TEST_CASE("pipesmith verify and export: overlapping layer ranges are refused (problem.layers, nothing written)") {
  // (c) stage 1 claims layers 0-33 over stage 0's 0-3.
  const std::string path = tampered("layers-overlap.yaml", [](ps::Schedule& s) {
    s.problem.stages[1].first_layer = 0;
    s.problem.stages[1].last_layer = 33;
  });
  auto v = pstest::run_cli("verify " + path);
  INFO(v.output);
  CHECK(v.exit_code == 3);
  CHECK(has(v.output, value_loc(path, "- {id: 1, device: 1, layers: ") +
                          ": problem.layers: stage 1 holds layers 0-33, which overlap stage 0's layers 0-3: stage 1 "
                          "must start at layer 4, right after stage 0 ends"));

  const std::string dir = pstest::temp_path("layers-overlap-export");
  std::filesystem::remove_all(dir);
  auto x = pstest::run_cli(fmt::format("export {} --to pytorch -o {}", path, dir));
  INFO(x.output);
  CHECK(x.exit_code == 3);
  CHECK(has(x.output, "problem.layers"));
  CHECK(has(x.output, "nothing written"));
  CHECK_FALSE(std::filesystem::exists(dir));

  // The same schedule with sound ranges exports.
  const std::string good = tampered("layers-sound.yaml", [](ps::Schedule&) {});
  auto ok = pstest::run_cli(fmt::format("export {} --to pytorch -o {}", good, dir));
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  const auto plan = nlohmann::json::parse(pstest::read_file(dir + "/plan.json"));
  CHECK(plan["stages"][1]["layers"] == nlohmann::json::array({4, 7}));
  std::filesystem::remove_all(dir);
  std::remove(path.c_str());
  std::remove(good.c_str());
}

TEST_CASE("pipesmith verify: a baseline's certificate is rechecked whole (no unchecked claims)") {
  const std::string out = pstest::temp_path("claims-baseline.yaml");
  auto b = pstest::run_cli(fmt::format("baseline {} --schedule 1f1b --devices 4 --microbatches 8 -o {}",
                                       pstest::source_path("configs/models/llama2-7b.yaml"), out));
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  auto v = pstest::run_cli("verify " + out);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(v.output.rfind("VALID under rendezvous semantics\n", 0) == 0);
  CHECK_FALSE(has(v.output, "UNCHECKED"));
  std::remove(out.c_str());
}

namespace test_verify_cost_model {

// A one-device model of two layers A (F 1, I 2, W 2 each), M = 3; `extra` goes into A's map and
// `cluster_extra` into the cluster's. Written to a temporary file; returns its path.
std::string cost_model_file(const std::string& name, const std::string& extra, const std::string& cluster_extra) {
  const std::string path = pstest::temp_path(name);
  std::ofstream(path) << "model:\n  name: fused\n  layer_types:\n"
                         "    A: {forward_ms: 1, backward_input_ms: 2, backward_weight_ms: 2, activation_mb: 10, "
                         "wgrad_stash_mb: 4, output_mb: 1, params_m: 1"
                      << extra << "}\n  layers:\n    - {type: A, repeat: 2}\ncluster:\n  devices: 1\n"
                      << cluster_extra << "pipeline: {microbatches: 3}\n";
  return path;
}

// `pipesmith baseline MODEL --schedule gpipe -o OUT`, then `pipesmith verify OUT --json`: the makespan.
double gpipe_makespan(const std::string& model, const std::string& out) {
  auto b = pstest::run_cli("baseline " + model + " --schedule gpipe -o " + out);
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  auto v = pstest::run_cli("verify " + out + " --json");
  INFO(v.output);
  REQUIRE(v.exit_code == 0);
  const auto j = nlohmann::json::parse(v.output);
  CHECK(j["valid"].get<bool>());
  CHECK(j["lower_bound_ms"].get<double>() <= j["makespan_ms"].get<double>());
  return j["makespan_ms"].get<double>();
}

TEST_CASE("pipesmith baseline + verify: backward_ms makes B cheaper, op_overhead_ms adds per compute op") {
  const std::string dir = pstest::fresh_dir("cost-model");
  const double split = gpipe_makespan(cost_model_file("split.yaml", "", ""), dir + "/split.yaml");
  const double fused = gpipe_makespan(cost_model_file("fused.yaml", ", backward_ms: 2.75", ""), dir + "/fused.yaml");
  const double both = gpipe_makespan(cost_model_file("both.yaml", ", backward_ms: 2.75", "  op_overhead_ms: 0.25\n"),
                                     dir + "/both.yaml");
  // One stage of both layers: F 2, I + W 8, B 5.5; GPipe runs 3 F and 3 B, nothing waits.
  CHECK(split == 3 * (2 + 8));
  CHECK(fused == split - 3 * (8 - 5.5));
  CHECK(both == doctest::Approx(fused + 6 * 0.25));
  // The schedule file states them, and only where they are set.
  const std::string plain = pstest::read_file(dir + "/split.yaml"), with = pstest::read_file(dir + "/both.yaml");
  CHECK_FALSE(has(plain, "bwd_ms:"));
  CHECK_FALSE(has(plain, "op_overhead_ms"));
  CHECK(has(with, "bwd_weight_ms: 4, bwd_ms: 5.5, "));
  CHECK(has(with, "\n  op_overhead_ms: 0.25\n"));
  // A bad value is refused with its location.
  auto bad = pstest::run_cli("lower " + cost_model_file("bad.yaml", ", backward_ms: -1", "") + " --devices 1");
  CHECK(bad.exit_code != 0);
  CHECK(has(bad.output, "bad.yaml:4:"));
  CHECK(has(bad.output, "layer type 'A': backward_ms must be >= 0, got -1"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("pipesmith synth + verify: with a B cheaper than I + W the certificate claims only the checker's bound") {
  // The op DAG runs I and W on stages that split; here B-only schedules beat every order of it.
  const std::string dir = pstest::fresh_dir("cost-model-synth");
  const std::string model = cost_model_file("cheap-b.yaml", ", backward_ms: 3.5", "");
  const std::string out = dir + "/s.yaml";
  auto s = pstest::run_cli("synth " + model + " --devices 2 --microbatches 4 --evaluations 2 --seed 0 --quiet -o " + out);
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  auto v = pstest::run_cli("verify " + out);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(v.output.rfind("VALID under rendezvous semantics", 0) == 0);
  CHECK_FALSE(has(v.output, "certificate.mismatch"));
  auto written = ps::read_schedule_yaml(out);
  REQUIRE(written.ok());
  REQUIRE(written->certificate);
  for (const ps::StageSpec& st : written->problem.stages) REQUIRE(st.split_backward);  // the search kept I and W
  const auto& extra = written->certificate->extra;
  CHECK(extra.at("solver_status").rfind("op DAG only: ", 0) == 0);
  CHECK(extra.at("optimal") == "false");
  CHECK(std::stod(extra.at("bound_ms")) <= written->certificate->makespan_ms);
  std::filesystem::remove_all(dir);
}

}  // namespace test_verify_cost_model
