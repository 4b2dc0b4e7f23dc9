// HostP2pContext: all the host point-to-point progress loop (backend/host/host_p2p.h) needs of
// its communicator — the connection table to find each transfer's connection, and the wait
// policy that bounds its waits. The host backend builds it (HostBackend::p2pContext), so
// host_p2p needs neither core/engine.h nor core/comm.h.
#pragma once

namespace accl {

class ConnectionTable;
struct WaitPolicy;

struct HostP2pContext {
  ConnectionTable* conns;   // find(channel, peer, isSend) gives each transfer's connection
  const WaitPolicy* wait;   // spin / yield / sleep, abort flag, timeout, liveness record
};

}  // namespace accl
