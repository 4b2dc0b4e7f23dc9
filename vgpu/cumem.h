// The driver entry points vgpu/cumem.cc defines (cuInit, device queries, error strings and the
// cuMem virtual memory management family), for cudaGetDriverEntryPoint's table: they are not
// exported, as libcudart.so exports no cu* names; a program reaches them only by asking.
#pragma once

namespace accl::vgpu {

struct DriverFn {
  const char* name;  // the unversioned public name, as cudaGetDriverEntryPoint receives it ("cuMemGetAddressRange")
  void* fn;          // the definition cuda.h's macros name for it (cuMemGetAddressRange_v2)
};

extern const DriverFn kCuMemDriverFns[];
extern const int kCuMemDriverFnCount;

}  // namespace accl::vgpu
