// Proof that an attached connection region is the peer's: the owner stamps a random token into
// the region's header and sends it in its blob (a RegionRef); the attaching side maps the region
// and compares before first use. A mismatch (another process's memory, a stale or forged region,
// the right fd number in the wrong PID namespace, the other end's region of the same pair) fails
// with a message naming both ranks.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "nccl.h"
#include "transports/conn_region.h"

namespace accl {

// Who a region is made by and for.
struct RegionStamp {
  int ownerRank;
  int peerRank;
  int channel;
  ConnSide side;  // the owner's end
};

// Owner side, after creating the region (ref->bytes already set to the region's size): writes
// the header with a fresh random token and fills the rest of `ref`.
void stampRegion(ConnRegion* region, const RegionStamp& stamp, RegionRef* ref);

// True when the mapped region's header is the one `ref` announces; else *why says what differs.
bool regionMatchesRef(const ConnRegion& region, const RegionRef& ref, std::string* why);

// Who attaches to whose region, for messages.
struct RegionAttach {
  int selfRank;
  int ownerRank;
  int channel;
  const char* transport;  // its name
  std::string where;      // where the region is found ("/proc/…/fd/…", "in-process")
};

// Attaching side: maps the region with `map` and proves it against `ref`. On failure nothing is
// kept and the error (ncclSystemError) names both ranks, the channel and the transport.
ncclResult_t attachPeerRegion(const RegionAttach& who, const RegionRef& ref,
                              const std::function<ncclResult_t(std::unique_ptr<ConnRegion>*)>& map,
                              std::unique_ptr<ConnRegion>* region);

}  // namespace accl
