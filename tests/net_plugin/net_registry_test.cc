// The net registry: plugins first, then IB, then Socket; NCCL_NET / netName picks one by name
// without regard to case; a name that is not usable is ncclInvalidUsage listing what is; a
// missing or broken plugin (no such file, a file dlopen refuses, a foreign symbol, init failing,
// no devices, an incomplete table) is logged and the next network is used; "none" disables
// plugins. The built-ins are stand-ins here (an IB with no devices, a Socket with one), except in
// the NetRegistryBuiltins tests, which go through the real list and ncclConfig_t.netName.
#include "transports/net/net_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <ostream>
#include <string>

#include "core/comm/config.h"
#include "net_test_util.h"
#include "transports/net/plugin/plugin_library.h"

namespace accl {
namespace {

using test::pluginPath;

// A network that can be chosen but not used.
class StandInNet final : public NetDevice {
 public:
  StandInNet(const char* name, int devices) : name_(name), devices_(devices) {}
  const char* name() const override { return name_; }
  int deviceCount() const override { return devices_; }
  ncclResult_t getProperties(int, NetProperties*) override { return ncclInternalError; }
  ncclResult_t listen(int, NetHandle*, NetListenComm**) override { return ncclInternalError; }
  ncclResult_t connect(int, const NetCommConfig&, const NetHandle&, NetSendComm**) override {
    return ncclInternalError;
  }
  ncclResult_t accept(NetListenComm*, NetRecvComm**) override { return ncclInternalError; }
  ncclResult_t regMr(void*, void*, size_t, int, NetMemHandle**) override { return ncclInternalError; }
  ncclResult_t deregMr(void*, NetMemHandle*) override { return ncclInternalError; }
  ncclResult_t isend(NetSendComm*, void*, size_t, int, NetMemHandle*, NetRequest**) override {
    return ncclInternalError;
  }
  ncclResult_t irecv(NetRecvComm*, int, void**, size_t*, int*, NetMemHandle**, NetRequest**) override {
    return ncclInternalError;
  }
  ncclResult_t iflush(NetRecvComm*, int, void**, int*, NetMemHandle**, NetRequest**) override {
    return ncclInternalError;
  }
  ncclResult_t test(NetRequest*, int*, size_t*) override { return ncclInternalError; }
  ncclResult_t closeSend(NetSendComm*) override { return ncclSuccess; }
  ncclResult_t closeRecv(NetRecvComm*) override { return ncclSuccess; }
  ncclResult_t closeListen(NetListenComm*) override { return ncclSuccess; }

 private:
  const char* name_;
  int devices_;
};

ncclResult_t makeIbWithoutDevices(std::unique_ptr<NetDevice>* out) {
  *out = std::make_unique<StandInNet>("IB", 0);
  return ncclSuccess;
}
ncclResult_t makeSocket(std::unique_ptr<NetDevice>* out) {
  *out = std::make_unique<StandInNet>("Socket", 1);
  return ncclSuccess;
}
const std::vector<BuiltinNet> kStandIns = {{"IB", makeIbWithoutDevices}, {"Socket", makeSocket}};

const std::string kTestPlugin = pluginPath("libnccl-net-acclTest.so");

std::string choose(const std::string& netName, const std::vector<std::string>& plugins, ncclResult_t* res = nullptr) {
  NetChoice choice;
  choice.netName = netName;
  std::unique_ptr<NetDevice> device;
  ncclResult_t r = chooseNetDeviceFrom(choice, plugins, kStandIns, &device);
  if (res) *res = r;
  return device ? device->name() : "";
}

TEST(NetRegistry, PluginFirstThenBuiltins) {
  EXPECT_EQ(choose("", {kTestPlugin}), "acclTest");
  EXPECT_EQ(choose("", {}), "Socket");  // IB reports no devices: skipped
}

TEST(NetRegistry, NetNamePicksByNameIgnoringCase) {
  EXPECT_EQ(choose("Socket", {kTestPlugin}), "Socket");
  EXPECT_EQ(choose("socket", {kTestPlugin}), "Socket");
  EXPECT_EQ(choose("acclTest", {kTestPlugin}), "acclTest");
  EXPECT_EQ(choose("ACCLTEST", {kTestPlugin}), "acclTest");
}

TEST(NetRegistry, UnusableNameIsInvalidUsageListingTheNetworks) {
  test::LogCapture log;
  ncclResult_t res;
  EXPECT_EQ(choose("IB", {kTestPlugin}, &res), "");
  EXPECT_EQ(res, ncclInvalidUsage);
  std::string error = lastErrorText();
  EXPECT_NE(error.find("'IB'"), std::string::npos) << error;
  EXPECT_NE(error.find("IB (no devices)"), std::string::npos) << error;
  EXPECT_NE(error.find("Socket (1 device)"), std::string::npos) << error;
  EXPECT_NE(error.find("acclTest (1 device"), std::string::npos) << error;

  EXPECT_EQ(choose("Infiniband", {}, &res), "");
  EXPECT_EQ(res, ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find("'Infiniband' names no usable network"), std::string::npos)
      << lastErrorText();
}

TEST(NetRegistry, MissingPluginIsLoggedAndSkipped) {
  test::LogCapture log;
  EXPECT_EQ(choose("", {"acclNoSuchPlugin"}), "Socket");
  std::string error = lastErrorText();  // a WARN: the user named it
  EXPECT_NE(error.find("'acclNoSuchPlugin' not found (tried acclNoSuchPlugin, libnccl-net-acclNoSuchPlugin.so)"),
            std::string::npos)
      << error;
  // The next plugin in the list is used.
  EXPECT_EQ(choose("", {"acclNoSuchPlugin", kTestPlugin}), "acclTest");
}

TEST(NetRegistry, UnloadableFileIsLoggedWithTheLoaderError) {
  char path[] = "/tmp/libnccl-net-acclNotElf-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "not a library\n", 14), 14);
  close(fd);
  test::LogCapture log;
  EXPECT_EQ(choose("", {path}), "Socket");
  std::string error = lastErrorText();
  unlink(path);
  EXPECT_NE(error.find(std::string("cannot load net plugin '") + path + "'"), std::string::npos) << error;
}

TEST(NetRegistry, MissingDefaultLibraryIsOnlyInfo) {
  test::LogCapture log;
  EXPECT_EQ(choose("", {""}), "Socket");  // no libnccl-net.so anywhere here
  EXPECT_STREQ(lastErrorText(), "");
  EXPECT_NE(log.text().find("net plugin 'libnccl-net.so' not found"), std::string::npos) << log.text();
}

struct BrokenCase {
  const char* lib;
  const char* logged;
};

void PrintTo(const BrokenCase& c, std::ostream* os) { *os << c.lib; }

class NetRegistryBroken : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(NetRegistryBroken, FallsBackWithALogLine) {
  test::LogCapture log;
  const std::string broken = pluginPath(GetParam().lib);
  EXPECT_EQ(choose("", {broken}), "Socket");
  EXPECT_NE(std::string(lastErrorText()).find(GetParam().logged), std::string::npos)
      << "last error: " << lastErrorText() << "\nlog:\n"
      << log.text();
  EXPECT_EQ(choose("", {broken, kTestPlugin}), "acclTest");  // the next plugin in the list
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, NetRegistryBroken,
    ::testing::Values(BrokenCase{"libnccl-net-acclBrokenBadSym.so", "exports none of ncclNetPlugin_v12..v6"},
                      BrokenCase{"libnccl-net-acclBrokenInitFail.so",
                                 "acclBroken (" ACCL_NET_PLUGIN_DIR "/libnccl-net-acclBrokenInitFail.so) failed "
                                 "to initialize"},
                      BrokenCase{"libnccl-net-acclBrokenNoDev.so", "reports no devices"},
                      BrokenCase{"libnccl-net-acclBrokenIncomplete.so", "ncclNetPlugin_v8 has no isend"}),
    [](const auto& info) {
      std::string name = info.param.lib;
      return name.substr(std::string("libnccl-net-acclBroken").size(),
                         name.size() - std::string("libnccl-net-acclBroken").size() - 3);
    });

TEST(NetRegistry, NoneDisablesPlugins) {
  test::ScopedEnvVar env("NCCL_NET_PLUGIN", "none");
  std::vector<std::string> entries = netplugin::pluginEntries();
  EXPECT_TRUE(entries.empty());
  ncclResult_t res;
  EXPECT_EQ(choose("acclTest", entries, &res), "");
  EXPECT_EQ(res, ncclInvalidUsage);
  EXPECT_EQ(choose("", entries), "Socket");
}

// Through the real list of built-ins and NCCL_NET_PLUGIN, as a communicator would choose.
TEST(NetRegistryBuiltins, SettingsPickSocketOrThePlugin) {
  test::ScopedEnvVar plugin("NCCL_NET_PLUGIN", "acclTest");
  NetChoice choice;
  std::unique_ptr<NetDevice> device;
  ASSERT_EQ(chooseNetDevice(choice, &device), ncclSuccess);
  EXPECT_STREQ(device->name(), "acclTest");
  choice.netName = "Socket";
  ASSERT_EQ(chooseNetDevice(choice, &device), ncclSuccess) << lastErrorText();
  EXPECT_STREQ(device->name(), "Socket");
}

// ncclConfig_t.netName reaches the registry through CommConfig; NCCL_NET overrides it.
TEST(NetRegistryBuiltins, ConfigNetNameAndNcclNetOverride) {
  test::ScopedEnvVar plugin("NCCL_NET_PLUGIN", kTestPlugin.c_str());
  ncclConfig_t user = NCCL_CONFIG_INITIALIZER;
  user.netName = "ACCLTEST";
  for (const char* env : {static_cast<const char*>(nullptr), "socket"}) {
    test::ScopedEnvVar net("NCCL_NET", env);
    CommConfig config;
    ASSERT_EQ(resolveConfig("ncclCommInitRankConfig", &user, nullptr, &config), ncclSuccess);
    NetChoice choice;
    choice.netName = config.netName;
    std::unique_ptr<NetDevice> device;
    ASSERT_EQ(chooseNetDevice(choice, &device), ncclSuccess) << lastErrorText();
    EXPECT_STREQ(device->name(), env ? "Socket" : "acclTest");
  }
}

TEST(NetRegistryBuiltins, IbIsUsedOrTheClearError) {
  test::ScopedEnvVar plugin("NCCL_NET_PLUGIN", "none");
  NetChoice choice;
  choice.netName = "ib";
  std::unique_ptr<NetDevice> device;
  ncclResult_t res = chooseNetDevice(choice, &device);
  if (res == ncclSuccess) {
    EXPECT_STREQ(device->name(), "IB");
    EXPECT_GT(device->deviceCount(), 0);
  } else {
    EXPECT_EQ(res, ncclInvalidUsage);
    std::string error = lastErrorText();
    EXPECT_NE(error.find("'ib' names no usable network"), std::string::npos) << error;
    EXPECT_NE(error.find("Socket ("), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace accl
