// What refused_calls.py's generated file needs: a definition per refused runtime function that
// names the call once and returns cudaErrorNotSupported. No CUDA header here: the refusals must
// not meet the real declarations (their parameter lists differ on purpose, see refused_calls.py).
#pragma once

namespace accl::vgpu {
int refuseByName(const char* call);  // errors.cc: refuse(call) as an int
}

#define VGPU_REFUSED(name) \
  extern "C" __attribute__((visibility("default"))) int name() { return accl::vgpu::refuseByName(#name); }
