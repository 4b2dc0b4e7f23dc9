// NCCL_NET_PLUGIN=STATIC_PLUGIN: the plugin is the one linked into the program. This binary links
// acclTest (ncclNetPlugin_v8) in and exports it; the registry finds it by that name and moves data
// through it.
#include <gtest/gtest.h>

#include <memory>

#include "net_test_util.h"
#include "transports/net/net_registry.h"

namespace accl {
namespace {

TEST(NetPluginStatic, StaticPluginIsTheOneLinkedIntoTheProgram) {
  test::ScopedEnvVar plugin("NCCL_NET_PLUGIN", "STATIC_PLUGIN");
  NetChoice choice;
  choice.netName = "acclTest";
  std::unique_ptr<NetDevice> device;
  ASSERT_EQ(chooseNetDevice(choice, &device), ncclSuccess) << lastErrorText();
  EXPECT_STREQ(device->name(), "acclTest");
  test::NetPair pair;
  ASSERT_TRUE(test::connectPair(*device, &pair));
  EXPECT_TRUE(test::transfer(pair, 4099, 4099, 9));
}

}  // namespace
}  // namespace accl
