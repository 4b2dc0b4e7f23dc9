// Host-side entry to the device-primitives checks of simt_kernels.cu: each runs one kernel of
// tests/simt/simt_test_kernels.h on the GPU and judges it as the CPU test does.
#pragma once

#include <cstdint>
#include <string>

namespace accl::simttest {

enum class SimtGpuCheck { kIndices, kWarpOps, kNamedBarriers, kVectorCopy, kHandoff, kLLWord, kLLLine, kLL128, kSmoke };

struct SimtGpuOutcome {
  bool ran = false;     // false: no CUDA device (the test skips)
  uint32_t errors = 0;  // mismatches the kernel counted or the host found
  std::string detail;   // CUDA error or timeout, empty when none
};

// Runs `check` on device 0; a kernel still spinning after 20 s is stopped through its abort
// flag and reported in `detail`.
SimtGpuOutcome runSimtCheckOnDevice(SimtGpuCheck check);

}  // namespace accl::simttest
