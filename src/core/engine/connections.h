// The connections of one communicator: one FIFO per (channel, peer, direction), created on first
// need and reused by every schedule that crosses that pair on that channel (ring, tree and
// point-to-point share it, since both ends run the same sequence of work per channel). It also
// keeps each transport's opaque per-communicator state (TransportCommState, transports/
// transport.h) and reaches it only through the transport's hooks.
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

// One end of one connection of this rank: the transport's end (view, resources, bytes) and who
// is at the other end.
struct Connection : ConnEnd {
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  // Frees the end through its transport (if set up).
  ~Connection();

  int peer = -1;
  int channel = 0;
  int peerPid = 0;  // 0 when the peer is in this process
};

// The host backend's Simple FIFO per connection when NCCL_BUFFSIZE is unset: 1 MiB (8 steps of
// 128 KiB, cache-sized for shared-memory peers), 4 MiB (NCCL's size) in a communicator that spans
// hosts. Over the network every step costs the proxy a wake-up or two and a few system calls:
// 512 KiB steps took a 2-host 256 MiB all-reduce from 1.5 to 2.2 GB/s here (docs/multihost.md).
// Small collectives still take 128 KiB steps (HostBackend::chunkElems).
constexpr size_t kHostSimpleBuffBytes = size_t(1) << 20;
constexpr size_t kHostNetSimpleBuffBytes = size_t(4) << 20;

class ConnectionTable {
 public:
  ConnectionTable();
  // Marks every connection closed (waking a peer that sleeps on it) before releasing it, then
  // deletes the transports' states.
  ~ConnectionTable();
  ConnectionTable(const ConnectionTable&) = delete;
  ConnectionTable& operator=(const ConnectionTable&) = delete;

  // Connection to send to / receive from `peer` on `channel`, or null if not connected yet.
  Connection* find(int channel, int peer, bool isSend);

  // Connects this rank to `sendPeers` (as sender) and `recvPeers` (as receiver) on `channel`,
  // skipping pairs already connected. The peers must make the mirror call (a peer in my
  // sendPeers has me in its recvPeers) at about the same time; the blobs travel over bootstrap.
  // Both ends of each pair set up, exchange blobs, connect and ack (transports/transport.h).
  ncclResult_t connect(ncclComm* comm, int channel, const FifoLayout& layout, const std::vector<int>& sendPeers,
                       const std::vector<int>& recvPeers);

  // The communicator's state of `transport` (the registry's index), made on first use through
  // the transport's commInit hook (by connect(), or by init, whose tuner asks the network for its
  // device); null for a transport without one. Kept until the table goes, across releaseAll().
  TransportCommState* commState(ncclComm* comm, int transport);

  // Closes every connection (marks both of its counters closed, waking a peer that sleeps on
  // them), then frees them through their transports (the destructor's work, for
  // ncclCommSuspend); the next connect() rebuilds them.
  void releaseAll();

  // Runs the drain hook of every transport that has a state here: the network's senders hand
  // over what their Prims already published (bounded), then its proxy stops. Called before this
  // rank tells its peers it left, so that a peer still receiving the end of the last operation
  // gets the data, not "closed its communicator". Nothing is freed; releaseAll() still runs later.
  void drainTransports();

  // Tells every transport that has a state here that ncclCommDeregister took back the buffer
  // registration `id`, so that none keeps a device registration of that memory.
  void bufferDeregistered(uint64_t id);

  // Bytes this rank allocated for its connections: the FIFOs it receives on (slots and tail) and
  // the head counters of those it sends on.
  uint64_t ownedBytes() const { return ownedBytes_.load(std::memory_order_relaxed); }
  // Bytes of peers' memory this rank maps (their FIFOs it sends into, their heads it releases).
  uint64_t mappedBytes() const { return mappedBytes_.load(std::memory_order_relaxed); }
  // Connections held (both directions).
  int count() const { return count_.load(std::memory_order_relaxed); }

  // The FIFO layout this rank gives the connections it receives on (NCCL_BUFFSIZE,
  // NCCL_LL_BUFFSIZE; host defaults when unset: kHostSimpleBuffBytes, kHostNetSimpleBuffBytes for
  // a communicator that spans hosts).
  static FifoLayout hostLayout(bool acrossHosts);

  // The communicator's profiler plugin context (null: none), handed to each transport's state.
  prof::CommProfiler* profiler = nullptr;

 private:
  // Each transport's state for this communicator, by registry index (null until first use);
  // declared before conns_ so that it outlives them (the network's proxy and device serve its
  // connections until they are freed).
  std::vector<std::unique_ptr<TransportCommState>> states_;
  std::map<std::tuple<int, int, bool>, std::unique_ptr<Connection>> conns_;
  // Kept as atomics so ncclCommMemStats may read them while another thread connects.
  std::atomic<uint64_t> ownedBytes_{0};
  std::atomic<uint64_t> mappedBytes_{0};
  std::atomic<int> count_{0};
};

}  // namespace accl
