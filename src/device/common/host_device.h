// Qualifiers for code shared by the host backend (plain g++ translation units) and the CUDA
// backend (nvcc). Everything under src/device/common/ that runs per element is written once with
// these macros and must not include CUDA headers itself.
#pragma once

#include <cstring>

#if defined(__CUDACC__)
#define ACCL_HOST_DEVICE __host__ __device__
#define ACCL_INLINE __forceinline__
#else
#define ACCL_HOST_DEVICE
#define ACCL_INLINE inline __attribute__((always_inline))
#endif

// True while nvcc compiles the device side of a translation unit (selects PTX fast paths).
#if defined(__CUDA_ARCH__)
#define ACCL_DEVICE_PASS 1
#else
#define ACCL_DEVICE_PASS 0
#endif

namespace accl {

// Reinterprets the bytes of `from` as a `To` of the same size. memcpy is what both g++ and nvcc
// (host and device side) turn into a plain register move; std::bit_cast is not usable on device.
template <class To, class From>
ACCL_HOST_DEVICE ACCL_INLINE To bitsAs(From from) {
  static_assert(sizeof(To) == sizeof(From), "bitsAs needs types of equal size");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

}  // namespace accl
