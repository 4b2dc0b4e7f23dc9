// CudaBackend: set-up, chunk sizing, connect, launch on streams, completion, errors, abort
// (see cuda_backend.h).
#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "backend/cuda/kernel_ch_events.h"
#include "backend/cuda/kernel_launch.h"
#include "core/liveness/peer_failure.h"
#include "device/cuda/cuda_memory.h"
#include "device/cuda/deferred_free.h"
#include "device/cuda/prims_conn.h"
#include "tuner/gpu_model.h"
#include "tuner/host_model.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {
namespace {

static_assert(kMaxChannels <= kArgMaxChannels, "the kernel arguments must describe every channel");

ncclResult_t cudaFail(const char* what, cudaError_t err) {
  return fail(ncclUnhandledCudaError, "CUDA backend: %s failed: %s (%s)", what, cudaGetErrorString(err),
              cudaGetErrorName(err));
}
#define ACCL_CUDA_CHECK(call)                                  \
  do {                                                         \
    cudaError_t accl_cuda_err_ = (call);                       \
    if (accl_cuda_err_ != cudaSuccess) return cudaFail(#call, accl_cuda_err_); \
  } while (0)

constexpr size_t kFlagsBytes = 64;   // abort flag, error word, error detail (one cache line)
constexpr size_t kConnBlock = 1024;  // PrimsConns per block of connection storage

size_t alignUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

CudaBackend::CudaBackend(EngineView view) : view_(view) {}

CudaBackend::~CudaBackend() {
  // Launches still in flight: a destroy waits for them, an abort has raised the flag, which the
  // watcher (or this line) copies to the device so they end promptly.
  stopWatcher_ = true;
  if (watcher_.joinable()) watcher_.join();
  if (abortFlag_ && view_.facts().abortFlag->load(std::memory_order_acquire))
    *reinterpret_cast<volatile uint32_t*>(abortFlag_) = 1;
  cudaSetDevice(device_);
  for (InFlight& f : inFlight_) {
    cudaEventSynchronize(f.done);
    cuda::launchReaped(f.done);
    cudaEventDestroy(f.done);
    freeMapped(f.spill);
    // The communicator's profiler outlives its backend (CommEngine), so the launch's KernelCh
    // events still go out; an aborted item has no end time (kernel_ch_events.h).
    emitKernelCh(f);
    freeMapped(f.itemTimes);
    view_.recycle(std::move(f.plan));
  }
  inFlight_.clear();
  for (cudaEvent_t e : freeEvents_) cudaEventDestroy(e);
  if (joinEvent_) cudaEventDestroy(joinEvent_);
  if (lastLaunch_) cudaEventDestroy(lastLaunch_);
  // A graph of this communicator replayed from now on would use freed memory: the user's error,
  // as with NCCL. Its hold ends here, so the releases below may run at once.
  if (graphHold_) cuda::dropGraphHold();
  for (Mapped& m : freeSpills_) freeMapped(m);
  for (Mapped& m : capturedSpills_) freeMapped(m);
  for (ConnBlock& b : connBlocks_) cuda::deviceFree(&b.mem);
  cuda::deviceFree(&tables_);
  freeMapped(flags_);
}

int CudaBackend::channelCount(const CommFacts& facts) const {
  // Residency: every block of every rank on a GPU must be resident together. Every rank divides by
  // the busiest GPU's rank count (known to all), so that all ranks agree on the count — ranks
  // spread unevenly over GPUs would otherwise build different channels and wait for each other.
  int sms = 1, perSm = 1, current = 0;
  cudaGetDevice(&current);
  cudaSetDevice(facts.cudaDev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, facts.cudaDev);
  if (acclKernelBlocksPerSm(&perSm) != cudaSuccess || perSm < 1) perSm = 1;
  cudaSetDevice(current);
  const int cap = std::max(1, sms * perSm / facts.ranksOnBusiestDevice);
  int n = std::min(cap, kMaxChannels);  // the tuner picks how many a collective uses
  const int64_t minCh = paramInt("NCCL_MIN_NCHANNELS");
  const int64_t maxCh = paramInt("NCCL_MAX_NCHANNELS");
  if (minCh > n) n = static_cast<int>(minCh);
  if (facts.minCTAs > n) n = facts.minCTAs;
  if (maxCh > 0 && n > maxCh) n = static_cast<int>(maxCh);
  if (n > facts.maxCTAs) n = facts.maxCTAs;
  n = std::min({n, cap, kMaxChannels});
  return std::max(n, 1);
}

FifoLayout CudaBackend::fifoLayout() const {
  // NCCL's GPU defaults: 4 MiB of Simple slots, 512 KiB of LL lines and 4800 KiB of LL128 lines
  // per connection.
  int64_t buff = paramInt("NCCL_BUFFSIZE");
  int64_t ll = paramInt("NCCL_LL_BUFFSIZE");
  if (buff <= 0) buff = 4 << 20;
  if (ll <= 0) ll = 512 << 10;
  FifoLayout layout;
  layout.simpleSlotBytes = std::max<size_t>(size_t(buff) / kFifoSteps / 128 * 128, 128);
  layout.llSlotWords = std::max<size_t>(size_t(ll) / kFifoSteps / sizeof(LLWord) / 2 * 2, 8);
  layout.ll128SlotLines = ll128SlotLinesFor(paramInt("NCCL_LL128_BUFFSIZE"));  // <= 0: NCCL's 4800 KiB
  return layout;
}

ncclResult_t CudaBackend::allocMapped(size_t bytes, Mapped* out) {
  void* host = nullptr;
  ACCL_CUDA_CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  void* dev = nullptr;
  cudaError_t err = cudaHostGetDevicePointer(&dev, host, 0);
  if (err != cudaSuccess) {
    Mapped m{host, nullptr, bytes};
    freeMapped(m);
    return cudaFail("cudaHostGetDevicePointer", err);
  }
  memset(host, 0, bytes);
  *out = Mapped{host, dev, bytes};
  return ncclSuccess;
}

void CudaBackend::freeMapped(Mapped& m) {
  // cudaFreeHost waits for every kernel of the process: not while accl kernels may run
  // (device/cuda/deferred_free.h).
  if (m.host) {
    void* host = m.host;
    cuda::releaseWhenIdle("the CUDA backend's mapped host memory", m.bytes, [host] {
      if (cudaFreeHost(host) != cudaSuccess) cudaGetLastError();
    });
  }
  m = Mapped{};
}

ncclResult_t CudaBackend::start() {
  const CommFacts& facts = view_.facts();
  device_ = facts.cudaDev;
  layout_ = view_.layout();
  if (acclKernelArchitectures()[0] == '\0')
    return fail(ncclInvalidUsage,
                "comm %p rank %d: this libnccl.so.2 has no GPU kernels (built with ACCL_CUDA_ARCHITECTURES=auto on a "
                "machine without a GPU, or none): rebuild it with -DACCL_CUDA_ARCHITECTURES=auto on this machine "
                "or with this GPU's architecture (90 for H100/H200), or run on the host backend (ACCL_BACKEND=host)",
                facts.comm, facts.rank);
  ACCL_CUDA_CHECK(cudaSetDevice(device_));
  ACCL_CUDA_CHECK(acclInitKernelTable());
  if (facts.processesOnMyDevice > 1) {
    // Without MPS the GPU time-slices between processes: each rank's kernel spins through its
    // slice waiting for the others', so every hand-off costs a context switch (issue 18 fault 5).
    // It works, slowly: every rank on such a device says so once, at init.
    int mps = 0;
    if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, device_) != cudaSuccess) cudaGetLastError();
    if (!mps)
      ACCL_WARN("comm %p rank %d: %d processes share GPU %d without MPS: their kernels take turns in time slices and "
                "every step between them waits for a context switch (slow, not a hang); start the MPS daemon "
                "(nvidia-cuda-mps-control -d) or run these ranks as threads of one process",
                facts.comm, facts.rank, facts.processesOnMyDevice, device_);
  }
  const int n = facts.nRanks;
  ACCL_CHECK(allocMapped(kFlagsBytes, &flags_));
  mappedBytes_ += flags_.bytes;
  char* flags = static_cast<char*>(flags_.host);
  char* flagsDev = static_cast<char*>(flags_.dev);
  abortFlag_ = reinterpret_cast<uint32_t*>(flags);
  errorWord_ = reinterpret_cast<uint32_t*>(flags + 4);
  errorDetail_ = reinterpret_cast<uint32_t*>(flags + 8);
  // Device tables: [DevComm][DevChannel x kArgMaxChannels][ring ranks][p2p slots], built in the
  // host copy and flushed.
  const size_t chanOff = alignUp(sizeof(DevComm), 64);
  const size_t ranksOff = alignUp(chanOff + sizeof(DevChannel) * kArgMaxChannels, 64);
  const size_t slotsOff = alignUp(ranksOff + sizeof(int) * size_t(n) * kArgMaxChannels, 64);
  const size_t total = slotsOff + sizeof(PrimsConn*) * 2 * size_t(n) * kArgMaxChannels;
  ACCL_CHECK(cuda::deviceAlloc(total, device_, /*preferCumem=*/true, &tables_));
  mappedBytes_ += tables_.bytes;
  tablesHost_.assign(total, 0);
  char* h = tablesHost_.data();
  char* d = static_cast<char*>(tables_.ptr);
  channels_ = reinterpret_cast<DevChannel*>(h + chanOff);
  ringRanks_ = reinterpret_cast<int*>(h + ranksOff);
  p2pSlots_ = reinterpret_cast<PrimsConn**>(h + slotsOff);
  DevComm* dc = reinterpret_cast<DevComm*>(h);
  dc->channels = reinterpret_cast<DevChannel*>(d + chanOff);
  dc->abortFlag = reinterpret_cast<const uint32_t*>(flagsDev);
  dc->errorWord = reinterpret_cast<uint32_t*>(flagsDev + 4);
  dc->errorDetail = reinterpret_cast<uint32_t*>(flagsDev + 8);
  dc->rank = facts.rank;
  dc->nRanks = n;
  devComm_ = reinterpret_cast<DevComm*>(d);
  for (int c = 0; c < kArgMaxChannels; ++c) {
    DevChannel& ch = channels_[c];
    ch.nRanks = n;
    ch.ringIndex = facts.rank;
    ch.ringUserRanks = reinterpret_cast<const int*>(d + ranksOff) + size_t(c) * n;
    ch.tree = TreeView{-1, {-1, -1, -1}};
    ch.p2pSend = reinterpret_cast<PrimsConn**>(d + slotsOff) + size_t(c) * 2 * n;
    ch.p2pRecv = ch.p2pSend + n;
    for (int r = 0; r < n; ++r) ringRanks_[size_t(c) * n + r] = r;
  }
  tablesDirty_ = true;
  ACCL_CHECK(flushTables());
  ACCL_CUDA_CHECK(cudaEventCreateWithFlags(&joinEvent_, cudaEventDisableTiming));
  ACCL_CUDA_CHECK(cudaEventCreateWithFlags(&lastLaunch_, cudaEventDisableTiming));
  watcher_ = std::thread([this] { watchAbort(); });
  return ncclSuccess;
}

ncclResult_t CudaBackend::recordLaunch(cudaStream_t stream) {
  ACCL_CUDA_CHECK(cudaEventRecord(lastLaunch_, stream));
  lastLaunchStream_ = stream;
  lastLaunchRecorded_ = true;
  return ncclSuccess;
}

void CudaBackend::mirrorAbort() {
  if (!abortFlag_) return;
  const bool raised = view_.facts().abortFlag->load(std::memory_order_acquire) != 0 ||
                      stopping_.load(std::memory_order_acquire);
  volatile uint32_t* dev = reinterpret_cast<volatile uint32_t*>(abortFlag_);
  if (*dev != uint32_t(raised)) *dev = uint32_t(raised);
}

void CudaBackend::watchAbort() {
  // ncclCommAbort and peer failures raise ncclComm::abortFlag (host memory the device cannot
  // see); the kernels poll the mapped copy. Mirrored both ways for the communicator's life: a
  // revoke raises the flag and lowers it again (releaseConnections holds it raised meanwhile).
  while (!stopWatcher_.load(std::memory_order_acquire)) {
    mirrorAbort();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void CudaBackend::releaseConnections(bool stopRunning) {
  if (!flags_.host || !tables_.ptr) return;  // start() did not get that far
  cuda::DeviceGuard device(device_);
  // Stop or wait for every launch in flight: none may touch the FIFOs once they are freed.
  if (stopRunning) stopping_.store(true, std::memory_order_release);
  mirrorAbort();
  const auto since = std::chrono::steady_clock::now();
  auto warnAt = since + std::chrono::seconds(5);
  while (reap() == ncclInProgress) {
    mirrorAbort();
    if (std::chrono::steady_clock::now() >= warnAt) {
      size_t running;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        running = inFlight_.size();
      }
      ACCL_WARN("CUDA backend: rank %d: %zu launch(es) still running %lld s after the connections were to be released%s",
                view_.facts().rank, running,
                (long long)std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - since).count(),
                stopRunning ? " (the abort flag is raised)" : "; waiting for them (ncclCommAbort stops them)");
      warnAt += std::chrono::seconds(5);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  // Forget every pointer into the connections: the next launch publishes the new ones. (A graph
  // captured before and replayed now finds no connection and reports it: kDevErrNoConnection.)
  conns_.clear();
  const int n = view_.facts().nRanks;
  for (int c = 0; c < kArgMaxChannels; ++c) {
    DevChannel& ch = channels_[c];
    ch.ringRecv = ch.ringSend = ch.treeUpSend = ch.treeUpRecv = nullptr;
    for (int i = 0; i < kMaxTreeChildren; ++i) ch.treeDownRecv[i] = ch.treeDownSend[i] = nullptr;
  }
  memset(p2pSlots_, 0, sizeof(PrimsConn*) * 2 * size_t(n) * kArgMaxChannels);
  tablesDirty_ = true;
  // The device copies go now, not at the next launch: a captured graph may replay before that.
  // (A failure leaves the old tables, whose FIFOs are gone: the next launch's flush retries.)
  for (ConnBlock& b : connBlocks_) {
    if (b.used > 0 && cuda::zeroSync(b.mem.ptr, b.used * sizeof(PrimsConn)) != ncclSuccess)
      ACCL_WARN("CUDA backend: rank %d: clearing released connections on the device failed", view_.facts().rank);
    std::fill(b.host.begin(), b.host.begin() + b.used, PrimsConn{});
    b.used = b.flushed = 0;  // the blocks stay, for the next connections
  }
  connBlockUsed_ = 0;
  if (flushTables() != ncclSuccess)
    ACCL_WARN("CUDA backend: rank %d: clearing the channel tables on the device failed", view_.facts().rank);
  stopping_.store(false, std::memory_order_release);
  mirrorAbort();
  cuda::releaseDeferred();  // none of this communicator's launches runs: perhaps none at all
}

void CudaBackend::attachHealth(std::shared_ptr<const CommHealth> health, const uint64_t*, int) {
  health_ = std::move(health);
}

size_t CudaBackend::chunkElems(ProtoId proto, size_t elemSize, size_t /*rankBytes*/) const {
  // Whole slots whatever the item's size (NCCL shrinks a small collective's chunks; not here yet).
  PrimsConn c;
  c.simpleSlotBytes = layout_.simpleSlotBytes;
  c.llSlotWords = layout_.llSlotWords;
  c.ll128SlotLines = layout_.ll128SlotLines;  // the layout's own LL128 slots (fifoLayout)
  return primsChunkCapacity(c, proto, elemSize);
}

ncclResult_t CudaBackend::deviceConn(int channel, int peer, bool isSend, PrimsConn** out) {
  tablesDirty_ = true;  // every caller stores the end in a table
  auto key = std::make_tuple(channel, peer, isSend);
  auto it = conns_.find(key);
  if (it != conns_.end()) {
    *out = it->second;
    return ncclSuccess;
  }
  Connection* conn = view_.connection(channel, peer, isSend);
  if (!conn) return fail(ncclInternalError, "CUDA backend: channel %d has no %s connection with rank %d", channel,
                         isSend ? "send" : "receive", peer);
  while (connBlockUsed_ < connBlocks_.size() && connBlocks_[connBlockUsed_].used == kConnBlock) ++connBlockUsed_;
  if (connBlockUsed_ == connBlocks_.size()) {
    ConnBlock b;
    ACCL_CHECK(cuda::deviceAlloc(sizeof(PrimsConn) * kConnBlock, device_, /*preferCumem=*/true, &b.mem));
    b.host.assign(kConnBlock, PrimsConn{});
    mappedBytes_ += b.mem.bytes;
    connBlocks_.push_back(std::move(b));
  }
  ConnBlock& blk = connBlocks_[connBlockUsed_];
  PrimsConn* host = &blk.host[blk.used];
  PrimsConn* dev = static_cast<PrimsConn*>(blk.mem.ptr) + blk.used;
  ++blk.used;  // copied to the device by the next flushTables
  // The transport's FIFO view; its memory must be device-reachable (the GPU transports'
  // business: device memory, CUDA IPC mappings or registered host memory).
  *host = primsConnFrom(conn->view);
  // Every slot kind on its boundary (issue 18 fault 1: LL128 lines off a 128-byte boundary tear).
  const auto misaligned = [](const void* p, uintptr_t a) { return p && reinterpret_cast<uintptr_t>(p) % a != 0; };
  if (misaligned(host->simple, 16) || misaligned(host->ll, 16) || misaligned(host->ll128, simt::kLL128LineBytes))
    return fail(ncclInternalError, "CUDA backend: channel %d's %s connection with rank %d has misaligned slots "
                "(Simple %p, LL %p, LL128 %p)", channel, isSend ? "send" : "receive", peer,
                static_cast<void*>(host->simple), static_cast<void*>(host->ll), static_cast<void*>(host->ll128));
  if (!host->ll128) {
    // A transport that laid out no LL128 slots: LL128 lines take the Simple slots' bytes, and
    // chunkElems must not exceed them.
    host->ll128 = reinterpret_cast<uint64_t*>(host->simple);
    host->ll128SlotLines = std::min(
        layout_.ll128SlotLines,
        host->simpleSlotBytes / simt::kLL128LineBytes / simt::kLL128LinesPerWarp * simt::kLL128LinesPerWarp);
  }
  conns_.emplace(key, dev);
  *out = dev;
  return ncclSuccess;
}

ncclResult_t CudaBackend::flushTables() {
  // The tables hold no kernel-written field: copying all of them over a running kernel's view
  // rewrites the values it reads with the same values. Connections are copied once, when new:
  // their step counters are the kernels' from then on.
  if (tablesDirty_) {
    ACCL_CHECK(cuda::copySync(tables_.ptr, tablesHost_.data(), tablesHost_.size()));
    tablesDirty_ = false;
  }
  for (ConnBlock& b : connBlocks_) {
    if (b.flushed == b.used) continue;
    ACCL_CHECK(cuda::copySync(static_cast<PrimsConn*>(b.mem.ptr) + b.flushed, &b.host[b.flushed],
                              (b.used - b.flushed) * sizeof(PrimsConn)));
    b.flushed = b.used;
  }
  return ncclSuccess;
}

ncclResult_t CudaBackend::publishChannel(int c) {
  const ChannelPeers& peers = view_.channel(c);
  DevChannel& ch = channels_[c];
  const int n = view_.facts().nRanks;
  if (peers.ringConnected && n > 1 && !ch.ringSend) {
    for (int r = 0; r < n; ++r) ringRanks_[size_t(c) * n + r] = peers.ringRanks[r];  // flushed with the ends
    ch.ringIndex = peers.ringIndex;
    const RingView ring = peers.ringView();
    ACCL_CHECK(deviceConn(c, ring.rankAt(ring.index - 1), false, &ch.ringRecv));
    ACCL_CHECK(deviceConn(c, ring.rankAt(ring.index + 1), true, &ch.ringSend));
  }
  if (peers.treeConnected && !ch.treeUpSend && !ch.treeDownRecv[0]) {
    tablesDirty_ = true;  // also a tree with no peer here (deviceConn marks the rest)
    ch.tree = peers.tree;
    if (peers.tree.up >= 0) {
      ACCL_CHECK(deviceConn(c, peers.tree.up, true, &ch.treeUpSend));
      ACCL_CHECK(deviceConn(c, peers.tree.up, false, &ch.treeUpRecv));
    }
    for (int i = 0; i < kMaxTreeChildren; ++i) {
      if (peers.tree.down[i] < 0) continue;
      ACCL_CHECK(deviceConn(c, peers.tree.down[i], false, &ch.treeDownRecv[i]));
      ACCL_CHECK(deviceConn(c, peers.tree.down[i], true, &ch.treeDownSend[i]));
    }
  }
  return ncclSuccess;
}

std::unique_ptr<CostModel> CudaBackend::costModel(TunerTopo* topo, int nChannels, int cpus) const {
  // A searched GPU topology (createEngineTuner): NCCL's model over its graphs. The tuner's
  // channel counts are then bounded by this communicator's channels at planning time.
  if (!topo->host) return std::make_unique<GpuCostModel>(*topo);
  // No GPU in the topology (discovery failed): the host model, which must not hand out the
  // host-only one-round all-reduce, which has no kernel.
  auto model = hostCostModelFor(topo, nChannels, cpus);
  topo->oneShotRuns = false;
  return model;
}

ncclResult_t CudaBackend::publishConnections(int c, const ChannelLinks& links) {
  const int n = view_.facts().nRanks;
  ACCL_CHECK(publishChannel(c));
  PrimsConn** slots = p2pSlots_ + size_t(c) * 2 * n;
  for (int p : links.sendPeers)
    if (!slots[p]) ACCL_CHECK(deviceConn(c, p, true, &slots[p]));
  for (int p : links.recvPeers)
    if (!slots[n + p]) ACCL_CHECK(deviceConn(c, p, false, &slots[n + p]));
  return ncclSuccess;
}

int CudaBackend::beginPrepare() {
  // Relaxed: no call of this thread counts as unsafe for a capture (issue 18 fault 6: a lazy
  // connect's cudaFree(0) or cudaHostAlloc, or a spill buffer, during a global-mode capture).
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return static_cast<int>(mode);
}

void CudaBackend::endPrepare(int saved) {
  if (saved < 0) return;
  cudaStreamCaptureMode mode = static_cast<cudaStreamCaptureMode>(saved);
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) cudaGetLastError();
}

ncclResult_t CudaBackend::spillBuffer(size_t bytes, bool captured, Mapped* out) {
  if (!captured) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < freeSpills_.size(); ++i) {
      if (freeSpills_[i].bytes >= bytes) {
        *out = freeSpills_[i];
        freeSpills_.erase(freeSpills_.begin() + i);
        return ncclSuccess;
      }
    }
  }
  ACCL_CHECK(allocMapped(std::max<size_t>(bytes, 64 << 10), out));
  scratchBytes_ += out->bytes;
  return ncclSuccess;
}

ncclResult_t CudaBackend::launch(std::unique_ptr<Plan> plan) {
  cuda::DeviceGuard device(device_);  // the caller's current device is theirs (restored on return)
  PackedLaunch packed;
  ncclResult_t res = plan->nChannelsUsed > 0 ? packPlan(*plan, PackOptions{}, &packed) : ncclSuccess;
  if (res == ncclSuccess) res = flushTables();  // this launch's new connections reach the device first
  if (res != ncclSuccess) {
    view_.recycle(std::move(plan));
    return res;
  }
  const cudaStream_t s0 = plan->streams.empty() ? nullptr : plan->streams[0];
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  ACCL_CUDA_CHECK(cudaStreamIsCapturing(s0, &capture));
  const bool captured = capture == cudaStreamCaptureStatusActive;
  // Launches that have ended give back their plan, event and spill buffer here: nothing else
  // reaps while a program only launches (query and wait serve suspend and teardown), so the
  // launch records (and deferred_free.h's list of completion events) would grow without end.
  // Not inside a capture, which queries no event. A kernel's error stays sticky for asyncError.
  if (!captured) (void)reap();

  // One communicator's launches run one after another whatever streams they come on (they share
  // the connections' steps and slots): this one waits for the previous one, as NCCL orders them.
  // A captured launch is ordered by the graph's own stream instead.
  if (!captured && lastLaunchRecorded_ && lastLaunchStream_ != s0)
    ACCL_CUDA_CHECK(cudaStreamWaitEvent(s0, lastLaunch_, 0));
  for (const LocalCopy& c : plan->selfCopies)
    ACCL_CUDA_CHECK(cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDefault, s0));
  if (plan->nChannelsUsed == 0) {
    if (!captured) ACCL_CHECK(recordLaunch(s0));
    view_.recycle(std::move(plan));
    return ncclSuccess;
  }

  // From here until its completion event, this launch keeps accl's frees from synchronising
  // the device (deferred_free.h).
  cuda::LaunchMark mark;
  InFlight f;
  if (packed.spilled()) {
    ACCL_CHECK(spillBuffer(packed.spill.size() * sizeof(DevWorkItem), captured, &f.spill));
    memcpy(f.spill.host, packed.spill.data(), packed.spill.size() * sizeof(DevWorkItem));
    packed.args.header.spill = static_cast<const DevWorkItem*>(f.spill.dev);
  }
  packed.args.header.comm = devComm_;
  packed.args.header.launchId = launches_++;
  // KernelCh events: the kernel stamps each item; reap() turns the stamps into events. Not in a
  // capture: a replay's completion is never seen here.
  prof::CommProfiler* profiler = view_.facts().profiler;
  if (profiler && profiler->wants(prof::kKernelCh) && !captured && packed.args.header.nItems > 0) {
    const size_t bytes = 2 * sizeof(uint64_t) * packed.args.header.nItems;
    ACCL_CHECK(spillBuffer(bytes, false, &f.itemTimes));
    memset(f.itemTimes.host, 0, bytes);
    packed.args.header.itemTimes = static_cast<uint64_t*>(f.itemTimes.dev);
  }

  // ProxyOp events: marked on the network ends before the kernel can publish a step.
  if (profiler) proxyOps_.onLaunch(*profiler, view_, *plan, packed, captured);

  // Join: the kernel waits for the earlier work of every other stream of the group...
  for (size_t i = 1; i < plan->streams.size(); ++i) {
    ACCL_CUDA_CHECK(cudaEventRecord(joinEvent_, plan->streams[i]));
    ACCL_CUDA_CHECK(cudaStreamWaitEvent(s0, joinEvent_, 0));
  }
  ACCL_CUDA_CHECK(acclLaunchKernel(packed.args, s0));
  // ...and their later work waits for the kernel.
  if (plan->streams.size() > 1) {
    ACCL_CUDA_CHECK(cudaEventRecord(joinEvent_, s0));
    for (size_t i = 1; i < plan->streams.size(); ++i) ACCL_CUDA_CHECK(cudaStreamWaitEvent(plan->streams[i], joinEvent_, 0));
  }

  if (captured) {
    // The graph owns the launch: arguments are in its kernel node; the spill must outlive it.
    std::lock_guard<std::mutex> lock(mutex_);
    if (f.spill.host) capturedSpills_.push_back(f.spill);
    if (!graphHold_) {
      // Replays are invisible here: accl's frees wait for this communicator's destruction.
      graphHold_ = true;
      cuda::holdForGraphs();
      ACCL_INFO(ACCL_LOG_ALLOC, "CUDA backend: rank %d captured a launch into a CUDA graph; until this communicator "
                "is destroyed, memory that accl releases in this process is freed later", view_.facts().rank);
    }
    view_.recycle(std::move(plan));
    return ncclSuccess;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!freeEvents_.empty()) {
      f.done = freeEvents_.back();
      freeEvents_.pop_back();
    }
  }
  if (!f.done) ACCL_CUDA_CHECK(cudaEventCreateWithFlags(&f.done, cudaEventDisableTiming));
  ACCL_CUDA_CHECK(cudaEventRecord(f.done, s0));
  mark.completesWith(f.done);
  ACCL_CHECK(recordLaunch(s0));
  f.plan = std::move(plan);
  std::lock_guard<std::mutex> lock(mutex_);
  inFlight_.push_back(std::move(f));
  return ncclSuccess;
}

void CudaBackend::emitKernelCh(const InFlight& f) {
  if (f.itemTimes.host && view_.facts().profiler)
    emitKernelChEvents(*view_.facts().profiler, *f.plan, static_cast<const uint64_t*>(f.itemTimes.host));
}

ncclResult_t CudaBackend::reap() {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!inFlight_.empty()) {
    InFlight& f = inFlight_.front();
    const cudaError_t err = cudaEventQuery(f.done);
    if (err == cudaErrorNotReady) return ncclInProgress;
    if (err != cudaSuccess && stickyError_ == ncclSuccess) stickyError_ = cudaFail("a collective kernel", err);
    cuda::launchReaped(f.done);
    freeEvents_.push_back(f.done);
    if (f.spill.host) freeSpills_.push_back(f.spill);
    emitKernelCh(f);
    if (f.itemTimes.host) freeSpills_.push_back(f.itemTimes);
    view_.recycle(std::move(f.plan));
    inFlight_.pop_front();
  }
  return stickyError_;
}

ncclResult_t CudaBackend::query() {
  const ncclResult_t r = reap();
  if (r != ncclSuccess) return r;
  return asyncError();
}

ncclResult_t CudaBackend::wait() {
  cudaSetDevice(device_);
  for (;;) {
    const ncclResult_t r = query();
    if (r != ncclInProgress) {
      cuda::releaseDeferred();  // this communicator's launches are done: perhaps every one is
      return r;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

ncclResult_t CudaBackend::asyncError() {
  if (!errorWord_) return ncclSuccess;
  // The kernel stores the detail, fences, then the code: read the code with acquire so that a
  // weakly ordered host (Grace) cannot see the code with a stale detail (issue 18 fault 9).
  const uint32_t code = std::atomic_ref<uint32_t>(*errorWord_).load(std::memory_order_acquire);
  const uint32_t detail = std::atomic_ref<uint32_t>(*errorDetail_).load(std::memory_order_relaxed);
  switch (code) {
    case kDevErrNone: {
      std::lock_guard<std::mutex> lock(mutex_);
      return stickyError_;
    }
    case kDevErrAborted:
      if (health_ && health_->failed()) return peerFailureOr("collective kernel", ncclRemoteError);
      return fail(ncclSystemError, "CUDA backend: a collective kernel stopped: the communicator was aborted");
    case kDevErrNoKernel:
      return fail(ncclInvalidUsage, "CUDA backend: function id %u has no kernel in this library", detail);
    case kDevErrNoConnection:
      return fail(ncclInternalError, "CUDA backend: a kernel found no connection for item %u", detail);
    default:
      return fail(ncclInternalError, "CUDA backend: kernel error %u (detail %u)", code, detail);
  }
}

bool CudaBackend::streamCapturing(cudaStream_t stream) const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    cudaGetLastError();  // e.g. the legacy stream while another captures in global mode: not ours to report
    return false;
  }
  return status == cudaStreamCaptureStatusActive;
}

ncclResult_t CudaBackend::peerFailureOr(const char* what, ncclResult_t res) const {
  if (res == ncclSuccess || !health_ || !health_->failed()) return res;
  return fail(ncclRemoteError, "%s: %s", what, health_->describe().c_str());
}

void CudaBackend::releaseScratch() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Mapped& m : freeSpills_) {
    scratchBytes_ -= m.bytes;
    freeMapped(m);
  }
  freeSpills_.clear();
}

}  // namespace accl
