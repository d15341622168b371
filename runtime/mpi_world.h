// mpi_world.h — the process world of a run with one process per rank: who this process is in the
// launch, and the control plane the multi-process backends (mpi, cuda under mpirun) share.
//
// Guarantees:
//  * launch_env() reads the rank, world size and local rank from the launcher's environment
//    (torchrun RANK/WORLD_SIZE/LOCAL_RANK, Open MPI OMPI_COMM_WORLD_*, Slurm SLURM_PROCID/NTASKS/LOCALID,
//    PMI_RANK/PMI_SIZE/MPI_LOCALRANKID, first match wins); rank -1 when none is set.
//  * MpiWorld::get() initialises MPI once (MPI_THREAD_MULTIPLE: the watchdog probes for stop notices
//    while a worker transfers) and exchanges every rank's pid and host. MPI_Finalize runs at process
//    exit unless the world was stopped (a rank that stops leaves pending transfers behind; it exits
//    without finalising and the launcher ends the job).
//  * Control-plane calls (barrier, allgather, gather, broadcast) never hang: each polls and fails with
//    kRuntime after its timeout, when a peer process on the same host is gone (checked by pid), when
//    a peer sent a stop notice, or when the launcher sent SIGTERM — naming the rank and the reason.
//    Any such failure stops the world (stop notices to every peer).
//  * health() is the same check without a transfer, for the executor's watchdog.
//  * Without MPI in the build, get() fails with kRuntime "built without MPI".
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"

namespace ps::rt {

struct ExecResult;

struct LaunchEnv {
  int rank = -1;        // this process in the launch; -1: not launched as one of several processes
  int world = -1;       // processes in the launch
  int local_rank = -1;  // on this node; -1 when the launcher does not say
  std::string source;   // the variables it came from: "OMPI_COMM_WORLD_*"
};
LaunchEnv launch_env();

// True when this binary was built with MPI.
bool mpi_built();
// True when the environment says an MPI launcher (mpirun/mpiexec) started this process.
bool launched_by_mpi();

class MpiWorld {
 public:
  // The world of this process (MPI initialised on the first call).
  static Result<MpiWorld*> get();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // "rank 1/4 (pid 4242, host node7)".
  std::string label(int rank) const;
  std::string label() const { return label(rank_); }

  Status barrier(double timeout_s, const std::string& what);
  // Every rank's `mine`, by rank.
  Result<std::vector<std::string>> allgather(const std::string& mine, double timeout_s, const std::string& what);
  // Rank 0 gets every rank's `mine`, by rank; the others get an empty vector.
  Result<std::vector<std::string>> gather(const std::string& mine, double timeout_s, const std::string& what);
  // Every rank gets rank 0's `root_value`.
  Result<std::string> broadcast(const std::string& root_value, double timeout_s, const std::string& what);

  // Non-ok (sticky) when a peer process is gone, a peer stopped, or the launcher sent SIGTERM.
  Status health();
  // Tells every peer that this rank stopped (one line); afterwards MPI is not finalised at exit.
  void stop(const std::string& reason);
  bool stopped() const;

  // While a Watch lives, SIGTERM only raises a flag that health() reports (the process then exits 4
  // with its witness); otherwise SIGTERM ends the process at once.
  class Watch {
   public:
    Watch();
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
  };

  struct Impl;
  ~MpiWorld();

 private:
  MpiWorld() = default;
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<Impl> impl_;
};

// Multi-process runs: rank 0's `result` gets every rank's devices (ascending), gradients and losses,
// and the iteration time becomes the maximum over ranks; the other ranks keep theirs.
Status gather_exec_results(MpiWorld& world, ExecResult& result, double timeout_s);

// Refuses a run whose processes disagree on their inputs: `digests` are (input name, digest) in the
// same order on every rank; an error (kBadInput, the same text on every rank) names each rank whose
// digest differs from rank 0's and the input.
Status agree_on_inputs(MpiWorld& world, const std::vector<std::pair<std::string, std::string>>& digests,
                       double timeout_s);

}  // namespace ps::rt
