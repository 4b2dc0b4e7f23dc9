// Tests of the "IB" NetDevice (transports/net/ib) running over the verbs emulator
// (libaccl-verbs-emu.so, loaded through ACCL_IBVERBS_LIB): discovery and NCCL_IB_HCA filtering,
// the connection handshake, send / receive of awkward sizes over one and several QPs, grouped
// receives, junk on the listening port, and errors (a QP forced to error, a vanished peer) that
// must come back as ncclRemoteError naming the peer, without a hang — and a stopped process that
// must not.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "support/scoped_env.h"
#include "transports/net/ib/ib_net.h"

namespace accl {
namespace {

using test::ScopedEnvVar;
using Clock = std::chrono::steady_clock;

int setFault(const char* spec) {
  void* h = dlopen(ACCL_TEST_VERBS_EMU, RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
  auto fn = reinterpret_cast<int (*)(const char*)>(dlsym(h, "accl_verbs_emu_set_fault"));
  int rc = fn ? fn(spec) : -1;
  dlclose(h);
  return rc;
}

class IbNet : public ::testing::Test {
 protected:
  ScopedEnvVar lib_{"ACCL_IBVERBS_LIB", ACCL_TEST_VERBS_EMU};
  ScopedEnvVar ifname_{"ACCL_VERBS_EMU_IFNAME", "lo,lo"};
  ScopedEnvVar sock_{"NCCL_SOCKET_IFNAME", "lo"};
  ScopedEnvVar retry_{"ACCL_VERBS_EMU_RETRY_MS", "1000"};
  void TearDown() override { setFault(""); }

  std::unique_ptr<NetDevice> make() {
    std::unique_ptr<NetDevice> net;
    EXPECT_EQ(createIbNetDevice(&net), ncclSuccess);
    EXPECT_NE(net, nullptr);
    return net;
  }

  // Listens on devRecv, connects from devSend; both ends within a deadline.
  void connectPair(NetDevice* net, int devSend, int devRecv, NetSendComm** s, NetRecvComm** r,
                   NetListenComm** lOut = nullptr) {
    NetHandle handle;
    NetListenComm* l = nullptr;
    ASSERT_EQ(net->listen(devRecv, &handle, &l), ncclSuccess);
    *s = nullptr;
    *r = nullptr;
    auto end = Clock::now() + std::chrono::seconds(20);
    while ((!*s || !*r) && Clock::now() < end) {
      if (!*s) ASSERT_EQ(net->connect(devSend, NetCommConfig{}, handle, s), ncclSuccess);
      if (!*r) ASSERT_EQ(net->accept(l, r), ncclSuccess);
    }
    ASSERT_NE(*s, nullptr);
    ASSERT_NE(*r, nullptr);
    if (lOut)
      *lOut = l;
    else
      EXPECT_EQ(net->closeListen(l), ncclSuccess);
  }

  // Tests a request until done; false on timeout. *res gets the first error.
  static bool waitDone(NetDevice* net, NetRequest* req, size_t* sizes, ncclResult_t* res, int ms = 20000) {
    auto end = Clock::now() + std::chrono::milliseconds(ms);
    int done = 0;
    while (Clock::now() < end) {
      *res = net->test(req, &done, sizes);
      if (*res != ncclSuccess || done) return true;
      std::this_thread::yield();
    }
    return false;
  }

  // Sends `bytes` from a pattern buffer and checks what arrived.
  void sendRecv(NetDevice* net, NetSendComm* s, NetRecvComm* r, size_t bytes, int tag) {
    std::vector<char> src(bytes + 1), dst(bytes + 64, 0x5a);
    for (size_t i = 0; i < bytes; i++) src[i] = static_cast<char>((i * 2654435761u) >> 13);
    NetMemHandle *ms = nullptr, *mr = nullptr;
    ASSERT_EQ(net->regMr(s, src.data(), bytes, kNetPtrHost, &ms), ncclSuccess);
    ASSERT_EQ(net->regMr(r, dst.data(), dst.size(), kNetPtrHost, &mr), ncclSuccess);
    void* data[1] = {dst.data()};
    size_t sizes[1] = {dst.size()};
    int tags[1] = {tag};
    NetRequest* rreq = nullptr;
    ASSERT_EQ(net->irecv(r, 1, data, sizes, tags, &mr, &rreq), ncclSuccess);
    ASSERT_NE(rreq, nullptr);
    NetRequest* sreq = nullptr;
    auto end = Clock::now() + std::chrono::seconds(10);
    while (!sreq && Clock::now() < end) ASSERT_EQ(net->isend(s, src.data(), bytes, tag, ms, &sreq), ncclSuccess);
    ASSERT_NE(sreq, nullptr) << "the clear-to-send never arrived";
    size_t got[1] = {0}, sent[1] = {0};
    ncclResult_t res;
    ASSERT_TRUE(waitDone(net, rreq, got, &res));
    ASSERT_EQ(res, ncclSuccess);
    ASSERT_TRUE(waitDone(net, sreq, sent, &res));
    ASSERT_EQ(res, ncclSuccess);
    EXPECT_EQ(got[0], bytes);
    EXPECT_EQ(sent[0], bytes);
    EXPECT_EQ(memcmp(dst.data(), src.data(), bytes), 0) << bytes << " bytes";
    EXPECT_EQ(dst[bytes], 0x5a) << "wrote past the message";
    EXPECT_EQ(net->deregMr(s, ms), ncclSuccess);
    EXPECT_EQ(net->deregMr(r, mr), ncclSuccess);
  }
};

TEST_F(IbNet, MissingLibraryOrDisabledMeansZeroDevices) {
  {
    ScopedEnvVar lib("ACCL_IBVERBS_LIB", "/nonexistent/libibverbs-none.so.1");
    auto net = make();
    EXPECT_EQ(net->deviceCount(), 0);
    EXPECT_STREQ(net->name(), "IB");
  }
  {
    // The system's libibverbs, when installed: loads and runs whether or not an HCA exists.
    ScopedEnvVar lib("ACCL_IBVERBS_LIB", "libibverbs.so.1");
    auto net = make();
    EXPECT_GE(net->deviceCount(), 0);
  }
  {
    ScopedEnvVar off("NCCL_IB_DISABLE", "1");
    EXPECT_EQ(make()->deviceCount(), 0);
  }
  {
    ScopedEnvVar down("ACCL_VERBS_EMU_PORT_DOWN", "1");
    EXPECT_EQ(make()->deviceCount(), 0);
  }
}

TEST_F(IbNet, PropertiesOfEmulatedPorts) {
  auto net = make();
  ASSERT_EQ(net->deviceCount(), 2);
  NetProperties p;
  ASSERT_EQ(net->getProperties(1, &p), ncclSuccess);
  EXPECT_EQ(p.name, "emu1:1");
  EXPECT_EQ(p.port, 1);
  EXPECT_EQ(p.speedMbps, 100000);  // 4x EDR
  EXPECT_EQ(p.maxRecvs, kNetMaxRecvs);
  EXPECT_TRUE(p.regIsGlobal);
  EXPECT_EQ(p.ptrSupport, kNetPtrHost);
  EXPECT_FALSE(p.gdrDmaBuf);  // the emulator answers the dma-buf probe with EOPNOTSUPP
  EXPECT_EQ(net->getProperties(2, &p), ncclInvalidArgument);
  NetHandle h;
  NetListenComm* l = nullptr;
  EXPECT_EQ(net->listen(-1, &h, &l), ncclInvalidArgument);
}

TEST_F(IbNet, HcaFilter) {
  struct Case {
    const char* spec;
    std::vector<std::string> names;
  } cases[] = {
      {"emu1", {"emu1:1"}},      {"^emu0", {"emu1:1"}},          {"=emu", {}},
      {"emu0:1", {"emu0:1"}},    {"emu0:2", {}},                 {"emu", {"emu0:1", "emu1:1"}},
      {"=emu0,emu1", {"emu0:1", "emu1:1"}}, {"^=emu1:1", {"emu0:1"}},
  };
  for (const Case& c : cases) {
    ScopedEnvVar hca("NCCL_IB_HCA", c.spec);
    auto net = make();
    std::vector<std::string> names;
    for (int d = 0; d < net->deviceCount(); d++) {
      NetProperties p;
      ASSERT_EQ(net->getProperties(d, &p), ncclSuccess);
      names.push_back(p.name);
    }
    EXPECT_EQ(names, c.names) << "NCCL_IB_HCA=" << c.spec;
  }
}

TEST_F(IbNet, GidIndexChoice) {
  {
    ScopedEnvVar gid("NCCL_IB_GID_INDEX", "5");  // the emulator has 2 GIDs
    std::unique_ptr<NetDevice> net;
    EXPECT_EQ(createIbNetDevice(&net), ncclInvalidArgument);
    EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("NCCL_IB_GID_INDEX = 5"), std::string::npos);
  }
  // GID 0 is link-local: QPs addressed through it cannot reach the peer (a route-less GID).
  ScopedEnvVar gid("NCCL_IB_GID_INDEX", "1");
  auto net = make();
  NetSendComm* s;
  NetRecvComm* r;
  connectPair(net.get(), 0, 1, &s, &r);
  sendRecv(net.get(), s, r, 100, 1);
  EXPECT_EQ(net->closeSend(s), ncclSuccess);
  EXPECT_EQ(net->closeRecv(r), ncclSuccess);
}

class IbNetSizes : public IbNet, public ::testing::WithParamInterface<int> {};

TEST_P(IbNetSizes, SendRecvAwkwardSizes) {
  ScopedEnvVar qps("NCCL_IB_QPS_PER_CONNECTION", std::to_string(GetParam()).c_str());
  auto net = make();
  ASSERT_EQ(net->deviceCount(), 2);
  NetSendComm* s;
  NetRecvComm* r;
  connectPair(net.get(), 0, 1, &s, &r);
  int tag = 0;
  for (size_t bytes : {size_t(0), size_t(1), size_t(7), size_t(4099), size_t(16) << 20, size_t(130)}) {
    SCOPED_TRACE(bytes);
    sendRecv(net.get(), s, r, bytes, tag++);
  }
  EXPECT_EQ(net->closeSend(s), ncclSuccess);
  EXPECT_EQ(net->closeRecv(r), ncclSuccess);
}

INSTANTIATE_TEST_SUITE_P(Qps, IbNetSizes, ::testing::Values(1, 3));

TEST_F(IbNet, ManyMessagesInFlightAndGroupedReceives) {
  ScopedEnvVar qps("NCCL_IB_QPS_PER_CONNECTION", "2");
  auto net = make();
  NetSendComm* s;
  NetRecvComm* r;
  connectPair(net.get(), 1, 0, &s, &r);
  constexpr int kMsgs = 40;  // more than the receiver keeps posted at once
  constexpr size_t kBytes = 10007;
  std::vector<char> src(kMsgs * kBytes), dst(kMsgs * kBytes, 0);
  for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<char>(i % 251);
  NetMemHandle *ms, *mr;
  ASSERT_EQ(net->regMr(s, src.data(), src.size(), kNetPtrHost, &ms), ncclSuccess);
  ASSERT_EQ(net->regMr(r, dst.data(), dst.size(), kNetPtrHost, &mr), ncclSuccess);
  std::vector<NetRequest*> sreqs(kMsgs, nullptr), rreqs(kMsgs, nullptr);
  int posted = 0, sent = 0, recvDone = 0, sendDone = 0;
  auto end = Clock::now() + std::chrono::seconds(30);
  while ((recvDone < kMsgs || sendDone < kMsgs) && Clock::now() < end) {
    if (posted < kMsgs) {
      void* d[1] = {dst.data() + posted * kBytes};
      size_t sz[1] = {kBytes};
      int tg[1] = {7};
      ASSERT_EQ(net->irecv(r, 1, d, sz, tg, &mr, &rreqs[posted]), ncclSuccess);
      if (rreqs[posted]) posted++;
    }
    if (sent < posted) {
      ASSERT_EQ(net->isend(s, src.data() + sent * kBytes, kBytes, 7, ms, &sreqs[sent]), ncclSuccess);
      if (sreqs[sent]) sent++;
    }
    int done = 0;
    size_t size = 0;
    if (recvDone < posted) {
      ASSERT_EQ(net->test(rreqs[recvDone], &done, &size), ncclSuccess);
      if (done) {
        EXPECT_EQ(size, kBytes);
        recvDone++;
      }
    }
    if (sendDone < sent) {
      ASSERT_EQ(net->test(sreqs[sendDone], &done, nullptr), ncclSuccess);
      if (done) sendDone++;
    }
  }
  ASSERT_EQ(recvDone, kMsgs);
  ASSERT_EQ(sendDone, kMsgs);
  EXPECT_EQ(memcmp(src.data(), dst.data(), src.size()), 0);
  // A grouped receive: three buffers, three tags, sends posted in another order.
  const size_t want[3] = {5, 0, 3000};
  void* d[3] = {dst.data(), dst.data() + 100, dst.data() + 200};
  size_t sz[3] = {64, 64, 8000};
  int tg[3] = {1, 2, 3};
  NetMemHandle* mhs[3] = {mr, mr, mr};
  NetRequest* rreq = nullptr;
  ASSERT_EQ(net->irecv(r, 3, d, sz, tg, mhs, &rreq), ncclSuccess);
  ASSERT_NE(rreq, nullptr);
  NetRequest* sr[3] = {};
  for (int order : {2, 0, 1}) {
    auto until = Clock::now() + std::chrono::seconds(10);
    while (!sr[order] && Clock::now() < until)
      ASSERT_EQ(net->isend(s, src.data() + 1000 * order, want[order], tg[order], ms, &sr[order]), ncclSuccess);
    ASSERT_NE(sr[order], nullptr);
  }
  size_t got[3] = {};
  ncclResult_t res;
  ASSERT_TRUE(waitDone(net.get(), rreq, got, &res));
  ASSERT_EQ(res, ncclSuccess);
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(got[i], want[i]) << i;
    EXPECT_EQ(memcmp(d[i], src.data() + 1000 * i, want[i]), 0) << i;
    ASSERT_TRUE(waitDone(net.get(), sr[i], nullptr, &res));
    EXPECT_EQ(res, ncclSuccess);
  }
  EXPECT_EQ(net->deregMr(s, ms), ncclSuccess);
  EXPECT_EQ(net->deregMr(r, mr), ncclSuccess);
  EXPECT_EQ(net->closeSend(s), ncclSuccess);
  EXPECT_EQ(net->closeRecv(r), ncclSuccess);
}

// Two processes: the child connects to the parent's listener (handle passed through a pipe)
// and sends 4099 bytes then 16 MiB; the parent receives and checks them.
TEST_F(IbNet, SendRecvAcrossForkedProcesses) {
  int toChild[2];
  ASSERT_EQ(pipe(toChild), 0);
  auto pattern = [](size_t i) { return static_cast<char>((i * 40503u) >> 7); };
  const size_t sizes[2] = {4099, size_t(16) << 20};
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(60);
    int rc = 1;
    std::unique_ptr<NetDevice> net;
    NetHandle handle;
    if (createIbNetDevice(&net) == ncclSuccess && net->deviceCount() == 2 &&
        read(toChild[0], &handle, sizeof(handle)) == static_cast<ssize_t>(sizeof(handle))) {
      NetSendComm* s = nullptr;
      while (!s && net->connect(1, NetCommConfig{}, handle, &s) == ncclSuccess) {
      }
      std::vector<char> src(sizes[1]);
      for (size_t i = 0; i < src.size(); i++) src[i] = pattern(i);
      NetMemHandle* mh = nullptr;
      if (s && net->regMr(s, src.data(), src.size(), kNetPtrHost, &mh) == ncclSuccess) {
        rc = 0;
        for (int m = 0; m < 2 && rc == 0; m++) {
          NetRequest* req = nullptr;
          ncclResult_t res = ncclSuccess;
          while (!req && res == ncclSuccess) res = net->isend(s, src.data(), sizes[m], m, mh, &req);
          int done = 0;
          while (res == ncclSuccess && !done) res = net->test(req, &done, nullptr);
          if (res != ncclSuccess) rc = 2;
        }
        net->deregMr(s, mh);
      }
      if (s) net->closeSend(s);
    }
    _exit(rc);
  }
  auto net = make();
  ASSERT_EQ(net->deviceCount(), 2);
  NetHandle handle;
  NetListenComm* l = nullptr;
  ASSERT_EQ(net->listen(0, &handle, &l), ncclSuccess);
  ASSERT_EQ(write(toChild[1], &handle, sizeof(handle)), static_cast<ssize_t>(sizeof(handle)));
  NetRecvComm* r = nullptr;
  auto end = Clock::now() + std::chrono::seconds(30);
  while (!r && Clock::now() < end) ASSERT_EQ(net->accept(l, &r), ncclSuccess);
  ASSERT_NE(r, nullptr);
  std::vector<char> dst(sizes[1] + 16, 0);
  NetMemHandle* mh = nullptr;
  ASSERT_EQ(net->regMr(r, dst.data(), dst.size(), kNetPtrHost, &mh), ncclSuccess);
  for (int m = 0; m < 2; m++) {
    void* d[1] = {dst.data()};
    size_t sz[1] = {dst.size()};
    int tg[1] = {m};
    NetRequest* req = nullptr;
    ASSERT_EQ(net->irecv(r, 1, d, sz, tg, &mh, &req), ncclSuccess);
    ASSERT_NE(req, nullptr);
    size_t got[1] = {0};
    ncclResult_t res;
    ASSERT_TRUE(waitDone(net.get(), req, got, &res, 30000));
    ASSERT_EQ(res, ncclSuccess);
    EXPECT_EQ(got[0], sizes[m]);
    size_t bad = 0;
    for (size_t i = 0; i < sizes[m]; i++) bad += dst[i] != pattern(i);
    EXPECT_EQ(bad, 0u) << sizes[m] << " bytes";
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(net->deregMr(r, mh), ncclSuccess);
  EXPECT_EQ(net->closeRecv(r), ncclSuccess);
  EXPECT_EQ(net->closeListen(l), ncclSuccess);
  close(toChild[0]);
  close(toChild[1]);
}

TEST_F(IbNet, JunkOnTheListeningPortIsDropped) {
  auto net = make();
  NetHandle handle;
  NetListenComm* l = nullptr;
  ASSERT_EQ(net->listen(0, &handle, &l), ncclSuccess);
  // The handle starts with the listener's address (a SocketAddress).
  sockaddr_in addr;
  memcpy(&addr, handle.bytes, sizeof(addr));
  ASSERT_EQ(addr.sin_family, AF_INET);
  int junk = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(junk, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  char garbage[512];
  memset(garbage, 0xab, sizeof(garbage));
  ASSERT_EQ(send(junk, garbage, sizeof(garbage), 0), static_cast<ssize_t>(sizeof(garbage)));
  int silent = socket(AF_INET, SOCK_STREAM, 0);  // connects and says nothing
  ASSERT_EQ(connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  NetRecvComm* r = nullptr;
  for (int i = 0; i < 50 && !r; i++) {
    ASSERT_EQ(net->accept(l, &r), ncclSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(r, nullptr);
  // The real connection still completes, even with the silent one pending.
  NetSendComm* s = nullptr;
  auto end = Clock::now() + std::chrono::seconds(20);
  while ((!s || !r) && Clock::now() < end) {
    if (!s) ASSERT_EQ(net->connect(1, NetCommConfig{}, handle, &s), ncclSuccess);
    if (!r) ASSERT_EQ(net->accept(l, &r), ncclSuccess);
  }
  ASSERT_NE(s, nullptr);
  ASSERT_NE(r, nullptr);
  sendRecv(net.get(), s, r, 4099, 9);
  close(junk);
  close(silent);
  EXPECT_EQ(net->closeSend(s), ncclSuccess);
  EXPECT_EQ(net->closeRecv(r), ncclSuccess);
  EXPECT_EQ(net->closeListen(l), ncclSuccess);
}

TEST_F(IbNet, TruncationAndForeignTagAreUsageErrors) {
  auto net = make();
  std::vector<char> src(256, 3), dst(256, 0);
  for (int variant = 0; variant < 2; variant++) {
    NetSendComm* s;
    NetRecvComm* r;
    connectPair(net.get(), 0, 1, &s, &r);
    NetMemHandle *ms, *mr;
    ASSERT_EQ(net->regMr(s, src.data(), src.size(), kNetPtrHost, &ms), ncclSuccess);
    ASSERT_EQ(net->regMr(r, dst.data(), dst.size(), kNetPtrHost, &mr), ncclSuccess);
    void* d[1] = {dst.data()};
    size_t sz[1] = {100};
    int tg[1] = {5};
    NetRequest* rreq = nullptr;
    ASSERT_EQ(net->irecv(r, 1, d, sz, tg, &mr, &rreq), ncclSuccess);
    NetRequest* sreq = nullptr;
    ncclResult_t res = ncclSuccess;
    auto end = Clock::now() + std::chrono::seconds(10);
    size_t bytes = variant == 0 ? 101 : 10;
    int tag = variant == 0 ? 5 : 6;
    while (!sreq && res == ncclSuccess && Clock::now() < end) res = net->isend(s, src.data(), bytes, tag, ms, &sreq);
    EXPECT_EQ(res, ncclInvalidUsage);
    EXPECT_EQ(sreq, nullptr);
    std::string msg = ncclGetLastError(nullptr);
    EXPECT_NE(msg.find(variant == 0 ? "truncated" : "tag 6 does not match"), std::string::npos) << msg;
    EXPECT_EQ(net->deregMr(s, ms), ncclSuccess);
    EXPECT_EQ(net->deregMr(r, mr), ncclSuccess);
    EXPECT_EQ(net->closeSend(s), ncclSuccess);
    EXPECT_EQ(net->closeRecv(r), ncclSuccess);  // frees the pending receive too
  }
}

TEST_F(IbNet, ForcedQpErrorIsRemoteErrorNamingPeer) {
  auto net = make();
  NetSendComm* s;
  NetRecvComm* r;
  connectPair(net.get(), 0, 1, &s, &r);
  sendRecv(net.get(), s, r, 1000, 1);  // healthy first
  std::vector<char> src(4096, 1), dst(4096, 0);
  NetMemHandle *ms, *mr;
  ASSERT_EQ(net->regMr(s, src.data(), src.size(), kNetPtrHost, &ms), ncclSuccess);
  ASSERT_EQ(net->regMr(r, dst.data(), dst.size(), kNetPtrHost, &mr), ncclSuccess);
  void* d[1] = {dst.data()};
  size_t sz[1] = {dst.size()};
  int tg[1] = {2};
  NetRequest* rreq = nullptr;
  ASSERT_EQ(net->irecv(r, 1, d, sz, tg, &mr, &rreq), ncclSuccess);
  ASSERT_EQ(setFault("qp_error_after:0"), 0);
  NetRequest* sreq = nullptr;
  auto start = Clock::now();
  ncclResult_t res = ncclSuccess;
  while (!sreq && res == ncclSuccess && Clock::now() < start + std::chrono::seconds(10))
    res = net->isend(s, src.data(), src.size(), 2, ms, &sreq);
  ASSERT_EQ(res, ncclSuccess);
  ASSERT_NE(sreq, nullptr);
  ASSERT_TRUE(waitDone(net.get(), sreq, nullptr, &res, 10000)) << "no error within 10 s";
  EXPECT_EQ(res, ncclRemoteError);
  std::string msg = ncclGetLastError(nullptr);
  EXPECT_NE(msg.find("127.0.0.1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("emu1"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count(), 10);
  // The comm stays failed; closing everything returns promptly.
  NetRequest* again = nullptr;
  EXPECT_EQ(net->isend(s, src.data(), 1, 3, ms, &again), ncclRemoteError);
  int done = 0;
  EXPECT_EQ(net->test(rreq, &done, nullptr), ncclSuccess);  // the receiver has no error of its own
  EXPECT_EQ(done, 0);
  EXPECT_EQ(net->deregMr(s, ms), ncclSuccess);
  EXPECT_EQ(net->deregMr(r, mr), ncclSuccess);
  EXPECT_EQ(net->closeSend(s), ncclSuccess);
  EXPECT_EQ(net->closeRecv(r), ncclSuccess);
}

TEST_F(IbNet, VanishedPeerIsRetryExceededRemoteError) {
  ScopedEnvVar retry("ACCL_VERBS_EMU_RETRY_MS", "500");
  auto net = make();
  NetSendComm* s;
  NetRecvComm* r;
  connectPair(net.get(), 0, 1, &s, &r);
  std::vector<char> src(1 << 20, 1), dst(1 << 20, 0);
  NetMemHandle *ms, *mr;
  ASSERT_EQ(net->regMr(s, src.data(), src.size(), kNetPtrHost, &ms), ncclSuccess);
  ASSERT_EQ(net->regMr(r, dst.data(), dst.size(), kNetPtrHost, &mr), ncclSuccess);
  void* d[1] = {dst.data()};
  size_t sz[1] = {dst.size()};
  int tg[1] = {4};
  NetRequest* rreq = nullptr;
  ASSERT_EQ(net->irecv(r, 1, d, sz, tg, &mr, &rreq), ncclSuccess);
  // Wait for the grant to reach the sender, then the receiving side disappears.
  NetRequest* sreq = nullptr;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(net->deregMr(r, mr), ncclSuccess);
  EXPECT_EQ(net->closeRecv(r), ncclSuccess);
  auto start = Clock::now();
  ncclResult_t res = ncclSuccess;
  while (!sreq && res == ncclSuccess && Clock::now() < start + std::chrono::seconds(10))
    res = net->isend(s, src.data(), src.size(), 4, ms, &sreq);
  ASSERT_EQ(res, ncclSuccess);
  ASSERT_NE(sreq, nullptr);
  ASSERT_TRUE(waitDone(net.get(), sreq, nullptr, &res, 10000));
  EXPECT_EQ(res, ncclRemoteError);
  std::string msg = ncclGetLastError(nullptr);
  EXPECT_NE(msg.find("retry"), std::string::npos) << msg;
  EXPECT_NE(msg.find("127.0.0.1:"), std::string::npos) << msg;
  EXPECT_EQ(net->deregMr(s, ms), ncclSuccess);
  EXPECT_EQ(net->closeSend(s), ncclSuccess);
}

// A real HCA acknowledges while its host is descheduled, so a process that is stopped or starved
// (a loaded CI machine, a sanitizer) must not see retry exceeded. The child moves 16 MiB messages
// with a 400 ms retry budget while the parent stops it for 900 ms at a time.
TEST_F(IbNet, StoppedProcessIsNotRetryExceeded) {
  ScopedEnvVar retry("ACCL_VERBS_EMU_RETRY_MS", "400");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(150);  // sanitizer builds on a busy machine: 12 x 16 MiB took 12 s under ASan
    auto net = make();
    NetSendComm* s = nullptr;
    NetRecvComm* r = nullptr;
    connectPair(net.get(), 0, 1, &s, &r);
    for (int i = 0; i < 12 && !HasFailure(); i++) sendRecv(net.get(), s, r, size_t(16) << 20, i);
    if (s) net->closeSend(s);
    if (r) net->closeRecv(r);
    _exit(HasFailure() ? 1 : 0);
  }
  int status = 0;
  bool exited = false;
  for (int stop = 0; stop < 12 && !exited; stop++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10 + 7 * stop % 30));
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    kill(pid, SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(900));
    kill(pid, SIGCONT);
  }
  if (!exited) ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

}  // namespace
}  // namespace accl
