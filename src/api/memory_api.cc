// ncclMemAlloc / ncclMemFree and buffer registration (ncclCommRegister, windows and
// ncclWinGetUserPtr). On the host backend memory is page-aligned host memory and registration
// only records the range (buffers in core/comm/buffer_registry.h, windows in core/comm/window_registry.h);
// with a CUDA device, ncclMemAlloc returns shareable device memory (cuMem at the recommended
// granularity, exportable as a POSIX fd and mapped for every peer-capable device; cudaMalloc when
// cuMem is unusable: device/cuda/cuda_memory.h). Registrations are tracked the same way on both
// backends, for a backend to look up for zero-copy: the host backend's network sends over a device
// that needs registered memory (IB verbs, plugins) go straight from a registered buffer, and
// ncclCommDeregister releases the device registrations made for it.
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_set>

#include "api/api_export.h"
#include "api/api_guard.h"
#include "core/comm/buffer_registry.h"
#include "core/comm/comm.h"
#include "core/comm/window_registry.h"
#include "core/engine/engine.h"
#include "device/device_probe.h"
#include "util/last_error.h"

#ifdef ACCL_HAVE_CUDA
#include <cuda_runtime.h>

#include "device/cuda/cuda_memory.h"
#endif

namespace accl {
namespace {

std::mutex gHostAllocMutex;
std::unordered_set<void*> gHostAllocs;  // ncclMemAlloc'd host blocks, to route ncclMemFree

bool useHostMemory() {
  Backend b;
  return selectBackend("ncclMemAlloc", &b) != ncclSuccess || b == Backend::Host;
}

}  // namespace
}  // namespace accl

using namespace accl;

ACCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  return apiGuard("ncclMemAlloc", [&]() -> ncclResult_t {
    if (ptr == nullptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
    *ptr = nullptr;
    if (size == 0) return ncclSuccess;
    if (useHostMemory()) {
      void* p = nullptr;
      if (posix_memalign(&p, 4096, size) != 0)
        return fail(ncclSystemError, "ncclMemAlloc: cannot allocate %zu bytes of host memory", size);
      std::lock_guard<std::mutex> lock(gHostAllocMutex);
      gHostAllocs.insert(p);
      *ptr = p;
      return ncclSuccess;
    }
#ifdef ACCL_HAVE_CUDA
    ncclResult_t res = cuda::memAlloc(ptr, size);
    if (res != ncclSuccess)
      return fail(res, "ncclMemAlloc: cannot allocate %zu bytes of device memory: %s", size, lastErrorText());
    return ncclSuccess;
#else
    return fail(ncclInternalError, "ncclMemAlloc: no host backend and no CUDA support");
#endif
  });
}

ACCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  return apiGuard("ncclMemFree", [&]() -> ncclResult_t {
    if (ptr == nullptr) return ncclSuccess;
    {
      std::lock_guard<std::mutex> lock(gHostAllocMutex);
      if (gHostAllocs.erase(ptr)) {
        free(ptr);
        return ncclSuccess;
      }
    }
#ifdef ACCL_HAVE_CUDA
    bool known = false;
    ACCL_CHECK(cuda::memFree(ptr, &known));
    if (known) return ncclSuccess;
    cudaError_t err = cudaFree(ptr);  // not ours: device memory the caller got elsewhere, as before
    if (err != cudaSuccess) {
      cudaGetLastError();
      return fail(ncclInvalidArgument, "ncclMemFree: %p was not allocated by ncclMemAlloc, and cudaFree refused it: %s",
                  ptr, cudaGetErrorString(err));
    }
    return ncclSuccess;
#else
    return fail(ncclInvalidArgument, "ncclMemFree: %p was not allocated by ncclMemAlloc", ptr);
#endif
  });
}

ACCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return apiGuard("ncclCommRegister", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommReady("ncclCommRegister", comm));
    if (handle == nullptr) return fail(ncclInvalidArgument, "ncclCommRegister: handle is NULL");
    if (buff == nullptr && size > 0) return fail(ncclInvalidArgument, "ncclCommRegister: buff is NULL (size %zu)", size);
    *handle = registerBuffer(comm, buff, size);
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  return apiGuard("ncclCommDeregister", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclCommDeregister", comm));
    ACCL_CHECK(deregisterBuffer("ncclCommDeregister", comm, handle));  // never dereferences the handle
    // The network's zero-copy sends may hold device registrations of the buffer: gone before the
    // user may free it.
    if (comm->engine) comm->engine->conns.bufferDeregistered(reinterpret_cast<uintptr_t>(handle));
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
         int winFlags) {
  return apiGuard("ncclCommWindowRegister", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommReady("ncclCommWindowRegister", comm));
    if (win == nullptr) return fail(ncclInvalidArgument, "ncclCommWindowRegister: win is NULL");
    if (winFlags != NCCL_WIN_DEFAULT && winFlags != NCCL_WIN_COLL_SYMMETRIC)
      return fail(ncclInvalidArgument, "ncclCommWindowRegister: winFlags 0x%x is unknown", winFlags);
    *win = registerWindow(comm, buff, size, winFlags);
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  return apiGuard("ncclCommWindowDeregister", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclCommWindowDeregister", comm));
    return deregisterWindow("ncclCommWindowDeregister", comm, win);
  });
}

// The buffer a window was registered with (NCCL 2.32). A window of another comm, a
// deregistered one or a forged handle is an error naming the handle.
ACCL_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  return apiGuard("ncclWinGetUserPtr", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclWinGetUserPtr", comm));
    if (outUserPtr == nullptr) return fail(ncclInvalidArgument, "ncclWinGetUserPtr: outUserPtr is NULL");
    WindowInfo info;
    ACCL_CHECK(lookupWindow("ncclWinGetUserPtr", comm, win, &info));
    *outUserPtr = info.buff;
    return ncclSuccess;
  });
}
