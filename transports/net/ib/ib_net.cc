// The "IB" NetDevice: ties the verbs table (ibverbs_table.h), the discovered ports (ib_devices.cc),
// connection setup (ib_connect.cc) and the data path (ib_datapath.cc) together behind the
// NetDevice interface, and builds the network in createIbNetDevice.
#include "transports/net/ib/ib_net.h"

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

#if __has_include(<infiniband/verbs.h>)
#include <map>
#include <mutex>
#include <set>

#include "transports/net/ib/ib_net_internal.h"
#include "util/net_interfaces.h"

namespace accl {

namespace {

using namespace accl::ib;

class IbNet : public NetDevice {
 public:
  IbNet(const IbvTable* ibv, std::vector<std::unique_ptr<IbDev>> devs, const SocketAddress& sideChannel)
      : ibv_(ibv), devs_(std::move(devs)), sideChannel_(sideChannel) {}
  ~IbNet() override {
    for (auto it = devs_.rbegin(); it != devs_.rend(); ++it) closeIbDevice(ibv_, it->get());
  }

  const char* name() const override { return "IB"; }
  int deviceCount() const override { return static_cast<int>(devs_.size()); }

  ncclResult_t getProperties(int dev, NetProperties* props) override {
    ACCL_CHECK(checkDev("getProperties", dev));
    const IbDev& d = *devs_[dev];
    *props = NetProperties();
    props->name = d.devName + ":" + std::to_string(d.port);
    props->pciPath = d.pciPath;
    props->guid = be64toh(d.devAttr.node_guid);
    props->ptrSupport = kNetPtrHost;  // GPU buffers need the flush path of the CUDA backend
    props->regIsGlobal = true;
    props->speedMbps = d.speedMbps;
    props->port = d.port;
    props->latencyUs = 0;
    props->maxComms = d.devAttr.max_qp > 0 ? d.devAttr.max_qp : 65536;
    props->maxRecvs = kNetMaxRecvs;
    props->maxP2pBytes = size_t(1) << 31;
    props->maxCollBytes = size_t(512) << 20;
    props->gdrPeermem = d.gdrPeermem;
    props->gdrDmaBuf = d.gdrDmaBuf;
    return ncclSuccess;
  }

  ncclResult_t listen(int dev, NetHandle* handle, NetListenComm** listenComm) override {
    *listenComm = nullptr;
    ACCL_CHECK(checkDev("listen", dev));
    IbListenComm* l = nullptr;
    ACCL_CHECK(ibListen(ibv_, devs_[dev].get(), dev, sideChannel_, handle, &l));
    *listenComm = l;
    return ncclSuccess;
  }

  ncclResult_t connect(int dev, const NetCommConfig& config, const NetHandle& handle,
                       NetSendComm** sendComm) override {
    *sendComm = nullptr;
    ACCL_CHECK(checkDev("connect", dev));
    // The handle is const: the connection in progress is found again by the handle's bytes.
    std::string key(reinterpret_cast<const char*>(handle.bytes), sizeof(handle.bytes));
    IbConnectState state;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = connecting_.find(key);
      if (it != connecting_.end()) {
        state = std::move(it->second);
        connecting_.erase(it);
      }
    }
    IbSendComm* c = nullptr;
    ncclResult_t res = ibConnectStep(ibv_, devs_[dev].get(), config, handle, &state, &c);
    std::lock_guard<std::mutex> lock(mu_);
    if (state) connecting_[key] = std::move(state);
    if (res != ncclSuccess) return res;
    if (c) {
      sendComms_.insert(c);
      *sendComm = c;
    }
    return ncclSuccess;
  }

  ncclResult_t accept(NetListenComm* listenComm, NetRecvComm** recvComm) override {
    *recvComm = nullptr;
    auto* l = dynamic_cast<IbListenComm*>(listenComm);
    if (!l) return fail(ncclInvalidArgument, "NET/IB accept: listenComm %p is not an IB listener", listenComm);
    IbRecvComm* c = nullptr;
    ACCL_CHECK(ibAcceptStep(l, &c));
    if (c) {
      std::lock_guard<std::mutex> lock(mu_);
      recvComms_.insert(c);
      *recvComm = c;
    }
    return ncclSuccess;
  }

  ncclResult_t regMr(void* comm, void* data, size_t size, int type, NetMemHandle** mhandle) override {
    *mhandle = nullptr;
    if (type != kNetPtrHost)
      return fail(ncclInvalidArgument, "NET/IB regMr: pointer type %d is not supported (host memory only for now)",
                  type);
    IbDev* dev = devOfComm(comm);
    if (!dev) return fail(ncclInvalidArgument, "NET/IB regMr: comm %p is not an IB send or receive comm", comm);
    IbMemHandle* mh = nullptr;
    ACCL_CHECK(ibRegMr(ibv_, dev, data, size, &mh));
    *mhandle = mh;
    return ncclSuccess;
  }

  ncclResult_t deregMr(void* comm, NetMemHandle* mhandle) override {
    auto* mh = dynamic_cast<IbMemHandle*>(mhandle);
    if (!mh) return fail(ncclInvalidArgument, "NET/IB deregMr: handle %p is not an IB registration", mhandle);
    return ibDeregMr(ibv_, mh);
  }

  ncclResult_t isend(NetSendComm* comm, void* data, size_t size, int tag, NetMemHandle* mhandle,
                     NetRequest** request) override {
    *request = nullptr;
    auto* c = dynamic_cast<IbSendComm*>(comm);
    if (!c) return fail(ncclInvalidArgument, "NET/IB isend: comm %p is not an IB send comm", comm);
    IbRequest* r = nullptr;
    ACCL_CHECK(ibIsend(c, data, size, tag, dynamic_cast<IbMemHandle*>(mhandle), &r));
    *request = r;
    return ncclSuccess;
  }

  ncclResult_t irecv(NetRecvComm* comm, int n, void** data, size_t* sizes, int* tags, NetMemHandle** mhandles,
                     NetRequest** request) override {
    *request = nullptr;
    auto* c = dynamic_cast<IbRecvComm*>(comm);
    if (!c) return fail(ncclInvalidArgument, "NET/IB irecv: comm %p is not an IB receive comm", comm);
    if (n < 1 || n > kNetMaxRecvs)
      return fail(ncclInvalidArgument, "NET/IB irecv: n = %d buffers (1..%d allowed)", n, kNetMaxRecvs);
    IbMemHandle* mhs[kNetMaxRecvs] = {};
    for (int i = 0; i < n; i++) mhs[i] = mhandles ? dynamic_cast<IbMemHandle*>(mhandles[i]) : nullptr;
    IbRequest* r = nullptr;
    ACCL_CHECK(ibIrecv(c, n, data, sizes, tags, mhs, &r));
    *request = r;
    return ncclSuccess;
  }

  ncclResult_t iflush(NetRecvComm* comm, int n, void** data, int* sizes, NetMemHandle** mhandles,
                      NetRequest** request) override {
    *request = nullptr;  // host memory: the data is visible once the receive completed
    return ncclSuccess;
  }

  ncclResult_t test(NetRequest* request, int* done, size_t* sizes) override {
    *done = 0;
    auto* r = dynamic_cast<IbRequest*>(request);
    if (!r) return fail(ncclInvalidArgument, "NET/IB test: request %p is not an IB request", request);
    return ibTest(r, done, sizes);
  }

  ncclResult_t closeSend(NetSendComm* comm) override {
    auto* c = dynamic_cast<IbSendComm*>(comm);
    if (!c) return comm ? fail(ncclInvalidArgument, "NET/IB closeSend: comm %p is not an IB send comm", comm)
                        : ncclSuccess;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sendComms_.erase(c);
    }
    ibFreeSendComm(c);
    return ncclSuccess;
  }

  ncclResult_t closeRecv(NetRecvComm* comm) override {
    auto* c = dynamic_cast<IbRecvComm*>(comm);
    if (!c) return comm ? fail(ncclInvalidArgument, "NET/IB closeRecv: comm %p is not an IB receive comm", comm)
                        : ncclSuccess;
    {
      std::lock_guard<std::mutex> lock(mu_);
      recvComms_.erase(c);
    }
    ibFreeRecvComm(c);
    return ncclSuccess;
  }

  ncclResult_t closeListen(NetListenComm* comm) override {
    delete comm;
    return ncclSuccess;
  }

 private:
  ncclResult_t checkDev(const char* what, int dev) const {
    if (dev < 0 || dev >= deviceCount())
      return fail(ncclInvalidArgument, "NET/IB %s: dev = %d is not a device (%d devices)", what, dev, deviceCount());
    return ncclSuccess;
  }

  // regMr's comm is a NetSendComm* or NetRecvComm* passed as void*: find which.
  IbDev* devOfComm(void* comm) {
    std::lock_guard<std::mutex> lock(mu_);
    for (IbSendComm* c : sendComms_)
      if (static_cast<void*>(static_cast<NetSendComm*>(c)) == comm) return c->q.dev;
    for (IbRecvComm* c : recvComms_)
      if (static_cast<void*>(static_cast<NetRecvComm*>(c)) == comm) return c->q.dev;
    return nullptr;
  }

  const IbvTable* ibv_;
  std::vector<std::unique_ptr<IbDev>> devs_;
  SocketAddress sideChannel_;
  std::mutex mu_;
  std::map<std::string, IbConnectState> connecting_;
  std::set<IbSendComm*> sendComms_;
  std::set<IbRecvComm*> recvComms_;
};

}  // namespace

ncclResult_t createIbNetDevice(std::unique_ptr<NetDevice>* out) {
  auto none = [&](const std::string& why) {
    ACCL_INFO(ACCL_LOG_NET | ACCL_LOG_INIT, "NET/IB: %s; the IB network has no devices", why.c_str());
    *out = std::make_unique<IbNet>(nullptr, std::vector<std::unique_ptr<IbDev>>(), SocketAddress());
    return ncclSuccess;
  };
  if (paramInt("NCCL_IB_DISABLE") == 1) return none("NCCL_IB_DISABLE=1");
  std::string why;
  const IbvTable* ibv = loadIbvTable(&why);
  if (!ibv) return none(why);
  // The side channel for connection setup needs an IP interface: the first one the socket setting
  // allows, in NCCL's order, with no NCCL_COMM_ID subnet hint.
  SocketIfSetting setting = readSocketIfSetting();
  std::vector<NetInterface> all;
  if (listInterfaces(&all) != ncclSuccess) return none("cannot list the IP interfaces");
  std::vector<NetInterface> picked = selectInterfaces(all, setting, nullptr, 1);
  if (picked.empty())
    return none("no IP interface for the connection side channel (" + setting.describe() + ")");
  std::vector<std::unique_ptr<IbDev>> devs;
  ncclResult_t res = discoverIbDevices(ibv, &devs);
  if (res != ncclSuccess) {
    for (auto it = devs.rbegin(); it != devs.rend(); ++it) closeIbDevice(ibv, it->get());
    return res;
  }
  if (devs.empty()) return none(ibv->path + " reports no active port" +
                                (paramStr("NCCL_IB_HCA").empty() ? "" : " selected by NCCL_IB_HCA=" + paramStr("NCCL_IB_HCA")));
  ACCL_INFO(ACCL_LOG_NET | ACCL_LOG_INIT, "NET/IB: %zu device(s) through %s; side channel on %s", devs.size(),
            ibv->path.c_str(), picked[0].name.c_str());
  *out = std::make_unique<IbNet>(ibv, std::move(devs), picked[0].addr);
  return ncclSuccess;
}

}  // namespace accl

#else  // no <infiniband/verbs.h> at build time: the network exists and has no devices

namespace accl {

namespace {
class NoIbNet : public NetDevice {
 public:
  const char* name() const override { return "IB"; }
  int deviceCount() const override { return 0; }
  ncclResult_t getProperties(int, NetProperties*) override { return unavailable(); }
  ncclResult_t listen(int, NetHandle*, NetListenComm**) override { return unavailable(); }
  ncclResult_t connect(int, const NetCommConfig&, const NetHandle&, NetSendComm**) override { return unavailable(); }
  ncclResult_t accept(NetListenComm*, NetRecvComm**) override { return unavailable(); }
  ncclResult_t regMr(void*, void*, size_t, int, NetMemHandle**) override { return unavailable(); }
  ncclResult_t deregMr(void*, NetMemHandle*) override { return unavailable(); }
  ncclResult_t isend(NetSendComm*, void*, size_t, int, NetMemHandle*, NetRequest**) override { return unavailable(); }
  ncclResult_t irecv(NetRecvComm*, int, void**, size_t*, int*, NetMemHandle**, NetRequest**) override {
    return unavailable();
  }
  ncclResult_t iflush(NetRecvComm*, int, void**, int*, NetMemHandle**, NetRequest**) override { return unavailable(); }
  ncclResult_t test(NetRequest*, int*, size_t*) override { return unavailable(); }
  ncclResult_t closeSend(NetSendComm*) override { return ncclSuccess; }
  ncclResult_t closeRecv(NetRecvComm*) override { return ncclSuccess; }
  ncclResult_t closeListen(NetListenComm*) override { return ncclSuccess; }

 private:
  static ncclResult_t unavailable() { return fail(ncclInvalidUsage, "NET/IB: built without verbs headers; no devices"); }
};
}  // namespace

ncclResult_t createIbNetDevice(std::unique_ptr<NetDevice>* out) {
  ACCL_INFO(ACCL_LOG_NET | ACCL_LOG_INIT, "NET/IB: built without <infiniband/verbs.h>; the IB network has no devices");
  *out = std::make_unique<NoIbNet>();
  return ncclSuccess;
}

}  // namespace accl
#endif
