// The virtual GPU's streams, events, capture, graphs and launch checks against what the CUDA
// runtime documents: work on one stream runs in order, the legacy stream waits for blocking
// streams and not for non-blocking ones, events order streams and time them, a call CUDA forbids
// during a global-mode capture fails and invalidates the capture, a captured graph replays what
// was captured, in order, and a kernel without a CPU build fails to launch with the real error.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "foreign_kernel.h"

namespace {

// A host function that appends its tag to a log (the order work ran in).
struct Log {
  std::mutex mu;
  std::vector<int> order;
};
struct Tag {
  Log* log;
  int value;
  int sleepMs;
};
void record(void* p) {
  auto* t = static_cast<Tag*>(p);
  if (t->sleepMs) std::this_thread::sleep_for(std::chrono::milliseconds(t->sleepMs));
  std::lock_guard<std::mutex> lock(t->log->mu);
  t->log->order.push_back(t->value);
}

TEST(VgpuStreams, WorkOnOneStreamRunsInOrder) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Log log;
  std::vector<Tag> tags;
  for (int i = 0; i < 20; ++i) tags.push_back(Tag{&log, i, i % 3});
  for (auto& t : tags) ASSERT_EQ(cudaLaunchHostFunc(s, record, &t), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(log.order.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(log.order[i], i);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(VgpuStreams, LegacyStreamWaitsForBlockingStreamsOnly) {
  cudaStream_t blocking, nonBlocking;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&nonBlocking, cudaStreamNonBlocking), cudaSuccess);
  Log log;
  Tag slowBlocking{&log, 1, 200}, slowNonBlocking{&log, 2, 400}, legacy{&log, 3, 0};
  ASSERT_EQ(cudaLaunchHostFunc(blocking, record, &slowBlocking), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(nonBlocking, record, &slowNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(cudaStreamLegacy, record, &legacy), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // The legacy stream's work ran after the blocking stream's and before the slower non-blocking one.
  ASSERT_EQ(log.order, (std::vector<int>{1, 3, 2}));
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonBlocking);
}

TEST(VgpuEvents, WaitEventOrdersStreamsAndQueryReportsProgress) {
  cudaStream_t a, b;
  cudaEvent_t e;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);  // never recorded: complete
  Log log;
  Tag first{&log, 1, 300}, second{&log, 2, 0};
  ASSERT_EQ(cudaLaunchHostFunc(a, record, &first), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, a), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // not-ready is not an error CUDA records
  ASSERT_EQ(cudaStreamWaitEvent(b, e, 0), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(b, record, &second), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  ASSERT_EQ(log.order, (std::vector<int>{1, 2}));
  cudaEventDestroy(e);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

TEST(VgpuEvents, ElapsedTimeCoversTheWorkBetween) {
  cudaStream_t s;
  cudaEvent_t start, stop;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  Log log;
  Tag sleep{&log, 1, 50};
  ASSERT_EQ(cudaEventRecord(start, s), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, record, &sleep), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(stop, s), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_GE(ms, 45.f);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(s);
}

TEST(VgpuCapture, GraphReplaysCapturedWorkInOrderThreeTimes) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 64 * sizeof(int)), cudaSuccess);
  std::vector<int> host(64, 7), back(64, 0);
  Log log;
  Tag a{&log, 1, 0}, b{&log, 2, 0};
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  ASSERT_EQ(cudaLaunchHostFunc(s, record, &a), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dev, host.data(), 64 * sizeof(int), cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, record, &b), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  EXPECT_TRUE(log.order.empty());  // captured, not run
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(log.order, (std::vector<int>{1, 2, 1, 2, 1, 2}));
  ASSERT_EQ(cudaMemcpy(back.data(), dev, 64 * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(dev);
  cudaStreamDestroy(s);
}

TEST(VgpuCapture, ForbiddenCallInvalidatesAGlobalCapture) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  // Another thread in the default (global) mode allocates: forbidden, and the capture is lost.
  cudaError_t fromOther = cudaSuccess;
  std::thread([&] {
    void* p = nullptr;
    fromOther = cudaMalloc(&p, 256);
  }).join();
  EXPECT_EQ(fromOther, cudaErrorStreamCaptureUnsupported);
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(graph, nullptr);
  cudaGetLastError();
  cudaStreamDestroy(s);
}

TEST(VgpuCapture, RelaxedThreadMayAllocateDuringACapture) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 256), cudaSuccess);
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  cudaFree(p);
  cudaStreamDestroy(s);
}

TEST(VgpuCapture, LegacyStreamCannotBeCapturedNorSynchronizedIntoOne) {
  EXPECT_EQ(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);  // blocking
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();
  cudaStreamDestroy(s);
}

TEST(VgpuKernels, KernelWithoutACpuBuildFailsToLaunch) {
  int* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 32 * sizeof(int)), cudaSuccess);
  EXPECT_EQ(launchForeignKernel(dev, nullptr), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // launchForeignKernel read it already
  cudaFree(dev);
}

TEST(VgpuRefusals, UnimplementedCallIsRefusedNotFaked) {
  void* p = nullptr;
  EXPECT_EQ(cudaMallocManaged(&p, 256, cudaMemAttachGlobal), cudaErrorNotSupported);
  cudaArray_t array = nullptr;
  cudaChannelFormatDesc desc{};
  EXPECT_EQ(cudaMallocArray(&array, &desc, 16, 16, 0), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
}

TEST(VgpuDevices, CountNamesAndAttributesLookLikeAnH100) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_GE(n, 1);
  int major = 0, sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_EQ(major, 9);
  EXPECT_GE(sms, 1);
  char bus[32];
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 0), cudaSuccess);
  int back = -1;
  ASSERT_EQ(cudaDeviceGetByPCIBusId(&back, bus), cudaSuccess);
  EXPECT_EQ(back, 0);
  EXPECT_EQ(cudaSetDevice(n), cudaErrorInvalidDevice);
  cudaGetLastError();
}

}  // namespace
