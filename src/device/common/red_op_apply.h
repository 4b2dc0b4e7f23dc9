// Element loops over the reduction functors of red_ops.h, and the switch that turns a runtime
// DevRedOp into a typed functor. Shared by the host backend and CUDA kernels (a kernel calls
// these on its own slice of the elements).
//
// Step order for schedules that reduce chunk by chunk (ring, tree), matching NCCL:
//   * A rank's own input enters the reduction through preOp exactly once: the first send of
//     the local chunk sends preOp(x); a reduce step that adds the local input computes
//     reduce(incoming, preOp(local)) (flag kPreOpB below, with b = the local input).
//   * Incoming data is already pre-op'd by the rank that sent it, so it is never pre-op'd again.
//   * The rank that produces the final value applies postOp once (kPostOp) before storing it and
//     before forwarding it to ranks that only copy. With one rank the result is postOp(preOp(x)).
// Hence PreMulSum multiplies every rank's contribution by the scalar once (ncclAvg on floats:
// by 1/nRanks) before summation, and SumPostDiv divides the complete integer sum once.
#pragma once

#include <cstddef>

#include "device/common/dev_red_op.h"
#include "device/common/host_device.h"
#include "device/common/red_ops.h"

namespace accl {

// Which extra steps a reduce applies around `reduce(a, b)`.
enum ReduceStep : unsigned {
  kReducePlain = 0u,
  kPreOpA = 1u,  // a[i] is a rank's own input: apply preOp before combining
  kPreOpB = 2u,  // b[i] is a rank's own input: apply preOp before combining
  kPostOp = 4u,  // the combined value is final: apply postOp before storing
};

// dst[i] = op(a[i], b[i]) for i in [0, n). dst may be a or b (in place), but must not partially
// overlap them.
template <class T, class Op>
ACCL_HOST_DEVICE void reduceInto(T* dst, const T* a, const T* b, size_t n, const Op& op) {
  for (size_t i = 0; i < n; ++i) dst[i] = op(a[i], b[i]);
}

// [postOp] op([preOp] x, [preOp] y) with the steps chosen by kSteps (ReduceStep bits).
template <unsigned kSteps, class T, class Op>
ACCL_HOST_DEVICE ACCL_INLINE T reduceElem(T x, T y, const Op& op) {
  if constexpr ((kSteps & kPreOpA) && Op::kHasPreOp) x = op.preOp(x);
  if constexpr ((kSteps & kPreOpB) && Op::kHasPreOp) y = op.preOp(y);
  T r = op(x, y);
  if constexpr ((kSteps & kPostOp) && Op::kHasPostOp) r = op.postOp(r);
  return r;
}

// dst[i] = reduceElem<kSteps>(a[i], b[i]); the same aliasing rules as reduceInto.
template <unsigned kSteps, class T, class Op>
ACCL_HOST_DEVICE void reduceStepsInto(T* dst, const T* a, const T* b, size_t n, const Op& op) {
  for (size_t i = 0; i < n; ++i) dst[i] = reduceElem<kSteps>(a[i], b[i], op);
}

// dst[i] = op.preOp(src[i]): a rank's own input as it first leaves the rank (copy of a
// contribution that is sent before anything was reduced into it).
template <class T, class Op>
ACCL_HOST_DEVICE void preOpInto(T* dst, const T* src, size_t n, const Op& op) {
  for (size_t i = 0; i < n; ++i) dst[i] = op.preOp(src[i]);
}

// dst[i] = op.postOp(src[i]): the final result.
template <class T, class Op>
ACCL_HOST_DEVICE void postOpInto(T* dst, const T* src, size_t n, const Op& op) {
  for (size_t i = 0; i < n; ++i) dst[i] = op.postOp(src[i]);
}

// Builds the functor for `op` on element type T (reading a pointer-resident scalar now) and
// calls f(functor). Returns false, without calling f, for a combination no backend supports:
// kSumPostDiv on a floating type or with divisor 0, or an unknown kind.
template <class T, class F>
ACCL_HOST_DEVICE bool withRedOpFunctor(const DevRedOp& op, F&& f) {
  switch (op.kind) {
    case DevRedOpKind::kSum: f(RedSum<T>{}); return true;
    case DevRedOpKind::kProd: f(RedProd<T>{}); return true;
    case DevRedOpKind::kMax: f(RedMax<T>{}); return true;
    case DevRedOpKind::kMin: f(RedMin<T>{}); return true;
    case DevRedOpKind::kPreMulSum: f(RedPreMulSum<T>{loadRedOpScalar<T>(op)}); return true;
    case DevRedOpKind::kSumPostDiv:
      if constexpr (kIsIntElem<T>) {
        if (op.arg == 0) return false;
        f(RedSumPostDiv<T>{op.arg});
        return true;
      } else {
        return false;
      }
  }
  return false;
}

}  // namespace accl
