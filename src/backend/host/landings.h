// Landings: the receiver's half of network receives that go straight into the user's buffer
// (device/common/fifo.h FifoLanding; the proxy's half is transports/net/net_landing.h). A host
// Prims step that only stores what it receives (recv, recvCopySend: no reduction, no post-op)
// names its output before it waits; when the proxy had not posted that step's receive yet it
// posts it there, and the step finds its bytes in place (kFifoStepLanded) and copies nothing.
// When the proxy was ahead the bytes are in the slot as before: nothing waits for a landing.
#pragma once

#include <cstddef>

#include "backend/host/fifo_end.h"

namespace accl {

// Whether the current step (`bytes` of Simple) of receiver end `c` may ask to land.
inline bool mayLand(const HostConnEnd& c, size_t bytes) { return c.landings && bytes > 0 && bytes >= c.landMin; }

// Asks that the current step's bytes land at `out` (before waiting for the step); `reg`: the
// registered buffer `out` lies in, for an end that lands only there (id 0 otherwise).
void publishLanding(const HostConnEnd& c, char* out, size_t bytes, const UserBufferReg& reg);

// After the current step's data is visible: whether it landed where publishLanding asked.
bool stepLanded(const HostConnEnd& c);

// The current step's wait failed after publishLanding: takes the landing back, or, when the
// proxy already posted the receive there, has it stop the device (it fails the connection) and
// waits until it did (at most 10 s: after that a WARN, and the buffer may be written until the
// communicator's connections close).
void withdrawLanding(const HostConnEnd& c, const char* what);

}  // namespace accl
