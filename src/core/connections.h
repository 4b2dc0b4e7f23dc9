// The connections of one communicator: one FIFO per (channel, peer, direction), created on first
// need and reused by every schedule that crosses that pair on that channel (ring, tree and
// point-to-point share it, since both ends run the same sequence of work per channel).
#pragma once

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

  // The FIFO layout this rank gives the connections it receives on (NCCL_BUFFSIZE,
  // NCCL_LL_BUFFSIZE; host defaults when unset).
  static FifoLayout hostLayout();

 private:
  std::map<std::tuple<int, int, bool>, std::unique_ptr<Connection>> conns_;
};

}  // namespace accl
