// "acclTest": a small external NCCL net plugin for accl's tests, carrying data over its own TCP
// code. Built as libnccl-net-acclTest.so exporting only ncclNetPlugin_v8 (the plugin),
// and, from this same file, as fixtures for the other ABI versions (ACCL_TEST_NET_VERSION = 6..12).
//
// It follows the plugin API's non-blocking rules without any thread of its own:
//   - listen binds a TCP port on one interface (ACCL_TEST_NET_IFNAME, else the first
//     NCCL_SOCKET_IFNAME prefix match, else the first non-loopback IPv4 interface, else lo);
//   - connect keeps its progress in the handle (as NCCL's own plugins do) and returns a null comm
//     until the socket is connected and the hello {magic, listen id} is sent;
//   - accept returns a null comm until a peer's hello has arrived; a connection that sends junk
//     or closes early is dropped with a WARN and the listener keeps waiting;
//   - data moves only inside test(): each message is a 16-byte header {tag, size} and the bytes;
//     receives are matched in posting order and must carry the posted tag and fit the buffer.
// One device, host memory only, one buffer per receive (maxRecvs 1), 32 requests per comm.
// v10 and later report a NetPlugin event per request through the profiler callback
// (test_net_profile.h), whatever profiler handle they are given, null included.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "test_net_profile.h"
#include "test_net_tcp.h"
#include "transports/net/plugin/net_plugin_abi.h"

#ifndef ACCL_TEST_NET_VERSION
#define ACCL_TEST_NET_VERSION 8
#endif

namespace {

using namespace accl::netplugin;
constexpr int V = ACCL_TEST_NET_VERSION;
constexpr uint64_t kMagic = 0x61636c5465737431ull;  // "acTest1"
constexpr int kMaxRequests = 32;

LogFn gLog = nullptr;
// v10+: the callback init was given (atomic: communicators on parallel threads each run init)
std::atomic<ProfilerFn> gProf{nullptr};
#define TLOG(level, ...)                                                      \
  do {                                                                        \
    if (gLog) gLog((level), 0x10 /* NET */, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
constexpr int kWarn = 2, kInfo = 3;

// The interface this process listens on, chosen at init.
accl::testnet::Interface gIf;

struct Hello {
  uint64_t magic;
  uint64_t listenId;
};

struct ConnectProgress {
  int fd = -1;
  bool connected = false;
  Hello hello{};
  size_t sent = 0;
};

// What listen() writes into the 128-byte handle; connect keeps its progress pointer there too.
struct Handle {
  uint64_t magic;
  sockaddr_in addr;
  uint64_t listenId;
  ConnectProgress* progress;
};
static_assert(sizeof(Handle) <= 128);

struct PendingAccept {
  int fd;
  Hello hello;
  size_t got;
};

struct Listen {
  int fd;
  uint64_t listenId;
  std::vector<PendingAccept> pending;
};

struct Header {
  uint32_t tag;
  uint32_t reserved;
  uint64_t size;
};

struct Comm;
struct Request {
  Comm* comm;
  char* data;
  size_t size;  // send: bytes to send; receive: room in the buffer
  int tag;
  Header header{};
  size_t headerDone = 0;
  size_t dataDone = 0;
  size_t received = 0;
  bool done = false;
  void* profEvent = nullptr;  // the NetPlugin event the profiler callback made (null: none)
};

struct Comm {
  int fd = -1;
  bool send = false;
  ncclResult_t error = ncclSuccess;
  std::deque<Request*> queue;  // posted, not yet complete, in order
  std::set<Request*> live;     // not yet returned done by test(): freed by close
};

struct Context {
  uint64_t commId;
};

using accl::testnet::setNonBlocking;

// --- The implementation, in the newest shapes; the version shims below call these. ---

// The logger and the interface are chosen once per load: a v11+ plugin is initialized once per
// communicator, possibly from several threads at once.
ncclResult_t doInit(LogFn log) {
  static std::once_flag once;
  std::call_once(once, [log] {
    gLog = log;
    gIf = accl::testnet::chooseInterface();
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &gIf.addr.sin_addr, ip, sizeof(ip));
    TLOG(kInfo, "acclTest: ncclNetPlugin_v%d using interface %s (%s)", V, gIf.name.c_str(), ip);
  });
  return ncclSuccess;
}

ncclResult_t doDevices(int* count) {
  *count = 1;
  return ncclSuccess;
}

template <class Props>
ncclResult_t doGetProperties(int dev, Props* p) {
  if (dev != 0) return ncclInvalidArgument;
  std::memset(p, 0, sizeof(*p));
  p->name = const_cast<char*>(gIf.name.c_str());
  p->pciPath = nullptr;
  p->guid = 0x61636c54;
  p->ptrSupport = 1;  // host memory
  p->speedMbps = 10000;
  p->port = 0;
  p->latencyUs = 0;
  p->maxComms = 65536;
  p->maxRecvs = 1;
  if constexpr (requires { p->maxP2pBytes; }) {
    p->vNic.count = 1;
    p->vNic.devs[0] = dev;
    p->maxP2pBytes = size_t(1) << 31;
    p->maxCollBytes = size_t(1) << 31;
  }
  if constexpr (requires { p->maxMultiRequestSize; }) p->maxMultiRequestSize = 1;
  if constexpr (requires { p->railId; }) p->railId = p->planeId = -1;
  return ncclSuccess;
}

ncclResult_t doListen(int dev, void* handleBytes, void** listenComm) {
  *listenComm = nullptr;
  if (dev != 0) return ncclInvalidArgument;
  sockaddr_in addr;
  int fd = accl::testnet::listenTcp(gIf, &addr);
  if (fd < 0) {
    TLOG(kWarn, "acclTest: cannot listen on %s: %s", gIf.name.c_str(), strerror(errno));
    return ncclSystemError;
  }
  setNonBlocking(fd);
  auto* l = new Listen{fd, std::random_device{}() * 0x100000001ull + 1, {}};
  Handle handle{kMagic, addr, l->listenId, nullptr};
  std::memcpy(handleBytes, &handle, sizeof(handle));
  *listenComm = l;
  return ncclSuccess;
}

Comm* newComm(int fd, bool send) {
  accl::testnet::makeDataSocket(fd);
  auto* c = new Comm();
  c->fd = fd;
  c->send = send;
  return c;
}

ncclResult_t doConnect(int dev, void* handleBytes, void** sendComm) {
  *sendComm = nullptr;
  auto* h = static_cast<Handle*>(handleBytes);
  if (dev != 0 || h->magic != kMagic) {
    TLOG(kWarn, "acclTest: connect: not an acclTest handle");
    return ncclInvalidArgument;
  }
  ConnectProgress* p = h->progress;
  if (!p) {
    p = h->progress = new ConnectProgress();
    p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    p->hello = {kMagic, h->listenId};
    if (p->fd < 0 ||
        (::connect(p->fd, reinterpret_cast<sockaddr*>(&h->addr), sizeof(h->addr)) != 0 && errno != EINPROGRESS)) {
      TLOG(kWarn, "acclTest: connect to port %d failed: %s", ntohs(h->addr.sin_port), strerror(errno));
      if (p->fd >= 0) close(p->fd);
      delete p;
      h->progress = nullptr;
      return ncclRemoteError;
    }
  }
  if (!p->connected) {
    pollfd pfd{p->fd, POLLOUT, 0};
    if (poll(&pfd, 1, 0) <= 0) return ncclSuccess;  // not yet: call again
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      TLOG(kWarn, "acclTest: connect to port %d failed: %s", ntohs(h->addr.sin_port), strerror(err));
      close(p->fd);
      delete p;
      h->progress = nullptr;
      return ncclRemoteError;
    }
    p->connected = true;
  }
  while (p->sent < sizeof(p->hello)) {
    ssize_t n = ::send(p->fd, reinterpret_cast<char*>(&p->hello) + p->sent, sizeof(p->hello) - p->sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return ncclSuccess;
    if (n <= 0) {
      close(p->fd);
      delete p;
      h->progress = nullptr;
      return ncclRemoteError;
    }
    p->sent += size_t(n);
  }
  *sendComm = newComm(p->fd, true);
  delete p;
  h->progress = nullptr;
  return ncclSuccess;
}

ncclResult_t doAccept(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  auto* l = static_cast<Listen*>(listenComm);
  for (;;) {
    int fd = accept4(l->fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) break;
    l->pending.push_back({fd, {}, 0});
  }
  for (size_t i = 0; i < l->pending.size(); ++i) {
    PendingAccept& a = l->pending[i];
    ssize_t n = recv(a.fd, reinterpret_cast<char*>(&a.hello) + a.got, sizeof(a.hello) - a.got, 0);
    bool wouldBlock = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    if (n > 0) a.got += size_t(n);
    bool complete = a.got == sizeof(a.hello);
    bool valid = complete && a.hello.magic == kMagic && a.hello.listenId == l->listenId;
    if (!wouldBlock && (n == 0 || n < 0 || (complete && !valid))) {
      TLOG(kWarn, "acclTest: dropping a connection that sent %s", complete ? "a wrong hello" : "no hello");
      close(a.fd);
      l->pending.erase(l->pending.begin() + long(i));
      --i;
      continue;
    }
    if (valid) {
      int fd = a.fd;
      l->pending.erase(l->pending.begin() + long(i));
      *recvComm = newComm(fd, false);
      return ncclSuccess;
    }
  }
  return ncclSuccess;
}

ncclResult_t doRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  *mhandle = nullptr;
  if (type != 1) return ncclInternalError;  // host memory only
  *mhandle = new int(0);
  return ncclSuccess;
}

ncclResult_t doDeregMr(void* comm, void* mhandle) {
  delete static_cast<int*>(mhandle);
  return ncclSuccess;
}

// The request's NetPlugin event: start (with an update) when posted, stop when done.
void profStart(Request* r, void* profHandle) {
  const ProfilerFn prof = gProf.load();
  if (!prof) return;
  using namespace accl::testnet;
  prof(&r->profEvent, 0, profHandle, kTestNetProfId, reinterpret_cast<void*>(kTestNetStartData));
  prof(&r->profEvent, 2, profHandle, kTestNetProfId, reinterpret_cast<void*>(kTestNetUpdateData));
}
void profStop(Request* r) {
  if (const ProfilerFn prof = gProf.load()) prof(&r->profEvent, 1, nullptr, accl::testnet::kTestNetProfId, nullptr);
}

ncclResult_t doPost(Comm* c, void* data, size_t size, int tag, void* profHandle, void** request) {
  *request = nullptr;
  if (c->error != ncclSuccess) return c->error;
  if (c->live.size() >= size_t(kMaxRequests)) return ncclSuccess;  // busy: the caller retries
  auto* r = new Request{c, static_cast<char*>(data), size, tag};
  if (c->send) r->header = {uint32_t(tag), 0, size};
  c->queue.push_back(r);
  c->live.insert(r);
  profStart(r, profHandle);
  *request = r;
  return ncclSuccess;
}

ncclResult_t doIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* profHandle,
                     void** request) {
  return doPost(static_cast<Comm*>(sendComm), data, size, tag, profHandle, request);
}

ncclResult_t doIrecv(void* recvComm, int n, void** data, const size_t* sizes, int* tags, void** profHandles,
                     void** request) {
  *request = nullptr;
  if (n != 1) return ncclInternalError;  // maxRecvs is 1
  return doPost(static_cast<Comm*>(recvComm), data[0], sizes[0], tags[0], profHandles ? profHandles[0] : nullptr,
                request);
}

// Moves bytes for the requests at the head of the queue until the socket would block.
ncclResult_t progress(Comm* c) {
  while (c->error == ncclSuccess && !c->queue.empty()) {
    Request* r = c->queue.front();
    char* header = reinterpret_cast<char*>(&r->header);
    ssize_t n;
    if (r->headerDone < sizeof(Header)) {
      n = c->send ? ::send(c->fd, header + r->headerDone, sizeof(Header) - r->headerDone, MSG_NOSIGNAL)
                  : recv(c->fd, header + r->headerDone, sizeof(Header) - r->headerDone, 0);
      if (n > 0) {
        r->headerDone += size_t(n);
        if (!c->send && r->headerDone == sizeof(Header)) {
          if (r->header.tag != uint32_t(r->tag) || r->header.size > r->size) {
            TLOG(kWarn, "acclTest: message with tag %u, %llu bytes does not match the receive (tag %d, %zu bytes): %s",
                 r->header.tag, (unsigned long long)r->header.size, r->tag, r->size,
                 r->header.size > r->size ? "truncated" : "wrong tag");
            c->error = ncclInvalidUsage;
            break;
          }
          r->received = r->header.size;
        }
        continue;
      }
    } else {
      size_t total = c->send ? r->size : r->received;
      if (r->dataDone == total) {
        r->done = true;
        c->queue.pop_front();
        continue;
      }
      n = c->send ? ::send(c->fd, r->data + r->dataDone, total - r->dataDone, MSG_NOSIGNAL)
                  : recv(c->fd, r->data + r->dataDone, total - r->dataDone, 0);
      if (n > 0) {
        r->dataDone += size_t(n);
        continue;
      }
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
    TLOG(kWarn, "acclTest: connection lost (%s)", n == 0 ? "closed by the peer" : strerror(errno));
    c->error = ncclRemoteError;
  }
  return c->error;
}

ncclResult_t doTest(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  *done = 0;
  ncclResult_t res = progress(r->comm);
  if (res != ncclSuccess) return res;
  if (!r->done) return ncclSuccess;
  *done = 1;
  if (sizes) sizes[0] = int(r->comm->send ? r->size : r->received);
  profStop(r);
  r->comm->live.erase(r);
  delete r;
  return ncclSuccess;
}

ncclResult_t doIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  *request = nullptr;  // host memory: nothing to flush
  return ncclSuccess;
}

ncclResult_t doCloseComm(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  if (!c) return ncclSuccess;
  for (Request* r : c->live) profStop(r), delete r;  // the caller may not test them after close
  close(c->fd);
  delete c;
  return ncclSuccess;
}

ncclResult_t doCloseListen(void* listenComm) {
  auto* l = static_cast<Listen*>(listenComm);
  if (!l) return ncclSuccess;
  for (PendingAccept& a : l->pending) close(a.fd);
  close(l->fd);
  delete l;
  return ncclSuccess;
}

// --- The exported table for version V ---
using Table = std::conditional_t<
    V == 6, NetV6,
    std::conditional_t<
        V == 7, NetV7,
        std::conditional_t<
            V == 8, NetV8,
            std::conditional_t<V == 9, NetV9,
                               std::conditional_t<V == 10, NetV10, std::conditional_t<V == 11, NetV11, NetV12>>>>>>;
template <class Fn>
struct SecondArg;
template <class R, class A, class B>
struct SecondArg<R (*)(A, B)> {
  using type = std::remove_pointer_t<B>;
};
using PropsType = SecondArg<decltype(Table::getProperties)>::type;

// A template so that the branches for other versions are discarded, not compiled.
template <class T>
T makeTable() {
  T t{};
  t.name = "acclTest";
  if constexpr (V >= 11) {
    t.init = [](void** ctx, uint64_t commId, PluginCommConfig* config, LogFn log, ProfilerFn prof) -> ncclResult_t {
      ncclResult_t res = doInit(log);
      gProf.store(prof);
      auto* c = new Context{commId};
      *ctx = c;
      TLOG(kInfo, "acclTest: context for comm %llx (traffic class %d)", (unsigned long long)commId,
           config ? config->trafficClass : -2);
      return res;
    };
    t.finalize = [](void* ctx) -> ncclResult_t {
      auto* c = static_cast<Context*>(ctx);
      TLOG(kInfo, "acclTest: finalize context for comm %llx", c ? (unsigned long long)c->commId : 0ull);
      delete c;
      return ncclSuccess;
    };
    t.listen = [](void*, int dev, void* h, void** l) { return doListen(dev, h, l); };
    t.connect = [](void*, int dev, void* h, void** s, DeviceHandle**) { return doConnect(dev, h, s); };
  } else {
    if constexpr (V == 10)
      t.init = [](LogFn log, ProfilerFn prof) { return gProf.store(prof), doInit(log); };
    else
      t.init = [](LogFn log) { return doInit(log); };
    t.listen = [](int dev, void* h, void** l) { return doListen(dev, h, l); };
    if constexpr (V == 10)
      t.connect = [](int dev, PluginCommConfig*, void* h, void** s, DeviceHandle**) { return doConnect(dev, h, s); };
    else if constexpr (V >= 7)
      t.connect = [](int dev, void* h, void** s, DeviceHandle**) { return doConnect(dev, h, s); };
    else
      t.connect = [](int dev, void* h, void** s) { return doConnect(dev, h, s); };
  }
  t.devices = doDevices;
  t.getProperties = doGetProperties<PropsType>;
  if constexpr (V >= 7)
    t.accept = [](void* l, void** r, DeviceHandle**) { return doAccept(l, r); };
  else
    t.accept = doAccept;
  if constexpr (V >= 8)
    t.regMr = doRegMr;
  else
    t.regMr = [](void* c, void* d, int size, int type, void** m) { return doRegMr(c, d, size_t(size), type, m); };
  t.deregMr = doDeregMr;
  if constexpr (V <= 8) {
    t.isend = [](void* c, void* d, int size, int tag, void* m, void** r) {
      return doIsend(c, d, size_t(size), tag, m, nullptr, r);
    };
    t.irecv = [](void* c, int n, void** d, int* sizes, int* tags, void**, void** r) {
      size_t wide[8];
      for (int i = 0; i < n && i < 8; ++i) wide[i] = sizes[i] < 0 ? 0 : size_t(sizes[i]);
      return doIrecv(c, n, d, wide, tags, nullptr, r);
    };
  } else if constexpr (V == 9) {
    t.isend = [](void* c, void* d, size_t size, int tag, void* m, void** r) {
      return doIsend(c, d, size, tag, m, nullptr, r);
    };
    t.irecv = [](void* c, int n, void** d, size_t* sizes, int* tags, void**, void** r) {
      return doIrecv(c, n, d, sizes, tags, nullptr, r);
    };
  } else {
    t.isend = [](void* c, void* d, size_t size, int tag, void* m, void* p, void** r) {
      return doIsend(c, d, size, tag, m, p, r);
    };
    t.irecv = [](void* c, int n, void** d, size_t* sizes, int* tags, void**, void** p, void** r) {
      return doIrecv(c, n, d, sizes, tags, p, r);
    };
  }
  t.iflush = doIflush;
  t.test = doTest;
  t.closeSend = doCloseComm;
  t.closeRecv = doCloseComm;
  t.closeListen = doCloseListen;
  return t;
}

}  // namespace

#define ACCL_EXPORT_NAME2(v) ncclNetPlugin_v##v
#define ACCL_EXPORT_NAME(v) ACCL_EXPORT_NAME2(v)
extern "C" {
__attribute__((visibility("default"))) Table ACCL_EXPORT_NAME(ACCL_TEST_NET_VERSION) = makeTable<Table>();
}
