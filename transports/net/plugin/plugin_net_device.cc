// PluginNetDevice: NetDevice calls forwarded to an external net plugin (see plugin_net_device.h).
#include "transports/net/plugin/plugin_net_device.h"

#include <cstring>
#include <unordered_set>

#include "util/check.h"
#include "util/log.h"

namespace accl::netplugin {
namespace {

// The NetDevice object types around the plugin's opaque pointers. A send or receive comm also
// keeps the requests it has handed out and not yet seen done, so closing it frees them (the
// interface's rule); one thread drives a comm at a time, so that set needs no lock.
struct PluginRequest;
struct RequestOwner {
  std::unordered_set<PluginRequest*> live;
  ~RequestOwner();
};
struct PluginRequest final : NetRequest {
  PluginRequest(void* r, int count, RequestOwner* o) : raw(r), n(count), owner(o) { owner->live.insert(this); }
  ~PluginRequest() override { owner->live.erase(this); }
  void* raw;
  int n;  // buffers in the request: how many sizes test() reports
  RequestOwner* owner;
};
RequestOwner::~RequestOwner() {
  while (!live.empty()) delete *live.begin();
}

struct PluginListenComm final : NetListenComm {
  explicit PluginListenComm(void* r) : raw(r) {}
  void* raw;
};
struct PluginSendComm final : NetSendComm, RequestOwner {
  explicit PluginSendComm(void* r) : raw(r) {}
  void* raw;
};
struct PluginRecvComm final : NetRecvComm, RequestOwner {
  explicit PluginRecvComm(void* r) : raw(r) {}
  void* raw;
};
struct PluginMemHandle final : NetMemHandle {
  explicit PluginMemHandle(void* r) : raw(r) {}
  void* raw;
};

void* rawOf(NetMemHandle* m) { return m ? static_cast<PluginMemHandle*>(m)->raw : nullptr; }

}  // namespace

ncclResult_t PluginNetDevice::create(std::shared_ptr<PluginLibrary> library, uint64_t commId, int trafficClass,
                                     std::unique_ptr<PluginNetDevice>* out) {
  out->reset();
  void* ctx = nullptr;
  int count = 0;
  ncclResult_t res = library->attach(commId, trafficClass, &ctx, &count);
  if (res != ncclSuccess) return res;
  out->reset(new PluginNetDevice(std::move(library), ctx, count, trafficClass));
  return ncclSuccess;
}

PluginNetDevice::PluginNetDevice(std::shared_ptr<PluginLibrary> library, void* ctx, int deviceCount, int trafficClass)
    : library_(std::move(library)),
      calls_(library_->calls()),
      ctx_(ctx),
      deviceCount_(deviceCount),
      trafficClass_(trafficClass) {}

PluginNetDevice::~PluginNetDevice() {
  if (!comms_.empty() || !listens_.empty())
    ACCL_INFO(ACCL_LOG_NET, "NET/Plugin %s: closing %zu connection(s) and %zu listener(s) left open", name(),
              comms_.size(), listens_.size());
  while (!comms_.empty()) {
    OpenComm open = comms_.begin()->second;
    if (open.send)
      closeSend(open.send);
    else
      closeRecv(open.recv);
  }
  while (!listens_.empty()) closeListen(*listens_.begin());
  library_->detach(ctx_);
}

// The plugin (through its logger) or the version adapter has already written the WARN that
// explains the failure; this adds the call that returned it.
ncclResult_t PluginNetDevice::failed(const char* call, ncclResult_t res) const {
  ACCL_INFO(ACCL_LOG_NET, "NET/Plugin %s: %s returned %s", library_->name().c_str(), call, ncclGetErrorString(res));
  return res;
}

ncclResult_t PluginNetDevice::checkDev(int dev, const char* call) const {
  if (dev < 0 || dev >= deviceCount_)
    return fail(ncclInvalidArgument, "NET/Plugin %s: %s: dev = %d is not one of its %d device(s)",
                library_->name().c_str(), call, dev, deviceCount_);
  return ncclSuccess;
}

ncclResult_t PluginNetDevice::getProperties(int dev, NetProperties* props) {
  ACCL_CHECK(checkDev(dev, "getProperties"));
  ncclResult_t res = calls_.getProperties(dev, props);
  if (res != ncclSuccess) return failed("getProperties", res);
  props->testInOrder = true;  // NCCL tests a comm's requests oldest first: a plugin may rely on it
  return ncclSuccess;
}

ncclResult_t PluginNetDevice::listen(int dev, NetHandle* handle, NetListenComm** listenComm) {
  *listenComm = nullptr;
  ACCL_CHECK(checkDev(dev, "listen"));
  std::memset(handle->bytes, 0, sizeof(handle->bytes));
  void* raw = nullptr;
  ncclResult_t res = calls_.listen(ctx_, dev, handle->bytes, &raw);
  if (res != ncclSuccess) return failed("listen", res);
  if (!raw) return fail(ncclInternalError, "NET/Plugin %s: listen returned no listen comm", name());
  auto* wrapper = new PluginListenComm(raw);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    listens_.insert(wrapper);
  }
  *listenComm = wrapper;
  return ncclSuccess;
}

ncclResult_t PluginNetDevice::connect(int dev, const NetCommConfig& config, const NetHandle& handle,
                                      NetSendComm** sendComm) {
  *sendComm = nullptr;
  ACCL_CHECK(checkDev(dev, "connect"));
  std::string key(reinterpret_cast<const char*>(handle.bytes), sizeof(handle.bytes));
  NetHandle* working;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = pendingConnects_[key];
    if (!slot) slot = std::make_unique<NetHandle>(handle);
    working = slot.get();
  }
  int trafficClass = config.trafficClass != kTrafficClassUndef ? config.trafficClass : trafficClass_;
  void* raw = nullptr;
  ncclResult_t res = calls_.connect(ctx_, dev, trafficClass, working->bytes, &raw);
  if (res != ncclSuccess || raw) {  // finished, either way: the working copy is no longer needed
    std::lock_guard<std::mutex> lock(mutex_);
    pendingConnects_.erase(key);
    if (raw) {
      auto* wrapper = new PluginSendComm(raw);
      comms_.emplace(static_cast<NetSendComm*>(wrapper), OpenComm{raw, wrapper, nullptr});
      *sendComm = wrapper;
    }
  }
  return res == ncclSuccess ? res : failed("connect", res);
}

ncclResult_t PluginNetDevice::accept(NetListenComm* listenComm, NetRecvComm** recvComm) {
  *recvComm = nullptr;
  void* raw = nullptr;
  ncclResult_t res = calls_.accept(static_cast<PluginListenComm*>(listenComm)->raw, &raw);
  if (res != ncclSuccess) return failed("accept", res);
  if (raw) {
    auto* wrapper = new PluginRecvComm(raw);
    std::lock_guard<std::mutex> lock(mutex_);
    comms_.emplace(static_cast<NetRecvComm*>(wrapper), OpenComm{raw, nullptr, wrapper});
    *recvComm = wrapper;
  }
  return ncclSuccess;
}

ncclResult_t PluginNetDevice::pluginComm(void* comm, const char* call, void** raw) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = comms_.find(comm);
  if (it == comms_.end())
    return fail(ncclInvalidArgument, "NET/Plugin %s: %s: comm %p is not an open send or receive comm of this device",
                name(), call, comm);
  *raw = it->second.raw;
  return ncclSuccess;
}

ncclResult_t PluginNetDevice::regMr(void* comm, void* data, size_t size, int type, NetMemHandle** mhandle) {
  *mhandle = nullptr;
  void* rawComm = nullptr;
  ACCL_CHECK(pluginComm(comm, "regMr", &rawComm));
  void* raw = nullptr;
  ncclResult_t res = calls_.regMr(rawComm, data, size, type, &raw);
  if (res != ncclSuccess) return failed("regMr", res);
  *mhandle = new PluginMemHandle(raw);
  return ncclSuccess;
}

ncclResult_t PluginNetDevice::deregMr(void* comm, NetMemHandle* mhandle) {
  if (!mhandle) return ncclSuccess;
  void* rawComm = nullptr;
  ACCL_CHECK(pluginComm(comm, "deregMr", &rawComm));
  ncclResult_t res = calls_.deregMr(rawComm, rawOf(mhandle));
  delete mhandle;
  return res == ncclSuccess ? res : failed("deregMr", res);
}

ncclResult_t PluginNetDevice::isend(NetSendComm* comm, void* data, size_t size, int tag, NetMemHandle* mhandle,
                                    NetRequest** request) {
  return isendProfiled(comm, data, size, tag, mhandle, nullptr, request);
}

ncclResult_t PluginNetDevice::isendProfiled(NetSendComm* comm, void* data, size_t size, int tag,
                                            NetMemHandle* mhandle, void* profHandle, NetRequest** request) {
  *request = nullptr;
  void* raw = nullptr;
  auto* send = static_cast<PluginSendComm*>(comm);
  ncclResult_t res = calls_.isend(send->raw, data, size, tag, rawOf(mhandle), profHandle, &raw);
  if (res != ncclSuccess) return failed("isend", res);
  if (raw) *request = new PluginRequest(raw, 1, send);
  return ncclSuccess;
}

ncclResult_t PluginNetDevice::irecv(NetRecvComm* comm, int n, void** data, size_t* sizes, int* tags,
                                    NetMemHandle** mhandles, NetRequest** request) {
  return irecvProfiled(comm, n, data, sizes, tags, mhandles, nullptr, request);
}

ncclResult_t PluginNetDevice::irecvProfiled(NetRecvComm* comm, int n, void** data, size_t* sizes, int* tags,
                                            NetMemHandle** mhandles, void** profHandles, NetRequest** request) {
  *request = nullptr;
  if (n < 1 || n > kNetMaxRecvs)
    return fail(ncclInvalidArgument, "NET/Plugin %s: irecv: n = %d is not in 1..%d", name(), n, kNetMaxRecvs);
  void* rawHandles[kNetMaxRecvs];
  for (int i = 0; i < n; ++i) rawHandles[i] = rawOf(mhandles ? mhandles[i] : nullptr);
  void* raw = nullptr;
  auto* recv = static_cast<PluginRecvComm*>(comm);
  ncclResult_t res = calls_.irecv(recv->raw, n, data, sizes, tags, rawHandles, profHandles, &raw);
  if (res != ncclSuccess) return failed("irecv", res);
  if (raw) *request = new PluginRequest(raw, n, recv);
  return ncclSuccess;
}

ncclResult_t PluginNetDevice::iflush(NetRecvComm* comm, int n, void** data, int* sizes, NetMemHandle** mhandles,
                                     NetRequest** request) {
  *request = nullptr;
  if (n < 1 || n > kNetMaxRecvs)
    return fail(ncclInvalidArgument, "NET/Plugin %s: iflush: n = %d is not in 1..%d", name(), n, kNetMaxRecvs);
  void* rawHandles[kNetMaxRecvs];
  for (int i = 0; i < n; ++i) rawHandles[i] = rawOf(mhandles ? mhandles[i] : nullptr);
  void* raw = nullptr;
  auto* recv = static_cast<PluginRecvComm*>(comm);
  ncclResult_t res = calls_.iflush(recv->raw, n, data, sizes, rawHandles, &raw);
  if (res != ncclSuccess) return failed("iflush", res);
  if (raw) *request = new PluginRequest(raw, n, recv);
  return ncclSuccess;
}

ncclResult_t PluginNetDevice::test(NetRequest* request, int* done, size_t* sizes) {
  *done = 0;
  auto* req = static_cast<PluginRequest*>(request);
  int intSizes[kNetMaxRecvs];
  for (int& s : intSizes) s = -1;  // many plugins never write the sizes
  ncclResult_t res = calls_.test(req->raw, done, intSizes);
  // After an error the request is dead too; keep the wrapper (the caller may not retry).
  if (res != ncclSuccess) return failed("test", res);
  if (*done) {
    if (sizes)
      for (int i = 0; i < req->n; ++i)
        sizes[i] = intSizes[i] < 0 ? kNetSizeUnknown : static_cast<size_t>(intSizes[i]);
    delete req;
  }
  return ncclSuccess;
}

template <class Wrapper, class Comm, class Registry>
ncclResult_t PluginNetDevice::closeWrapped(Comm* comm, Registry& registry, ncclResult_t (PluginCalls::*close)(void*),
                                           const char* call) {
  if (!comm) return ncclSuccess;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    registry.erase(comm);
  }
  auto* wrapper = static_cast<Wrapper*>(comm);
  ncclResult_t res = (calls_.*close)(wrapper->raw);
  delete wrapper;
  return res == ncclSuccess ? res : failed(call, res);
}

ncclResult_t PluginNetDevice::closeSend(NetSendComm* comm) {
  return closeWrapped<PluginSendComm>(comm, comms_, &PluginCalls::closeSend, "closeSend");
}

ncclResult_t PluginNetDevice::closeRecv(NetRecvComm* comm) {
  return closeWrapped<PluginRecvComm>(comm, comms_, &PluginCalls::closeRecv, "closeRecv");
}

ncclResult_t PluginNetDevice::closeListen(NetListenComm* comm) {
  return closeWrapped<PluginListenComm>(comm, listens_, &PluginCalls::closeListen, "closeListen");
}

}  // namespace accl::netplugin
