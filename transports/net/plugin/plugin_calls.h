// PluginCalls: every net plugin ABI version (v6..v12, net_plugin_abi.h) seen through one call
// set, shaped like the newest ABI but with accl's types. One implementation per version bridges
// the differences: int sizes before v9 (checked, never truncated), the per-communicator init
// context of v11+ (older plugins get one process-wide init, arranged by PluginLibrary), the
// traffic class (a connect argument in v10, an init argument from v11, absent before), the
// device-offload handle (accl never requests offload) and the profiler arguments of v10+ (the
// callback of profiler/net_plugin_events.h and each request's handle; older plugins get neither).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "nccl.h"
#include "transports/net/net_device.h"
#include "transports/net/plugin/net_plugin_abi.h"

namespace accl::netplugin {

class PluginCalls {
 public:
  virtual ~PluginCalls() = default;

  virtual int version() const = 0;
  virtual const char* name() const = 0;
  // v11+: init/finalize per communicator. Before: one init per loaded library, no finalize.
  bool initPerComm() const { return version() >= 11; }

  virtual ncclResult_t init(void** ctx, uint64_t commId, int trafficClass, LogFn log) = 0;
  virtual ncclResult_t finalize(void* ctx) = 0;
  virtual ncclResult_t devices(int* count) = 0;
  // Fills every NetProperties field; what an older version cannot tell gets NCCL's defaults.
  virtual ncclResult_t getProperties(int dev, NetProperties* props) = 0;

  virtual ncclResult_t listen(void* ctx, int dev, void* handle, void** listenComm) = 0;
  virtual ncclResult_t connect(void* ctx, int dev, int trafficClass, void* handle, void** sendComm) = 0;
  virtual ncclResult_t accept(void* listenComm, void** recvComm) = 0;
  virtual ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) = 0;
  virtual ncclResult_t deregMr(void* comm, void* mhandle) = 0;
  // profHandle(s): the request's profiler handle (NetDevice::isendProfiled), null for none.
  virtual ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* profHandle,
                             void** request) = 0;
  // n <= kNetMaxRecvs; profHandles null or n entries.
  virtual ncclResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, int* tags, void** mhandles,
                             void** profHandles, void** request) = 0;
  virtual ncclResult_t iflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) = 0;
  // sizes: room for kNetMaxRecvs ints.
  virtual ncclResult_t test(void* request, int* done, int* sizes) = 0;
  virtual ncclResult_t closeSend(void* sendComm) = 0;
  virtual ncclResult_t closeRecv(void* recvComm) = 0;
  virtual ncclResult_t closeListen(void* listenComm) = 0;
};

// The calls for `table` (the object exported as ncclNetPlugin_v<version>), or null when a member
// accl needs is missing; *missing then names it.
std::unique_ptr<PluginCalls> makePluginCalls(int version, const void* table, const char** missing);

}  // namespace accl::netplugin
