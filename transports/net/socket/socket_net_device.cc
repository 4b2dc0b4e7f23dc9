// SocketNetDevice: the "Socket" network's NetDevice entry points, dispatching to the listener
// (socket_net_listen), the connector (socket_net_connect) and the connections (socket_net_conn).
// All state lives in the instance: two instances (two communicators) share nothing.
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "transports/net/socket/socket_net.h"
#include "transports/net/socket/socket_net_config.h"
#include "transports/net/socket/socket_net_connect.h"
#include "transports/net/socket/socket_net_conn.h"
#include "transports/net/socket/socket_net_listen.h"
#include "util/check.h"
#include "util/log.h"
#include "util/net_interfaces.h"

namespace accl {
namespace socketnet {
namespace {

// Registrations are bookkeeping only: every buffer is host memory the sockets read or write.
class SocketNetMemHandle final : public NetMemHandle {};

bool plausibleHandle(const HandleWire& h) {
  if (h.kind != kHandleKind || !h.addr.isInet() || h.addr.port() == 0) return false;
  if (h.nThreads > kMaxThreads || h.nSocksPerThread > kMaxDataSockets) return false;
  if (h.nThreads * h.nSocksPerThread > kMaxDataSockets) return false;
  return h.nThreads == 0 || h.nSocksPerThread > 0;
}

class SocketNetDevice final : public NetDevice {
 public:
  explicit SocketNetDevice(std::vector<SocketNetIf> ifs) : ifs_(std::move(ifs)) {}
  ~SocketNetDevice() override {
    std::lock_guard<std::mutex> lock(mutex_);
    connecting_.clear();  // cancels and joins the dialing threads
  }

  const char* name() const override { return "Socket"; }
  int deviceCount() const override { return static_cast<int>(ifs_.size()); }

  ncclResult_t getProperties(int dev, NetProperties* props) override {
    ACCL_CHECK(checkDev("getProperties", dev));
    const SocketNetIf& i = ifs_[dev];
    *props = NetProperties{};
    props->name = i.name;
    props->pciPath = i.pciPath;
    props->guid = static_cast<uint64_t>(dev);
    props->ptrSupport = kNetPtrHost;
    props->sendsUnregistered = true;  // plain send() from any address: regMr only makes a token
    props->speedMbps = i.speedMbps;
    props->port = 0;
    props->latencyUs = 0;
    props->maxComms = 65536;
    props->maxRecvs = 1;
    return ncclSuccess;
  }

  ncclResult_t listen(int dev, NetHandle* handle, NetListenComm** listenComm) override {
    *listenComm = nullptr;
    ACCL_CHECK(checkDev("listen", dev));
    std::unique_ptr<SocketNetListen> l;
    ACCL_CHECK(SocketNetListen::create(ifs_[dev], handle, &l));
    *listenComm = l.release();
    return ncclSuccess;
  }

  ncclResult_t connect(int dev, const NetCommConfig& config, const NetHandle& handle,
                       NetSendComm** sendComm) override {
    *sendComm = nullptr;
    ACCL_CHECK(checkDev("connect", dev));
    // The handle is const, so the connection in progress is found again by the handle's bytes.
    std::string key(reinterpret_cast<const char*>(handle.bytes), sizeof(handle.bytes));
    std::unique_ptr<SocketNetConnector> done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = connecting_.find(key);
      if (it == connecting_.end()) {
        HandleWire h;
        std::memcpy(&h, handle.bytes, sizeof(h));
        if (!plausibleHandle(h))
          return fail(ncclInvalidArgument, "NET/Socket connect (dev %d): the handle was not made by a Socket listener",
                      dev);
        auto c = std::make_unique<SocketNetConnector>(h);
        ACCL_CHECK(c->start());
        connecting_.emplace(key, std::move(c));
        return ncclSuccess;
      }
      if (!it->second->finished()) return ncclSuccess;
      done = std::move(it->second);
      connecting_.erase(it);
    }
    ACCL_CHECK(done->result());
    const HandleWire& h = done->handle();
    auto comm = std::make_unique<SocketNetSendComm>(/*sending=*/true, done->takeControl(), done->takeData(),
                                                    static_cast<int>(h.nSocksPerThread), ifs_[dev].name);
    ACCL_CHECK(comm->start());
    ACCL_INFO(ACCL_LOG_NET, "NET/Socket: connected to %s, %u data sockets", comm->peerText().c_str(),
              h.nThreads * h.nSocksPerThread);
    *sendComm = comm.release();
    return ncclSuccess;
  }

  ncclResult_t accept(NetListenComm* listenComm, NetRecvComm** recvComm) override {
    *recvComm = nullptr;
    auto* l = dynamic_cast<SocketNetListen*>(listenComm);
    if (!l) return fail(ncclInvalidArgument, "NET/Socket accept: listenComm %p is not a Socket listener", listenComm);
    std::unique_ptr<SocketNetRecvComm> comm;
    ACCL_CHECK(l->accept(&comm));
    *recvComm = comm.release();
    return ncclSuccess;
  }

  ncclResult_t regMr(void* comm, void* data, size_t size, int type, NetMemHandle** mhandle) override {
    *mhandle = nullptr;
    if (type != kNetPtrHost)
      return fail(ncclInvalidArgument, "NET/Socket regMr: pointer type %d is not host memory (%d)", type,
                  static_cast<int>(kNetPtrHost));
    *mhandle = new SocketNetMemHandle();
    return ncclSuccess;
  }

  ncclResult_t deregMr(void* comm, NetMemHandle* mhandle) override {
    delete mhandle;
    return ncclSuccess;
  }

  ncclResult_t isend(NetSendComm* comm, void* data, size_t size, int tag, NetMemHandle* mhandle,
                     NetRequest** request) override {
    *request = nullptr;
    auto* c = dynamic_cast<SocketNetSendComm*>(comm);
    if (!c) return fail(ncclInvalidArgument, "NET/Socket isend: comm %p is not a Socket send comm", comm);
    return c->isend(data, size, tag, request);
  }

  ncclResult_t irecv(NetRecvComm* comm, int n, void** data, size_t* sizes, int* tags, NetMemHandle** mhandles,
                     NetRequest** request) override {
    *request = nullptr;
    auto* c = dynamic_cast<SocketNetRecvComm*>(comm);
    if (!c) return fail(ncclInvalidArgument, "NET/Socket irecv: comm %p is not a Socket recv comm", comm);
    if (n != 1)
      return fail(ncclInvalidArgument, "NET/Socket irecv from %s: n = %d receives, but the device takes 1 (maxRecvs)",
                  c->peerText().c_str(), n);
    return c->irecv(data[0], sizes[0], tags[0], request);
  }

  ncclResult_t iflush(NetRecvComm* comm, int n, void** data, int* sizes, NetMemHandle** mhandles,
                      NetRequest** request) override {
    *request = nullptr;  // host memory: the data is visible once test() says so
    return ncclSuccess;
  }

  ncclResult_t test(NetRequest* request, int* done, size_t* sizes) override {
    *done = 0;
    auto* r = dynamic_cast<SocketNetRequest*>(request);
    if (!r || !r->conn)
      return fail(ncclInvalidArgument, "NET/Socket test: request %p is not a Socket request", request);
    return r->conn->test(r, done, sizes);
  }

  ncclResult_t closeSend(NetSendComm* comm) override {
    delete comm;  // joins the helper threads; bounded (they poll in slices)
    return ncclSuccess;
  }
  ncclResult_t closeRecv(NetRecvComm* comm) override {
    delete comm;
    return ncclSuccess;
  }
  ncclResult_t closeListen(NetListenComm* comm) override {
    delete comm;
    return ncclSuccess;
  }

 private:
  ncclResult_t checkDev(const char* call, int dev) const {
    if (dev < 0 || dev >= deviceCount())
      return fail(ncclInvalidArgument, "NET/Socket %s: dev = %d is out of range (%d devices)", call, dev,
                  deviceCount());
    return ncclSuccess;
  }

  std::vector<SocketNetIf> ifs_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<SocketNetConnector>> connecting_;  // by handle bytes
};

}  // namespace
}  // namespace socketnet

ncclResult_t createSocketNetDevice(std::unique_ptr<NetDevice>* out) {
  out->reset();
  std::vector<socketnet::SocketNetIf> ifs;
  std::string all;
  SocketIfSetting setting = readSocketIfSetting();
  ACCL_CHECK(socketnet::findSocketNetInterfaces(setting, &ifs, &all));
  if (ifs.empty())
    return fail(ncclSystemError, "NET/Socket: no usable network interface (%s); interfaces present: %s",
                setting.describe().c_str(), all.empty() ? "none" : all.c_str());
  std::string names;
  for (const auto& i : ifs) names += (names.empty() ? "" : " ") + i.name + ":" + i.addr.hostString();
  ACCL_INFO(ACCL_LOG_NET | ACCL_LOG_INIT, "NET/Socket: using %s", names.c_str());
  *out = std::make_unique<socketnet::SocketNetDevice>(std::move(ifs));
  return ncclSuccess;
}

}  // namespace accl
