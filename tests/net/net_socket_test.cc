// Tests of the built-in "Socket" NetDevice (transports/net/socket) over loopback: devices and
// properties, the non-blocking listen / connect / accept handshake, messages of awkward sizes with
// every byte checked, tag order, receives larger than sends, several threads x sockets, bad input
// on the listening port, a peer that goes away mid-transfer, and closing with work outstanding.
// Every wait has a deadline: a broken device fails a test, it never hangs it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/scoped_env.h"
#include "transports/net/socket/socket_net.h"
#include "transports/net/socket/socket_net_config.h"
#include "transports/net/socket/socket_net_listen.h"
#include "transports/net/socket/socket_net_wire.h"
#include "util/last_error.h"
#include "util/time.h"

namespace accl {
namespace {

using test::ScopedEnvVar;
constexpr int64_t kWaitMs = 30000;  // generous: CI runs many tests on 2 cores
constexpr size_t kBig = size_t(64) << 20;

unsigned char patternByte(size_t i, int seed) {
  return static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 13)) & 0xff);
}

std::vector<unsigned char> pattern(size_t n, int seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = patternByte(i, seed);
  return v;
}

// First index where `got` differs from the pattern, or n.
size_t firstMismatch(const unsigned char* got, size_t n, int seed) {
  for (size_t i = 0; i < n; ++i)
    if (got[i] != patternByte(i, seed)) return i;
  return n;
}

std::unique_ptr<NetDevice> loopbackDevice() {
  std::unique_ptr<NetDevice> dev;
  EXPECT_EQ(createSocketNetDevice(&dev), ncclSuccess);
  return dev;
}

// One listen + connect + accept on device 0, closed on scope exit.
struct Pair {
  NetDevice* dev = nullptr;
  NetHandle handle{};
  NetListenComm* listen = nullptr;
  NetSendComm* send = nullptr;
  NetRecvComm* recv = nullptr;
  ~Pair() { closeAll(); }
  void closeAll() {
    if (send) dev->closeSend(send);
    if (recv) dev->closeRecv(recv);
    if (listen) dev->closeListen(listen);
    send = nullptr;
    recv = nullptr;
    listen = nullptr;
  }
};

::testing::AssertionResult startListen(NetDevice* dev, Pair* p) {
  p->dev = dev;
  ncclResult_t r = dev->listen(0, &p->handle, &p->listen);
  if (r != ncclSuccess || !p->listen) return ::testing::AssertionFailure() << "listen failed: " << r;
  return ::testing::AssertionSuccess();
}

// Retries connect and accept (both non-blocking) until both ends exist.
::testing::AssertionResult finishConnect(Pair* p, int64_t timeoutMs = kWaitMs) {
  Deadline deadline(timeoutMs);
  int rounds = 0;
  while (!p->send || !p->recv) {
    if (!p->send) {
      ncclResult_t r = p->dev->connect(0, NetCommConfig{}, p->handle, &p->send);
      if (r != ncclSuccess) return ::testing::AssertionFailure() << "connect failed: " << r;
    }
    if (!p->recv) {
      ncclResult_t r = p->dev->accept(p->listen, &p->recv);
      if (r != ncclSuccess) return ::testing::AssertionFailure() << "accept failed: " << r;
    }
    if (deadline.expired()) return ::testing::AssertionFailure() << "no connection after " << timeoutMs << " ms";
    ++rounds;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return ::testing::AssertionSuccess() << rounds << " rounds";
}

::testing::AssertionResult connectPair(NetDevice* dev, Pair* p) {
  auto r = startListen(dev, p);
  if (!r) return r;
  return finishConnect(p);
}

ncclResult_t postSend(Pair& p, void* data, size_t size, int tag, NetRequest** req) {
  Deadline deadline(kWaitMs);
  while (true) {
    ncclResult_t r = p.dev->isend(p.send, data, size, tag, nullptr, req);
    if (r != ncclSuccess || *req || deadline.expired()) return r;
    std::this_thread::yield();
  }
}

ncclResult_t postRecv(Pair& p, void* data, size_t size, int tag, NetRequest** req) {
  Deadline deadline(kWaitMs);
  while (true) {
    void* d[1] = {data};
    size_t s[1] = {size};
    int t[1] = {tag};
    NetMemHandle* mh[1] = {nullptr};
    ncclResult_t r = p.dev->irecv(p.recv, 1, d, s, t, mh, req);
    if (r != ncclSuccess || *req || deadline.expired()) return r;
    std::this_thread::yield();
  }
}

// Tests every request until all are done (null entries count as done); sizes[i] gets request i's
// size. Returns the first error, or ncclInProgress when the deadline passed.
ncclResult_t waitAll(NetDevice* dev, std::vector<NetRequest*> reqs, std::vector<size_t>* sizes = nullptr,
                     int64_t timeoutMs = kWaitMs) {
  if (sizes) sizes->assign(reqs.size(), SIZE_MAX);
  Deadline deadline(timeoutMs);
  while (true) {
    bool all = true;
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (!reqs[i]) continue;
      int done = 0;
      size_t sz = 0;
      ncclResult_t r = dev->test(reqs[i], &done, &sz);
      if (r != ncclSuccess) return r;
      if (done) {
        reqs[i] = nullptr;
        if (sizes) (*sizes)[i] = sz;
      } else {
        all = false;
      }
    }
    if (all) return ncclSuccess;
    if (deadline.expired()) return ncclInProgress;
    std::this_thread::yield();
  }
}

socketnet::HandleWire decodeHandle(const NetHandle& h) {
  socketnet::HandleWire w;
  std::memcpy(&w, h.bytes, sizeof(w));
  return w;
}

class SocketNetTest : public ::testing::Test {
 protected:
  ScopedEnvVar ifname_{"NCCL_SOCKET_IFNAME", "=lo"};
  ScopedEnvVar family_{"NCCL_SOCKET_FAMILY", "AF_INET"};
};

// ---- devices and settings ----

TEST_F(SocketNetTest, LoopbackDeviceProperties) {
  auto dev = loopbackDevice();
  ASSERT_TRUE(dev);
  EXPECT_STREQ(dev->name(), "Socket");
  ASSERT_EQ(dev->deviceCount(), 1);
  NetProperties props;
  ASSERT_EQ(dev->getProperties(0, &props), ncclSuccess);
  EXPECT_EQ(props.name, "lo");
  EXPECT_EQ(props.pciPath, "");  // loopback has no device behind it
  EXPECT_EQ(props.speedMbps, 10000);
  EXPECT_EQ(props.ptrSupport, kNetPtrHost);
  EXPECT_EQ(props.maxRecvs, 1);
  EXPECT_EQ(props.latencyUs, 0.0f);
  EXPECT_EQ(dev->getProperties(1, &props), ncclInvalidArgument);
  EXPECT_EQ(dev->getProperties(-1, &props), ncclInvalidArgument);
}

TEST_F(SocketNetTest, NoMatchingInterfaceIsASystemError) {
  ScopedEnvVar none("NCCL_SOCKET_IFNAME", "=no-such-interface0");
  std::unique_ptr<NetDevice> dev;
  EXPECT_EQ(createSocketNetDevice(&dev), ncclSystemError);
  EXPECT_FALSE(dev);
  EXPECT_NE(std::string(lastErrorText()).find("no usable network interface"), std::string::npos) << lastErrorText();
}

TEST(SocketNetParallelism, NcclDefaultsAndCaps) {
  using socketnet::chooseParallelism;
  // Auto on an ordinary NIC: no helper threads, the data rides the control socket.
  EXPECT_EQ(chooseParallelism(-2, -2, "").dataSockets(), 0);
  EXPECT_EQ(chooseParallelism(2, -2, "").nThreads, 2);
  EXPECT_EQ(chooseParallelism(2, -2, "").nSocksPerThread, 1);
  EXPECT_EQ(chooseParallelism(2, 2, "").dataSockets(), 4);
  EXPECT_EQ(chooseParallelism(20, 1, "").nThreads, 16);  // 16 threads at most
  EXPECT_EQ(chooseParallelism(16, 8, "").nSocksPerThread, 4);  // 64 sockets at most
  EXPECT_EQ(chooseParallelism(0, 4, "").dataSockets(), 0);
  EXPECT_EQ(chooseParallelism(3, 0, "").nThreads, 0);
}

TEST_F(SocketNetTest, HandleCarriesTheListenersChoice) {
  ScopedEnvVar t("NCCL_SOCKET_NTHREADS", "3");
  ScopedEnvVar s("NCCL_NSOCKS_PERTHREAD", "2");
  auto dev = loopbackDevice();
  Pair p;
  ASSERT_TRUE(startListen(dev.get(), &p));
  socketnet::HandleWire h = decodeHandle(p.handle);
  EXPECT_EQ(h.kind, socketnet::kHandleKind);
  EXPECT_EQ(h.nThreads, 3u);
  EXPECT_EQ(h.nSocksPerThread, 2u);
  EXPECT_EQ(h.addr.hostString(), "127.0.0.1");
  EXPECT_NE(h.addr.port(), 0);
  // A second listener gets its own random magic.
  Pair q;
  ASSERT_TRUE(startListen(dev.get(), &q));
  EXPECT_NE(decodeHandle(q.handle).listenMagic, h.listenMagic);
  // A handle from somewhere else is refused.
  NetHandle junk{};
  std::memset(junk.bytes, 0x5a, sizeof(junk.bytes));
  NetSendComm* sc = nullptr;
  EXPECT_EQ(dev->connect(0, NetCommConfig{}, junk, &sc), ncclInvalidArgument);
  EXPECT_EQ(sc, nullptr);
}

TEST_F(SocketNetTest, RegMrIsHostOnlyAndIflushIsANoOp) {
  auto dev = loopbackDevice();
  Pair p;
  ASSERT_TRUE(connectPair(dev.get(), &p));
  char buf[64];
  NetMemHandle* mh = nullptr;
  ASSERT_EQ(dev->regMr(p.recv, buf, sizeof(buf), kNetPtrHost, &mh), ncclSuccess);
  EXPECT_NE(mh, nullptr);
  EXPECT_EQ(dev->deregMr(p.recv, mh), ncclSuccess);
  EXPECT_EQ(dev->regMr(p.recv, buf, sizeof(buf), kNetPtrCuda, &mh), ncclInvalidArgument);
  NetRequest* req = reinterpret_cast<NetRequest*>(1);
  void* d[1] = {buf};
  int s[1] = {64};
  EXPECT_EQ(dev->iflush(p.recv, 1, d, s, nullptr, &req), ncclSuccess);
  EXPECT_EQ(req, nullptr);
}

// ---- data, for each threads x sockets configuration ----

struct Config {
  const char* nThreads;
  const char* nSocks;
};

class SocketNetDataTest : public SocketNetTest, public ::testing::WithParamInterface<Config> {
 protected:
  ScopedEnvVar threads_{"NCCL_SOCKET_NTHREADS", GetParam().nThreads};
  ScopedEnvVar socks_{"NCCL_NSOCKS_PERTHREAD", GetParam().nSocks};
};

TEST_P(SocketNetDataTest, AwkwardSizesArriveIntact) {
  auto dev = loopbackDevice();
  Pair p;
  ASSERT_TRUE(connectPair(dev.get(), &p));
  int seed = 1;
  for (size_t size : {size_t(0), size_t(1), size_t(7), size_t(4099), size_t(200001), kBig}) {
    SCOPED_TRACE("size " + std::to_string(size));
    std::vector<unsigned char> src = pattern(size, seed);
    std::vector<unsigned char> dst(size + 16, 0xee);
    NetRequest *rr = nullptr, *sr = nullptr;
    ASSERT_EQ(postRecv(p, dst.data(), size, 5, &rr), ncclSuccess);
    ASSERT_EQ(postSend(p, src.data(), size, 5, &sr), ncclSuccess);
    ASSERT_TRUE(rr && sr);
    std::vector<size_t> sizes;
    ASSERT_EQ(waitAll(dev.get(), {rr, sr}, &sizes), ncclSuccess);
    EXPECT_EQ(sizes[0], size);
    EXPECT_EQ(sizes[1], size);
    EXPECT_EQ(firstMismatch(dst.data(), size, seed), size);
    for (size_t i = size; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xee) << "byte past the message written";
    ++seed;
  }
}

TEST_P(SocketNetDataTest, ManyOutstandingMessagesMeetReceivesInOrder) {
  auto dev = loopbackDevice();
  Pair p;
  ASSERT_TRUE(connectPair(dev.get(), &p));
  // Inline, medium and multi-task messages interleaved, all posted before any completes.
  const std::vector<size_t> sizes = {3, 300000, 0, 128, 129, 1 << 20, 65537, 9};
  std::vector<std::vector<unsigned char>> src, dst;
  std::vector<NetRequest*> recvs, sends;
  for (size_t i = 0; i < sizes.size(); ++i) {
    src.push_back(pattern(sizes[i], 10 + static_cast<int>(i)));
    dst.emplace_back(sizes[i] + 1000, 0);  // each receive is larger than its send
    NetRequest* r = nullptr;
    ASSERT_EQ(postRecv(p, dst[i].data(), dst[i].size(), 100 + static_cast<int>(i), &r), ncclSuccess);
    recvs.push_back(r);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    NetRequest* s = nullptr;
    ASSERT_EQ(postSend(p, src[i].data(), sizes[i], 100 + static_cast<int>(i), &s), ncclSuccess);
    sends.push_back(s);
  }
  // Test the receives newest first: completion does not depend on the order of test calls.
  std::vector<NetRequest*> reversed(recvs.rbegin(), recvs.rend());
  std::vector<size_t> got;
  ASSERT_EQ(waitAll(dev.get(), reversed, &got), ncclSuccess);
  ASSERT_EQ(waitAll(dev.get(), sends), ncclSuccess);
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(got[sizes.size() - 1 - i], sizes[i]) << "message " << i;
    EXPECT_EQ(firstMismatch(dst[i].data(), sizes[i], 10 + static_cast<int>(i)), sizes[i]) << "message " << i;
  }
}

TEST_P(SocketNetDataTest, AFullCommReturnsANullRequestUntilWorkCompletes) {
  auto dev = loopbackDevice();
  Pair p;
  ASSERT_TRUE(connectPair(dev.get(), &p));
  const int kMax = socketnet::kMaxRequests;
  std::vector<int> dst(kMax + 1, -1), src(kMax + 1);
  std::vector<NetRequest*> recvs;
  for (int i = 0; i < kMax; ++i) {
    NetRequest* r = nullptr;
    void* d[1] = {&dst[i]};
    size_t sz[1] = {sizeof(int)};
    int tag[1] = {i};
    ASSERT_EQ(dev->irecv(p.recv, 1, d, sz, tag, nullptr, &r), ncclSuccess);
    ASSERT_NE(r, nullptr) << "receive " << i;
    recvs.push_back(r);
  }
  NetRequest* extra = reinterpret_cast<NetRequest*>(1);
  void* d[1] = {&dst[kMax]};
  size_t sz[1] = {sizeof(int)};
  int tag[1] = {kMax};
  ASSERT_EQ(dev->irecv(p.recv, 1, d, sz, tag, nullptr, &extra), ncclSuccess);
  EXPECT_EQ(extra, nullptr);  // full: the caller retries later
  std::vector<NetRequest*> sends;
  for (int i = 0; i < kMax; ++i) {
    src[i] = 1000 + i;
    NetRequest* s = nullptr;
    ASSERT_EQ(postSend(p, &src[i], sizeof(int), i, &s), ncclSuccess);
    sends.push_back(s);
  }
  ASSERT_EQ(waitAll(dev.get(), recvs), ncclSuccess);
  ASSERT_EQ(waitAll(dev.get(), sends), ncclSuccess);
  for (int i = 0; i < kMax; ++i) EXPECT_EQ(dst[i], 1000 + i);
  ASSERT_EQ(dev->irecv(p.recv, 1, d, sz, tag, nullptr, &extra), ncclSuccess);
  EXPECT_NE(extra, nullptr);
  src[kMax] = 7;
  NetRequest* s = nullptr;
  ASSERT_EQ(postSend(p, &src[kMax], sizeof(int), kMax, &s), ncclSuccess);
  ASSERT_EQ(waitAll(dev.get(), {extra, s}), ncclSuccess);
  EXPECT_EQ(dst[kMax], 7);
}

TEST_P(SocketNetDataTest, ReceiveLargerThanSendReportsTheSentSize) {
  auto dev = loopbackDevice();
  Pair p;
  ASSERT_TRUE(connectPair(dev.get(), &p));
  const size_t sent = (size_t(5) << 20) + 3, room = size_t(8) << 20;
  std::vector<unsigned char> src = pattern(sent, 3), dst(room, 0xee);
  NetRequest *rr = nullptr, *sr = nullptr;
  ASSERT_EQ(postRecv(p, dst.data(), room, 0, &rr), ncclSuccess);
  ASSERT_EQ(postSend(p, src.data(), sent, 0, &sr), ncclSuccess);
  std::vector<size_t> sizes;
  ASSERT_EQ(waitAll(dev.get(), {rr, sr}, &sizes), ncclSuccess);
  EXPECT_EQ(sizes[0], sent);
  EXPECT_EQ(firstMismatch(dst.data(), sent, 3), sent);
  EXPECT_EQ(dst[sent], 0xee);
  EXPECT_EQ(dst[room - 1], 0xee);
}

TEST_P(SocketNetDataTest, SendLargerThanReceiveFailsTheConnection) {
  std::vector<unsigned char> src = pattern(1000, 1), dst(999);  // outlive the comms (declared first)
  auto dev = loopbackDevice();
  Pair p;
  ASSERT_TRUE(connectPair(dev.get(), &p));
  NetRequest *rr = nullptr, *sr = nullptr;
  ASSERT_EQ(postRecv(p, dst.data(), dst.size(), 0, &rr), ncclSuccess);
  ASSERT_EQ(postSend(p, src.data(), src.size(), 0, &sr), ncclSuccess);
  EXPECT_EQ(waitAll(dev.get(), {rr}), ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find("truncated"), std::string::npos) << lastErrorText();
}

TEST_P(SocketNetDataTest, TagMismatchFailsTheConnection) {
  char src[16] = {}, dst[16];
  auto dev = loopbackDevice();
  Pair p;
  ASSERT_TRUE(connectPair(dev.get(), &p));
  NetRequest *rr = nullptr, *sr = nullptr;
  ASSERT_EQ(postRecv(p, dst, sizeof(dst), 1, &rr), ncclSuccess);
  ASSERT_EQ(postSend(p, src, sizeof(src), 2, &sr), ncclSuccess);
  EXPECT_EQ(waitAll(dev.get(), {rr}), ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find("tag 2"), std::string::npos) << lastErrorText();
}

TEST_P(SocketNetDataTest, PeerClosingMidTransferIsARemoteError) {
  auto dev = loopbackDevice();
  std::vector<unsigned char> src(kBig, 1), dst(kBig);
  // The sender goes away: the receiver fails. Its receive is posted only after the close, so what
  // got across is what the sockets' buffers held, never the whole 64 MiB. (Posted before, a
  // sender whose helpers kept pace with the receiver could finish the send while the test thread
  // was slow to close, as happened under TSan: then there is nothing left to fail.)
  {
    Pair p;
    ASSERT_TRUE(connectPair(dev.get(), &p));
    NetRequest *rr = nullptr, *sr = nullptr;
    ASSERT_EQ(postSend(p, src.data(), kBig, 0, &sr), ncclSuccess);
    ASSERT_EQ(dev->closeSend(p.send), ncclSuccess);
    p.send = nullptr;
    int64_t t0 = nowMs();
    ncclResult_t res = postRecv(p, dst.data(), kBig, 0, &rr);
    if (res == ncclSuccess) res = waitAll(dev.get(), {rr}, nullptr, 10000);
    EXPECT_EQ(res, ncclRemoteError);
    EXPECT_LT(nowMs() - t0, 10000);
    EXPECT_NE(std::string(lastErrorText()).find("127.0.0.1"), std::string::npos) << lastErrorText();
  }
  // The receiver goes away: the sender fails.
  // (No receive is posted: the 64 MiB cannot all get across before the close.)
  {
    Pair p;
    ASSERT_TRUE(connectPair(dev.get(), &p));
    NetRequest* sr = nullptr;
    ASSERT_EQ(postSend(p, src.data(), kBig, 0, &sr), ncclSuccess);
    ASSERT_EQ(dev->closeRecv(p.recv), ncclSuccess);
    p.recv = nullptr;
    EXPECT_EQ(waitAll(dev.get(), {sr}, nullptr, 10000), ncclRemoteError);
    EXPECT_NE(std::string(lastErrorText()).find("127.0.0.1"), std::string::npos) << lastErrorText();
  }
}

TEST_P(SocketNetDataTest, CloseWithRequestsOutstandingReturnsPromptly) {
  auto dev = loopbackDevice();
  std::vector<unsigned char> src(kBig, 1), dst(kBig);
  Pair p;
  ASSERT_TRUE(connectPair(dev.get(), &p));
  NetRequest* r = nullptr;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(postSend(p, src.data(), kBig, i, &r), ncclSuccess);
    ASSERT_EQ(postRecv(p, dst.data(), kBig, i, &r), ncclSuccess);
  }
  NetRequest* lone = nullptr;
  ASSERT_EQ(postRecv(p, dst.data(), 10, 9, &lone), ncclSuccess);  // never sent
  int64_t t0 = nowMs();
  p.closeAll();
  EXPECT_LT(nowMs() - t0, 5000);
}

std::string configName(const ::testing::TestParamInfo<Config>& info) {
  std::string threads = info.param.nThreads;
  return threads == "-2" ? std::string("Auto") : "T" + threads + "xS" + info.param.nSocks;
}

INSTANTIATE_TEST_SUITE_P(ThreadsBySockets, SocketNetDataTest,
                         ::testing::Values(Config{"-2", "-2"}, Config{"1", "1"}, Config{"2", "2"}), configName);

// ---- the listening port under bad input ----

int rawConnect(const SocketAddress& addr) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, &addr.sa, addr.length()) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void sendHello(int fd, uint64_t magic, int32_t type, uint64_t connId, uint32_t index, uint32_t nData) {
  unsigned char hello[socketnet::kHelloBytes];
  socketnet::HelloTail tail{connId, index, nData};
  std::memcpy(hello, &magic, 8);
  std::memcpy(hello + 8, &type, 4);
  std::memcpy(hello + 12, &tail, sizeof(tail));
  ASSERT_EQ(::send(fd, hello, sizeof(hello), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(hello)));
}

TEST_F(SocketNetTest, BadConnectionsAreRejectedWhileTheGenuineOneCompletes) {
  ScopedEnvVar t("NCCL_SOCKET_NTHREADS", "2");
  ScopedEnvVar s("NCCL_NSOCKS_PERTHREAD", "2");
  ScopedEnvVar hs("ACCL_SOCKET_HANDSHAKE_MS", "300");
  auto dev = loopbackDevice();
  Pair p;
  ASSERT_TRUE(startListen(dev.get(), &p));
  socketnet::HandleWire h = decodeHandle(p.handle);
  const int32_t netType = static_cast<int32_t>(SocketType::kNetSocket);
  std::vector<int> strangers;
  auto stranger = [&]() {
    int fd = rawConnect(h.addr);
    EXPECT_GE(fd, 0);
    strangers.push_back(fd);
    return fd;
  };
  const char junk[] = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_EQ(::send(stranger(), junk, sizeof(junk), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(junk)));
  sendHello(stranger(), h.listenMagic ^ 1, netType, 77, 0, 4);  // wrong magic
  sendHello(stranger(), h.listenMagic, 1, 77, 0, 4);            // right magic, bootstrap type
  sendHello(stranger(), h.listenMagic, netType, 77, 9, 4);      // socket index out of range
  sendHello(stranger(), h.listenMagic, netType, 77, 1, 2);      // wrong number of data sockets
  ASSERT_EQ(::send(stranger(), "ab", 2, MSG_NOSIGNAL), 2);      // half a magic, then silence
  stranger();                                                   // silent
  const uint64_t expected = strangers.size();
  auto* listener = dynamic_cast<socketnet::SocketNetListen*>(p.listen);
  ASSERT_NE(listener, nullptr);
  // Let the listener see the strangers before the genuine peer arrives.
  Deadline seen(kWaitMs);
  while (listener->rejected() < expected - 2 && !seen.expired()) {
    NetRecvComm* rc = nullptr;
    ASSERT_EQ(dev->accept(p.listen, &rc), ncclSuccess);
    ASSERT_EQ(rc, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(finishConnect(&p));
  // The silent ones are dropped once their handshake time is up.
  Deadline deadline(kWaitMs);
  while (listener->rejected() < expected && !deadline.expired()) {
    NetRecvComm* rc = nullptr;
    ASSERT_EQ(dev->accept(p.listen, &rc), ncclSuccess);
    EXPECT_EQ(rc, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(listener->rejected(), expected);
  std::string last = lastErrorText();
  EXPECT_NE(last.find("rejected a connection from 127.0.0.1:"), std::string::npos) << last;
  for (int fd : strangers) ::close(fd);
  // The genuine connection works.
  std::vector<unsigned char> src = pattern(1 << 20, 4), dst(1 << 20);
  NetRequest *rr = nullptr, *sr = nullptr;
  ASSERT_EQ(postRecv(p, dst.data(), dst.size(), 0, &rr), ncclSuccess);
  ASSERT_EQ(postSend(p, src.data(), src.size(), 0, &sr), ncclSuccess);
  ASSERT_EQ(waitAll(dev.get(), {rr, sr}), ncclSuccess);
  EXPECT_EQ(firstMismatch(dst.data(), dst.size(), 4), dst.size());
}

TEST_F(SocketNetTest, Ipv6LoopbackCarriesData) {
  ScopedEnvVar family("NCCL_SOCKET_FAMILY", "AF_INET6");
  ScopedEnvVar t("NCCL_SOCKET_NTHREADS", "1");
  ScopedEnvVar s("NCCL_NSOCKS_PERTHREAD", "2");
  std::unique_ptr<NetDevice> dev;
  if (createSocketNetDevice(&dev) != ncclSuccess) GTEST_SKIP() << "no IPv6 address on lo";
  Pair p;
  ASSERT_TRUE(startListen(dev.get(), &p));
  EXPECT_EQ(decodeHandle(p.handle).addr.family(), AF_INET6);
  ASSERT_TRUE(finishConnect(&p));
  std::vector<unsigned char> src = pattern(3 << 20, 6), dst(3 << 20);
  NetRequest *rr = nullptr, *sr = nullptr;
  ASSERT_EQ(postRecv(p, dst.data(), dst.size(), 0, &rr), ncclSuccess);
  ASSERT_EQ(postSend(p, src.data(), src.size(), 0, &sr), ncclSuccess);
  ASSERT_EQ(waitAll(dev.get(), {rr, sr}), ncclSuccess);
  EXPECT_EQ(firstMismatch(dst.data(), dst.size(), 6), dst.size());
}

// ---- lifetimes ----

TEST_F(SocketNetTest, DestroyingTheDeviceCancelsADialInProgress) {
  ScopedEnvVar retries("NCCL_SOCKET_RETRY_CNT", "1000");
  auto dev = loopbackDevice();
  // A listener that is gone: its port refuses, and the dialer keeps retrying.
  NetHandle handle;
  {
    Pair gone;
    ASSERT_TRUE(startListen(dev.get(), &gone));
    handle = gone.handle;
  }
  NetSendComm* sc = nullptr;
  ASSERT_EQ(dev->connect(0, NetCommConfig{}, handle, &sc), ncclSuccess);
  EXPECT_EQ(sc, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(dev->connect(0, NetCommConfig{}, handle, &sc), ncclSuccess);
  EXPECT_EQ(sc, nullptr);
  int64_t t0 = nowMs();
  dev.reset();
  EXPECT_LT(nowMs() - t0, 2000);
}

TEST_F(SocketNetTest, TwoDevicesCarryTrafficAtTheSameTime) {
  ScopedEnvVar t("NCCL_SOCKET_NTHREADS", "1");
  ScopedEnvVar s("NCCL_NSOCKS_PERTHREAD", "2");
  auto a = loopbackDevice(), b = loopbackDevice();
  auto run = [](NetDevice* dev, int seed, bool* ok) {
    Pair p;
    if (!connectPair(dev, &p)) return;
    std::vector<unsigned char> src = pattern(size_t(8) << 20, seed), dst(size_t(8) << 20);
    for (int round = 0; round < 4; ++round) {
      NetRequest *rr = nullptr, *sr = nullptr;
      if (postRecv(p, dst.data(), dst.size(), round, &rr) != ncclSuccess) return;
      if (postSend(p, src.data(), src.size(), round, &sr) != ncclSuccess) return;
      if (waitAll(dev, {rr, sr}) != ncclSuccess) return;
      if (firstMismatch(dst.data(), dst.size(), seed) != dst.size()) return;
    }
    *ok = true;
  };
  bool okA = false, okB = false;
  std::thread ta(run, a.get(), 1, &okA), tb(run, b.get(), 2, &okB);
  ta.join();
  tb.join();
  EXPECT_TRUE(okA);
  EXPECT_TRUE(okB);
}

}  // namespace
}  // namespace accl
