/* The virtual GPU's stand-in for the CUDA driver library, libcuda.so.1: the device and error
 * functions that tools open libcuda for by name (NVIDIA's Inspector profiler plugin asks it for
 * the current device's UUID), each forwarded to the virtual GPU's own driver function through
 * cudaGetDriverEntryPointByVersion (vgpu/driver_entry.cc). Nothing else: the rest of the driver API is
 * reached through the runtime, as accl does. Built beside libcudart.so.13 in build/vgpu/. */
#include <stddef.h>

#include <cuda_runtime_api.h>

/* The driver's types as its ABI has them (cuda.h is not included: it renames cuDeviceGetUuid
 * to cuDeviceGetUuid_v2, and a tool may look up either name). */
typedef int DrvResult;
typedef int DrvDevice;
typedef struct { char bytes[16]; } DrvUuid;
enum { kDrvNotSupported = 801 };

#define EXPORT __attribute__((visibility("default")))

static void* lookUp(const char* name) {
  void* fn = NULL;
  enum cudaDriverEntryPointQueryResult status;
  if (cudaGetDriverEntryPointByVersion(name, &fn, CUDART_VERSION, cudaEnableDefault, &status) != cudaSuccess ||
      status != cudaDriverEntryPointSuccess)
    return NULL;
  return fn;
}

/* One forwarder: looks its function up once, answers "not supported" when the runtime has none. */
#define FORWARD(ret, name, target, params, args)                  \
  EXPORT ret name params {                                        \
    static ret(*fn) params = NULL;                                \
    if (fn == NULL) fn = (ret(*) params)lookUp(target);           \
    return fn ? fn args : (ret)kDrvNotSupported;                  \
  }

FORWARD(DrvResult, cuInit, "cuInit", (unsigned int flags), (flags))
FORWARD(DrvResult, cuDriverGetVersion, "cuDriverGetVersion", (int* version), (version))
FORWARD(DrvResult, cuDeviceGet, "cuDeviceGet", (DrvDevice* device, int ordinal), (device, ordinal))
FORWARD(DrvResult, cuDeviceGetCount, "cuDeviceGetCount", (int* count), (count))
FORWARD(DrvResult, cuDeviceGetAttribute, "cuDeviceGetAttribute", (int* value, int attribute, DrvDevice device),
        (value, attribute, device))
FORWARD(DrvResult, cuDeviceGetUuid, "cuDeviceGetUuid", (DrvUuid* uuid, DrvDevice device), (uuid, device))
FORWARD(DrvResult, cuDeviceGetUuid_v2, "cuDeviceGetUuid", (DrvUuid* uuid, DrvDevice device), (uuid, device))
FORWARD(DrvResult, cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", (char* busId, int len, DrvDevice device),
        (busId, len, device))
FORWARD(DrvResult, cuGetErrorString, "cuGetErrorString", (DrvResult error, const char** text), (error, text))
FORWARD(DrvResult, cuGetErrorName, "cuGetErrorName", (DrvResult error, const char** text), (error, text))
