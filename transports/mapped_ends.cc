// Setup, connect, finish and free of the mapped-region transports (see mapped_ends.h).
#include "transports/mapped_ends.h"

#include <cstring>

#include "transports/region_proof.h"
#include "util/check.h"

namespace accl {
namespace {

// This end's region and the peer's, released in that order reversed: the mapping first.
struct MappedRegions : TransportResources {
  std::unique_ptr<ConnRegion> own;
  std::unique_ptr<ConnRegion> peer;
  ~MappedRegions() override {
    peer.reset();
    own.reset();
  }
};

ConnSide otherSide(ConnSide side) { return side == ConnSide::kSend ? ConnSide::kRecv : ConnSide::kSend; }

}  // namespace

RegionRef blobRegionRef(const ConnBlob& blob) { return blobPayload<RegionRef>(blob); }

void setBlobRegionRef(ConnBlob* blob, const RegionRef& ref) { putBlobPayload(blob, ref); }

size_t mappedRegionBytes(ConnSide side, const FifoLayout& layout) {
  return kRegionHeaderBytes + (side == ConnSide::kRecv ? layout.recvBytes() : FifoLayout::sendBytes());
}

ncclResult_t mappedSetup(const MappedRegionOps& ops, ConnSide side, const ConnSetup& s, ConnEnd* end,
                         ConnBlob* blob) {
  auto regions = std::make_unique<MappedRegions>();
  const size_t bytes = mappedRegionBytes(side, s.layout);
  ACCL_CHECK(ops.create(bytes, &regions->own, blob));
  RegionRef ref{};
  ref.bytes = bytes;
  stampRegion(regions->own.get(), RegionStamp{s.self->rank, s.peer->rank, s.channel, side}, &ref);
  setBlobRegionRef(blob, ref);
  end->side = side;
  end->ownedBytes = bytes;
  end->resources = std::move(regions);
  return ncclSuccess;
}

ncclResult_t mappedConnect(const MappedRegionOps& ops, ConnSide side, const ConnSetup& s, const ConnBlob& peerBlob,
                           ConnEnd* end) {
  auto* regions = dynamic_cast<MappedRegions*>(end->resources.get());
  if (regions == nullptr || !regions->own)
    return fail(ncclInternalError, "%s: rank %d connects to rank %d (channel %d) before its setup", ops.transportName,
                s.self->rank, s.peer->rank, s.channel);
  const RegionRef ref = blobRegionRef(peerBlob);
  const ConnSide peerSide = otherSide(side);
  const size_t expected = mappedRegionBytes(peerSide, s.layout);
  if (ref.ownerRank != s.peer->rank || ref.side != static_cast<uint32_t>(peerSide) || ref.bytes != expected)
    return fail(ncclSystemError,
                "rank %d: the %s blob of rank %d on channel %d (%s) is malformed: it announces rank %d's %s region of "
                "%llu bytes where %zu bytes were expected",
                s.self->rank, connSideName(peerSide), s.peer->rank, s.channel, ops.transportName, ref.ownerRank,
                connSideName(static_cast<ConnSide>(ref.side)), (unsigned long long)ref.bytes, expected);
  RegionAttach who{s.self->rank, s.peer->rank, s.channel, ops.transportName, ops.where(peerBlob)};
  ACCL_CHECK(attachPeerRegion(
      who, ref, [&](std::unique_ptr<ConnRegion>* mapped) { return ops.map(peerBlob, ref, mapped); }, &regions->peer));
  void* own = regions->own->base();
  void* peer = regions->peer->base();
  end->view = side == ConnSide::kRecv ? makeFifoView(own, peer, s.layout) : makeFifoView(peer, own, s.layout);
  end->mappedBytes = ref.bytes;
  return ncclSuccess;
}

void mappedFinish(ConnEnd* end) {
  if (auto* regions = dynamic_cast<MappedRegions*>(end->resources.get()); regions && regions->own)
    regions->own->finish();
}

void mappedFree(ConnEnd* end) { end->resources.reset(); }

}  // namespace accl
