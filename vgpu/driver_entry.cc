// cudaGetDriverEntryPoint(ByVersion): how programs (accl's cuMem code, plugins) reach the driver
// API without linking libcuda. The virtual GPU's driver functions (cumem.cc) are found by their
// public name; any other name is "not found" — and said once, so a missing entry point is never
// a silent difference from a real driver.
#include <cstring>

#include "vgpu/api.h"
#include "vgpu/cumem.h"
#include "vgpu/vgpu.h"

namespace accl::vgpu {
namespace {

void* findDriverFn(const char* symbol) {
  for (int i = 0; i < kCuMemDriverFnCount; ++i)
    if (std::strcmp(kCuMemDriverFns[i].name, symbol) == 0) return kCuMemDriverFns[i].fn;
  return nullptr;
}

cudaError_t entryPoint(const char* symbol, void** fn, cudaDriverEntryPointQueryResult* status, const char* call) {
  if (symbol == nullptr || fn == nullptr) return setError(cudaErrorInvalidValue);
  *fn = findDriverFn(symbol);
  if (status) *status = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  if (*fn == nullptr) {
    failCall(call, cudaErrorSymbolNotFound, "the virtual GPU has no driver entry point %s", symbol);
    cudaGetLastError();  // the status says it; CUDA does not record a missing symbol as an error
  }
  return cudaSuccess;
}

}  // namespace
}  // namespace accl::vgpu

using namespace accl::vgpu;

VGPU_API cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long,
                                             cudaDriverEntryPointQueryResult* status) {
  return entryPoint(symbol, fn, status, "cudaGetDriverEntryPoint");
}

VGPU_API cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int, unsigned long long,
                                                      cudaDriverEntryPointQueryResult* status) {
  return entryPoint(symbol, fn, status, "cudaGetDriverEntryPointByVersion");
}
