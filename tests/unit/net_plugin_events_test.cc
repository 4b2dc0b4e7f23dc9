// The net plugin's profiler callback (profiler/net_plugin_events.h) against the recording
// profiler plugin (v6): start / update / stop / update-and-stop become a NetPlugin event under the
// step's ProxyStep with the plugin's id and data; a null or closed parent, a null handle, a second
// stop, a full step and a mask without NetPlugin record nothing and do not crash.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "profiler/comm_profiler.h"
#include "profiler/net_plugin_events.h"
#include "profiler_plugin_fixture/recording_profiler.h"
#include "support/scoped_env.h"

namespace accl::prof {
namespace {

using test::RecordedContext;
using test::RecordedEvent;
using test::RecordingLog;

constexpr int64_t kId = (int64_t{0x77} << 16) | 2;
void* const kData = reinterpret_cast<void*>(uintptr_t{0xda7a});
void* const kNewData = reinterpret_cast<void*>(uintptr_t{0x2da7a});

std::string fixturePath() { return std::string(ACCL_TEST_PROFILER_DIR) + "/libnccl-profiler-acclTestV6.so"; }

// A communicator's profiler on the v6 recording plugin, with one ProxyStep event to hang from.
class NetPluginEvents : public testing::Test {
 protected:
  void SetUp() override { open(nullptr); }
  void open(const char* mask) {
    handle_ = dlopen(fixturePath().c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    reinterpret_cast<void (*)()>(dlsym(handle_, "acclTestProfilerReset"))();
    log_ = reinterpret_cast<RecordingLog* (*)()>(dlsym(handle_, "acclTestProfilerLog"))();
    test::ScopedEnvVar m("ACCL_TEST_PROFILER_MASK", mask);
    PluginCommInfo info;
    info.nRanks = 2;
    info.rank = 1;
    prof_ = CommProfiler::create(fixturePath(), "", info);
    ASSERT_NE(prof_, nullptr);
    Event e;
    e.d.type = kProxyStep;
    e.d.proxyStep.step = 3;
    step_ = prof_->start(e);
    ASSERT_NE(step_, nullptr);
  }
  void TearDown() override {
    prof_.reset();
    if (handle_) {
      reinterpret_cast<void (*)()>(dlsym(handle_, "acclTestProfilerReset"))();
      dlclose(handle_);
    }
  }
  int netPluginEvents() {
    std::lock_guard<std::mutex> lock(log_->mutex);
    int n = 0;
    for (const RecordedContext* c : log_->contexts)
      for (const RecordedEvent* e : c->events) n += e->type == kNetPlugin;
    return n;
  }
  static ncclResult_t call(void** h, int type, void* parent, void* data = kData) {
    return netPluginProfilerCallback(h, type, parent, kId, data);
  }

  void* handle_ = nullptr;
  RecordingLog* log_ = nullptr;
  std::unique_ptr<CommProfiler> prof_;
  void* step_ = nullptr;
};

TEST_F(NetPluginEvents, StartUpdateStopMakeOneEventUnderTheStep) {
  NetStepParent parent;
  parent.open(prof_.get(), step_);
  void* h = reinterpret_cast<void*>(uintptr_t{1});  // whatever the plugin's variable held
  ASSERT_EQ(call(&h, 0, &parent), ncclSuccess);
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(call(&h, 2, nullptr, kNewData), ncclSuccess);
  void* copy = h;
  ASSERT_EQ(call(&h, 1, nullptr), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  ASSERT_EQ(call(&copy, 1, nullptr), ncclSuccess);  // a second stop of the same event: ignored
  ASSERT_EQ(call(&copy, 2, nullptr), ncclSuccess);  // an update after the stop: ignored

  std::lock_guard<std::mutex> lock(log_->mutex);
  ASSERT_EQ(log_->contexts.size(), 1u);
  const RecordedContext* c = log_->contexts[0];
  ASSERT_EQ(c->events.size(), 2u);
  const RecordedEvent* e = c->events[1];
  EXPECT_EQ(e->type, kNetPlugin);
  EXPECT_EQ(e->parent, step_);
  EXPECT_EQ(e->rank, 1);
  EXPECT_EQ(e->pluginId, kId);
  EXPECT_EQ(e->pluginData, kData);
  ASSERT_EQ(e->states.size(), 1u);
  EXPECT_EQ(e->states[0], kNetPluginUpdate);
  EXPECT_EQ(e->stateValues[0], uint64_t{0x2da7a});
  EXPECT_TRUE(e->stopped);
  EXPECT_EQ(c->stops, 1);
  EXPECT_EQ(c->records, 1);
}

TEST_F(NetPluginEvents, UpdateAndStopIsBoth) {
  NetStepParent parent;
  parent.open(prof_.get(), step_);
  void* h = nullptr;
  ASSERT_EQ(call(&h, 0, &parent), ncclSuccess);
  ASSERT_EQ(call(&h, 3, nullptr, kNewData), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  std::lock_guard<std::mutex> lock(log_->mutex);
  const RecordedEvent* e = log_->contexts[0]->events.back();
  EXPECT_EQ(e->type, kNetPlugin);
  EXPECT_EQ(e->states.size(), 1u);
  EXPECT_TRUE(e->stopped);
}

TEST_F(NetPluginEvents, NullOrClosedParentsAndNullHandlesRecordNothing) {
  void* h = reinterpret_cast<void*>(uintptr_t{1});
  EXPECT_EQ(call(&h, 0, nullptr), ncclSuccess);  // no parent (a request the proxy did not profile)
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(call(&h, 2, nullptr), ncclSuccess);  // update and stop of what start left null
  EXPECT_EQ(call(&h, 1, nullptr), ncclSuccess);
  EXPECT_EQ(call(&h, 3, nullptr), ncclSuccess);
  EXPECT_EQ(call(nullptr, 0, nullptr), ncclSuccess);  // no handle variable at all
  EXPECT_EQ(call(&h, 99, nullptr), ncclSuccess);      // a call type this version does not know

  NetStepParent parent;  // never opened: its step has no event
  EXPECT_EQ(call(&h, 0, &parent), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  parent.open(prof_.get(), nullptr);  // opened without a ProxyStep (no ProxyOp for the step)
  EXPECT_EQ(call(&h, 0, &parent), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  parent.open(prof_.get(), step_);
  parent.close();  // the step is done
  EXPECT_EQ(call(&h, 0, &parent), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(netPluginEvents(), 0);
}

TEST_F(NetPluginEvents, AStepHoldsABoundedNumberOfOpenEventsAndTeardownStopsThem) {
  NetStepParent parent;
  parent.open(prof_.get(), step_);
  void* h[NetStepParent::kEventsPerStep + 1] = {};
  for (void*& x : h) ASSERT_EQ(call(&x, 0, &parent), ncclSuccess);
  for (int i = 0; i < NetStepParent::kEventsPerStep; ++i) EXPECT_NE(h[i], nullptr) << i;
  EXPECT_EQ(h[NetStepParent::kEventsPerStep], nullptr);  // full: not recorded
  ASSERT_EQ(call(&h[0], 1, nullptr), ncclSuccess);  // one stops: room for the next
  ASSERT_EQ(call(&h[NetStepParent::kEventsPerStep], 0, &parent), ncclSuccess);
  EXPECT_NE(h[NetStepParent::kEventsPerStep], nullptr);
  parent.stopLeftovers();
  EXPECT_EQ(call(&h[1], 1, nullptr), ncclSuccess);  // the plugin's late stop: already stopped, ignored
  std::lock_guard<std::mutex> lock(log_->mutex);
  int open = 0, events = 0;
  for (const RecordedEvent* e : log_->contexts[0]->events)
    if (e->type == kNetPlugin) ++events, open += !e->stopped;
  EXPECT_EQ(events, NetStepParent::kEventsPerStep + 1);
  EXPECT_EQ(open, 0);
  EXPECT_EQ(log_->contexts[0]->stops, NetStepParent::kEventsPerStep + 1);
}

TEST_F(NetPluginEvents, AMaskWithoutNetPluginRecordsNothing) {
  TearDown();
  open(std::to_string(kProxyOp | kProxyStep).c_str());
  NetStepParent parent;
  parent.open(prof_.get(), step_);
  void* h = nullptr;
  EXPECT_EQ(call(&h, 0, &parent), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(netPluginEvents(), 0);
}

}  // namespace
}  // namespace accl::prof
