// P2P/cuda: FIFO memory in device memory, reached by the peer's device directly (see cuda_p2p.h).
// Every end allocates its own region (receiver: tail + slots, sender: head), stamps its header
// (copied into device memory) and announces how the peer reaches it; at connect it attaches the
// peer's region (pointer, imported cuMem fd or cudaIpc handle), proves the header it reads back
// and builds its FifoView of device pointers. Built only with CUDA.
#ifdef ACCL_HAVE_CUDA

#include "transports/p2p/cuda_p2p.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "device/cuda/cuda_memory.h"
#include "transports/mapped_ends.h"
#include "transports/region_proof.h"
#include "util/check.h"
#include "util/host_identity.h"
#include "util/last_error.h"
#include "util/log.h"
#include "util/time.h"

namespace accl {
namespace {

constexpr int kFdWaitMs = 60000;  // how long connect waits for the peer's fd (returns InProgress meanwhile)

uint64_t processToken() {
  static std::mutex mu;
  static pid_t owner = 0;
  static uint64_t token = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (owner != getpid()) {
    owner = getpid();
    token = randomU64();
  }
  return token;
}

bool sameProcess(const PeerInfo& a, const PeerInfo& b) {
  return a.pidHash == b.pidHash && a.pid == b.pid && a.place.bootHash == b.place.bootHash &&
         a.place.pidNsInode == b.place.pidNsInode && a.place.pidNsDev == b.place.pidNsDev;
}

ConnSide otherSide(ConnSide s) { return s == ConnSide::kSend ? ConnSide::kRecv : ConnSide::kSend; }

// The local ordinal of the device with PCI bus id `busId` (device_probe.h numbering), or -1.
int deviceOfBusId(int64_t busId) {
  if (busId < 0) return -1;
  char text[32];
  std::snprintf(text, sizeof(text), "%04llx:%02llx:%02llx.%llx", (unsigned long long)(busId >> 20),
                (unsigned long long)((busId >> 12) & 0xff), (unsigned long long)((busId >> 4) & 0xff),
                (unsigned long long)(busId & 0xf));
  int dev = -1;
  if (cudaDeviceGetByPCIBusId(&dev, text) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return dev;
}

// A host copy of a region header, so region_proof.h's stamp and check work on it.
class HeaderCopy : public ConnRegion {
 public:
  HeaderCopy() { start_ = &header_; }
  RegionHeader header_{};
};

// An owner's device allocation: freed when the owner and every same-process attacher let go.
struct OwnedRegion {
  cuda::DeviceMemory mem;
  ~OwnedRegion() { cuda::deviceFree(&mem); }
};

// Regions a same-process peer may still attach to (from setup until the owner's finish or free).
struct OpenRegions {
  std::mutex mu;
  std::unordered_map<uintptr_t, std::shared_ptr<OwnedRegion>> open;
};
OpenRegions& openRegions() {
  static OpenRegions* r = new OpenRegions;
  return *r;
}

struct CudaP2pEnd : TransportResources {
  ConnSide side = ConnSide::kSend;
  int dev = -1;
  P2pMode mode = P2pMode::kDirect;
  std::shared_ptr<OwnedRegion> own;
  IpcSocket socket;  // cuMem mode: receives the peer's fd
  int exportedFd = -1;
  bool fdSent = false;
  uint64_t fdToken = 0;
  int64_t fdDeadlineNs = 0;
  std::shared_ptr<OwnedRegion> peerSame;  // direct mode
  cuda::ImportedMemory peerImported;      // cuMem / IPC mode
  void* peerStart = nullptr;

  void unlist() {
    if (!own) return;
    OpenRegions& r = openRegions();
    std::lock_guard<std::mutex> lock(r.mu);
    r.open.erase(reinterpret_cast<uintptr_t>(own->mem.ptr));
  }
  void closeExport() {
    if (exportedFd >= 0) close(exportedFd);
    exportedFd = -1;
  }
  ~CudaP2pEnd() override {
    cuda::releaseImported(&peerImported);
    peerSame.reset();
    closeExport();
    unlist();
    own.reset();
  }
};

ncclResult_t setup(ConnSide side, const ConnSetup& s, ConnEnd* end, ConnBlob* blob) {
  auto e = std::make_unique<CudaP2pEnd>();
  e->side = side;
  e->dev = s.self->cudaDev;
  cuda::DeviceGuard guard(e->dev);
  e->mode = chooseP2pMode(sameProcess(*s.self, *s.peer), cuda::cuMemUsable(e->dev));
  const size_t bytes = mappedRegionBytes(side, s.layout);
  e->own = std::make_shared<OwnedRegion>();
  ACCL_CHECK(cuda::deviceAlloc(bytes, e->dev, e->mode != P2pMode::kIpc, &e->own->mem));

  HeaderCopy hdr;
  RegionRef ref{};
  ref.bytes = bytes;
  stampRegion(&hdr, RegionStamp{s.self->rank, s.peer->rank, s.channel, side}, &ref);
  if (cuda::copySync(e->own->mem.ptr, &hdr.header_, sizeof(RegionHeader)) != ncclSuccess)
    return fail(ncclUnhandledCudaError, "P2P/cuda: rank %d cannot write its region header on device %d: %s",
                s.self->rank, e->dev, lastErrorText());

  CudaP2pBlob mine{};
  mine.region = ref;
  mine.address = reinterpret_cast<uint64_t>(e->own->mem.ptr);
  mine.processToken = processToken();
  mine.allocBytes = e->own->mem.bytes;
  mine.mode = static_cast<int32_t>(e->mode);
  mine.dev = e->dev;
  if (e->mode == P2pMode::kCumem) {
    ACCL_CHECK(e->socket.open(s.self->pidHash ^ (uint64_t(s.channel) << 32), s.self->rank));
    ACCL_CHECK(cuda::exportFd(e->own->mem, &e->exportedFd));
    e->fdToken = randomU64();
    mine.fdToken = e->fdToken;
    mine.socket = e->socket.address();
  } else if (e->mode == P2pMode::kIpc) {
    ACCL_CHECK(cuda::ipcExport(e->own->mem, mine.ipcHandle));
  } else {
    OpenRegions& r = openRegions();
    std::lock_guard<std::mutex> lock(r.mu);
    r.open[mine.address] = e->own;
  }
  putBlobPayload(blob, mine);
  end->side = side;
  end->ownedBytes = e->own->mem.bytes;
  end->resources = std::move(e);
  return ncclSuccess;
}

// Attaches the peer's region: sets e->peerStart, or returns ncclInProgress while its fd is on its way.
ncclResult_t attach(const ConnSetup& s, const CudaP2pBlob& theirs, CudaP2pEnd* e) {
  const P2pMode mode = static_cast<P2pMode>(theirs.mode);
  if (mode != e->mode)
    return fail(ncclSystemError, "P2P/cuda: rank %d shares its memory as %s, rank %d as %s (channel %d)",
                s.self->rank, p2pModeName(e->mode), s.peer->rank, p2pModeName(mode), s.channel);
  if (mode == P2pMode::kDirect) {
    if (theirs.processToken != processToken() || theirs.region.ownerPid != getpid())
      return fail(ncclSystemError, "P2P/cuda: the region of rank %d (pid %d) is not in this process (pid %d)",
                  s.peer->rank, theirs.region.ownerPid, getpid());
    {
      OpenRegions& r = openRegions();
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.open.find(theirs.address);
      if (it == r.open.end())
        return fail(ncclSystemError, "P2P/cuda: the region of rank %d is gone: released before rank %d attached",
                    s.peer->rank, s.self->rank);
      e->peerSame = it->second;
    }
    if (theirs.dev != e->dev && !cuda::enablePeerAccess(e->dev, theirs.dev))
      return fail(ncclSystemError, "P2P/cuda: device %d (rank %d) has no peer access to device %d (rank %d)", e->dev,
                  s.self->rank, theirs.dev, s.peer->rank);
    e->peerStart = reinterpret_cast<void*>(theirs.address);
    return ncclSuccess;
  }
  if (mode == P2pMode::kIpc) {
    ACCL_CHECK(cuda::ipcImport(theirs.ipcHandle, theirs.allocBytes, e->dev, &e->peerImported));
    e->peerStart = e->peerImported.ptr;
    return ncclSuccess;
  }
  // cuMem: give the peer our fd (once), then take theirs.
  if (!e->fdSent) {
    IpcFdHeader h;
    h.scope = theirs.socket.scope;
    h.token = theirs.fdToken;
    h.fromRank = s.self->rank;
    h.tag = s.channel;
    h.bytes = e->own->mem.bytes;
    ACCL_CHECK(e->socket.sendFd(theirs.socket, e->exportedFd, h, 10000));
    e->fdSent = true;
    e->closeExport();
    e->fdDeadlineNs = nowNs() + int64_t(kFdWaitMs) * 1000000;
  }
  int fd = -1;
  IpcFdHeader got;
  ncclResult_t r = e->socket.recvFd(s.peer->rank, e->fdToken, s.channel, 0, &fd, &got);
  if (r == ncclInProgress) {
    if (nowNs() < e->fdDeadlineNs) return ncclInProgress;
    return fail(ncclSystemError, "P2P/cuda: rank %d got no memory fd from rank %d (channel %d) within %d ms",
                s.self->rank, s.peer->rank, s.channel, kFdWaitMs);
  }
  ACCL_CHECK(r);
  if (got.bytes != theirs.allocBytes) {
    close(fd);
    return fail(ncclSystemError, "P2P/cuda: rank %d's fd maps %llu bytes, its blob announced %llu", s.peer->rank,
                (unsigned long long)got.bytes, (unsigned long long)theirs.allocBytes);
  }
  r = cuda::importFd(fd, theirs.allocBytes, e->dev, &e->peerImported);
  close(fd);
  ACCL_CHECK(r);
  e->peerStart = e->peerImported.ptr;
  return ncclSuccess;
}

ncclResult_t connect(ConnSide side, const ConnSetup& s, const ConnBlob& peerBlob, ConnEnd* end) {
  auto* e = dynamic_cast<CudaP2pEnd*>(end->resources.get());
  if (e == nullptr || !e->own)
    return fail(ncclInternalError, "P2P/cuda: rank %d connects to rank %d (channel %d) before its setup",
                s.self->rank, s.peer->rank, s.channel);
  const CudaP2pBlob theirs = blobPayload<CudaP2pBlob>(peerBlob);
  const ConnSide peerSide = otherSide(side);
  const size_t expected = mappedRegionBytes(peerSide, s.layout);
  const RegionRef& ref = theirs.region;
  if (ref.ownerRank != s.peer->rank || ref.side != static_cast<uint32_t>(peerSide) || ref.bytes != expected ||
      theirs.allocBytes < expected)
    return fail(ncclSystemError,
                "rank %d: the %s blob of rank %d on channel %d (P2P/cuda) is malformed: rank %d's %s region of %llu "
                "bytes where %zu were expected",
                s.self->rank, connSideName(peerSide), s.peer->rank, s.channel, ref.ownerRank,
                connSideName(static_cast<ConnSide>(ref.side)), (unsigned long long)ref.bytes, expected);
  cuda::DeviceGuard guard(e->dev);
  if (e->peerStart == nullptr) {
    ncclResult_t r = attach(s, theirs, e);
    if (r != ncclSuccess) return r;  // ncclInProgress included
  }
  // Prove the region: read its header back through the mapping.
  HeaderCopy hdr;
  std::string why;
  if (cuda::copySync(&hdr.header_, e->peerStart, sizeof(RegionHeader)) != ncclSuccess) {
    why = std::string("reading its header failed: ") + lastErrorText();
  } else {
    regionMatchesRef(hdr, ref, &why);
  }
  if (!why.empty()) {
    cuda::releaseImported(&e->peerImported);
    e->peerSame.reset();
    e->peerStart = nullptr;
    return fail(ncclSystemError,
                "rank %d cannot prove that the device memory it mapped for rank %d (channel %d, P2P/cuda/%s) is rank "
                "%d's: %s; refusing to use it",
                s.self->rank, s.peer->rank, s.channel, p2pModeName(e->mode), s.peer->rank, why.c_str());
  }
  void* ownBase = static_cast<char*>(e->own->mem.ptr) + kRegionHeaderBytes;
  void* peerBase = static_cast<char*>(e->peerStart) + kRegionHeaderBytes;
  end->view = side == ConnSide::kRecv ? makeFifoView(ownBase, peerBase, s.layout)
                                      : makeFifoView(peerBase, ownBase, s.layout);
  end->mappedBytes = theirs.allocBytes;
  if (side == ConnSide::kSend)
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_P2P, "Channel %02d/0 : %d[%d] -> %d[%d] via P2P/%s", s.channel, s.self->rank,
              e->dev, s.peer->rank, theirs.dev, p2pModeName(e->mode));
  return ncclSuccess;
}

template <ConnSide Side>
ncclResult_t setupOf(const ConnSetup& s, ConnEnd* end, ConnBlob* blob) {
  return setup(Side, s, end, blob);
}
template <ConnSide Side>
ncclResult_t connectOf(const ConnSetup& s, const ConnBlob& b, ConnEnd* end) {
  return connect(Side, s, b, end);
}

void finish(ConnEnd* end) {
  if (auto* e = dynamic_cast<CudaP2pEnd*>(end->resources.get())) {
    e->unlist();  // the peer holds its reference: nobody else may attach
    e->socket.close();
    e->closeExport();
  }
}

void freeEnd(ConnEnd* end) { end->resources.reset(); }

bool canConnect(const PeerInfo& self, const PeerInfo& peer) { return gpuLinkFor(self, peer) == GpuLink::kP2p; }

}  // namespace

GpuPairFacts gpuPairFacts(const PeerInfo& self, const PeerInfo& peer) {
  GpuPairFacts f;
  f.bothGpuFifos = self.gpuFifos == 1 && peer.gpuFifos == 1 && self.busId >= 0 && peer.busId >= 0;
  if (!f.bothGpuFifos) return f;
  f.sameNode = self.hostHash == peer.hostHash;
  f.sameProcess = sameProcess(self, peer);
  f.shareMemory = canShareMemory(self.place, peer.place, nullptr);
  f.sameDevice = self.busId == peer.busId;
  if (f.sameDevice) {
    f.peerAccess = true;
    f.pathType = guessPathType(true, true, false);
    return f;
  }
  // Both devices must be visible here to ask the driver; otherwise no P2P (the pair uses SHM).
  const int a = deviceOfBusId(self.busId), b = deviceOfBusId(peer.busId);
  int access = 0, atomics = 0;
  if (a >= 0 && b >= 0) {
    if (cudaDeviceCanAccessPeer(&access, a, b) != cudaSuccess) access = 0;
    if (access && cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a, b) != cudaSuccess)
      atomics = 0;
    cudaGetLastError();
  }
  f.peerAccess = access != 0;
  f.pathType = guessPathType(false, f.peerAccess, atomics != 0);
  return f;
}

GpuLink gpuLinkFor(const PeerInfo& self, const PeerInfo& peer) {
  static const GpuLinkPolicy policy = [] {
    std::string why;
    GpuLinkPolicy p = gpuLinkPolicyFromEnv(&why);
    if (!why.empty()) ACCL_WARN("%s; using the default", why.c_str());
    return p;
  }();
  return chooseGpuLink(gpuPairFacts(self, peer), policy);
}

const Transport kCudaP2pTransport = {
    "P2P/cuda", &canConnect,
    TransportSide{&setupOf<ConnSide::kSend>, &connectOf<ConnSide::kSend>, &finish, &freeEnd, nullptr},
    TransportSide{&setupOf<ConnSide::kRecv>, &connectOf<ConnSide::kRecv>, &finish, &freeEnd, nullptr}};

}  // namespace accl

#endif  // ACCL_HAVE_CUDA
