// One-round all-reduce for small messages on the host backend: every rank sends its whole
// vector to every other rank (one FIFO step per peer, LL up to 64 B, progressed together like a
// send/recv group) and reduces the n vectors locally, in rank order, so every rank computes bit-identical
// results. The ring needs 2(n-1) dependent steps; when ranks outnumber cores each of those waits
// for a peer to be scheduled, and this path needs one. Chosen by the size rules for small
// messages, or pinned with NCCL_ALGO=OneShot. Core connects every other rank for it
// (CommEngine::connectPlan). (A GPU counterpart is the one-shot kernel over
// peer-mapped buffers, part of the CUDA backend.)
#pragma once

#include <vector>

#include "device/common/work.h"
#include "nccl.h"

namespace accl {

class HostBackend;

// Runs one one-round all-reduce on `channel`, with the backend's scratch (kept between launches,
// released by ncclCommSuspend).
ncclResult_t hostOneShotAllReduce(HostBackend& backend, int channel, const CollWork& work);

}  // namespace accl
