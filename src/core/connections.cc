// Connection setup over the bootstrap: the receiver creates the region and sends its blob; the
// sender attaches, proves the region is the peer's (its token) and acks; the receiver then drops the
// region's name (shm). A pair that no transport can serve fails on both ends, naming both ranks.
#include "core/connections.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

#include "device/host/host_wait.h"

#include "core/comm.h"
#include "transports/region_proof.h"
#include "util/host_identity.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {
namespace {

constexpr int kConnBlobTag = 0x20000000;  // + channel
constexpr int kConnAckTag = 0x28000000;   // + channel

bool contains(const std::vector<int>& v, int x) {
  for (int y : v)
    if (y == x) return true;
  return false;
}

// The first transport (in order of preference) that can serve this rank and `peer`, or an error
// naming both ranks and why not. Symmetric: both ends compute the same answer.
ncclResult_t pickTransport(ncclComm* comm, int peer, int channel, int* index) {
  int nTransports = 0;
  const Transport* const* transports = hostTransports(&nTransports);
  const PeerInfo& self = comm->peers[comm->rank];
  const PeerInfo& other = comm->peers[peer];
  for (int t = 0; t < nTransports; ++t)
    if (transports[t]->canConnect(self, other)) {
      *index = t;
      return ncclSuccess;
    }
  std::string why;
  canShareMemory(self.place, other.place, &why);
  return fail(ncclSystemError,
              "rank %d (host %.64s, pid %d, pid namespace %llu) cannot share memory with rank %d (host %.64s, pid "
              "%d, pid namespace %llu): %s; no network transport is available yet, so channel %d cannot connect them",
              comm->rank, self.place.hostname, self.place.pid, (unsigned long long)self.place.pidNsInode, peer,
              other.place.hostname, other.place.pid, (unsigned long long)other.place.pidNsInode, why.c_str(), channel);
}

}  // namespace

FifoLayout ConnectionTable::hostLayout() {
  int64_t buff = paramInt("NCCL_BUFFSIZE");
  int64_t ll = paramInt("NCCL_LL_BUFFSIZE");
  if (buff <= 0) buff = 1 << 20;  // host default: 1 MiB of Simple slots per connection
  if (ll <= 0) ll = 256 << 10;    // host default: 256 KiB of LL slots (half is payload)
  FifoLayout layout;
  layout.simpleSlotBytes = static_cast<size_t>(buff) / kFifoSteps / 64 * 64;
  if (layout.simpleSlotBytes < 64) layout.simpleSlotBytes = 64;
  layout.llSlotWords = static_cast<size_t>(ll) / kFifoSteps / sizeof(LLWord);
  if (layout.llSlotWords < 8) layout.llSlotWords = 8;
  return layout;
}

ConnectionTable::~ConnectionTable() { releaseAll(); }

void ConnectionTable::releaseAll() {
  for (auto& [key, conn] : conns_) {
    FifoCtrl* ctrl = conn->view.ctrl;
    std::atomic_ref<uint32_t>(ctrl->closed).store(1, std::memory_order_release);
    futexWakeWord(counterWord(ctrl->tail));
    futexWakeWord(counterWord(ctrl->head));
  }
  conns_.clear();
  ownedBytes_ = 0;
  mappedBytes_ = 0;
  count_ = 0;
}

Connection* ConnectionTable::find(int channel, int peer, bool isSend) {
  auto it = conns_.find({channel, peer, isSend});
  return it == conns_.end() ? nullptr : it->second.get();
}

ncclResult_t ConnectionTable::connect(ncclComm* comm, int channel, const FifoLayout& layout,
                                      const std::vector<int>& sendPeers, const std::vector<int>& recvPeers) {
  std::vector<int> newSend, newRecv;
  for (int p : sendPeers)
    if (!find(channel, p, true) && !contains(newSend, p)) newSend.push_back(p);
  for (int p : recvPeers)
    if (!find(channel, p, false) && !contains(newRecv, p)) newRecv.push_back(p);
  if (newSend.empty() && newRecv.empty()) return ncclSuccess;

  const PeerInfo& self = comm->peers[comm->rank];
  int nTransports = 0;
  const Transport* const* transports = hostTransports(&nTransports);

  // 0. Both ends of a pair reach the same verdict from the same PeerInfo, so a pair no transport
  //    can serve fails on both sides here, before either waits for the other.
  for (const std::vector<int>* peers : {&newRecv, &newSend})
    for (int p : *peers) {
      int t = 0;
      ACCL_CHECK(pickTransport(comm, p, channel, &t));
    }

  // 1. Receiver side: create every region, stamp it with a fresh token and send its blob.
  for (int p : newRecv) {
    const PeerInfo& peer = comm->peers[p];
    int t = 0;
    ACCL_CHECK(pickTransport(comm, p, channel, &t));
    auto conn = std::make_unique<Connection>();
    ConnBlob blob;
    std::memset(&blob, 0, sizeof(blob));
    blob.magic = ConnBlob::kMagic;
    blob.transport = static_cast<uint32_t>(t);
    blob.layout = layout;
    ACCL_CHECK(transports[t]->setupRecv(layout, &conn->region, &blob));
    stampRegion(conn->region.get(), comm->rank, p, channel, &blob);
    conn->transport = transports[t];
    conn->view = makeFifoView(conn->region->base(), layout);
    conn->peerPid = peer.pidHash == self.pidHash ? 0 : peer.pid;
    conn->bytes = blob.bytes;
    ACCL_CHECK(comm->bootstrap->send(p, kConnBlobTag + channel, &blob, sizeof(blob)));
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_SHM, "Channel %02d : %d[%d] -> %d[%d] via %s", channel, p, peer.cudaDev,
              comm->rank, self.cudaDev, transports[t]->name);
    ownedBytes_ += conn->bytes;
    count_++;
    conns_[{channel, p, false}] = std::move(conn);
  }
  // 2. Sender side: attach to each peer's region, prove it is the peer's, and ack.
  for (int p : newSend) {
    ConnBlob blob;
    ACCL_CHECK(comm->bootstrap->recv(p, kConnBlobTag + channel, &blob, sizeof(blob)));
    int expected = 0;
    ACCL_CHECK(pickTransport(comm, p, channel, &expected));
    if (blob.magic != ConnBlob::kMagic || blob.transport != static_cast<uint32_t>(expected) ||
        blob.ownerRank != p || blob.bytes != kRegionHeaderBytes + blob.layout.totalBytes())
      return fail(ncclSystemError,
                  "rank %d: the connection blob from rank %d on channel %d is malformed (magic 0x%x, transport %u "
                  "where %d was expected, owner rank %d, %llu bytes)",
                  comm->rank, p, channel, blob.magic, blob.transport, expected, blob.ownerRank,
                  (unsigned long long)blob.bytes);
    auto conn = std::make_unique<Connection>();
    conn->transport = transports[blob.transport];
    ACCL_CHECK(attachPeerRegion(conn->transport, blob, comm->rank, p, channel, &conn->region));
    conn->view = makeFifoView(conn->region->base(), blob.layout);
    const PeerInfo& peer = comm->peers[p];
    conn->peerPid = peer.pidHash == self.pidHash ? 0 : peer.pid;
    conn->bytes = blob.bytes;
    mappedBytes_ += conn->bytes;
    count_++;
    conns_[{channel, p, true}] = std::move(conn);
    const char ack = 1;
    ACCL_CHECK(comm->bootstrap->send(p, kConnAckTag + channel, &ack, 1));
  }
  // 3. Receiver side: once attached, the region no longer needs a name.
  for (int p : newRecv) {
    char ack = 0;
    ACCL_CHECK(comm->bootstrap->recv(p, kConnAckTag + channel, &ack, 1));
    find(channel, p, false)->region->finish();
  }
  return ncclSuccess;
}

}  // namespace accl
