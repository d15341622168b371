// `pipesmith run` end to end through the CLI: baseline schedules (as `pipesmith baseline` writes them)
// replayed on the host backend with the gradient check, PyTorch CSVs, the watchdog on a deadlocking
// schedule, refusal of invalid schedules, outputs (trace, JSON) and clean failures.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernels/cuda_backend.h"
#include "runtime/mpi_world.h"
#include "test_util.h"

using pstest::run_cli;

namespace {

const char* kSmall = "--scale 0.125 --tokens 8";

std::string fmt_name(const std::string& model, const std::string& sched, int P, int M) {
  return model + "-" + sched + "-p" + std::to_string(P) + "-m" + std::to_string(M) + ".yaml";
}

std::string shipped_model(const std::string& name) { return pstest::source_path("configs/models/" + name + ".yaml"); }

// Writes a baseline schedule and returns its path; `mesh` holds the mesh flags under which it fits 80 GB
// (the host runtime replays its data-parallel ops as no-ops: one replica).
std::string baseline(const std::string& model, const std::string& sched, int P, int M, const std::string& mesh = "") {
  const std::string out = pstest::temp_path(fmt_name(model, sched, P, M));
  auto r = run_cli("baseline " + shipped_model(model) + " --schedule " + sched + " --devices " + std::to_string(P) +
                   " --microbatches " + std::to_string(M) + (mesh.empty() ? "" : " " + mesh) + " -o " + out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  return out;
}

}  // namespace

TEST_CASE("pipesmith run: every baseline shape on 2-8 host workers matches the sequential gradients") {
  struct Case {
    const char* model;
    const char* schedule;
    int P, M;
    const char* mesh;  // what the model needs beside the pipeline to fit 80 GB ("": nothing)
  };
  // Every kind once (the library test covers every kind on 2, 4 and 8 devices), on several models.
  const Case cases[] = {
      {"llama2-7b", "1f1b", 8, 8, ""},
      {"llama2-7b", "gpipe", 2, 4, "--gpus 4 --tensor-parallel 2"},
      {"nemotron-h-like", "zb-h1", 4, 8, "--gpus 8 --tensor-parallel 2"},
      {"nemotron-h-like", "zb-h2", 3, 6, "--gpus 6 --tensor-parallel 2"},
      {"gemma-like", "zbv", 2, 4, ""},
      {"llama2-7b", "interleaved-1f1b", 4, 4, ""},
      {"deepseek-like", "dualpipev", 2, 4, "--gpus 16 --expert-parallel 8"},
      {"minimax-like", "zb-h1", 2, 4, "--gpus 16 --expert-parallel 4"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.model);
    CAPTURE(c.schedule);
    CAPTURE(c.P);
    const std::string file = baseline(c.model, c.schedule, c.P, c.M, c.mesh);
    auto r = run_cli("run " + file + " --model " + shipped_model(c.model) + " --backend host --check-gradients " + kSmall);
    CHECK_MESSAGE(r.exit_code == 0, r.output);
    CHECK(r.output.find("OK (within 1e-05 relative)") != std::string::npos);
    CHECK(r.output.find("max |diff| 0,") != std::string::npos);
    const std::string mem = "after every op on " + std::to_string(c.P) + "/" + std::to_string(c.P) + " devices";
    CHECK_MESSAGE(r.output.find(mem) != std::string::npos, r.output);
    CHECK(r.output.find("simulated") != std::string::npos);
    std::remove(file.c_str());
  }
}

TEST_CASE("pipesmith run: PyTorch CSVs, with and without a model (balanced partition)") {
  const std::string ex = pstest::data_path("pytorch/");
  for (const char* f : {"ScheduleGPipe_p2_m4_v1.csv", "ScheduleInterleaved1F1B_p2_m4_v2_comms.csv",
                        "ScheduleZBVZeroBubble_p2_m4_v2_comms.csv"}) {
    CAPTURE(f);
    auto r = run_cli("run " + ex + f + " --check-gradients " + kSmall);
    CHECK_MESSAGE(r.exit_code == 0, r.output);
    CHECK(r.output.find("OK (within 1e-05 relative)") != std::string::npos);
  }
  // nemotron-h-like's 4 stages on 2 ranks fit 80 GB with tensor parallelism 4 (a cluster file's mesh).
  auto r = run_cli("run " + ex + "ScheduleInterleaved1F1B_p2_m4_v2.csv --model " + shipped_model("nemotron-h-like") +
                   " --cluster " + pstest::data_path("mesh/8xh100-tp4.yaml") + " --check-gradients " + kSmall);
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("balanced partition") != std::string::npos);
  CHECK(r.output.find("comms inserted by the checker's rule") != std::string::npos);
  CHECK(r.output.find("stage 0 (device 0): embedding (32 rows), ") != std::string::npos);
  CHECK(r.output.find("OK (within 1e-05 relative)") != std::string::npos);
  // --no-verify on a compute-only file still inserts comms with the checker's rule.
  r = run_cli("run " + ex + "ScheduleGPipe_p2_m4_v1.csv --no-verify --check-gradients " + std::string(kSmall));
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("not verified (--no-verify); comms inserted by the checker's rule") != std::string::npos);
  CHECK(r.output.find("not simulated: the schedule was run unverified") != std::string::npos);
}

TEST_CASE("pipesmith run: a deadlocking schedule is refused, and with --no-verify stopped by the watchdog") {
  // 1F1B on 2 devices with naive comms (SEND right after the producer, RECV right before the consumer):
  // deadlocks under rendezvous semantics.
  const std::string file = pstest::temp_path("naive-1f1b.csv");
  {
    std::ofstream out(file);
    out << "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0F2,0SEND_F2,0RECV_B1,0B1,0F3,0SEND_F3,0RECV_B2,0B2,0RECV_B3,0B3\n"
        << "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1RECV_F2,1F2,1B2,1SEND_B2,1RECV_F3,1F3,1B3,1SEND_B3\n";
  }
  auto refused = run_cli("run " + file + " " + kSmall);
  CHECK(refused.exit_code == 3);
  CHECK(refused.output.find("deadlock") != std::string::npos);
  CHECK(refused.output.find("--no-verify runs it anyway") != std::string::npos);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_cli("run " + file + " --no-verify --timeout 1 " + kSmall);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(secs < 15.0);
  CHECK(r.exit_code == 4);
  CHECK_MESSAGE(r.output.find("watchdog: no progress for 1 s; all devices stopped") != std::string::npos, r.output);
  CHECK(r.output.find("device 0 is blocked at op 3 '0SEND_F1' (" + file + ":1:18): waits for device 1 to run op 4 "
                      "'1RECV_F1' (device 1 is at op 3 '1SEND_B0')") != std::string::npos);
  CHECK(r.output.find("device 1 is blocked at op 3 '1SEND_B0' (" + file + ":2:18): waits for device 0 to run op 4 "
                      "'0RECV_B0' (device 0 is at op 3 '0SEND_F1')") != std::string::npos);
  CHECK(r.output.find("wait cycle: device 0 → device 1 → device 0") != std::string::npos);
  std::remove(file.c_str());
}

TEST_CASE("pipesmith run: trace and JSON outputs") {
  const std::string file = baseline("llama2-7b", "1f1b", 2, 4);
  const std::string trace = pstest::temp_path("run-trace.json"), json = pstest::temp_path("run-summary.json");
  auto r = run_cli("run " + file + " --model " + shipped_model("llama2-7b") + " --check-gradients --trace " + trace +
                   " --json " + json + " " + kSmall);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  auto t = nlohmann::json::parse(pstest::read_file(trace));
  int x_events = 0, compute0 = 0, comm1 = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X") {
      ++x_events;
      CHECK(e["dur"].get<double>() >= 0);
      if (e["tid"] == 0) ++compute0;
      if (e["tid"] == 3) ++comm1;
    }
  }
  // 1F1B, 2 devices, 4 microbatches: 8 compute ops per device, 8 comm ops per device.
  CHECK(x_events == 32);
  CHECK(compute0 == 8);
  CHECK(comm1 == 8);
  auto j = nlohmann::json::parse(pstest::read_file(json));
  CHECK(j["backend"] == "host");
  CHECK(j["devices"] == 2);
  CHECK(j["gradients"]["ok"] == true);
  CHECK(j["per_device"].size() == 2);
  CHECK(j["per_device"][0]["memory_matches_rule"] == true);
  CHECK(j["measured_ms"].get<double>() > 0);
  CHECK(j["simulated_ms"].get<double>() > 0);
  std::remove(file.c_str());
  std::remove(trace.c_str());
  std::remove(json.c_str());
}

TEST_CASE("pipesmith run: bad usage and the cuda backend without a GPU fail cleanly") {
  const std::string ex = pstest::data_path("pytorch/ScheduleGPipe_p2_m4_v1.csv");
  auto r = run_cli("run " + ex + " --backend tpu");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("--backend must be host, mpi or cuda, got 'tpu'") != std::string::npos);
  r = run_cli("run " + ex + " --scale 0");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("--scale: must be a finite number in (0, 64], got '0'") != std::string::npos);
  r = run_cli("run /nonexistent/schedule.yaml");
  CHECK(r.exit_code == 1);
  r = run_cli("run " + ex + " --microbatches 5");
  CHECK(r.exit_code == 1);
  r = run_cli("run " + ex + " --timeout 0");
  CHECK(r.exit_code == 1);
  // An output it could not write is refused before the run.
  r = run_cli("run " + ex + " --json /nonexistent/run.json");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("cannot write '/nonexistent/run.json' (--json): directory '/nonexistent' does not exist") !=
        std::string::npos);
  CHECK(r.output.find("loss:") == std::string::npos);  // it did not run
  // mpi: one process cannot run a 2-device schedule (or this build has no MPI).
  r = run_cli("run " + ex + " --backend mpi " + kSmall);
  if (ps::rt::mpi_built()) {
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(r.output.find("the mpi backend: 1 process was launched, but the schedule has 2 devices: run one "
                                "process per device (an MPI launcher with 2 processes, e.g. mpirun -np 2)") != std::string::npos,
                  r.output);
  } else {
    CHECK(r.exit_code == 4);
    CHECK(r.output.find("built without the mpi backend") != std::string::npos);
  }
  // cuda: a clean runtime error when there is no device (or no CUDA in this build), never a crash.
  auto probe = ps::kern::make_cuda_backend({2, ""});
  if (!probe.ok()) {
    r = run_cli("run " + ex + " --backend cuda " + kSmall);
    CHECK(r.exit_code == 4);
    const std::string expected = probe.status().message().substr(0, 40);
    CHECK_MESSAGE(r.output.find(expected) != std::string::npos, r.output);
    if (!ps::kern::cuda_backend_built()) CHECK(expected.find("built without the CUDA backend") == 0);
  }
}

TEST_CASE("pipesmith run --semantics grouped: the naive 1F1B runs, grouped like batch_isend_irecv") {
  const std::string file = pstest::temp_path("naive-1f1b-grouped.csv");
  {
    std::ofstream out(file);
    out << "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0F2,0SEND_F2,0RECV_B1,0B1,0F3,0SEND_F3,0RECV_B2,0B2,0RECV_B3,0B3\n"
        << "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1RECV_F2,1F2,1B2,1SEND_B2,1RECV_F3,1F3,1B3,1SEND_B3\n";
  }
  auto r = run_cli("run " + file + " --semantics grouped --check-gradients --timeout 10 " + kSmall);
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("grouped semantics") != std::string::npos);
  CHECK(r.output.find("OK (within 1e-05 relative)") != std::string::npos);
  r = run_cli("run " + file + " --semantics buffered " + kSmall);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("--semantics must be rendezvous or grouped, got 'buffered'") != std::string::npos);
  std::remove(file.c_str());
}

TEST_CASE("pipesmith run: a synthesized schedule (pipesmith synth) matches the sequential gradients") {
  const std::string file = pstest::temp_path("synth.yaml");
  auto s = run_cli("synth " + shipped_model("nemotron-h-like") +
                   " --devices 4 --microbatches 8 --time-limit 1 -o " + file);
  REQUIRE_MESSAGE(s.exit_code == 0, s.output);
  auto r = run_cli("run " + file + " --model " + shipped_model("nemotron-h-like") + " --check-gradients " + kSmall);
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("OK (within 1e-05 relative)") != std::string::npos);
  CHECK(r.output.find("after every op on 4/4 devices") != std::string::npos);
  std::remove(file.c_str());
}
