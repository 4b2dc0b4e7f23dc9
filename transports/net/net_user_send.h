// Zero-copy sends of the network proxy: a sender end may let its Prims publish a large Simple step
// as a pointer into the user's buffer (kFifoStepUserPtr, device/common/fifo.h) instead of copying
// it into the staging slot; the proxy then sends the bytes straight from there and publishes head
// once the device reports them sent, which is when the Prims may change that memory again
// (backend/host/user_sends.h keeps that promise). On the wire nothing changes: the receiver sees
// an ordinary Simple step. Only a device that reads any host memory without a registration
// (NetProperties::sendsUnregistered: Socket) and an end in plain host memory (not a CUDA rank's
// pinned FIFO) take part; ACCL_NET_ZERO_COPY_MIN sets the smallest step.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace accl {

struct NetConnResources;

// The smallest step the sender end `r` takes as a user pointer; 0: none (the FIFO as before).
size_t netUserSendMinBytes(const NetConnResources* r);

// Where step `s` (published with `info`) is sent from: the staging slot, or the user's buffer its
// slot names. An error (the connection failed) for a user pointer the end never allowed.
ncclResult_t netStepSource(NetConnResources* r, uint64_t s, uint32_t info, const void** src);

// Counts step `s` when it went from a user's buffer (the device took the send); the first one of
// the end is logged (INFO NET).
void netCountUserSend(NetConnResources* r, uint64_t s, uint32_t info);

// The step info the receiver gets: what `info` says, less the sender-local kFifoStepUserPtr.
uint32_t netWireInfo(uint32_t info);

// Logs (INFO NET) how many steps and bytes the end sent straight from user buffers, when any:
// called once, when the end goes away.
void netLogUserSends(const NetConnResources* r);

}  // namespace accl
