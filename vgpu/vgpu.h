// The virtual GPU's shared vocabulary: what every part of the stand-in CUDA runtime
// (libcudart.so.13 built by the target accl-vgpu, see vgpu/README.md) needs from the others —
// the calling thread's error state, the device table, the refusal of calls the stand-in does not
// implement, and the stream-capture rule for calls that are forbidden while a capture runs.
//
// Internal to the stand-in: nothing here is exported (vgpu/libcudart.map exports the CUDA names).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace accl::vgpu {

// ---- errors -------------------------------------------------------------------------------------

// Records `err` as the calling thread's last error (cudaGetLastError / cudaPeekAtLastError) when it
// is not cudaSuccess, and returns it: `return setError(cudaErrorInvalidValue);`.
cudaError_t setError(cudaError_t err);
// Like setError, and logs one line naming the call and why (ACCL_VGPU_LOG=1 logs every refusal;
// by default only the first of each call).
cudaError_t failCall(const char* call, cudaError_t err, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
// What the stand-in does not implement: logs "accl-vgpu: <call> is not implemented by the virtual
// GPU" once per call name and returns cudaErrorNotSupported. Never a silent success.
cudaError_t refuse(const char* call);
// The driver API's twin: CUDA_ERROR_NOT_SUPPORTED.
CUresult refuseDriver(const char* call);
// One line on stderr, prefixed "accl-vgpu: ".
void logLine(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// ---- devices ------------------------------------------------------------------------------------

// One virtual device: an H100-like description, only with fewer SMs.
struct DeviceInfo {
  int ordinal = 0;
  int smCount = 8;                     // ACCL_VGPU_SMS
  int blocksPerSmAt512 = 1;            // residency of a 512-thread block (128 registers per thread)
  size_t memoryBytes = size_t{80} << 30;  // what cudaMemGetInfo / totalGlobalMem report
  char busId[32] = {};                 // "0000:1X:00.0"
  unsigned char uuid[16] = {};         // stable per (host, ordinal)
};

// ACCL_VGPU_COUNT devices (default 2), read once.
int deviceCount();
// Null for an ordinal out of range.
const DeviceInfo* device(int ordinal);
// The calling thread's current device (cudaSetDevice; 0 until set).
int currentDevice();
// cudaDeviceGetAttribute's answer for `attr` (a cudaDeviceAttr; CUdevice_attribute shares the
// numbering for every attribute asked here) on `ordinal`; cudaErrorInvalidDevice /
// cudaErrorInvalidValue (not recorded) when either is unknown.
cudaError_t deviceAttribute(int ordinal, int attr, int* value);

// What CUDA's implicit device synchronisation does (cudaFree, cudaFreeHost, cudaHostUnregister,
// cudaIpcCloseMemHandle, ...): waits until every stream of `ordinal` in this process is idle — so a
// rank that frees memory while another rank's kernel waits for it deadlocks here as on a GPU.
void syncDeviceImplicit(int ordinal);

// ---- stream capture -----------------------------------------------------------------------------

// To be called first by every runtime call that CUDA forbids while a stream capture could observe
// it (allocation, synchronous copy or set, device or stream synchronisation, host registration,
// ...). Returns cudaSuccess when the calling thread may go on. Otherwise — a global-mode capture
// runs in any thread and this thread's mode is global, or a capture of this thread runs and this
// thread's mode is thread-local — it invalidates those captures (their cudaStreamEndCapture then
// fails with cudaErrorStreamCaptureInvalidated) and returns cudaErrorStreamCaptureUnsupported,
// already recorded as the thread's last error.
cudaError_t checkCaptureForbidden(const char* call);

// ---- memory (vgpu/memory.cc) --------------------------------------------------------------------

// What a pointer's allocation is.
enum class MemKind {
  kDevice,          // cudaMalloc / cuMem mapping: device memory of `device`
  kHostPinned,      // cudaHostAlloc / cudaMallocHost: page-locked host memory, mapped for devices
  kHostRegistered,  // cudaHostRegister'd user memory
  kIpcMapped,       // another process's device memory opened through cudaIpcOpenMemHandle
};

struct MemRange {
  const char* base = nullptr;
  size_t bytes = 0;
  MemKind kind = MemKind::kDevice;
  int device = 0;
};

// The allocation that contains [p, p + bytes) (bytes may be 0: p only); false when none does.
bool findRange(const void* p, size_t bytes, MemRange* out);

// Moves `bytes` from `src` to `dst` as cudaMemcpy*(kind) would, checking both sides: a device
// side must lie inside one device allocation (cudaErrorInvalidValue otherwise, as the runtime
// answers); cudaMemcpyDefault infers the direction. Runs synchronously on the calling thread: the
// stream layer decides when.
cudaError_t copyChecked(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* call);
// Sets `bytes` at `dst` (device memory) to `value`, checked as copyChecked checks.
cudaError_t setChecked(void* dst, int value, size_t bytes, const char* call);

}  // namespace accl::vgpu
