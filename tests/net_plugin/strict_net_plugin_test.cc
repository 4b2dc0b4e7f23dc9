// The strict v6 test plugin acclStrictV6 (accl_strict_v6_net.cc) behind accl's adapter: it
// exports only ncclNetPlugin_v6, declares host memory and one buffer per receive, and enforces
// what older plugins rely on — accept blocks until a peer connects (an error at its deadline), a
// comm's requests are tested oldest first (a newer one is ncclInternalError), test never reports
// sizes (the adapter says kNetSizeUnknown), irecv takes one buffer, regMr host memory only.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "net_test_util.h"

namespace accl {
namespace {

using netplugin::PluginNetDevice;
using test::connectPair;
using test::NetPair;
using test::pluginPath;

const char* kStrictLib = "libnccl-net-acclStrictV6.so";

std::unique_ptr<PluginNetDevice> openStrict() { return test::openDevice(pluginPath(kStrictLib), 0x5157); }

// Tests `req` until done (oldest-first callers only); false on an error or after 60 s.
bool waitDone(NetDevice& dev, NetRequest* req, size_t* size) {
  auto deadline = std::chrono::steady_clock::now() + test::kNetDeadline;
  int done = 0;
  while (!done && std::chrono::steady_clock::now() < deadline)
    if (dev.test(req, &done, size) != ncclSuccess) return false;
  return done != 0;
}

TEST(StrictNetPlugin, ExportsOnlyV6AndDeclaresHostMemoryAndOneBuffer) {
  void* h = dlopen(pluginPath(kStrictLib).c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  EXPECT_NE(dlsym(h, "ncclNetPlugin_v6"), nullptr);
  for (const char* other : {"ncclNetPlugin_v7", "ncclNetPlugin_v8", "ncclNetPlugin_v9", "ncclNetPlugin_v10",
                            "ncclNetPlugin_v11", "ncclNetPlugin_v12"})
    EXPECT_EQ(dlsym(h, other), nullptr) << other;
  dlclose(h);
  auto device = openStrict();
  ASSERT_TRUE(device);
  EXPECT_STREQ(device->name(), "acclStrictV6");
  EXPECT_EQ(device->pluginVersion(), 6);
  NetProperties props;
  ASSERT_EQ(device->getProperties(0, &props), ncclSuccess);
  EXPECT_EQ(props.ptrSupport, kNetPtrHost);
  EXPECT_EQ(props.maxRecvs, 1);
  EXPECT_TRUE(props.testInOrder);  // every external plugin: NCCL's drive order
}

TEST(StrictNetPlugin, AcceptBlocksAndFailsAtItsDeadline) {
  test::ScopedEnvVar wait("ACCL_STRICT_NET_ACCEPT_MS", "300");
  test::LogCapture log;
  auto device = openStrict();
  ASSERT_TRUE(device);
  NetHandle handle;
  NetListenComm* listen = nullptr;
  ASSERT_EQ(device->listen(0, &handle, &listen), ncclSuccess);
  NetRecvComm* recv = nullptr;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(device->accept(listen, &recv), ncclSystemError);  // nobody connects: it waited, then failed
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  EXPECT_GE(waited.count(), 290);
  EXPECT_EQ(recv, nullptr);
  EXPECT_NE(log.text().find("acclStrictV6: accept: no peer connected within 300 ms"), std::string::npos)
      << log.text();
  device->closeListen(listen);
}

// A connected pair on the strict plugin, with the log captured (members go in reverse order:
// the pair closes its comms before the device goes).
class StrictNetPluginPair : public testing::Test {
 protected:
  void SetUp() override {
    device = openStrict();
    ASSERT_TRUE(device);
    ASSERT_TRUE(connectPair(*device, &pair));
  }
  test::LogCapture log;
  std::unique_ptr<PluginNetDevice> device;
  NetPair pair;
};

TEST_F(StrictNetPluginPair, RequestsAreTestedOldestFirstAndSizesNeverReported) {
  // Three messages of awkward sizes, one registration per side.
  const size_t sizes[3] = {4099, 0, 100003};
  std::vector<unsigned char> src(200000), dst(200000 + 1, 0xEE);
  for (size_t i = 0; i < src.size(); ++i) src[i] = test::patternByte(i, 3);
  NetMemHandle *smh = nullptr, *rmh = nullptr;
  ASSERT_EQ(device->regMr(static_cast<NetSendComm*>(pair.send), src.data(), src.size(), kNetPtrHost, &smh),
            ncclSuccess);
  ASSERT_EQ(device->regMr(static_cast<NetRecvComm*>(pair.recv), dst.data(), dst.size() - 1, kNetPtrHost, &rmh),
            ncclSuccess);
  NetRequest *sreq[3] = {}, *rreq[3] = {};
  size_t offset = 0;
  for (int m = 0; m < 3; ++m) {
    int tag = 10 + m;
    void* buf = dst.data() + offset;
    size_t room = sizes[m] + 7;  // larger than the message
    ASSERT_EQ(device->irecv(pair.recv, 1, &buf, &room, &tag, &rmh, &rreq[m]), ncclSuccess);
    ASSERT_EQ(device->isend(pair.send, src.data() + offset, sizes[m], tag, smh, &sreq[m]), ncclSuccess);
    ASSERT_TRUE(rreq[m] && sreq[m]);
    offset += sizes[m] + 7;
  }
  // A newer receive before the oldest: the plugin's error, naming both.
  int done = 0;
  EXPECT_EQ(device->test(rreq[1], &done, nullptr), ncclInternalError);
  EXPECT_NE(log.text().find("acclStrictV6: test on receive request #2 while #1"), std::string::npos) << log.text();
  // Oldest first: every message arrives; test reports no size.
  for (int m = 0; m < 3; ++m) {
    size_t sent = 1, got = 1;
    ASSERT_TRUE(waitDone(*device, sreq[m], &sent)) << "send " << m;
    ASSERT_TRUE(waitDone(*device, rreq[m], &got)) << "receive " << m;
    EXPECT_EQ(sent, kNetSizeUnknown);
    EXPECT_EQ(got, kNetSizeUnknown);
  }
  offset = 0;
  for (int m = 0; m < 3; ++m) {
    for (size_t i = 0; i < sizes[m]; ++i) ASSERT_EQ(dst[offset + i], src[offset + i]) << "message " << m << " byte " << i;
    for (size_t i = sizes[m]; i < sizes[m] + 7; ++i) ASSERT_EQ(dst[offset + i], 0xEE) << "message " << m << " byte " << i;
    offset += sizes[m] + 7;
  }
  device->deregMr(static_cast<NetSendComm*>(pair.send), smh);
  device->deregMr(static_cast<NetRecvComm*>(pair.recv), rmh);
}

TEST_F(StrictNetPluginPair, OneBufferPerReceiveAndHostMemoryOnly) {
  std::vector<char> buf(8192);
  NetMemHandle* mh = nullptr;
  EXPECT_EQ(device->regMr(static_cast<NetRecvComm*>(pair.recv), buf.data(), buf.size(), kNetPtrCuda, &mh),
            ncclInternalError);
  EXPECT_NE(log.text().find("regMr: pointer type 2 is not NCCL_PTR_HOST"), std::string::npos) << log.text();
  ASSERT_EQ(device->regMr(static_cast<NetRecvComm*>(pair.recv), buf.data(), buf.size(), kNetPtrHost, &mh),
            ncclSuccess);
  void* data[2] = {buf.data(), buf.data() + 4096};
  size_t rooms[2] = {4096, 4096};
  int tags[2] = {1, 2};
  NetMemHandle* mhs[2] = {mh, mh};
  NetRequest* req = nullptr;
  EXPECT_EQ(device->irecv(pair.recv, 2, data, rooms, tags, mhs, &req), ncclInternalError);
  EXPECT_EQ(req, nullptr);
  EXPECT_NE(log.text().find("irecv: n = 2 buffers, but this plugin's maxRecvs is 1"), std::string::npos)
      << log.text();
  // A buffer outside the registration.
  std::vector<char> other(64);
  void* outside = other.data();
  size_t room = other.size();
  EXPECT_EQ(device->irecv(pair.recv, 1, &outside, &room, tags, &mh, &req), ncclInternalError);
  device->deregMr(static_cast<NetRecvComm*>(pair.recv), mh);
}

}  // namespace
}  // namespace accl
