// The GPU collectives with every rank on its own: each rank is a thread or a forked process of its
// own (tests/support/rank_launcher.h) that picks device rank % deviceCount, so ranks both share a
// device and span two, and joins the communicator through ncclCommInitRank. collectives_gpu_test.cc
// drives all ranks from one thread in groups; here nothing is shared but the unique id. For each
// NCCL_ALGO x NCCL_PROTO (ring, allreduce:tree x Simple, LL, LL128; one launch each, the variables
// set before the communicators exist) every rank runs AllReduce, AllGather, ReduceScatter,
// Broadcast and Reduce on float32 sum, in place and out of place, and a Send/Recv ring in a group,
// with counts 0, 1, 1031 and one count of several chunks per channel. Inputs are uploaded with
// cudaMemcpy, the call runs on the rank's non-blocking stream and every element is compared with its
// closed form (tests/mp/collective_expect.h), guard elements around each buffer included. A stream
// that misses its deadline fails the rank and aborts its communicator; the launcher's deadline
// fails a launch that still hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "collectives_gpu_util.h"
#include "mp/collective_call.h"
#include "mp/mp_test_util.h"
#include "support/rank_launcher.h"

namespace accl::gputest {
namespace {

using test::CaseModel;
using test::CaseSpec;
using test::Coll;
using test::LaunchMode;
using test::RankContext;
using Clock = std::chrono::steady_clock;

// > 4 MiB of float32: with the Simple protocol's 512 KiB FIFO step, several chunks per channel.
constexpr size_t kMultiChunkCount = (size_t{4} << 20) / 4 + 17;
constexpr size_t kCounts[] = {0, 1, 1031, kMultiChunkCount};
constexpr auto kLaunchDeadline = std::chrono::seconds(240);
// One stream wait: a hang fails here (with an abort) well before the launcher's deadline.
constexpr auto kStreamLimit = std::chrono::seconds(90);

struct AlgoProto {
  const char* algo;   // NCCL_ALGO (tree only for all-reduce: there is no tree for the others)
  const char* proto;  // NCCL_PROTO
};
constexpr AlgoProto kAlgoProtos[] = {
    {"ring", "Simple"},           {"ring", "LL"},           {"ring", "LL128"},
    {"allreduce:tree", "Simple"}, {"allreduce:tree", "LL"}, {"allreduce:tree", "LL128"},
};

std::vector<CaseSpec> casesFor(int n) {
  std::vector<CaseSpec> cases;
  for (Coll c : {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast, Coll::kReduce})
    for (size_t count : kCounts)
      for (bool inPlace : {false, true}) {
        CaseSpec cs;
        cs.coll = c;
        cs.type = ncclFloat32;
        cs.op = test::collReduces(c) ? test::Op::kSum : test::Op::kNone;
        cs.count = count;
        cs.inPlace = inPlace;
        cs.root = test::collHasRoot(c) ? n - 1 : 0;  // the last rank: on device 1 once there are 2+ ranks
        cases.push_back(cs);
      }
  return cases;
}

// One rank's buffers, communicator and stream, and the checks of one case each.
//
// Every device buffer is allocated before the communicator exists and freed after it is gone:
// cudaFree synchronizes the whole device, so with ranks as threads of one process sharing a
// device, a free between two collectives would wait for a peer's kernel that waits for this rank
// (a deadlock, on a real GPU as on the virtual one).
class RankRunner {
 public:
  RankRunner(RankContext& ctx, std::string where) : ctx_(ctx), where_(std::move(where)) {}
  ~RankRunner() {
    cudaFree(p2pSend_);
    cudaFree(p2pRecv_);
  }

  // Device, buffers for every case, communicator, stream; false (failure recorded) when any of
  // them is missing.
  bool init(const std::vector<CaseSpec>& cases) {
    int devices = 0;
    if (!ctx_.check(cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0, "%s: no CUDA device", where_.c_str()))
      return false;
    const int dev = ctx_.rank % devices;
    if (!cudaOk(cudaSetDevice(dev), "cudaSetDevice") || !reserve(cases)) return false;
    const ncclResult_t res = ncclCommInitRank(&comm_, ctx_.nranks, ctx_.id(), ctx_.rank);
    if (comm_) ctx_.registerComm(comm_);
    if (!ctx_.check(res == ncclSuccess, "%s: ncclCommInitRank on device %d: %s", where_.c_str(), dev,
                    ncclText(res).c_str()))
      return false;
    return cudaOk(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }

  // Destroys the communicator (or leaves it to an abort that already happened) and the stream.
  void finish() {
    if (comm_ && alive_) {
      ncclResult_t async = ncclSuccess;
      const ncclResult_t q = ncclCommGetAsyncError(comm_, &async);
      ctx_.check(q == ncclSuccess && async == ncclSuccess, "%s: async error %s at the end", where_.c_str(),
                 ncclText(q != ncclSuccess ? q : async).c_str());
      const ncclResult_t d = ctx_.destroyComm(comm_);
      ctx_.check(d == ncclSuccess, "%s: ncclCommDestroy: %s", where_.c_str(), ncclText(d).c_str());
    }
    if (stream_) cudaStreamDestroy(stream_);
  }

  bool alive() const { return alive_; }

  // One collective case on this rank. Returns false when the communicator is gone (stop the rank).
  bool runCase(const CaseSpec& cs) {
    const std::string name = test::describeCase(cs);
    const CaseModel model(cs, ctx_.nranks);
    const test::RankLayout layout = test::layoutFor(cs, ctx_.nranks, ctx_.rank);
    test::HostBuffer host[2];
    DeviceMirror* dev = dev_;
    for (size_t b = 0; b < layout.buffers.size(); ++b) {
      host[b].prepare(model, layout.buffers[b]);
      if (!dev[b].upload(host[b], layout.buffers[b], cs.type)) {
        ctx_.fail("%s: %s: upload failed", where_.c_str(), name.c_str());
        return abort();
      }
    }
    const void* send = dev[layout.sendBuffer].at(layout.sendOffset);
    void* recv = dev[layout.recvBuffer].at(layout.recvOffset);
    const ncclResult_t res = test::callCollectiveOnStream(cs, send, recv, ncclSum, comm_, stream_);
    if (!ctx_.check(res == ncclSuccess, "%s: %s: the call returned %s", where_.c_str(), name.c_str(),
                    ncclText(res).c_str()))
      return abort();
    if (!waitAndCheckAsync(name)) return false;
    size_t wrong = 0;
    std::vector<std::string> reports;
    for (size_t b = 0; b < layout.buffers.size(); ++b) {
      if (!dev[b].download(host[b])) {
        ctx_.fail("%s: %s: download failed", where_.c_str(), name.c_str());
        return abort();
      }
      wrong += host[b].check(model, layout.buffers[b], 3, &reports);
    }
    if (wrong > 0) {
      std::string text;
      for (const std::string& s : reports) text += "; " + s;
      ctx_.fail("%s: %s: %zu elements wrong%s", where_.c_str(), name.c_str(), wrong, text.c_str());
    }
    return true;
  }

  // A ring of ncclSend/ncclRecv in one group: this rank sends to rank+1 and receives from rank-1
  // (with one rank, a send to itself). The uploads have landed (settleCopies) and the previous
  // case's stream was drained before the group starts.
  bool runSendRecvRing(size_t count) {
    const int n = ctx_.nranks, to = (ctx_.rank + 1) % n, from = (ctx_.rank + n - 1) % n;
    const std::string name = "send/recv ring count=" + std::to_string(count);
    constexpr size_t kGuard = test::kGuardElems;
    constexpr uint32_t kSentinel = 0xfffffff7u;  // a NaN no input equals
    auto value = [](int rank, size_t j) { return static_cast<float>(rank * 4096 + static_cast<int>(j % 4096)); };
    std::vector<float> sendHost(count);
    for (size_t j = 0; j < count; ++j) sendHost[j] = value(ctx_.rank, j);
    std::vector<uint32_t> recvHost(count + 2 * kGuard, kSentinel);
    float* sendDev = p2pSend_;
    float* recvDev = p2pRecv_;  // kGuard sentinels, count elements, kGuard sentinels
    const size_t recvBytes = recvHost.size() * 4;
    bool ok = cudaOk(cudaMemcpy(sendDev, sendHost.data(), count * 4, cudaMemcpyHostToDevice), "cudaMemcpy") &&
              cudaOk(cudaMemcpy(recvDev, recvHost.data(), recvBytes, cudaMemcpyHostToDevice), "cudaMemcpy") &&
              cudaOk(settleCopies() ? cudaSuccess : cudaErrorUnknown, "settleCopies");
    ncclResult_t res = ncclSuccess;
    if (ok) {
      res = ncclGroupStart();
      if (res == ncclSuccess) res = ncclSend(sendDev, count, ncclFloat32, to, comm_, stream_);
      if (res == ncclSuccess) res = ncclRecv(recvDev + kGuard, count, ncclFloat32, from, comm_, stream_);
      const ncclResult_t end = ncclGroupEnd();
      if (res == ncclSuccess) res = end;
      ok = ctx_.check(res == ncclSuccess, "%s: %s: the group returned %s", where_.c_str(), name.c_str(),
                      ncclText(res).c_str());
    }
    if (ok) ok = waitAndCheckAsync(name);
    if (ok && cudaOk(cudaMemcpy(recvHost.data(), recvDev, recvBytes, cudaMemcpyDeviceToHost), "cudaMemcpy")) {
      size_t wrong = 0;
      std::string first;
      for (size_t e = 0; e < recvHost.size(); ++e) {
        const bool inside = e >= kGuard && e < kGuard + count;
        uint32_t want = kSentinel;
        if (inside) {
          const float v = value(from, e - kGuard);
          std::memcpy(&want, &v, 4);
        }
        if (recvHost[e] != want && wrong++ == 0)
          first = (inside ? "recvbuff[" + std::to_string(e - kGuard) + "]"
                          : "guard " + std::to_string(static_cast<long>(e) - static_cast<long>(kGuard))) +
                  ": expected 0x" + hex(want) + " got 0x" + hex(recvHost[e]);
      }
      ctx_.check(wrong == 0, "%s: %s (from rank %d): %zu elements wrong, first %s", where_.c_str(), name.c_str(),
                 from, wrong, first.c_str());
    }
    if (!ok) abort();  // a rank that did not take part would leave its peers waiting
    return alive_;
  }

 private:
  // Allocates the device buffers of every case at their largest (DeviceMirror keeps its
  // allocation for any upload that fits) and those of the send/recv ring.
  bool reserve(const std::vector<CaseSpec>& cases) {
    for (int b = 0; b < 2; ++b) {
      const CaseSpec* biggest = nullptr;
      size_t elems = 0;
      for (const CaseSpec& cs : cases) {
        const test::RankLayout layout = test::layoutFor(cs, ctx_.nranks, ctx_.rank);
        if (static_cast<size_t>(b) < layout.buffers.size() && layout.buffers[b].elems >= elems) {
          elems = layout.buffers[b].elems;
          biggest = &cs;
        }
      }
      if (biggest == nullptr) continue;
      const CaseModel model(*biggest, ctx_.nranks);
      const test::RankLayout layout = test::layoutFor(*biggest, ctx_.nranks, ctx_.rank);
      test::HostBuffer host;
      host.prepare(model, layout.buffers[b]);
      if (!ctx_.check(dev_[b].upload(host, layout.buffers[b], biggest->type), "%s: cudaMalloc of %zu elements failed",
                      where_.c_str(), elems))
        return false;
    }
    const size_t maxCount = kCounts[std::size(kCounts) - 1];
    return cudaOk(cudaMalloc(&p2pSend_, maxCount * sizeof(float) + 16), "cudaMalloc") &&
           cudaOk(cudaMalloc(&p2pRecv_, (maxCount + 2 * test::kGuardElems) * sizeof(float)), "cudaMalloc");
  }
  static std::string hex(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", v);
    return buf;
  }
  bool cudaOk(cudaError_t e, const char* call) {
    return ctx_.check(e == cudaSuccess, "%s: %s: %s", where_.c_str(), call, cudaGetErrorString(e));
  }
  // Gives up on the communicator: the peers' kernels stop waiting for this rank. Returns false.
  bool abort() {
    if (comm_ && alive_) ctx_.abortComm(comm_);
    alive_ = false;
    return false;
  }
  // cudaStreamSynchronize with a deadline (polls cudaStreamQuery), then the communicator's async
  // error. On a timeout or an error the rank fails and aborts its communicator.
  bool waitAndCheckAsync(const std::string& name) {
    const std::string what = waitStream(stream_, Clock::now() + kStreamLimit);
    if (!what.empty()) {
      ctx_.fail("%s: %s: %s after %lld s (aborting the communicator)", where_.c_str(), name.c_str(), what.c_str(),
                static_cast<long long>(kStreamLimit.count()));
      return abort();
    }
    ncclResult_t async = ncclSuccess;
    const ncclResult_t q = ncclCommGetAsyncError(comm_, &async);
    if (!ctx_.check(q == ncclSuccess && async == ncclSuccess, "%s: %s: async error %s", where_.c_str(),
                    name.c_str(), ncclText(q != ncclSuccess ? q : async).c_str()))
      return abort();
    return true;
  }

  RankContext& ctx_;
  const std::string where_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool alive_ = true;
  DeviceMirror dev_[2];
  float* p2pSend_ = nullptr;
  float* p2pRecv_ = nullptr;
};

void runRank(RankContext& ctx, const std::string& launch, const std::vector<CaseSpec>& cases) {
  RankRunner runner(ctx, launch + " rank " + std::to_string(ctx.rank));
  if (runner.init(cases)) {
    bool go = true;
    for (size_t i = 0; go && i < cases.size(); ++i) go = runner.runCase(cases[i]);
    for (size_t i = 0; go && i < std::size(kCounts); ++i) go = runner.runSendRecvRing(kCounts[i]);
  }
  runner.finish();
}

// Whether this process already used CUDA (a thread-mode test ran here): a child forked from it
// could not use CUDA, so fork-mode tests then skip themselves. The instantiation lists the fork
// tests first, so a run of the whole binary does them before CUDA is touched here.
bool gCudaUsedHere = false;

// Why the test cannot run ("" when it can). Fork mode asks in a forked child, keeping this process
// free of CUDA for the launches that follow.
std::string skipReason(LaunchMode mode) {
  if (mode == LaunchMode::kThreads) {
    gCudaUsedHere = true;
    return noDeviceReason();
  }
  if (gCudaUsedHere) return "CUDA was already used in this process (run the fork tests alone or first)";
  test::LaunchOptions probe;
  probe.mode = LaunchMode::kFork;
  probe.deadline = std::chrono::seconds(30);
  const test::LaunchResult res = test::launchRanks(probe, [](RankContext& ctx) {
    const std::string why = noDeviceReason();
    if (!why.empty()) ctx.note("%s", why.c_str());
  });
  if (!res.ok()) return "the device probe in a forked child failed: " + res.summary();
  return res.ranks[0].notes.empty() ? "" : res.ranks[0].notes[0];
}

using Param = std::tuple<LaunchMode, int>;

class GpuCollectivesRanks : public ::testing::TestWithParam<Param> {};

TEST_P(GpuCollectivesRanks, Matrix) {
  const auto [mode, n] = GetParam();
  const std::string why = skipReason(mode);
  if (!why.empty()) GTEST_SKIP() << why;
  const std::vector<CaseSpec> cases = casesFor(n);
  const auto start = Clock::now();
  for (const AlgoProto& ap : kAlgoProtos) {
    ScopedEnv env;
    env.set("ACCL_BACKEND", "cuda");
    env.set("NCCL_ALGO", ap.algo);
    env.set("NCCL_PROTO", ap.proto);
    const std::string launch = std::string("[") + test::launchModeName(mode) + " ranks=" + std::to_string(n) +
                               " NCCL_ALGO=" + ap.algo + " NCCL_PROTO=" + ap.proto + "]";
    test::LaunchOptions opts;
    opts.mode = mode;
    opts.nranks = n;
    opts.deadline = kLaunchDeadline;
    opts.ids = test::makeUniqueIds(1);
    const test::LaunchResult res =
        test::launchRanks(opts, [launch, cases](RankContext& ctx) { runRank(ctx, launch, cases); });
    std::printf("[ gpu ranks ] %s: %zu cases in %.2f s\n", launch.c_str(), cases.size() + std::size(kCounts),
                res.seconds);
    EXPECT_RANKS_OK(res) << launch;
    // A thread that outlived the deadline still runs in this process: stop here.
    if (!res.ranksWith(test::RankStatus::kTimedOut).empty()) FAIL() << launch << ": a rank hung; stopping";
  }
  std::printf("[ gpu ranks ] %s ranks=%d: %.2f s in all\n", test::launchModeName(mode), n,
              std::chrono::duration<double>(Clock::now() - start).count());
}

INSTANTIATE_TEST_SUITE_P(GpuRanks, GpuCollectivesRanks,
                         ::testing::Combine(::testing::Values(LaunchMode::kFork, LaunchMode::kThreads),
                                            ::testing::Values(1, 2, 3, 4)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::string(std::get<0>(info.param) == LaunchMode::kFork ? "fork" : "threads") +
                                  "_" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace accl::gputest
