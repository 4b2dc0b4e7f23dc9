// Tuner plugins (NCCL_TUNER_PLUGIN): the v6, v5 and v2 fixtures in tuner_plugin_fixture/ change
// the tuner's choice and channel count, v6 is preferred over the v5 its library also exports and
// adjusts chunk sizes, v5's init sees NCCL's constants and its edits reach the model, init /
// finalize are called once each, and a missing, disabled or failing plugin leaves the built-in
// model in charge (with a warning where the user named one).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "tuner/gpu_model.h"
#include "tuner/tuner.h"
#include "tuner/tuner_plugin.h"
#include "util/last_error.h"

namespace accl {
namespace {

constexpr size_t kMiB = 1 << 20, kGiB = size_t(1) << 30;

TunerTopo dgxOneNode() {
  TunerTopo t;
  t.nRanks = 8;
  t.ppn = 8;
  t.host = false;
  t.sm = 90;
  t.cpuVendor = "GenuineIntel";
  t.ll128Supported = true;
  t.ring.nChannels = t.tree.nChannels = 12;
  t.ring.bwIntra = t.tree.bwIntra = 30;
  t.ring.typeIntra = t.tree.typeIntra = kPathNvl;
  t.tree.pattern = GraphPattern::BalancedTree;
  return t;
}

std::unique_ptr<Tuner> makeTuner(const char* pluginSetting) {
  if (pluginSetting)
    setenv("NCCL_TUNER_PLUGIN", pluginSetting, 1);
  else
    unsetenv("NCCL_TUNER_PLUGIN");
  TunerTopo topo = dgxOneNode();
  std::unique_ptr<Tuner> tuner;
  EXPECT_EQ(Tuner::create(topo, std::make_unique<GpuCostModel>(topo), defaultAlgoProtoFilter(), 42, &tuner),
            ncclSuccess);
  unsetenv("NCCL_TUNER_PLUGIN");
  return tuner;
}

// Keeps a fixture library loaded for the test's duration so its counters can be read.
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

class TunerPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_NTHREADS",
                          "NCCL_LL128_NTHREADS", "NCCL_NET_OVERHEAD", "ACCL_TEST_TUNER_FAIL_INIT"})
      unsetenv(v);
    setLastError("");
  }
};

TEST_F(TunerPluginTest, BuiltInChoicesWithoutPlugin) {
  auto tuner = makeTuner("none");
  ASSERT_TRUE(tuner);
  EXPECT_EQ(tuner->pluginName(), nullptr);
  TunerChoice c;
  ASSERT_EQ(tuner->choose(kFuncAllReduce, kGiB, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoRing);
  EXPECT_EQ(c.proto, kProtoSimple);
  ASSERT_EQ(tuner->choose(kFuncAllGather, 8, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoRing);
  EXPECT_EQ(c.proto, kProtoLL);
  EXPECT_STREQ(lastErrorText(), "");  // "none" is not worth a warning
}

TEST_F(TunerPluginTest, V5PluginForcesItsChoiceAndEditsConstants) {
  Fixture lib(ACCL_TEST_TUNER_V5);
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  const int inits = lib.counter("accl_fixture_init_calls");
  const int finals = lib.counter("accl_fixture_finalize_calls");
  {
    auto tuner = makeTuner(ACCL_TEST_TUNER_V5);
    ASSERT_TRUE(tuner);
    ASSERT_NE(tuner->pluginName(), nullptr);
    EXPECT_STREQ(tuner->pluginName(), "fixture-v5");
    EXPECT_EQ(lib.counter("accl_fixture_init_calls"), inits + 1);
    // getCollInfo set AllReduce's Tree/LL to 0 us and asked for 3 channels.
    TunerChoice c;
    ASSERT_EQ(tuner->choose(kFuncAllReduce, kGiB, &c), ncclSuccess);
    EXPECT_EQ(c.algo, kAlgoTree);
    EXPECT_EQ(c.proto, kProtoLL);
    EXPECT_EQ(c.nChannels, 3);
    EXPECT_EQ(c.predictedUs, 0.0f);
    // init added 1000 us to Ring/LL's base latency in the model's own constants: 8 B of
    // AllGather no longer picks LL.
    auto& model = dynamic_cast<const GpuCostModel&>(tuner->model());
    EXPECT_DOUBLE_EQ(model.constants().baseLatencies[kAlgoRing][kProtoLL], 1006.6);
    ASSERT_EQ(tuner->choose(kFuncAllGather, 8, &c), ncclSuccess);
    EXPECT_EQ(c.algo, kAlgoRing);
    EXPECT_NE(c.proto, kProtoLL);
    // The plugin cannot bring back what NCCL_PROTO would remove: the masks come after it.
    EXPECT_EQ(lib.counter("accl_fixture_finalize_calls"), finals);
  }
  EXPECT_EQ(lib.counter("accl_fixture_finalize_calls"), finals + 1);
}

TEST_F(TunerPluginTest, V6PluginIsPreferredAndForcesItsChoice) {
  Fixture lib(ACCL_TEST_TUNER_V6);
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  const int inits = lib.counter("accl_fixture_init_calls");
  const int finals = lib.counter("accl_fixture_finalize_calls");
  {
    auto tuner = makeTuner(ACCL_TEST_TUNER_V6);
    ASSERT_TRUE(tuner);
    ASSERT_NE(tuner->pluginName(), nullptr);
    EXPECT_STREQ(tuner->pluginName(), "fixture-v6");  // not the library's v5 export
    EXPECT_EQ(lib.counter("accl_fixture_init_calls"), inits + 1);
    // v6's getCollInfo: AllReduce's Tree/Simple at 0 us with 7 channels (v5's would be Tree/LL, 3).
    TunerChoice c;
    ASSERT_EQ(tuner->choose(kFuncAllReduce, kGiB, &c), ncclSuccess);
    EXPECT_EQ(c.algo, kAlgoTree);
    EXPECT_EQ(c.proto, kProtoSimple);
    EXPECT_EQ(c.nChannels, 7);
    EXPECT_EQ(c.predictedUs, 0.0f);
    ASSERT_EQ(tuner->choose(kFuncAllReduce, 8, &c), ncclSuccess);
    EXPECT_EQ(c.algo, kAlgoTree);
    EXPECT_EQ(c.proto, kProtoSimple);
    // v6 init is v5's: it got NCCL's constants and its edit reached the model.
    auto& model = dynamic_cast<const GpuCostModel&>(tuner->model());
    EXPECT_DOUBLE_EQ(model.constants().baseLatencies[kAlgoRing][kProtoLL], 1006.6);
    EXPECT_EQ(lib.counter("accl_fixture_finalize_calls"), finals);
  }
  EXPECT_EQ(lib.counter("accl_fixture_finalize_calls"), finals + 1);
}

TEST_F(TunerPluginTest, V6PluginAdjustsChunkSizes) {
  TunerTopo topo = dgxOneNode();
  GpuCostModel model(topo);
  TunerPluginArgs args;
  args.nRanks = 8;
  args.constants = model.pluginConstants();
  std::unique_ptr<TunerPlugin> v6;
  TunerPlugin::loadFrom(ACCL_TEST_TUNER_V6, args, &v6);
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->version(), 6);
  // Tree/Simple chunks below 128 KiB are raised to it; others are left alone.
  EXPECT_EQ(v6->chunkSize(kFuncAllReduce, kMiB, kAlgoTree, kProtoSimple, 4, 65536), 131072u);
  EXPECT_EQ(v6->chunkSize(kFuncAllReduce, kMiB, kAlgoTree, kProtoSimple, 4, 262144), 262144u);
  EXPECT_EQ(v6->chunkSize(kFuncAllReduce, kMiB, kAlgoRing, kProtoSimple, 4, 65536), 65536u);
  EXPECT_EQ(v6->chunkSize(kFuncAllGather, 1, kAlgoTree, kProtoSimple, 1, 1), 131072u);
  // A failing getChunkSize keeps the computed size, with one warning.
  EXPECT_EQ(v6->chunkSize(kFuncAllReduce, 13, kAlgoTree, kProtoSimple, 4, 4096), 4096u);
  EXPECT_NE(std::string(lastErrorText()).find("getChunkSize"), std::string::npos) << lastErrorText();

  // Older versions have no getChunkSize: the computed size stands.
  std::unique_ptr<TunerPlugin> v5;
  TunerPlugin::loadFrom(ACCL_TEST_TUNER_V5, args, &v5);
  ASSERT_TRUE(v5);
  EXPECT_EQ(v5->version(), 5);
  EXPECT_EQ(v5->chunkSize(kFuncAllReduce, kMiB, kAlgoTree, kProtoSimple, 4, 65536), 65536u);
}

TEST_F(TunerPluginTest, FiltersApplyAfterThePlugin) {
  setenv("NCCL_TUNER_PLUGIN", ACCL_TEST_TUNER_V5, 1);
  TunerTopo topo = dgxOneNode();
  AlgoProtoFilter filter;
  ASSERT_EQ(parseAlgoProtoFilter("ring", nullptr, &filter), ncclSuccess);
  std::unique_ptr<Tuner> tuner;
  ASSERT_EQ(Tuner::create(topo, std::make_unique<GpuCostModel>(topo), filter, 1, &tuner), ncclSuccess);
  unsetenv("NCCL_TUNER_PLUGIN");
  ASSERT_NE(tuner->pluginName(), nullptr);
  TunerChoice c;
  ASSERT_EQ(tuner->choose(kFuncAllReduce, kGiB, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoRing);
}

TEST_F(TunerPluginTest, V2PluginPicksAlgorithmAndProtocol) {
  Fixture lib(ACCL_TEST_TUNER_V2);
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  const int finals = lib.counter("accl_fixture_finalize_calls");
  {
    auto tuner = makeTuner(ACCL_TEST_TUNER_V2);
    ASSERT_NE(tuner->pluginName(), nullptr);
    EXPECT_STREQ(tuner->pluginName(), "fixture-v2");
    TunerChoice c;
    // Ring/LL at 1 GiB: only because the plugin said so.
    ASSERT_EQ(tuner->choose(kFuncAllReduce, kGiB, &c), ncclSuccess);
    EXPECT_EQ(c.algo, kAlgoRing);
    EXPECT_EQ(c.proto, kProtoLL);
    EXPECT_EQ(c.nChannels, 5);
    // Other collectives keep the model's choice.
    ASSERT_EQ(tuner->choose(kFuncAllGather, kGiB, &c), ncclSuccess);
    EXPECT_EQ(c.proto, kProtoSimple);
    EXPECT_EQ(c.nChannels, 24);
  }
  EXPECT_EQ(lib.counter("accl_fixture_finalize_calls"), finals + 1);  // destroy
}

TEST_F(TunerPluginTest, MissingPluginWarnsAndFallsBack) {
  auto tuner = makeTuner("/nonexistent/dir/libnccl-tuner-missing.so");
  ASSERT_TRUE(tuner);
  EXPECT_EQ(tuner->pluginName(), nullptr);
  EXPECT_NE(std::string(lastErrorText()).find("tuner plugin"), std::string::npos) << lastErrorText();
  TunerChoice c;
  ASSERT_EQ(tuner->choose(kFuncAllReduce, kGiB, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoRing);
  EXPECT_EQ(c.proto, kProtoSimple);

  // A bare name that resolves to no library is the same.
  setLastError("");
  auto byName = makeTuner("accl-no-such-tuner");
  EXPECT_EQ(byName->pluginName(), nullptr);
  EXPECT_NE(std::string(lastErrorText()).find("accl-no-such-tuner"), std::string::npos) << lastErrorText();
}

TEST_F(TunerPluginTest, NoneDisablesPlugins) {
  auto tuner = makeTuner("none");
  EXPECT_EQ(tuner->pluginName(), nullptr);
  auto upper = makeTuner("NONE");
  EXPECT_EQ(upper->pluginName(), nullptr);
  EXPECT_STREQ(lastErrorText(), "");
}

TEST_F(TunerPluginTest, LibraryWithoutTunerSymbolsIsIgnored) {
  // libm is loadable and exports no tuner.
  auto tuner = makeTuner("libm.so.6");
  EXPECT_EQ(tuner->pluginName(), nullptr);
  EXPECT_NE(std::string(lastErrorText()).find("ncclTunerPlugin"), std::string::npos) << lastErrorText();
}

TEST_F(TunerPluginTest, FailingInitWarnsAndFallsBack) {
  setenv("ACCL_TEST_TUNER_FAIL_INIT", "1", 1);
  auto tuner = makeTuner(ACCL_TEST_TUNER_V5);
  unsetenv("ACCL_TEST_TUNER_FAIL_INIT");
  EXPECT_EQ(tuner->pluginName(), nullptr);
  EXPECT_NE(std::string(lastErrorText()).find("init failed"), std::string::npos) << lastErrorText();
  TunerChoice c;
  ASSERT_EQ(tuner->choose(kFuncAllReduce, kGiB, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoRing);
  // The failed init must not have edited the model's constants.
  auto& model = dynamic_cast<const GpuCostModel&>(tuner->model());
  EXPECT_DOUBLE_EQ(model.constants().baseLatencies[kAlgoRing][kProtoLL], 6.6);
}

}  // namespace
}  // namespace accl
