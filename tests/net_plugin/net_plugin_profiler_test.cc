// NetPlugin profiler events end to end (issue 19, label mp): ranks whose only path is the net
// transport over the acclTest net plugin (v10 or v12 ABI; forked ranks on virtual hosts, or
// thread ranks with P2P and shared memory off) run a ring all-reduce and a send/recv ring with
// the recording profiler plugin (v6). The net plugin reports a NetPlugin event per request through
// the profiler callback (test_net_profile.h); each rank's events must show:
//   - every NetPlugin event under a ProxyStep, that step under a ProxyOp, that ProxyOp under the
//     rank's Coll / P2p; the plugin's id and start data in the descriptor, one NetPluginUpdate
//     carrying its update data, stopped after it started;
//   - per ProxyStep as many as the proxy posted requests with the step's handle: a send step's
//     header and, when it carries bytes, its payload; a receive step's payload;
//   - the collectives' results.
// Without NetPlugin in the activation mask the plugin is handed null handles: no NetPlugin event,
// ProxySteps as before, results intact.
#include <dlfcn.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mp/mp_test_util.h"
#include "profiler/profiler_abi.h"
#include "support/scoped_env.h"
#include "test_net_profile.h"
#include "unit/profiler_plugin_fixture/recording_profiler.h"

namespace accl::test {
namespace {

using namespace accl::prof;
using namespace accl::testnet;

constexpr size_t kCount = 100003;  // ~400 KB: a few dozen 64 KiB Simple steps per operation

std::string netPluginPath(int version) {
  return std::string(ACCL_NET_PLUGIN_DIR) + "/libnccl-net-acclTestV" + std::to_string(version) + ".so";
}

RecordingLog* recordingLog() {
  // The library the communicators load: same path, same handle (kept open for the process).
  void* h = dlopen(ACCL_TEST_PROFILER_V6, RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  reinterpret_cast<void (*)()>(dlsym(h, "acclTestProfilerReset"))();
  return reinterpret_cast<RecordingLog* (*)()>(dlsym(h, "acclTestProfilerLog"))();
}

// The environment of one launch: the acclTest plugin of `netVersion` on lo as the only network,
// the recording profiler with activation mask `mask`.
class NetProfilerEnv {
 public:
  NetProfilerEnv(int netVersion, LaunchMode mode, const char* mask) : plugin_(netPluginPath(netVersion)) {
    const char* noLocal = mode == LaunchMode::kThreads ? "1" : nullptr;
    const std::vector<std::pair<const char*, const char*>> all = {
        {"NCCL_NET_PLUGIN", plugin_.c_str()}, {"NCCL_NET", "acclTest"}, {"ACCL_TEST_NET_IFNAME", "lo"},
        {"NCCL_SOCKET_IFNAME", "lo"}, {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}, {"NCCL_BUFFSIZE", "65536"},
        {"NCCL_HOSTID", nullptr}, {"NCCL_P2P_DISABLE", noLocal}, {"NCCL_SHM_DISABLE", noLocal},
        {"NCCL_PROFILER_PLUGIN", ACCL_TEST_PROFILER_V6}, {"ACCL_TEST_PROFILER_MASK", mask}};
    for (auto [name, value] : all) vars_.push_back(std::make_unique<ScopedEnvVar>(name, value));
  }

 private:
  std::string plugin_;
  std::vector<std::unique_ptr<ScopedEnvVar>> vars_;
};

// What one rank's context received, by kind.
struct RankEvents {
  int netPlugin = 0, steps = 0, ops = 0;
};

// Runs the all-reduce and the send/recv ring on every rank, then hands each rank's events to
// `check` (under the log's lock, after the communicator is destroyed).
template <class Check>
LaunchResult runAndCheck(RecordingLog* log, LaunchMode mode, int nranks, Check check) {
  LaunchOptions o;
  o.mode = mode;
  o.nranks = nranks;
  o.deadline = mpDeadline(nranks);
  o.ids = makeUniqueIds(1);
  return launchRanks(o, [&](RankContext& ctx) {
    if (mode == LaunchMode::kFork) setenv("NCCL_HOSTID", ("netprof-host" + std::to_string(ctx.rank)).c_str(), 1);
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    const int n = ctx.nranks;
    std::vector<float> v(kCount), w(kCount, -1.0f);
    for (size_t j = 0; j < kCount; ++j) v[j] = static_cast<float>((ctx.rank + 1) * (j % 7 + 1));
    RANK_NCCL_OK(ctx, ncclAllReduce(v.data(), v.data(), kCount, ncclFloat32, ncclSum, comm, nullptr));
    const float ranksSum = static_cast<float>(n * (n + 1) / 2);
    for (size_t j : {size_t{0}, size_t{5}, kCount / 2, kCount - 1})
      ctx.check(v[j] == ranksSum * static_cast<float>(j % 7 + 1), "AllReduce[%zu] gave %g", j, v[j]);
    const int next = (ctx.rank + 1) % n, prev = (ctx.rank + n - 1) % n;
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_OK(ctx, ncclSend(v.data(), kCount, ncclFloat32, next, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclRecv(w.data(), kCount, ncclFloat32, prev, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclGroupEnd());
    ctx.check(w[kCount - 1] == v[kCount - 1], "Recv got %g, want %g", w[kCount - 1], v[kCount - 1]);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));

    std::lock_guard<std::mutex> lock(log->mutex);
    const RecordedContext* c = nullptr;
    for (const RecordedContext* x : log->contexts)
      if (x->rank == ctx.rank && x->finalized) c = x;
    if (!ctx.check(c != nullptr, "no profiler context")) return;
    check(ctx, *c);
  });
}

class NetPluginProfilerTest : public testing::TestWithParam<std::tuple<LaunchMode, int>> {};

TEST_P(NetPluginProfilerTest, PluginEventsHangFromTheProxyStepOfTheirRequest) {
  RecordingLog* log = recordingLog();
  ASSERT_NE(log, nullptr) << dlerror();
  const LaunchMode mode = std::get<0>(GetParam());
  NetProfilerEnv env(std::get<1>(GetParam()), mode, nullptr);  // the recording plugin's default: every event
  LaunchResult res = runAndCheck(log, mode, 3, [](RankContext& ctx, const RecordedContext& c) {
    std::map<const void*, const RecordedEvent*> byHandle;
    for (const RecordedEvent* e : c.events) byHandle[e] = e;
    std::map<const void*, int> childrenOf;  // ProxyStep -> its NetPlugin events
    RankEvents got;
    for (const RecordedEvent* e : c.events) {
      if (e->type == kProxyOp) ++got.ops;
      if (e->type == kProxyStep) ++got.steps;
      if (e->type != kNetPlugin) continue;
      ++got.netPlugin;
      ctx.check(e->stopped && e->startNs <= e->stopNs, "NetPlugin event not stopped in order");
      ctx.check(e->pluginId == kTestNetProfId, "NetPlugin id %llx", (unsigned long long)e->pluginId);
      ctx.check(e->pluginData == reinterpret_cast<const void*>(kTestNetStartData), "NetPlugin data %p", e->pluginData);
      ctx.check(e->states.size() == 1 && e->states[0] == kNetPluginUpdate &&
                    e->stateValues[0] == kTestNetUpdateData,
                "NetPlugin states (%zu)", e->states.size());
      const RecordedEvent* step = e->parent ? byHandle[e->parent] : nullptr;
      if (!ctx.check(step && step->type == kProxyStep, "NetPlugin event without a ProxyStep parent")) continue;
      ctx.check(step->startNs <= e->startNs, "NetPlugin event started before its ProxyStep");
      ++childrenOf[step];
    }
    // Each step: one event per request the proxy posted with the step's handle.
    std::map<const void*, int> pluginEventsOfTask;  // Coll / P2p -> NetPlugin events below it
    for (const RecordedEvent* e : c.events) {
      if (e->type != kProxyStep) continue;
      const RecordedEvent* op = e->parent ? byHandle[e->parent] : nullptr;
      if (!ctx.check(op && op->type == kProxyOp && !e->stateValues.empty(), "ProxyStep without a ProxyOp")) continue;
      const RecordedEvent* task = op->parent ? byHandle[op->parent] : nullptr;
      if (!ctx.check(task && (task->type == kColl || task->type == kP2p), "ProxyOp without a Coll / P2p")) continue;
      const bool isSend = op->op == 1;
      const bool payload = e->stateValues[0] > 0;
      const int want = isSend ? 1 + (payload ? 1 : 0) : (payload ? 1 : 0);
      ctx.check(childrenOf[e] == want, "%s step %llu of %llu bytes has %d NetPlugin events, want %d",
                isSend ? "send" : "receive", (unsigned long long)e->seqNumber,
                (unsigned long long)e->stateValues[0], childrenOf[e], want);
      pluginEventsOfTask[task] += childrenOf[e];
    }
    // Both operations moved data over the plugin in both directions.
    int tasks = 0;
    for (const RecordedEvent* e : c.events)
      if (e->type == kColl || e->type == kP2p) ++tasks, ctx.check(pluginEventsOfTask[e] > 0, "a %s with no NetPlugin "
                                                                  "events below it", e->func.c_str());
    ctx.check(tasks == 3, "%d Coll / P2p events (AllReduce, Send, Recv)", tasks);
    ctx.check(got.ops >= 4 && got.steps > 10 && got.netPlugin > got.steps, "%d ProxyOps, %d ProxySteps, %d NetPlugin",
              got.ops, got.steps, got.netPlugin);
  });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, NetPluginProfilerTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork),
                                          testing::Values(10, 12)),
                         [](const testing::TestParamInfo<std::tuple<LaunchMode, int>>& i) {
                           return std::string(std::get<0>(i.param) == LaunchMode::kFork ? "Processes" : "Threads") +
                                  "_NetV" + std::to_string(std::get<1>(i.param));
                         });

TEST(NetPluginProfiler, WithoutNetPluginInTheMaskThePluginGetsNullHandles) {
  RecordingLog* log = recordingLog();
  ASSERT_NE(log, nullptr) << dlerror();
  const std::string mask = std::to_string(kProxyOp | kProxyStep | kColl | kP2p | kCollApi | kP2pApi | kGroupApi);
  NetProfilerEnv env(12, LaunchMode::kFork, mask.c_str());
  LaunchResult res = runAndCheck(log, LaunchMode::kFork, 2, [](RankContext& ctx, const RecordedContext& c) {
    int steps = 0, netPlugin = 0;
    for (const RecordedEvent* e : c.events) {
      steps += e->type == kProxyStep;
      netPlugin += e->type == kNetPlugin;
    }
    ctx.check(steps > 10 && netPlugin == 0, "%d ProxySteps, %d NetPlugin events", steps, netPlugin);
  });
  EXPECT_RANKS_OK(res);
}

}  // namespace
}  // namespace accl::test
