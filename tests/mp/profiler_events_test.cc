// Profiler events of real communicators on the host backend (label mp): ranks run every
// collective (AlltoAll, Gather and Scatter as the send/recv compositions accl makes them), grouped
// calls and send/recv with a recording profiler plugin of each ABI version
// (tests/unit/profiler_plugin_fixture), then check the tree of events their context received:
//   - every event stopped after it started, its parent an earlier event of the same context;
//   - one API event per call (v5+: CollApi / P2pApi under a GroupApi of depth 1 for a lone call,
//     2 inside ncclGroupStart, with GroupStartApiStop then GroupEndApiStart), one Coll / P2p per
//     call under it (v4 and older: under the launch's Group) with the call's arguments — function,
//     count, datatype, root or peer, buffers, the per-function sequence number — and the choice
//     (algorithm, protocol, nChannels);
//   - per Coll / P2p one KernelCh per channel it ran on, channel ids distinct, each with
//     KernelChStop carrying an end time not before its start time (v3: no timestamps);
//   - one Group and one KernelLaunch (v5+) per launch.
// Counts 0, 1 and a multi-chunk odd one, in place and out of place; a plugin that fails a call
// leaves the collectives' results intact. Over the socket network (ranks on virtual hosts):
// ProxyOp under each Coll / P2p, ProxyStep under each ProxyOp, the send steps' bytes, and the
// proxy thread's idle periods as ProxyCtrl events.
#include <dlfcn.h>

#include <chrono>
#include <map>
#include <thread>
#include <string>
#include <vector>

#include "mp/mp_test_util.h"
#include "mp/profiler_mp_fixture.h"
#include "profiler/profiler_abi.h"
#include "support/scoped_env.h"

namespace accl::test {
namespace {

using namespace accl::prof;

const std::vector<size_t> kCounts = {0, 1, 4099};

// One API call a rank made, as its events must show it.
struct Call {
  bool isColl = true;
  std::string func;  // "AllReduce", "Send", ...
  size_t count = 0;
  int root = 0;  // collectives (0 where it has none)
  int peer = -1;
  const void* send = nullptr;
  const void* recv = nullptr;
  int groupDepth = 1;  // 1: a lone call; 2: inside ncclGroupStart
};

// `launches`: groups that ended; `empty`: those of them with nothing to run (a send of 0 bytes to
// itself), which launch no kernel.
void checkTree(RankContext& ctx, RecordingLog* log, int version, const std::vector<Call>& calls, int launches,
               int empty = 0) {
  std::lock_guard<std::mutex> lock(log->mutex);
  const RecordedContext* c = finalizedContextOf(log, ctx.rank);
  if (!ctx.check(c != nullptr, "rank %d: no finalized profiler context", ctx.rank)) return;
  std::map<const void*, const RecordedEvent*> byHandle;
  std::map<uint64_t, std::vector<const RecordedEvent*>> byType;
  std::map<const void*, std::vector<const RecordedEvent*>> children;
  for (const RecordedEvent* e : c->events) {
    ctx.check(e->stopped, "event type %llu (seq %llu) never stopped", (unsigned long long)e->type,
              (unsigned long long)e->seq);
    ctx.check(e->startNs <= e->stopNs, "event type %llu stopped before it started", (unsigned long long)e->type);
    ctx.check(e->rank == ctx.rank || e->type == kGroup, "event of rank %d on rank %d", e->rank, ctx.rank);
    if (e->parent) {
      auto p = byHandle.find(e->parent);
      ctx.check(p != byHandle.end(), "event type %llu has a parent that is no earlier event of this context",
                (unsigned long long)e->type);
      children[e->parent].push_back(e);
    }
    byHandle[e] = e;
    byType[e->type].push_back(e);
  }
  const auto& tasks = byType[kColl];
  const auto& p2ps = byType[kP2p];
  std::vector<const RecordedEvent*> ops;  // Coll and P2p in start order
  for (const RecordedEvent* e : c->events)
    if (e->type == kColl || e->type == kP2p) ops.push_back(e);
  if (!ctx.check(ops.size() == calls.size(), "rank %d: %zu Coll/P2p events for %zu calls (%zu coll, %zu p2p)",
                 ctx.rank, ops.size(), calls.size(), tasks.size(), p2ps.size()))
    return;
  ctx.check(static_cast<int>(byType[kGroup].size()) == launches, "%zu Group events for %d launches",
            byType[kGroup].size(), launches);
  const bool apiEvents = version >= 5;
  if (apiEvents) {
    ctx.check(static_cast<int>(byType[kKernelLaunch].size()) == launches - empty,
              "%zu KernelLaunch events for %d launches, %d of them empty", byType[kKernelLaunch].size(), launches,
              empty);
    ctx.check(static_cast<int>(byType[kGroupApi].size()) == launches, "%zu GroupApi events for %d groups",
              byType[kGroupApi].size(), launches);
    for (const RecordedEvent* g : byType[kGroupApi])
      ctx.check(g->states == std::vector<int>({kGroupStartApiStop, kGroupEndApiStart}),
                "GroupApi states are not [GroupStartApiStop, GroupEndApiStart] (%zu states)", g->states.size());
    for (const RecordedEvent* k : byType[kKernelLaunch])
      ctx.check(k->parent && byHandle[k->parent]->type == kGroupApi, "KernelLaunch not under a GroupApi");
  } else {
    ctx.check(byType[kGroupApi].empty() && byType[kCollApi].empty() && byType[kP2pApi].empty(),
              "v%d got API events", version);
  }
  std::map<std::string, uint64_t> seqByFunc;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& want = calls[i];
    const RecordedEvent* op = ops[i];
    const char* what = want.func.c_str();
    ctx.check(op->type == (want.isColl ? kColl : kP2p), "call %zu (%s): event type %llu", i, what,
              (unsigned long long)op->type);
    ctx.check(op->func == want.func, "call %zu: func %s, want %s", i, op->func.c_str(), what);
    ctx.check(op->count == want.count, "call %zu (%s): count %zu, want %zu", i, what, op->count, want.count);
    ctx.check(op->datatype == "ncclFloat32", "call %zu (%s): datatype %s", i, what, op->datatype.c_str());
    if (want.isColl) {
      ctx.check(op->root == want.root, "call %zu (%s): root %d, want %d", i, what, op->root, want.root);
      ctx.check(op->sendBuff == want.send && op->recvBuff == want.recv, "call %zu (%s): buffers differ", i, what);
      ctx.check(op->seqNumber == seqByFunc[want.func]++, "call %zu (%s): seqNumber %llu", i, what,
                (unsigned long long)op->seqNumber);
      ctx.check(op->algo == "Ring" || op->algo == "Tree" || op->algo == "OneShot", "call %zu: algo %s", i,
                op->algo.c_str());
      ctx.check(op->proto == "Simple" || op->proto == "LL" || op->proto == "LL128", "call %zu: proto %s", i,
                op->proto.c_str());
    } else {
      ctx.check(op->peer == want.peer, "call %zu (%s): peer %d, want %d", i, what, op->peer, want.peer);
      ctx.check(op->sendBuff == (want.func == "Send" ? want.send : want.recv), "call %zu (%s): buffer differs", i,
                what);
    }
    // Its parent: the API event of the call (v5+), else the launch's Group.
    const RecordedEvent* parent = op->parent ? byHandle[op->parent] : nullptr;
    if (!ctx.check(parent != nullptr, "call %zu (%s) has no parent", i, what)) continue;
    if (apiEvents) {
      ctx.check(parent->type == (want.isColl ? kCollApi : kP2pApi), "call %zu: parent type %llu", i,
                (unsigned long long)parent->type);
      ctx.check(parent->func == want.func && parent->count == want.count, "call %zu: API event %s count %zu", i,
                parent->func.c_str(), parent->count);
      if (want.isColl) ctx.check(parent->root == want.root, "call %zu: API root %d", i, parent->root);
      ctx.check(op->parentGroup && byHandle[op->parentGroup]->type == kGroup, "call %zu: parentGroup", i);
      const RecordedEvent* groupApi = parent->parent ? byHandle[parent->parent] : nullptr;
      if (ctx.check(groupApi && groupApi->type == kGroupApi, "call %zu: API event not under a GroupApi", i))
        ctx.check(groupApi->groupDepth == want.groupDepth, "call %zu: groupDepth %d, want %d", i,
                  groupApi->groupDepth, want.groupDepth);
    } else {
      ctx.check(parent->type == kGroup, "call %zu: v%d parent type %llu", i, version,
                (unsigned long long)parent->type);
    }
    // KernelCh: one per channel the operation ran on (a send/recv to itself runs on none).
    if (version < 3) continue;
    // v3's P2p has no nChannels: these sizes run on one channel.
    const bool p2pChannelsKnown = want.isColl || version >= 4;
    const int wantCh = !want.isColl && want.peer == ctx.rank ? 0 : p2pChannelsKnown ? op->nChannels : 1;
    ctx.check(want.isColl ? op->nChannels >= 1 : true, "call %zu: nChannels %d", i, op->nChannels);
    std::vector<int> seen;
    for (const RecordedEvent* k : children[op]) {
      if (k->type != kKernelCh) continue;
      ctx.check(k->channelId >= 0 && (!p2pChannelsKnown || k->channelId < op->nChannels),
                "call %zu: KernelCh channel %d of %d", i, k->channelId, op->nChannels);
      for (int s : seen) ctx.check(s != k->channelId, "call %zu: two KernelCh on channel %d", i, s);
      seen.push_back(k->channelId);
      if (version >= 4 && ctx.check(k->states.size() == 1 && k->states[0] == kKernelChStop,
                                    "call %zu: KernelCh without KernelChStop", i))
        ctx.check(k->pTimer > 0 && k->stateValues[0] >= k->pTimer, "call %zu: KernelCh times %llu..%llu", i,
                  (unsigned long long)k->pTimer, (unsigned long long)k->stateValues[0]);
    }
    ctx.check(static_cast<int>(seen.size()) == wantCh, "call %zu (%s count %zu): %zu KernelCh events, want %d", i,
              what, want.count, seen.size(), wantCh);
  }
}

// ---- every collective, lone calls -----------------------------------------------------------------

using VersionParam = std::tuple<LaunchMode, int, int>;  // mode, ranks, plugin version

class ProfilerEventsTest : public testing::TestWithParam<VersionParam> {
 protected:
  LaunchMode mode() const { return std::get<0>(GetParam()); }
  int nranks() const { return std::get<1>(GetParam()); }
  int version() const { return std::get<2>(GetParam()); }
  LaunchOptions options() const {
    LaunchOptions o;
    o.mode = mode();
    o.nranks = nranks();
    o.deadline = mpDeadline(nranks());
    o.ids = makeUniqueIds(1);
    return o;
  }
};

std::string versionParamName(const testing::TestParamInfo<VersionParam>& info) {
  return std::string(launchModeName(std::get<0>(info.param))) + "_" + std::to_string(std::get<1>(info.param)) +
         "ranks_v" + std::to_string(std::get<2>(info.param));
}

void runEveryCollective(RankContext& ctx, RecordingLog* log, int version) {
  ncclComm_t comm = nullptr;
  if (!initComm(ctx, &comm)) return;
  const int n = ctx.nranks;
  std::vector<Call> calls;
  int launches = 0, empty = 0;
  for (size_t count : kCounts) {
    for (bool inPlace : {false, true}) {
      std::vector<float> send(count * n + 1, 1.0f + ctx.rank), recv(count * n + 1, 0.0f);
      float* s = send.data();
      float* r = inPlace ? s : recv.data();
      const int root = n - 1;
      auto add = [&](const char* func, int rootArg, const void* sb, const void* rb) {
        Call c;
        c.func = func;
        c.count = count;
        c.root = rootArg;
        c.send = sb;
        c.recv = rb;
        calls.push_back(c);
        ++launches;
      };
      RANK_NCCL_OK(ctx, ncclAllReduce(s, r, count, ncclFloat32, ncclSum, comm, nullptr));
      add("AllReduce", 0, s, r);
      for (size_t i = 0; i < count; ++i)
        if (!ctx.check(r[i] == n * (n + 1) / 2.0f, "AllReduce count %zu: element %zu is %g", count, i, r[i])) break;
      RANK_NCCL_OK(ctx, ncclBroadcast(s, r, count, ncclFloat32, root, comm, nullptr));
      add("Broadcast", root, s, r);
      RANK_NCCL_OK(ctx, ncclReduce(s, r, count, ncclFloat32, ncclSum, root, comm, nullptr));
      add("Reduce", root, s, r);
      // In place: the block of this rank inside the receive buffer.
      const float* agSend = inPlace ? r + count * ctx.rank : s;
      RANK_NCCL_OK(ctx, ncclAllGather(agSend, r, count, ncclFloat32, comm, nullptr));
      add("AllGather", 0, agSend, r);
      float* rsRecv = inPlace ? s + count * ctx.rank : r;
      RANK_NCCL_OK(ctx, ncclReduceScatter(s, rsRecv, count, ncclFloat32, ncclSum, comm, nullptr));
      add("ReduceScatter", 0, s, rsRecv);
    }
  }
  // Sendrecv around the ring, and to itself.
  std::vector<float> a(4099, 1.0f), b(4099, 0.0f);
  const int next = (ctx.rank + 1) % n, prev = (ctx.rank + n - 1) % n;
  for (size_t count : kCounts) {
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_OK(ctx, ncclSend(a.data(), count, ncclFloat32, next, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclRecv(b.data(), count, ncclFloat32, prev, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclGroupEnd());
    Call s{false, "Send", count, 0, next, a.data(), nullptr, 2};
    Call r{false, "Recv", count, 0, prev, nullptr, b.data(), 2};
    calls.push_back(s);
    calls.push_back(r);
    ++launches;
    if (n == 1 && count == 0) ++empty;
  }
  // AlltoAll, Gather and Scatter are send/recv compositions in accl: one launch of P2p events.
  const int root = n - 1;
  for (size_t count : kCounts) {
    std::vector<float> sb(count * n + 1, 1.0f), rb(count * n + 1, 0.0f);
    auto at = [count](std::vector<float>& v, int r) { return v.data() + count * r; };
    auto add = [&](bool isSend, int peer, const void* buf) {
      Call c{false, isSend ? "Send" : "Recv", count, 0, peer, isSend ? buf : nullptr, isSend ? nullptr : buf, 2};
      calls.push_back(c);
    };
    RANK_NCCL_OK(ctx, ncclAlltoAll(sb.data(), rb.data(), count, ncclFloat32, comm, nullptr));
    for (int r = 0; r < n; ++r) add(true, r, at(sb, r)), add(false, r, at(rb, r));
    RANK_NCCL_OK(ctx, ncclGather(sb.data(), rb.data(), count, ncclFloat32, root, comm, nullptr));
    if (ctx.rank == root)
      for (int r = 0; r < n; ++r) add(false, r, at(rb, r));
    add(true, root, sb.data());
    RANK_NCCL_OK(ctx, ncclScatter(sb.data(), rb.data(), count, ncclFloat32, root, comm, nullptr));
    if (ctx.rank == root)
      for (int r = 0; r < n; ++r) add(true, r, at(sb, r));
    add(false, root, rb.data());
    launches += 3;
    if (n == 1 && count == 0) empty += 3;
  }
  RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  checkTree(ctx, log, version, calls, launches, empty);
}

TEST_P(ProfilerEventsTest, EveryCollectiveAndSendRecv) {
  RecordingLog* log = profilerFixtureLog(version());
  ASSERT_NE(log, nullptr) << dlerror();
  ScopedEnvVar plugin("NCCL_PROFILER_PLUGIN", profilerPluginPath(version()).c_str());
  ScopedEnvVar mask("ACCL_TEST_PROFILER_MASK", nullptr);
  const int v = version();
  LaunchResult res = launchRanks(options(), [&](RankContext& ctx) { runEveryCollective(ctx, log, v); });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, ProfilerEventsTest,
                         testing::Values(VersionParam{LaunchMode::kThreads, 2, 6},
                                         VersionParam{LaunchMode::kThreads, 3, 6},
                                         VersionParam{LaunchMode::kFork, 3, 6},
                                         VersionParam{LaunchMode::kThreads, 1, 6},
                                         VersionParam{LaunchMode::kThreads, 2, 7},
                                         VersionParam{LaunchMode::kFork, 3, 7},
                                         VersionParam{LaunchMode::kThreads, 2, 5},
                                         VersionParam{LaunchMode::kThreads, 2, 4},
                                         VersionParam{LaunchMode::kThreads, 2, 3},
                                         VersionParam{LaunchMode::kThreads, 2, 2},
                                         VersionParam{LaunchMode::kThreads, 2, 1}),
                         versionParamName);

// ---- a group of several operations ------------------------------------------------------------------

class ProfilerGroupTest : public MpTest {};

TEST_P(ProfilerGroupTest, OneGroupApiOneLaunchManyOperations) {
  RecordingLog* log = profilerFixtureLog(6);
  ASSERT_NE(log, nullptr) << dlerror();
  ScopedEnvVar plugin("NCCL_PROFILER_PLUGIN", profilerPluginPath(6).c_str());
  LaunchResult res = launchRanks(options(), [&](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    const int n = ctx.nranks;
    std::vector<float> x(777, 1.0f), y(777 * n, 0.0f), z(777, 2.0f), w(777, 0.0f);
    const int next = (ctx.rank + 1) % n, prev = (ctx.rank + n - 1) % n;
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_OK(ctx, ncclAllReduce(x.data(), x.data(), 777, ncclFloat32, ncclSum, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclSend(z.data(), 300, ncclFloat32, next, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclRecv(w.data(), 300, ncclFloat32, prev, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclAllGather(x.data(), y.data(), 777, ncclFloat32, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclGroupEnd());
    ctx.check(x[776] == static_cast<float>(n), "grouped AllReduce gave %g", x[776]);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    std::vector<Call> calls = {{true, "AllReduce", 777, 0, -1, x.data(), x.data(), 2},
                               {false, "Send", 300, 0, next, z.data(), nullptr, 2},
                               {false, "Recv", 300, 0, prev, nullptr, w.data(), 2},
                               {true, "AllGather", 777, 0, -1, x.data(), y.data(), 2}};
    checkTree(ctx, log, 6, calls, 1);
  });
  EXPECT_RANKS_OK(res);
}

ACCL_MP_INSTANTIATE(ProfilerGroupTest);

// ---- a plugin that fails ------------------------------------------------------------------------------

class ProfilerFailureTest : public MpTest {};

TEST_P(ProfilerFailureTest, FailingCallsLeaveResultsIntact) {
  RecordingLog* log = profilerFixtureLog(6);
  ASSERT_NE(log, nullptr) << dlerror();
  ScopedEnvVar plugin("NCCL_PROFILER_PLUGIN", profilerPluginPath(6).c_str());
  ScopedEnvVar fail("ACCL_TEST_PROFILER_FAIL", "start:4");
  LaunchResult res = launchRanks(options(), [&](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    for (int i = 0; i < 3; ++i) {
      std::vector<float> v(1000, 1.0f);
      RANK_NCCL_OK(ctx, ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, comm, nullptr));
      ctx.check(v[999] == static_cast<float>(ctx.nranks), "AllReduce %d gave %g", i, v[999]);
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    std::lock_guard<std::mutex> lock(log->mutex);
    const RecordedContext* c = finalizedContextOf(log, ctx.rank);
    if (ctx.check(c != nullptr, "no context")) ctx.check(c->starts == 4, "%d starts after the failing 4th", c->starts);
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(ProfilerFailureTest, MissingPluginIsNoProfiler) {
  ScopedEnvVar plugin("NCCL_PROFILER_PLUGIN", "acclNoSuchProfilerPlugin");
  LaunchResult res = launchRanks(options(), [&](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> v(10, 1.0f);
    RANK_NCCL_OK(ctx, ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, comm, nullptr));
    ctx.check(v[9] == static_cast<float>(ctx.nranks), "AllReduce gave %g", v[9]);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, ProfilerFailureTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork), testing::Values(2, 3)),
                         mpParamName);

// ---- the network proxy ----------------------------------------------------------------------------

// Ranks on different virtual hosts (NCCL_HOSTID) reach each other through the socket network and
// its proxy: every ProxyOp hangs from a Coll / P2p, every ProxyStep from a ProxyOp, steps carry
// their bytes (SendWait / RecvWait), everything stops, and the bytes a rank's send steps carry
// for one operation add up to what the ring or the send moves.
// Forked ranks are on virtual hosts (NCCL_HOSTID); thread ranks of one process are sent through
// the network with shared memory and P2P off.
class ProfilerProxyTest : public testing::TestWithParam<std::tuple<LaunchMode, int>> {};

TEST_P(ProfilerProxyTest, ProxyOpsAndStepsOverTheNetwork) {
  RecordingLog* log = profilerFixtureLog(6);
  ASSERT_NE(log, nullptr) << dlerror();
  ScopedEnvVar plugin("NCCL_PROFILER_PLUGIN", profilerPluginPath(6).c_str());
  const LaunchMode mode = std::get<0>(GetParam());
  const char* noLocal = mode == LaunchMode::kThreads ? "1" : nullptr;
  ScopedEnvVar net("NCCL_NET", "Socket"), ifname("NCCL_SOCKET_IFNAME", "lo"), algo("NCCL_ALGO", "Ring"),
      proto("NCCL_PROTO", "Simple"), buff("NCCL_BUFFSIZE", "65536"), noP2p("NCCL_P2P_DISABLE", noLocal),
      noShm("NCCL_SHM_DISABLE", noLocal);
  LaunchOptions o;
  o.mode = mode;
  o.nranks = std::get<1>(GetParam());
  o.deadline = mpDeadline(o.nranks);
  o.ids = makeUniqueIds(1);
  constexpr size_t kCount = 100003;
  LaunchResult res = launchRanks(o, [&](RankContext& ctx) {
    if (mode == LaunchMode::kFork) setenv("NCCL_HOSTID", ("prof-host" + std::to_string(ctx.rank)).c_str(), 1);
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    const int n = ctx.nranks;
    std::vector<float> v(kCount, 1.0f), w(kCount, 0.0f);
    RANK_NCCL_OK(ctx, ncclAllReduce(v.data(), v.data(), kCount, ncclFloat32, ncclSum, comm, nullptr));
    ctx.check(v[kCount - 1] == static_cast<float>(n), "AllReduce gave %g", v[kCount - 1]);
    const int next = (ctx.rank + 1) % n, prev = (ctx.rank + n - 1) % n;
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_OK(ctx, ncclSend(v.data(), kCount, ncclFloat32, next, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclRecv(w.data(), kCount, ncclFloat32, prev, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclGroupEnd());
    // Idle for a while, so that the proxy thread sleeps at least once (a ProxyCtrl event) even when
    // the collectives kept it busy from start to end.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));

    std::lock_guard<std::mutex> lock(log->mutex);
    const RecordedContext* c = finalizedContextOf(log, ctx.rank);
    if (!ctx.check(c != nullptr, "no context")) return;
    std::map<const void*, const RecordedEvent*> byHandle;
    for (const RecordedEvent* e : c->events) byHandle[e] = e;
    std::map<const void*, size_t> sentBytes;  // per Coll / P2p: bytes of its send steps
    int ops = 0, steps = 0;
    for (const RecordedEvent* e : c->events) {
      ctx.check(e->stopped && e->startNs <= e->stopNs, "event type %llu not stopped in order",
                (unsigned long long)e->type);
      if (e->type == kProxyOp) {
        ++ops;
        const RecordedEvent* parent = e->parent ? byHandle[e->parent] : nullptr;
        if (!ctx.check(parent && (parent->type == kColl || parent->type == kP2p), "ProxyOp without a Coll/P2p parent"))
          continue;
        const bool isSend = e->op == 1;
        if (parent->type == kColl)
          ctx.check(e->peer == (isSend ? next : prev), "ring ProxyOp (%s) with peer %d", isSend ? "send" : "recv",
                    e->peer);
        else
          ctx.check(isSend == (parent->func == "Send") && e->peer == parent->peer, "p2p ProxyOp peer %d", e->peer);
        ctx.check(e->trafficBytes > 0, "ProxyOp chunkSize %zu", e->trafficBytes);
      } else if (e->type == kProxyStep) {
        ++steps;
        const RecordedEvent* op = e->parent ? byHandle[e->parent] : nullptr;
        if (!ctx.check(op && op->type == kProxyOp, "ProxyStep without a ProxyOp parent")) continue;
        const bool isSend = op->op == 1;
        if (!ctx.check(e->states.size() == 1 && e->states[0] == (isSend ? kProxyStepSendWait : kProxyStepRecvWait),
                       "ProxyStep states"))
          continue;
        ctx.check(e->stateValues[0] <= op->trafficBytes, "a step of %llu bytes in %zu-byte slots",
                  (unsigned long long)e->stateValues[0], op->trafficBytes);
        if (isSend) sentBytes[op->parent] += e->stateValues[0];
      }
    }
    // Ring all-reduce: each rank sends 2(n-1)/n of the vector; the send, all of it.
    const size_t ringBytes = kCount * 4 * 2 * (n - 1) / n, sendBytes = kCount * 4;
    int colls = 0, p2ps = 0;
    for (const RecordedEvent* e : c->events) {
      if (e->type == kColl) {
        ++colls;
        // The ring cuts each channel's share into n blocks: within a few elements of 2(n-1)/n.
        const size_t got = sentBytes[e];
        ctx.check(got + 64 * n >= ringBytes && got <= ringBytes + 64 * n, "AllReduce send steps carry %zu bytes, want %zu",
                  got, ringBytes);
      } else if (e->type == kP2p && e->func == "Send") {
        ++p2ps;
        ctx.check(sentBytes[e] == sendBytes, "Send steps carry %zu bytes, want %zu", sentBytes[e], sendBytes);
      }
    }
    ctx.check(colls == 1 && p2ps == 1, "%d Coll and %d Send events", colls, p2ps);
    // The proxy's idle periods: ProxyCtrl roots, Sleep then (unless it was the last) Wakeup.
    int ctrl = 0;
    for (const RecordedEvent* e : c->events) {
      if (e->type != kProxyCtrl) continue;
      ++ctrl;
      ctx.check(e->parent == nullptr, "ProxyCtrl with a parent");
      ctx.check(!e->states.empty() && e->states[0] == kProxyCtrlSleep && e->states.size() <= 2 &&
                    (e->states.size() == 1 || e->states[1] == kProxyCtrlWakeup),
                "ProxyCtrl states (%zu)", e->states.size());
    }
    ctx.check(ctrl >= 1, "no ProxyCtrl event");
    ctx.check(ops >= 4 && steps > 10, "%d ProxyOps and %d ProxySteps", ops, steps);
  });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, ProfilerProxyTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork), testing::Values(2, 3)),
                         mpParamName);

}  // namespace
}  // namespace accl::test
