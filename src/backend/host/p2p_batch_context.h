// HostP2pContext: all the host point-to-point progress loop (backend/host/p2p_batch_loop.h) needs of
// its communicator — the engine view to find each transfer's connection, and the wait policy
// that bounds its waits. The host backend builds it (HostBackend::p2pContext).
#pragma once

#include "core/engine/engine_view.h"

namespace accl {

struct WaitPolicy;

struct HostP2pContext {
  EngineView view;          // connection(channel, peer, isSend) gives each transfer's connection
  const WaitPolicy* wait;   // spin / yield / sleep, abort flag, timeout, liveness record
  // The API call the transfers serve, for wait logs and errors; null: each transfer's own
  // direction ("ncclSend" / "ncclRecv").
  const char* what = nullptr;
};

}  // namespace accl
