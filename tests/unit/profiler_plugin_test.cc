// Profiler plugins (NCCL_PROFILER_PLUGIN) below the communicator: the loader finds each version's
// table (v1..v7 fixtures in profiler_plugin_fixture/; v7 first where a library has several), each
// adapter hands that version the descriptor it expects (fields, parents, events it cannot know
// dropped), init gets the communicator's facts and NCCL_PROFILE_EVENT_MASK, finalize runs once,
// and a missing, empty, failing or erroring plugin turns into a warning and no events, never a
// crash.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "profiler/comm_profiler.h"
#include "profiler_plugin_fixture/recording_profiler.h"
#include "support/scoped_env.h"
#include "util/last_error.h"

namespace accl::prof {
namespace {

using test::RecordedContext;
using test::RecordedEvent;
using test::RecordingLog;
using test::ScopedEnvVar;

std::string fixturePath(int version) {
  return std::string(ACCL_TEST_PROFILER_DIR) + "/libnccl-profiler-acclTestV" + std::to_string(version) + ".so";
}

// The fixture's log, through the library the loader opened (same path: same handle).
struct FixtureLog {
  explicit FixtureLog(int version) {
    handle = dlopen(fixturePath(version).c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle, nullptr) << dlerror();
    log = handle ? reinterpret_cast<RecordingLog* (*)()>(dlsym(handle, "acclTestProfilerLog"))() : nullptr;
    reset = handle ? reinterpret_cast<void (*)()>(dlsym(handle, "acclTestProfilerReset")) : nullptr;
    if (reset) reset();
  }
  ~FixtureLog() {
    if (reset) reset();
    if (handle) dlclose(handle);
  }
  RecordedContext* only() {
    std::lock_guard<std::mutex> lock(log->mutex);
    return log->contexts.size() == 1 ? log->contexts[0] : nullptr;
  }
  void* handle = nullptr;
  RecordingLog* log = nullptr;
  void (*reset)() = nullptr;
};

PluginCommInfo commInfo() {
  PluginCommInfo info;
  info.commId = 0xabcdef12345ull;
  info.commName = "trainer";
  info.nNodes = 2;
  info.nRanks = 8;
  info.rank = 5;
  return info;
}

// A Coll event as enqueue builds it.
Event collEvent(void* api, void* group) {
  Event e;
  e.d.type = kColl;
  e.d.parentObj = api;
  e.d.coll.seqNumber = 7;
  e.d.coll.func = "AllReduce";
  e.d.coll.count = 1001;
  e.d.coll.root = 0;
  e.d.coll.datatype = "ncclFloat32";
  e.d.coll.nChannels = 3;
  e.d.coll.nWarps = 4;
  e.d.coll.algo = "Ring";
  e.d.coll.proto = "Simple";
  e.d.coll.parentGroup = group;
  e.d.coll.userTag = 0x7e57000000000011ull;
  e.funcIndex = 4;
  e.typeIndex = 7;
  e.algoIndex = 1;
  e.protoIndex = 2;
  e.op = 0;
  e.trafficBytes = 4004;
  return e;
}

class ProfilerVersion : public testing::TestWithParam<int> {};

TEST_P(ProfilerVersion, LoadsAdaptsAndFinalizes) {
  const int v = GetParam();
  FixtureLog fixture(v);
  ASSERT_NE(fixture.log, nullptr);
  std::shared_ptr<const ProfilerPlugin> plugin = ProfilerPlugin::acquire(fixturePath(v));
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->version(), v);
  EXPECT_STREQ(plugin->name(), "acclTestRecorder");
  plugin.reset();
  {
    std::unique_ptr<CommProfiler> p = CommProfiler::create(fixturePath(v), "", commInfo());
    ASSERT_NE(p, nullptr);
    RecordedContext* c = fixture.only();
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->version, v);
    EXPECT_EQ(c->maskGiven, 0);
    if (v >= 4) {  // v4+ init learns the communicator
      EXPECT_EQ(c->commId, 0xabcdef12345ull);
      EXPECT_EQ(c->commName, "trainer");
      EXPECT_EQ(c->nNodes, 2);
      EXPECT_EQ(c->nRanks, 8);
      EXPECT_EQ(c->rank, 5);
    }
    // The mask is what init returned, cut to what the version knows.
    EXPECT_EQ(p->mask(), static_cast<uint64_t>(kAllEventsV5) & eventsKnownTo(v));

    Event groupApi;
    groupApi.d.type = kGroupApi;
    groupApi.d.groupApi.groupDepth = 1;
    void* gApi = p->start(groupApi);
    Event group;
    group.d.type = kGroup;
    void* g = p->start(group);
    Event collApi;
    collApi.d.type = kCollApi;
    collApi.d.parentObj = gApi;
    collApi.d.collApi.func = "AllReduce";
    collApi.d.collApi.userTag = 0x7e57000000000011ull;
    void* cApi = p->start(collApi);
    Event coll = collEvent(cApi, g);
    void* h = p->start(coll);
    Event ch;
    ch.d.type = kKernelCh;
    ch.d.parentObj = h;
    ch.d.kernelCh.channelId = 2;
    ch.d.kernelCh.pTimer = 123;
    void* k = p->start(ch);
    // A KernelPhase (accl emits none; NCCL's symmetric kernels do): only v7 knows it.
    Event phase;
    phase.d.type = kKernelPhase;
    phase.d.parentObj = k;
    phase.d.kernelPhase.channelId = 2;
    phase.d.kernelPhase.phaseId = 1;
    phase.d.kernelPhase.phaseName = "compute";
    phase.d.kernelPhase.pTimer = 200;
    void* ph = p->start(phase);
    ProfStateArgsV5 phaseStop{};
    phaseStop.kernelCh.pTimer = 300;
    p->record(ph, kKernelPhaseStop, &phaseStop);
    p->stop(ph);
    ProfStateArgsV5 stopArgs{};
    stopArgs.kernelCh.pTimer = 456;
    p->record(k, kKernelChStop, &stopArgs);
    p->stop(k);
    p->stop(h);
    p->stop(cApi);
    p->stop(g);
    p->record(gApi, kGroupEndApiStart);
    p->stop(gApi);

    // What the version knows is recorded; the rest was never passed.
    EXPECT_EQ(gApi != nullptr, v >= 5);
    EXPECT_EQ(cApi != nullptr, v >= 5);
    EXPECT_EQ(k != nullptr, v >= 3);
    EXPECT_EQ(ph != nullptr, v >= 7) << "KernelPhase is v7's";
    ASSERT_NE(g, nullptr);
    ASSERT_NE(h, nullptr);
    const auto* rc = static_cast<const RecordedEvent*>(h);
    EXPECT_EQ(rc->type, kColl);
    EXPECT_EQ(rc->parent, v >= 5 ? cApi : g) << "v4 and older hang a collective from its Group";
    if (v >= 5) EXPECT_EQ(rc->parentGroup, g);
    EXPECT_EQ(rc->rank, 5);
    EXPECT_EQ(rc->seqNumber, 7u);
    EXPECT_EQ(rc->func, "AllReduce");
    EXPECT_EQ(rc->count, 1001u);
    EXPECT_EQ(rc->datatype, "ncclFloat32");
    EXPECT_EQ(rc->algo, "Ring");
    EXPECT_EQ(rc->proto, "Simple");
    EXPECT_EQ(rc->nChannels, 3);
    EXPECT_EQ(rc->nWarps, 4);
    EXPECT_TRUE(rc->stopped);
    if (v <= 3) {  // the communicator travels in the descriptor
      EXPECT_EQ(rc->commName, "trainer");
      EXPECT_EQ(rc->commHash, 0xabcdef12345ull);
    }
    // v7's additions: the tags, no kernel variant, not symmetric.
    EXPECT_EQ(rc->userTag, v >= 7 ? 0x7e57000000000011ull : 0u);
    if (v >= 7) {
      EXPECT_TRUE(rc->kernelVariantNull);
      EXPECT_FALSE(rc->isSymColl);
      EXPECT_EQ(static_cast<const RecordedEvent*>(cApi)->userTag, 0x7e57000000000011ull);
      const auto* rp = static_cast<const RecordedEvent*>(ph);
      EXPECT_EQ(rp->parent, k);
      EXPECT_EQ(rp->channelId, 2);
      EXPECT_EQ(rp->func, "compute");
      EXPECT_EQ(rp->pTimer, 200u);
      ASSERT_EQ(rp->states.size(), 1u);
      EXPECT_EQ(rp->states[0], kKernelPhaseStop);
      EXPECT_EQ(rp->stateValues[0], 300u);
    }
    if (v <= 2) EXPECT_EQ(rc->trafficBytes, 4004u);
    if (v == 1) EXPECT_EQ(rc->op, 0);
    if (k) {
      const auto* rk = static_cast<const RecordedEvent*>(k);
      EXPECT_EQ(rk->parent, h);
      EXPECT_EQ(rk->channelId, 2);
      if (v >= 4) {
        EXPECT_EQ(rk->pTimer, 123u);
        ASSERT_EQ(rk->states.size(), 1u);
        EXPECT_EQ(rk->states[0], kKernelChStop);
        EXPECT_EQ(rk->stateValues[0], 456u);
      } else {
        EXPECT_TRUE(rk->states.empty()) << "v3 has no KernelChStop state";
      }
    }
    if (gApi) {
      const auto* rg = static_cast<const RecordedEvent*>(gApi);
      EXPECT_EQ(rg->groupDepth, 1);
      ASSERT_EQ(rg->states.size(), 1u);
      EXPECT_EQ(rg->states[0], kGroupEndApiStart);
    }
    EXPECT_FALSE(c->finalized);
  }
  RecordedContext* c = fixture.only();
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->finalized) << "finalize runs when the communicator's profiler goes";
}

INSTANTIATE_TEST_SUITE_P(V, ProfilerVersion, testing::Values(1, 2, 3, 4, 5, 6, 7),
                         [](const testing::TestParamInfo<int>& i) { return "v" + std::to_string(i.param); });

TEST(ProfilerPlugin, ProxyStepStatesReachOldVersionsAsProxyOpArgs) {
  FixtureLog fixture(2);
  std::unique_ptr<CommProfiler> p = CommProfiler::create(fixturePath(2), "", commInfo());
  ASSERT_NE(p, nullptr);
  Event step;
  step.d.type = kProxyStep;
  step.d.proxyStep.step = 9;
  void* h = p->start(step);
  ASSERT_NE(h, nullptr);
  ProfStateArgsV5 args{};
  args.proxyStep.transSize = 65536;
  p->record(h, kProxyStepSendWait, &args);
  p->record(h, kNetPluginUpdate, &args);  // a state v2 never had: not passed
  p->stop(h);
  const auto* r = static_cast<const RecordedEvent*>(h);
  EXPECT_EQ(r->seqNumber, 9u);
  ASSERT_EQ(r->states.size(), 1u);
  EXPECT_EQ(r->states[0], kProxyStepSendWait);
  EXPECT_EQ(r->stateValues[0], 65536u);
}

TEST(ProfilerPlugin, EventMaskSettingIsWhatInitStartsFrom) {
  FixtureLog fixture(6);
  {
    ScopedEnvVar keep("ACCL_TEST_PROFILER_MASK", nullptr);
    std::unique_ptr<CommProfiler> p = CommProfiler::create(fixturePath(6), "0x42", commInfo());
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(fixture.only()->maskGiven, 0x42);
    EXPECT_EQ(p->mask(), 0x42u);
    EXPECT_TRUE(p->wants(kColl));
    EXPECT_FALSE(p->wants(kP2p));
    EXPECT_TRUE(p->wants(kTreeCollApi)) << "an API event is needed when its collective is";
  }
  fixture.reset();
  {
    ScopedEnvVar mask("ACCL_TEST_PROFILER_MASK", "0");
    std::unique_ptr<CommProfiler> p = CommProfiler::create(fixturePath(6), "4095", commInfo());
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->mask(), 0u) << "the plugin has the last word";
    EXPECT_FALSE(p->wants(kTreeGroupApi));
  }
}

// NCCL's rule, which a v7 plugin relies on: asking for KernelPhase turns KernelCh on (a phase
// hangs from its channel's event), and so the tasks above it. Older versions know neither bit.
TEST(ProfilerPlugin, KernelPhaseImpliesKernelChForV7Only) {
  for (int v : {7, 6}) {
    FixtureLog fixture(v);
    ScopedEnvVar mask("ACCL_TEST_PROFILER_MASK", "0x8000");
    std::unique_ptr<CommProfiler> p = CommProfiler::create(fixturePath(v), "", commInfo());
    ASSERT_NE(p, nullptr);
    if (v == 7) {
      EXPECT_EQ(p->mask(), static_cast<uint64_t>(kKernelPhase | kKernelCh));
      EXPECT_TRUE(p->wants(kKernelCh));
      EXPECT_TRUE(p->wants(kTreeCollApi)) << "a KernelCh needs its Coll and CollApi";
      EXPECT_FALSE(p->wants(kProxyOp));
    } else {
      EXPECT_EQ(p->mask(), 0u) << "v6 cannot ask for KernelPhase";
      EXPECT_FALSE(p->wants(kTreeGroupApi));
    }
  }
  EXPECT_EQ(effectiveMask(7, kKernelPhase | kColl), static_cast<uint64_t>(kKernelPhase | kKernelCh | kColl));
  EXPECT_EQ(effectiveMask(7, kColl), static_cast<uint64_t>(kColl));
  EXPECT_EQ(effectiveMask(5, -1), eventsKnownTo(5)) << "bits a version does not know are dropped";
}

// The v7 fixture also exports a v6 table whose init fails: the loader must take v7.
TEST(ProfilerPlugin, V7IsPreferredOverV6InOneLibrary) {
  FixtureLog fixture(7);
  std::shared_ptr<const ProfilerPlugin> plugin = ProfilerPlugin::acquire(fixturePath(7));
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->version(), 7);
  EXPECT_NE(CommProfiler::create(fixturePath(7), "", commInfo()), nullptr);
}

TEST(ProfilerPlugin, NoneUnsetAndMissingLibrariesMeanNoProfiler) {
  EXPECT_EQ(CommProfiler::create("none", "", commInfo()), nullptr);
  EXPECT_EQ(CommProfiler::create("NONE", "", commInfo()), nullptr);
  // Unset: libnccl-profiler.so, which is not on this machine's library path; silent.
  setLastError("");
  EXPECT_EQ(CommProfiler::create("", "", commInfo()), nullptr);
  EXPECT_STREQ(lastErrorText(), "");
  // Named but missing: one warning per process, naming the setting.
  setLastError("");
  EXPECT_EQ(CommProfiler::create("acclNoSuchProfiler", "", commInfo()), nullptr);
  EXPECT_NE(std::string(lastErrorText()).find("NCCL_PROFILER_PLUGIN=acclNoSuchProfiler"), std::string::npos) << lastErrorText();
  setLastError("");
  EXPECT_EQ(CommProfiler::create("acclNoSuchProfiler", "", commInfo()), nullptr);
  EXPECT_STREQ(lastErrorText(), "") << "a failed load is not retried or logged again";
}

TEST(ProfilerPlugin, LibraryWithoutTablesIsRefused) {
  // libnccl.so's test neighbours: a tuner fixture exports no profiler table.
  const std::string tuner = ACCL_TEST_TUNER_V6;
  setLastError("");
  EXPECT_EQ(CommProfiler::create(tuner, "", commInfo()), nullptr);
  EXPECT_NE(std::string(lastErrorText()).find("exports none of ncclProfiler_v7"), std::string::npos) << lastErrorText();
}

TEST(ProfilerPlugin, FailingInitMeansNoProfilerForThatCommunicator) {
  FixtureLog fixture(5);
  ScopedEnvVar fail("ACCL_TEST_PROFILER_FAIL", "init");
  setLastError("");
  EXPECT_EQ(CommProfiler::create(fixturePath(5), "", commInfo()), nullptr);
  EXPECT_NE(std::string(lastErrorText()).find("init failed"), std::string::npos) << lastErrorText();
  EXPECT_EQ(fixture.only(), nullptr);
}

// A plugin may accept init yet leave no context (NVIDIA's Inspector does when it cannot start,
// and its finalize then dereferences the null context): as NCCL, the communicator runs without
// it and neither events nor finalize reach it.
TEST(ProfilerPlugin, InitWithoutAContextMeansNoProfilerAndNoFinalize) {
  FixtureLog fixture(6);
  ScopedEnvVar fail("ACCL_TEST_PROFILER_FAIL", "nullcontext");
  EXPECT_EQ(CommProfiler::create(fixturePath(6), "", commInfo()), nullptr);
  std::lock_guard<std::mutex> lock(fixture.log->mutex);
  EXPECT_EQ(fixture.log->declinedInits, 1);
  EXPECT_TRUE(fixture.log->contexts.empty());
}

class ProfilerCallError : public testing::TestWithParam<const char*> {};

// An error from any event call turns the plugin off for the communicator with one warning;
// nothing more reaches it but finalize.
TEST_P(ProfilerCallError, DisablesThePluginForTheCommunicator) {
  FixtureLog fixture(6);
  ScopedEnvVar fail("ACCL_TEST_PROFILER_FAIL", GetParam());
  setLastError("");
  {
    std::unique_ptr<CommProfiler> p = CommProfiler::create(fixturePath(6), "", commInfo());
    ASSERT_NE(p, nullptr);
    for (int i = 0; i < 5; ++i) {
      Event e;
      e.d.type = kKernelCh;
      void* h = p->start(e);
      p->record(h, kKernelChStop);
      p->stop(h);
    }
    EXPECT_FALSE(p->wants(kTreeGroupApi));
    EXPECT_NE(std::string(lastErrorText()).find("profiling is off for this communicator"), std::string::npos) << lastErrorText();
  }
  RecordedContext* c = fixture.only();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->starts, 2) << "calls stop at the failing one";
  EXPECT_TRUE(c->finalized);
}

INSTANTIATE_TEST_SUITE_P(Calls, ProfilerCallError, testing::Values("start:2", "stop:2", "record:2"),
                         [](const testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param).substr(0, std::string(i.param).find(':'));
                         });

}  // namespace
}  // namespace accl::prof
