// Memory accounting of a communicator and the release/restore behind ncclCommSuspend and
// ncclCommResume (see comm_memory.h).
#include "core/comm/comm_memory.h"

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "util/check.h"
#include "util/log.h"

namespace accl {
namespace {

template <class T>
uint64_t vectorBytes(const std::vector<T>& v) {
  return static_cast<uint64_t>(v.capacity()) * sizeof(T);
}

uint64_t engineTableBytes(const CommEngine& e) {
  uint64_t bytes = sizeof(CommEngine) + vectorBytes(e.channels);
  if (e.backend) bytes += e.backend->objectBytes();
  for (const ChannelPeers& ch : e.channels) bytes += vectorBytes(ch.ringRanks);
  if (e.tuner) bytes += sizeof(Tuner);
  return bytes;
}

// The bootstrap keeps, per peer, its listener address, an outgoing and an incoming socket and a
// "gone" mark (bootstrap.h); queued messages are transient.
uint64_t bootstrapTableBytes(const Bootstrap& b) {
  const uint64_t n = static_cast<uint64_t>(b.nranks());
  return sizeof(Bootstrap) + static_cast<uint64_t>(b.peerAddresses().capacity()) * sizeof(SocketAddress) +
         n * (2 * sizeof(Socket) + sizeof(char));
}

// What Suspend frees. Runs under the gate's lock: no launch is inside, none can start.
void releaseRebuildable(CommEngine& e) {
  e.releaseConnections(/*stopRunning=*/false);
  e.backend->releaseScratch();
  e.plans.releaseIdle();
}

}  // namespace

void measureCommMemory(const ncclComm* comm, CommMemoryUsage* out) {
  *out = CommMemoryUsage{};
  out->commBytes = sizeof(ncclComm) + vectorBytes(comm->peers) + vectorBytes(comm->layout.nodeOfRank);
  if (comm->bootstrap) out->bootstrapBytes = bootstrapTableBytes(*comm->bootstrap);
  const CommEngine* e = comm->engine.get();
  if (e == nullptr) return;
  out->engineBytes = engineTableBytes(*e);
  out->fifoBytes = e->conns.ownedBytes();
  out->fifoMappedBytes = e->conns.mappedBytes();
  out->connections = e->conns.count();
  out->scratchBytes = e->backend ? e->backend->scratchBytes() : 0;
  out->planBytes = e->plans.bytes();
  out->suspended = e->gate.suspended();
}

uint64_t planStorageBytes(const Plan& plan) {
  uint64_t bytes = vectorBytes(plan.channels);
  for (const std::vector<PlanItem>& items : plan.channels) {
    bytes += vectorBytes(items);
    for (const PlanItem& item : items) bytes += vectorBytes(item.p2p);
  }
  return bytes;
}

ncclResult_t checkNotSuspended(const char* call, const ncclComm* comm) {
  if (comm->engine && comm->engine->gate.suspended())
    return fail(ncclInvalidUsage, "%s: communicator is suspended; call ncclCommResume (comm %p)", call,
                static_cast<const void*>(comm));
  return ncclSuccess;
}

ncclResult_t suspendComm(ncclComm* comm) {
  CommEngine& e = *comm->engine;
  // Launches still in flight on an asynchronous backend hold plans and scratch: let them end.
  ACCL_CHECK(e.backend->wait());
  CommMemoryUsage before;
  measureCommMemory(comm, &before);
  ACCL_CHECK(e.gate.suspend("ncclCommSuspend", [&] { releaseRebuildable(e); }));
  CommMemoryUsage after;
  measureCommMemory(comm, &after);
  ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_ALLOC,
            "comm %p rank %d suspended: released %llu bytes (%d connection(s): %llu bytes of own FIFOs, %llu of peers' "
            "unmapped; scratch %llu; plan %llu); %llu bytes persist",
            (void*)comm, comm->rank, (unsigned long long)(before.releasable() - after.releasable()),
            before.connections, (unsigned long long)before.fifoBytes, (unsigned long long)before.fifoMappedBytes,
            (unsigned long long)before.scratchBytes, (unsigned long long)before.planBytes,
            (unsigned long long)after.persistent());
  return ncclSuccess;
}

ncclResult_t resumeComm(ncclComm* comm) {
  ACCL_CHECK(comm->engine->gate.resume("ncclCommResume"));
  ACCL_INFO(ACCL_LOG_INIT, "comm %p rank %d resumed: connections are rebuilt by the next operation that needs them",
            (void*)comm, comm->rank);
  return ncclSuccess;
}

}  // namespace accl
