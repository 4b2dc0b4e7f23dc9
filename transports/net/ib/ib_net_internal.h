// Shared state of the IB network (transports/net/ib): the devices (active ports), the memory
// registration cache, the comms and requests, and the wire records (connection metadata, the
// clear-to-send FIFO entries). Discovery: ib_devices.cc; connection setup: ib_connect.cc; data
// path: ib_datapath.cc; the NetDevice itself: ib_net.cc. docs/net_ib.md describes the protocol.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transports/net/ib/ibverbs_table.h"
#include "transports/net/net_device.h"
#include "util/socket_address.h"

namespace accl::ib {

constexpr int kMaxQps = 16;          // NCCL_IB_QPS_PER_CONNECTION upper bound
constexpr int kFifoDepth = 256;      // clear-to-send slots per connection
constexpr int kMaxInflight = 32;     // receives a recv comm keeps posted at once
constexpr size_t kSplitAlign = 128;  // a message's parts on several QPs start on this alignment
constexpr uint64_t kConnMagic = 0x6163636c2d696231ull;  // "accl-ib1"

// One active port of one HCA: what the network calls a device.
struct IbDev {
  std::string devName;  // "mlx5_0"
  int port = 1;
  ibv_context* ctx = nullptr;
  bool ownsCtx = true;  // the first port of a device closes the shared context
  ibv_pd* pd = nullptr;
  ibv_device_attr devAttr{};
  ibv_port_attr portAttr{};
  int gidIndex = 0;
  ibv_gid gid{};
  int speedMbps = 0;
  std::string pciPath;
  bool relaxedOrdering = false;
  bool gdrPeermem = false;
  bool gdrDmaBuf = false;

  // Registration cache: page-aligned regions, shared by every registration that falls inside.
  struct CachedMr {
    uintptr_t begin, end;
    ibv_mr* mr;
    int refs;
  };
  std::mutex mrMu;
  std::vector<std::unique_ptr<CachedMr>> mrCache;
};

// Where the side channel listens (an interface NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY select).
struct IbHandleWire {
  SocketAddress addr;
  uint64_t magic;  // random per listen; the connector must echo it
  int32_t dev;
};
static_assert(sizeof(IbHandleWire) <= kNetHandleBytes, "the handle must fit NCCL's 128 bytes");

// Connection metadata, one record each way over the side channel.
struct IbConnInfo {
  uint64_t magic;     // the handle's magic
  uint32_t nqps;
  uint32_t qpn[kMaxQps];
  uint8_t gid[16];
  uint16_t lid;
  uint8_t linkLayer;
  uint8_t mtu;
  uint64_t fifoAddr;  // sender: its clear-to-send FIFO; receiver: its sizes FIFO
  uint32_t fifoRkey;
  int32_t trafficClass;
  char devName[64];
};

// A clear-to-send entry: the receiver RDMA-writes one per posted buffer into the sender's FIFO.
// 64 bytes, idx last: the sender reads the other fields only after idx shows the slot is current.
struct alignas(64) IbCts {
  uint64_t addr;
  uint64_t size;
  uint32_t rkey;
  uint32_t nreqs;
  int32_t tag;
  uint32_t pad0;
  uint64_t pad[3];
  volatile uint64_t idx;  // slot number + 1
};
static_assert(sizeof(IbCts) == 64, "IbCts is a 64-byte record");

class IbMemHandle : public NetMemHandle {
 public:
  IbDev* dev = nullptr;
  IbDev::CachedMr* entry = nullptr;
  ibv_mr* mr = nullptr;
};

struct IbQps {
  IbDev* dev = nullptr;
  ibv_cq* cq = nullptr;
  std::vector<ibv_qp*> qps;
};

class IbRequest;

// A slot of the sender's view: the receives the peer granted for one FIFO slot and the sends
// matched to them so far.
struct IbSendSlot {
  int nreqs = 0;
  int matched = 0;
  IbRequest* reqs[kNetMaxRecvs] = {};
  int pendingCompletions = 0;
  bool busy = false;
};

struct IbRecvSlot {
  int n = 0;
  IbRequest* req = nullptr;
  int pendingCompletions = 0;
  uint32_t immSize = 0;
  bool busy = false;
};

class IbSendComm : public NetSendComm {
 public:
  const IbvTable* ibv = nullptr;
  IbQps q;
  std::string peer;  // "<ip:port> (GID ...)" for messages
  IbCts* fifo = nullptr;  // [kFifoDepth][kNetMaxRecvs], written by the peer
  ibv_mr* fifoMr = nullptr;
  uint32_t* sizesStage = nullptr;  // [kFifoDepth][kNetMaxRecvs], our source for multi-recv sizes
  ibv_mr* sizesMr = nullptr;
  uint64_t remoteSizesAddr = 0;
  uint32_t remoteSizesRkey = 0;
  uint64_t fifoHead = 0;  // next slot to use
  IbSendSlot slots[kFifoDepth];
  ncclResult_t failed = ncclSuccess;
};

class IbRecvComm : public NetRecvComm {
 public:
  const IbvTable* ibv = nullptr;
  IbQps q;
  std::string peer;
  IbCts* ctsStage = nullptr;  // [kFifoDepth][kNetMaxRecvs], source of our CTS writes
  ibv_mr* ctsMr = nullptr;
  uint32_t* sizes = nullptr;  // [kFifoDepth][kNetMaxRecvs], written by the peer
  ibv_mr* sizesMr = nullptr;
  uint64_t remoteFifoAddr = 0;
  uint32_t remoteFifoRkey = 0;
  uint64_t fifoTail = 0;  // next slot to grant
  int inflight = 0;
  IbRecvSlot slots[kFifoDepth];
  ncclResult_t failed = ncclSuccess;
};

class IbRequest : public NetRequest {
 public:
  bool isSend = false;
  IbSendComm* sendComm = nullptr;
  IbRecvComm* recvComm = nullptr;
  uint64_t slot = 0;
  bool done = false;
  // Send: one buffer.
  void* data = nullptr;
  size_t size = 0;
  IbMemHandle* mh = nullptr;
  // Receive: n buffers and the sizes that arrived.
  int n = 0;
  size_t sizes[kNetMaxRecvs] = {};
};

// --- ib_devices.cc ---
// Finds the active ports (NCCL_IB_HCA applied) and opens them. An empty result is not an error.
ncclResult_t discoverIbDevices(const IbvTable* ibv, std::vector<std::unique_ptr<IbDev>>* out);
void closeIbDevice(const IbvTable* ibv, IbDev* dev);
std::string gidString(const uint8_t gid[16]);

// --- ib_datapath.cc ---
ncclResult_t ibRegMr(const IbvTable* ibv, IbDev* dev, void* data, size_t size, IbMemHandle** out);
ncclResult_t ibDeregMr(const IbvTable* ibv, IbMemHandle* mh);
ncclResult_t ibIsend(IbSendComm* comm, void* data, size_t size, int tag, IbMemHandle* mh, IbRequest** req);
ncclResult_t ibIrecv(IbRecvComm* comm, int n, void** data, size_t* sizes, int* tags, IbMemHandle** mhs,
                     IbRequest** req);
ncclResult_t ibTest(IbRequest* req, int* done, size_t* sizes);
// Creates the CQ and QPs (INIT) of a connection end.
ncclResult_t ibCreateQps(const IbvTable* ibv, IbDev* dev, int nqps, int remoteAccess, IbQps* out);
// INIT -> RTR -> RTS towards the peer's QPs.
ncclResult_t ibConnectQps(const IbvTable* ibv, IbQps* q, const IbConnInfo& remote, int trafficClass);
void ibDestroyQps(const IbvTable* ibv, IbQps* q);

}  // namespace accl::ib

namespace accl::ib {

// --- ib_connect.cc: connection setup over a TCP side channel (non-blocking state machines) ---
struct IbAcceptInProgress;
class IbListenComm : public NetListenComm {
 public:
  ~IbListenComm() override;
  const IbvTable* ibv = nullptr;
  IbDev* dev = nullptr;
  int fd = -1;
  uint64_t magic = 0;
  SocketAddress addr;
  struct Candidate {
    int fd;
    SocketAddress peer;
    int64_t sinceNs;
    IbConnInfo info;
    size_t got;
  };
  std::vector<Candidate> candidates;
  std::unique_ptr<IbAcceptInProgress> accepting;
};

ncclResult_t ibListen(const IbvTable* ibv, IbDev* dev, int devIndex, const SocketAddress& bindAddr,
                      NetHandle* handle, IbListenComm** out);
// One step of accepting; *out stays null until a connection is complete.
ncclResult_t ibAcceptStep(IbListenComm* l, IbRecvComm** out);

struct IbConnectInProgress;
void ibFreeConnectState(IbConnectInProgress* s);
struct IbConnectStateDeleter {
  void operator()(IbConnectInProgress* s) const { ibFreeConnectState(s); }
};
using IbConnectState = std::unique_ptr<IbConnectInProgress, IbConnectStateDeleter>;
// Starts or advances a connection to `handle`; *out stays null until it is complete. `state`
// holds the connection in progress between calls (reset when done or failed).
ncclResult_t ibConnectStep(const IbvTable* ibv, IbDev* dev, const NetCommConfig& config, const NetHandle& handle,
                           IbConnectState* state, IbSendComm** out);

void ibFreeSendComm(IbSendComm* c);
void ibFreeRecvComm(IbRecvComm* c);

}  // namespace accl::ib
