// Per-element arithmetic of every element type and the reduction functors built on it
// (RedSum, RedProd, RedMax, RedMin, RedPreMulSum, RedSumPostDiv), shared by both backends.
//
// Semantics (NCCL's, made explicit):
//   * Integers wrap modulo 2^bits on Sum, Prod and PreMulSum (signed types behave exactly as
//     their unsigned twins would, no undefined overflow). Max/Min compare signed or unsigned
//     according to the type.
//   * float and double compute natively (IEEE, round to nearest even), one rounding per add and
//     per multiply: never contracted into a fused multiply-add (device code uses the explicitly
//     rounded intrinsics; host code is built in ISO C++ mode, where GCC does not contract).
//   * Half, Bf16, Fp8E4M3, Fp8E5M2: every binary step converts both operands to float (exact),
//     computes in float and rounds the result back to the element type (nearest even; fp8
//     saturates to +-max finite). One rounding per step, as NCCL does per step. For half and
//     bf16 this equals the natively rounded __hadd/__hmul, and for fp8 it equals NCCL's route
//     through half (float's 24 bits and half's 11 bits are both wide enough that the intermediate
//     rounding never changes the final one; red_ops_test checks all fp8 pairs).
//   * Max/Min on floating types follow IEEE 754-2019 maximumNumber/minimumNumber, like fmaxf
//     and __hmax: a NaN operand is ignored (the other operand is returned), two NaNs give the
//     canonical NaN, and -0 < +0 (max(+0,-0) = +0, min(+0,-0) = -0). The result is one of the
//     operands unchanged (no re-rounding).
//
// Functor contract (what a Prims or a host loop relies on):
//   reduce:  T operator()(T a, T b)  -- combine two partial results; associative up to rounding.
//   preOp:   T preOp(T x)            -- applied exactly once to each rank's own contribution as it
//                                       enters the reduction (PreMulSum: x * scalar, rounded to T).
//   postOp:  T postOp(T x)           -- applied exactly once to the fully reduced value
//                                       (SumPostDiv: x / divisor, truncating toward zero).
//   kHasPreOp / kHasPostOp say whether preOp / postOp are not the identity.
// So for n ranks with inputs x_r the result is postOp(reduce(preOp(x_0), ..., preOp(x_{n-1}))).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "device/common/dev_red_op.h"
#include "device/common/dtypes.h"
#include "device/common/host_device.h"

namespace accl {

namespace elemdetail {

ACCL_HOST_DEVICE ACCL_INLINE bool signBit(float v) { return bitsAs<uint32_t>(v) >> 31; }
ACCL_HOST_DEVICE ACCL_INLINE bool signBit(double v) { return bitsAs<uint64_t>(v) >> 63; }
template <class T>
ACCL_HOST_DEVICE ACCL_INLINE bool signBit(T v) {
  return (v.bits >> (8 * sizeof(v.bits) - 1)) & 1u;
}

template <class T>
ACCL_HOST_DEVICE ACCL_INLINE bool isNan(T v) {
  if constexpr (kIsNarrowFloat<T>) return v.isNan();
  else return v != v;
}

template <class T>
ACCL_HOST_DEVICE ACCL_INLINE T canonicalNan() {
  if constexpr (kIsNarrowFloat<T>) return T::canonicalNan();
  else if constexpr (std::is_same_v<T, float>) return bitsAs<float>(kFloatCanonicalNanBits);
  else return bitsAs<double>(uint64_t(0x7fffffffffffffffull));
}

template <class T>
ACCL_HOST_DEVICE ACCL_INLINE auto wide(T v) {
  if constexpr (kIsNarrowFloat<T>) return v.toFloat();
  else return v;
}

// maximumNumber (kMax) / minimumNumber (!kMax) on a floating element type.
template <bool kMax, class T>
ACCL_HOST_DEVICE ACCL_INLINE T pickNumber(T a, T b) {
  bool aNan = isNan(a), bNan = isNan(b);
  if (aNan || bNan) return aNan && bNan ? canonicalNan<T>() : (aNan ? b : a);
  auto wa = wide(a), wb = wide(b);
  if (wa == wb) {  // equal values; only the signs of two zeros can differ
    bool aNeg = signBit(a);
    return kMax ? (aNeg ? b : a) : (aNeg ? a : b);
  }
  return ((wa < wb) == kMax) ? b : a;
}

}  // namespace elemdetail

template <class T>
ACCL_HOST_DEVICE ACCL_INLINE T elemAdd(T a, T b) {
  if constexpr (kIsNarrowFloat<T>) {
    return T::fromFloat(a.toFloat() + b.toFloat());
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return T(U(U(a) + U(b)));
  } else {
#if ACCL_DEVICE_PASS
    // Explicitly rounded device intrinsics: nvcc may not fuse them into an FMA with a
    // neighbouring multiply (PreMulSum), so device results stay bit-identical to the host's.
    if constexpr (std::is_same_v<T, float>) return __fadd_rn(a, b);
    else return __dadd_rn(a, b);
#else
    return a + b;
#endif
  }
}

template <class T>
ACCL_HOST_DEVICE ACCL_INLINE T elemMul(T a, T b) {
  if constexpr (kIsNarrowFloat<T>) {
    return T::fromFloat(a.toFloat() * b.toFloat());
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    // Promote 8-bit operands through unsigned int so the product cannot overflow int.
    using P = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return T(U(P(U(a)) * P(U(b))));
  } else {
#if ACCL_DEVICE_PASS
    if constexpr (std::is_same_v<T, float>) return __fmul_rn(a, b);
    else return __dmul_rn(a, b);
#else
    return a * b;
#endif
  }
}

template <class T>
ACCL_HOST_DEVICE ACCL_INLINE T elemMax(T a, T b) {
  if constexpr (std::is_integral_v<T>) return a < b ? b : a;
  else return elemdetail::pickNumber<true>(a, b);
}

template <class T>
ACCL_HOST_DEVICE ACCL_INLINE T elemMin(T a, T b) {
  if constexpr (std::is_integral_v<T>) return b < a ? b : a;
  else return elemdetail::pickNumber<false>(a, b);
}

// Integer division truncating toward zero (C semantics) by a positive divisor < 2^31.
template <class T>
ACCL_HOST_DEVICE ACCL_INLINE T elemDivTrunc(T x, uint64_t divisor) {
  static_assert(std::is_integral_v<T>, "elemDivTrunc is for integer types");
  if constexpr (std::is_signed_v<T>) return T(int64_t(x) / int64_t(divisor));
  else return T(uint64_t(x) / divisor);
}

// ---- functors -----------------------------------------------------------------------------------

template <class T>
struct RedSum {
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  ACCL_HOST_DEVICE ACCL_INLINE T operator()(T a, T b) const { return elemAdd(a, b); }
  ACCL_HOST_DEVICE ACCL_INLINE T preOp(T x) const { return x; }
  ACCL_HOST_DEVICE ACCL_INLINE T postOp(T x) const { return x; }
};

template <class T>
struct RedProd {
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  ACCL_HOST_DEVICE ACCL_INLINE T operator()(T a, T b) const { return elemMul(a, b); }
  ACCL_HOST_DEVICE ACCL_INLINE T preOp(T x) const { return x; }
  ACCL_HOST_DEVICE ACCL_INLINE T postOp(T x) const { return x; }
};

template <class T>
struct RedMax {
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  ACCL_HOST_DEVICE ACCL_INLINE T operator()(T a, T b) const { return elemMax(a, b); }
  ACCL_HOST_DEVICE ACCL_INLINE T preOp(T x) const { return x; }
  ACCL_HOST_DEVICE ACCL_INLINE T postOp(T x) const { return x; }
};

template <class T>
struct RedMin {
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  ACCL_HOST_DEVICE ACCL_INLINE T operator()(T a, T b) const { return elemMin(a, b); }
  ACCL_HOST_DEVICE ACCL_INLINE T preOp(T x) const { return x; }
  ACCL_HOST_DEVICE ACCL_INLINE T postOp(T x) const { return x; }
};

// Sum of scaled contributions. The scalar is a resolved value: a device-resident scalar
// (DevRedOp::scalarIsPtr) is read once by loadRedOpScalar before the reduction loop.
template <class T>
struct RedPreMulSum {
  T scalar;
  static constexpr bool kHasPreOp = true;
  static constexpr bool kHasPostOp = false;
  ACCL_HOST_DEVICE ACCL_INLINE T operator()(T a, T b) const { return elemAdd(a, b); }
  ACCL_HOST_DEVICE ACCL_INLINE T preOp(T x) const { return elemMul(x, scalar); }
  ACCL_HOST_DEVICE ACCL_INLINE T postOp(T x) const { return x; }
};

// ncclAvg on integers: plain (wrapping) sum, then one division of the final value.
template <class T>
struct RedSumPostDiv {
  static_assert(std::is_integral_v<T>, "RedSumPostDiv implements ncclAvg on integer types only");
  uint64_t divisor;
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = true;
  ACCL_HOST_DEVICE ACCL_INLINE T operator()(T a, T b) const { return elemAdd(a, b); }
  ACCL_HOST_DEVICE ACCL_INLINE T preOp(T x) const { return x; }
  ACCL_HOST_DEVICE ACCL_INLINE T postOp(T x) const { return elemDivTrunc(x, divisor); }
};

// The PreMulSum scalar of `op` as a T: the stored bytes, or the element at the stored address
// (read now, i.e. when the reduction runs).
template <class T>
ACCL_HOST_DEVICE ACCL_INLINE T loadRedOpScalar(const DevRedOp& op) {
  if (op.scalarIsPtr) return *reinterpret_cast<const T*>(static_cast<uintptr_t>(op.arg));
  T v;
  memcpy(&v, &op.arg, sizeof(T));  // the scalar occupies the low-address bytes of `arg`
  return v;
}

}  // namespace accl
