// The bootstrap root: a detached thread that serves exactly one communicator creation.
//
// It accepts ranks (JoinRequest) on its listener, checks that they agree (nranks, number of ids, which
// id they think it is) and that no rank is claimed twice, and answers each rank with the address of its
// ring successor once the whole block is present. With several ids (scalable init), the roots of blocks
// 1..k-1 report to root 0 (the root of ids[0]) once their block is complete; root 0 answers every block
// root with the verdict and the first address of the next block, so the ring closes across blocks and an
// error anywhere (a missing rank, a duplicate) reaches every rank.
//
// Security: the root speaks only to connections that prove the id's secret (SocketAcceptor, which
// handshakes with every caller at once under a short per-connection deadline); every request is then
// checked by the decoders of bootstrap_wire.h before use. A rejected connection is logged at INFO level
// with its address and closed; nothing a caller sends can end or stall the root.
//
// Bounded time: the root waits `idleTimeoutMs` for its first visitor, then the first rank's timeoutMs
// for the rest of its block (root 0 of a multi-root job waits 1.5x that for the other roots). On expiry
// it tells every rank that did arrive which ranks are missing, then exits. Stray connections (junk bytes,
// wrong secret, silence) are dropped after a short per-connection deadline, concurrently with the
// genuine ranks; they never end the root.
#pragma once

#include <atomic>
#include <cstdint>

#include "nccl.h"
#include "util/socket.h"
#include "util/socket_auth.h"

namespace accl {

// Starts a root thread owning `listener`. idleTimeoutMs < 0: ACCL_BOOTSTRAP_TIMEOUT_MS.
ncclResult_t startBootstrapRoot(Socket listener, const SocketKey& key, int64_t idleTimeoutMs);

// For NCCL_COMM_ID: binds `addr` (retrying for a while if a previous root still holds the port) and starts
// a root on it.
ncclResult_t startBootstrapRootAt(const SocketAddress& addr, const SocketKey& key, int64_t idleTimeoutMs,
                                  const std::atomic<int>* abortFlag);

// Root threads currently running in this process (tests use it to check that roots exit).
int activeBootstrapRoots();

}  // namespace accl
