// PluginCalls for each ABI version (see plugin_calls.h): one class template, with the version
// differences spelled out as `if constexpr` branches next to each call.
#include "transports/net/plugin/plugin_calls.h"

#include <climits>

#include "profiler/net_plugin_events.h"
#include "util/check.h"

namespace accl::netplugin {
namespace {

template <int V>
struct Abi;
template <>
struct Abi<6> {
  using Table = NetV6;
  using Props = PropsV6;
};
template <>
struct Abi<7> {
  using Table = NetV7;
  using Props = PropsV7;
};
template <>
struct Abi<8> {
  using Table = NetV8;
  using Props = PropsV8;
};
template <>
struct Abi<9> {
  using Table = NetV9;
  using Props = PropsV9;
};
template <>
struct Abi<10> {
  using Table = NetV10;
  using Props = PropsV10;
};
template <>
struct Abi<11> {
  using Table = NetV11;
  using Props = PropsV11;
};
template <>
struct Abi<12> {
  using Table = NetV12;
  using Props = PropsV12;
};

template <int V>
class VersionCalls final : public PluginCalls {
  using Table = typename Abi<V>::Table;
  using Props = typename Abi<V>::Props;

 public:
  explicit VersionCalls(const Table* table) : t_(table) {}

  int version() const override { return V; }
  const char* name() const override { return t_->name; }

  ncclResult_t init(void** ctx, uint64_t commId, int trafficClass, LogFn log) override {
    *ctx = nullptr;
    if constexpr (V >= 11) {
      PluginCommConfig config{trafficClass};
      return t_->init(ctx, commId, &config, log, prof::netPluginProfilerCallback);
    } else if constexpr (V == 10) {
      return t_->init(log, prof::netPluginProfilerCallback);
    } else {
      return t_->init(log);
    }
  }

  ncclResult_t finalize(void* ctx) override {
    if constexpr (V >= 11) {
      if (t_->finalize) return t_->finalize(ctx);
    }
    return ncclSuccess;
  }

  ncclResult_t devices(int* count) override { return t_->devices(count); }

  ncclResult_t getProperties(int dev, NetProperties* out) override {
    Props p{};
    ncclResult_t res = t_->getProperties(dev, &p);
    if (res != ncclSuccess) return res;
    *out = NetProperties();
    out->name = p.name ? p.name : "";
    out->pciPath = p.pciPath ? p.pciPath : "";
    out->guid = p.guid;
    out->ptrSupport = p.ptrSupport;
    out->speedMbps = p.speedMbps;
    out->port = p.port;
    out->latencyUs = p.latencyUs;
    out->maxComms = p.maxComms;
    out->maxRecvs = p.maxRecvs < 1 ? 1 : (p.maxRecvs > kNetMaxRecvs ? kNetMaxRecvs : p.maxRecvs);
    if constexpr (V >= 8) out->regIsGlobal = p.regIsGlobal != 0;
    if constexpr (V >= 9) {
      out->forceFlush = p.forceFlush != 0;
      out->maxP2pBytes = sanitizeMax(p.maxP2pBytes, kPreV9MaxMessageBytes);
      out->maxCollBytes = sanitizeMax(p.maxCollBytes, kPreV9MaxCollBytes);
    } else {
      // What NCCL assumes for plugins whose sizes are int.
      out->maxP2pBytes = kPreV9MaxMessageBytes;
      out->maxCollBytes = kPreV9MaxCollBytes;
    }
    out->gdrPeermem = (p.ptrSupport & kNetPtrCuda) != 0;
    out->gdrDmaBuf = (p.ptrSupport & kNetPtrDmaBuf) != 0;
    return ncclSuccess;
  }

  ncclResult_t listen(void* ctx, int dev, void* handle, void** listenComm) override {
    if constexpr (V >= 11)
      return t_->listen(ctx, dev, handle, listenComm);
    else
      return t_->listen(dev, handle, listenComm);
  }

  ncclResult_t connect(void* ctx, int dev, int trafficClass, void* handle, void** sendComm) override {
    DeviceHandle* offload = nullptr;  // null: no device offload requested
    if constexpr (V >= 11) {
      return t_->connect(ctx, dev, handle, sendComm, &offload);
    } else if constexpr (V == 10) {
      PluginCommConfig config{trafficClass};
      return t_->connect(dev, &config, handle, sendComm, &offload);
    } else if constexpr (V >= 7) {
      return t_->connect(dev, handle, sendComm, &offload);
    } else {
      return t_->connect(dev, handle, sendComm);
    }
  }

  ncclResult_t accept(void* listenComm, void** recvComm) override {
    if constexpr (V >= 7) {
      DeviceHandle* offload = nullptr;
      return t_->accept(listenComm, recvComm, &offload);
    } else {
      return t_->accept(listenComm, recvComm);
    }
  }

  ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) override {
    if constexpr (V <= 7) {
      if (size > size_t(INT_MAX))
        return fail(ncclInternalError, "NET/Plugin %s (v%d): regMr of %zu bytes does not fit the plugin's int size",
                    t_->name, V, size);
      return t_->regMr(comm, data, static_cast<int>(size), type, mhandle);
    } else {
      return t_->regMr(comm, data, size, type, mhandle);
    }
  }

  ncclResult_t deregMr(void* comm, void* mhandle) override { return t_->deregMr(comm, mhandle); }

  ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* profHandle,
                     void** request) override {
    if constexpr (V <= 8) {
      if (size > kPreV9MaxMessageBytes) return tooLarge("isend", size);
      return t_->isend(sendComm, data, static_cast<int>(size), tag, mhandle, request);
    } else if constexpr (V == 9) {
      return t_->isend(sendComm, data, size, tag, mhandle, request);
    } else {
      return t_->isend(sendComm, data, size, tag, mhandle, profHandle, request);
    }
  }

  ncclResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, int* tags, void** mhandles,
                     void** profHandles, void** request) override {
    if constexpr (V <= 8) {
      int intSizes[kNetMaxRecvs];
      for (int i = 0; i < n; ++i) {
        if (sizes[i] > kPreV9MaxMessageBytes) return tooLarge("irecv", sizes[i]);
        intSizes[i] = static_cast<int>(sizes[i]);
      }
      return t_->irecv(recvComm, n, data, intSizes, tags, mhandles, request);
    } else {
      size_t copy[kNetMaxRecvs];
      for (int i = 0; i < n; ++i) copy[i] = sizes[i];
      if constexpr (V == 9) {
        return t_->irecv(recvComm, n, data, copy, tags, mhandles, request);
      } else {
        void* none[kNetMaxRecvs] = {};
        return t_->irecv(recvComm, n, data, copy, tags, mhandles, profHandles ? profHandles : none, request);
      }
    }
  }

  ncclResult_t iflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) override {
    *request = nullptr;
    if (!t_->iflush) return ncclSuccess;
    return t_->iflush(recvComm, n, data, sizes, mhandles, request);
  }

  ncclResult_t test(void* request, int* done, int* sizes) override { return t_->test(request, done, sizes); }
  ncclResult_t closeSend(void* comm) override { return t_->closeSend(comm); }
  ncclResult_t closeRecv(void* comm) override { return t_->closeRecv(comm); }
  ncclResult_t closeListen(void* comm) override { return t_->closeListen(comm); }

  // The first member accl needs that the table leaves null, or null when complete.
  const char* firstMissing() const {
    if (!t_->name) return "name";
    if (!t_->init) return "init";
    if (!t_->devices) return "devices";
    if (!t_->getProperties) return "getProperties";
    if (!t_->listen) return "listen";
    if (!t_->connect) return "connect";
    if (!t_->accept) return "accept";
    if (!t_->regMr) return "regMr";
    if (!t_->deregMr) return "deregMr";
    if (!t_->isend) return "isend";
    if (!t_->irecv) return "irecv";
    if (!t_->test) return "test";
    if (!t_->closeSend) return "closeSend";
    if (!t_->closeRecv) return "closeRecv";
    if (!t_->closeListen) return "closeListen";
    return nullptr;
  }

 private:
  static size_t sanitizeMax(size_t reported, size_t fallback) {
    if (reported == 0) return fallback;
    return reported > kMaxNetBytes ? kMaxNetBytes : reported;
  }
  ncclResult_t tooLarge(const char* call, size_t size) const {
    return fail(ncclInternalError,
                "NET/Plugin %s (v%d): %s of %zu bytes exceeds the %zu bytes an int-sized plugin takes", t_->name, V,
                call, size, kPreV9MaxMessageBytes);
  }

  const Table* t_;
};

template <int V>
std::unique_ptr<PluginCalls> make(const void* table, const char** missing) {
  auto calls = std::make_unique<VersionCalls<V>>(static_cast<const typename Abi<V>::Table*>(table));
  *missing = calls->firstMissing();
  if (*missing) return nullptr;
  return calls;
}

}  // namespace

std::unique_ptr<PluginCalls> makePluginCalls(int version, const void* table, const char** missing) {
  *missing = nullptr;
  switch (version) {
    case 6:
      return make<6>(table, missing);
    case 7:
      return make<7>(table, missing);
    case 8:
      return make<8>(table, missing);
    case 9:
      return make<9>(table, missing);
    case 10:
      return make<10>(table, missing);
    case 11:
      return make<11>(table, missing);
    case 12:
      return make<12>(table, missing);
    default:
      *missing = "a supported version";
      return nullptr;
  }
}

}  // namespace accl::netplugin
