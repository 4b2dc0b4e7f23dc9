// Zero-copy receives of the network proxy: the proxy's half of landings (device/common/fifo.h
// FifoLanding; the receiver's half is backend/host/landings.h). A receiver end whose device writes
// any host memory without a registration (Socket: NetProperties::sendsUnregistered), or any
// registered host memory (IB verbs, plugins with NCCL_PTR_HOST: then only inside buffers
// registered with ncclCommRegister, the registration cached as for zero-copy sends), and whose
// FIFO is plain host memory gets a landing table. When the proxy is about to post the receive of a
// Simple step of at least ACCL_NET_ZERO_COPY_MIN bytes and the receiver has already asked for
// that step to land in its buffer, the proxy claims the landing and posts the receive there
// instead of into the slot; when the step completes it marks it kFifoStepLanded and releases the
// landing. The proxy never waits for a landing: a step whose receiver is not there yet goes to
// its slot as before. A receiver that gives up on a claimed step (abort, timeout) withdraws it:
// the proxy then fails the connection and closes its device receive before it releases the
// landing, so nothing is written into that buffer once the receiver has returned; a connection
// that fails for any other reason does the same (over IB, deregistering the buffer first also
// stops the peer's RDMA writes into it). ACCL_NET_ZERO_COPY_RECV=0 turns landings off.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace accl {

struct NetConnResources;
class NetMemHandle;

// The smallest step the receiver end `r` lets land in a user buffer; 0: none (no landing table).
size_t netLandMinBytes(const NetConnResources* r);

// Where the Simple step `s` of `bytes` is received: *claimed, *data = the receiver's buffer and
// *mh = the handle to receive with when it asked for that step to land there (the landing is
// claimed now; over a device that needs registered memory the buffer's registration is made on
// its first landing), else *claimed = false. An error: the registration failed (the connection
// has failed).
ncclResult_t netClaimLanding(NetConnResources* r, uint64_t s, size_t bytes, bool* claimed, void** data,
                             NetMemHandle** mh);

// The device took no receive for a claimed step: gives the landing back to the receiver.
void netUnclaimLanding(NetConnResources* r, uint64_t s);

// Step `s` is complete in the receiver's buffer: counts it (the first one of the end is logged,
// INFO NET) and releases the landing.
void netLandingDone(NetConnResources* r, uint64_t s, size_t bytes);

// Whether the receiver withdrew a landing the proxy claimed (the connection must then fail).
bool netLandingWithdrawn(const NetConnResources* r);

// The connection failed (proxy thread): when a landing is claimed, closes the device receive so
// that nothing more is written into user buffers, then releases every claimed landing.
void netStopLandings(NetConnResources* r);

// Logs (INFO NET) how many steps and bytes the end received straight into user buffers, when
// any: called once, when the end goes away.
void netLogLandings(const NetConnResources* r);

}  // namespace accl
