// Liveness: one background thread per process keeps a heartbeat with every process it shares a
// communicator with, separately from the collectives' progress. A rank blocked in a long
// collective, a checkpoint or a slow step is still alive (the thread answers for it); a process
// that exits (SIGKILL, crash), freezes (SIGSTOP, hang of the whole process) or becomes unreachable
// is declared failed within a bounded time, even when no connection between the ranks exists yet.
//
// Transport: each process listens on a TCP port on the bootstrap interface. At the end of a
// communicator's init the ranks exchange *cards* (address, pid, host, a random process token,
// and rank 0's random communicator key) with one bootstrap allgather; each process dials every
// member process it does not know yet, says HELLO (its token and the receiver's), then sends a
// BEAT every ACCL_HEARTBEAT_INTERVAL_MS. Verdicts on a member process:
//   - exited:    its connection to us closed (the kernel closes a dead process's sockets) or its
//                port refuses connections — seen at once;
//   - frozen:    nothing arrived from it for ACCL_HEARTBEAT_TIMEOUT_MS;
//   - link lost: the connection failed with a network error (reset, unreachable).
// A process that destroys a communicator sends LEAVE first, so its later exit is no failure.
// Many ranks in one process (threads mode) share the process's heartbeat; ranks of one process
// never watch each other.
//
// On a verdict, every communicator with a rank in that process records the failure (core/
// peer_failure.h: the first recorded wins), sets its async error to ncclRemoteError, raises its
// abort flag to kAbortByPeerFailure so every wait of the communicator ends (host waits and
// bootstrap waits alike), logs a WARN naming the failed rank, and sends FAILED to the other member
// processes, which record the same failure: every survivor names the same rank.
//
// Fork: a child forgets the parent's service (fds, registrations) and starts its own with its
// first communicator. ACCL_HEARTBEAT_INTERVAL_MS <= 0 turns the service off.
#pragma once

#include <memory>
#include <string>

#include "core/liveness/peer_failure.h"
#include "nccl.h"

struct ncclComm;

namespace accl {

// The value a peer failure stores in ncclComm::abortFlag (a user's ncclCommAbort stores 1).
constexpr int kAbortByPeerFailure = 2;

// Called at the end of init, once the bootstrap and the engine exist (collective over the
// communicator's bootstrap): attaches the communicator's health record to its engine's wait
// policy, exchanges cards and starts watching the other member processes.
ncclResult_t livenessJoin(ncclComm* comm);

// Stops watching for `comm` and tells the other member processes this rank left on purpose.
// Safe to call for a communicator that never joined; idempotent.
void livenessLeave(ncclComm* comm);

// A wait found that `rank`'s process no longer exists: declare it failed for every
// communicator that has it (and tell the others). No-op when the service does not know it.
void livenessReportExited(const CommHealth* health, int rank);

// A wait found that `rank` closed the communicator in the middle of an operation (its process
// lives): record that for this communicator and tell the other members, so that the ranks whose
// neighbours fail in turn name `rank` too. Works in threads mode as well.
void livenessReportClosed(const CommHealth* health, int rank);

// A network connection with `rank` failed while both processes may live (a QP in error, a reset
// stream): after a short grace for a heartbeat verdict that says more (its process exited), record
// "link lost" naming `rank` and tell the other members; a member told that its own link failed
// names the rank that saw it. No-op when `rank` left on purpose or a failure is recorded already.
void livenessReportLinkLost(const CommHealth* health, int rank, const std::string& detail);

// For messages and wait logs: "pid 4242 on host node7, last heartbeat 310 ms ago", "in this
// process", or "" when unknown.
std::string livenessPeerStatus(const CommHealth* health, int rank);

}  // namespace accl
