// The memory one communicator holds, by kind, and what ncclCommSuspend releases of it.
//
// Two classes, as ncclCommMemStats reports them:
//   releasable (ncclStatGpuMemSuspend)  what Suspend frees and the next use after Resume rebuilds:
//       - FIFOs: the regions of the connections this rank *receives* on. The receiver allocates a
//         connection's region (heap between threads, a memfd between processes) and the sender
//         maps it, so a region is counted once, by its owner. The peers' regions this rank maps to
//         send into are reported apart (fifoMappedBytes) and are not in the totals.
//       - scratch: what the backend keeps between launches (host: the one-round all-reduce's
//         buffer of n+1 vectors and its transfer list);
//       - plan: the storage of the communicator's plans (core/engine/plan_pool.h: each launch has its
//         own, recycled when it completes; per-channel work lists).
//   persistent (ncclStatGpuMemPersist)  what lives as long as the communicator: the communicator
//       object and its peer table, the engine (channels, ring/tree tables, choice cache), the
//       tuner object, and the bootstrap's tables.
// Transient buffers of one call (the host Prims' LL unpack buffers, a send/recv batch's transfer
// list) are freed before the call returns and are never held, so they are not counted; nor are
// worker-thread stacks. On the host backend all of it is host or shared memory; the "Gpu" in the
// enum names means device memory on the CUDA backend.
//
// Suspend/resume protocol (see docs/communicators.md): every rank of the communicator calls
// ncclCommSuspend after its last operation and ncclCommResume before its next one. Each rank
// drops both ends of its connections (its peers see the shared `closed` word; data already
// published stays readable), and the first operation after Resume reconnects through the usual
// lazy handshake over the bootstrap, whose messages wait in the peer's queue, so a rank that
// resumes first simply waits there for its peers (bounded by ACCL_BOOTSTRAP_TIMEOUT_MS).
#pragma once

#include <cstdint>

#include "core/engine/plan.h"
#include "nccl.h"

struct ncclComm;

namespace accl {

struct CommMemoryUsage {
  // Releasable.
  uint64_t fifoBytes = 0;     // regions of the connections this rank receives on (it owns them)
  uint64_t scratchBytes = 0;  // one-round all-reduce scratch and transfer list
  uint64_t planBytes = 0;     // the plans, idle and in flight (core/engine/plan_pool.h)
  // Persistent.
  uint64_t commBytes = 0;       // the communicator object, its peer table and node layout
  uint64_t engineBytes = 0;     // engine, channel tables, tuner object
  uint64_t bootstrapBytes = 0;  // bootstrap object and its per-peer tables
  // Not counted in the totals: peers' regions mapped for sending, and the connection count.
  uint64_t fifoMappedBytes = 0;
  int connections = 0;
  bool suspended = false;

  uint64_t releasable() const { return fifoBytes + scratchBytes + planBytes; }
  uint64_t persistent() const { return commBytes + engineBytes + bootstrapBytes; }
  uint64_t total() const { return releasable() + persistent(); }
};

// Measures what `comm` holds now. Safe while another thread runs an operation on the comm.
void measureCommMemory(const ncclComm* comm, CommMemoryUsage* out);

// Bytes held by a plan's work lists (their capacity, which later launches reuse).
uint64_t planStorageBytes(const Plan& plan);

// Fails with ncclInvalidUsage, naming `call`, when the comm is suspended (enqueue's check).
ncclResult_t checkNotSuspended(const char* call, const ncclComm* comm);

// ncclCommSuspend's and ncclCommResume's work after the API checks (comm ready, flags valid).
ncclResult_t suspendComm(ncclComm* comm);
ncclResult_t resumeComm(ncclComm* comm);

}  // namespace accl
