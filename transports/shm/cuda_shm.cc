// SHM/cuda: GPU pairs of one machine without a P2P path keep their FIFOs in pinned host memory.
// The regions are the host shm transport's (memfds each end creates and the peer maps, proven the
// same way: host_shm.cc); once an end is connected, both regions as this process maps them are
// registered with cudaHostRegister (portable, mapped), so this rank's device reaches them through
// the same addresses (the build requires devices that use host pointers for registered memory).
// Built only with CUDA.
#ifdef ACCL_HAVE_CUDA

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "device/cuda/cuda_memory.h"
#include "device/cuda/deferred_free.h"
#include "transports/gpu_link.h"
#include "transports/mapped_ends.h"
#include "transports/transport.h"
#include "util/check.h"
#include "util/log.h"

namespace accl {
namespace {

const TransportSide& hostSide(ConnSide side) { return kHostShmTransport.side(side); }

// The host shm end (inner) plus the ranges registered with CUDA, unregistered first. Both go
// once no accl kernel of the process may run: cudaHostUnregister synchronises the device like a
// free, and the ranges stay mapped until they are unregistered (device/cuda/deferred_free.h).
struct CudaShmEnd : TransportResources {
  std::unique_ptr<TransportResources> inner;
  std::vector<void*> registered;
  size_t registeredBytes = 0;
  ~CudaShmEnd() override {
    if (registered.empty()) return;  // inner (nothing registered in it) goes now
    std::shared_ptr<TransportResources> mapped(std::move(inner));
    auto release = [regs = std::move(registered), mapped]() mutable {
      for (void* p : regs)
        if (cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();
      mapped.reset();  // then the ranges are unmapped
    };
    cuda::releaseWhenIdle("SHM/cuda registered FIFOs", registeredBytes, std::move(release));
  }
};

ncclResult_t registerRange(void* p, size_t bytes, int dev, CudaShmEnd* e) {
  cudaError_t ce = cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (ce != cudaSuccess) {
    cudaGetLastError();
    return fail(ncclUnhandledCudaError, "SHM/cuda: cudaHostRegister of %zu bytes at %p failed: %s", bytes, p,
                cudaGetErrorString(ce));
  }
  e->registered.push_back(p);
  e->registeredBytes += bytes;
  void* device = nullptr;
  ce = cudaHostGetDevicePointer(&device, p, 0);
  if (ce != cudaSuccess || device != p) {
    cudaGetLastError();
    return fail(ncclSystemError,
                "SHM/cuda: device %d cannot use the host address %p of registered memory directly (device address "
                "%p): this device is not supported by the shm transport",
                dev, p, device);
  }
  return ncclSuccess;
}

template <ConnSide Side>
ncclResult_t setupOf(const ConnSetup& s, ConnEnd* end, ConnBlob* blob) {
  return hostSide(Side).setup(s, end, blob);
}

template <ConnSide Side>
ncclResult_t connectOf(const ConnSetup& s, const ConnBlob& peerBlob, ConnEnd* end) {
  if (dynamic_cast<CudaShmEnd*>(end->resources.get()) != nullptr) return ncclSuccess;  // connected before
  ACCL_CHECK(hostSide(Side).connect(s, peerBlob, end));
  auto e = std::make_unique<CudaShmEnd>();
  cuda::DeviceGuard guard(s.self->cudaDev);
  // Both regions, as this process maps them: the receiver's (tail first) and the sender's (head).
  void* recvStart = reinterpret_cast<char*>(end->view.tail) - kRegionHeaderBytes;
  void* sendStart = reinterpret_cast<char*>(end->view.head) - kRegionHeaderBytes;
  ncclResult_t r = registerRange(recvStart, mappedRegionBytes(ConnSide::kRecv, s.layout), s.self->cudaDev, e.get());
  if (r == ncclSuccess)
    r = registerRange(sendStart, mappedRegionBytes(ConnSide::kSend, s.layout), s.self->cudaDev, e.get());
  e->inner = std::move(end->resources);
  end->resources = std::move(e);
  ACCL_CHECK(r);
  if (Side == ConnSide::kSend)
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_SHM, "Channel %02d/0 : %d[%d] -> %d[%d] via SHM/cuda (pinned host memory)",
              s.channel, s.self->rank, s.self->cudaDev, s.peer->rank, s.peer->cudaDev);
  return ncclSuccess;
}

// The host transport's finish and free see their own resources.
void finish(ConnEnd* end) {
  auto* e = dynamic_cast<CudaShmEnd*>(end->resources.get());
  if (e == nullptr) {
    if (kHostShmTransport.side(end->side).finish) kHostShmTransport.side(end->side).finish(end);
    return;
  }
  ConnEnd inner;
  inner.side = end->side;
  inner.resources = std::move(e->inner);
  if (kHostShmTransport.side(end->side).finish) kHostShmTransport.side(end->side).finish(&inner);
  e->inner = std::move(inner.resources);
}

void freeEnd(ConnEnd* end) { end->resources.reset(); }

bool canConnect(const PeerInfo& self, const PeerInfo& peer) {
  return gpuLinkFor(self, peer) == GpuLink::kShm && kHostShmTransport.canConnect(self, peer);
}

}  // namespace

const Transport kCudaShmTransport = {
    "SHM/cuda", &canConnect,
    TransportSide{&setupOf<ConnSide::kSend>, &connectOf<ConnSide::kSend>, &finish, &freeEnd, nullptr},
    TransportSide{&setupOf<ConnSide::kRecv>, &connectOf<ConnSide::kRecv>, &finish, &freeEnd, nullptr}};

}  // namespace accl

#endif  // ACCL_HAVE_CUDA
