// The user's profiler tags and the v7 profiler ABI with real communicators on the host backend
// (label mp), through the recording plugins of tests/unit/profiler_plugin_fixture:
//   - every nccl*Config collective, each call with its own tag: the v7 CollApi and Coll events
//     of a call carry that tag (AlltoAll / Gather / Scatter: every P2pApi and P2p of their
//     send/recv parts), a plain call and a config with tag 0 give 0, calls grouped together keep
//     their own tags, plain ncclSend / ncclRecv give 0; Coll names no kernel variant and is not
//     symmetric (accl has no symmetric kernels);
//   - a v6 plugin given the same calls gets its events and nothing v7 added;
//   - a v7 plugin asking only for KernelPhase gets KernelCh events (with their Coll / P2p and
//     API ancestors), as NCCL turns KernelCh on for it, but no KernelPhase event (accl emits
//     none); asking for nothing gets nothing.
#include <map>
#include <string>
#include <vector>

#include "mp/mp_test_util.h"
#include "mp/profiler_mp_fixture.h"
#include "profiler/profiler_abi.h"
#include "support/scoped_env.h"

namespace accl::test {
namespace {

using namespace accl::prof;

constexpr size_t kCount = 1001;  // odd, several elements per rank

// Tags with bits in both halves; the top bit is reserved by NCCL.
uint64_t tagOf(int call) { return 0x5a00000000000000ull + (static_cast<uint64_t>(call + 1) << 32) + 0x1234 + call; }

ncclCollConfig_t configWithTag(uint64_t tag) {
  ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
  c.userProfilerTag = tag;
  return c;
}

// One API event this rank's calls must have produced, in start order.
struct ApiWant {
  uint64_t type;  // kCollApi / kP2pApi
  std::string func;
  uint64_t tag;
};

// Runs every Config collective once (a distinct tag each), then untagged calls, then a group of
// tagged and untagged calls; returns the API events they must produce, in order.
std::vector<ApiWant> runTaggedCalls(RankContext& ctx, ncclComm_t comm) {
  const int n = ctx.nranks, root = n - 1, me = ctx.rank;
  std::vector<ApiWant> want;
  std::vector<float> send(kCount * n, 1.0f + me), recv(kCount * n, 0.0f);
  float* s = send.data();
  float* r = recv.data();
  int call = 0;
  auto coll = [&](const char* func, uint64_t tag) { want.push_back({kCollApi, func, tag}); };
  auto parts = [&](int sends, int recvs, uint64_t tag) {
    // AlltoAll / Gather / Scatter queue their parts in this order per the rank's role.
    for (int i = 0; i < sends + recvs; ++i) want.push_back({kP2pApi, "", tag});
  };
  ncclCollConfig_t c = configWithTag(tagOf(call));
  RANK_NCCL_OK(ctx, ncclAllReduceConfig(s, r, kCount, ncclFloat32, ncclSum, comm, nullptr, &c));
  coll("AllReduce", tagOf(call++));
  for (size_t i = 0; i < kCount; i += 333)
    ctx.check(r[i] == n * (n + 1) / 2.0f, "AllReduceConfig element %zu is %g", i, r[i]);
  c = configWithTag(tagOf(call));
  RANK_NCCL_OK(ctx, ncclBroadcastConfig(s, r, kCount, ncclFloat32, root, comm, nullptr, &c));
  coll("Broadcast", tagOf(call++));
  ctx.check(r[kCount - 1] == 1.0f + root, "BroadcastConfig gave %g", r[kCount - 1]);
  c = configWithTag(tagOf(call));
  RANK_NCCL_OK(ctx, ncclReduceConfig(s, r, kCount, ncclFloat32, ncclSum, root, comm, nullptr, &c));
  coll("Reduce", tagOf(call++));
  c = configWithTag(tagOf(call));
  RANK_NCCL_OK(ctx, ncclAllGatherConfig(s, r, kCount, ncclFloat32, comm, nullptr, &c));
  coll("AllGather", tagOf(call++));
  c = configWithTag(tagOf(call));
  RANK_NCCL_OK(ctx, ncclReduceScatterConfig(s, r, kCount, ncclFloat32, ncclSum, comm, nullptr, &c));
  coll("ReduceScatter", tagOf(call++));
  c = configWithTag(tagOf(call));
  RANK_NCCL_OK(ctx, ncclAlltoAllConfig(s, r, kCount, ncclFloat32, comm, nullptr, &c));
  parts(n, n, tagOf(call++));
  c = configWithTag(tagOf(call));
  RANK_NCCL_OK(ctx, ncclGatherConfig(s, r, kCount, ncclFloat32, root, comm, nullptr, &c));
  parts(1, me == root ? n : 0, tagOf(call++));
  c = configWithTag(tagOf(call));
  RANK_NCCL_OK(ctx, ncclScatterConfig(s, r, kCount, ncclFloat32, root, comm, nullptr, &c));
  parts(me == root ? n : 0, 1, tagOf(call++));
  // Untagged: a plain call, and a config whose tag stays 0.
  RANK_NCCL_OK(ctx, ncclAllReduce(s, r, kCount, ncclFloat32, ncclSum, comm, nullptr));
  coll("AllReduce", 0);
  c = configWithTag(0);
  RANK_NCCL_OK(ctx, ncclAllGatherConfig(s, r, kCount, ncclFloat32, comm, nullptr, &c));
  coll("AllGather", 0);
  // A group: every call keeps its own tag (configs reused between calls, as a caller may).
  std::vector<float> x(kCount, 2.0f), y(kCount, 0.0f);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  RANK_NCCL_OK(ctx, ncclGroupStart());
  c = configWithTag(tagOf(call));
  RANK_NCCL_OK(ctx, ncclAllReduceConfig(x.data(), x.data(), kCount, ncclFloat32, ncclSum, comm, nullptr, &c));
  coll("AllReduce", tagOf(call++));
  RANK_NCCL_OK(ctx, ncclSend(s, 77, ncclFloat32, next, comm, nullptr));
  want.push_back({kP2pApi, "Send", 0});
  RANK_NCCL_OK(ctx, ncclRecv(y.data(), 77, ncclFloat32, prev, comm, nullptr));
  want.push_back({kP2pApi, "Recv", 0});
  c = configWithTag(tagOf(call));
  RANK_NCCL_OK(ctx, ncclBroadcastConfig(s, r, kCount, ncclFloat32, 0, comm, nullptr, &c));
  coll("Broadcast", tagOf(call++));
  RANK_NCCL_OK(ctx, ncclReduceScatter(s, r, kCount, ncclFloat32, ncclSum, comm, nullptr));
  coll("ReduceScatter", 0);
  RANK_NCCL_OK(ctx, ncclGroupEnd());
  ctx.check(x[kCount - 1] == 2.0f * n, "grouped AllReduceConfig gave %g", x[kCount - 1]);
  ctx.check(y[76] == 1.0f + prev, "grouped Recv gave %g", y[76]);
  return want;
}

// The v7 context of this rank: API events in order against `want`, and every Coll / P2p with
// its API event's tag.
void checkTags(RankContext& ctx, const RecordedContext& c, const std::vector<ApiWant>& want) {
  std::vector<const RecordedEvent*> api;
  std::map<const void*, const RecordedEvent*> byHandle;
  int colls = 0, p2ps = 0;
  for (const RecordedEvent* e : c.events) {
    byHandle[e] = e;
    ctx.check(e->type != kKernelPhase, "a KernelPhase event (accl emits none)");
    if (e->type == kCollApi || e->type == kP2pApi) api.push_back(e);
    if (e->type != kColl && e->type != kP2p) continue;
    const RecordedEvent* parent = e->parent ? byHandle[e->parent] : nullptr;
    if (!ctx.check(parent != nullptr, "a Coll / P2p without its API event")) continue;
    ctx.check(e->userTag == parent->userTag, "%s: task tag 0x%llx, its API event's 0x%llx", e->func.c_str(),
              (unsigned long long)e->userTag, (unsigned long long)parent->userTag);
    if (e->type == kColl) {
      ++colls;
      ctx.check(e->kernelVariantNull && !e->isSymColl, "%s: kernelVariant '%s' isSymColl %d", e->func.c_str(),
                e->kernelVariant.c_str(), e->isSymColl);
    } else {
      ++p2ps;
    }
  }
  if (!ctx.check(api.size() == want.size(), "rank %d: %zu API events for %zu calls", ctx.rank, api.size(),
                 want.size()))
    return;
  size_t wantColls = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const ApiWant& w = want[i];
    wantColls += w.type == kCollApi;
    ctx.check(api[i]->type == w.type, "API event %zu: type %llu, want %llu", i, (unsigned long long)api[i]->type,
              (unsigned long long)w.type);
    if (!w.func.empty()) ctx.check(api[i]->func == w.func, "API event %zu: %s, want %s", i, api[i]->func.c_str(),
                                   w.func.c_str());
    ctx.check(api[i]->userTag == w.tag, "API event %zu (%s): tag 0x%llx, want 0x%llx", i, api[i]->func.c_str(),
              (unsigned long long)api[i]->userTag, (unsigned long long)w.tag);
  }
  // Every call planned its operation (a send/recv to itself included).
  ctx.check(static_cast<size_t>(colls) == wantColls && static_cast<size_t>(p2ps) == want.size() - wantColls,
            "%d Coll and %d P2p events for %zu and %zu calls", colls, p2ps, wantColls, want.size() - wantColls);
}

class ProfilerTagTest : public MpTest {
 protected:
  // On every rank, with the recording plugin of `version` returning `mask` from init (null: the
  // mask it was given): makes a communicator, runs `calls(ctx, comm)`, destroys the communicator
  // (the plugin's finalize) and runs `check(ctx, log, what calls returned)` on the rank's log.
  template <class Calls, class Check>
  void runWithPlugin(int version, const char* mask, Calls calls, Check check) {
    RecordingLog* log = profilerFixtureLog(version);
    ASSERT_NE(log, nullptr) << dlerror();
    ScopedEnvVar plugin("NCCL_PROFILER_PLUGIN", profilerPluginPath(version).c_str());
    ScopedEnvVar maskVar("ACCL_TEST_PROFILER_MASK", mask);
    LaunchResult res = launchRanks(options(), [&](RankContext& ctx) {
      ncclComm_t comm = nullptr;
      if (!initComm(ctx, &comm)) return;
      auto made = calls(ctx, comm);
      RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
      std::lock_guard<std::mutex> lock(log->mutex);
      const RecordedContext* c = finalizedContextOf(log, ctx.rank);
      if (ctx.check(c != nullptr, "rank %d: no finalized profiler context", ctx.rank)) check(ctx, *c, made);
    });
    EXPECT_RANKS_OK(res) << "plugin v" << version << ", mask " << (mask ? mask : "unset");
  }
};

TEST_P(ProfilerTagTest, EveryConfigCollectiveCarriesItsTag) {
  runWithPlugin(7, nullptr, runTaggedCalls, checkTags);
}

// The v6 adapter: the same calls reach a v6 plugin as v6 events, all of them, none it cannot know
// (its mask asks for KernelPhase too, which v6 cannot have).
TEST_P(ProfilerTagTest, V6PluginGetsTheSameCallsWithoutV7Events) {
  runWithPlugin(6, "0xffff", runTaggedCalls,
                [](RankContext& ctx, const RecordedContext& c, const std::vector<ApiWant>& want) {
                  std::map<uint64_t, size_t> byType;
                  for (const RecordedEvent* e : c.events) {
                    ++byType[e->type];
                    ctx.check(e->stopped, "event type %llu never stopped", (unsigned long long)e->type);
                    ctx.check(e->userTag == 0, "a v6 event with a tag");
                  }
                  size_t colls = 0;
                  for (const ApiWant& w : want) colls += w.type == kCollApi;
                  const size_t p2ps = want.size() - colls;
                  ctx.check(byType[kCollApi] == colls && byType[kColl] == colls, "%zu CollApi, %zu Coll for %zu calls",
                            byType[kCollApi], byType[kColl], colls);
                  ctx.check(byType[kP2pApi] == p2ps && byType[kP2p] == p2ps, "%zu P2pApi, %zu P2p for %zu calls",
                            byType[kP2pApi], byType[kP2p], p2ps);
                  ctx.check(byType[kKernelCh] >= colls, "%zu KernelCh events", byType[kKernelCh]);
                  ctx.check(byType.count(kKernelPhase) == 0 && byType.count(kCeColl) == 0,
                            "v6 got an event it cannot know");
                });
}

// One tagged all-reduce; returns nothing to check against but the tag.
bool oneTaggedAllReduce(RankContext& ctx, ncclComm_t comm) {
  std::vector<float> v(kCount, 1.0f);
  ncclCollConfig_t c = configWithTag(tagOf(40));
  RANK_NCCL_OK(ctx, ncclAllReduceConfig(v.data(), v.data(), kCount, ncclFloat32, ncclSum, comm, nullptr, &c));
  return ctx.check(v[kCount - 1] == static_cast<float>(ctx.nranks), "AllReduceConfig gave %g", v[kCount - 1]);
}

// Only the events a KernelCh needs: itself and its ancestors.
void checkKernelChTree(RankContext& ctx, const RecordedContext& c, const RecordedEvent** coll, int* kernelCh) {
  std::map<const void*, const RecordedEvent*> byHandle;
  for (const RecordedEvent* e : c.events) {
    byHandle[e] = e;
    ctx.check(e->type == kGroupApi || e->type == kCollApi || e->type == kGroup || e->type == kColl ||
                  e->type == kKernelCh,
              "event type %llu, which neither KernelPhase nor KernelCh needs", (unsigned long long)e->type);
    if (e->type == kColl) *coll = e;
    if (e->type != kKernelCh) continue;
    ++*kernelCh;
    ctx.check(e->parent && byHandle[e->parent]->type == kColl, "KernelCh not under its Coll");
    ctx.check(e->states.size() == 1 && e->states[0] == kKernelChStop, "KernelCh without KernelChStop");
  }
}

// NCCL's rule: KernelPhase needs KernelCh, which is turned on for the plugin. accl then delivers
// KernelCh events (and their ancestors) but no phase, having no symmetric kernels.
TEST_P(ProfilerTagTest, KernelPhaseAloneTurnsKernelChOn) {
  runWithPlugin(7, "0x8000", oneTaggedAllReduce, [](RankContext& ctx, const RecordedContext& c, bool) {
    const RecordedEvent* coll = nullptr;
    int kernelCh = 0;
    checkKernelChTree(ctx, c, &coll, &kernelCh);
    if (!ctx.check(coll != nullptr, "no Coll event")) return;
    ctx.check(coll->userTag == tagOf(40), "Coll tag 0x%llx", (unsigned long long)coll->userTag);
    ctx.check(kernelCh == coll->nChannels && kernelCh >= 1, "%d KernelCh events for %d channels", kernelCh,
              coll->nChannels);
  });
  // The same plugin asking for nothing gets nothing.
  runWithPlugin(7, "0", oneTaggedAllReduce, [](RankContext& ctx, const RecordedContext& c, bool) {
    ctx.check(c.events.empty(), "mask 0: %zu events", c.events.size());
  });
}

INSTANTIATE_TEST_SUITE_P(, ProfilerTagTest,
                         testing::Values(MpParam{LaunchMode::kThreads, 1}, MpParam{LaunchMode::kThreads, 2},
                                         MpParam{LaunchMode::kThreads, 3}, MpParam{LaunchMode::kFork, 3}),
                         mpParamName);

}  // namespace
}  // namespace accl::test
