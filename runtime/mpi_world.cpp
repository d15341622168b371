// mpi_world.cpp — see mpi_world.h. The launch environment and the result packing are always built;
// the MPI parts only with PIPESMITH_HAVE_MPI.
#include "runtime/mpi_world.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <tuple>

#include "runtime/executor.h"

#if defined(PIPESMITH_HAVE_MPI)
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>
#endif

namespace ps::rt {

namespace {

int env_nonneg(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return end && *end == '\0' && x >= 0 && x < 1 << 20 ? static_cast<int>(x) : -1;
}

// ---- ExecResult packing (what a rank sends to rank 0 after its iteration) ----

class Packer {
 public:
  template <class T>
  void put(const T& v) {
    const char* p = reinterpret_cast<const char*>(&v);
    out_.append(p, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_ += s;
  }
  template <class T>
  void put_vector(const std::vector<T>& v) {
    put<uint64_t>(v.size());
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Unpacker {
 public:
  explicit Unpacker(const std::string& in) : in_(in) {}
  template <class T>
  bool get(T& v) {
    if (pos_ + sizeof(T) > in_.size()) return false;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool get_string(std::string& s) {
    uint64_t n = 0;
    if (!get(n) || pos_ + n > in_.size()) return false;
    s.assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <class T>
  bool get_vector(std::vector<T>& v) {
    uint64_t n = 0;
    if (!get(n) || n > (in_.size() - pos_) / sizeof(T)) return false;
    v.resize(n);
    std::memcpy(v.data(), in_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return true;
  }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

std::string pack_result(const ExecResult& r) {
  Packer p;
  p.put<double>(r.iteration_ms);
  p.put<uint64_t>(r.devices.size());
  for (const DeviceRun& d : r.devices) {
    p.put<int32_t>(d.device);
    p.put_string(d.where);
    p.put_vector(d.times);
    std::vector<uint64_t> held(d.held_bytes.begin(), d.held_bytes.end());
    p.put_vector(held);
    p.put<uint64_t>(d.peak_held_bytes);
    p.put<int32_t>(d.peak_op_index);
    p.put<uint64_t>(d.peak_alloc_bytes);
    p.put<double>(d.end_ms);
    p.put<double>(d.busy_ms);
  }
  p.put<uint64_t>(r.gradients.size());
  for (const auto& [stage, params] : r.gradients) {
    p.put<int32_t>(stage);
    p.put<uint64_t>(params.size());
    for (const auto& g : params) p.put_vector(g);
  }
  p.put<uint64_t>(r.losses.size());
  for (const auto& [mb, loss] : r.losses) {
    p.put<int32_t>(mb);
    p.put<double>(loss);
  }
  return p.take();
}

// Adds one rank's packed result to `into`.
bool unpack_result_into(const std::string& blob, ExecResult& into) {
  Unpacker u(blob);
  double iteration_ms = 0;
  uint64_t n = 0;
  if (!u.get(iteration_ms) || !u.get(n)) return false;
  into.iteration_ms = std::max(into.iteration_ms, iteration_ms);
  for (uint64_t i = 0; i < n; ++i) {
    DeviceRun d;
    int32_t device = 0, peak_op = 0;
    uint64_t peak_held = 0, peak_alloc = 0;
    std::vector<uint64_t> held;
    if (!u.get(device) || !u.get_string(d.where) || !u.get_vector(d.times) || !u.get_vector(held) ||
        !u.get(peak_held) || !u.get(peak_op) || !u.get(peak_alloc) || !u.get(d.end_ms) || !u.get(d.busy_ms))
      return false;
    d.device = device;
    d.held_bytes.assign(held.begin(), held.end());
    d.peak_held_bytes = peak_held;
    d.peak_op_index = peak_op;
    d.peak_alloc_bytes = peak_alloc;
    into.devices.push_back(std::move(d));
  }
  if (!u.get(n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    int32_t stage = 0;
    uint64_t params = 0;
    if (!u.get(stage) || !u.get(params) || params > 1u << 20) return false;
    auto& dst = into.gradients[stage];
    dst.resize(params);
    for (auto& g : dst)
      if (!u.get_vector(g)) return false;
  }
  if (!u.get(n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    int32_t mb = 0;
    double loss = 0;
    if (!u.get(mb) || !u.get(loss)) return false;
    into.losses[mb] = loss;
  }
  return u.at_end();
}

}  // namespace

LaunchEnv launch_env() {
  static constexpr std::tuple<const char*, const char*, const char*, const char*> kLaunchers[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK/WORLD_SIZE/LOCAL_RANK"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_*"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_RANK/PMI_SIZE"}};
  LaunchEnv e;
  for (const auto& [r, w, l, source] : kLaunchers) {
    if (env_nonneg(r) >= 0 && env_nonneg(w) > 0) {
      e.rank = env_nonneg(r);
      e.world = env_nonneg(w);
      e.local_rank = env_nonneg(l);
      e.source = source;
      return e;
    }
  }
  return e;
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (const char* x = std::getenv(v); x && *x) return true;
  return false;
}

Status agree_on_inputs(MpiWorld& world, const std::vector<std::pair<std::string, std::string>>& digests,
                       double timeout_s) {
  std::string mine;
  for (const auto& [name, digest] : digests) mine += name + "=" + digest + "\n";
  auto all = world.allgather(mine, timeout_s, "the input check");
  if (!all) return all.status();
  std::string diffs;
  for (int r = 1; r < world.size(); ++r) {
    if ((*all)[r] == (*all)[0]) continue;
    // Name each differing input (the lists have the same names in the same order on every rank).
    auto lines = [](const std::string& s) {
      std::vector<std::string> out;
      size_t at = 0;
      for (size_t nl; (nl = s.find('\n', at)) != std::string::npos; at = nl + 1) out.push_back(s.substr(at, nl - at));
      return out;
    };
    const auto mine0 = lines((*all)[0]), theirs = lines((*all)[r]);
    for (size_t i = 0; i < std::max(mine0.size(), theirs.size()); ++i) {
      const std::string a = i < mine0.size() ? mine0[i] : "(none)", b = i < theirs.size() ? theirs[i] : "(none)";
      if (a == b) continue;
      const size_t eq = b.find('=');
      diffs += fmt::format("\n  rank {}'s {} is {}; rank 0's is {}", r, eq == std::string::npos ? b : b.substr(0, eq),
                           eq == std::string::npos ? b : b.substr(eq + 1),
                           a.find('=') == std::string::npos ? a : a.substr(a.find('=') + 1));
    }
  }
  if (diffs.empty()) return Status::ok();
  return Status::bad_input(fmt::format(
      "the {} processes were given different inputs; refused before any transfer (every rank must run the same "
      "schedule, model and options):{}",
      world.size(), diffs));
}

Status gather_exec_results(MpiWorld& world, ExecResult& result, double timeout_s) {
  auto all = world.gather(pack_result(result), timeout_s, "gathering the results on rank 0");
  if (!all) return all.status();
  // A rank's part of a gather completes once its data is sent, whatever rank 0 does next: every rank
  // waits for rank 0's word on the whole, so a rank 0 that fails or dies now stops all of them.
  const std::string kOk = "ok";
  if (world.rank() != 0) {
    auto word = world.broadcast("", timeout_s, "waiting for rank 0 to accept the results");
    if (!word) return word.status();
    if (*word != kOk)
      return Status::error(ErrorCode::kRuntime, fmt::format("{} refused the results: {}", world.label(0), *word));
    return Status::ok();
  }
  ExecResult merged;
  merged.status = result.status;
  for (int r = 0; r < world.size(); ++r)
    if (!unpack_result_into((*all)[r], merged)) {
      Status bad = Status::error(ErrorCode::kRuntime, fmt::format("the result of {} is malformed", world.label(r)));
      (void)world.broadcast(bad.message(), timeout_s, "sending the verdict on the results");
      return bad;
    }
  PS_RETURN_IF_ERROR(world.broadcast(kOk, timeout_s, "sending the verdict on the results").status());
  std::sort(merged.devices.begin(), merged.devices.end(),
            [](const DeviceRun& a, const DeviceRun& b) { return a.device < b.device; });
  merged.stopped_at.assign(result.stopped_at.size(), -1);
  result = std::move(merged);
  return Status::ok();
}

#if defined(PIPESMITH_HAVE_MPI)

namespace {

using WorldClock = std::chrono::steady_clock;
constexpr int kStopTag = 1;      // control communicator: a stop notice (one line of text)
constexpr int kHostChars = 64;

std::atomic<int> g_watchers{0};
// Set once this rank has seen a failure or sent a stop notice: it is on its way to exit 4 with a
// message naming the cause, and the launcher's SIGTERM (which follows a peer's death) must not cut
// that short with a bare 143.
std::atomic<bool> g_failing{false};
volatile sig_atomic_t g_sigterm = 0;

void mpi_world_on_sigterm(int) {
  if (g_watchers.load() > 0 || g_failing.load()) {
    g_sigterm = 1;
    return;
  }
  _exit(128 + SIGTERM);
}

// A process that is gone: no /proc entry, or a zombie / dead state.
bool process_gone(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return true;
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  const char state = stat[close + 2];
  return state == 'Z' || state == 'X' || state == 'x';
}

std::string this_host() {
  char buf[kHostChars] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}

}  // namespace

struct MpiWorld::Impl {
  MPI_Comm ctl = MPI_COMM_NULL;
  std::vector<int> pids;
  std::vector<std::string> hosts;
  std::mutex mu;                  // guards failure and stop sends
  Status failure;                 // sticky health failure
  std::atomic<bool> stopped{false};
  std::vector<std::string> notices;  // keeps the stop notice's buffer alive until exit
};

bool mpi_built() { return true; }

MpiWorld::Watch::Watch() { g_watchers.fetch_add(1); }
MpiWorld::Watch::~Watch() { g_watchers.fetch_sub(1); }

MpiWorld::~MpiWorld() = default;

Result<MpiWorld*> MpiWorld::get() {
  static std::mutex once_mu;
  static MpiWorld* world = nullptr;
  static Status init_error;
  std::lock_guard<std::mutex> lock(once_mu);
  if (world != nullptr) return world;
  if (!init_error.is_ok()) return init_error;
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized && MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    init_error = Status::error(ErrorCode::kRuntime, "MPI_Init_thread failed");
    return init_error;
  }
  if (initialized) MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    init_error = Status::error(ErrorCode::kRuntime,
                               "the MPI library does not provide MPI_THREAD_MULTIPLE (the watchdog thread probes for "
                               "stop notices while a worker transfers); use an MPI built with thread support");
    return init_error;
  }
  auto* w = new MpiWorld();  // lives until process exit (MPI_Finalize runs from atexit)
  w->impl_ = std::make_unique<Impl>();
  MPI_Comm_rank(MPI_COMM_WORLD, &w->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &w->size_);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &w->impl_->ctl);
  // Every rank's pid and host, for the liveness check and the messages.
  struct Id {
    int pid;
    char host[kHostChars];
  } me{}, *all = new Id[w->size_];
  me.pid = static_cast<int>(getpid());
  std::snprintf(me.host, sizeof(me.host), "%s", this_host().c_str());
  MPI_Allgather(&me, sizeof(Id), MPI_BYTE, all, sizeof(Id), MPI_BYTE, w->impl_->ctl);
  for (int r = 0; r < w->size_; ++r) {
    w->impl_->pids.push_back(all[r].pid);
    w->impl_->hosts.emplace_back(all[r].host);
  }
  delete[] all;
  struct sigaction sa{};
  sa.sa_handler = mpi_world_on_sigterm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  std::atexit([] {
    if (world != nullptr && !world->stopped()) MPI_Finalize();
  });
  world = w;
  return world;
}

std::string MpiWorld::label(int r) const {
  if (r < 0 || r >= size_) return fmt::format("rank {}", r);
  return fmt::format("rank {}/{} (pid {}, host {})", r, size_, impl_->pids[r], impl_->hosts[r]);
}

bool MpiWorld::stopped() const { return impl_->stopped.load(); }

Status MpiWorld::health() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->failure.is_ok()) return impl_->failure;
  }
  // Peers on this host that are gone come first (they are the cause), then a peer's stop notice.
  std::string why;
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && impl_->hosts[r] == impl_->hosts[rank_] && process_gone(impl_->pids[r]))
      why += (why.empty() ? "" : ", ") + label(r);
  if (!why.empty()) why += " is gone (the process died or exited without finishing the run)";
  int flag = 0;
  MPI_Status st;
  if (why.empty() && MPI_Iprobe(MPI_ANY_SOURCE, kStopTag, impl_->ctl, &flag, &st) == MPI_SUCCESS && flag) {
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    std::string text(static_cast<size_t>(std::max(n, 0)), '\0');
    MPI_Recv(text.data(), n, MPI_CHAR, st.MPI_SOURCE, kStopTag, impl_->ctl, MPI_STATUS_IGNORE);
    why = fmt::format("{} stopped: {}", label(st.MPI_SOURCE), text);
  }
  if (why.empty() && g_sigterm)
    why = "the launcher sent SIGTERM (another rank failed or the job was cancelled)";
  if (why.empty()) return Status::ok();
  g_failing.store(true);
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->failure.is_ok()) impl_->failure = Status::error(ErrorCode::kRuntime, why);
  return impl_->failure;
}

void MpiWorld::stop(const std::string& reason) {
  g_failing.store(true);
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->stopped.exchange(true)) return;
  std::vector<MPI_Request> reqs;
  impl_->notices.assign(1, fmt::format("{}", reason.substr(0, reason.find('\n'))));
  const std::string& text = impl_->notices.front();
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || (impl_->hosts[r] == impl_->hosts[rank_] && process_gone(impl_->pids[r]))) continue;
    MPI_Request q = MPI_REQUEST_NULL;
    if (MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, r, kStopTag, impl_->ctl, &q) == MPI_SUCCESS)
      reqs.push_back(q);
  }
  // Small notices go out eagerly; give them a moment, never more.
  const auto deadline = WorldClock::now() + std::chrono::milliseconds(200);
  while (!reqs.empty() && WorldClock::now() < deadline) {
    int all = 0;
    MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &all, MPI_STATUSES_IGNORE);
    if (all) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

namespace {

// Polls `req` until it completes; on timeout, a health failure or a stop, stops the world and fails.
Status poll_request(MpiWorld& w, MPI_Request& req, double timeout_s, const std::string& what) {
  MpiWorld::Watch watch;
  const auto deadline = WorldClock::now() + std::chrono::duration<double>(timeout_s);
  auto next_health = WorldClock::now();
  for (int spins = 0;; ++spins) {
    int done = 0;
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      Status st = Status::error(ErrorCode::kRuntime, fmt::format("{}: {} failed in MPI", w.label(), what));
      w.stop(st.message());
      return st;
    }
    if (done) return Status::ok();
    const auto now = WorldClock::now();
    if (now >= next_health) {
      Status h = w.health();
      if (!h.is_ok()) {
        w.stop(fmt::format("{} failed during {}", w.label(), what));
        return Status::error(ErrorCode::kRuntime, fmt::format("{} during {}", h.message(), what));
      }
      next_health = now + std::chrono::milliseconds(20);
    }
    if (now > deadline) {
      Status st = Status::error(ErrorCode::kRuntime,
                                fmt::format("{}: {} did not complete within {:g} s (a rank did not reach it)",
                                            w.label(), what, timeout_s));
      w.stop(st.message());
      return st;
    }
    if (spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

Status MpiWorld::barrier(double timeout_s, const std::string& what) {
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Ibarrier(impl_->ctl, &req);
  return poll_request(*this, req, timeout_s, what);
}

Result<std::vector<std::string>> MpiWorld::allgather(const std::string& mine, double timeout_s,
                                                     const std::string& what) {
  long long n = static_cast<long long>(mine.size());
  std::vector<long long> sizes(size_);
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Iallgather(&n, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, impl_->ctl, &req);
  PS_RETURN_IF_ERROR(poll_request(*this, req, timeout_s, what));
  std::vector<int> counts(size_), displs(size_);
  long long total = 0;
  for (int r = 0; r < size_; ++r) {
    if (sizes[r] < 0 || total + sizes[r] > (1LL << 30))
      return Status::error(ErrorCode::kRuntime, fmt::format("{}: {} is too large", label(r), what));
    counts[r] = static_cast<int>(sizes[r]);
    displs[r] = static_cast<int>(total);
    total += sizes[r];
  }
  std::string buf(static_cast<size_t>(total), '\0');
  MPI_Iallgatherv(mine.data(), static_cast<int>(n), MPI_CHAR, buf.data(), counts.data(), displs.data(), MPI_CHAR,
                  impl_->ctl, &req);
  PS_RETURN_IF_ERROR(poll_request(*this, req, timeout_s, what));
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) out.push_back(buf.substr(displs[r], counts[r]));
  return out;
}

Result<std::vector<std::string>> MpiWorld::gather(const std::string& mine, double timeout_s, const std::string& what) {
  long long n = static_cast<long long>(mine.size());
  std::vector<long long> sizes(size_);
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Igather(&n, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, impl_->ctl, &req);
  PS_RETURN_IF_ERROR(poll_request(*this, req, timeout_s, what));
  std::vector<int> counts(size_), displs(size_);
  long long total = 0;
  if (rank_ == 0)
    for (int r = 0; r < size_; ++r) {
      if (sizes[r] < 0 || total + sizes[r] > (1LL << 31) - 1)
        return Status::error(ErrorCode::kRuntime, fmt::format("{}: {} is too large", label(r), what));
      counts[r] = static_cast<int>(sizes[r]);
      displs[r] = static_cast<int>(total);
      total += sizes[r];
    }
  std::string buf(static_cast<size_t>(total), '\0');
  MPI_Igatherv(mine.data(), static_cast<int>(n), MPI_CHAR, buf.data(), counts.data(), displs.data(), MPI_CHAR, 0,
               impl_->ctl, &req);
  PS_RETURN_IF_ERROR(poll_request(*this, req, timeout_s, what));
  std::vector<std::string> out;
  if (rank_ == 0)
    for (int r = 0; r < size_; ++r) out.push_back(buf.substr(displs[r], counts[r]));
  return out;
}

Result<std::string> MpiWorld::broadcast(const std::string& root_value, double timeout_s, const std::string& what) {
  long long n = rank_ == 0 ? static_cast<long long>(root_value.size()) : 0;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Ibcast(&n, 1, MPI_LONG_LONG, 0, impl_->ctl, &req);
  PS_RETURN_IF_ERROR(poll_request(*this, req, timeout_s, what));
  if (n < 0 || n > (1LL << 30)) return Status::error(ErrorCode::kRuntime, fmt::format("{}: bad size", what));
  std::string buf = rank_ == 0 ? root_value : std::string(static_cast<size_t>(n), '\0');
  MPI_Ibcast(buf.data(), static_cast<int>(n), MPI_CHAR, 0, impl_->ctl, &req);
  PS_RETURN_IF_ERROR(poll_request(*this, req, timeout_s, what));
  return buf;
}

#else  // !PIPESMITH_HAVE_MPI

struct MpiWorld::Impl {};

bool mpi_built() { return false; }

MpiWorld::Watch::Watch() = default;
MpiWorld::Watch::~Watch() = default;
MpiWorld::~MpiWorld() = default;

Result<MpiWorld*> MpiWorld::get() {
  return Status::error(ErrorCode::kRuntime,
                       "built without MPI (MPI was not found, or PIPESMITH_MPI was OFF, when pipesmith was "
                       "configured; install "
                       "libopenmpi-dev and rebuild)");
}

std::string MpiWorld::label(int r) const { return fmt::format("rank {}", r); }
Status MpiWorld::barrier(double, const std::string&) { return Status::ok(); }
Result<std::vector<std::string>> MpiWorld::allgather(const std::string& mine, double, const std::string&) {
  return std::vector<std::string>{mine};
}
Result<std::vector<std::string>> MpiWorld::gather(const std::string& mine, double, const std::string&) {
  return std::vector<std::string>{mine};
}
Result<std::string> MpiWorld::broadcast(const std::string& v, double, const std::string&) { return v; }
Status MpiWorld::health() { return Status::ok(); }
void MpiWorld::stop(const std::string&) {}
bool MpiWorld::stopped() const { return false; }

#endif

}  // namespace ps::rt
