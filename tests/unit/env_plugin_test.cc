// NCCL env plugins (NCCL_ENV_PLUGIN, util/env_plugin.h): the v2 and v1 fixtures in
// env_plugin_fixture/ supply setting values in place of the environment, through paramStr /
// paramInt and the ncclParam* API, with source "plugin"; switching NCCL_ENV_PLUGIN finalizes
// the old plugin; "none", a missing library and a failing init leave the environment in charge.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "nccl.h"
#include "support/scoped_env.h"
#include "util/env_plugin.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {
namespace {

// Keeps a fixture library loaded so its counters can be read.
struct Fixture {
  explicit Fixture(const char* path) : handle(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {}
  ~Fixture() {
    if (handle) dlclose(handle);
  }
  int counter(const char* name) const {
    auto* p = static_cast<int*>(dlsym(handle, name));
    return p ? *p : -1;
  }
  void* handle;
};

class EnvPluginTest : public ::testing::Test {
 protected:
  test::ScopedEnvVar conf_{"NCCL_CONF_FILE", "/nonexistent/accl-env-plugin-test.conf"};
  test::ScopedEnvVar retry_{"NCCL_SOCKET_RETRY_CNT", "5"};  // what the environment says
  test::ScopedEnvVar spin_{"ACCL_HOST_SPIN", "9"};          // a setting the fixtures do not know
  test::ScopedEnvVar level_{"NCCL_P2P_LEVEL", nullptr};
  test::ScopedEnvVar fail_{"ACCL_TEST_ENV_FAIL_INIT", nullptr};
  test::ScopedEnvVar plugin_{"NCCL_ENV_PLUGIN", nullptr};
  void TearDown() override {
    unsetenv("NCCL_ENV_PLUGIN");
    paramStr("NCCL_SOCKET_RETRY_CNT");  // back to no plugin before the next test
  }
};

TEST_F(EnvPluginTest, WithoutPluginTheEnvironmentDecides) {
  setenv("NCCL_ENV_PLUGIN", "none", 1);
  EXPECT_EQ(paramInt("NCCL_SOCKET_RETRY_CNT"), 5);
  EXPECT_STREQ(paramSource("NCCL_SOCKET_RETRY_CNT"), "env");
  int version = -1;
  EXPECT_EQ(envPluginName(&version), "");
  EXPECT_EQ(version, 0);
}

TEST_F(EnvPluginTest, V2PluginReplacesEnvironmentAndConfig) {
  Fixture lib(ACCL_TEST_ENV_V2);
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  const int inits = lib.counter("accl_env_fixture_init_calls");
  setenv("NCCL_ENV_PLUGIN", ACCL_TEST_ENV_V2, 1);
  EXPECT_EQ(paramInt("NCCL_SOCKET_RETRY_CNT"), 77);
  EXPECT_STREQ(paramSource("NCCL_SOCKET_RETRY_CNT"), "plugin");
  EXPECT_EQ(paramStr("NCCL_P2P_LEVEL"), "NVL");
  // Unknown to the plugin: the default, not the environment's 9 (the plugin replaces it, as in NCCL).
  EXPECT_EQ(paramInt("ACCL_HOST_SPIN"), -1);
  EXPECT_STREQ(paramSource("ACCL_HOST_SPIN"), "default");
  // NCCL_ENV_PLUGIN itself always comes from the environment.
  EXPECT_EQ(paramStr("NCCL_ENV_PLUGIN"), ACCL_TEST_ENV_V2);

  int version = 0;
  EXPECT_EQ(envPluginName(&version), "fixture-env-v2");
  EXPECT_EQ(version, 2);
  EXPECT_EQ(lib.counter("accl_env_fixture_init_calls"), inits + 1);  // loaded once, however often read
  EXPECT_EQ(lib.counter("accl_env_fixture_version_seen"), NCCL_VERSION_CODE);

  // Through the public API too.
  ncclParamHandle_t h;
  ASSERT_EQ(ncclParamBind(&h, "NCCL_SOCKET_RETRY_CNT"), ncclSuccess);
  uint8_t u8 = 0;
  ASSERT_EQ(ncclParamGetU8(h, &u8), ncclSuccess);
  EXPECT_EQ(u8, 77);
  const char* value = nullptr;
  int len = 0;
  ASSERT_EQ(ncclParamGetParameter("NCCL_P2P_LEVEL", &value, &len), ncclSuccess);
  EXPECT_STREQ(value, "NVL");
}

// The first settings read may come from the logger parsing NCCL_DEBUG, and the v2 fixture logs
// from init: that must neither deadlock nor recurse. The plugin does not know NCCL_DEBUG, so
// the environment's INFO is not used: logging stays off.
TEST_F(EnvPluginTest, PluginLoadedWhileTheLoggerReadsItsSettings) {
  test::ScopedEnvVar debug("NCCL_DEBUG", "INFO");
  resetLogSettings();
  setenv("NCCL_ENV_PLUGIN", ACCL_TEST_ENV_V2, 1);
  EXPECT_EQ(logLevel(), kLogNone);
  EXPECT_EQ(envPluginName(nullptr), "fixture-env-v2");
  unsetenv("NCCL_ENV_PLUGIN");
  resetLogSettings();
  EXPECT_EQ(logLevel(), kLogInfo);  // the environment again
  resetLogSettings();
}

TEST_F(EnvPluginTest, SwitchingPluginsFinalizesTheOldOne) {
  Fixture v2(ACCL_TEST_ENV_V2), v1(ACCL_TEST_ENV_V1);
  ASSERT_NE(v2.handle, nullptr) << dlerror();
  ASSERT_NE(v1.handle, nullptr) << dlerror();
  setenv("NCCL_ENV_PLUGIN", ACCL_TEST_ENV_V2, 1);
  EXPECT_EQ(paramInt("NCCL_SOCKET_RETRY_CNT"), 77);
  const int v2Finals = v2.counter("accl_env_fixture_finalize_calls");
  setenv("NCCL_ENV_PLUGIN", ACCL_TEST_ENV_V1, 1);
  EXPECT_EQ(paramInt("NCCL_SOCKET_RETRY_CNT"), 66);
  EXPECT_EQ(v2.counter("accl_env_fixture_finalize_calls"), v2Finals + 1);
  int version = 0;
  EXPECT_EQ(envPluginName(&version), "fixture-env-v1");
  EXPECT_EQ(version, 1);
  const int v1Finals = v1.counter("accl_env_fixture_finalize_calls");
  setenv("NCCL_ENV_PLUGIN", "none", 1);
  EXPECT_EQ(paramInt("NCCL_SOCKET_RETRY_CNT"), 5);
  EXPECT_EQ(v1.counter("accl_env_fixture_finalize_calls"), v1Finals + 1);
}

TEST_F(EnvPluginTest, MissingOrFailingPluginFallsBackToTheEnvironment) {
  setenv("NCCL_ENV_PLUGIN", "/nonexistent/libnccl-env-missing.so", 1);
  EXPECT_EQ(paramInt("NCCL_SOCKET_RETRY_CNT"), 5);
  EXPECT_EQ(envPluginName(nullptr), "");
  setenv("NCCL_ENV_PLUGIN", "accl-no-such-env-plugin", 1);  // libnccl-env-<name>.so, then the name
  EXPECT_EQ(paramInt("NCCL_SOCKET_RETRY_CNT"), 5);

  Fixture lib(ACCL_TEST_ENV_V2);
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  const int finals = lib.counter("accl_env_fixture_finalize_calls");
  setenv("ACCL_TEST_ENV_FAIL_INIT", "1", 1);
  setenv("NCCL_ENV_PLUGIN", ACCL_TEST_ENV_V2, 1);
  EXPECT_EQ(paramInt("NCCL_SOCKET_RETRY_CNT"), 5);
  EXPECT_STREQ(paramSource("NCCL_SOCKET_RETRY_CNT"), "env");
  EXPECT_EQ(envPluginName(nullptr), "");
  EXPECT_EQ(lib.counter("accl_env_fixture_finalize_calls"), finals);  // a failed init is not finalized

  // A library without the symbols (libm) is no plugin either.
  setenv("NCCL_ENV_PLUGIN", "libm.so.6", 1);
  EXPECT_EQ(paramInt("NCCL_SOCKET_RETRY_CNT"), 5);
}

}  // namespace
}  // namespace accl
