// backend.h — what the executor needs from a backend: per device, an Ops (the math), point-to-point
// moves of boundary tensors, per-op timing, and a way to stop everything.
//
// Contract (every backend):
//  * The executor calls begin_op/end_op around every op of a device's program, in program order,
//    from that device's worker thread; compute ops run through ops(), comm ops through send/recv.
//  * Synchronous backends (host) finish an op before end_op returns; a send returns only when the
//    matching recv has taken the data (rendezvous); under grouped semantics run_group posts the
//    group's sends, then takes its receives, then waits for the sends. Asynchronous backends (cuda) enqueue: compute on
//    one stream, p2p on a comm stream, ordered by events so that each op waits exactly for what the
//    schedule semantics say (its producer, its RECV); finish() then waits, publishing progress in
//    completed_ops().
//  * abort() may be called from any thread at any time: blocked calls return a kRuntime Status
//    soon after, and the device stops issuing work.
//  * op_times() (after the iteration) gives [start, end] per op in ms since the iteration began.
//  * Multi-process backends (one process per rank: mpi, cuda under a launcher) also check that every
//    process got the same inputs before any transfer, report a peer that is gone through health()
//    (polled by the watchdog), tell the other processes when this one stops (announce_stop), and
//    gather every rank's devices, gradients and losses on rank 0 after the iteration. Single-process
//    backends keep the defaults.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/schedule.h"
#include "ir/status.h"
#include "runtime/ops.h"

namespace ps::rt {

// The Status blocked calls return after abort(): recognisable with is_aborted().
inline Status aborted_status() { return Status::error(ErrorCode::kRuntime, "aborted"); }
inline bool is_aborted(const Status& st) { return !st.is_ok() && st.message() == "aborted"; }

struct OpSpan {
  double start_ms = 0;
  double end_ms = 0;
};

// One comm op of a group (grouped semantics: consecutive comm ops between two computes).
struct CommItem {
  int index = 0;       // op index in the device's program
  Action op;           // the SEND_* or RECV_*
  int peer = 0;        // the other device
  Action expected;     // the matching op on the peer
  Tensor send;         // SEND: the data
  size_t count = 0;    // RECV: fp32 elements expected
  Tensor received;     // RECV: filled on success
};

class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  virtual Ops& ops() = 0;
  virtual void begin_op(int index, const Action& op) = 0;
  virtual void end_op(int index, const Action& op) = 0;
  // SEND: moves `t` to device `peer`, where `expected_recv` takes it.
  virtual Status send(const Action& op, int peer, const Tensor& t, const Action& expected_recv) = 0;
  // RECV: takes `count` fp32 elements sent by `peer`'s `expected_send`.
  virtual Result<Tensor> recv(const Action& op, int peer, const Action& expected_send, size_t count) = 0;
  // Grouped semantics: issues the items together (an NCCL group, batch_isend_irecv); they complete
  // as a unit. Sets `current` to the index of the item's op being waited for (watchdog witness).
  virtual Status run_group(std::vector<CommItem>& items, std::atomic<int>& current) = 0;
  virtual bool is_async() const = 0;
  // Async backends: waits for all enqueued work (returns early with an error on abort or failure).
  virtual Status finish() = 0;
  // Async backends: number of ops of the program completed so far (thread-safe).
  virtual int completed_ops() const = 0;
  virtual std::vector<OpSpan> op_times() = 0;
  virtual void abort() = 0;
  virtual std::string describe() const = 0;  // "host thread 2", "cuda:1 NVIDIA H200"
};

struct ExecResult;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;             // "host", "cuda"
  virtual int num_devices() const = 0;              // devices of the schedule
  virtual std::vector<int> local_devices() const = 0;  // those this process runs, ascending
  virtual DeviceContext& device(int d) = 0;         // d in local_devices()
  // Once before the workers start: resets timing epochs and comm state, synchronises processes.
  virtual Status begin_iteration() = 0;
  // Stops every local device (thread-safe).
  virtual void abort_all() = 0;

  // ---- one process per rank (defaults: a single process) ----
  virtual int rank() const { return 0; }       // this process; rank 0 prints and writes the outputs
  virtual int processes() const { return 1; }
  virtual std::string process_label() const { return ""; }  // "rank 1/4 (pid 4242, host node7)"
  // Before any transfer: refuses (kBadInput, naming rank and input) if the processes' (input name,
  // digest) lists differ.
  virtual Status agree_on_inputs(const std::vector<std::pair<std::string, std::string>>&) { return Status::ok(); }
  // Polled by the watchdog (thread-safe): non-ok when another process is gone or stopped, or the
  // launcher asked this one to stop; the executor then stops the local devices.
  virtual Status health() { return Status::ok(); }
  // Called by the executor once when this process stops (a failed op, the watchdog, health()):
  // tells the other processes why (one line).
  virtual void announce_stop(const std::string&) {}
  // After a successful iteration: rank 0's result gets every process's devices (ascending),
  // gradients and losses.
  virtual Status gather_results(ExecResult&) { return Status::ok(); }
};

}  // namespace ps::rt
