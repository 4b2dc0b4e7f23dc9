// NetDevice: the network as the proxy sees it — the semantics of NCCL's net plugin API (v10 and
// later), as a C++ interface. The built-in socket and ib devices implement it, and external
// `libnccl-net*.so` plugins are adapted behind it (transports/net/plugin/). See docs/net.md for
// the rules every implementation follows; in short:
//
//   - nothing blocks: connect / accept return ncclSuccess with a null comm until the connection
//     is ready (the caller retries); isend / irecv return a null request when they cannot take
//     more work now (the caller retries); test never waits;
//   - a message is matched by tag within one (sendComm, recvComm) pair, in posting order;
//   - a receive may be larger than the matching send: test reports the size that arrived;
//   - errors are ncclSystemError (local) or ncclRemoteError (the peer or the link), with a WARN
//     naming the device and the peer's address.
//
// Objects are owned by the NetDevice that made them; the caller frees them with the close* and
// deregMr calls, never with delete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"

namespace accl {

// Where a buffer may live for isend / irecv (NCCL's NCCL_PTR_* bits).
enum NetPtrKind : int { kNetPtrHost = 1, kNetPtrCuda = 2, kNetPtrDmaBuf = 4 };

constexpr size_t kNetHandleBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE
constexpr int kNetMaxRecvs = 8;          // most buffers one grouped irecv may carry
constexpr size_t kNetSizeUnknown = SIZE_MAX;  // a size test did not report (older plugins never do)

struct NetProperties {
  std::string name;     // e.g. "eth0", "mlx5_0:1"
  std::string pciPath;  // sysfs path of the device, "" when unknown
  uint64_t guid = 0;
  int ptrSupport = kNetPtrHost;  // NetPtrKind bits
  bool regIsGlobal = false;      // one registration serves every comm of the device
  bool forceFlush = false;
  // isend reads any host memory of the process without a registration (the mhandle is unused):
  // the proxy may send a step straight from a user buffer (transports/net/net_user_send.h).
  bool sendsUnregistered = false;
  int speedMbps = 0;
  int port = 0;
  float latencyUs = 0;
  int maxComms = 65536;
  int maxRecvs = 1;
  size_t maxP2pBytes = size_t(1) << 31;
  size_t maxCollBytes = size_t(1) << 31;
  // The device relies on NCCL's drive order: a comm's requests are tested oldest first (it may
  // complete them in posting order only). Every external plugin says so; the built-in ones do not.
  bool testInOrder = false;
  // GPUDirect RDMA: how the NIC could reach GPU memory, recorded for the CUDA backend.
  bool gdrPeermem = false;  // nvidia-peermem / nv_mem present
  bool gdrDmaBuf = false;   // ibv_reg_dmabuf_mr available
};

// A listen handle: produced by listen() on the receiving host, carried to the sender over the
// bootstrap, consumed by connect(). Opaque to everyone but the device that made it.
struct NetHandle {
  unsigned char bytes[kNetHandleBytes];
};

// Per-connection settings (ncclNetCommConfig_t).
struct NetCommConfig {
  int trafficClass = -1;  // -1: undefined
};

class NetListenComm {
 public:
  virtual ~NetListenComm() = default;
};
class NetSendComm {
 public:
  virtual ~NetSendComm() = default;
};
class NetRecvComm {
 public:
  virtual ~NetRecvComm() = default;
};
// A registration (regMr) and an in-flight operation (isend / irecv / iflush).
class NetMemHandle {
 public:
  virtual ~NetMemHandle() = default;
};
class NetRequest {
 public:
  virtual ~NetRequest() = default;
};

class NetDevice {
 public:
  virtual ~NetDevice() = default;

  // The network's name as NCCL_NET selects it ("Socket", "IB", or a plugin's name).
  virtual const char* name() const = 0;
  // Devices (NICs) this network offers; 0 means it cannot be used here.
  virtual int deviceCount() const = 0;
  virtual ncclResult_t getProperties(int dev, NetProperties* props) = 0;

  // Receiving side: starts listening on `dev` and fills `handle` for the peer.
  virtual ncclResult_t listen(int dev, NetHandle* handle, NetListenComm** listenComm) = 0;
  // Sending side: *sendComm stays null until the connection is established (call again).
  virtual ncclResult_t connect(int dev, const NetCommConfig& config, const NetHandle& handle,
                               NetSendComm** sendComm) = 0;
  // Receiving side: *recvComm stays null until a peer's connect has arrived (call again).
  virtual ncclResult_t accept(NetListenComm* listenComm, NetRecvComm** recvComm) = 0;

  // Registers [data, data + size) of pointer kind `type` for use with one comm (or every comm
  // when regIsGlobal). `comm` is a NetSendComm* or NetRecvComm*.
  virtual ncclResult_t regMr(void* comm, void* data, size_t size, int type, NetMemHandle** mhandle) = 0;
  virtual ncclResult_t deregMr(void* comm, NetMemHandle* mhandle) = 0;

  // Posts a send of `size` bytes; *request stays null when the device cannot take it now.
  virtual ncclResult_t isend(NetSendComm* comm, void* data, size_t size, int tag, NetMemHandle* mhandle,
                             NetRequest** request) = 0;
  // Posts `n` (1..maxRecvs) receives as one request, each buffer with its own size and tag.
  virtual ncclResult_t irecv(NetRecvComm* comm, int n, void** data, size_t* sizes, int* tags,
                             NetMemHandle** mhandles, NetRequest** request) = 0;
  // The same posts carrying the request's profiler handle (NCCL's phandle): the
  // prof::NetStepParent of the FIFO step the request moves, or null. A device whose requests
  // report profiler events of their own (an external v10+ plugin, profiler/net_plugin_events.h)
  // hands it on; the built-in devices report none and post as above.
  virtual ncclResult_t isendProfiled(NetSendComm* comm, void* data, size_t size, int tag, NetMemHandle* mhandle,
                                     void* profHandle, NetRequest** request) {
    return isend(comm, data, size, tag, mhandle, request);
  }
  // `profHandles`: one per buffer (null: none at all).
  virtual ncclResult_t irecvProfiled(NetRecvComm* comm, int n, void** data, size_t* sizes, int* tags,
                                     NetMemHandle** mhandles, void** profHandles, NetRequest** request) {
    return irecv(comm, n, data, sizes, tags, mhandles, request);
  }
  // Makes received data visible to the GPU (GPUDirect RDMA); *request null when nothing to do.
  virtual ncclResult_t iflush(NetRecvComm* comm, int n, void** data, int* sizes, NetMemHandle** mhandles,
                              NetRequest** request) = 0;
  // *done = 1 once the request finished; then `sizes` (may be null) gets the bytes of each buffer
  // (kNetSizeUnknown where the device does not say: callers must know what they posted) and the
  // request is freed by the device.
  virtual ncclResult_t test(NetRequest* request, int* done, size_t* sizes) = 0;

  virtual ncclResult_t closeSend(NetSendComm* comm) = 0;
  virtual ncclResult_t closeRecv(NetRecvComm* comm) = 0;
  virtual ncclResult_t closeListen(NetListenComm* comm) = 0;
};

}  // namespace accl
