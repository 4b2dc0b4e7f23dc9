// CudaBackend: the CommBackend (core/engine/backend.h) that runs plans as CUDA kernels. CUDA builds only.
//
// launch(plan): the plan is packed into one kernel launch (work_batch.h, kernel_args.h) and
// enqueued on the group's first stream; the group's other streams are joined with events before
// (the kernel waits for their earlier work) and after (their later work waits for the kernel).
// Nothing waits on the host: launch returns once the kernel is enqueued. A completion event
// follows each launch; query() and wait() reap completed launches, returning their plans (and
// spill buffers) to the pools.
//
// Device-visible state. The abort flag every spin loop of the Prims polls and the error word
// kernels set (asyncError) sit in one small block of pinned host memory mapped into the device,
// which the host reads and writes with plain stores. What the kernels read on every work item and
// every step -- the DevComm, the DevChannel tables and the PrimsConn ends of the connections (whose
// step counters the kernels keep across launches) -- lives in device memory (issue 18 fault 8:
// from mapped host memory each such read was a PCIe round trip). The host builds these tables in
// host copies and copies what changed to the device (flushTables: new connections, a channel's
// new peers) on a private stream before the launch that needs them, never on the user's stream,
// so a capture on the user's stream sees no extra node. The kernels' step write-backs exist only
// on the device: the host never copies a PrimsConn it has flushed again. A watcher thread mirrors
// ncclComm::abortFlag (ncclCommAbort, a peer failure) into the device flag within ~1 ms, so an
// abort unblocks a running kernel; releaseConnections holds it raised while it stops running
// kernels before the FIFOs go.
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
// config's CTA bounds and kMaxChannels (32; the host backend stops at 16).
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
#include "backend/cuda/proxy_op_events.h"
#include "backend/cuda/work_batch.h"
#include "core/engine/backend.h"
#include "device/cuda/cuda_memory.h"
#include "device/cuda/prims_conn.h"

namespace accl {

class CudaBackend final : public CommBackend {
 public:
  explicit CudaBackend(EngineView view);
  ~CudaBackend() override;

  const char* name() const override { return "cuda"; }
  int channelCount(const CommFacts& facts) const override;
  FifoLayout fifoLayout() const override;
  ncclResult_t start() override;
  void attachHealth(std::shared_ptr<const CommHealth> health, const uint64_t* opCount, int rank) override;
  size_t chunkElems(ProtoId proto, size_t elemSize, size_t rankBytes) const override;
  bool launchBlocks() const override { return false; }
  std::unique_ptr<CostModel> costModel(TunerTopo* topo, int nChannels, int cpus) const override;
  ncclResult_t publishConnections(int channel, const ChannelLinks& links) override;
  int beginPrepare() override;
  void endPrepare(int saved) override;
  ncclResult_t launch(std::unique_ptr<Plan> plan) override;
  ncclResult_t query() override;
  ncclResult_t wait() override;
  ncclResult_t asyncError() override;
  bool streamCapturing(cudaStream_t stream) const override;
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
  // Device memory for kernel-read tables and its host copy (see the header comment).
  struct ConnBlock {
    cuda::DeviceMemory mem;
    std::vector<PrimsConn> host;  // capacity = what the allocation holds
    size_t used = 0;              // PrimsConns handed out
    size_t flushed = 0;           // of those, copied to the device
  };
  struct InFlight {
    cudaEvent_t done = nullptr;
    std::unique_ptr<Plan> plan;
    Mapped spill;
    Mapped itemTimes;  // the kernel's item timestamps (kernel_ch_events.h), when a profiler wants them
  };

  ncclResult_t allocMapped(size_t bytes, Mapped* out);
  void freeMapped(Mapped& m);
  // Turns an ended launch's item stamps into KernelCh events (kernel_ch_events.h), if it has them.
  void emitKernelCh(const InFlight& f);
  // The device end of a connection of `channel` (created once; its step lives on).
  ncclResult_t deviceConn(int channel, int peer, bool isSend, PrimsConn** out);
  ncclResult_t publishChannel(int channel);
  // Copies to the device what the host changed in the tables and connection blocks since the
  // last flush (synchronously, on a private stream).
  ncclResult_t flushTables();
  ncclResult_t spillBuffer(size_t bytes, bool captured, Mapped* out);
  // Reaps completed launches; ncclInProgress while some run.
  ncclResult_t reap();
  // Marks `stream`'s position as the end of this communicator's latest launch.
  ncclResult_t recordLaunch(cudaStream_t stream);
  void watchAbort();
  // Device abort flag := ncclComm::abortFlag raised, or stopping_.
  void mirrorAbort();

  EngineView view_;
  int device_ = 0;
  FifoLayout layout_{};
  std::shared_ptr<const CommHealth> health_;

  // Device-visible state (see the header comment), carved at start().
  Mapped flags_;                    // mapped host memory: abort flag, error word, error detail
  uint32_t* abortFlag_ = nullptr;   // host view
  uint32_t* errorWord_ = nullptr;
  uint32_t* errorDetail_ = nullptr;
  cuda::DeviceMemory tables_;       // device: [DevComm][DevChannel x kArgMaxChannels][ring ranks][p2p slots]
  std::vector<char> tablesHost_;    // the host's copy, same layout
  DevComm* devComm_ = nullptr;      // device address
  DevChannel* channels_ = nullptr;  // host copy of the kArgMaxChannels tables
  int* ringRanks_ = nullptr;        // host copy: kArgMaxChannels x nranks
  PrimsConn** p2pSlots_ = nullptr;  // host copy: kArgMaxChannels x 2 x nranks
  bool tablesDirty_ = false;        // the host copy changed since the last flush
  std::vector<ConnBlock> connBlocks_;  // PrimsConn storage, grown in blocks
  size_t connBlockUsed_ = 0;        // the block new connections come from
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
  CudaProxyOps proxyOps_;   // ProxyOp events on network ends (profiler only)

  std::atomic<bool> stopping_{false};  // releaseConnections(stopRunning) holds the device flag raised
  std::atomic<bool> stopWatcher_{false};
  std::thread watcher_;
};

}  // namespace accl
