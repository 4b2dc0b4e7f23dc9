// The connections of one communicator: one FIFO per (channel, peer, direction), created on first
// need and reused by every schedule that crosses that pair on that channel (ring, tree and
// point-to-point share it, since both ends run the same sequence of work per channel).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "device/common/fifo.h"
#include "nccl.h"
#include "transports/transport.h"

struct ncclComm;

namespace accl {

struct Connection {
  std::unique_ptr<ConnRegion> region;
  uint64_t bytes = 0;  // size of the region
  FifoView view;
  const Transport* transport = nullptr;
  int peerPid = 0;  // 0 when the peer is in this process
};

class ConnectionTable {
 public:
  ConnectionTable() = default;
  // Marks every connection closed (waking a peer that sleeps on it) before releasing it.
  ~ConnectionTable();
  ConnectionTable(const ConnectionTable&) = delete;
  ConnectionTable& operator=(const ConnectionTable&) = delete;

  // Connection to send to / receive from `peer` on `channel`, or null if not connected yet.
  Connection* find(int channel, int peer, bool isSend);

  // Connects this rank to `sendPeers` (as sender) and `recvPeers` (as receiver) on `channel`,
  // skipping pairs already connected. The peers must make the mirror call (a peer in my
  // sendPeers has me in its recvPeers) at about the same time; the blobs travel over bootstrap.
  ncclResult_t connect(ncclComm* comm, int channel, const FifoLayout& layout, const std::vector<int>& sendPeers,
                       const std::vector<int>& recvPeers);

  // Closes and drops every connection (the destructor's work, for ncclCommSuspend); the next
  // connect() rebuilds them.
  void releaseAll();

  // Bytes of the regions this rank allocated: the FIFOs of the connections it receives on (the
  // receiver owns a connection's memory).
  uint64_t ownedBytes() const { return ownedBytes_.load(std::memory_order_relaxed); }
  // Bytes of peers' regions this rank maps to send into (the peers' memory, not this rank's).
  uint64_t mappedBytes() const { return mappedBytes_.load(std::memory_order_relaxed); }
  // Connections held (both directions).
  int count() const { return count_.load(std::memory_order_relaxed); }

  // The FIFO layout this rank gives the connections it receives on (NCCL_BUFFSIZE,
  // NCCL_LL_BUFFSIZE; host defaults when unset).
  static FifoLayout hostLayout();

 private:
  std::map<std::tuple<int, int, bool>, std::unique_ptr<Connection>> conns_;
  // Kept as atomics so ncclCommMemStats may read them while another thread connects.
  std::atomic<uint64_t> ownedBytes_{0};
  std::atomic<uint64_t> mappedBytes_{0};
  std::atomic<int> count_{0};
};

}  // namespace accl
