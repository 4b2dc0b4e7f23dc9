// Connection setup over the bootstrap (see transports/transport.h): both ends of every pair set
// up their side and send a blob; each connects with the peer's blob (attaching and proving the
// peer's memory) and acks; after the peer's ack each end drops names others could attach by. A
// pair that no transport can serve fails on both ends, naming both ranks.
#include "core/engine/connections.h"

#include <sched.h>

#include <atomic>
#include <cstring>
#include <string>

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "core/liveness/liveness.h"
#include "device/common/fifo_signal.h"
#include "util/check.h"
#include "util/host_identity.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"

namespace accl {
namespace {

// Bootstrap tags (+ channel): a pair connected in both directions exchanges one blob and one ack
// per end, told apart by the end that sent them.
constexpr int kRecvEndBlobTag = 0x20000000;
constexpr int kSendEndBlobTag = 0x21000000;
constexpr int kRecvEndAckTag = 0x28000000;
constexpr int kSendEndAckTag = 0x29000000;

int blobTag(ConnSide from, int channel) { return (from == ConnSide::kSend ? kSendEndBlobTag : kRecvEndBlobTag) + channel; }
int ackTag(ConnSide from, int channel) { return (from == ConnSide::kSend ? kSendEndAckTag : kRecvEndAckTag) + channel; }
ConnSide peerSideOf(ConnSide side) { return side == ConnSide::kSend ? ConnSide::kRecv : ConnSide::kSend; }

// The side whose ends call connect first in every pass of step 2 (ACCL_CONNECT_ORDER). NCCL's
// order, the default, is the sending ends first: a net plugin whose accept blocks until the peer's
// connect has arrived then never waits on a peer that is itself waiting in accept, since every
// rank has started its connects before it accepts. recv-first is accl's order before issue 20,
// kept for the test that shows such a plugin failing under it.
ncclResult_t firstConnectSide(ConnSide* first) {
  const std::string order = paramStr("ACCL_CONNECT_ORDER");
  if (order.empty() || order == "send-first") {
    *first = ConnSide::kSend;
  } else if (order == "recv-first") {
    *first = ConnSide::kRecv;
  } else {
    return fail(ncclInvalidArgument, "connection setup: ACCL_CONNECT_ORDER = '%s' is not send-first or recv-first",
                order.c_str());
  }
  return ncclSuccess;
}

bool contains(const std::vector<int>& v, int x) {
  for (int y : v)
    if (y == x) return true;
  return false;
}

// The first transport (in order of preference) that can serve this rank and `peer`, or an error
// naming both ranks and why not. Symmetric: both ends compute the same answer.
ncclResult_t chooseTransport(ncclComm* comm, int peer, int channel, int* index) {
  const PeerInfo& self = comm->peers[comm->rank];
  const PeerInfo& other = comm->peers[peer];
  *index = pickTransport(self, other);
  if (*index >= 0) return ncclSuccess;
  std::string why;
  canShareMemory(self.place, other.place, &why);
  return fail(ncclSystemError,
              "rank %d (host %.64s, pid %d, pid namespace %llu) cannot share memory with rank %d (host %.64s, pid "
              "%d, pid namespace %llu): %s; the network serves only ranks of different nodes (NCCL_HOSTID) or "
              "NCCL_P2P_DISABLE=1 with NCCL_SHM_DISABLE=1, so channel %d cannot connect them",
              comm->rank, self.place.hostname, self.place.pid, (unsigned long long)self.place.pidNsInode, peer,
              other.place.hostname, other.place.pid, (unsigned long long)other.place.pidNsInode, why.c_str(), channel);
}

// One end being connected.
struct PendingEnd {
  std::unique_ptr<Connection> conn;
  int transport = -1;  // index in the registry
  ConnSetup setup;
  ConnBlob peerBlob;
  bool connected = false;
};

// Whether the blob a peer sent for the other end of this connection is one: ours, from that
// peer's other end, made with the transport both ends chose.
ncclResult_t checkEnvelope(ncclComm* comm, const PendingEnd& e) {
  const ConnBlob& b = e.peerBlob;
  const ConnSide expectSide = peerSideOf(e.conn->side);
  if (b.magic == ConnBlob::kMagic && b.transport == static_cast<uint32_t>(e.transport) &&
      b.side == static_cast<uint32_t>(expectSide) && b.rank == e.conn->peer)
    return ncclSuccess;
  return fail(ncclSystemError,
              "rank %d: the connection blob from rank %d on channel %d is malformed (magic 0x%x, transport %u where %d "
              "was expected, side %u where %u (%s) was expected, rank %d)",
              comm->rank, e.conn->peer, e.conn->channel, b.magic, b.transport, e.transport, b.side,
              static_cast<uint32_t>(expectSide), connSideName(expectSide), b.rank);
}

}  // namespace

Connection::~Connection() {
  if (transport && resources) transport->side(side).free(this);
}

FifoLayout ConnectionTable::hostLayout(bool acrossHosts) {
  int64_t buff = paramInt("NCCL_BUFFSIZE");
  int64_t ll = paramInt("NCCL_LL_BUFFSIZE");
  if (buff <= 0) buff = static_cast<int64_t>(acrossHosts ? kHostNetSimpleBuffBytes : kHostSimpleBuffBytes);
  if (ll <= 0) ll = 256 << 10;    // host default: 256 KiB of LL slots (half is payload)
  FifoLayout layout;
  layout.simpleSlotBytes = static_cast<size_t>(buff) / kFifoSteps / 64 * 64;
  if (layout.simpleSlotBytes < 64) layout.simpleSlotBytes = 64;
  layout.llSlotWords = static_cast<size_t>(ll) / kFifoSteps / sizeof(LLWord);
  if (layout.llSlotWords < 8) layout.llSlotWords = 8;
  return layout;
}

ConnectionTable::ConnectionTable() : states_(transportCount()) {}

ConnectionTable::~ConnectionTable() { releaseAll(); }

void ConnectionTable::drainTransports() {
  for (int t = 0; t < static_cast<int>(states_.size()); ++t)
    if (states_[t] && transportAt(t)->drain) transportAt(t)->drain(states_[t].get());
}

void ConnectionTable::bufferDeregistered(uint64_t id) {
  for (int t = 0; t < static_cast<int>(states_.size()); ++t)
    if (states_[t] && transportAt(t)->bufferDeregistered) transportAt(t)->bufferDeregistered(states_[t].get(), id);
}

void ConnectionTable::releaseAll() {
  // The network's senders first hand over what their Prims already published; then nothing
  // progresses the ends any more.
  drainTransports();
  // Close everything first, so that no peer waits on a connection of ours while others are freed.
  for (auto& [key, conn] : conns_)
    for (FifoCounter* c : {conn->view.tail, conn->view.head}) {
      if (c == nullptr) continue;
      std::atomic_ref<uint32_t>(c->closed).store(1, std::memory_order_release);
      futexWakeWord(counterWord(c->value));
    }
  conns_.clear();  // each Connection frees itself through its transport
  ownedBytes_ = 0;
  mappedBytes_ = 0;
  count_ = 0;
}

Connection* ConnectionTable::find(int channel, int peer, bool isSend) {
  auto it = conns_.find({channel, peer, isSend});
  return it == conns_.end() ? nullptr : it->second.get();
}

TransportCommState* ConnectionTable::commState(ncclComm* comm, int transport) {
  const Transport* t = transportAt(transport);
  if (t == nullptr || t->commInit == nullptr) return nullptr;
  std::unique_ptr<TransportCommState>& state = states_[transport];
  if (!state) {
    TransportCommInit init;
    init.rank = comm->rank;
    init.commHash = comm->commHash;
    init.netName = comm->config.netName;
    init.trafficClass = comm->config.base.trafficClass;
    init.profiler = profiler;
    init.linkLost = [comm](int peer, const std::string& detail) {
      if (comm->engine) livenessReportLinkLost(comm->engine->health.get(), peer, detail);
    };
    state = t->commInit(init);
  }
  return state.get();
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

  // 0. Both ends of a pair reach the same verdict from the same PeerInfo, so a pair no transport
  //    can serve fails on both sides here, before either waits for the other.
  for (const std::vector<int>* peers : {&newRecv, &newSend})
    for (int p : *peers) {
      int t = 0;
      ACCL_CHECK(chooseTransport(comm, p, channel, &t));
    }

  // 1. Every new end sets up its side and sends its blob. (Receiving ends first: the order a
  //    peer's blobs leave in does not matter, the tags tell them apart.)
  std::vector<PendingEnd> pending;
  for (ConnSide side : {ConnSide::kRecv, ConnSide::kSend})
    for (int p : side == ConnSide::kSend ? newSend : newRecv) {
      int t = 0;
      ACCL_CHECK(chooseTransport(comm, p, channel, &t));
      const PeerInfo& peer = comm->peers[p];
      PendingEnd e;
      e.conn = std::make_unique<Connection>();
      e.conn->side = side;
      e.conn->peer = p;
      e.conn->channel = channel;
      e.transport = t;
      // A pid means something only inside one kernel and PID namespace (host_wait.h checks it),
      // and its absence means "no more data" only where the peer's own stores carry the data: a
      // proxy-driven transport (net) may still hold steps in flight that the peer sent before it
      // exited, followed by its goodbye; those waits learn of a departure from the goodbye and
      // the liveness service instead.
      const Transport* transport = transportAt(t);
      const bool pidVisible = peer.pidHash != self.pidHash && canShareMemory(self.place, peer.place, nullptr);
      const bool dataIsInMemory = transport->side(side).proxyProgress == nullptr;
      e.conn->peerPid = pidVisible && dataIsInMemory ? peer.pid : 0;
      e.setup = ConnSetup{comm, &self, &peer, channel, layout, commState(comm, t)};
      ConnBlob blob{};
      blob.magic = ConnBlob::kMagic;
      blob.transport = static_cast<uint32_t>(t);
      blob.side = static_cast<uint32_t>(side);
      blob.rank = comm->rank;
      blob.layout = layout;
      ACCL_CHECK(transport->side(side).setup(e.setup, e.conn.get(), &blob));
      e.conn->transport = transport;  // from here on the Connection frees what setup made
      ACCL_CHECK(comm->bootstrap->send(p, blobTag(side, channel), &blob, sizeof(blob)));
      if (side == ConnSide::kRecv)
        ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_SHM, "Channel %02d : %d[%d] -> %d[%d] via %s", channel, p, peer.cudaDev,
                  comm->rank, self.cudaDev, transport->name);
      pending.push_back(std::move(e));
    }

  // 2. Each end takes its peer's blob and connects; a transport may need several calls. Every
  //    pass calls the sending ends before the receiving ends (firstConnectSide).
  ConnSide first = ConnSide::kSend;
  ACCL_CHECK(firstConnectSide(&first));
  for (PendingEnd& e : pending) {
    const ConnSide from = peerSideOf(e.conn->side);
    ACCL_CHECK(comm->bootstrap->recv(e.conn->peer, blobTag(from, channel), &e.peerBlob, sizeof(e.peerBlob)));
    ACCL_CHECK(checkEnvelope(comm, e));
    if (e.conn->side == ConnSide::kSend) e.setup.layout = e.peerBlob.layout;  // the receiver's FIFO rules
  }
  int64_t timeoutMs = paramInt("ACCL_BOOTSTRAP_TIMEOUT_MS");
  if (timeoutMs <= 0) timeoutMs = 120000;
  const int64_t start = nowMs();
  for (size_t left = pending.size(); left > 0;) {
    for (ConnSide side : {first, peerSideOf(first)})
      for (PendingEnd& e : pending) {
        if (e.connected || e.conn->side != side) continue;
        ncclResult_t res = e.conn->transport->side(e.conn->side).connect(e.setup, e.peerBlob, e.conn.get());
        if (res == ncclInProgress) continue;
        ACCL_CHECK(res);
        e.connected = true;
        --left;
      }
    if (left == 0) break;
    if (comm->abortFlag.load(std::memory_order_relaxed))
      return fail(ncclInvalidUsage, "rank %d: connection setup on channel %d aborted (ncclCommAbort)", comm->rank,
                  channel);
    if (nowMs() - start > timeoutMs)
      return fail(ncclSystemError, "rank %d: %zu connection(s) on channel %d did not complete within %lld ms "
                  "(ACCL_BOOTSTRAP_TIMEOUT_MS)", comm->rank, left, channel, static_cast<long long>(timeoutMs));
    sched_yield();
  }

  // 3. Acks: once the peer has connected, nobody else may attach to what this end made.
  const char ack = 1;
  for (PendingEnd& e : pending)
    ACCL_CHECK(comm->bootstrap->send(e.conn->peer, ackTag(e.conn->side, channel), &ack, 1));
  for (PendingEnd& e : pending) {
    char got = 0;
    ACCL_CHECK(comm->bootstrap->recv(e.conn->peer, ackTag(peerSideOf(e.conn->side), channel), &got, 1));
    const TransportSide& side = e.conn->transport->side(e.conn->side);
    if (side.finish) side.finish(e.conn.get());
  }
  for (PendingEnd& e : pending) {
    ownedBytes_ += e.conn->ownedBytes;
    mappedBytes_ += e.conn->mappedBytes;
    count_++;
    const bool isSend = e.conn->side == ConnSide::kSend;
    conns_[{channel, e.conn->peer, isSend}] = std::move(e.conn);
  }
  return ncclSuccess;
}

}  // namespace accl
