// accl::Bootstrap: the out-of-band TCP network of one communicator, used during init and for
// transport setup (all-gather, tagged point-to-point messages, barrier, broadcast).
//
// How it is built (Bootstrap::create):
//   1. every rank opens a peer listener on the bootstrap interface (bootstrap_net.h);
//   2. it joins the root of its block (ids[i] serves ranks of block i, see bootstrap_wire.h) and sends
//      {rank, nranks, number of ids, listener address}; the roots check agreement and duplicates and answer
//      each rank with its ring successor's address, or with an error every rank then reports
//      (bootstrap_root.h);
//   3. each rank connects to its successor and accepts its predecessor: two persistent ring connections;
//   4. a ring all-gather of the listener addresses gives every rank the full address table.
// Afterwards:
//   - allGather runs over the ring (n-1 steps; sends and receives progress together, so any size works);
//   - send/recv use one persistent connection per (sender, receiver) pair, opened by the sender on first
//     use and accepted lazily by the receiver; each message carries {tag, size}. recv(peer, tag) takes the
//     oldest message from that peer with that tag; messages for other (peer, tag) pairs that arrive
//     meanwhile are queued in memory. Per (peer, tag) order is preserved. Sending to oneself is allowed.
//   - barrier is a dissemination barrier (ceil(log2 n) rounds) and broadcast sends from the root to every
//     rank, both over send/recv with reserved tags.
// Rules: allGather, barrier and broadcast are collective (every rank, same order, same sizes). Sizes of a
// recv must equal the matching send's. Tags kReservedTagFirst..kReservedTagLast are the bootstrap's own.
// Every wait is bounded by timeoutMs and watches abortFlag; on expiry the error names the rank(s) waited
// for. One thread may send while another receives; calls of the same kind are serialized.
// Security: every connection (to the root, between ranks) proves the id's secret first (SocketKey,
// util/socket_auth.h). The peer listener handshakes with all callers at once (SocketAcceptor) whenever a
// rank waits in recv/barrier/broadcast or for its ring predecessor, so strangers and silent connections
// are dropped after a short deadline without delaying genuine peers; hellos and message headers pass
// the decoders of bootstrap_wire.h (ranks in range, lengths <= kMaxPeerMessageBytes). nranks must be
// <= kMaxRanks.
#pragma once

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "nccl.h"
#include "util/socket.h"
#include "util/socket_acceptor.h"

namespace accl {

struct BootstrapOptions {
  int rank = 0;
  int nranks = 0;
  const std::atomic<int>* abortFlag = nullptr;  // may be null
  int64_t timeoutMs = 0;                        // <= 0: ACCL_BOOTSTRAP_TIMEOUT_MS
};

class Bootstrap {
 public:
  static constexpr int kReservedTagFirst = INT_MIN + 1;
  static constexpr int kReservedTagLast = INT_MIN + 15;

  // Joins the communicator described by ids[0..nIds) (1 <= nIds <= nranks, same ids in the same order on
  // every rank). With NCCL_COMM_ID set, the first rank of a block whose id carries the NCCL_COMM_ID
  // address hosts that block's root itself.
  static ncclResult_t create(const ncclUniqueId* ids, int nIds, const BootstrapOptions& options,
                             std::unique_ptr<Bootstrap>* out);
  ~Bootstrap();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  // Every rank's peer listener address (index = rank).
  const std::vector<SocketAddress>& peerAddresses() const { return peers_; }

  // In place: rank r's slice is data + r*bytesPerRank; on return every slice is filled.
  ncclResult_t allGather(void* data, size_t bytesPerRank);
  ncclResult_t send(int peer, int tag, const void* data, size_t bytes);
  ncclResult_t recv(int peer, int tag, void* data, size_t bytes);
  ncclResult_t barrier();
  ncclResult_t broadcast(int root, void* data, size_t bytes);

 private:
  static constexpr int kBarrierTag = INT_MIN + 1;
  static constexpr int kBroadcastTag = INT_MIN + 2;

  Bootstrap() = default;
  ncclResult_t join(const ncclUniqueId* ids, int nIds);
  ncclResult_t connectRing(const SocketAddress& next);
  // Reads the hello of an authenticated connection and files it (ring predecessor or p2p peer).
  void filePeer(Socket conn, const SocketWait& wait);
  int64_t handshakeMs() const;
  // Waits until something arrives on the listener or an incoming p2p connection and files it.
  // Returns ncclSuccess with *progressed = false when the wait's deadline passed.
  ncclResult_t progressIncoming(const SocketWait& wait, int waitedPeer, bool* progressed);
  ncclResult_t readMessage(int peer, const SocketWait& wait);
  ncclResult_t sendLocked(int peer, int tag, const void* data, size_t bytes);
  ncclResult_t recvLocked(int peer, int tag, void* data, size_t bytes);
  SocketWait waitFor(const char* what) const;
  ncclResult_t checkPeer(const char* op, int peer) const;

  int rank_ = 0;
  int nranks_ = 0;
  const std::atomic<int>* abortFlag_ = nullptr;
  int64_t timeoutMs_ = 0;
  SocketKey key_;
  std::vector<SocketAddress> peers_;

  std::mutex ringMutex_;
  Socket ringNext_;
  Socket ringPrev_;

  std::mutex sendMutex_;
  std::vector<Socket> outgoing_;  // index = peer

  std::mutex recvMutex_;
  Socket listener_;
  SocketAcceptor acceptor_;
  std::vector<Socket> ready_;
  std::vector<Socket> incoming_;  // index = peer
  std::vector<char> peerGone_;    // the peer closed its connection to us (index = peer)
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> queued_;  // (peer, tag) -> payloads
};

}  // namespace accl
