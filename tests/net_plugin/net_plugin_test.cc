// External net plugins behind NetDevice: NCCL_NET_PLUGIN parsing, loading the acclTest plugin by
// name (library path) and by absolute path, the newest exported ABI version winning, data of
// 0 / 1 / 4099 / 8 MiB bytes through every ABI version's adapter, the v11+ per-communicator
// context, one library load shared by communicators and unloaded after the last, the int-size
// limit of pre-v9 plugins, a closed peer reported as ncclRemoteError, a released device closing
// what was left open, and a junk connection to a plugin listener being dropped while the real one
// completes.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net_test_util.h"
#include "transports/net/plugin/plugin_library.h"
#include "transports/net/plugin/plugin_net_device.h"

namespace accl {
namespace {

using netplugin::PluginLibrary;
using netplugin::PluginNetDevice;
using test::connectPair;
using test::NetPair;
using test::pluginPath;
using test::transfer;

using test::openDevice;

TEST(NetPluginEntries, ParsesTheSetting) {
  using V = std::vector<std::string>;
  EXPECT_EQ(netplugin::pluginEntriesFor("", false), V{""});  // unset: the default library
  EXPECT_EQ(netplugin::pluginEntriesFor("none", true), V{});
  EXPECT_EQ(netplugin::pluginEntriesFor("NONE", true), V{});
  EXPECT_EQ(netplugin::pluginEntriesFor("", true), V{});
  EXPECT_EQ(netplugin::pluginEntriesFor("a, b,,/x/libnccl-net-y.so ", true), (V{"a", "b", "/x/libnccl-net-y.so"}));
  {
    test::ScopedEnvVar env("NCCL_NET_PLUGIN", "none");
    EXPECT_TRUE(netplugin::pluginEntries().empty());
  }
  test::ScopedEnvVar env("NCCL_NET_PLUGIN", nullptr);
  EXPECT_EQ(netplugin::pluginEntries(), V{""});
}

TEST(NetPlugin, TestPluginExportsOnlyV8) {
  void* h = dlopen(pluginPath("libnccl-net-acclTest.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  EXPECT_NE(dlsym(h, "ncclNetPlugin_v8"), nullptr);
  for (const char* other : {"ncclNetPlugin_v6", "ncclNetPlugin_v7", "ncclNetPlugin_v9", "ncclNetPlugin_v10",
                            "ncclNetPlugin_v11", "ncclNetPlugin_v12"})
    EXPECT_EQ(dlsym(h, other), nullptr) << other;
  dlclose(h);
}

TEST(NetPlugin, LoadsByNameThroughTheLibraryPath) {
  test::LogCapture log;
  auto device = openDevice("acclTest");
  ASSERT_TRUE(device) << "libnccl-net-acclTest.so not found by name: is " ACCL_NET_PLUGIN_DIR " in LD_LIBRARY_PATH?";
  EXPECT_STREQ(device->name(), "acclTest");
  EXPECT_EQ(device->pluginVersion(), 8);
  EXPECT_EQ(device->pluginFile(), "libnccl-net-acclTest.so");  // tried "acclTest" as given first
  EXPECT_EQ(device->deviceCount(), 1);
  EXPECT_NE(log.text().find("loaded net plugin acclTest from libnccl-net-acclTest.so (ncclNetPlugin_v8)"),
            std::string::npos)
      << log.text();
}

TEST(NetPlugin, LoadsByAbsolutePathAndReportsProperties) {
  auto device = openDevice(pluginPath("libnccl-net-acclTest.so"));
  ASSERT_TRUE(device);
  NetProperties props;
  ASSERT_EQ(device->getProperties(0, &props), ncclSuccess);
  EXPECT_FALSE(props.name.empty());
  EXPECT_EQ(props.pciPath, "");  // the plugin leaves it null
  EXPECT_EQ(props.ptrSupport, kNetPtrHost);
  EXPECT_EQ(props.speedMbps, 10000);
  EXPECT_EQ(props.maxRecvs, 1);
  EXPECT_FALSE(props.forceFlush);
  EXPECT_EQ(props.maxP2pBytes, size_t(1) << 30);  // int-sized ABI: NCCL's 1 GiB
  EXPECT_EQ(props.maxCollBytes, size_t(512) << 20);
  EXPECT_EQ(device->getProperties(1, &props), ncclInvalidArgument);
}

TEST(NetPlugin, MovesDataThroughTheV8Plugin) {
  auto device = openDevice(pluginPath("libnccl-net-acclTest.so"));
  ASSERT_TRUE(device);
  NetPair pair;
  ASSERT_TRUE(connectPair(*device, &pair));
  int tag = 0;
  for (size_t size : {size_t(0), size_t(1), size_t(4099), size_t(8) << 20})
    EXPECT_TRUE(transfer(pair, size, size, ++tag));
  // A receive larger than the message: the size that arrived is reported.
  EXPECT_TRUE(transfer(pair, 4099, 10000, ++tag));
}

class NetPluginVersion : public ::testing::TestWithParam<int> {};

TEST_P(NetPluginVersion, AdapterMovesData) {
  const int version = GetParam();
  auto device = openDevice(pluginPath("libnccl-net-acclTestV" + std::to_string(version) + ".so"));
  ASSERT_TRUE(device);
  EXPECT_EQ(device->pluginVersion(), version);
  NetProperties props;
  ASSERT_EQ(device->getProperties(0, &props), ncclSuccess);
  EXPECT_EQ(props.maxP2pBytes, version >= 9 ? size_t(1) << 31 : size_t(1) << 30);
  NetPair pair;
  ASSERT_TRUE(connectPair(*device, &pair));
  int tag = 100;
  for (size_t size : {size_t(0), size_t(1), size_t(4099), size_t(1) << 20})
    EXPECT_TRUE(transfer(pair, size, size, ++tag));
}

INSTANTIATE_TEST_SUITE_P(EveryAbi, NetPluginVersion, ::testing::Values(6, 7, 9, 10, 11, 12),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

TEST(NetPlugin, NewestExportedVersionWins) {
  auto device = openDevice(pluginPath("libnccl-net-acclTestPair.so"));  // exports v6 and v11
  ASSERT_TRUE(device);
  EXPECT_EQ(device->pluginVersion(), 11);
  NetPair pair;
  ASSERT_TRUE(connectPair(*device, &pair));
  EXPECT_TRUE(transfer(pair, 4099, 4099, 7));
}

TEST(NetPlugin, V11PluginGetsOneContextPerCommunicator) {
  test::LogCapture log;
  {
    auto a = openDevice(pluginPath("libnccl-net-acclTestV11.so"), 0xa1);
    auto b = openDevice(pluginPath("libnccl-net-acclTestV11.so"), 0xb2);
    ASSERT_TRUE(a && b);
    NetPair pa, pb;
    ASSERT_TRUE(connectPair(*a, &pa));
    ASSERT_TRUE(connectPair(*b, &pb));
    EXPECT_TRUE(transfer(pa, 1000, 1000, 1));
    EXPECT_TRUE(transfer(pb, 2000, 2000, 2));
  }
  std::string text = log.text();
  EXPECT_NE(text.find("acclTest: context for comm a1"), std::string::npos) << text;
  EXPECT_NE(text.find("acclTest: context for comm b2"), std::string::npos) << text;
  EXPECT_NE(text.find("acclTest: finalize context for comm a1"), std::string::npos) << text;
  EXPECT_NE(text.find("acclTest: finalize context for comm b2"), std::string::npos) << text;
}

TEST(NetPlugin, PreV11PluginIsInitializedOncePerLoad) {
  test::LogCapture log;
  {
    auto a = openDevice(pluginPath("libnccl-net-acclTestV9.so"));
    auto b = openDevice(pluginPath("libnccl-net-acclTestV9.so"));
    ASSERT_TRUE(a && b);
  }
  std::string text = log.text();
  size_t first = text.find("acclTest: ncclNetPlugin_v9 using interface");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("acclTest: ncclNetPlugin_v9 using interface", first + 1), std::string::npos) << text;
}

TEST(NetPlugin, CommunicatorsOnParallelThreads) {
  // Each thread plays one communicator: its own device from the shared library, its own pair.
  for (const char* lib : {"libnccl-net-acclTest.so", "libnccl-net-acclTestV12.so"}) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([lib, t] {
        auto device = openDevice(pluginPath(lib), 0x100 + t);
        ASSERT_TRUE(device);
        NetPair pair;
        ASSERT_TRUE(connectPair(*device, &pair));
        for (int m = 0; m < 3; ++m) EXPECT_TRUE(transfer(pair, (size_t(1) << 20) + t, (size_t(1) << 20) + t, m));
      });
    for (auto& th : threads) th.join();
  }
}

TEST(NetPlugin, LibraryIsSharedAndUnloadedAfterTheLastUser) {
  const std::string path = pluginPath("libnccl-net-acclTestV10.so");
  auto a = PluginLibrary::load(path);
  auto b = PluginLibrary::load(path);
  ASSERT_TRUE(a);
  EXPECT_EQ(a.get(), b.get());
  auto device = openDevice(path);
  ASSERT_TRUE(device);
  a.reset();
  b.reset();
  void* probe = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(probe, nullptr);  // the device still holds it
  if (probe) dlclose(probe);
  device.reset();
  probe = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_EQ(probe, nullptr) << "still loaded after the last device went away";
  if (probe) dlclose(probe);
}

TEST(NetPlugin, IntSizedPluginRejectsMessagesOverOneGiB) {
  auto device = openDevice(pluginPath("libnccl-net-acclTest.so"));
  ASSERT_TRUE(device);
  NetPair pair;
  ASSERT_TRUE(connectPair(*device, &pair));
  NetRequest* req = nullptr;
  char byte = 0;
  // The size is checked before the plugin sees anything, so the pointer is never read.
  EXPECT_EQ(device->isend(pair.send, &byte, (size_t(1) << 30) + 1, 1, nullptr, &req), ncclInternalError);
  EXPECT_EQ(req, nullptr);
  EXPECT_NE(std::string(lastErrorText()).find("exceeds"), std::string::npos) << lastErrorText();
  EXPECT_TRUE(transfer(pair, 64, 64, 2));  // the connection is unharmed
}

TEST(NetPlugin, PeerClosingIsARemoteErrorNamedInTheLastError) {
  auto device = openDevice(pluginPath("libnccl-net-acclTest.so"));
  ASSERT_TRUE(device);
  NetPair pair;
  ASSERT_TRUE(connectPair(*device, &pair));
  setLastError("");
  char buffer[64];
  void* data = buffer;
  size_t size = sizeof(buffer);
  int tag = 5;
  NetRequest* req = nullptr;
  ASSERT_EQ(device->irecv(pair.recv, 1, &data, &size, &tag, nullptr, &req), ncclSuccess);
  ASSERT_NE(req, nullptr);
  ASSERT_EQ(device->closeSend(pair.send), ncclSuccess);
  pair.send = nullptr;
  ncclResult_t res = ncclSuccess;
  int done = 0;
  auto deadline = std::chrono::steady_clock::now() + test::kNetDeadline;
  while (res == ncclSuccess && !done && std::chrono::steady_clock::now() < deadline)
    res = device->test(req, &done, nullptr);
  EXPECT_EQ(res, ncclRemoteError);
  EXPECT_NE(std::string(lastErrorText()).find("acclTest: connection lost"), std::string::npos) << lastErrorText();
}

TEST(NetPlugin, ReleasingADeviceClosesWhatIsLeftOpen) {
  // Receiver on device a, sender on device b; b goes away (an abort) without closing anything.
  auto a = openDevice(pluginPath("libnccl-net-acclTest.so"), 0xa);
  auto b = openDevice(pluginPath("libnccl-net-acclTest.so"), 0xb);
  ASSERT_TRUE(a && b);
  NetHandle handle;
  NetListenComm* listen = nullptr;
  ASSERT_EQ(a->listen(0, &handle, &listen), ncclSuccess);
  NetSendComm* send = nullptr;
  NetRecvComm* recv = nullptr;
  NetListenComm* bListen = nullptr;
  NetHandle bHandle;
  ASSERT_EQ(b->listen(0, &bHandle, &bListen), ncclSuccess);
  auto deadline = std::chrono::steady_clock::now() + test::kNetDeadline;
  while ((!recv || !send) && std::chrono::steady_clock::now() < deadline) {
    if (!send) ASSERT_EQ(b->connect(0, NetCommConfig(), handle, &send), ncclSuccess);
    if (!recv) ASSERT_EQ(a->accept(listen, &recv), ncclSuccess);
  }
  ASSERT_TRUE(recv && send);
  char buffer[16];
  void* data = buffer;
  size_t size = sizeof(buffer);
  int tag = 1;
  NetRequest* req = nullptr;
  ASSERT_EQ(a->irecv(recv, 1, &data, &size, &tag, nullptr, &req), ncclSuccess);
  ASSERT_NE(req, nullptr);
  b.reset();  // closes b's send comm and listener
  ncclResult_t res = ncclSuccess;
  int done = 0;
  while (res == ncclSuccess && !done && std::chrono::steady_clock::now() < deadline)
    res = a->test(req, &done, nullptr);
  EXPECT_EQ(res, ncclRemoteError);
  EXPECT_EQ(a->closeRecv(recv), ncclSuccess);  // frees the failed request too
  EXPECT_EQ(a->closeListen(listen), ncclSuccess);
}

TEST(NetPlugin, JunkConnectionIsDroppedAndTheRealOneCompletes) {
  auto device = openDevice(pluginPath("libnccl-net-acclTest.so"));
  ASSERT_TRUE(device);
  NetHandle handle;
  NetListenComm* listen = nullptr;
  ASSERT_EQ(device->listen(0, &handle, &listen), ncclSuccess);
  // acclTest's handle: an 8-byte magic, then the listening sockaddr_in.
  sockaddr_in addr;
  std::memcpy(&addr, handle.bytes + 8, sizeof(addr));
  int junk = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(junk, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const char garbage[] = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_EQ(::send(junk, garbage, 16, 0), 16);
  NetRecvComm* recv = nullptr;
  NetSendComm* send = nullptr;
  auto deadline = std::chrono::steady_clock::now() + test::kNetDeadline;
  while ((!recv || !send) && std::chrono::steady_clock::now() < deadline) {
    if (!recv) ASSERT_EQ(device->accept(listen, &recv), ncclSuccess);
    if (!send) ASSERT_EQ(device->connect(0, NetCommConfig(), handle, &send), ncclSuccess);
  }
  ASSERT_TRUE(recv && send);
  NetPair pair;
  pair.dev = device.get();
  pair.listen = listen;
  pair.send = send;
  pair.recv = recv;
  EXPECT_TRUE(transfer(pair, 4099, 4099, 3));
  close(junk);
}

}  // namespace
}  // namespace accl
