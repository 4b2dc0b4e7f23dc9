// Zero-copy sends of the network proxy: a sender end may let its Prims publish a large Simple step
// as a pointer into the user's buffer (kFifoStepUserPtr, device/common/fifo.h) instead of copying
// it into the staging slot; the proxy then sends the bytes straight from there and publishes head
// once the device reports them sent, which is when the Prims may change that memory again
// (backend/host/user_sends.h keeps that promise). On the wire nothing changes: the receiver sees
// an ordinary Simple step. An end in plain host memory (not a CUDA rank's pinned FIFO) takes part;
// ACCL_NET_ZERO_COPY_MIN sets the smallest step. A device that reads any host memory without a
// registration (NetProperties::sendsUnregistered: Socket) sends from wherever the step lies; one
// that needs registered host memory (IB verbs, plugins) gets such steps only from inside buffers
// the user registered with ncclCommRegister (the step names the buffer): the proxy registers the
// whole buffer with the device on its first step, keeps that registration for the next ones, and
// releases it at ncclCommDeregister (NetContext::bufferDeregistered) or when the end goes. Never
// an unregistered buffer: memory freed and mapped again at the same address would still be
// backed, for the device, by the pages pinned at registration.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace accl {

struct NetConnResources;
struct UserBufferReg;
class NetMemHandle;

// The smallest step the sender end `r` takes as a user pointer; 0: none (the FIFO as before).
size_t netUserSendMinBytes(const NetConnResources* r);

// Whether the sender end `r` takes user pointers only from registered buffers.
bool netUserSendRegisteredOnly(const NetConnResources* r);

// Where step `s` (published with `info`) is sent from, and the memory handle to send it with:
// the staging slot (the end's own handle), or the user's buffer its slot names (the end's handle,
// or over a device that needs registered memory the one of the registered buffer holding it,
// registered now if this is its first step). An error (the connection failed) for a user pointer
// the end never allowed, or one outside any registered buffer where that is needed.
ncclResult_t netStepSource(NetConnResources* r, uint64_t s, uint32_t info, const void** src, NetMemHandle** mh);

// The device's handle on this end (either side) for the registered buffer `reg`: the cached one,
// else a new registration of the whole buffer (logged, INFO NET); an error fails the connection.
ncclResult_t netUserBufferHandle(NetConnResources* r, const UserBufferReg& reg, NetMemHandle** mh);

// Releases the device registrations of user buffers the end made: registration `id`, or all of
// them (id 0). Logged (INFO NET) per buffer, with `when` (e.g. "at ncclCommDeregister").
void netReleaseUserMrs(NetConnResources* r, uint64_t id, const char* when);

// Counts step `s` when it went from a user's buffer (the device took the send); the first one of
// the end is logged (INFO NET).
void netCountUserSend(NetConnResources* r, uint64_t s, uint32_t info);

// The step info the receiver gets: what `info` says, less the sender-local kFifoStepUserPtr.
uint32_t netWireInfo(uint32_t info);

// Logs (INFO NET) how many steps and bytes the end sent straight from user buffers, when any:
// called once, when the end goes away.
void netLogUserSends(const NetConnResources* r);

}  // namespace accl
