// Host entry points of red_ops_kernels.cu: run the shared reduction functors and conversions
// on a CUDA device, so red_ops_gpu_test.cc (a plain C++ file) can compare them with the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "device/common/dev_red_op.h"
#include "nccl.h"

namespace accl::gputest {

// Number of usable CUDA devices (0 when the driver or a device is missing).
int deviceCount();

// dst[i] = [postOp] op(a[i], [preOp] b[i]) on the device for `count` elements of `type`, with
// `steps` a mask of ReduceStep bits (only kPreOpB and kPostOp are honoured). Host buffers in and
// out. A pointer-resident PreMulSum scalar must point to host memory; it is copied to the device
// and the descriptor rewritten to point there. Returns an empty string or the error text.
std::string deviceReduce(ncclDataType_t type, const DevRedOp& op, unsigned steps, const void* a, const void* b,
                         void* dst, size_t count);

// Converts every float of `in` on the device into each narrow format (fp8 with saturation) and
// every narrow bit pattern `pattern` in [0, 65536) back to float.
struct DeviceConversions {
  uint16_t* half;      // [n] float -> half bits
  uint16_t* bf16;      // [n] float -> bf16 bits
  uint8_t* e4m3;       // [n] float -> e4m3 bits
  uint8_t* e5m2;       // [n] float -> e5m2 bits
  float* halfToFloat;  // [65536] half pattern -> float
  float* bf16ToFloat;  // [65536] bf16 pattern -> float
  float* e4m3ToFloat;  // [256]
  float* e5m2ToFloat;  // [256]
};
std::string deviceConvert(const float* in, size_t n, const DeviceConversions& out);

}  // namespace accl::gputest
