// CudaBackend: the CommBackend (core/engine/backend.h) that runs plans as CUDA kernels. CUDA builds only.
//
// launch(plan): the plan is packed into one kernel launch (work_batch.h, kernel_args.h) and
// enqueued on the group's first stream; the group's other streams are joined with events before
// (the kernel waits for their earlier work) and after (their later work waits for the kernel).
// Nothing waits on the host: launch returns once the kernel is enqueued. A completion event
// follows each launch; query() and wait() reap completed launches, returning their plans (and
// spill buffers) to the pools.
//
// Device-visible state, in one block of pinned host memory mapped into the device (written by
// the host with plain stores, so no CUDA call is needed while a stream is being captured): the
// abort flag every spin loop of the Prims polls, the error word kernels set (asyncError), the
// DevComm, the DevChannel tables and the PrimsConn ends of the connections (whose step counters
// the kernels keep across launches). A watcher thread mirrors ncclComm::abortFlag (ncclCommAbort,
// a peer failure) into the device flag within ~1 ms, so an abort unblocks a running kernel;
// releaseConnections holds it raised while it stops running kernels before the FIFOs go.
//
// CUDA graphs: launching on a capturing stream works — no host synchronisation and no event
// query inside the capture; the captured launch's plan returns to the pool at once (the
// arguments are copied into the kernel node) and a spill buffer is kept until the backend is
// destroyed (a graph may replay it any time before); such a communicator also holds back every
// release of accl memory in the process until it is destroyed (device/cuda/deferred_free.h:
// frees that synchronise the device wait until no accl kernel may run). The host backend has no
// proxy; a network proxy (issue 11) would have to follow the kernel's tail/head counters rather
// than host-side launch records, so that replays of a graph drive it exactly like direct launches.
//
// Channels: the residency rule. Blocks of ranks sharing one GPU spin on each other's flags, so
// all of them must be resident at once: channels per rank <= SMs x blocksPerSm / ranksOnDevice
// (blocksPerSm from the occupancy API at kKernelThreads), then NCCL_MIN/MAX_NCHANNELS, the
// config's CTA bounds and kMaxChannels as on the host backend.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "backend/cuda/kernel_args.h"
#include "backend/cuda/work_batch.h"
#include "core/engine/backend.h"

namespace accl {

struct PrimsConn;

class CudaBackend final : public CommBackend {
 public:
  explicit CudaBackend(EngineView view);
  ~CudaBackend() override;

  const char* name() const override { return "cuda"; }
  int channelCount(const CommFacts& facts) const override;
  FifoLayout fifoLayout() const override;
  ncclResult_t start() override;
  void attachHealth(std::shared_ptr<const CommHealth> health, const uint64_t* opCount, int rank) override;
  size_t chunkElems(ProtoId proto, size_t elemSize) const override;
  bool launchBlocks() const override { return false; }
  std::unique_ptr<CostModel> costModel(TunerTopo* topo, int nChannels, int cpus) const override;
  ncclResult_t publishConnections(int channel, const ChannelLinks& links) override;
  int beginPrepare() override;
  void endPrepare(int saved) override;
  ncclResult_t launch(std::unique_ptr<Plan> plan) override;
  ncclResult_t query() override;
  ncclResult_t wait() override;
  ncclResult_t asyncError() override;
  ncclResult_t peerFailureOr(const char* what, ncclResult_t res) const override;
  uint64_t objectBytes() const override { return sizeof(CudaBackend) + mappedBytes_; }
  uint64_t scratchBytes() const override { return scratchBytes_.load(std::memory_order_relaxed); }
  void releaseScratch() override;
  void releaseConnections(bool stopRunning) override;

 private:
  // Pinned, device-mapped host memory: host pointer + the device's address for it.
  struct Mapped {
    void* host = nullptr;
    void* dev = nullptr;
    size_t bytes = 0;
  };
  struct InFlight {
    cudaEvent_t done = nullptr;
    std::unique_ptr<Plan> plan;
    Mapped spill;
  };

  ncclResult_t allocMapped(size_t bytes, Mapped* out);
  void freeMapped(Mapped& m);
  // The device end of a connection of `channel` (created once; its step lives on).
  ncclResult_t deviceConn(int channel, int peer, bool isSend, PrimsConn** out);
  ncclResult_t publishChannel(int channel);
  ncclResult_t spillBuffer(size_t bytes, bool captured, Mapped* out);
  // Reaps completed launches; ncclInProgress while some run.
  ncclResult_t reap();
  // Marks `stream`'s position as the end of this communicator's latest launch.
  ncclResult_t recordLaunch(cudaStream_t stream);
  void watchAbort();
  // Device abort flag := ncclComm::abortFlag raised, or stopping_.
  void mirrorAbort();
  template <class T>
  T* hostOf(T* dev) const;

  EngineView view_;
  int device_ = 0;
  FifoLayout layout_{};
  std::shared_ptr<const CommHealth> health_;

  // Device-visible state (see the header comment): one mapped block, carved at start().
  Mapped state_;
  uint32_t* abortFlag_ = nullptr;   // host view
  uint32_t* errorWord_ = nullptr;
  uint32_t* errorDetail_ = nullptr;
  DevComm* devComm_ = nullptr;      // device address
  DevChannel* channels_ = nullptr;  // host view of the kArgMaxChannels tables
  int* ringRanks_ = nullptr;        // host view: kArgMaxChannels x nranks
  PrimsConn** p2pSlots_ = nullptr;  // host view: kArgMaxChannels x 2 x nranks
  std::vector<Mapped> connBlocks_;  // PrimsConn storage, grown in blocks of kConnBlock
  size_t connsUsed_ = 0;            // PrimsConns handed out (from the first block on)
  std::map<std::tuple<int, int, bool>, PrimsConn*> conns_;  // (channel, peer, isSend) -> device end (device address)
  uint64_t mappedBytes_ = 0;

  std::mutex mutex_;  // launches in flight, pools, sticky error
  std::deque<InFlight> inFlight_;
  std::vector<cudaEvent_t> freeEvents_;
  std::vector<Mapped> freeSpills_;
  std::vector<Mapped> capturedSpills_;
  cudaEvent_t joinEvent_ = nullptr;
  // The end of the latest launch (not captured) and its stream: the next launch waits for it.
  cudaEvent_t lastLaunch_ = nullptr;
  cudaStream_t lastLaunchStream_ = nullptr;
  bool lastLaunchRecorded_ = false;
  ncclResult_t stickyError_ = ncclSuccess;
  uint64_t launches_ = 0;
  std::atomic<uint64_t> scratchBytes_{0};
  bool graphHold_ = false;  // a launch was captured: cuda::holdForGraphs until destruction

  std::atomic<bool> stopping_{false};  // releaseConnections(stopRunning) holds the device flag raised
  std::atomic<bool> stopWatcher_{false};
  std::thread watcher_;
};

}  // namespace accl
