// CUDA device queries behind a CUDA-free interface; without ACCL_HAVE_CUDA there are no devices.
#include "device/device_probe.h"

#include <atomic>
#include <string>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

#ifdef ACCL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace accl {

int cudaDeviceCount() {
#ifdef ACCL_HAVE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error so later calls start clean
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

int cudaCurrentDevice() {
#ifdef ACCL_HAVE_CUDA
  int dev = 0;
  if (cudaDeviceCount() > 0 && cudaGetDevice(&dev) == cudaSuccess) return dev;
#endif
  return 0;
}

int64_t cudaDeviceBusId(int dev) {
#ifdef ACCL_HAVE_CUDA
  char text[64] = {};
  if (dev < 0 || cudaDeviceCount() <= dev || cudaDeviceGetPCIBusId(text, sizeof(text), dev) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  int64_t id = 0;
  for (const char* c = text; *c; ++c) {
    int v = (*c >= '0' && *c <= '9') ? *c - '0' : (*c >= 'a' && *c <= 'f') ? *c - 'a' + 10
          : (*c >= 'A' && *c <= 'F') ? *c - 'A' + 10 : -1;
    if (v >= 0) id = id * 16 + v;
  }
  return id;
#else
  (void)dev;
  return -1;
#endif
}

int cudaRuntimeVersion() {
#ifdef ACCL_HAVE_CUDA
  return CUDART_VERSION;
#else
  return 0;
#endif
}

ncclResult_t chooseBackend(const char* call, const std::string& want, bool cudaBuild, int gpus, Backend* out,
                           std::string* note) {
  note->clear();
  const bool haveGpu = cudaBuild && gpus > 0;
  if (want.empty() || want == "auto") {
    *out = haveGpu ? Backend::Cuda : Backend::Host;
    if (cudaBuild && !haveGpu)
      *note = "ACCL_BACKEND=" + (want.empty() ? std::string("(unset, auto)") : want) +
              ": this build has CUDA but no CUDA device is visible; communicators use the host backend";
    return ncclSuccess;
  }
  if (want == "host") {
    *out = Backend::Host;
    return ncclSuccess;
  }
  if (want == "cuda") {
    if (!haveGpu)
      return fail(ncclInvalidUsage, "%s: ACCL_BACKEND=cuda but %s", call,
                  cudaBuild ? "no CUDA device is visible" : "this build of accl has no CUDA support");
    *out = Backend::Cuda;
    return ncclSuccess;
  }
  return fail(ncclInvalidArgument, "%s: ACCL_BACKEND='%s' is not a backend (use 'auto', 'host' or 'cuda')", call,
              want.c_str());
}

ncclResult_t selectBackend(const char* call, Backend* out) {
  std::string note;
  ACCL_CHECK(chooseBackend(call, paramStr("ACCL_BACKEND"), cudaRuntimeVersion() != 0, cudaDeviceCount(), out, &note));
  static std::atomic<bool> noted{false};
  if (!note.empty() && !noted.exchange(true)) ACCL_INFO(ACCL_LOG_INIT, "%s", note.c_str());
  return ncclSuccess;
}

}  // namespace accl
