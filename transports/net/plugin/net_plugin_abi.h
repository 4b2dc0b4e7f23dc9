// The binary interface of external NCCL net plugins (`ncclNetPlugin_v6` .. `_v12`), declared in
// accl's own names. Only the memory layout is NCCL's: every struct below has the members of the
// matching NCCL release, of the same types, in the same order, so a table exported by a plugin
// built against NCCL's headers can be read through it. Nothing here is accl policy; the loader
// (plugin_library.h) and the adapter (plugin_net_device.h) decide what to do with it.
//
// What changed between versions (what the adapter has to bridge):
//   v6   sizes are int (regMr too); connect/accept have no device-offload handle.
//   v7   device-offload handle on connect/accept; getDeviceMr, irecvConsumed; props gain the
//        offload type/version.
//   v8   regMr takes size_t; props gain regIsGlobal.
//   v9   isend/irecv take size_t; props gain forceFlush, virtual-NIC members, max transfer sizes;
//        makeVDevice.
//   v10  init takes a profiler callback; connect takes a per-connection config (traffic class);
//        isend/irecv take profiler handles.
//   v11  init is per communicator: it returns a context, receives the comm id and config, and
//        listen/connect take that context; finalize(ctx) and setNetAttr(ctx) are added; props gain
//        maxMultiRequestSize.
//   v12  virtual NICs hold 8 devices; props gain rail and plane ids.
// test() and iflush() report int sizes in every version.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace accl::netplugin {

constexpr int kOldestVersion = 6;
constexpr int kNewestVersion = 12;

// Values NCCL uses at the boundary.
constexpr int kTrafficClassUndef = -1;                // PluginCommConfig::trafficClass "not set"
constexpr size_t kPreV9MaxMessageBytes = 1ull << 30;  // what NCCL lets an int-sized plugin move at once
constexpr size_t kPreV9MaxCollBytes = 512ull << 20;
constexpr size_t kMaxNetBytes = 1ull << 40;  // ceiling NCCL accepts for maxP2pBytes / maxCollBytes

// The logger handed to init (NCCL's ncclDebugLogger_t: level and subsystem bits as NCCL's).
using LogFn = void (*)(int level, unsigned long subsys, const char* file, int line, const char* fmt, ...);
// The profiler callback handed to v10+ init.
using ProfilerFn = ncclResult_t (*)(void** eventHandle, int type, void* parentHandle, int64_t pluginId, void* extData);

// Device-offload description filled by a plugin when asked (v7+). accl never asks: it passes a
// pointer to a null pointer.
struct DeviceHandle {
  int type;
  int version;
  void* handle;
  size_t size;
  int needsProxyProgress;
};

// --- Device properties, one layout per version ---
struct PropsV6 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int speedMbps;
  int port;
  float latencyUs;
  int maxComms;
  int maxRecvs;
};

struct PropsV7 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int speedMbps;
  int port;
  float latencyUs;
  int maxComms;
  int maxRecvs;
  int deviceType;
  int deviceVersion;
};

struct PropsV8 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speedMbps;
  int port;
  float latencyUs;
  int maxComms;
  int maxRecvs;
  int deviceType;
  int deviceVersion;
};

// A virtual NIC: the physical devices it merges (4 before v12, 8 from v12).
template <int N>
struct VirtualNic {
  int count;
  int devs[N];
};

// v9 and v10 share one layout; v11 appends maxMultiRequestSize; v12 widens the virtual NIC and
// appends the rail/plane ids. (Written out flat so each stays a standard-layout struct.)
struct PropsV9 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speedMbps;
  int port;
  float latencyUs;
  int maxComms;
  int maxRecvs;
  int deviceType;
  int deviceVersion;
  VirtualNic<4> vNic;
  size_t maxP2pBytes;
  size_t maxCollBytes;
};
using PropsV10 = PropsV9;

struct PropsV11 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speedMbps;
  int port;
  float latencyUs;
  int maxComms;
  int maxRecvs;
  int deviceType;
  int deviceVersion;
  VirtualNic<4> vNic;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
};

struct PropsV12 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speedMbps;
  int port;
  float latencyUs;
  int maxComms;
  int maxRecvs;
  int deviceType;
  int deviceVersion;
  VirtualNic<8> vNic;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId;
  int16_t planeId;
};

// Per-connection (v10) or per-communicator (v11+) settings.
struct PluginCommConfig {
  int trafficClass;
};

// setNetAttr's argument (v11+); accl does not call setNetAttr.
struct CommAttr {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
};
struct NetAttr {
  CommAttr send;
  CommAttr recv;
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
};

// --- Function tables ---
// Members every version has, after `name`, `init`, `devices`, `getProperties`, `listen`,
// `connect`, `accept` (whose signatures vary) are spelled out in each table anyway, so that each
// struct reads as the whole ABI of its version.

struct NetV6 {
  const char* name;
  ncclResult_t (*init)(LogFn log);
  ncclResult_t (*devices)(int* count);
  ncclResult_t (*getProperties)(int dev, PropsV6* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm);
  ncclResult_t (*regMr)(void* comm, void* data, int size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
};

// v7: v6 plus device-offload handles and two offload entry points. v8 only changes regMr's size
// and the properties struct, so both come from one template.
template <class Props, class RegSize>
struct NetV7Layout {
  const char* name;
  ncclResult_t (*init)(LogFn log);
  ncclResult_t (*devices)(int* count);
  ncclResult_t (*getProperties)(int dev, Props* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, RegSize size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** deviceMhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
};
using NetV7 = NetV7Layout<PropsV7, int>;
using NetV8 = NetV7Layout<PropsV8, size_t>;

struct NetV9 {
  const char* name;
  ncclResult_t (*init)(LogFn log);
  ncclResult_t (*devices)(int* count);
  ncclResult_t (*getProperties)(int dev, PropsV9* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** deviceMhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* dev, VirtualNic<4>* nic);
};

struct NetV10 {
  const char* name;
  ncclResult_t (*init)(LogFn log, ProfilerFn profiler);
  ncclResult_t (*devices)(int* count);
  ncclResult_t (*getProperties)(int dev, PropsV10* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, PluginCommConfig* config, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* profHandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                        void** profHandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** deviceMhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* dev, VirtualNic<4>* nic);
};

// v11 and v12 differ only in their properties and virtual-NIC width.
template <class Props, int NicDevs>
struct NetV11Layout {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, PluginCommConfig* config, LogFn log, ProfilerFn profiler);
  ncclResult_t (*devices)(int* count);
  ncclResult_t (*getProperties)(int dev, Props* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* profHandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                        void** profHandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** deviceMhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* dev, VirtualNic<NicDevs>* nic);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*setNetAttr)(void* ctx, NetAttr* attr);
};
using NetV11 = NetV11Layout<PropsV11, 4>;
using NetV12 = NetV11Layout<PropsV12, 8>;

// Layout checks against the sizes NCCL's structs have on LP64.
static_assert(sizeof(PropsV6) == 48 && sizeof(PropsV7) == 56 && sizeof(PropsV8) == 64);
static_assert(sizeof(PropsV9) == 104 && offsetof(PropsV9, maxP2pBytes) == 88);
static_assert(sizeof(PropsV11) == 112 && offsetof(PropsV11, maxMultiRequestSize) == 104);
static_assert(sizeof(PropsV12) == 128 && offsetof(PropsV12, railId) == 124);
static_assert(sizeof(NetV6) == 17 * sizeof(void*) && sizeof(NetV8) == 19 * sizeof(void*));
static_assert(sizeof(NetV9) == 20 * sizeof(void*) && sizeof(NetV10) == 20 * sizeof(void*));
static_assert(sizeof(NetV12) == 22 * sizeof(void*));

// The exported symbol of each version.
inline const char* symbolFor(int version) {
  switch (version) {
    case 6:
      return "ncclNetPlugin_v6";
    case 7:
      return "ncclNetPlugin_v7";
    case 8:
      return "ncclNetPlugin_v8";
    case 9:
      return "ncclNetPlugin_v9";
    case 10:
      return "ncclNetPlugin_v10";
    case 11:
      return "ncclNetPlugin_v11";
    case 12:
      return "ncclNetPlugin_v12";
    default:
      return nullptr;
  }
}

}  // namespace accl::netplugin
