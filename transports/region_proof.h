// Proof that an attached connection region is the peer's: the owner stamps a random token into
// the region's header and sends it in the blob; the attaching side maps the region and compares
// before first use. A mismatch (another process's memory, a stale or forged region, the right
// fd number in the wrong PID namespace) fails with a message naming both ranks.
#pragma once

#include <memory>
#include <string>

#include "nccl.h"
#include "transports/transport.h"

namespace accl {

// Owner side, after setupRecv: writes the header (fresh random token) and copies the token into
// the blob.
void stampRegion(ConnRegion* region, int ownerRank, int peerRank, int channel, ConnBlob* blob);

// True when the mapped region's header is the one `blob` announces; else *why says what differs.
bool regionMatchesBlob(const ConnRegion& region, const ConnBlob& blob, std::string* why);

// Sender side: maps the region with `transport` and proves it. On failure nothing is kept and
// the error (ncclSystemError) names `selfRank`, `ownerRank` and the channel.
ncclResult_t attachPeerRegion(const Transport* transport, const ConnBlob& blob, int selfRank, int ownerRank,
                              int channel, std::unique_ptr<ConnRegion>* region);

}  // namespace accl
