// Host p2p transport (both ranks are threads of one process): its blob and region helpers, for
// the transport itself and for tests that forge blobs.
#pragma once

#include <cstdint>

#include "transports/conn_region.h"
#include "transports/transport.h"

namespace accl {

// The payload of a p2p blob.
struct P2pBlob {
  RegionRef region;       // first, as every mapped-region blob (transports/mapped_ends.h)
  uint64_t address;       // the region's start in the owner process
  uint64_t processToken;  // random per owner process: proves the address is in this process
};
static_assert(offsetof(P2pBlob, region) == 0, "mapped-region blobs start with their RegionRef");

// Ends holding the p2p region `blob` announces (its owner and an attached peer). For tests: the
// blob must be a genuine one of this process whose region is still held.
uint32_t p2pRegionHolders(const P2pBlob& blob);

}  // namespace accl
