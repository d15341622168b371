#include "runtime/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/stage_compute.h"

namespace ps::rt {

namespace {

using Key = std::pair<int, int>;  // (stage, microbatch)
using Clock = std::chrono::steady_clock;

Status op_error(int device, int index, const Action& a, const std::string& msg) {
  return Status::error(ErrorCode::kRuntime,
                       fmt::format("device {} op {} '{}': {}", device, index, to_string(a), msg), a.loc);
}

// Wakes the watchdog loop as soon as a worker finishes or fails.
struct DoneSignal {
  std::mutex mu;
  std::condition_variable cv;
};

// One device's replay state.
struct Worker {
  Worker(int d, const std::vector<Action>& prog, DeviceContext& c, const ExecModel& m)
      : device(d), program(prog), ctx(c), sc(m, c.ops()) {}
  int device;
  const std::vector<Action>& program;
  DeviceContext& ctx;
  StageCompute sc;
  std::map<Key, Tensor> pending_f;  // F(s,m) output waiting for SEND_F or a local F(s+1,m)
  std::map<Key, Tensor> pending_b;  // I(s,m) input-gradient waiting for SEND_B or a local I(s-1,m)
  std::map<Key, Tensor> inbox_f;    // RECV_F(s,m) data waiting for F(s,m)
  std::map<Key, Tensor> inbox_b;    // RECV_B(s,m) data waiting for I/B(s,m)
  std::atomic<int> returned{0};     // ops whose call has returned
  std::atomic<int> current{0};      // op being waited for (inside a comm group: the group's item)
  std::atomic<bool> started{false}; // parameters are set up and the program has begun
  std::atomic<bool> done{false};
  std::atomic<long> failed_seq{-1}; // order in which workers failed (first failure wins)
  Status status;
  DeviceRun run;
  DoneSignal* signal = nullptr;
};

void set_done(Worker& w) {
  {
    std::lock_guard<std::mutex> lock(w.signal->mu);
    w.done.store(true);
  }
  w.signal->cv.notify_all();
}

Result<Tensor> take(std::map<Key, Tensor>& m, Key k) {
  auto it = m.find(k);
  if (it == m.end()) return Status::error(ErrorCode::kRuntime, "missing");
  Tensor t = std::move(it->second);
  m.erase(it);
  return t;
}

// Checks a comm op against the placement and fills its peer, the op it pairs with, and (SEND) the
// tensor taken from the producer's output / (RECV) the element count.
Status prepare_comm(Worker& w, const Problem& p, const ExecModel& model, int index, const Action& a, CommItem& item) {
  const int d = w.device;
  const int S = p.num_stages();
  const int s = a.stage.value(), m = a.mb.value();
  auto err = [&](const std::string& msg) { return op_error(d, index, a, msg); };
  if (s < 0 || s >= S) return err(fmt::format("stage {} does not exist (0..{})", s, S - 1));
  if (m < 0 || m >= p.microbatches) return err(fmt::format("microbatch {} does not exist (0..{})", m, p.microbatches - 1));
  if (p.device_of(StageId{s}) != d)
    return err(fmt::format("stage {} is placed on device {}, not on device {}", s, p.device_of(StageId{s}), d));
  item.index = index;
  item.op = a;
  switch (a.type) {
    case OpType::SEND_F: {
      if (s + 1 >= S || p.device_of(StageId{s + 1}) == d)
        return err("nothing to send: the next stage does not exist or is on this device");
      auto t = take(w.pending_f, {s, m});
      if (!t.ok()) return err(fmt::format("F({},{}) has not produced the tensor yet", s, m));
      item.peer = p.device_of(StageId{s + 1});
      item.expected = partner_action(a);
      item.send = std::move(*t);
      return Status::ok();
    }
    case OpType::SEND_B: {
      if (s == 0 || p.device_of(StageId{s - 1}) == d)
        return err("nothing to send: the previous stage does not exist or is on this device");
      auto t = take(w.pending_b, {s, m});
      if (!t.ok()) return err(fmt::format("the backward of stage {} mb {} has not produced the gradient yet", s, m));
      item.peer = p.device_of(StageId{s - 1});
      item.expected = partner_action(a);
      item.send = std::move(*t);
      return Status::ok();
    }
    case OpType::RECV_F:
      if (s == 0 || p.device_of(StageId{s - 1}) == d)
        return err("nothing to receive: the previous stage does not exist or is on this device");
      if (w.inbox_f.count({s, m})) return err("received twice");
      item.peer = p.device_of(StageId{s - 1});
      item.expected = partner_action(a);
      item.count = model.boundary_count(s - 1);
      return Status::ok();
    case OpType::RECV_B:
      if (s + 1 >= S || p.device_of(StageId{s + 1}) == d)
        return err("nothing to receive: the next stage does not exist or is on this device");
      if (w.inbox_b.count({s, m})) return err("received twice");
      item.peer = p.device_of(StageId{s + 1});
      item.expected = partner_action(a);
      item.count = model.boundary_count(s);
      return Status::ok();
    default:
      return err("not a comm op");
  }
}

Status run_op(Worker& w, const Problem& p, const ExecModel& model, int index, const Action& a) {
  const int d = w.device;
  const int S = p.num_stages();
  const int s = a.stage.value(), m = a.mb.value();
  if (s < 0 || s >= S) return op_error(d, index, a, fmt::format("stage {} does not exist (0..{})", s, S - 1));
  if (m < 0 || m >= p.microbatches)
    return op_error(d, index, a, fmt::format("microbatch {} does not exist (0..{})", m, p.microbatches - 1));
  if (p.device_of(StageId{s}) != d)
    return op_error(d, index, a, fmt::format("stage {} is placed on device {}, not on device {}", s, p.device_of(StageId{s}), d));
  auto err = [&](const std::string& msg) { return op_error(d, index, a, msg); };
  switch (a.type) {
    case OpType::F: {
      Tensor in;
      if (s > 0) {
        const bool local = p.device_of(StageId{s - 1}) == d;
        auto t = local ? take(w.pending_f, {s - 1, m}) : take(w.inbox_f, {s, m});
        if (!t.ok())
          return err(local ? fmt::format("its input comes from F({},{}) on this device, which has not run", s - 1, m)
                           : fmt::format("its input was not received: no {}RECV_F{} before it", s, m));
        in = std::move(*t);
      }
      auto out = w.sc.forward(s, m, std::move(in), p.stages[s].recomputes());
      if (!out.ok()) return err(out.status().message());
      if (s + 1 < S) w.pending_f[{s, m}] = std::move(*out);
      return Status::ok();
    }
    case OpType::I:
    case OpType::B: {
      Tensor dy;
      if (s + 1 < S) {
        const bool local = p.device_of(StageId{s + 1}) == d;
        auto t = local ? take(w.pending_b, {s + 1, m}) : take(w.inbox_b, {s, m});
        if (!t.ok())
          return err(local ? fmt::format("its output gradient comes from the backward of stage {} mb {} on this "
                                         "device, which has not run", s + 1, m)
                           : fmt::format("its output gradient was not received: no {}RECV_B{} before it", s, m));
        dy = std::move(*t);
      }
      auto dx = w.sc.backward_input(s, m, std::move(dy));
      if (!dx.ok()) return err(dx.status().message());
      if (s > 0) w.pending_b[{s, m}] = std::move(*dx);
      if (a.type == OpType::B) {
        Status st = w.sc.backward_weight(s, m);
        if (!st.is_ok()) return err(st.message());
      }
      return Status::ok();
    }
    case OpType::W: {
      Status st = w.sc.backward_weight(s, m);
      return st.is_ok() ? st : err(st.message());
    }
    case OpType::R: {
      if (!p.stages[s].recomputes())
        return err(fmt::format("stage {} does not recompute (its recompute mode is none)", s));
      Status st = w.sc.recompute(s, m);
      return st.is_ok() ? st : err(st.message());
    }
    case OpType::REDUCE_GRAD:
    case OpType::UNSHARD:
    case OpType::RESHARD:
      // The runtime replays one pipeline replica: its data-parallel group has no other member (nothing
      // to reduce, gather or free), and the stage's gradients are final once its last backward has run.
      return Status::ok();
    case OpType::SEND_F:
    case OpType::SEND_B:
    case OpType::RECV_F:
    case OpType::RECV_B: {
      CommItem item;
      PS_RETURN_IF_ERROR(prepare_comm(w, p, model, index, a, item));
      if (is_send(a.type)) {
        Status st = w.ctx.send(a, item.peer, item.send, item.expected);
        return st.is_ok() || is_aborted(st) ? st : err(st.message());
      }
      auto t = w.ctx.recv(a, item.peer, item.expected, item.count);
      if (!t.ok()) return is_aborted(t.status()) ? t.status() : err(t.status().message());
      (a.type == OpType::RECV_F ? w.inbox_f : w.inbox_b)[{s, m}] = std::move(*t);
      return Status::ok();
    }
  }
  return err("unknown op type");
}

std::string keys_text(const char* what, const std::map<Key, Tensor>& m) {
  std::string out;
  for (const auto& [k, t] : m) out += fmt::format("{}{}({},{})", out.empty() ? "" : ", ", what, k.first, k.second);
  return out;
}

// Grouped semantics: the comm ops [first, last) run as one group.
Status run_group(Worker& w, const Problem& p, const ExecModel& model, int first, int last) {
  std::vector<CommItem> items(last - first);
  Status st;
  for (int k = first; k < last && st.is_ok(); ++k) st = prepare_comm(w, p, model, k, w.program[k], items[k - first]);
  for (int k = first; k < last; ++k) w.ctx.begin_op(k, w.program[k]);
  if (st.is_ok()) st = w.ctx.run_group(items, w.current);
  for (int k = first; k < last; ++k) w.ctx.end_op(k, w.program[k]);
  if (!st.is_ok()) {
    if (is_aborted(st)) return st;
    const int at = std::clamp(w.current.load(), first, last - 1);
    return st.message().rfind("device ", 0) == 0 ? st : op_error(w.device, at, w.program[at], st.message());
  }
  for (CommItem& it : items)
    if (is_recv(it.op.type))
      (it.op.type == OpType::RECV_F ? w.inbox_f : w.inbox_b)[{it.op.stage.value(), it.op.mb.value()}] = std::move(it.received);
  return Status::ok();
}

void worker_main(Worker& w, const Problem& p, const ExecModel& model, bool grouped, std::atomic<long>& fail_counter) {
  auto fail = [&](Status st) {
    w.status = std::move(st);
    w.failed_seq.store(fail_counter.fetch_add(1));
  };
  try {
    for (int s = 0; s < p.num_stages(); ++s)
      if (p.device_of(StageId{s}) == w.device) {
        Status st = w.sc.add_stage(s);
        if (!st.is_ok()) {
          fail(st);
          set_done(w);
          return;
        }
      }
    const int n = static_cast<int>(w.program.size());
    w.run.held_bytes.assign(n, 0);
    w.started.store(true);
    for (int i = 0; i < n;) {
      const Action& a = w.program[i];
      int next = i + 1;
      w.current.store(i);
      Status st;
      if (grouped && is_comm(a.type)) {
        while (next < n && is_comm(w.program[next].type)) ++next;
        st = run_group(w, p, model, i, next);
      } else {
        w.ctx.begin_op(i, a);
        st = run_op(w, p, model, i, a);
        w.ctx.end_op(i, a);
      }
      if (st.is_ok()) st = w.ctx.ops().status();
      if (!st.is_ok()) {
        fail(st);
        set_done(w);
        return;
      }
      const size_t held = w.sc.held_bytes();
      for (int k = i; k < next; ++k) {
        w.run.held_bytes[k] = held;
        if (held > w.run.peak_held_bytes || w.run.peak_op_index < 0) {
          w.run.peak_held_bytes = held;
          w.run.peak_op_index = k;
        }
      }
      w.returned.store(next);
      i = next;
    }
    Status st = w.ctx.finish();
    if (!st.is_ok()) {
      fail(st);
      set_done(w);
      return;
    }
    std::vector<std::string> left;
    for (const std::string& s : w.sc.live_slots()) left.push_back(s);
    for (auto* m : {&w.pending_f, &w.inbox_f}) {
      std::string t = keys_text(m == &w.pending_f ? "unsent output of F" : "unused RECV_F", *m);
      if (!t.empty()) left.push_back(t);
    }
    for (auto* m : {&w.pending_b, &w.inbox_b}) {
      std::string t = keys_text(m == &w.pending_b ? "unsent input-gradient of stage" : "unused RECV_B", *m);
      if (!t.empty()) left.push_back(t);
    }
    if (!left.empty()) {
      std::string list;
      for (const auto& l : left) list += (list.empty() ? "" : "; ") + l;
      fail(Status::error(ErrorCode::kRuntime,
                         fmt::format("device {} finished its program with buffers still live (an op is missing): {}",
                                     w.device, list)));
    }
  } catch (const std::exception& e) {
    fail(Status::error(ErrorCode::kRuntime, fmt::format("device {}: {}", w.device, e.what())));
  }
  set_done(w);
}

// Refuses a model, backend or head that does not fit the schedule.
Status check_inputs(const Schedule& schedule, const ExecModel& model, Backend& backend) {
  const Problem& p = schedule.problem;
  if (model.num_stages() != p.num_stages())
    return Status::error(ErrorCode::kRuntime,
                         fmt::format("model has {} stages, schedule {}", model.num_stages(), p.num_stages()));
  if (backend.num_devices() != schedule.num_devices())
    return Status::error(ErrorCode::kRuntime, fmt::format("backend runs {} devices, the schedule has {}",
                                                          backend.num_devices(), schedule.num_devices()));
  if (model.head_shards() > 1)
    for (int d : backend.local_devices())
      if (!backend.device(d).ops().supports_sharded_head())
        return Status::error(ErrorCode::kRuntime,
                             fmt::format("vocabulary-sharded heads ({}) are not implemented on the {} backend",
                                         model.describe_sharded_head(), backend.name()));
  return Status::ok();
}

// One replay of the local devices' programs: a thread per device, watched until every one is done.
class Replay {
 public:
  Replay(const Schedule& schedule, const ExecModel& model, Backend& backend, const ExecOptions& options)
      : schedule_(schedule), model_(model), backend_(backend), options_(options) {}

  // Starts a worker thread per local device.
  void start() {
    for (int d : backend_.local_devices()) {
      workers_.push_back(std::make_unique<Worker>(d, schedule_.programs.at(d), backend_.device(d), model_));
      workers_.back()->run.device = d;
      workers_.back()->run.where = backend_.device(d).describe();
    }
    for (auto& w : workers_) w->signal = &signal_;
    for (auto& w : workers_)
      threads_.emplace_back(worker_main, std::ref(*w), std::cref(schedule_.problem), std::cref(model_),
                            options_.grouped, std::ref(fail_counter_));
  }

  // The watchdog: stops every device at the first failure, or when a started device makes no progress
  // for the timeout, or when the backend reports another process gone; returns once all are done.
  void watch(ExecResult& res) {
    const auto timeout = std::chrono::duration<double>(std::max(0.001, options_.timeout_s));
    const auto poll = std::chrono::duration<double>(std::clamp(options_.timeout_s / 20.0, 0.001, 0.05));
    last_.assign(workers_.size(), -1);
    changed_.assign(workers_.size(), Clock::now());
    for (auto& w : workers_) total_ops_ += static_cast<long>(w->program.size());
    const auto report_every = std::chrono::duration<double>(std::max(0.001, options_.progress_interval_s));
    auto next_report = Clock::now() + report_every;
    const auto wake = options_.progress ? std::min<std::chrono::duration<double>>(poll, report_every) : poll;
    res.stopped_at.assign(schedule_.num_devices(), -2);
    while (!all_done()) {
      if (!aborted_) stop_on_failure();
      if (!aborted_ && options_.progress && Clock::now() >= next_report) {
        report_progress();
        next_report = Clock::now() + report_every;
      }
      if (!aborted_ && (stalled(timeout) || !(health_ = backend_.health()).is_ok())) fire(res);
      wait(wake);
    }
    // A failure of the last worker to finish (an op missing at the end of its program) is announced
    // too: the other processes, which may wait for this one, stop now instead of at their timeouts.
    if (!aborted_) stop_on_failure();
    for (auto& t : threads_) t.join();
  }

  bool fired() const { return fired_; }
  const Status& health() const { return health_; }

  // The failure to report: the first that is not an abort caused by another's, else any.
  const Worker* first_failure() const {
    const Worker* first = nullptr;
    for (auto& w : workers_) {
      const long seq = w->failed_seq.load();
      if (seq >= 0 && !is_aborted(w->status) && (!first || seq < first->failed_seq.load())) first = w.get();
    }
    if (first == nullptr)
      for (auto& w : workers_)
        if (w->failed_seq.load() >= 0) first = w.get();
    return first;
  }

  // After a failure: where each local device stopped (-1: finished its program).
  void record_stops(ExecResult& res) const {
    for (auto& w : workers_)
      res.stopped_at[w->device] = w->done.load() && w->failed_seq.load() < 0 ? -1 : w->returned.load();
  }

  // After a complete run: each device's times, memory, gradients and (last stage) losses.
  Status collect(ExecResult& res) {
    for (auto& w : workers_) {
      res.stopped_at[w->device] = -1;
      DeviceRun run = std::move(w->run);
      run.times = w->ctx.op_times();
      run.times.resize(w->program.size());
      for (size_t i = 0; i < run.times.size(); ++i) {
        run.end_ms = std::max(run.end_ms, run.times[i].end_ms);
        if (is_compute(w->program[i].type)) run.busy_ms += run.times[i].end_ms - run.times[i].start_ms;
      }
      run.peak_alloc_bytes = w->ctx.ops().peak_bytes();
      res.iteration_ms = std::max(res.iteration_ms, run.end_ms);
      if (options_.collect_gradients) PS_RETURN_IF_ERROR(collect_gradients(*w, res));
      res.devices.push_back(std::move(run));
    }
    return Status::ok();
  }

 private:
  int progress(const Worker& w) const { return w.ctx.is_async() ? w.ctx.completed_ops() : w.returned.load(); }

  bool all_done() const {
    bool all = true;
    for (auto& w : workers_) all = all && w->done.load();
    return all;
  }

  // The first worker to fail stops the others (here and in the other processes).
  void stop_on_failure() {
    const Worker* first = nullptr;
    for (auto& w : workers_)
      if (w->failed_seq.load() >= 0 && (!first || w->failed_seq.load() < first->failed_seq.load())) first = w.get();
    if (first == nullptr) return;
    backend_.announce_stop(first->status.message());
    backend_.abort_all();
    aborted_ = true;
  }

  void report_progress() {
    long done = 0;
    for (auto& w : workers_) done += w->done.load() ? static_cast<long>(w->program.size()) : progress(*w);
    options_.progress(done, total_ops_);
  }

  // Whether a started, unfinished device has made no progress for the timeout.
  bool stalled(std::chrono::duration<double> timeout) {
    const auto now = Clock::now();
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (workers_[i]->done.load()) continue;
      if (!workers_[i]->started.load()) {  // still initialising its parameters: not a wait
        changed_[i] = now;
        continue;
      }
      const int pr = progress(*workers_[i]);
      if (pr != last_[i]) {
        last_[i] = pr;
        changed_[i] = now;
      } else if (now - changed_[i] > timeout) {
        return true;
      }
    }
    return false;
  }

  // Records where each device stopped and what the blocked ones wait for, and stops every device.
  void fire(ExecResult& res) {
    fired_ = true;
    for (auto& w : workers_) {
      const int n = static_cast<int>(w->program.size());
      const int at = w->ctx.is_async() ? progress(*w) : w->current.load();
      res.stopped_at[w->device] = w->done.load() ? -1 : std::clamp(at, 0, std::max(0, n - 1));
    }
    for (auto& w : workers_)
      if (!w->done.load() && !w->program.empty())
        res.blocked.push_back(waits_for(schedule_, DeviceId{w->device}, res.stopped_at[w->device]));
    std::string where;
    for (const BlockedOp& b : res.blocked)
      where += fmt::format("{}device {} blocked at op {} '{}'", where.empty() ? "" : ", ", b.device, b.op_index,
                           to_string(b.op));
    backend_.announce_stop(health_.is_ok() ? fmt::format("watchdog: no progress for {:g} s ({})", options_.timeout_s, where)
                                           : fmt::format("{} ({})", health_.message(), where));
    backend_.abort_all();
    aborted_ = true;
  }

  // Sleeps until the next poll, or earlier when all are done or one failed.
  void wait(std::chrono::duration<double> wake) {
    std::unique_lock<std::mutex> lock(signal_.mu);
    signal_.cv.wait_for(lock, wake, [&] {
      bool all = true, failed = false;
      for (auto& w : workers_) {
        all = all && w->done.load();
        failed = failed || w->failed_seq.load() >= 0;
      }
      return all || (failed && !aborted_);
    });
  }

  Status collect_gradients(Worker& w, ExecResult& res) {
    const Problem& p = schedule_.problem;
    for (int s = 0; s < p.num_stages(); ++s) {
      if (p.device_of(StageId{s}) != w.device) continue;
      auto g = w.sc.gradients(s);
      if (!g.ok()) return g.status();
      res.gradients[s] = std::move(*g);
    }
    if (p.device_of(StageId{p.num_stages() - 1}) == w.device) {
      for (int m = 0; m < p.microbatches; ++m) {
        auto l = w.sc.loss(m);
        if (!l.ok()) return l.status();
        res.losses[m] = *l;
      }
    }
    return Status::ok();
  }

  const Schedule& schedule_;
  const ExecModel& model_;
  Backend& backend_;
  const ExecOptions& options_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::atomic<long> fail_counter_{0};
  DoneSignal signal_;
  std::vector<int> last_;                   // each worker's progress at its last change
  std::vector<Clock::time_point> changed_;  // when it last changed
  long total_ops_ = 0;
  bool fired_ = false, aborted_ = false;
  Status health_;  // non-ok: another process is gone or stopped (multi-process backends)
};

}  // namespace

BlockedOp waits_for(const Schedule& schedule, DeviceId at, int index) {
  const Problem& p = schedule.problem;
  const int device = at.value();
  BlockedOp b;
  b.device = at;
  b.op_index = index;
  b.op = schedule.programs.at(device).at(index);
  const int s = b.op.stage.value(), m = b.op.mb.value(), S = p.num_stages();
  auto dev = [&](int st) { return st >= 0 && st < S ? p.device_of(StageId{st}) : -1; };
  auto set = [&](OpType t, int st, int d) {
    b.waits_for = Action{t, StageId{st}, MicrobatchId{m}, {}};
    if (d >= 0) b.waits_for_device = DeviceId{d};
  };
  auto backward_type = [&](int st) {  // B or I for stage st on its device
    const int d = dev(st);
    if (d < 0) return OpType::I;
    for (const Action& a : schedule.programs.at(d))
      if (a.type == OpType::B && a.stage.value() == st && a.mb.value() == m) return OpType::B;
    return OpType::I;
  };
  switch (b.op.type) {
    case OpType::SEND_F:
    case OpType::RECV_F:
    case OpType::SEND_B:
    case OpType::RECV_B: {
      const Action q = partner_action(b.op);
      set(q.type, q.stage.value(), dev(q.stage.value()));
      break;
    }
    case OpType::F:
      if (s > 0) {
        if (dev(s - 1) == device) set(OpType::F, s - 1, device);
        else set(OpType::RECV_F, s, device);
      }
      break;
    case OpType::I:
    case OpType::B:
      if (s + 1 < S) {
        if (dev(s + 1) == device) set(backward_type(s + 1), s + 1, device);
        else set(OpType::RECV_B, s, device);
      }
      break;
    case OpType::W: set(OpType::I, s, device); break;
    case OpType::R: set(OpType::F, s, device); break;
    case OpType::REDUCE_GRAD:
    case OpType::UNSHARD:
    case OpType::RESHARD: break;  // waits for nothing on another device
  }
  return b;
}

std::string format_blocked(const Schedule& schedule, const std::vector<BlockedOp>& blocked,
                           const std::vector<int>& stopped_at, double timeout_s, const std::string& cause) {
  std::string out = cause.empty()
                        ? fmt::format("watchdog: no progress for {:g} s; all devices stopped. Blocked devices:\n", timeout_s)
                        : cause + "; all local devices stopped. Blocked devices:\n";
  auto state = [&](int d) -> std::string {
    if (d < 0 || d >= static_cast<int>(stopped_at.size())) return "";
    const int k = stopped_at[d];
    if (k == -1) return fmt::format("device {} has finished its program", d);
    if (k == -2) return fmt::format("device {} runs in another process", d);
    if (k >= 0 && k < static_cast<int>(schedule.programs[d].size()))
      return fmt::format("device {} is at op {} '{}'", d, k, to_string(schedule.programs[d][k]));
    return "";
  };
  std::map<int, int> edge;  // blocked device → device it waits for
  for (const BlockedOp& b : blocked) {
    out += fmt::format("  device {} is blocked at op {} '{}'", b.device, b.op_index, to_string(b.op));
    const Action& op = schedule.programs.at(b.device.value()).at(b.op_index);
    if (op.loc.valid()) out += fmt::format(" ({})", op.loc.str());
    if (b.waits_for_device) {
      const DeviceId w = *b.waits_for_device;
      const auto& prog = schedule.programs.at(w.value());
      int j = -1;
      for (int i = 0; i < static_cast<int>(prog.size()); ++i)
        if (prog[i] == b.waits_for) {
          j = i;
          break;
        }
      if (j >= 0)
        out += fmt::format(": waits for device {} to run op {} '{}'", w, j, to_string(b.waits_for));
      else
        out += fmt::format(": waits for device {} to run '{}', which is not in its program", w,
                           to_string(b.waits_for));
      if (w != b.device) {
        const std::string st = state(w.value());
        if (!st.empty()) out += " (" + st + ")";
        edge[b.device.value()] = w.value();
      }
    } else {
      out += ": running (no input to wait for)";
    }
    out += "\n";
  }
  // The wait cycle, if the waits-for edges among blocked devices close one.
  for (const auto& [start, next0] : edge) {
    std::vector<int> path{start};
    int cur = next0;
    while (edge.count(cur) && std::find(path.begin(), path.end(), cur) == path.end()) {
      path.push_back(cur);
      cur = edge.at(cur);
    }
    auto pos = std::find(path.begin(), path.end(), cur);
    if (pos != path.end()) {
      std::string cyc;
      for (auto it = pos; it != path.end(); ++it) cyc += fmt::format("device {} → ", *it);
      out += fmt::format("  wait cycle: {}device {}\n", cyc, cur);
      break;
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

ExecResult execute(const Schedule& schedule, const ExecModel& model, Backend& backend,
                   const ExecOptions& options) {
  ExecResult res;
  res.status = check_inputs(schedule, model, backend);
  if (!res.status.is_ok()) return res;
  res.status = backend.begin_iteration();
  if (!res.status.is_ok()) return res;
  Replay replay(schedule, model, backend, options);
  replay.start();
  replay.watch(res);
  if (replay.fired()) {
    res.status = Status::error(ErrorCode::kRuntime, format_blocked(schedule, res.blocked, res.stopped_at,
                                                                   options.timeout_s, replay.health().message()));
    return res;
  }
  if (const Worker* failed = replay.first_failure()) {
    res.status = failed->status;
    replay.record_stops(res);
    return res;
  }
  res.status = replay.collect(res);
  return res;
}

}  // namespace ps::rt
