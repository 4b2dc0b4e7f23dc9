// cudaMemcpy / cudaMemset and their asynchronous and peer forms. A synchronous call is work on the
// legacy stream that the caller waits for (so it orders against the blocking streams, and it is
// forbidden while a capture could see it); an asynchronous one is work on the given stream. The
// pointers are checked when the call is made (the errors CUDA returns at once) and again when the
// work runs (memory.cc: copyChecked, setChecked).
#include "vgpu/api.h"
#include "vgpu/memory_registry.h"
#include "vgpu/stream_impl.h"

namespace accl::vgpu {
namespace {

// The call-time check (memory.cc): the errors CUDA returns at once rather than from the stream.
cudaError_t checkSides(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* call) {
  return validateCopy(dst, src, bytes, kind, call);
}
cudaError_t checkSet(void* dst, size_t bytes, const char* call) { return validateSet(dst, bytes, call); }

Work copyWork(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* call) {
  return Work{call, [=] { return bytes == 0 ? cudaSuccess : copyChecked(dst, src, bytes, kind, call); }};
}
Work setWork(void* dst, int value, size_t bytes, const char* call) {
  return Work{call, [=] { return bytes == 0 ? cudaSuccess : setChecked(dst, value, bytes, call); }};
}

// Work on the legacy stream that the caller waits for.
cudaError_t runSync(Work work, const char* call) {
  if (cudaError_t e = checkCaptureForbidden(call)) return e;
  StreamPtr legacy = resolveStream(cudaStreamLegacy);
  if (!legacy) return setError(cudaErrorNoDevice);
  if (cudaError_t e = submitTo(legacy, call, std::move(work), {})) return e;
  return drainStream(legacy, call);
}

}  // namespace
}  // namespace accl::vgpu

using namespace accl::vgpu;

VGPU_API cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (cudaError_t e = checkSides(dst, src, bytes, kind, "cudaMemcpy")) return e;
  return runSync(copyWork(dst, src, bytes, kind, "cudaMemcpy"), "cudaMemcpy");
}

VGPU_API cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (cudaError_t e = checkSides(dst, src, bytes, kind, "cudaMemcpyAsync")) return e;
  return submit(s, "cudaMemcpyAsync", copyWork(dst, src, bytes, kind, "cudaMemcpyAsync"));
}

VGPU_API cudaError_t cudaMemcpyPeer(void* dst, int dstDev, const void* src, int srcDev, size_t bytes) {
  if (!device(dstDev) || !device(srcDev)) return setError(cudaErrorInvalidDevice);
  if (cudaError_t e = checkSides(dst, src, bytes, cudaMemcpyDeviceToDevice, "cudaMemcpyPeer")) return e;
  return runSync(copyWork(dst, src, bytes, cudaMemcpyDeviceToDevice, "cudaMemcpyPeer"), "cudaMemcpyPeer");
}

VGPU_API cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDev, const void* src, int srcDev, size_t bytes,
                                         cudaStream_t s) {
  if (!device(dstDev) || !device(srcDev)) return setError(cudaErrorInvalidDevice);
  if (cudaError_t e = checkSides(dst, src, bytes, cudaMemcpyDeviceToDevice, "cudaMemcpyPeerAsync")) return e;
  return submit(s, "cudaMemcpyPeerAsync", copyWork(dst, src, bytes, cudaMemcpyDeviceToDevice, "cudaMemcpyPeerAsync"));
}

VGPU_API cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  if (cudaError_t e = checkSet(dst, bytes, "cudaMemset")) return e;
  return runSync(setWork(dst, value, bytes, "cudaMemset"), "cudaMemset");
}

VGPU_API cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t s) {
  if (cudaError_t e = checkSet(dst, bytes, "cudaMemsetAsync")) return e;
  return submit(s, "cudaMemsetAsync", setWork(dst, value, bytes, "cudaMemsetAsync"));
}
