// The two ends of a transport whose ends map each other's memory (p2p, shm). Each end creates
// one region at setup (the receiver: tail and slots; the sender: head), stamps it and sends its
// RegionRef first in the blob's payload; at connect it maps the peer's region, proves it
// (transports/region_proof.h) and builds its FifoView from both. A transport of this kind only
// says how a region is created and how a blob's region is mapped (MappedRegionOps).
#pragma once

#include <memory>
#include <string>

#include "transports/conn_region.h"
#include "transports/transport.h"

namespace accl {

struct MappedRegionOps {
  const char* transportName;
  // Creates a zeroed region of `bytes` (header included) and writes the transport's own blob
  // (which starts with a RegionRef the caller fills) into blob->payload.
  ncclResult_t (*create)(size_t bytes, std::unique_ptr<ConnRegion>* region, ConnBlob* blob);
  // Maps the region the peer's blob describes; checks what it can before mapping. The caller
  // proves the header afterwards.
  ncclResult_t (*map)(const ConnBlob& blob, const RegionRef& ref, std::unique_ptr<ConnRegion>* region);
  // Where the blob's region is found, for messages.
  std::string (*where)(const ConnBlob& blob);
};

// The RegionRef at the start of a mapped-region blob's payload.
RegionRef blobRegionRef(const ConnBlob& blob);
void setBlobRegionRef(ConnBlob* blob, const RegionRef& ref);

// Bytes of the region an end of `side` creates for `layout`, header included.
size_t mappedRegionBytes(ConnSide side, const FifoLayout& layout);

ncclResult_t mappedSetup(const MappedRegionOps& ops, ConnSide side, const ConnSetup& s, ConnEnd* end, ConnBlob* blob);
ncclResult_t mappedConnect(const MappedRegionOps& ops, ConnSide side, const ConnSetup& s, const ConnBlob& peerBlob,
                           ConnEnd* end);
void mappedFinish(ConnEnd* end);
void mappedFree(ConnEnd* end);

template <const MappedRegionOps& Ops, ConnSide Side>
ncclResult_t mappedSetupOf(const ConnSetup& s, ConnEnd* end, ConnBlob* blob) {
  return mappedSetup(Ops, Side, s, end, blob);
}
template <const MappedRegionOps& Ops, ConnSide Side>
ncclResult_t mappedConnectOf(const ConnSetup& s, const ConnBlob& peerBlob, ConnEnd* end) {
  return mappedConnect(Ops, Side, s, peerBlob, end);
}

// The Transport of a mapped-region transport: both sides built from `Ops`, no proxy.
template <const MappedRegionOps& Ops>
constexpr Transport mappedRegionTransport(bool (*canConnect)(const PeerInfo&, const PeerInfo&)) {
  return Transport{Ops.transportName, canConnect,
                   TransportSide{&mappedSetupOf<Ops, ConnSide::kSend>, &mappedConnectOf<Ops, ConnSide::kSend>,
                                 &mappedFinish, &mappedFree, nullptr},
                   TransportSide{&mappedSetupOf<Ops, ConnSide::kRecv>, &mappedConnectOf<Ops, ConnSide::kRecv>,
                                 &mappedFinish, &mappedFree, nullptr}};
}

}  // namespace accl
