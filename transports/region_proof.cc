// Region tokens: stamping on the owner, checking on the attaching side (see region_proof.h).
#include "transports/region_proof.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "util/check.h"
#include "util/host_identity.h"
#include "util/last_error.h"

namespace accl {

void stampRegion(ConnRegion* region, int ownerRank, int peerRank, int channel, ConnBlob* blob) {
  RegionHeader* h = region->header();
  h->token = randomU64();
  h->bytes = blob->bytes;
  h->ownerRank = ownerRank;
  h->peerRank = peerRank;
  h->channel = channel;
  h->ownerPid = static_cast<int32_t>(getpid());
  // The magic last, released: a header with the magic is complete.
  std::atomic_ref<uint64_t>(h->magic).store(RegionHeader::kMagic, std::memory_order_release);
  blob->token = h->token;
  blob->ownerRank = ownerRank;
}

bool regionMatchesBlob(const ConnRegion& region, const ConnBlob& blob, std::string* why) {
  const RegionHeader* h = region.header();
  uint64_t magic = std::atomic_ref<const uint64_t>(h->magic).load(std::memory_order_acquire);
  char text[256];
  if (magic != RegionHeader::kMagic) {
    std::snprintf(text, sizeof(text), "the mapped memory has no region header (magic 0x%llx)",
                  (unsigned long long)magic);
  } else if (h->token != blob.token) {
    std::snprintf(text, sizeof(text),
                  "its token 0x%016llx differs from the 0x%016llx the owner announced (region of rank %d for rank "
                  "%d, channel %d, pid %d)",
                  (unsigned long long)h->token, (unsigned long long)blob.token, h->ownerRank, h->peerRank, h->channel,
                  h->ownerPid);
  } else if (h->bytes != blob.bytes || h->ownerRank != blob.ownerRank) {
    std::snprintf(text, sizeof(text), "its header (rank %d, %llu bytes) differs from the blob (rank %d, %llu bytes)",
                  h->ownerRank, (unsigned long long)h->bytes, blob.ownerRank, (unsigned long long)blob.bytes);
  } else {
    return true;
  }
  if (why) *why = text;
  return false;
}

ncclResult_t attachPeerRegion(const Transport* transport, const ConnBlob& blob, int selfRank, int ownerRank,
                              int channel, std::unique_ptr<ConnRegion>* region) {
  std::unique_ptr<ConnRegion> mapped;
  ncclResult_t res = transport->connectSend(blob, &mapped);
  if (res != ncclSuccess) {
    std::string inner = lastErrorText();
    return fail(ncclSystemError, "rank %d cannot attach to the connection region of rank %d (channel %d, %s): %s",
                selfRank, ownerRank, channel, transport->name, inner.c_str());
  }
  std::string why;
  if (!regionMatchesBlob(*mapped, blob, &why)) {
    mapped->abandon();
    const std::string where =
        blob.name[0] ? std::string(blob.name, strnlen(blob.name, sizeof(blob.name))) : std::string("in-process");
    return fail(ncclSystemError,
                "rank %d cannot prove that the region it mapped for its connection to rank %d (channel %d, %s, %s) is "
                "rank %d's: %s; refusing to use it",
                selfRank, ownerRank, channel, transport->name, where.c_str(), ownerRank, why.c_str());
  }
  *region = std::move(mapped);
  return ncclSuccess;
}

}  // namespace accl
