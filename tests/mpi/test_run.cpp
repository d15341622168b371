// `pipesmith run --backend mpi` with real processes under mpirun: replays on 2, 4 and 8 processes
// (1F1B, interleaved 1F1B, ZB-V, a synthesized irregular schedule) with gradients identical to the
// unpipelined run, and the faults: a deadlock stopped on every rank, a rank killed with SIGKILL, inputs
// that differ across ranks, a world size that does not match the schedule, a rank that leaves while the
// others wait for it (an op missing, an extra op, a program cut short). A small wrapper records
// every rank's pipesmith pid and exit status; each pid is checked to be gone afterwards.
#include <doctest/doctest.h>
#include <signal.h>

#include <cctype>
#include <cerrno>
#include <filesystem>
#include <chrono>
#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "test_util.h"

namespace {

const char* kSmall = "--scale 0.125 --tokens 8";

std::string model_path(const std::string& name) { return pstest::source_path("configs/models/" + name + ".yaml"); }

pstest::CliResult shell(const std::string& cmd) {
  pstest::CliResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  const int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Runs one rank's command and reports its pid and exit status. The command runs in a session of its
// own under a recorder that writes its pid, its exit status and its stderr to files in $PS_RANK_DIR,
// so that the status and what the rank said are known even when mpirun kills this wrapper (it does,
// once a rank exits without MPI_Finalize) or has stopped forwarding output by the time a rank prints; the
// wrapper forwards mpirun's SIGTERM to the command, as mpirun would send it without a wrapper. The
// wrapper itself exits 0, so that mpirun does not end the other ranks before they report, except when
// its command died by a signal: then, a second later, it dies by the same signal (mpirun sees a rank
// killed, as without a wrapper). The rank $PS_ODD_RANK runs $PS_ODD_SCHEDULE instead of the schedule
// (argument 3).
const char* kWrapper = R"(R=$OMPI_COMM_WORLD_RANK
if [ "$R" = "${PS_ODD_RANK:--1}" ]; then a=$1; b=$2; shift 3; set -- "$a" "$b" "$PS_ODD_SCHEDULE" "$@"; fi
D=$PS_RANK_DIR
setsid sh -c 'd=$1; r=$2; shift 2; "$@" 2>"$d/err.$r" & p=$!; echo $p > "$d/pid.$r.tmp"; mv "$d/pid.$r.tmp" "$d/pid.$r"
wait $p; echo $? > "$d/exit.$r.tmp"; mv "$d/exit.$r.tmp" "$d/exit.$r"' sh "$D" "$R" "$@" </dev/null &
q=$!
while [ ! -s "$D/pid.$R" ] && kill -0 $q 2>/dev/null; do sleep 0.01; done
p=$(cat "$D/pid.$R")
trap 'kill -s TERM $p 2>/dev/null' TERM
echo "rank $R pid $p"
while kill -0 $q 2>/dev/null; do wait $q; done
rc=$(cat "$D/exit.$R")
trap - TERM
echo "rank $R exit $rc"
if [ $rc -gt 128 ]; then sleep 1; kill -s $((rc - 128)) $$; fi
exit 0
)";

// Past this a launch is a hang: timeout(1) ends it, its exit code 124 (the tests assert on exit codes,
// never on how long a launch took).
constexpr int kLaunchTimeoutS = 240;

struct Launch {
  int exit_code = -1;        // mpirun's
  std::string output;        // mpirun's output (every rank's stdout), then every rank's stderr
  std::map<int, int> pids;   // rank → pid of its pipesmith process
  std::map<int, int> exits;  // rank → exit status of its pipesmith process (128 + signal when killed)
};

// mpirun -np `np` pipesmith run SCHEDULE ARGS; `env` holds NAME=VALUE pairs passed to every rank.
Launch mpirun(int np, const std::string& schedule, const std::string& args,
              const std::vector<std::pair<std::string, std::string>>& env = {}) {
  const std::string wrapper = pstest::temp_path("rank-wrapper.sh");
  {
    std::ofstream out(wrapper);
    out << kWrapper;
  }
  const std::string dir = pstest::temp_path("ranks");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string prefix = "PS_RANK_DIR='" + dir + "' ", exports = " -x PS_RANK_DIR";
  for (const auto& [k, v] : env) {
    prefix += k + "='" + v + "' ";
    exports += " -x " + k;
  }
  // A launch that hangs is killed by timeout(1) and shows as mpirun's exit 124 (see kLaunchTimeoutS).
  const std::string cmd = prefix + "timeout -k 10 " + std::to_string(kLaunchTimeoutS) + " " + PIPESMITH_MPIEXEC +
                          " --allow-run-as-root --oversubscribe" + exports + " -np " +
                          std::to_string(np) + " sh " + wrapper + " " + PIPESMITH_CLI + " run " + schedule + " " + args;
  auto r = shell(cmd);
  Launch l;
  l.exit_code = r.exit_code;
  l.output = r.output;
  // Each rank's pid and exit status from the recorder's files; a rank whose command is still
  // exiting when mpirun returns gets 10 s to write its status.
  auto read_int = [](const std::string& path, int& v) {
    std::ifstream in(path);
    return static_cast<bool>(in >> v);
  };
  for (int rank = 0; rank < np; ++rank) {
    int pid = 0, code = 0;
    if (!read_int(dir + "/pid." + std::to_string(rank), pid)) continue;
    l.pids[rank] = pid;
    for (int i = 0; i < 100 && !read_int(dir + "/exit." + std::to_string(rank), code); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (read_int(dir + "/exit." + std::to_string(rank), code)) l.exits[rank] = code;
  }
  for (int rank = 0; rank < np; ++rank) {  // each rank's stderr, whole, after mpirun's own output
    std::ifstream in(dir + "/err." + std::to_string(rank));
    const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!said.empty()) l.output += said + (said.back() == '\n' ? "" : "\n");
  }
  std::filesystem::remove_all(dir);
  std::remove(wrapper.c_str());
  return l;
}

bool process_gone(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  return !in || (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z');
}

// Every rank reported its pid, and none of them is left running (an exiting process gets a moment).
void check_no_process_left(const Launch& l, int np) {
  CHECK_MESSAGE(static_cast<int>(l.pids.size()) == np, l.output);
  for (const auto& entry : l.pids) {
    const auto rank = entry.first;
    const auto pid = entry.second;
    CAPTURE(rank);
    bool gone = process_gone(pid);
    for (int i = 0; i < 30 && !gone; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      gone = process_gone(pid);
    }
    CHECK_MESSAGE(gone, "pid ", pid, " is still running");
    if (!gone) kill(pid, SIGKILL);
  }
}

std::string write_schedule(const std::string& cmd_args, const std::string& name) {
  const std::string out = pstest::temp_path(name);
  auto r = pstest::run_cli(cmd_args + " -o " + out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  return out;
}

// `tensor` > 1: the schedule of a mesh with that tensor parallelism beside the pipeline, which is what
// llama2-7b needs to fit 80 GB in some shapes (interleaved 1F1B and ZB-V at P = 2: 2; GPipe's 16
// microbatches on 2 ranks: 4). The replay runs each rank's pipeline ops; a data-parallel op is a no-op
// in one replica.
std::string baseline(const std::string& model, const std::string& kind, int P, int M, int tensor = 1) {
  const std::string mesh =
      tensor > 1 ? " --gpus " + std::to_string(P * tensor) + " --tensor-parallel " + std::to_string(tensor) : "";
  return write_schedule("baseline " + model_path(model) + " --schedule " + kind + " --devices " + std::to_string(P) +
                            " --microbatches " + std::to_string(M) + mesh,
                        model + "-" + kind + "-p" + std::to_string(P) + ".yaml");
}

// The naive-comm 1F1B of docs/runtime.md's watchdog example: deadlocks under rendezvous semantics.
std::string naive_1f1b() {
  const std::string file = pstest::temp_path("naive-1f1b.csv");
  std::ofstream out(file);
  out << "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0F2,0SEND_F2,0RECV_B1,0B1,0F3,0SEND_F3,0RECV_B2,0B2,0RECV_B3,0B3\n"
      << "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1RECV_F2,1F2,1B2,1SEND_B2,1RECV_F3,1F3,1B3,1SEND_B3\n";
  return file;
}

void check_replay(const std::string& file, const std::string& model, int P) {
  auto l = mpirun(P, file, "--model " + model_path(model) + " --backend mpi --check-gradients " + kSmall);
  CHECK_MESSAGE(l.exit_code == 0, l.output);
  for (int r = 0; r < P; ++r) {
    CAPTURE(r);
    CHECK_MESSAGE(l.exits.count(r) == 1, l.output);
    if (l.exits.count(r)) CHECK(l.exits.at(r) == 0);
    // Rank 0's summary has a row for every rank's device, measured in that rank's process.
    CHECK_MESSAGE(pstest::contains(l.output, "mpi rank " + std::to_string(r) + "/" + std::to_string(P) + " pid " +
                                                 std::to_string(l.pids[r])),
                  l.output);
  }
  CHECK(pstest::contains(l.output, "on backend mpi (" + std::to_string(P) + " devices"));
  CHECK_MESSAGE(pstest::contains(l.output, "max |diff| 0, max relative 0"), l.output);
  CHECK(pstest::contains(l.output, "OK (within 1e-05 relative)"));
  CHECK(pstest::contains(l.output, "after every op on " + std::to_string(P) + "/" + std::to_string(P) + " devices"));
  check_no_process_left(l, P);
}

}  // namespace

TEST_CASE("mpi [replay]: 1F1B, interleaved 1F1B, ZB-V and a synthesized schedule on 2, 4 and 8 processes") {
  for (int P : {2, 4, 8}) {
    CAPTURE(P);
    for (const char* kind : {"1f1b", "interleaved-1f1b", "zbv"}) {
      CAPTURE(kind);
      const std::string file = baseline("llama2-7b", kind, P, 2 * P, P == 2 ? 2 : 1);
      check_replay(file, "llama2-7b", P);
      std::remove(file.c_str());
    }
    // The search's irregular plans (stages dealt over devices unevenly, V and looped placements), with
    // tensor parallelism 2 beside the pipeline (nemotron-h-like fits 80 GB on 2 ranks with it).
    const std::string file = write_schedule("synth " + model_path("nemotron-h-like") + " --devices " +
                                                std::to_string(P) + " --microbatches " + std::to_string(2 * P) +
                                                " --gpus " + std::to_string(2 * P) + " --tensor-parallel 2" +
                                                " --evaluations 50",
                                            "synth-p" + std::to_string(P) + ".yaml");
    check_replay(file, "nemotron-h-like", P);
    std::remove(file.c_str());
  }
}

TEST_CASE("mpi [replay]: grouped semantics, and rank 0's trace and JSON hold every rank's timeline") {
  const std::string naive = naive_1f1b();
  auto l = mpirun(2, naive, std::string("--backend mpi --semantics grouped --check-gradients --timeout 10 ") + kSmall);
  CHECK_MESSAGE(l.exit_code == 0, l.output);
  CHECK(pstest::contains(l.output, "grouped semantics"));
  CHECK(pstest::contains(l.output, "max |diff| 0, max relative 0"));
  std::remove(naive.c_str());

  const std::string file = baseline("llama2-7b", "1f1b", 4, 8);
  const std::string trace = pstest::temp_path("mpi-trace.json"), json = pstest::temp_path("mpi-run.json");
  l = mpirun(4, file, "--model " + model_path("llama2-7b") + " --backend mpi --trace " + trace + " --json " + json +
                          " " + kSmall);
  REQUIRE_MESSAGE(l.exit_code == 0, l.output);
  auto t = nlohmann::json::parse(pstest::read_file(trace));
  std::map<int, int> per_tid;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "X") ++per_tid[e["tid"].get<int>()];
  // 1F1B, 4 devices, 8 microbatches: 16 compute ops per device; comms 16 on the ends, 32 inside.
  for (int d = 0; d < 4; ++d) {
    CAPTURE(d);
    CHECK(per_tid[2 * d] == 16);
    CHECK(per_tid[2 * d + 1] == (d == 0 || d == 3 ? 16 : 32));
  }
  auto j = nlohmann::json::parse(pstest::read_file(json));
  CHECK(j["backend"] == "mpi");
  REQUIRE(j["per_device"].size() == 4);
  for (int d = 0; d < 4; ++d) {
    CHECK(j["per_device"][d]["device"] == d);
    CHECK(j["per_device"][d]["memory_matches_rule"] == true);
    CHECK(j["per_device"][d]["measured_ms"].get<double>() > 0);
  }
  for (const std::string& f : {file, trace, json}) std::remove(f.c_str());
}

TEST_CASE("mpi [faults]: a deadlock is stopped on every rank with its witness, exit 4 everywhere") {
  const std::string file = naive_1f1b();
  const std::string args = std::string("--backend mpi --no-verify --timeout 1 ") + kSmall;
  auto l = mpirun(2, file, args);
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    REQUIRE_MESSAGE(l.exits.count(r) == 1, l.output);
    CHECK(l.exits.at(r) == 4);
  }
  // Each rank names the op it is blocked on and the peer op it waits for.
  CHECK_MESSAGE(pstest::contains(l.output, "device 0 is blocked at op 3 '0SEND_F1' (" + file +
                                               ":1:18): waits for device 1 to run op 4 '1RECV_F1'"),
                l.output);
  CHECK(pstest::contains(l.output, "device 1 is blocked at op 3 '1SEND_B0' (" + file +
                                       ":2:18): waits for device 0 to run op 4 '0RECV_B0'"));
  CHECK(pstest::contains(l.output, "watchdog: no progress for 1 s"));
  check_no_process_left(l, 2);
  // Without the wrapper, as a user runs it: mpirun itself fails.
  auto direct = shell(std::string(PIPESMITH_MPIEXEC) + " --allow-run-as-root --oversubscribe -np 2 " + PIPESMITH_CLI +
                      " run " + file + " " + args);
  CHECK(direct.exit_code != 0);
  CHECK_MESSAGE(pstest::contains(direct.output, "watchdog: no progress for 1 s"), direct.output);
  std::remove(file.c_str());
}

TEST_CASE("mpi [faults]: a rank killed with SIGKILL mid-run makes the others exit 4 naming it") {
  const std::string file = baseline("llama2-7b", "1f1b", 4, 8);
  auto l = mpirun(4, file, std::string("--backend mpi --timeout 20 ") + kSmall, {{"PIPESMITH_TEST_KILL", "1:10"}});
  CHECK(l.exit_code != 0);
  REQUIRE_MESSAGE(l.pids.count(1) == 1, l.output);
  CHECK(pstest::contains(l.output, "raising SIGKILL after 10 ops"));
  CHECK_MESSAGE(l.exits[1] == 128 + SIGKILL, l.output);
  const std::string dead = "rank 1/4 (pid " + std::to_string(l.pids[1]) + ", host ";
  for (int r : {0, 2, 3}) {
    CAPTURE(r);
    REQUIRE_MESSAGE(l.exits.count(r) == 1, l.output);
    CHECK(l.exits.at(r) == 4);
    // Each survivor's error names the dead rank (directly, or through the stop notice of a rank
    // that saw it first) and the op the survivor was blocked on.
    const std::string mine = "pipesmith: error: rank " + std::to_string(r) + "/4 (pid " + std::to_string(l.pids[r]);
    const size_t at = l.output.find(mine);
    REQUIRE_MESSAGE(at != std::string::npos, l.output);
    const std::string line = l.output.substr(at, l.output.find('\n', at) - at);
    CHECK_MESSAGE(pstest::contains(line, dead), line);
    CHECK_MESSAGE(pstest::contains(line, "is gone"), line);
  }
  // Well within the 20 s timeout: the death is detected by pid, not by the watchdog's timeout.
  CHECK(!pstest::contains(l.output, "no progress for 20 s"));
  check_no_process_left(l, 4);
  std::remove(file.c_str());
}

TEST_CASE("mpi [faults]: different inputs on one rank are refused before any transfer; a wrong world size too") {
  const std::string a = baseline("llama2-7b", "1f1b", 4, 8), b = baseline("llama2-7b", "gpipe", 4, 8);
  auto l = mpirun(4, a, std::string("--backend mpi ") + kSmall, {{"PS_ODD_RANK", "2"}, {"PS_ODD_SCHEDULE", b}});
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    REQUIRE_MESSAGE(l.exits.count(r) == 1, l.output);
    CHECK(l.exits.at(r) == 1);
  }
  CHECK_MESSAGE(pstest::contains(l.output, "the 4 processes were given different inputs; refused before any transfer"),
                l.output);
  CHECK(pstest::contains(l.output, "llama2-7b-gpipe-p4.yaml) is sha256:"));
  CHECK(!pstest::contains(l.output, "loss:"));  // nothing ran
  check_no_process_left(l, 4);

  l = mpirun(3, a, std::string("--backend mpi ") + kSmall);
  CHECK_MESSAGE(pstest::contains(l.output, "the mpi backend: 3 processes were launched, but the schedule has 4 devices"),
                l.output);
  CHECK(l.exits.size() == 3);
  for (const auto& [rank, code] : l.exits) CHECK(code == 1);
  check_no_process_left(l, 3);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST_CASE("mpi [faults]: a run that would not fit in this machine's memory is refused on every rank, exit 1") {
  // GPipe holds all 16 microbatches of 65,536 tokens at --scale 64: about 0.5 TB for the two ranks.
  const std::string a = baseline("llama2-7b", "gpipe", 2, 16, 4);
  auto l = mpirun(2, a, "--backend mpi --scale 64 --tokens 65536");
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    REQUIRE_MESSAGE(l.exits.count(r) == 1, l.output);
    CHECK_MESSAGE(l.exits.at(r) == 1, l.output);
  }
  CHECK_MESSAGE(pstest::contains(l.output, "needs about "), l.output);
  CHECK(pstest::contains(l.output, " available ("));
  CHECK(!pstest::contains(l.output, "internal error"));
  CHECK(!pstest::contains(l.output, "out of memory"));
  check_no_process_left(l, 2);
  std::remove(a.c_str());
}

namespace {

// `file` with device `d`'s program changed by `edit` (a list of op names), the predicted times and the
// certificate left out (they describe the original).
std::string edited_program(const std::string& file, int d, const std::function<void(std::vector<std::string>&)>& edit,
                           const std::string& name) {
  std::string text = pstest::read_file(file);
  text = text.substr(0, text.find("\npredicted:") + 1);
  size_t at = text.find("programs:");
  for (int k = 0; k <= d; ++k) at = text.find("ops: [", at + 1);
  REQUIRE(at != std::string::npos);
  const size_t open = at + 6, close = text.find(']', open);
  std::vector<std::string> ops;
  std::stringstream in(text.substr(open, close - open));
  for (std::string op; std::getline(in, op, ',');) ops.push_back(op.substr(op.find_first_not_of(' ')));
  edit(ops);
  std::string list;
  for (const auto& op : ops) list += (list.empty() ? "" : ", ") + op;
  const std::string out = pstest::temp_path(name);
  std::ofstream(out) << text.substr(0, open) << list << text.substr(close);
  return out;
}

// Every rank exits 4 by its own watchdog or a peer's stop notice (a rank that failed is seen by its
// stop notice or its pid at once; one that ended cleanly, by the stop notice of the rank whose
// watchdog fires), the launch was not killed as a hang, and no process is left.
void check_everyone_stopped(const Launch& l, int np) {
  for (int r = 0; r < np; ++r) {
    CAPTURE(r);
    REQUIRE_MESSAGE(l.exits.count(r) == 1, l.output);
    CHECK_MESSAGE(l.exits.at(r) == 4, l.output);
  }
  CHECK_MESSAGE(l.exit_code != 124, "the launch hung and was killed after " << kLaunchTimeoutS << " s:\n" << l.output);
  CHECK(l.exit_code != 0);
  check_no_process_left(l, np);
}

}  // namespace

TEST_CASE("mpi [faults]: a rank that leaves while others wait (an op missing, an extra op, a program cut short) stops "
          "every rank with exit 4, naming it") {
  const std::string args = std::string("--backend mpi --no-verify --timeout 5 ") + kSmall;
  for (int P : {2, 4}) {
    CAPTURE(P);
    const std::string base = baseline("llama2-7b", "1f1b", P, 2 * P);
    using Ops = std::vector<std::string>;
    {
      // Rank 0's last B removed: rank 0 ends with a buffer still live; the others hear of it at once.
      const std::string file = edited_program(base, 0, [](Ops& ops) { ops.pop_back(); }, "missing-b.yaml");
      Launch l = mpirun(P, file, args);
      check_everyone_stopped(l, P);
      CHECK_MESSAGE(pstest::contains(l.output, "device 0 finished its program with buffers still live"), l.output);
      for (int r = 1; r < P; ++r)
        CHECK_MESSAGE(pstest::contains(l.output, "pipesmith: error: rank " + std::to_string(r) + "/" + std::to_string(P)),
                      l.output);
      CHECK_MESSAGE(pstest::contains(l.output, "rank 0/" + std::to_string(P) + " (pid " + std::to_string(l.pids[0])),
                    l.output);
      std::remove(file.c_str());
    }
    {
      // The last rank's program cut after microbatch 0: it finishes cleanly, the rank before it waits
      // to hand over microbatch 1; its watchdog names that wait and the finished rank stops too.
      const int last = P - 1;
      const std::string file = edited_program(
          base, last,
          [&](Ops& ops) {
            // Keep microbatch 0's ops only: the program ends cleanly, its later inputs never taken.
            ops.erase(std::remove_if(ops.begin(), ops.end(),
                                     [](const std::string& op) { return op.back() != '0' || std::isdigit(op[op.size() - 2]); }),
                      ops.end());
            REQUIRE(ops.size() == 4);
          },
          "cut-short.yaml");
      Launch l = mpirun(P, file, args);
      check_everyone_stopped(l, P);
      CHECK_MESSAGE(pstest::contains(l.output, "device " + std::to_string(last - 1) + " is blocked at op"), l.output);
      CHECK_MESSAGE(pstest::contains(l.output, std::to_string(last - 1) + "SEND_F1'"), l.output);
      CHECK(pstest::contains(l.output, "watchdog: no progress for 5 s"));
      std::remove(file.c_str());
    }
    {
      // An extra op on rank 0: a second send of microbatch 0's activation, which no rank receives.
      const std::string file = edited_program(
          base, 0, [](Ops& ops) { ops.push_back("0SEND_F0"); }, "extra-send.yaml");
      Launch l = mpirun(P, file, args);
      check_everyone_stopped(l, P);
      CHECK_MESSAGE(pstest::contains(l.output, "0SEND_F0"), l.output);
      std::remove(file.c_str());
    }
    std::remove(base.c_str());
  }
}

TEST_CASE("mpi [replay]: recomputation (full and selective) drops and recomputes for real, gradients exact") {
  for (const char* mode : {"full", "selective"}) {
    CAPTURE(mode);
    const std::string file = write_schedule("baseline " + model_path("llama2-7b") +
                                                " --schedule zb-h1 --devices 2 --microbatches 4 --recompute " + mode,
                                            std::string("llama2-7b-zb-h1-recompute-") + mode + ".yaml");
    CHECK(pstest::contains(pstest::read_file(file), "0R0"));
    check_replay(file, "llama2-7b", 2);
    std::remove(file.c_str());
  }
}
