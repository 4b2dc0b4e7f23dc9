// The communicator object behind ncclComm_t: identity (rank, size, device, node layout), its
// bootstrap, its configuration, and the lifecycle state that every API call checks
// (initializing / ready / finalized / revoked, async error, abort flag).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/backend_kind.h"
#include "core/bootstrap/bootstrap.h"
#include "core/comm/comm_lifetime.h"
#include "core/comm/config.h"
#include "transports/peer_info.h"
#include "util/host_identity.h"
#include "nccl.h"

namespace accl {

class CommEngine;
struct GrowTicket;  // core/comm/comm_grow.h

// Node layout derived from the peers' host hashes. Nodes are numbered by their lowest rank.
struct NodeLayout {
  int nNodes = 0;
  int node = 0;                 // this rank's node
  int localRank = 0;            // index among the ranks of this node
  int localRanks = 0;           // ranks on this node
  std::vector<int> nodeOfRank;  // node of every rank
};

enum class CommState { Initializing, Ready, Finalized, Revoked, Failed };

}  // namespace accl

// The public handle type is `struct ncclComm*`, so this struct lives in the global namespace.
struct ncclComm {
  static constexpr uint64_t kMagic = 0x616363'6c636f6d6dull;  // "acclcomm"
  uint64_t startMagic = kMagic;

  int rank = -1;
  int nranks = 0;
  int cudaDev = 0;
  accl::Backend backend = accl::Backend::Host;
  uint64_t commHash = 0;
  accl::CommConfig config;
  std::unique_ptr<accl::Bootstrap> bootstrap;
  std::vector<accl::PeerInfo> peers;
  accl::NodeLayout layout;

  std::atomic<int> abortFlag{0};
  std::atomic<ncclResult_t> asyncResult{ncclInProgress};
  std::atomic<accl::CommState> state{accl::CommState::Initializing};

  // Background work of a nonblocking communicator (init, split, finalize): at most one at a time.
  std::mutex jobMutex;
  std::thread job;

  // Everything collectives need (channels, connections, reduction ops, executor); created at
  // the end of init.
  std::unique_ptr<accl::CommEngine> engine;

  // Counts splits/shrinks of this communicator so every child gets distinct bootstrap tags.
  std::atomic<int> childCount{0};

  // The id ncclCommGetUniqueId made on this rank, until the ncclCommGrow that uses it ends
  // (guarded by comm_grow.cc's lock).
  std::shared_ptr<accl::GrowTicket> growTicket;

  // Lifetime bookkeeping (core/comm/comm_lifetime.h), guarded by its process-wide mutex.
  accl::CommLifetime life;

  uint64_t endMagic = kMagic;

  bool blocking() const { return config.base.blocking != 0; }
};

namespace accl {

// Validates a handle for the API call `call`: non-null, live (registered, not being destroyed),
// intact magics. Inside an API call it also holds the communicator until the call returns
// (core/comm/comm_lifetime.h), so another thread's destroy or abort cannot free it meanwhile.
ncclResult_t checkCommHandle(const char* call, ncclComm* comm);

// Like checkCommHandle, and also requires that initialization finished successfully and the
// communicator was not revoked or finalized (for calls that need a working communicator).
ncclResult_t checkCommReady(const char* call, ncclComm* comm);

// Like checkCommReady, for split and shrink: the parent may also be revoked or have failed
// (that is when survivors shrink), but must have finished its init.
ncclResult_t checkCommParent(const char* call, ncclComm* comm);

// Joins the communicator's background job, if any (detaches it when called from that job).
void joinCommJob(ncclComm* comm);

// Frees everything the communicator owns (job, engine, bootstrap, windows), not the object.
// Called once, by whoever ends the communicator's last use (core/comm/comm_lifetime.cc).
void releaseCommResources(ncclComm* comm);

}  // namespace accl
