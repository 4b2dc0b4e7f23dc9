// Host-side entry to cuda_prims_kernels.cu: ring all-reduce through the CUDA Prims with one
// block per rank on one GPU (the cases tests/simt/cuda_prims_ring_test.cc and
// cuda_prims_order_test.cc run on the CPU harness), judged the same way.
#pragma once

#include <cstddef>
#include <string>

#include "device/common/ids.h"

namespace accl::gputest {

enum class PrimsElem { kFloat, kUint8, kDouble };

// Element type and op of a bit-for-bit check against the host backend's reduction order.
enum class PrimsOrderCase {
  kFloatSum,
  kFloatPreMulSum,
  kDoubleProd,
  kHalfSum,
  kBf16Sum,
  kBf16Min,
  kFp8E4M3Sum,
  kFp8E5M2PreMulSum,
  kInt32SumPostDiv,
};

struct PrimsRingOutcome {
  bool ran = false;   // false: no CUDA device
  std::string error;  // "" when every element and guard matched
};

// Closed-form sums (rank r contributes (r + 1) * ((i % 13) + 1)).
PrimsRingOutcome runPrimsRingAllReduceOnDevice(PrimsElem elem, int nranks, ProtoId proto, size_t count, bool inPlace);

// Point-to-point (device/cuda/p2p_batch.h): two blocks, each receiving `bytes` from the other
// before sending `bytes` to it in the same batch (sends and receives on separate warp groups).
PrimsRingOutcome runPrimsP2pExchangeOnDevice(ProtoId proto, size_t bytes, int blockThreads);

// Random inputs; every rank's result must equal the host backend's ring-order value bit for bit.
PrimsRingOutcome runPrimsHostOrderOnDevice(PrimsOrderCase c, int nranks, ProtoId proto, size_t count);

}  // namespace accl::gputest
