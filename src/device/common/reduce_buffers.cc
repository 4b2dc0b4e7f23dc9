// Host-backend dispatch from (ncclDataType_t, DevRedOp) to the typed reduction loops.
#include "device/common/reduce_buffers.h"

#include <cstring>

#include "device/common/dtypes.h"
#include "device/common/red_op_apply.h"
#include "device/common/red_ops.h"
#include "util/check.h"

namespace accl {

namespace {

// One loop per aliasing case that reduceInto's contract allows (dst is a, dst is b, or neither
// overlaps), each with restrict-qualified pointers: the compiler vectorizes all of them without a
// runtime overlap check, which the in-place calls of the Prims (dst == a) would fail.
template <unsigned kSteps, class T, class Op>
void loopDisjoint(T* __restrict dst, const T* __restrict a, const T* __restrict b, size_t n, const Op& op) {
  for (size_t i = 0; i < n; ++i) dst[i] = reduceElem<kSteps>(a[i], b[i], op);
}

template <unsigned kSteps, class T, class Op>
void loopIntoA(T* __restrict dst, const T* __restrict b, size_t n, const Op& op) {
  for (size_t i = 0; i < n; ++i) dst[i] = reduceElem<kSteps>(dst[i], b[i], op);
}

template <unsigned kSteps, class T, class Op>
void loopIntoB(T* __restrict dst, const T* __restrict a, size_t n, const Op& op) {
  for (size_t i = 0; i < n; ++i) dst[i] = reduceElem<kSteps>(a[i], dst[i], op);
}

template <unsigned kSteps, class T, class Op>
void reduceStepsLoop(T* dst, const T* a, const T* b, size_t n, const Op& op) {
  if (dst == a && dst == b) return reduceStepsInto<kSteps>(dst, a, b, n, op);
  if (dst == a) return loopIntoA<kSteps>(dst, b, n, op);
  if (dst == b) return loopIntoB<kSteps>(dst, a, n, op);
  return loopDisjoint<kSteps>(dst, a, b, n, op);
}

// Instantiates only the step variants an op can distinguish: ops without a preOp ignore the
// preOp bits, ops without a postOp ignore kPostOp.
template <class T, class Op>
void runReduce(T* dst, const T* a, const T* b, size_t n, const Op& op, unsigned steps) {
  if constexpr (Op::kHasPreOp && Op::kHasPostOp) {
    switch (steps & (kPreOpA | kPreOpB | kPostOp)) {
      case 0: return reduceStepsLoop<0>(dst, a, b, n, op);
      case 1: return reduceStepsLoop<1>(dst, a, b, n, op);
      case 2: return reduceStepsLoop<2>(dst, a, b, n, op);
      case 3: return reduceStepsLoop<3>(dst, a, b, n, op);
      case 4: return reduceStepsLoop<4>(dst, a, b, n, op);
      case 5: return reduceStepsLoop<5>(dst, a, b, n, op);
      case 6: return reduceStepsLoop<6>(dst, a, b, n, op);
      default: return reduceStepsLoop<7>(dst, a, b, n, op);
    }
  } else if constexpr (Op::kHasPreOp) {
    switch (steps & (kPreOpA | kPreOpB)) {
      case 0: return reduceStepsLoop<kReducePlain>(dst, a, b, n, op);
      case kPreOpA: return reduceStepsLoop<kPreOpA>(dst, a, b, n, op);
      case kPreOpB: return reduceStepsLoop<kPreOpB>(dst, a, b, n, op);
      default: return reduceStepsLoop<kPreOpA | kPreOpB>(dst, a, b, n, op);
    }
  } else if constexpr (Op::kHasPostOp) {
    if (steps & kPostOp) return reduceStepsLoop<kPostOp>(dst, a, b, n, op);
    return reduceStepsLoop<kReducePlain>(dst, a, b, n, op);
  } else {
    return reduceStepsLoop<kReducePlain>(dst, a, b, n, op);
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
