// The element types of ncclDataType_t as plain C++ types usable on host and device without CUDA
// headers, and the compile-time/runtime maps between ncclDataType_t and those types.
//
// Half, Bf16, Fp8E4M3 and Fp8E5M2 are trivially copyable one-member structs holding the raw
// bits (same size and bit layout as CUDA's __half, __nv_bfloat16, __nv_fp8_e4m3, __nv_fp8_e5m2);
// arithmetic on them goes through float (see red_ops.h). Conversion rules: fp_convert.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "device/common/fp_convert.h"
#include "device/common/host_device.h"
#include "nccl.h"

namespace accl {

struct Half {
  uint16_t bits;
  ACCL_HOST_DEVICE static ACCL_INLINE Half fromBits(uint16_t b) { return Half{b}; }
  ACCL_HOST_DEVICE static ACCL_INLINE Half fromFloat(float f) { return Half{floatToHalfBits(f)}; }
  ACCL_HOST_DEVICE ACCL_INLINE float toFloat() const { return halfBitsToFloat(bits); }
  ACCL_HOST_DEVICE ACCL_INLINE bool isNan() const { return (bits & 0x7fffu) > 0x7c00u; }
  ACCL_HOST_DEVICE static ACCL_INLINE Half canonicalNan() { return Half{kHalfCanonicalNanBits}; }
};

struct Bf16 {
  uint16_t bits;
  ACCL_HOST_DEVICE static ACCL_INLINE Bf16 fromBits(uint16_t b) { return Bf16{b}; }
  ACCL_HOST_DEVICE static ACCL_INLINE Bf16 fromFloat(float f) { return Bf16{floatToBf16Bits(f)}; }
  ACCL_HOST_DEVICE ACCL_INLINE float toFloat() const { return bf16BitsToFloat(bits); }
  ACCL_HOST_DEVICE ACCL_INLINE bool isNan() const { return (bits & 0x7fffu) > 0x7f80u; }
  ACCL_HOST_DEVICE static ACCL_INLINE Bf16 canonicalNan() { return Bf16{kBf16CanonicalNanBits}; }
};

// OCP E4M3 ("FN"): bias 7, max 448, no infinities, NaN = S.1111.111. Conversions from float
// saturate to +-448 (Fp8Overflow::kSatFinite).
struct Fp8E4M3 {
  uint8_t bits;
  ACCL_HOST_DEVICE static ACCL_INLINE Fp8E4M3 fromBits(uint8_t b) { return Fp8E4M3{b}; }
  ACCL_HOST_DEVICE static ACCL_INLINE Fp8E4M3 fromFloat(float f) { return Fp8E4M3{floatToFp8e4m3Bits(f)}; }
  ACCL_HOST_DEVICE ACCL_INLINE float toFloat() const { return fp8e4m3BitsToFloat(bits); }
  ACCL_HOST_DEVICE ACCL_INLINE bool isNan() const { return Fp8E4M3Format::isNan(bits); }
  ACCL_HOST_DEVICE static ACCL_INLINE Fp8E4M3 canonicalNan() { return Fp8E4M3{kFp8CanonicalNanBits}; }
};

// OCP E5M2: bias 15, max 57344, +-inf = S.11111.00, NaN = S.11111.{01,10,11}. Conversions from
// float saturate to +-57344, infinity included (Fp8Overflow::kSatFinite).
struct Fp8E5M2 {
  uint8_t bits;
  ACCL_HOST_DEVICE static ACCL_INLINE Fp8E5M2 fromBits(uint8_t b) { return Fp8E5M2{b}; }
  ACCL_HOST_DEVICE static ACCL_INLINE Fp8E5M2 fromFloat(float f) { return Fp8E5M2{floatToFp8e5m2Bits(f)}; }
  ACCL_HOST_DEVICE ACCL_INLINE float toFloat() const { return fp8e5m2BitsToFloat(bits); }
  ACCL_HOST_DEVICE ACCL_INLINE bool isNan() const { return Fp8E5M2Format::isNan(bits); }
  ACCL_HOST_DEVICE static ACCL_INLINE Fp8E5M2 canonicalNan() { return Fp8E5M2{kFp8CanonicalNanBits}; }
};

static_assert(sizeof(Half) == 2 && sizeof(Bf16) == 2 && sizeof(Fp8E4M3) == 1 && sizeof(Fp8E5M2) == 1);
static_assert(std::is_trivially_copyable_v<Half> && std::is_trivially_copyable_v<Fp8E5M2>);

// True for the narrow float structs above: they compute through float.
template <class T>
inline constexpr bool kIsNarrowFloat = std::is_same_v<T, Half> || std::is_same_v<T, Bf16> ||
                                       std::is_same_v<T, Fp8E4M3> || std::is_same_v<T, Fp8E5M2>;

// Every floating element type (narrow ones, float, double).
template <class T>
inline constexpr bool kIsFloatElem = kIsNarrowFloat<T> || std::is_same_v<T, float> || std::is_same_v<T, double>;

// Every integer element type.
template <class T>
inline constexpr bool kIsIntElem = std::is_integral_v<T>;

// ---- ncclDataType_t -> C++ type -----------------------------------------------------------------

template <ncclDataType_t kType>
struct DtypeOf;
template <> struct DtypeOf<ncclInt8> { using Type = int8_t; };
template <> struct DtypeOf<ncclUint8> { using Type = uint8_t; };
template <> struct DtypeOf<ncclInt32> { using Type = int32_t; };
template <> struct DtypeOf<ncclUint32> { using Type = uint32_t; };
template <> struct DtypeOf<ncclInt64> { using Type = int64_t; };
template <> struct DtypeOf<ncclUint64> { using Type = uint64_t; };
template <> struct DtypeOf<ncclFloat16> { using Type = Half; };
template <> struct DtypeOf<ncclFloat32> { using Type = float; };
template <> struct DtypeOf<ncclFloat64> { using Type = double; };
template <> struct DtypeOf<ncclBfloat16> { using Type = Bf16; };
template <> struct DtypeOf<ncclFloat8e4m3> { using Type = Fp8E4M3; };
template <> struct DtypeOf<ncclFloat8e5m2> { using Type = Fp8E5M2; };

template <ncclDataType_t kType>
using DtypeT = typename DtypeOf<kType>::Type;

// ---- C++ type -> ncclDataType_t -----------------------------------------------------------------

template <class T>
struct DtypeTraits;
#define ACCL_DTYPE_TRAITS(T, kEnum, kStr)                 \
  template <>                                             \
  struct DtypeTraits<T> {                                 \
    static constexpr ncclDataType_t kType = kEnum;        \
    static constexpr const char* kName = kStr;            \
  };
ACCL_DTYPE_TRAITS(int8_t, ncclInt8, "int8")
ACCL_DTYPE_TRAITS(uint8_t, ncclUint8, "uint8")
ACCL_DTYPE_TRAITS(int32_t, ncclInt32, "int32")
ACCL_DTYPE_TRAITS(uint32_t, ncclUint32, "uint32")
ACCL_DTYPE_TRAITS(int64_t, ncclInt64, "int64")
ACCL_DTYPE_TRAITS(uint64_t, ncclUint64, "uint64")
ACCL_DTYPE_TRAITS(Half, ncclFloat16, "float16")
ACCL_DTYPE_TRAITS(float, ncclFloat32, "float32")
ACCL_DTYPE_TRAITS(double, ncclFloat64, "float64")
ACCL_DTYPE_TRAITS(Bf16, ncclBfloat16, "bfloat16")
ACCL_DTYPE_TRAITS(Fp8E4M3, ncclFloat8e4m3, "float8e4m3")
ACCL_DTYPE_TRAITS(Fp8E5M2, ncclFloat8e5m2, "float8e5m2")
#undef ACCL_DTYPE_TRAITS

// ---- runtime queries ----------------------------------------------------------------------------

ACCL_HOST_DEVICE constexpr bool dtypeValid(ncclDataType_t t) {
  return int(t) >= 0 && int(t) < int(ncclNumTypes);
}

// Bytes per element; 0 for a value outside [0, ncclNumTypes).
ACCL_HOST_DEVICE constexpr size_t dtypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

ACCL_HOST_DEVICE constexpr bool dtypeIsFloat(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 ||
         t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
}

ACCL_HOST_DEVICE constexpr bool dtypeIsSignedInt(ncclDataType_t t) {
  return t == ncclInt8 || t == ncclInt32 || t == ncclInt64;
}

// Lower-case name for log and error messages ("bfloat16"); "invalid" outside the enum.
constexpr const char* dtypeName(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return DtypeTraits<int8_t>::kName;
    case ncclUint8: return DtypeTraits<uint8_t>::kName;
    case ncclInt32: return DtypeTraits<int32_t>::kName;
    case ncclUint32: return DtypeTraits<uint32_t>::kName;
    case ncclInt64: return DtypeTraits<int64_t>::kName;
    case ncclUint64: return DtypeTraits<uint64_t>::kName;
    case ncclFloat16: return DtypeTraits<Half>::kName;
    case ncclFloat32: return DtypeTraits<float>::kName;
    case ncclFloat64: return DtypeTraits<double>::kName;
    case ncclBfloat16: return DtypeTraits<Bf16>::kName;
    case ncclFloat8e4m3: return DtypeTraits<Fp8E4M3>::kName;
    case ncclFloat8e5m2: return DtypeTraits<Fp8E5M2>::kName;
    default: return "invalid";
  }
}

// An empty tag carrying a type, for visitDtype callbacks.
template <class T>
struct TypeTag {
  using Type = T;
};

// Calls f(TypeTag<T>{}) with the C++ type of `t` and returns its result; returns `otherwise`
// for a value outside the enum. All callbacks must return the same type R.
template <class R, class F>
R visitDtype(ncclDataType_t t, R otherwise, F&& f) {
  switch (t) {
    case ncclInt8: return f(TypeTag<int8_t>{});
    case ncclUint8: return f(TypeTag<uint8_t>{});
    case ncclInt32: return f(TypeTag<int32_t>{});
    case ncclUint32: return f(TypeTag<uint32_t>{});
    case ncclInt64: return f(TypeTag<int64_t>{});
    case ncclUint64: return f(TypeTag<uint64_t>{});
    case ncclFloat16: return f(TypeTag<Half>{});
    case ncclFloat32: return f(TypeTag<float>{});
    case ncclFloat64: return f(TypeTag<double>{});
    case ncclBfloat16: return f(TypeTag<Bf16>{});
    case ncclFloat8e4m3: return f(TypeTag<Fp8E4M3>{});
    case ncclFloat8e5m2: return f(TypeTag<Fp8E5M2>{});
    default: return otherwise;
  }
}

}  // namespace accl
