// Profiler plugin events of CUDA communicators (issue 19; label gpu, and vgpu.profiler.* on the
// virtual GPU): two ranks as threads, each on device rank % devices, with the recording plugin
// (tests/unit/profiler_plugin_fixture, ABI v6) run an all-reduce of several channels' worth, a
// send/recv ring in a group, and an all-reduce captured into a CUDA graph and replayed. Checked:
//   - the results (closed form), so the events describe work that happened;
//   - CollApi / P2pApi per call, graphCaptured true only for the captured call;
//   - one KernelLaunch per launch, the captured one included;
//   - per Coll / P2p that ran outside a graph, one KernelCh per channel it ran on (distinct ids below
//     its nChannels), each with the kernel's start time and a KernelChStop not before it
//     (kernel_ch_events.h); the captured collective has none (its replays are not seen).
// GpuProfiler.ProxyOpsAndStepsOverTheNetwork: the same two ranks with P2P and shared memory off,
// so every channel goes through the socket network and its proxy (backend/cuda/proxy_op_events.h):
// two all-reduces of different sizes and a send/recv ring, then a captured all-reduce and one
// more after it. Checked: a ProxyOp per operation and network end (parent its Coll / P2p, the
// ring's or the transfer's peer, nSteps = the send steps the proxy reported under it), every
// ProxyStep under a ProxyOp with its bytes, the bytes of each operation's send steps equal to what
// the ring or the send moves (so no step is counted to the wrong operation), and no ProxyOp for
// the operations from the capture on.
// GpuProfiler.NetPluginEventsOverANetPlugin: the same run over the acclTest net plugin (v12, on
// lo; tests/net_plugin), which reports a NetPlugin event per request: each must hang from a
// ProxyStep with the plugin's id and data and its update, one per request the step posted.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectives_gpu_util.h"
#include "mp/mp_test_util.h"
#include "profiler/profiler_abi.h"
#include "support/rank_launcher.h"
#include "net_plugin/test_net_profile.h"
#include "unit/profiler_plugin_fixture/recording_profiler.h"

namespace accl::gputest {
namespace {

using namespace accl::prof;
using test::RankContext;
using test::RecordedContext;
using test::RecordedEvent;
using test::RecordingLog;

constexpr int kRanks = 2;
constexpr size_t kCount = (size_t{1} << 20) + 7;  // 4 MiB of float32: several chunks and channels
constexpr size_t kP2pCount = 1031;
constexpr auto kStreamLimit = std::chrono::seconds(120);

std::string pluginPath() { return std::string(ACCL_TEST_PROFILER_DIR) + "/libnccl-profiler-acclTestV6.so"; }

RecordingLog* fixtureLog() {
  void* h = dlopen(pluginPath().c_str(), RTLD_NOW | RTLD_LOCAL);  // the library the communicators load
  if (!h) return nullptr;
  reinterpret_cast<void (*)()>(dlsym(h, "acclTestProfilerReset"))();
  return reinterpret_cast<RecordingLog* (*)()>(dlsym(h, "acclTestProfilerLog"))();
}

// One rank: its buffers (allocated before the communicator: a cudaFree between collectives would
// wait for a peer's kernel on a shared device), communicator and stream.
struct Rank {
  RankContext& ctx;
  float* send = nullptr;
  float* recv = nullptr;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;

  explicit Rank(RankContext& c) : ctx(c) {}
  ~Rank() {
    if (stream) cudaStreamDestroy(stream);
    cudaFree(send);
    cudaFree(recv);
  }
  bool ok(cudaError_t e, const char* what) { return ctx.check(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e)); }
  bool nccl(ncclResult_t r, const char* what) {
    return ctx.check(r == ncclSuccess, "%s: %s (%s)", what, ncclGetErrorString(r), ncclGetLastError(comm));
  }
  bool wait(const char* what) {
    const std::string why = waitStream(stream, std::chrono::steady_clock::now() + kStreamLimit);
    if (!ctx.check(why.empty(), "%s: %s", what, why.c_str())) {
      ctx.abortComm(comm);
      comm = nullptr;
      return false;
    }
    return true;
  }
  // Every element of recv[0, count) is `want` (the first wrong one is reported).
  bool expect(size_t count, float want, const char* what) {
    std::vector<float> host(count);
    if (!ok(cudaMemcpy(host.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy")) return false;
    for (size_t i = 0; i < count; ++i)
      if (!ctx.check(host[i] == want, "%s: element %zu is %g, want %g", what, i, host[i], want)) return false;
    return true;
  }
  // Device rank % devices, the buffers, the communicator and the stream.
  bool open() {
    int devices = 0;
    if (!ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount") || !ok(cudaSetDevice(ctx.rank % devices), "cudaSetDevice"))
      return false;
    if (!ok(cudaMalloc(&send, kCount * sizeof(float)), "cudaMalloc") ||
        !ok(cudaMalloc(&recv, kCount * sizeof(float)), "cudaMalloc"))
      return false;
    const ncclResult_t init = ncclCommInitRank(&comm, ctx.nranks, ctx.id(), ctx.rank);
    if (comm) ctx.registerComm(comm);
    return nccl(init, "ncclCommInitRank") && ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  }
  // A float sum all-reduce of `count` elements captured into a graph and replayed once: every
  // rank contributes `scale` x (rank + 1).
  bool capturedAllReduce(size_t count, float scale) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (!fill(scale * (1 + ctx.rank)) ||
        !ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"))
      return false;
    const ncclResult_t captured = ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream);
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    const bool good = nccl(captured, "captured ncclAllReduce") && ok(ended, "cudaStreamEndCapture") &&
                      ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate") &&
                      ok(cudaGraphLaunch(exec, stream), "cudaGraphLaunch") && wait("graph replay") &&
                      expect(count, scale * kRanks * (kRanks + 1) / 2.0f, "graph replay");
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    return good;
  }
  bool fill(float value) {
    std::vector<float> host(kCount, value);
    return ok(cudaMemcpy(send, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy") &&
           ok(cudaMemset(recv, 0, kCount * sizeof(float)), "cudaMemset") && ok(settleCopies() ? cudaSuccess : cudaErrorUnknown, "settle");
  }
};

void runRank(RankContext& ctx) {
  Rank r(ctx);
  if (!r.open()) return;
  const float sum = kRanks * (kRanks + 1) / 2.0f;  // rank k contributes k + 1

  // 1. An all-reduce on the stream.
  if (!r.fill(1.0f + ctx.rank) ||
      !r.nccl(ncclAllReduce(r.send, r.recv, kCount, ncclFloat32, ncclSum, r.comm, r.stream), "ncclAllReduce") ||
      !r.wait("all-reduce") || !r.expect(kCount, sum, "all-reduce"))
    return;
  // 2. A send/recv ring in a group.
  const int next = (ctx.rank + 1) % ctx.nranks, prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
  if (!r.fill(1.0f + ctx.rank) || !r.nccl(ncclGroupStart(), "ncclGroupStart") ||
      !r.nccl(ncclSend(r.send, kP2pCount, ncclFloat32, next, r.comm, r.stream), "ncclSend") ||
      !r.nccl(ncclRecv(r.recv, kP2pCount, ncclFloat32, prev, r.comm, r.stream), "ncclRecv") ||
      !r.nccl(ncclGroupEnd(), "ncclGroupEnd") || !r.wait("send/recv") ||
      !r.expect(kP2pCount, 1.0f + prev, "send/recv"))
    return;
  // 3. An all-reduce captured into a graph, replayed once.
  if (r.capturedAllReduce(kCount, 2.0f) && r.comm) r.nccl(ctx.destroyComm(r.comm), "ncclCommDestroy");
}

// This rank's finalized context.
const RecordedContext* contextOf(RecordingLog* log, int rank) {
  for (const RecordedContext* c : log->contexts)
    if (c->rank == rank && c->finalized) return c;
  return nullptr;
}

void checkRankEvents(RecordingLog* log, int rank) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  const RecordedContext* c = contextOf(log, rank);
  ASSERT_NE(c, nullptr) << "no finalized profiler context";
  std::map<const void*, const RecordedEvent*> byHandle;
  std::map<uint64_t, std::vector<const RecordedEvent*>> byType;
  std::map<const void*, std::vector<const RecordedEvent*>> children;
  for (const RecordedEvent* e : c->events) {
    EXPECT_TRUE(e->stopped) << "event type " << e->type << " never stopped";
    if (e->parent) {
      EXPECT_TRUE(byHandle.count(e->parent)) << "event type " << e->type << ": parent is no earlier event";
      children[e->parent].push_back(e);
    }
    byHandle[e] = e;
    byType[e->type].push_back(e);
  }
  const auto& collApis = byType[kCollApi];
  const auto& p2pApis = byType[kP2pApi];
  ASSERT_EQ(collApis.size(), 2u);
  ASSERT_EQ(p2pApis.size(), 2u);
  EXPECT_FALSE(collApis[0]->graphCaptured);
  EXPECT_TRUE(collApis[1]->graphCaptured) << "the call inside cudaStreamBeginCapture";
  for (const RecordedEvent* a : p2pApis) EXPECT_FALSE(a->graphCaptured);
  EXPECT_EQ(byType[kKernelLaunch].size(), 3u) << "launches: all-reduce, the send/recv group, the captured one";

  // KernelCh per operation: for every channel it ran on, outside the graph; none inside it.
  std::vector<const RecordedEvent*> ops;
  for (const RecordedEvent* e : c->events)
    if (e->type == kColl || e->type == kP2p) ops.push_back(e);
  ASSERT_EQ(ops.size(), 4u) << "Coll, Send, Recv, captured Coll";
  for (size_t i = 0; i < ops.size(); ++i) {
    const RecordedEvent* op = ops[i];
    SCOPED_TRACE("operation " + std::to_string(i) + " (" + op->func + ")");
    const bool inGraph = i == 3;
    std::vector<int> seen;
    for (const RecordedEvent* k : children[op]) {
      if (k->type != kKernelCh) continue;
      EXPECT_GE(k->channelId, 0);
      EXPECT_LT(k->channelId, op->nChannels);
      for (int s : seen) EXPECT_NE(s, k->channelId) << "two KernelCh on one channel";
      seen.push_back(k->channelId);
      ASSERT_EQ(k->states, std::vector<int>{kKernelChStop});
      EXPECT_GT(k->pTimer, 0u);
      EXPECT_GE(k->stateValues[0], k->pTimer) << "the kernel's end before its start";
    }
    EXPECT_EQ(static_cast<int>(seen.size()), inGraph ? 0 : op->nChannels);
  }
  EXPECT_GE(ops[0]->nChannels, 1);
}

// Runs `rank` on kRanks thread ranks with the recording plugin and the CUDA backend (and `extra`
// settings), then `check` on each rank's events.
void runWithPlugin(std::vector<std::pair<const char*, const char*>> extra, void (*rank)(RankContext&),
                   void (*check)(RecordingLog*, int)) {
  RecordingLog* log = fixtureLog();
  ASSERT_NE(log, nullptr) << dlerror();
  ScopedEnv env;
  env.set("ACCL_BACKEND", "cuda");
  env.set("NCCL_PROFILER_PLUGIN", pluginPath());
  for (auto [name, value] : extra) env.set(name, value);
  test::LaunchOptions opts;
  opts.mode = test::LaunchMode::kThreads;
  opts.nranks = kRanks;
  opts.deadline = std::chrono::seconds(300);
  opts.ids = test::makeUniqueIds(1);
  const test::LaunchResult res = test::launchRanks(opts, rank);
  EXPECT_RANKS_OK(res);
  if (!res.ok()) return;
  std::lock_guard<std::mutex> lock(log->mutex);
  for (int r = 0; r < kRanks; ++r) check(log, r);
}

TEST(GpuProfiler, KernelChFromKernelTimestampsAndGraphCapturedCalls) {
  const std::string why = noDeviceReason();
  if (!why.empty()) GTEST_SKIP() << why;
  runWithPlugin({}, runRank, checkRankEvents);
}

// ---- the network proxy on the CUDA backend ----------------------------------------------------

constexpr size_t kSecondCount = 300007;  // the second all-reduce: another size, other step counts

void runNetRank(RankContext& ctx) {
  Rank r(ctx);
  if (!r.open()) return;
  const float sum = kRanks * (kRanks + 1) / 2.0f;
  const int next = (ctx.rank + 1) % ctx.nranks, prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
  auto allReduce = [&](size_t count, float scale, const char* what) {
    return r.fill(scale * (1 + ctx.rank)) &&
           r.nccl(ncclAllReduce(r.send, r.recv, count, ncclFloat32, ncclSum, r.comm, r.stream), what) &&
           r.wait(what) && r.expect(count, scale * sum, what);
  };
  if (!allReduce(kCount, 1.0f, "all-reduce") || !allReduce(kSecondCount, 3.0f, "second all-reduce")) return;
  if (!r.fill(1.0f + ctx.rank) || !r.nccl(ncclGroupStart(), "ncclGroupStart") ||
      !r.nccl(ncclSend(r.send, kP2pCount, ncclFloat32, next, r.comm, r.stream), "ncclSend") ||
      !r.nccl(ncclRecv(r.recv, kP2pCount, ncclFloat32, prev, r.comm, r.stream), "ncclRecv") ||
      !r.nccl(ncclGroupEnd(), "ncclGroupEnd") || !r.wait("send/recv") || !r.expect(kP2pCount, 1.0f + prev, "send/recv"))
    return;
  // A captured all-reduce, replayed; then one more launched directly.
  if (r.capturedAllReduce(kP2pCount, 2.0f) && allReduce(kP2pCount, 5.0f, "all-reduce after the graph") && r.comm)
    r.nccl(ctx.destroyComm(r.comm), "ncclCommDestroy");
}

void checkProxyEvents(RecordingLog* log, int rank) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  const RecordedContext* c = contextOf(log, rank);
  ASSERT_NE(c, nullptr) << "no finalized profiler context";
  const int next = (rank + 1) % kRanks, prev = (rank + kRanks - 1) % kRanks;
  std::map<const void*, const RecordedEvent*> byHandle;
  std::map<const void*, int> sendStepsOf;         // ProxyOp -> its send steps
  std::map<const void*, size_t> sentBytes;        // Coll / P2p -> bytes of its send steps
  std::map<const void*, int> proxyOpsOf;          // Coll / P2p -> its ProxyOps
  for (const RecordedEvent* e : c->events) {
    byHandle[e] = e;
    EXPECT_TRUE(e->stopped) << "event type " << e->type << " never stopped";
    if (e->type == kProxyOp) {
      const RecordedEvent* task = e->parent ? byHandle[e->parent] : nullptr;
      ASSERT_TRUE(task && (task->type == kColl || task->type == kP2p)) << "ProxyOp without a Coll / P2p parent";
      ++proxyOpsOf[task];
      const bool isSend = e->op == 1;
      if (task->type == kColl)
        EXPECT_EQ(e->peer, isSend ? next : prev) << "ring ProxyOp";
      else
        EXPECT_TRUE(isSend == (task->func == "Send") && e->peer == task->peer) << "p2p ProxyOp peer " << e->peer;
      EXPECT_GT(e->count, 0u) << "nSteps";
      EXPECT_GT(e->trafficBytes, 0u) << "chunkSize";
    } else if (e->type == kProxyStep) {
      const RecordedEvent* op = e->parent ? byHandle[e->parent] : nullptr;
      ASSERT_TRUE(op && op->type == kProxyOp) << "ProxyStep without a ProxyOp parent";
      const bool isSend = op->op == 1;
      ASSERT_EQ(e->states, std::vector<int>{isSend ? kProxyStepSendWait : kProxyStepRecvWait});
      EXPECT_LE(e->stateValues[0], op->trafficBytes) << "a step larger than its slot";
      if (isSend) ++sendStepsOf[op], sentBytes[op->parent] += e->stateValues[0];
    }
  }
  // Every send step of an operation is reported (its ProxyOp was marked before the kernel ran).
  for (const RecordedEvent* e : c->events)
    if (e->type == kProxyOp && e->op == 1)
      EXPECT_EQ(sendStepsOf[e], static_cast<int>(e->count)) << "send ProxyOp: steps reported vs nSteps";
  // Per operation, in call order: all-reduce, second all-reduce, send, recv, captured, after.
  std::vector<const RecordedEvent*> tasks;
  for (const RecordedEvent* e : c->events)
    if (e->type == kColl || e->type == kP2p) tasks.push_back(e);
  ASSERT_EQ(tasks.size(), 6u);
  ASSERT_FALSE(proxyOpsOf.empty()) << "no ProxyOp at all: did the channels go through the network? (NCCL_P2P_DISABLE "
                                      "and NCCL_SHM_DISABLE are read once per process: run this test in its own)";
  const size_t counts[] = {kCount, kSecondCount};
  for (int i = 0; i < 2; ++i) {
    // A ring all-reduce sends 2(n-1)/n of the vector from each rank (reduce-scatter, then
    // all-gather), cut per channel into blocks: within a few elements per channel.
    const size_t want = counts[i] * sizeof(float) * 2 * (kRanks - 1) / kRanks;
    EXPECT_NEAR(static_cast<double>(sentBytes[tasks[i]]), static_cast<double>(want), 64.0 * kRanks * 32)
        << "all-reduce " << i << ": bytes of its send steps";
    EXPECT_EQ(proxyOpsOf[tasks[i]], 2 * tasks[i]->nChannels) << "all-reduce " << i << ": a send and a receive per channel";
  }
  ASSERT_EQ(tasks[2]->func, "Send");
  EXPECT_EQ(sentBytes[tasks[2]], kP2pCount * sizeof(float));
  EXPECT_GE(proxyOpsOf[tasks[2]], 1);
  EXPECT_GE(proxyOpsOf[tasks[3]], 1);
  EXPECT_EQ(proxyOpsOf[tasks[4]], 0) << "the captured all-reduce";
  EXPECT_EQ(proxyOpsOf[tasks[5]], 0) << "an all-reduce after a capture";
}

TEST(GpuProfiler, ProxyOpsAndStepsOverTheNetwork) {
  const std::string why = noDeviceReason();
  if (!why.empty()) GTEST_SKIP() << why;
  runWithPlugin({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_NET", "Socket"},
                 {"NCCL_SOCKET_IFNAME", "lo"}, {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}},
                runNetRank, checkProxyEvents);
}

void checkNetPluginEvents(RecordingLog* log, int rank) {
  checkProxyEvents(log, rank);
  SCOPED_TRACE("rank " + std::to_string(rank));
  const RecordedContext* c = contextOf(log, rank);
  ASSERT_NE(c, nullptr);
  std::map<const void*, const RecordedEvent*> byHandle;
  std::map<const void*, int> pluginEventsOf;  // ProxyStep -> its NetPlugin events
  for (const RecordedEvent* e : c->events) {
    byHandle[e] = e;
    if (e->type != kNetPlugin) continue;
    const RecordedEvent* step = e->parent ? byHandle[e->parent] : nullptr;
    ASSERT_TRUE(step && step->type == kProxyStep) << "NetPlugin event without a ProxyStep parent";
    ++pluginEventsOf[step];
    EXPECT_EQ(e->pluginId, testnet::kTestNetProfId);
    EXPECT_EQ(e->pluginData, reinterpret_cast<const void*>(testnet::kTestNetStartData));
    ASSERT_EQ(e->states, std::vector<int>{kNetPluginUpdate});
    EXPECT_EQ(e->stateValues[0], testnet::kTestNetUpdateData);
  }
  int steps = 0;
  for (const RecordedEvent* e : c->events) {
    if (e->type != kProxyStep) continue;
    ++steps;
    const bool isSend = byHandle[e->parent]->op == 1, payload = e->stateValues[0] > 0;
    EXPECT_EQ(pluginEventsOf[e], (isSend ? 1 : 0) + (payload ? 1 : 0))
        << (isSend ? "send" : "receive") << " step " << e->seqNumber << ": header and payload requests";
  }
  EXPECT_GT(steps, 0);
}

TEST(GpuProfiler, NetPluginEventsOverANetPlugin) {
  const std::string why = noDeviceReason();
  if (!why.empty()) GTEST_SKIP() << why;
  runWithPlugin({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_NET_PLUGIN", ACCL_TEST_NET_PLUGIN_V12},
                 {"NCCL_NET", "acclTest"}, {"ACCL_TEST_NET_IFNAME", "lo"}, {"NCCL_ALGO", "Ring"},
                 {"NCCL_PROTO", "Simple"}},
                runNetRank, checkNetPluginEvents);
}

}  // namespace
}  // namespace accl::gputest
