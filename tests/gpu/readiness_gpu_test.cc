// What a first GPU run would show of the GPU-readiness faults (issue 18), as tests of the public
// API: two streams alternating on one communicator, a graph captured in global mode and replayed,
// suspend and resume between collectives, a communicator destroyed while another's kernel waits
// for the destroying thread, the caller's current device after a collective, and more than 16
// channels when asked.
// Every value is closed-form. They run on a real GPU (label gpu) and on the virtual GPU (label
// vgpu, tests/gpu/CMakeLists.txt says which are expected to fail until issue 18 fixes them).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "collectives_gpu_util.h"

namespace accl::gputest {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kLimit = std::chrono::seconds(60);

// Re-reads NCCL_DEBUG* (deprecated in NCCL, but the only public way to point a running process's
// log elsewhere).
void reloadLogSettings() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop
}

class GpuReadiness : public CudaBackendTest {};

// Rank r's element i of input k: exact in float, different per rank, element and input.
float input(int r, size_t i, int k) { return float((r + 1) * (k + 1) + int(i % 13)); }
float sumOf(int n, size_t i, int k) {
  float s = 0;
  for (int r = 0; r < n; ++r) s += input(r, i, k);
  return s;
}

// Device buffers of one rank: one input and one output per collective.
struct Buffers {
  std::vector<float*> in, out;
  ~Buffers() {
    for (float* p : in) cudaFree(p);
    for (float* p : out) cudaFree(p);
  }
};

std::string upload(Buffers& b, int r, int k, size_t count) {
  std::vector<float> h(count);
  for (size_t i = 0; i < count; ++i) h[i] = input(r, i, k);
  float *in = nullptr, *out = nullptr;
  if (cudaMalloc(&in, count * sizeof(float)) != cudaSuccess || cudaMalloc(&out, count * sizeof(float)) != cudaSuccess)
    return "cudaMalloc failed";
  b.in.push_back(in);
  b.out.push_back(out);
  if (cudaMemcpy(in, h.data(), count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaMemset(out, 0, count * sizeof(float)) != cudaSuccess)
    return "upload failed";
  return "";
}

std::string checkSums(const Buffers& b, int n, int r, int k, size_t count) {
  std::vector<float> h(count);
  if (cudaMemcpy(h.data(), b.out[k], count * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
    return "download failed";
  for (size_t i = 0; i < count; ++i)
    if (h[i] != sumOf(n, i, k))
      return "rank " + std::to_string(r) + " collective " + std::to_string(k) + " element " + std::to_string(i) +
             " = " + std::to_string(h[i]) + ", expected " + std::to_string(sumOf(n, i, k));
  return "";
}

// Every rank's all-reduce of its input k in one group, rank r on streamOf(r): the first error of
// a call, else the group's result.
template <class StreamOf>
ncclResult_t allReduceAll(const CommSet& set, std::vector<Buffers>& bufs, int k, size_t count, StreamOf streamOf) {
  ncclResult_t res = ncclGroupStart();
  for (int r = 0; r < set.size() && res == ncclSuccess; ++r)
    res = ncclAllReduce(bufs[r].in[k], bufs[r].out[k], count, ncclFloat32, ncclSum, set.comm(r), streamOf(r));
  const ncclResult_t end = ncclGroupEnd();
  return res != ncclSuccess ? res : end;
}
ncclResult_t allReduceAll(const CommSet& set, std::vector<Buffers>& bufs, int k, size_t count) {
  return allReduceAll(set, bufs, k, count, [&set](int r) { return set.stream(r); });
}

// Fault 2: consecutive collectives of one communicator issued on two streams, with nothing
// between them in the user's program, must not run at once (NCCL orders a communicator's work).
TEST_F(GpuReadiness, TwoStreamsAlternateOnOneCommunicator) {
  constexpr int kRanks = 2, kColls = 8;
  constexpr size_t kCount = 70001;
  CommSet set(kRanks);
  ASSERT_EQ(set.initResult(), ncclSuccess) << ncclText(set.initResult());
  std::vector<cudaStream_t> second(kRanks);
  for (auto& s : second) ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  std::vector<Buffers> bufs(kRanks);
  for (int r = 0; r < kRanks; ++r)
    for (int k = 0; k < kColls; ++k) ASSERT_EQ(upload(bufs[r], r, k, kCount), "");
  for (int k = 0; k < kColls; ++k) {
    ASSERT_EQ(allReduceAll(set, bufs, k, kCount, [&](int r) { return k % 2 ? second[r] : set.stream(r); }), ncclSuccess)
        << ncclText(ncclInternalError);
  }
  ASSERT_EQ(set.waitAll(kLimit), "");
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(waitStream(second[r], Clock::now() + kLimit), "") << "rank " << r;
  for (int r = 0; r < kRanks; ++r)
    for (int k = 0; k < kColls; ++k) EXPECT_EQ(checkSums(bufs[r], kRanks, r, k, kCount), "");
  for (auto s : second) cudaStreamDestroy(s);
}

// Fault 6: an all-reduce captured in global mode (PyTorch's default) by one thread driving two
// ranks, then replayed three times with new inputs. No CUDA call may invalidate the capture.
TEST_F(GpuReadiness, GraphCapturedInGlobalModeReplaysThreeTimes) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 1031 + (size_t{1} << 16);
  CommSet set(kRanks);
  ASSERT_EQ(set.initResult(), ncclSuccess) << ncclText(set.initResult());
  std::vector<Buffers> bufs(kRanks);
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(upload(bufs[r], r, 0, kCount), "");
  std::vector<cudaGraph_t> graphs(kRanks, nullptr);
  std::vector<cudaGraphExec_t> execs(kRanks, nullptr);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(cudaStreamBeginCapture(set.stream(r), cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(ncclAllReduce(bufs[r].in[0], bufs[r].out[0], kCount, ncclFloat32, ncclSum, set.comm(r), set.stream(r)),
              ncclSuccess)
        << ncclText(ncclInternalError);
  const ncclResult_t groupRes = ncclGroupEnd();
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(cudaStreamEndCapture(set.stream(r), &graphs[r]), cudaSuccess) << "rank " << r;
  ASSERT_EQ(groupRes, ncclSuccess) << ncclText(groupRes);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_NE(graphs[r], nullptr);
    ASSERT_EQ(cudaGraphInstantiate(&execs[r], graphs[r], 0), cudaSuccess);
  }
  for (int replay = 0; replay < 3; ++replay) {
    for (int r = 0; r < kRanks; ++r) {
      std::vector<float> h(kCount);
      for (size_t i = 0; i < kCount; ++i) h[i] = input(r, i, replay);
      ASSERT_EQ(cudaMemcpy(bufs[r].in[0], h.data(), kCount * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(bufs[r].out[0], 0, kCount * sizeof(float)), cudaSuccess);
    }
    for (int r = 0; r < kRanks; ++r) ASSERT_EQ(cudaGraphLaunch(execs[r], set.stream(r)), cudaSuccess);
    ASSERT_EQ(set.waitAll(kLimit), "") << "replay " << replay;
    for (int r = 0; r < kRanks; ++r) {
      std::vector<float> h(kCount);
      ASSERT_EQ(cudaMemcpy(h.data(), bufs[r].out[0], kCount * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t i = 0; i < kCount; ++i)
        ASSERT_EQ(h[i], sumOf(kRanks, i, replay)) << "replay " << replay << " rank " << r << " element " << i;
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    cudaGraphExecDestroy(execs[r]);
    cudaGraphDestroy(graphs[r]);
  }
}

// Fault 4: suspend releases the connections' memory and resume rebuilds it; the collectives after
// resume must run on the new FIFOs, never on the freed ones.
TEST_F(GpuReadiness, SuspendAndResumeBetweenCollectives) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 4099;
  CommSet set(kRanks);
  ASSERT_EQ(set.initResult(), ncclSuccess) << ncclText(set.initResult());
  std::vector<Buffers> bufs(kRanks);
  for (int r = 0; r < kRanks; ++r)
    for (int k = 0; k < 2; ++k) ASSERT_EQ(upload(bufs[r], r, k, kCount), "");
  for (int k = 0; k < 2; ++k) {
    if (k == 1) {
      for (int r = 0; r < kRanks; ++r) ASSERT_EQ(ncclCommSuspend(set.comm(r), NCCL_SUSPEND_MEM), ncclSuccess);
      for (int r = 0; r < kRanks; ++r) ASSERT_EQ(ncclCommResume(set.comm(r)), ncclSuccess) << ncclText(ncclInternalError);
    }
    ASSERT_EQ(allReduceAll(set, bufs, k, kCount), ncclSuccess) << ncclText(ncclInternalError);
    ASSERT_EQ(set.waitAll(kLimit), "") << "collective " << k;
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(checkSums(bufs[r], kRanks, r, k, kCount), "");
  }
}

// Fault 4, the abort side: a revoke raises the abort flag only for a moment (quiesce: 1, release
// the connections, 0). A kernel waiting for a peer that never comes must still stop before the
// connections it spins on are freed, and the revoke must return.
TEST_F(GpuReadiness, RevokeStopsAKernelWaitingForItsPeer) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 1031;
  CommSet set(kRanks);
  ASSERT_EQ(set.initResult(), ncclSuccess) << ncclText(set.initResult());
  std::vector<Buffers> bufs(kRanks);
  for (int r = 0; r < kRanks; ++r)
    for (int k = 0; k < 2; ++k) ASSERT_EQ(upload(bufs[r], r, k, kCount), "");
  // Connected and working first.
  ASSERT_EQ(allReduceAll(set, bufs, 0, kCount), ncclSuccess) << ncclText(ncclInternalError);
  ASSERT_EQ(set.waitAll(kLimit), "");
  // Rank 0 alone: its kernel waits for rank 1's data.
  ASSERT_EQ(ncclAllReduce(bufs[0].in[1], bufs[0].out[1], kCount, ncclFloat32, ncclSum, set.comm(0), set.stream(0)),
            ncclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(cudaStreamQuery(set.stream(0)), cudaErrorNotReady) << "the lone rank's kernel cannot have finished";
  const auto t0 = Clock::now();
  ASSERT_EQ(ncclCommRevoke(set.comm(0), NCCL_REVOKE_DEFAULT), ncclSuccess) << ncclText(ncclInternalError);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10)) << "the revoke waited for the kernel to end by itself";
  // The kernel has ended (stopped by the revoke), before any connection was freed under it.
  EXPECT_EQ(waitStream(set.stream(0), Clock::now() + std::chrono::seconds(5)), "");
  ncclResult_t async = ncclSuccess;
  ASSERT_EQ(ncclCommGetAsyncError(set.comm(0), &async), ncclSuccess);
  EXPECT_NE(async, ncclSuccess) << "the stopped collective must report an error";
  ASSERT_EQ(ncclCommAbort(set.comm(0)), ncclSuccess);
  set.forget(0);
}

// Fault 5: two ranks of one communicator sharing a GPU and one stream would deadlock (the second
// kernel queues behind the first, which waits for it): refused with a message, nothing launched,
// and the communicators still work on their own streams afterwards.
TEST_F(GpuReadiness, TwoRanksOnOneStreamAreRefused) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 1031;
  CommSet set(kRanks);
  ASSERT_EQ(set.initResult(), ncclSuccess) << ncclText(set.initResult());
  std::vector<Buffers> bufs(kRanks);
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(upload(bufs[r], r, 0, kCount), "");
  EXPECT_EQ(allReduceAll(set, bufs, 0, kCount, [&set](int) { return set.stream(0); }), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("on the same stream"), std::string::npos)
      << ncclGetLastError(nullptr);
  ASSERT_EQ(allReduceAll(set, bufs, 0, kCount), ncclSuccess) << ncclText(ncclInternalError);
  ASSERT_EQ(set.waitAll(kLimit), "");
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(checkSums(bufs[r], kRanks, r, 0, kCount), "");
}

// Fault 5, the implicit synchronisation: two ranks as threads of one process on one GPU, two
// communicators. Rank 1's all-reduce on Y runs and waits for rank 0's. Rank 0's thread first
// destroys communicator X (pinned and device memory freed: cudaFreeHost and cudaFree wait for
// every kernel of the process) and only then launches its all-reduce on Y. A free that waits for
// rank 1's kernel deadlocks; past the deadline the test says so, then revokes Y to break it.
TEST_F(GpuReadiness, FreeWhileAPeersKernelWaitsForThisThread) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 4099;
  CommSet x(kRanks), y(kRanks);
  ASSERT_EQ(x.initResult(), ncclSuccess) << ncclText(x.initResult());
  ASSERT_EQ(y.initResult(), ncclSuccess) << ncclText(y.initResult());
  std::vector<Buffers> bufs(kRanks);
  for (int r = 0; r < kRanks; ++r)
    for (int k = 0; k < 3; ++k) ASSERT_EQ(upload(bufs[r], r, k, kCount), "");
  // Both communicators connected (FIFOs, mapped state) and working.
  ASSERT_EQ(allReduceAll(x, bufs, 0, kCount), ncclSuccess) << ncclText(ncclInternalError);
  ASSERT_EQ(x.waitAll(kLimit), "");
  ASSERT_EQ(allReduceAll(y, bufs, 1, kCount), ncclSuccess) << ncclText(ncclInternalError);
  ASSERT_EQ(y.waitAll(kLimit), "");

  // Rank 1 (this thread): its kernel on Y now waits for rank 0's.
  ASSERT_EQ(ncclAllReduce(bufs[1].in[2], bufs[1].out[2], kCount, ncclFloat32, ncclSum, y.comm(1), y.stream(1)),
            ncclSuccess)
      << ncclText(ncclInternalError);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(cudaStreamQuery(y.stream(1)), cudaErrorNotReady) << "rank 1's kernel cannot end without rank 0's";

  // Rank 0's thread: destroy X, then the all-reduce on Y.
  std::atomic<bool> destroyed{false}, done{false};
  ncclResult_t destroyRes = ncclSuccess, launchRes = ncclSuccess;
  ncclComm_t x0 = x.comm(0), x1 = x.comm(1);
  x.forget(0);
  x.forget(1);
  std::thread rank0([&] {
    destroyRes = ncclCommDestroy(x0);
    if (destroyRes == ncclSuccess) destroyRes = ncclCommDestroy(x1);
    destroyed = true;
    launchRes = ncclAllReduce(bufs[0].in[2], bufs[0].out[2], kCount, ncclFloat32, ncclSum, y.comm(0), y.stream(0));
    done = true;
  });
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!done && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!done) {
    ADD_FAILURE() << "rank 0's thread is still " << (destroyed ? "launching" : "in ncclCommDestroy")
                  << " after 30 s: the free waited for rank 1's kernel, which waits for this thread";
    // Break the deadlock without freeing anything more: a revoke stops rank 1's kernel, the free
    // returns, rank 0's kernel follows and is stopped the same way; then both are aborted.
    EXPECT_EQ(ncclCommRevoke(y.comm(1), NCCL_REVOKE_DEFAULT), ncclSuccess) << ncclText(ncclInternalError);
    rank0.join();
    EXPECT_EQ(ncclCommRevoke(y.comm(0), NCCL_REVOKE_DEFAULT), ncclSuccess) << ncclText(ncclInternalError);
    for (int r = 0; r < kRanks; ++r) {
      ncclCommAbort(y.comm(r));
      y.forget(r);
    }
    return;
  }
  rank0.join();
  ASSERT_EQ(destroyRes, ncclSuccess) << ncclText(destroyRes);
  ASSERT_EQ(launchRes, ncclSuccess) << ncclText(launchRes);
  ASSERT_EQ(y.waitAll(kLimit), "");
  for (int r = 0; r < kRanks; ++r)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(checkSums(bufs[r], kRanks, r, k, kCount), "");
}

// Fault 9: a collective on a communicator of device 0 leaves the caller's current device alone.
TEST_F(GpuReadiness, CollectiveLeavesTheCallersDeviceCurrent) {
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) GTEST_SKIP() << "needs two devices";
  CommSet set(1);
  ASSERT_EQ(set.initResult(), ncclSuccess) << ncclText(set.initResult());
  Buffers b;
  ASSERT_EQ(upload(b, 0, 0, 1031), "");
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(ncclAllReduce(b.in[0], b.out[0], 1031, ncclFloat32, ncclSum, set.comm(0), set.stream(0)), ncclSuccess);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 1) << "ncclAllReduce changed the calling thread's current device";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(set.waitAll(kLimit), "");
  EXPECT_EQ(checkSums(b, 1, 0, 0, 1031), "");
}

// Fault 8: channels were capped at 16, where NCCL's rings on an H100 use up to 32. On a GPU with
// room for them, two ranks asked for 24 (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = 24) get 24;
// asked for at least 64 (NCCL accepts up to 64) they get 32, the cap. Every all-reduce is spread
// over all of the communicator's channels (per-call minCTAs = 64, bounded by what the communicator
// has): the COLL lines say how many, and the sums must stay right. The log goes to a file for the
// test, re-read with ncclResetDebugInit.
std::string runOnChannels(int minCh, int maxCh, int want, const std::string& log) {
  const std::string asked =
      "NCCL_MIN_NCHANNELS=" + std::to_string(minCh) + " NCCL_MAX_NCHANNELS=" + std::to_string(maxCh);
  ScopedEnv env;
  env.set("NCCL_MIN_NCHANNELS", std::to_string(minCh));
  env.set("NCCL_MAX_NCHANNELS", std::to_string(maxCh));
  env.set("NCCL_DEBUG", "INFO");
  env.set("NCCL_DEBUG_SUBSYS", "INIT,COLL");
  env.set("NCCL_DEBUG_FILE", log);
  reloadLogSettings();
  constexpr int kRanks = 2;
  constexpr size_t kCount = 32 * 1024 + 7;  // a partial slice on the last channel
  {
    CommSet set(kRanks);
    if (set.initResult() != ncclSuccess) return "init: " + ncclText(set.initResult());
    std::vector<Buffers> bufs(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      const std::string up = upload(bufs[r], r, 0, kCount);
      if (!up.empty()) return up;
    }
    ncclCollConfig_t every = NCCL_COLLCONFIG_INITIALIZER;
    every.minCTAs = 64;
    ncclResult_t res = ncclGroupStart();
    for (int r = 0; r < kRanks && res == ncclSuccess; ++r)
      res = ncclAllReduceConfig(bufs[r].in[0], bufs[r].out[0], kCount, ncclFloat32, ncclSum, set.comm(r),
                                set.stream(r), &every);
    const ncclResult_t end = ncclGroupEnd();
    if (res != ncclSuccess || end != ncclSuccess) return "all-reduce: " + ncclText(res != ncclSuccess ? res : end);
    const std::string waited = set.waitAll(kLimit);
    if (!waited.empty()) return waited;
    for (int r = 0; r < kRanks; ++r) {
      const std::string sums = checkSums(bufs[r], kRanks, r, 0, kCount);
      if (!sums.empty()) return sums;
    }
  }
  reloadLogSettings();  // closes (flushes) the log file
  const std::string channels = " " + std::to_string(want) + " channel(s)";
  const std::string nChannels = " nChannels " + std::to_string(want) + " ";
  int initLines = 0, collLines = 0;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" channel(s), ") != std::string::npos) {
      if (line.find(channels) == std::string::npos) return asked + ": " + line;
      ++initLines;
    }
    if (line.find("NCCL INFO AllReduce: opCount") != std::string::npos) {
      if (line.find(nChannels) == std::string::npos) return asked + ": " + line;
      ++collLines;
    }
  }
  if (initLines != 1 || collLines != kRanks)
    return log + ": " + std::to_string(initLines) + " init and " + std::to_string(collLines) +
           " AllReduce lines, expected 1 and " + std::to_string(kRanks);
  return "";
}

TEST_F(GpuReadiness, MoreThanSixteenChannelsWhenAsked) {
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  if (sms < 64) GTEST_SKIP() << "needs 64 SMs for 2 ranks x 32 channels (ACCL_VGPU_SMS=64 on the virtual GPU)";
  const std::string log = ::testing::TempDir() + "accl_fault8_" + std::to_string(getpid()) + ".log";
  EXPECT_EQ(runOnChannels(24, 24, 24, log), "");
  EXPECT_EQ(runOnChannels(64, 0, 32, log), "");  // NCCL_MAX_NCHANNELS=0: no bound
  reloadLogSettings();  // back to the environment's own log settings
  std::remove(log.c_str());
}

}  // namespace
}  // namespace accl::gputest
