// Resolution of built-in reduction ops and PreMulSum scalars into DevRedOp descriptors.
#include "device/common/dev_red_op.h"

#include <cstring>

#include "device/common/dtypes.h"
#include "util/check.h"

namespace accl {

const char* devRedOpKindName(DevRedOpKind kind) {
  switch (kind) {
    case DevRedOpKind::kSum: return "Sum";
    case DevRedOpKind::kProd: return "Prod";
    case DevRedOpKind::kMax: return "Max";
    case DevRedOpKind::kMin: return "Min";
    case DevRedOpKind::kPreMulSum: return "PreMulSum";
    case DevRedOpKind::kSumPostDiv: return "SumPostDiv";
  }
  return "invalid";
}

ncclRedOp_t devRedOpNetOp(const DevRedOp& op) {
  switch (op.kind) {
    case DevRedOpKind::kProd: return ncclProd;
    case DevRedOpKind::kMax: return ncclMax;
    case DevRedOpKind::kMin: return ncclMin;
    default: return ncclSum;
  }
}

namespace {

// ncclAvg's scalar on a floating type: 1/nRanks computed in double, rounded to float, then to
// the element type (double keeps the double quotient). Returned as the element's bytes.
uint64_t avgScalarBytes(ncclDataType_t type, int nRanks) {
  float inv = float(1.0 / nRanks);
  uint64_t bytes = 0;
  auto store = [&bytes](const auto& v) { std::memcpy(&bytes, &v, sizeof(v)); };
  switch (type) {
    case ncclFloat16: store(Half::fromFloat(inv)); break;
    case ncclBfloat16: store(Bf16::fromFloat(inv)); break;
    case ncclFloat8e4m3: store(Fp8E4M3::fromFloat(inv)); break;
    case ncclFloat8e5m2: store(Fp8E5M2::fromFloat(inv)); break;
    case ncclFloat32: store(inv); break;
    case ncclFloat64: store(1.0 / nRanks); break;
    default: break;
  }
  return bytes;
}

}  // namespace

ncclResult_t makeDevRedOp(ncclRedOp_t op, ncclDataType_t type, int nRanks, DevRedOp* out) {
  if (out == nullptr) return fail(ncclInternalError, "makeDevRedOp: null output descriptor");
  if (!dtypeValid(type)) return fail(ncclInvalidArgument, "makeDevRedOp: invalid datatype %d", int(type));
  if (nRanks < 1) return fail(ncclInvalidArgument, "makeDevRedOp: invalid number of ranks %d", nRanks);
  DevRedOp d;
  switch (int(op)) {
    case ncclSum: d.kind = DevRedOpKind::kSum; break;
    case ncclProd: d.kind = DevRedOpKind::kProd; break;
    case ncclMax: d.kind = DevRedOpKind::kMax; break;
    case ncclMin: d.kind = DevRedOpKind::kMin; break;
    case ncclAvg:
      if (dtypeIsFloat(type)) {
        d.kind = DevRedOpKind::kPreMulSum;
        d.arg = avgScalarBytes(type, nRanks);
      } else {
        d.kind = DevRedOpKind::kSumPostDiv;
        d.arg = uint64_t(nRanks);
      }
      break;
    default:
      return fail(ncclInvalidArgument, "makeDevRedOp: reduction operation %d is not a built-in op", int(op));
  }
  *out = d;
  return ncclSuccess;
}

ncclResult_t makePreMulSum(ncclDataType_t type, const void* scalar, bool scalarIsPtr, DevRedOp* out) {
  if (out == nullptr) return fail(ncclInternalError, "makePreMulSum: null output descriptor");
  if (!dtypeValid(type)) return fail(ncclInvalidArgument, "makePreMulSum: invalid datatype %d", int(type));
  if (scalar == nullptr) return fail(ncclInvalidArgument, "makePreMulSum: scalar pointer is NULL");
  DevRedOp d;
  d.kind = DevRedOpKind::kPreMulSum;
  d.scalarIsPtr = scalarIsPtr;
  if (scalarIsPtr) {
    d.arg = uint64_t(reinterpret_cast<uintptr_t>(scalar));
  } else {
    std::memcpy(&d.arg, scalar, dtypeSize(type));
  }
  *out = d;
  return ncclSuccess;
}

}  // namespace accl
