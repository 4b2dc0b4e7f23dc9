// The calling thread's last error, cudaGetErrorName / cudaGetErrorString, and the stand-in's
// refusals and log lines (vgpu.h).
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "vgpu/api.h"
#include "vgpu/vgpu.h"

namespace accl::vgpu {
namespace {

thread_local cudaError_t tLastError = cudaSuccess;

bool logEveryRefusal() {
  static const bool every = [] {
    const char* v = std::getenv("ACCL_VGPU_LOG");
    return v != nullptr && v[0] == '1';
  }();
  return every;
}

// True the first time `call` is named (or always with ACCL_VGPU_LOG=1).
bool firstTime(const char* call) {
  if (logEveryRefusal()) return true;
  static std::mutex mu;
  static std::set<std::string>* seen = new std::set<std::string>;  // lives past static destructors
  std::lock_guard<std::mutex> lock(mu);
  return seen->insert(call).second;
}

}  // namespace

cudaError_t setError(cudaError_t err) {
  if (err != cudaSuccess) tLastError = err;
  return err;
}

void logLine(const char* fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "accl-vgpu: %s\n", text);
}

cudaError_t failCall(const char* call, cudaError_t err, const char* fmt, ...) {
  if (firstTime(call)) {
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    logLine("%s: %s (%s)", call, text, cudaGetErrorName(err));
  }
  return setError(err);
}

cudaError_t refuse(const char* call) {
  if (firstTime(call)) logLine("%s is not implemented by the virtual GPU; it returns cudaErrorNotSupported", call);
  return setError(cudaErrorNotSupported);
}

CUresult refuseDriver(const char* call) {
  if (firstTime(call)) logLine("%s is not implemented by the virtual GPU; it returns CUDA_ERROR_NOT_SUPPORTED", call);
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace accl::vgpu

using namespace accl::vgpu;

VGPU_API cudaError_t cudaGetLastError() {
  const cudaError_t e = tLastError;
  tLastError = cudaSuccess;
  return e;
}

VGPU_API cudaError_t cudaPeekAtLastError() { return tLastError; }

VGPU_API const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define VGPU_ERROR(name) \
  case name:             \
    return #name;
#include "vgpu/error_names.inc"
#undef VGPU_ERROR
    default:
      return "cudaErrorUnknown";
  }
}

VGPU_API const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorNotSupported: return "operation not supported (by the virtual GPU)";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorIllegalState: return "operation not permitted in the current state";
    case cudaErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
    case cudaErrorHostMemoryNotRegistered: return "pointer does not correspond to a registered memory region";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled: return "peer access has not been enabled";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
    default: return cudaGetErrorName(error);
  }
}

namespace accl::vgpu {
int refuseByName(const char* call) { return int(refuse(call)); }
}  // namespace accl::vgpu
