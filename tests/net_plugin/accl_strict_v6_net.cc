// "acclStrictV6": a test net plugin that behaves like the NCCL net plugins of the v6 era which
// rely on the order NCCL drives them in rather than on the documented non-blocking contract
// (issue 20). Built as libnccl-net-acclStrictV6.so exporting only ncclNetPlugin_v6; it carries
// data over TCP on one interface (test_net_tcp.h). Each behaviour is enforced, so a caller
// that drives it any other way fails with an error and a WARN instead of passing by luck:
//   - accept blocks until a peer has connected and sent its hello; after ACCL_STRICT_NET_ACCEPT_MS
//     (default 20000) it gives up with ncclSystemError (two ranks both waiting in accept end
//     there instead of hanging); connect finishes in its one call (a blocking TCP connect);
//   - a comm's requests complete in posting order: test on any request but the comm's oldest
//     outstanding one is ncclInternalError;
//   - test never writes the sizes;
//   - irecv takes one buffer (maxRecvs 1): n != 1 is ncclInternalError;
//   - regMr takes host memory only (ptrSupport NCCL_PTR_HOST); isend / irecv need a registration
//     of their comm that covers the buffer.
// A message is a 16-byte header {tag, size} and the bytes; a receive checks the tag and that the
// message fits. Bytes move only inside test, for the oldest request.
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>

#include "test_net_tcp.h"
#include "transports/net/plugin/net_plugin_abi.h"

namespace {

using namespace accl::netplugin;

constexpr uint64_t kMagic = 0x5374726963743676ull;  // "Strict6v"
constexpr int kPtrHost = 1;                          // NCCL_PTR_HOST
constexpr int kWarn = 2, kInfo = 3;                  // NCCL_LOG_WARN, NCCL_LOG_INFO
constexpr unsigned long kNet = 0x10;                 // NCCL_NET

LogFn gLog = nullptr;
// The format must be a string literal: the plugin's name is pasted in front of it.
#define SLOG(level, ...)                                                               \
  do {                                                                                 \
    if (gLog) gLog((level), kNet, __FILE__, __LINE__, "acclStrictV6: " __VA_ARGS__); \
  } while (0)

accl::testnet::Interface gIf;

struct Hello {
  uint64_t magic;
  uint64_t listenId;
};

struct Handle {  // what listen writes into the 128-byte handle
  uint64_t magic;
  sockaddr_in addr;
  uint64_t listenId;
};
static_assert(sizeof(Handle) <= 128);

struct Listen {
  int fd;
  uint64_t listenId;
};

struct Header {
  uint32_t tag;
  uint32_t reserved;
  uint64_t size;
};

struct Registration {
  void* comm;
  const char* base;
  size_t size;
};

struct Comm;
struct Request {
  Comm* comm;
  uint64_t seq;  // posting order on its comm, from 1
  char* data;
  size_t size;   // send: bytes to send; receive: room in the buffer
  int tag;
  Header header{};
  size_t headerDone = 0;
  size_t dataDone = 0;
};

struct Comm {
  int fd = -1;
  bool send = false;
  ncclResult_t error = ncclSuccess;
  uint64_t posted = 0;
  std::deque<Request*> queue;  // outstanding, oldest first
};

int64_t nowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int acceptDeadlineMs() {
  const char* v = std::getenv("ACCL_STRICT_NET_ACCEPT_MS");
  int ms = v && *v ? std::atoi(v) : 0;
  return ms > 0 ? ms : 20000;
}

// Waits for `events` on fd until `deadline` (ms, monotonic); false at the deadline.
bool waitFor(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - nowMs();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, int(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

ncclResult_t strictInit(LogFn log) {
  static std::once_flag once;
  std::call_once(once, [log] {
    gLog = log;
    gIf = accl::testnet::chooseInterface();
    SLOG(kInfo, "ncclNetPlugin_v6 on interface %s; accept blocks up to %d ms", gIf.name.c_str(), acceptDeadlineMs());
  });
  return ncclSuccess;
}

ncclResult_t strictDevices(int* count) {
  *count = 1;
  return ncclSuccess;
}

ncclResult_t strictGetProperties(int dev, PropsV6* p) {
  if (dev != 0) return ncclInvalidArgument;
  std::memset(p, 0, sizeof(*p));
  p->name = const_cast<char*>(gIf.name.c_str());
  p->guid = 0x53747636;
  p->ptrSupport = kPtrHost;
  p->speedMbps = 10000;
  p->maxComms = 65536;
  p->maxRecvs = 1;
  return ncclSuccess;
}

ncclResult_t strictListen(int dev, void* handleBytes, void** listenComm) {
  *listenComm = nullptr;
  if (dev != 0) return ncclInvalidArgument;
  sockaddr_in addr;
  int fd = accl::testnet::listenTcp(gIf, &addr);
  if (fd < 0) {
    SLOG(kWarn, "cannot listen on %s: %s", gIf.name.c_str(), strerror(errno));
    return ncclSystemError;
  }
  auto* l = new Listen{fd, std::random_device{}() * 0x100000001ull + 1};
  Handle handle{kMagic, addr, l->listenId};
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

// Blocking: the TCP connection completes in the listener's backlog, whether or not the peer is
// in accept yet; then the hello.
ncclResult_t strictConnect(int dev, void* handleBytes, void** sendComm) {
  *sendComm = nullptr;
  Handle h;
  std::memcpy(&h, handleBytes, sizeof(h));
  if (dev != 0 || h.magic != kMagic) {
    SLOG(kWarn, "connect: not an acclStrictV6 handle");
    return ncclInvalidArgument;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  Hello hello{kMagic, h.listenId};
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&h.addr), sizeof(h.addr)) != 0 ||
      ::send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != ssize_t(sizeof(hello))) {
    SLOG(kWarn, "connect to port %d failed: %s", ntohs(h.addr.sin_port), strerror(errno));
    if (fd >= 0) close(fd);
    return ncclRemoteError;
  }
  *sendComm = newComm(fd, true);
  return ncclSuccess;
}

// Blocking, with a deadline: waits for a connection whose hello names this listener.
ncclResult_t strictAccept(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  auto* l = static_cast<Listen*>(listenComm);
  const int waitMs = acceptDeadlineMs();
  const int64_t deadline = nowMs() + waitMs;
  while (waitFor(l->fd, POLLIN, deadline)) {
    int fd = accept4(l->fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Hello hello{};
    size_t got = 0;
    while (got < sizeof(hello) && waitFor(fd, POLLIN, deadline)) {
      ssize_t n = recv(fd, reinterpret_cast<char*>(&hello) + got, sizeof(hello) - got, 0);
      if (n <= 0) break;
      got += size_t(n);
    }
    if (got == sizeof(hello) && hello.magic == kMagic && hello.listenId == l->listenId) {
      *recvComm = newComm(fd, false);
      return ncclSuccess;
    }
    SLOG(kWarn, "accept: dropping a connection that sent %s", got == sizeof(hello) ? "a wrong hello" : "no hello");
    close(fd);
  }
  SLOG(kWarn, "accept: no peer connected within %d ms (ACCL_STRICT_NET_ACCEPT_MS); this plugin's accept blocks, "
       "so every rank must connect its sending sides before it accepts", waitMs);
  return ncclSystemError;
}

ncclResult_t strictRegMr(void* comm, void* data, int size, int type, void** mhandle) {
  *mhandle = nullptr;
  if (type != kPtrHost) {
    SLOG(kWarn, "regMr: pointer type %d is not NCCL_PTR_HOST (%d): this plugin registers host memory only", type,
         kPtrHost);
    return ncclInternalError;
  }
  if (!comm || !data || size <= 0) {
    SLOG(kWarn, "regMr: comm %p, data %p, size %d", comm, data, size);
    return ncclInternalError;
  }
  *mhandle = new Registration{comm, static_cast<const char*>(data), size_t(size)};
  return ncclSuccess;
}

ncclResult_t strictDeregMr(void* comm, void* mhandle) {
  delete static_cast<Registration*>(mhandle);
  return ncclSuccess;
}

ncclResult_t post(const char* call, void* comm, void* data, int size, int tag, void* mhandle, void** request) {
  *request = nullptr;
  auto* c = static_cast<Comm*>(comm);
  if (c->error != ncclSuccess) return c->error;
  auto* m = static_cast<Registration*>(mhandle);
  const char* p = static_cast<const char*>(data);
  if (!m || m->comm != comm || size < 0 || p < m->base || p + size > m->base + m->size) {
    SLOG(kWarn, "%s: [%p, +%d) is not inside a registration of this comm", call, data, size);
    return ncclInternalError;
  }
  if (c->queue.size() >= 32) return ncclSuccess;  // busy: the caller retries
  auto* r = new Request{c, ++c->posted, static_cast<char*>(data), size_t(size), tag};
  if (c->send) r->header = {uint32_t(tag), 0, uint64_t(size)};
  c->queue.push_back(r);
  *request = r;
  return ncclSuccess;
}

ncclResult_t strictIsend(void* sendComm, void* data, int size, int tag, void* mhandle, void** request) {
  return post("isend", sendComm, data, size, tag, mhandle, request);
}

ncclResult_t strictIrecv(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request) {
  *request = nullptr;
  if (n != 1) {
    SLOG(kWarn, "irecv: n = %d buffers, but this plugin's maxRecvs is 1", n);
    return ncclInternalError;
  }
  return post("irecv", recvComm, data[0], sizes[0], tags[0], mhandles ? mhandles[0] : nullptr, request);
}

// Moves the oldest request's bytes until it is done or the socket would block.
ncclResult_t progressOldest(Comm* c, bool* done) {
  Request* r = c->queue.front();
  *done = false;
  while (c->error == ncclSuccess) {
    char* header = reinterpret_cast<char*>(&r->header);
    char* at;
    size_t want;
    if (r->headerDone < sizeof(Header)) {
      at = header + r->headerDone, want = sizeof(Header) - r->headerDone;
    } else {
      if (r->dataDone == r->header.size) return *done = true, ncclSuccess;
      at = r->data + r->dataDone, want = r->header.size - r->dataDone;
    }
    ssize_t n = c->send ? ::send(c->fd, at, want, MSG_NOSIGNAL) : recv(c->fd, at, want, 0);
    if (n > 0 && r->headerDone < sizeof(Header)) {
      r->headerDone += size_t(n);
      if (!c->send && r->headerDone == sizeof(Header) &&
          (r->header.tag != uint32_t(r->tag) || r->header.size > r->size)) {
        SLOG(kWarn, "a message with tag %u, %llu bytes does not match the receive (tag %d, %zu bytes)", r->header.tag,
             (unsigned long long)r->header.size, r->tag, r->size);
        c->error = ncclInvalidUsage;
      }
      continue;
    }
    if (n > 0) {
      r->dataDone += size_t(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return ncclSuccess;
    SLOG(kWarn, "connection lost (%s)", n == 0 ? "closed by the peer" : strerror(errno));
    c->error = ncclRemoteError;
  }
  return c->error;
}

// In order only; the sizes are never written (the caller knows what it posted).
ncclResult_t strictTest(void* request, int* done, int* /*sizes*/) {
  auto* r = static_cast<Request*>(request);
  *done = 0;
  Comm* c = r->comm;
  if (c->queue.empty() || c->queue.front() != r) {
    SLOG(kWarn, "test on %s request #%llu while #%llu, posted before it on the same comm, is outstanding: requests "
         "complete in posting order, so only a comm's oldest request may be tested",
         c->send ? "send" : "receive", (unsigned long long)r->seq,
         c->queue.empty() ? 0ull : (unsigned long long)c->queue.front()->seq);
    return ncclInternalError;
  }
  bool finished = false;
  ncclResult_t res = progressOldest(c, &finished);
  if (res != ncclSuccess) return res;
  if (!finished) return ncclSuccess;
  c->queue.pop_front();
  delete r;
  *done = 1;
  return ncclSuccess;
}

ncclResult_t strictIflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;  // host memory: nothing to flush
  return ncclSuccess;
}

ncclResult_t strictCloseComm(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  if (!c) return ncclSuccess;
  for (Request* r : c->queue) delete r;
  close(c->fd);
  delete c;
  return ncclSuccess;
}

ncclResult_t strictCloseListen(void* listenComm) {
  auto* l = static_cast<Listen*>(listenComm);
  if (!l) return ncclSuccess;
  close(l->fd);
  delete l;
  return ncclSuccess;
}

NetV6 makeTable() {
  NetV6 t{};
  t.name = "acclStrictV6";
  t.init = strictInit;
  t.devices = strictDevices;
  t.getProperties = strictGetProperties;
  t.listen = strictListen;
  t.connect = strictConnect;
  t.accept = strictAccept;
  t.regMr = strictRegMr;
  t.deregMr = strictDeregMr;
  t.isend = strictIsend;
  t.irecv = strictIrecv;
  t.iflush = strictIflush;
  t.test = strictTest;
  t.closeSend = strictCloseComm;
  t.closeRecv = strictCloseComm;
  t.closeListen = strictCloseListen;
  return t;
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) NetV6 ncclNetPlugin_v6 = makeTable();
}
