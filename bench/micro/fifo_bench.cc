// Micro benchmark: one FIFO step's round trip on the host backend — a ping HostPrims sends one
// small step to an echo HostPrims, which receives it and sends it straight back — between two
// threads of this process and between two processes (fork, FIFO memory shared), for the Simple
// and LL protocols (device/common/fifo.h). One iteration = one round trip = two FIFO steps, each
// a publish, a wake-up check and a release.
//   accl-micro-fifo --benchmark_filter=threads --benchmark_format=json
//
// The connections are built here, without a communicator or transport: LoopbackConn below owns
// the two memories of one connection (fifo.h: the receiver's slots and tail, the sender's head).
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "device/common/fifo.h"
#include "backend/host/host_prims.h"
#include "backend/host/host_wait.h"

namespace accl {
namespace {

constexpr size_t kPayloadBytes = 8;  // one small message: 8 int8 elements (LL: two words)
constexpr char kStopMark = 0x5a;     // first byte of the ping's last message: the echo end stops after it

// Memory shared by both ends, and by a forked child: MAP_SHARED, zero-filled.
void* sharedZeroed(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// One connection: the receiver's memory (tail, slots) and the sender's (head), and each end's view.
struct LoopbackConn {
  LoopbackConn() {
    layout.simpleSlotBytes = 64 << 10;
    layout.llSlotWords = 4096;
    recvBytes = layout.recvBytes();
    sendBytes = FifoLayout::sendBytes();
    recvMem = sharedZeroed(recvBytes);
    sendMem = sharedZeroed(sendBytes);
    sender = makeFifoView(recvMem, sendMem, layout);
    receiver = makeFifoView(recvMem, sendMem, layout);
  }
  ~LoopbackConn() {
    if (recvMem) munmap(recvMem, recvBytes);
    if (sendMem) munmap(sendMem, sendBytes);
  }
  bool ok() const { return recvMem && sendMem; }
  FifoLayout layout{};
  size_t recvBytes = 0, sendBytes = 0;
  void* recvMem = nullptr;
  void* sendMem = nullptr;
  FifoView sender, receiver;
};

// Both directions, in shared memory.
struct PingPong {
  LoopbackConn there, back;  // ping -> echo, echo -> ping
  bool ok() const { return there.ok() && back.ok(); }
};

WaitPolicy benchPolicy(const std::atomic<int>* abortFlag) {
  WaitPolicy p = hostWaitPolicy(abortFlag, /*threadsOnNode=*/2);
  p.timeoutMs = 20000;  // a lost step fails the benchmark instead of hanging it
  p.logIntervalMs = 0;
  return p;
}

HostPrimsArgs primsArgs(FifoView* recvView, FifoView* sendView, int peerPid, char* buffer, ProtoId proto,
                        const WaitPolicy* wait) {
  HostPrimsArgs a;
  a.recv[0] = HostConnEnd{recvView, 1, peerPid};
  a.nRecv = 1;
  a.send[0] = HostConnEnd{sendView, 1, peerPid};
  a.nSend = 1;
  a.input = buffer;
  a.output = buffer;
  a.inputIsContribution = false;
  a.type = ncclInt8;
  a.proto = proto;
  a.wait = wait;
  a.what = "fifo round-trip benchmark";
  return a;
}

// The echo end: receive a step and send it back, until (and including) the step that carries
// kStopMark. Returns the echo Prims' status.
ncclResult_t echoLoop(PingPong& pp, int peerPid, ProtoId proto) {
  std::atomic<int> abortFlag{0};
  WaitPolicy policy = benchPolicy(&abortFlag);
  char buffer[kPayloadBytes] = {};
  HostPrims echo(primsArgs(&pp.there.receiver, &pp.back.sender, peerPid, buffer, proto, &policy));
  for (;;) {
    echo.recvCopySend(0, kPayloadBytes);
    if (echo.status() != ncclSuccess || buffer[0] == kStopMark) break;
  }
  return echo.status();
}

// The ping end's timed loop, then the last round trip, which tells the echo end to stop.
void pingLoop(benchmark::State& state, PingPong& pp, int peerPid, ProtoId proto) {
  std::atomic<int> abortFlag{0};
  WaitPolicy policy = benchPolicy(&abortFlag);
  char buffer[kPayloadBytes] = {1, 2, 3, 4, 5, 6, 7, 8};
  HostPrims ping(primsArgs(&pp.back.receiver, &pp.there.sender, peerPid, buffer, proto, &policy));
  for (auto _ : state) {
    ping.send(0, kPayloadBytes);
    ping.recv(0, kPayloadBytes);
    if (ping.status() != ncclSuccess) {
      state.SkipWithError("FIFO step failed (see the library's last error)");
      break;
    }
  }
  buffer[0] = kStopMark;
  ping.send(0, kPayloadBytes);
  ping.recv(0, kPayloadBytes);
  if (ping.status() != ncclSuccess && !state.error_occurred()) state.SkipWithError("the last FIFO step failed");
}

void BM_RoundTripThreads(benchmark::State& state, ProtoId proto) {
  PingPong pp;
  if (!pp.ok()) {
    state.SkipWithError("mmap failed");
    return;
  }
  ncclResult_t echoStatus = ncclSuccess;
  std::thread echo([&] { echoStatus = echoLoop(pp, 0, proto); });
  pingLoop(state, pp, 0, proto);
  echo.join();
  if (echoStatus != ncclSuccess) state.SkipWithError("echo thread failed");
}

void BM_RoundTripProcesses(benchmark::State& state, ProtoId proto) {
  PingPong pp;
  if (!pp.ok()) {
    state.SkipWithError("mmap failed");
    return;
  }
  const pid_t parent = getpid();
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    state.SkipWithError("fork failed");
    return;
  }
  if (child == 0) _exit(echoLoop(pp, parent, proto) == ncclSuccess ? 0 : 1);
  pingLoop(state, pp, child, proto);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) state.SkipWithError("echo process failed");
}

void registerAll() {
  benchmark::RegisterBenchmark("fifo_round_trip/threads/Simple", BM_RoundTripThreads, kProtoSimple)->UseRealTime();
  benchmark::RegisterBenchmark("fifo_round_trip/threads/LL", BM_RoundTripThreads, kProtoLL)->UseRealTime();
  benchmark::RegisterBenchmark("fifo_round_trip/processes/Simple", BM_RoundTripProcesses, kProtoSimple)
      ->UseRealTime();
  benchmark::RegisterBenchmark("fifo_round_trip/processes/LL", BM_RoundTripProcesses, kProtoLL)->UseRealTime();
}

}  // namespace
}  // namespace accl

int main(int argc, char** argv) {
  accl::registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
