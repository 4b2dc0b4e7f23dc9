// Region tokens: stamping on the owner, checking on the attaching side (see region_proof.h).
#include "transports/region_proof.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "util/check.h"
#include "util/host_identity.h"
#include "util/last_error.h"

namespace accl {

void stampRegion(ConnRegion* region, const RegionStamp& stamp, RegionRef* ref) {
  RegionHeader* h = region->header();
  h->token = randomU64();
  h->bytes = ref->bytes;
  h->ownerRank = stamp.ownerRank;
  h->peerRank = stamp.peerRank;
  h->channel = stamp.channel;
  h->ownerPid = static_cast<int32_t>(getpid());
  h->side = static_cast<uint32_t>(stamp.side);
  // The magic last, released: a header with the magic is complete.
  std::atomic_ref<uint64_t>(h->magic).store(RegionHeader::kMagic, std::memory_order_release);
  ref->token = h->token;
  ref->ownerRank = stamp.ownerRank;
  ref->ownerPid = h->ownerPid;
  ref->side = h->side;
}

bool regionMatchesRef(const ConnRegion& region, const RegionRef& ref, std::string* why) {
  const RegionHeader* h = region.header();
  uint64_t magic = std::atomic_ref<const uint64_t>(h->magic).load(std::memory_order_acquire);
  char text[256];
  if (magic != RegionHeader::kMagic) {
    std::snprintf(text, sizeof(text), "the mapped memory has no region header (magic 0x%llx)",
                  (unsigned long long)magic);
  } else if (h->token != ref.token) {
    std::snprintf(text, sizeof(text),
                  "its token 0x%016llx differs from the 0x%016llx the owner announced (region of rank %d for rank "
                  "%d, channel %d, pid %d)",
                  (unsigned long long)h->token, (unsigned long long)ref.token, h->ownerRank, h->peerRank, h->channel,
                  h->ownerPid);
  } else if (h->bytes != ref.bytes || h->ownerRank != ref.ownerRank || h->side != ref.side) {
    std::snprintf(text, sizeof(text),
                  "its header (rank %d's %s region, %llu bytes) differs from the blob (rank %d's %s region, %llu "
                  "bytes)",
                  h->ownerRank, connSideName(static_cast<ConnSide>(h->side)), (unsigned long long)h->bytes,
                  ref.ownerRank, connSideName(static_cast<ConnSide>(ref.side)), (unsigned long long)ref.bytes);
  } else {
    return true;
  }
  if (why) *why = text;
  return false;
}

ncclResult_t attachPeerRegion(const RegionAttach& who, const RegionRef& ref,
                              const std::function<ncclResult_t(std::unique_ptr<ConnRegion>*)>& map,
                              std::unique_ptr<ConnRegion>* region) {
  std::unique_ptr<ConnRegion> mapped;
  ncclResult_t res = map(&mapped);
  if (res != ncclSuccess || !mapped) {
    std::string inner = lastErrorText();
    return fail(ncclSystemError, "rank %d cannot attach to the %s region of rank %d (channel %d, %s): %s",
                who.selfRank, connSideName(static_cast<ConnSide>(ref.side)), who.ownerRank, who.channel,
                who.transport, inner.c_str());
  }
  std::string why;
  if (!regionMatchesRef(*mapped, ref, &why)) {
    mapped->abandon();
    return fail(ncclSystemError,
                "rank %d cannot prove that the region it mapped for its connection to rank %d (channel %d, %s, %s) is "
                "rank %d's: %s; refusing to use it",
                who.selfRank, who.ownerRank, who.channel, who.transport, who.where.c_str(), who.ownerRank,
                why.c_str());
  }
  *region = std::move(mapped);
  return ncclSuccess;
}

}  // namespace accl
