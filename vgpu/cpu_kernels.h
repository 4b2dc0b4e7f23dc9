// The kernels the virtual GPU can run: CPU builds of CUDA kernels, found by the kernel's name when
// an nvcc-built program registers it (kernels.cc). Each runs on the CPU SIMT harness
// (src/device/simt/cpu_harness.h) with the launch's real shape.
#pragma once

#include <cstddef>
#include <string>

namespace accl::vgpu {

struct CpuKernel {
  const char* name;       // demangled, anonymous namespaces removed: "accl::commKernel(accl::KernelArgs)"
  size_t paramBytes;      // the size of its parameters, copied at launch
  int maxThreadsPerBlock; // __launch_bounds__ (1024 without)
  int registers;          // per thread, what ptxas gives the CUDA build (occupancy)
  // Runs one GPU thread of the launch (indices from the harness) on the copied parameters.
  void (*thread)(const void* params);
};

// The kernel named `canonicalName`, null when the stand-in has no CPU build of it.
const CpuKernel* findCpuKernel(const std::string& canonicalName);
// Every kernel the stand-in knows (for messages).
std::string knownCpuKernels();

}  // namespace accl::vgpu
