// Test helper: the two ends of one connection built through a transport's setup and connect
// (transports/transport.h), in this process, without a communicator: what ConnectionTable does,
// minus the bootstrap. Header-only; link nccl_static.
#pragma once

#include <unistd.h>

#include <cstring>

#include "transports/transport.h"
#include "util/host_identity.h"
#include "util/last_error.h"

namespace accl::test {

// A PeerInfo of this process for `rank` (one process: p2p and shm both qualify).
inline PeerInfo localPeerInfo(int rank) {
  PeerInfo p{};
  p.rank = rank;
  p.pid = getpid();
  p.pidHash = 42;
  p.place = processPlace();
  return p;
}

// One end after setup; freed through its transport.
struct SetUpEnd {
  PeerInfo self, peer;
  ConnSetup setup;
  ConnEnd end;
  ConnBlob blob;
  ncclResult_t setupResult;
  SetUpEnd(const Transport& t, ConnSide side, int selfRank, int peerRank, const FifoLayout& layout, int channel = 3)
      : self(localPeerInfo(selfRank)), peer(localPeerInfo(peerRank)) {
    setup = ConnSetup{nullptr, &self, &peer, channel, layout};
    std::memset(&blob, 0, sizeof(blob));
    blob.magic = ConnBlob::kMagic;
    blob.side = static_cast<uint32_t>(side);
    blob.rank = selfRank;
    blob.layout = layout;
    setupResult = t.side(side).setup(setup, &end, &blob);
    end.transport = &t;
  }
  SetUpEnd(const SetUpEnd&) = delete;
  SetUpEnd& operator=(const SetUpEnd&) = delete;
  ~SetUpEnd() {
    if (end.resources) end.transport->side(end.side).free(&end);
  }
  ncclResult_t connect(const ConnBlob& peerBlob) { return end.transport->side(end.side).connect(setup, peerBlob, &end); }
};

// The receiver (`recvRank`) and the sender (`sendRank`) of one connection, set up; connect()
// joins them as ConnectionTable would (both connect, then both finish).
struct EndPair {
  SetUpEnd recv, send;
  EndPair(const Transport& t, const FifoLayout& layout, int recvRank = 0, int sendRank = 1)
      : recv(t, ConnSide::kRecv, recvRank, sendRank, layout), send(t, ConnSide::kSend, sendRank, recvRank, layout) {}
  bool setUp() const { return recv.setupResult == ncclSuccess && send.setupResult == ncclSuccess; }
  ncclResult_t connect() {
    if (!setUp()) return ncclSystemError;
    ncclResult_t res = send.connect(recv.blob);
    if (res == ncclSuccess) res = recv.connect(send.blob);
    if (res != ncclSuccess) return res;
    for (SetUpEnd* e : {&recv, &send}) {
      const TransportSide& side = e->end.transport->side(e->end.side);
      if (side.finish) side.finish(&e->end);
    }
    return ncclSuccess;
  }
};

}  // namespace accl::test
