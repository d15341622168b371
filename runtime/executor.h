// executor.h — replays a schedule (with comm ops) on a backend: one worker thread per local device
// walks that device's program in order, plus a watchdog.
//
// Guarantees:
//  * Op dispatch: F/I/W/B run the stage math (runtime/stage_compute.h); an F's input is the RECV_F'd
//    tensor, or the local output of F(s-1,m) when stage s-1 sits on the same device; likewise for the
//    gradient of I/B. SEND/RECV go through the backend (rendezvous on the host backend).
//  * Anything the schedule gets wrong at run time (an op on a device that does not hold its stage, a
//    SEND before its producer, a consumer without its RECV, a RECV of the wrong tensor, buffers left
//    over at the end) stops the run with a kRuntime Status naming the device, the op index and action.
//  * Watchdog: when a device that has started its program (parameters set up) but not finished it
//    completes no op for `timeout_s`, every device is aborted and the result lists, per unfinished
//    device, the op it is blocked on and the op (and device) it waits for; the status message holds
//    the same witness, including the wait cycle.
//  * Memory: after every op the bytes held by activations and stashes (the buffers the memory rule of
//    ir/schedule.h talks about) are recorded; the peak and the op index where it is first reached.
//  * Multi-process backends: the watchdog also polls Backend::health(); when another process is gone
//    or stopped, the local devices are stopped the same way and the status names the cause before
//    the blocked ops. Every stop is announced to the other processes (Backend::announce_stop).
//  * Never hangs: every wait is abortable and the watchdog always runs.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/comm_insert.h"
#include "ir/schedule.h"
#include "ir/status.h"
#include "runtime/backend.h"
#include "runtime/exec_model.h"

namespace ps::rt {

struct ExecOptions {
  double timeout_s = 30;           // watchdog: seconds without progress on an unfinished device
  bool collect_gradients = true;   // download summed gradients and losses at the end
  // Grouped semantics: consecutive comm ops between two computes run as one group (run_group)
  // that completes as a unit; otherwise (rendezvous) each SEND/RECV pairs up on its own.
  bool grouped = false;
  // Called from the watchdog (never from a worker) every progress_interval_s while the iteration
  // runs: ops completed and ops in all local programs. Empty: no calls.
  std::function<void(long done_ops, long total_ops)> progress;
  double progress_interval_s = 2;
};

struct DeviceRun {
  int device = 0;
  std::string where;                // "host thread 0", "cuda:0 NVIDIA H200"
  std::vector<OpSpan> times;        // per op of the program, ms since the iteration began
  std::vector<size_t> held_bytes;   // activations + stashes held after each op
  size_t peak_held_bytes = 0;
  int peak_op_index = -1;           // first op index after which peak_held_bytes is held
  size_t peak_alloc_bytes = 0;      // everything allocated through Ops (params, grads, comm, temporaries)
  double end_ms = 0;                // end of the last op
  double busy_ms = 0;               // sum of compute op durations
};

struct ExecResult {
  Status status;                    // ok, or kRuntime (watchdog, schedule error, backend error)
  std::vector<DeviceRun> devices;   // local devices, ascending
  double iteration_ms = 0;          // max end_ms over local devices
  std::vector<BlockedOp> blocked;   // watchdog witness (empty unless it fired)
  std::vector<int> stopped_at;      // per schedule device: op index it was at when stopped, -1 done,
                                    // -2 not local (another process)
  std::map<int, std::vector<std::vector<float>>> gradients;  // stage → summed gradient per parameter
  std::map<int, double> losses;     // microbatch → loss (when the last stage is local)
};

ExecResult execute(const Schedule& schedule, const ExecModel& model, Backend& backend,
                   const ExecOptions& options = {});

// What `op` (at `index` on `device`) waits for under the schedule's data flow: the matching comm op
// on the peer, or the local producer / RECV of a compute op. waits_for_device is empty when none.
BlockedOp waits_for(const Schedule& schedule, DeviceId device, int index);

// Human text of a watchdog stop: one line per blocked device, then the wait cycle if there is one.
// `cause` (when not empty) replaces the "no progress" header: why another process made this one stop.
std::string format_blocked(const Schedule& schedule, const std::vector<BlockedOp>& blocked,
                           const std::vector<int>& stopped_at, double timeout_s, const std::string& cause = "");

}  // namespace ps::rt
