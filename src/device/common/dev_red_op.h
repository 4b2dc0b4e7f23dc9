// DevRedOp: the reduction a backend executes, after the user's ncclRedOp_t has been resolved
// for one datatype and communicator size. Built-in ops map as follows (NCCL's semantics):
//   ncclSum  -> kSum          ncclProd -> kProd        ncclMax -> kMax      ncclMin -> kMin
//   ncclAvg  -> kPreMulSum with scalar T(float(1.0/nRanks)) for floating types (double: 1.0/nRanks)
//            -> kSumPostDiv with divisor nRanks for integer types
//   user op from ncclRedOpCreatePreMulSum -> kPreMulSum with the user's scalar (value or pointer)
// The descriptor is a trivially copyable value that travels inside work items to either backend.
#pragma once

#include <cstdint>

#include "device/common/host_device.h"
#include "nccl.h"

namespace accl {

enum class DevRedOpKind : uint8_t {
  kSum = 0,
  kProd = 1,
  kMax = 2,
  kMin = 3,
  kPreMulSum = 4,   // each contribution is multiplied by the scalar once, then everything is summed
  kSumPostDiv = 5,  // integers only: sum, then the final value is divided by `arg`
};

struct DevRedOp {
  DevRedOpKind kind = DevRedOpKind::kSum;
  // kPreMulSum only: `arg` holds the address of one element of the op's type, read when the
  // reduction runs (ncclScalarDevice). Otherwise `arg` holds the scalar's bytes in its low bytes.
  bool scalarIsPtr = false;
  // kPreMulSum: the scalar (bytes of one element, rest zero) or its address.
  // kSumPostDiv: the divisor (nRanks, >= 1). Unused by the other kinds (0).
  uint64_t arg = 0;

  friend ACCL_HOST_DEVICE bool operator==(const DevRedOp& a, const DevRedOp& b) {
    return a.kind == b.kind && a.scalarIsPtr == b.scalarIsPtr && a.arg == b.arg;
  }
  friend ACCL_HOST_DEVICE bool operator!=(const DevRedOp& a, const DevRedOp& b) { return !(a == b); }
};

const char* devRedOpKindName(DevRedOpKind kind);

// The built-in op a network/in-switch reduction sees for this descriptor: contributions of
// kPreMulSum are already scaled and kSumPostDiv divides only at the end, so both are plain sums.
ncclRedOp_t devRedOpNetOp(const DevRedOp& op);

// Resolves a built-in ncclRedOp_t (ncclSum..ncclAvg) for `type` on a communicator of `nRanks`.
// Fails with ncclInvalidArgument for a non-built-in op, an invalid type or nRanks < 1.
ncclResult_t makeDevRedOp(ncclRedOp_t op, ncclDataType_t type, int nRanks, DevRedOp* out);

// A PreMulSum descriptor for `type`. With scalarIsPtr the pointer itself is kept and read when
// the reduction runs; otherwise the element `scalar` points to is copied now (dtypeSize bytes).
ncclResult_t makePreMulSum(ncclDataType_t type, const void* scalar, bool scalarIsPtr, DevRedOp* out);

}  // namespace accl
