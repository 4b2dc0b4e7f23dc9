// PluginNetDevice: a NetDevice served by an external net plugin (PluginLibrary), one per
// communicator. It wraps the plugin's opaque comms, registrations and requests in the NetDevice
// object types, keeps the per-communicator context of v11+ plugins, and holds the library loaded
// while it lives. Released with comms or listeners still open (an abort), it closes them first.
//
// Connection handles: NCCL plugins may keep connection progress inside the handle bytes between
// connect() retries (NCCL hands them the same buffer each time), while NetDevice::connect takes
// the handle as const. The adapter therefore gives the plugin one private, mutable copy per
// pending connection (found again by the handle's contents) until connect returns a comm or
// fails.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "transports/net/net_device.h"
#include "transports/net/plugin/plugin_library.h"

namespace accl::netplugin {

class PluginNetDevice final : public NetDevice {
 public:
  // Attaches one communicator to `library` (init per the plugin's version, device count). On
  // failure *out stays null and the plugin's result is returned (the caller logs and moves on).
  static ncclResult_t create(std::shared_ptr<PluginLibrary> library, uint64_t commId, int trafficClass,
                             std::unique_ptr<PluginNetDevice>* out);
  ~PluginNetDevice() override;

  int pluginVersion() const { return library_->version(); }
  const std::string& pluginFile() const { return library_->file(); }

  const char* name() const override { return library_->name().c_str(); }
  int deviceCount() const override { return deviceCount_; }
  ncclResult_t getProperties(int dev, NetProperties* props) override;

  ncclResult_t listen(int dev, NetHandle* handle, NetListenComm** listenComm) override;
  ncclResult_t connect(int dev, const NetCommConfig& config, const NetHandle& handle, NetSendComm** sendComm) override;
  ncclResult_t accept(NetListenComm* listenComm, NetRecvComm** recvComm) override;

  ncclResult_t regMr(void* comm, void* data, size_t size, int type, NetMemHandle** mhandle) override;
  ncclResult_t deregMr(void* comm, NetMemHandle* mhandle) override;

  ncclResult_t isend(NetSendComm* comm, void* data, size_t size, int tag, NetMemHandle* mhandle,
                     NetRequest** request) override;
  ncclResult_t irecv(NetRecvComm* comm, int n, void** data, size_t* sizes, int* tags, NetMemHandle** mhandles,
                     NetRequest** request) override;
  ncclResult_t isendProfiled(NetSendComm* comm, void* data, size_t size, int tag, NetMemHandle* mhandle,
                             void* profHandle, NetRequest** request) override;
  ncclResult_t irecvProfiled(NetRecvComm* comm, int n, void** data, size_t* sizes, int* tags,
                             NetMemHandle** mhandles, void** profHandles, NetRequest** request) override;
  ncclResult_t iflush(NetRecvComm* comm, int n, void** data, int* sizes, NetMemHandle** mhandles,
                      NetRequest** request) override;
  ncclResult_t test(NetRequest* request, int* done, size_t* sizes) override;

  ncclResult_t closeSend(NetSendComm* comm) override;
  ncclResult_t closeRecv(NetRecvComm* comm) override;
  ncclResult_t closeListen(NetListenComm* comm) override;

 private:
  PluginNetDevice(std::shared_ptr<PluginLibrary> library, void* ctx, int deviceCount, int trafficClass);
  // The plugin's comm behind a NetSendComm* / NetRecvComm* passed as void* (regMr / deregMr).
  ncclResult_t pluginComm(void* comm, const char* call, void** raw);
  ncclResult_t checkDev(int dev, const char* call) const;
  ncclResult_t failed(const char* call, ncclResult_t res) const;
  // closeSend / closeRecv / closeListen: forgets `comm` in `registry`, closes the plugin's handle
  // in its wrapper with `close`, frees the wrapper.
  template <class Wrapper, class Comm, class Registry>
  ncclResult_t closeWrapped(Comm* comm, Registry& registry, ncclResult_t (PluginCalls::*close)(void*),
                            const char* call);

  std::shared_ptr<PluginLibrary> library_;
  PluginCalls& calls_;
  void* ctx_;
  int deviceCount_;
  int trafficClass_;

  std::mutex mutex_;
  // Open comms, so that regMr/deregMr can find the plugin's comm behind a void*, and so that a
  // device released with comms still open (an abort) closes them before the plugin goes away.
  struct OpenComm {
    void* raw;
    NetSendComm* send;  // exactly one of send / recv is set
    NetRecvComm* recv;
  };
  std::unordered_map<const void*, OpenComm> comms_;
  std::unordered_set<NetListenComm*> listens_;
  std::map<std::string, std::unique_ptr<NetHandle>> pendingConnects_;  // handle bytes -> plugin's copy
};

}  // namespace accl::netplugin
