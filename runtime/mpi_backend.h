// mpi_backend.h — the mpi backend: one OS process per rank (launched by mpirun), rank r runs device r
// of the schedule with the host math (HostOps), boundary tensors move with MPI point-to-point.
//
// Semantics mapping (docs/semantics.md):
//  * rendezvous: a SEND is MPI_Issend (synchronous mode: it completes only once the peer's matching
//    receive has started), polled until done; a RECV probes for the peer's next message
//    (MPI_Improbe, matched in posting order per pair like NCCL), checks that it is the expected
//    SEND's tensor (the tag encodes the op) of the expected size, then takes it (MPI_Mrecv).
//  * grouped: the group's sends are posted together (MPI_Issend), its receives taken in order, then
//    its sends waited for — the group completes as a unit, as on the host backend.
//  * buffered: not offered (as on every backend).
// Every wait polls, so abort() (the watchdog) makes blocked calls return kRuntime "aborted" soon
// after; a send left pending by an abort keeps its buffer alive until the process exits (it then
// exits without MPI_Finalize; runtime/mpi_world.h).
// Faults: the world's health check (a peer process gone, a peer's stop notice, SIGTERM from the
// launcher) is polled by the executor's watchdog; announce_stop tells the peers. Timing: the epoch is
// the exit of a barrier at the start of the iteration, so every rank's op times share one origin.
// Test hook: PIPESMITH_TEST_KILL=RANK:OPS makes that rank raise SIGKILL after OPS ops of its program.
#pragma once

#include <memory>

#include "ir/status.h"
#include "runtime/backend.h"

namespace ps::rt {

struct MpiBackendOptions {
  int devices = 1;        // devices of the schedule = processes in the launch
  int stages = 1;         // stages of the schedule (message tags)
  int microbatches = 1;   // microbatches of the schedule (message tags)
  double control_timeout_s = 60;  // barrier at the start, result gathering at the end
};

// Fails with kBadInput when the world size differs from `devices`, kRuntime "built without MPI" in a
// build without MPI.
Result<std::unique_ptr<Backend>> make_mpi_backend(const MpiBackendOptions& options);

}  // namespace ps::rt
