// Host-backend dispatch from (ncclDataType_t, DevRedOp) to the typed reduction loops.
#include "device/common/reduce_buffers.h"

#include <cstring>

#include "device/common/dtypes.h"
#include "device/common/red_op_apply.h"
#include "device/common/red_ops.h"
#include "util/check.h"

namespace accl {

namespace {

// Instantiates only the step variants an op can distinguish: ops without a preOp ignore the
// preOp bits, ops without a postOp ignore kPostOp.
template <class T, class Op>
void runReduce(T* dst, const T* a, const T* b, size_t n, const Op& op, unsigned steps) {
  if constexpr (Op::kHasPreOp && Op::kHasPostOp) {
    switch (steps & (kPreOpA | kPreOpB | kPostOp)) {
      case 0: return reduceStepsInto<0>(dst, a, b, n, op);
      case 1: return reduceStepsInto<1>(dst, a, b, n, op);
      case 2: return reduceStepsInto<2>(dst, a, b, n, op);
      case 3: return reduceStepsInto<3>(dst, a, b, n, op);
      case 4: return reduceStepsInto<4>(dst, a, b, n, op);
      case 5: return reduceStepsInto<5>(dst, a, b, n, op);
      case 6: return reduceStepsInto<6>(dst, a, b, n, op);
      default: return reduceStepsInto<7>(dst, a, b, n, op);
    }
  } else if constexpr (Op::kHasPreOp) {
    switch (steps & (kPreOpA | kPreOpB)) {
      case 0: return reduceInto(dst, a, b, n, op);
      case kPreOpA: return reduceStepsInto<kPreOpA>(dst, a, b, n, op);
      case kPreOpB: return reduceStepsInto<kPreOpB>(dst, a, b, n, op);
      default: return reduceStepsInto<kPreOpA | kPreOpB>(dst, a, b, n, op);
    }
  } else if constexpr (Op::kHasPostOp) {
    if (steps & kPostOp) return reduceStepsInto<kPostOp>(dst, a, b, n, op);
    return reduceInto(dst, a, b, n, op);
  } else {
    return reduceInto(dst, a, b, n, op);
  }
}

ncclResult_t unsupported(const char* what, ncclDataType_t type, const DevRedOp& op) {
  return fail(ncclInternalError, "%s: no reduction for datatype %d (%s) with op %s (arg %llu)", what, int(type),
              dtypeName(type), devRedOpKindName(op.kind), static_cast<unsigned long long>(op.arg));
}

}  // namespace

ncclResult_t reduceBuffers(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
                           const DevRedOp& op, unsigned steps) {
  bool ok = visitDtype(type, false, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    return withRedOpFunctor<T>(op, [&](const auto& fn) {
      runReduce(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), count, fn, steps);
    });
  });
  return ok ? ncclSuccess : unsupported("reduceBuffers", type, op);
}

ncclResult_t applyPreOp(void* dst, const void* src, size_t count, ncclDataType_t type, const DevRedOp& op) {
  bool ok = visitDtype(type, false, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    return withRedOpFunctor<T>(op, [&](const auto& fn) {
      using Op = std::decay_t<decltype(fn)>;
      if constexpr (Op::kHasPreOp) {
        preOpInto(static_cast<T*>(dst), static_cast<const T*>(src), count, fn);
      } else if (dst != src && count != 0) {
        std::memcpy(dst, src, count * sizeof(T));
      }
    });
  });
  return ok ? ncclSuccess : unsupported("applyPreOp", type, op);
}

ncclResult_t applyPostOp(void* dst, const void* src, size_t count, ncclDataType_t type, const DevRedOp& op) {
  bool ok = visitDtype(type, false, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    return withRedOpFunctor<T>(op, [&](const auto& fn) {
      using Op = std::decay_t<decltype(fn)>;
      if constexpr (Op::kHasPostOp) {
        postOpInto(static_cast<T*>(dst), static_cast<const T*>(src), count, fn);
      } else if (dst != src && count != 0) {
        std::memcpy(dst, src, count * sizeof(T));
      }
    });
  });
  return ok ? ncclSuccess : unsupported("applyPostOp", type, op);
}

}  // namespace accl
