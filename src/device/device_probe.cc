// CUDA device queries behind a CUDA-free interface; without ACCL_HAVE_CUDA there are no devices.
#include "device/device_probe.h"

#include <string>

#include "util/check.h"
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

int cudaRuntimeVersion() {
#ifdef ACCL_HAVE_CUDA
  return CUDART_VERSION;
#else
  return 0;
#endif
}

ncclResult_t selectBackend(const char* call, Backend* out) {
  std::string want = paramStr("ACCL_BACKEND");
  bool haveGpu = cudaDeviceCount() > 0;
  if (want.empty()) {
    *out = haveGpu ? Backend::Cuda : Backend::Host;
    return ncclSuccess;
  }
  if (want == "host") {
    *out = Backend::Host;
    return ncclSuccess;
  }
  if (want == "cuda") {
    if (!haveGpu)
      return fail(ncclInvalidUsage, "%s: ACCL_BACKEND=cuda but %s", call,
                  cudaRuntimeVersion() ? "no CUDA device is visible" : "this build of accl has no CUDA support");
    *out = Backend::Cuda;
    return ncclSuccess;
  }
  return fail(ncclInvalidArgument, "%s: ACCL_BACKEND='%s' is not a backend (use 'host' or 'cuda')", call,
              want.c_str());
}

}  // namespace accl
