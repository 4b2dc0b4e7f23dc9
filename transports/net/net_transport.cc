// The network transport (kNetTransport): a connection whose two ends are on different hosts, or
// between local ranks when NCCL_P2P_DISABLE and NCCL_SHM_DISABLE leave nothing else. Each end
// works on its own memory only (net_conn.h); the communicator's proxy thread (net_proxy.h) moves
// the steps through the communicator's NetDevice (net_context.h), which is this transport's
// per-communicator state (ConnSetup::state). docs/transports.md ("net").
//
//   receiver setup:   FIFO memory + head copy + bounce + headers; listen; the handle in the blob
//   sender setup:     the network device (so a missing one fails at setup, on both ranks)
//   sender connect:   staging FIFO in the receiver's layout + head; connect (ncclInProgress until
//                     the sendComm exists); regMr; joins the proxy
//   receiver connect: accept (ncclInProgress until the recvComm exists); regMr; joins the proxy
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "device/common/fifo_signal.h"
#include "transports/net/net_conn.h"
#include "transports/net/net_context.h"
#include "transports/net/net_drive_order.h"
#include "transports/net/net_landing.h"
#include "transports/net/net_user_send.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#ifdef ACCL_HAVE_CUDA
#include "device/cuda/cuda_memory.h"
#endif

namespace accl {

NetConnResources::~NetConnResources() {
  netProfileRetireAll(this);
  netLogUserSends(this);
  netLogLandings(this);
  if (net) {
    netReleaseUserMrs(this, 0, "as the connection closes");
    if (mhandle) net->deregMr(sendComm ? static_cast<void*>(sendComm) : static_cast<void*>(recvComm), mhandle);
    if (sendComm) net->closeSend(sendComm);
    if (recvComm) net->closeRecv(recvComm);
    if (listenComm) net->closeListen(listenComm);
  }
  releaseMemory();
}

void NetConnResources::releaseMemory() {
#ifdef ACCL_HAVE_CUDA
  if (pinned) {
    cuda::PinnedHostMemory m{mem, memDevice, memBytes};
    cuda::pinnedHostFree(&m);
    mem = memDevice = nullptr;
    return;
  }
#endif
  std::free(mem);
  mem = memDevice = nullptr;
}

ncclResult_t NetConnResources::failWith(ncclResult_t res, const char* what) {
  if (!failed) {
    failed = true;
    const char* fmt = "NET/proxy: rank %d: connection %s rank %d (host %s) on channel %d failed while %s (%s); closing it";
    const char* dir = side == ConnSide::kSend ? "to" : "from";
    if (closing || peerLeft)
      ACCL_INFO(ACCL_LOG_NET, fmt, rank, dir, peerRank, peerHost.c_str(), channel, what, ncclGetErrorString(res));
    else
      ACCL_WARN(fmt, rank, dir, peerRank, peerHost.c_str(), channel, what, ncclGetErrorString(res));
    // The waits of this rank may be on other connections, and the peer may see no error at all
    // (its end of the link is idle): liveness fails the communicator on both, naming the peer.
    if (!closing && !peerLeft) {
      char detail[96];
      const bool out = side == ConnSide::kSend;
      std::snprintf(detail, sizeof(detail), "%s connection from rank %d to rank %d failed while %s", net->name(),
                    out ? rank : peerRank, out ? peerRank : rank, what);
      ctx->reportFailure(peerRank, detail);
    }
    closeCounters();
  }
  netStopLandings(this);  // nothing more may be written into a user's buffer
  return res == ncclSuccess ? ncclRemoteError : res;
}

void NetConnResources::closeCounters() {
  for (FifoCounter* c : {tail(), head}) {
    std::atomic_ref<uint32_t>(c->closed).store(1, std::memory_order_release);
    futexWakeWord(counterWord(c->value));
  }
}

namespace {

bool canConnect(const PeerInfo& self, const PeerInfo& peer) {
  if (self.hostHash != peer.hostHash) return true;
  // Same host: only when the local transports are both switched off (as NCCL does).
  return paramInt("NCCL_P2P_DISABLE") == 1 && paramInt("NCCL_SHM_DISABLE") == 1;
}

NetConnResources* res(ConnEnd* end) { return static_cast<NetConnResources*>(end->resources.get()); }

// Where a CUDA rank's FIFO goes. GPUDirect RDMA (the FIFO in device memory, registered with
// kNetPtrCuda / a dma-buf) needs a device that reports it and a proxy that reaches device memory
// (the LL bounce copy and the step headers are host stores today): not done yet, so every CUDA
// rank uses pinned host memory, and says so once per connection when GDR was available.
ncclResult_t allocatePinned(NetConnResources* r) {
#ifdef ACCL_HAVE_CUDA
  const NetProperties& props = r->ctx->properties();
  const bool gdrCapable = (props.ptrSupport & kNetPtrCuda) != 0 && (props.gdrPeermem || props.gdrDmaBuf);
  if (gdrCapable)
    ACCL_INFO(ACCL_LOG_NET,
              "NET: rank %d channel %d (%s rank %d): %s reports GPUDirect RDMA (%s), not used yet: the FIFO is in "
              "pinned host memory",
              r->rank, r->channel, r->side == ConnSide::kSend ? "to" : "from", r->peerRank, r->net->name(),
              props.gdrDmaBuf ? "dma-buf" : "peermem");
  cuda::PinnedHostMemory m;
  ncclResult_t rc = cuda::pinnedHostAlloc(r->memBytes, r->cudaDev, &m);
  if (rc != ncclSuccess)
    return fail(rc, "net transport: rank %d cannot allocate %zu bytes of pinned host memory (device %d) for its "
                "connection with rank %d", r->rank, r->memBytes, r->cudaDev, r->peerRank);
  r->mem = static_cast<char*>(m.host);
  r->memDevice = static_cast<char*>(m.device);
  r->pinned = true;
  return ncclSuccess;
#else
  return fail(ncclInternalError, "net transport: rank %d runs kernels (device %d) but this build has no CUDA",
              r->rank, r->cudaDev);
#endif
}

// Allocates the end's memory: the receiver layout's FIFO, then head, (receiver) LL bounce slots,
// then the step headers; zeroed and 4 KiB aligned. Pinned and device-mapped on a CUDA rank.
ncclResult_t allocate(NetConnResources* r) {
  const size_t fifoBytes = (r->layout.recvBytes() + 63) / 64 * 64;
  const size_t bounceBytes = r->side == ConnSide::kRecv ? r->llSlotBytes() * kFifoSteps : 0;
  const size_t headerBytes = (sizeof(NetStepHeader) * kFifoSteps + 63) / 64 * 64;
  r->memBytes = fifoBytes + sizeof(FifoCounter) + bounceBytes + headerBytes;
  if (r->cudaDev >= 0) {
    ACCL_CHECK(allocatePinned(r));
  } else {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, r->memBytes) != 0)
      return fail(ncclSystemError, "net transport: rank %d cannot allocate %zu bytes for its connection with rank %d",
                  r->rank, r->memBytes, r->peerRank);
    std::memset(p, 0, r->memBytes);
    r->mem = r->memDevice = static_cast<char*>(p);
  }
  r->fifo = r->mem;
  r->head = reinterpret_cast<FifoCounter*>(r->mem + fifoBytes);
  r->bounce = bounceBytes ? reinterpret_cast<LLWord*>(r->mem + fifoBytes + sizeof(FifoCounter)) : nullptr;
  r->headers = reinterpret_cast<NetStepHeader*>(r->mem + fifoBytes + sizeof(FifoCounter) + bounceBytes);
  return ncclSuccess;
}

ncclResult_t newResources(const ConnSetup& s, ConnSide side, ConnEnd* end, NetConnResources** out) {
  // The state the connection table made with netCommInit for this communicator.
  auto* ctx = static_cast<NetContext*>(s.state);
  if (!ctx)
    return fail(ncclInternalError, "net transport: rank %d has no network context for rank %d", s.self->rank,
                s.peer->rank);
  auto r = std::make_unique<NetConnResources>();
  r->ctx = ctx;
  r->side = side;
  r->rank = s.self->rank;
  r->peerRank = s.peer->rank;
  r->channel = s.channel;
  r->prof = ctx->profiler();
  r->profOps = &end->profOps;
  if (r->prof && r->prof->wants(prof::kNetPlugin)) r->profParents = std::make_unique<prof::NetStepParent[]>(kFifoSteps);
  r->cudaDev = s.self->gpuFifos == 1 ? s.self->cudaDev : -1;  // the kernel reaches the FIFO
  r->peerHost.assign(s.peer->place.hostname, strnlen(s.peer->place.hostname, sizeof(s.peer->place.hostname)));
  ncclResult_t rc = ctx->device(&r->net);
  if (rc != ncclSuccess)
    return fail(rc, "net transport: rank %d cannot connect with rank %d (host %s) on channel %d: no network",
                r->rank, r->peerRank, r->peerHost.c_str(), r->channel);
  ACCL_CHECK(netTestsInOrder(ctx->properties(), &r->testInOrder));
  *out = r.get();
  end->resources = std::move(r);
  return ncclSuccess;
}

ncclResult_t registerMemory(NetConnResources* r, void* comm) {
  ncclResult_t rc = r->net->regMr(comm, r->mem, r->memBytes, kNetPtrHost, &r->mhandle);
  if (rc != ncclSuccess)
    return fail(rc, "net transport: rank %d: %s cannot register %zu bytes for its connection with rank %d",
                r->rank, r->net->name(), r->memBytes, r->peerRank);
  return ncclSuccess;
}

void joinProxy(NetConnResources* r, ConnEnd* end) {
  r->inProxy = true;
  // The proxy's doorbell: what the local Prims publish for this end.
  r->ctx->proxy().add(end, r->side == ConnSide::kSend ? r->tail() : r->head);
}

// --- receiver ---

ncclResult_t recvSetup(const ConnSetup& s, ConnEnd* end, ConnBlob* blob) {
  NetConnResources* r = nullptr;
  ACCL_CHECK(newResources(s, ConnSide::kRecv, end, &r));
  r->layout = s.layout;
  ACCL_CHECK(allocate(r));
  NetBlob mine{};
  mine.magic = NetBlob::kMagic;
  mine.dev = r->ctx->dev();
  ncclResult_t rc = r->net->listen(mine.dev, &mine.handle, &r->listenComm);
  if (rc != ncclSuccess)
    return fail(rc, "net transport: rank %d cannot listen on %s device %d for rank %d", r->rank, r->net->name(),
                mine.dev, r->peerRank);
  putBlobPayload(blob, mine);
  // All local: the proxy fills tail and slots. A CUDA rank's view holds the device addresses
  // (with cudaHostAlloc under UVA the same as the host's).
  end->view = makeFifoView(r->forPrims(r->fifo), r->forPrims(r->head), r->layout);
  end->ownedBytes = r->memBytes;
  return ncclSuccess;
}

ncclResult_t recvConnect(const ConnSetup&, const ConnBlob&, ConnEnd* end) {
  NetConnResources* r = res(end);
  if (!r->recvComm) {
    ncclResult_t rc = r->net->accept(r->listenComm, &r->recvComm);
    if (rc != ncclSuccess)
      return fail(rc, "net transport: rank %d: accepting the connection from rank %d (host %s) failed", r->rank,
                  r->peerRank, r->peerHost.c_str());
    if (!r->recvComm) return ncclInProgress;
    ACCL_CHECK(registerMemory(r, r->recvComm));
    // Zero-copy receives (net_landing.h): the table the Prims ask for landings in.
    r->landMinBytes = netLandMinBytes(r);
    if (r->landMinBytes > 0) {
      r->landings = std::make_unique<FifoLanding[]>(kFifoSteps);
      end->landings = r->landings.get();
      end->landMinBytes = r->landMinBytes;
      r->landRegisteredOnly = end->landRegisteredOnly = !r->ctx->properties().sendsUnregistered;
    }
    joinProxy(r, end);
  }
  return ncclSuccess;
}

// --- sender ---

ncclResult_t sendSetup(const ConnSetup& s, ConnEnd* end, ConnBlob*) {
  NetConnResources* r = nullptr;
  return newResources(s, ConnSide::kSend, end, &r);
}

ncclResult_t sendConnect(const ConnSetup& s, const ConnBlob& peerBlob, ConnEnd* end) {
  NetConnResources* r = res(end);
  if (!r->mem) {
    const NetBlob theirs = blobPayload<NetBlob>(peerBlob);
    if (theirs.magic != NetBlob::kMagic)
      return fail(ncclSystemError, "net transport: rank %d: the blob of rank %d is not a network handle (magic 0x%x)",
                  r->rank, r->peerRank, theirs.magic);
    r->layout = s.layout;  // the receiver's: the staging FIFO follows it
    ACCL_CHECK(allocate(r));
    end->view = makeFifoView(r->forPrims(r->fifo), r->forPrims(r->head), r->layout);
    end->ownedBytes = r->memBytes;
  }
  if (!r->sendComm) {
    const NetBlob theirs = blobPayload<NetBlob>(peerBlob);
    NetCommConfig config;
    config.trafficClass = r->ctx->choice().trafficClass;
    ncclResult_t rc = r->net->connect(theirs.dev, config, theirs.handle, &r->sendComm);
    if (rc != ncclSuccess)
      return fail(rc, "net transport: rank %d cannot connect to rank %d (host %s) on channel %d through %s", r->rank,
                  r->peerRank, r->peerHost.c_str(), r->channel, r->net->name());
    if (!r->sendComm) return ncclInProgress;
    ACCL_CHECK(registerMemory(r, r->sendComm));
    r->userSendMinBytes = end->userSendMinBytes = netUserSendMinBytes(r);
    r->userSendRegisteredOnly = end->userSendRegisteredOnly = netUserSendRegisteredOnly(r);
    joinProxy(r, end);
  }
  return ncclSuccess;
}

// --- both ---

void netFinish(ConnEnd* end) {
  NetConnResources* r = res(end);
  if (r && r->listenComm) {
    r->net->closeListen(r->listenComm);
    r->listenComm = nullptr;
  }
}

void netFree(ConnEnd* end) {
  NetConnResources* r = res(end);
  if (r && r->inProxy) {
    r->ctx->proxy().remove(end);
    r->inProxy = false;
  }
  end->resources.reset();
}

ncclResult_t sendProgress(ConnEnd* end, bool* progressed) { return netSendProgress(res(end), progressed); }
ncclResult_t recvProgress(ConnEnd* end, bool* progressed) { return netRecvProgress(res(end), progressed); }

}  // namespace

const Transport kNetTransport = {
    "NET",
    &canConnect,
    TransportSide{&sendSetup, &sendConnect, &netFinish, &netFree, &sendProgress},
    TransportSide{&recvSetup, &recvConnect, &netFinish, &netFree, &recvProgress},
    &netCommInit,      // the communicator's NetContext (net_context.h)
    &netCommDrain,
    &netSetNicPicker,
    &netNicInfo,
    &netBufferDeregistered,  // zero-copy sends' device registrations of user buffers
};

}  // namespace accl
