// Host-side knowledge of the 12 ncclDataType_t element types for the collective tests: names,
// sizes, and bit-exact conversions between doubles and every element encoding, including the
// narrow floats the host has no native type for (half, bfloat16, fp8 e4m3 "FN", fp8 e5m2).
// Elements travel as raw bits in a uint64_t (low bytes, little-endian in memory).
//
// Conversion rules (what the expectations assume):
//   * double -> float format: round to nearest, ties to even, with gradual underflow.
//     Overflow: half and bfloat16 give +-inf (IEEE); both fp8 formats saturate to +-max finite,
//     as NCCL's fp8 conversions do. NaN becomes the format's canonical quiet NaN.
//   * fp8 e4m3 (OCP "FN"): bias 7, no infinities, max 448, NaN = 0x7f / 0xff.
//   * fp8 e5m2: bias 15, IEEE-like (exponent all ones: inf or NaN), max finite 57344.
//   * Integers: a value is stored modulo 2^bits (two's complement for the signed types).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"

namespace accl::test {

inline constexpr int kNumElemTypes = 12;  // ncclNumTypes for NCCL 2.28

// Short names as nccl-tests prints them: int8 uint8 int32 uint32 int64 uint64 half float double
// bfloat16 f8e4m3 f8e5m2. "invalid(N)" for anything else.
std::string typeName(ncclDataType_t type);
size_t typeSize(ncclDataType_t type);
bool isFloatType(ncclDataType_t type);
// True for the signed integers and every floating type.
bool isSignedType(ncclDataType_t type);
// All ones in the low typeSize*8 bits.
uint64_t typeMask(ncclDataType_t type);

// Largest B such that every integer in [-B, B] (signed types) or [0, B] (unsigned) is exactly
// representable. Sums whose partial sums stay within B are exact in any order.
uint64_t exactIntegerBudget(ncclDataType_t type);

// Encoding of a binary floating format with an implicit leading one.
struct FloatFormat {
  int expBits;
  int mantBits;
  int bias;
  bool hasInf;       // exponent all ones encodes inf (mantissa 0) and NaN; else only all-ones is NaN
  bool saturate;     // overflow gives max finite instead of inf
  uint32_t nanBits;  // canonical quiet NaN (positive)
};
extern const FloatFormat kHalfFormat;
extern const FloatFormat kBf16Format;
extern const FloatFormat kE4m3Format;
extern const FloatFormat kE5m2Format;

uint32_t encodeFloatFormat(const FloatFormat& f, double v);
double decodeFloatFormat(const FloatFormat& f, uint32_t bits);

// Convenience wrappers of the above.
uint16_t doubleToHalf(double v);
uint16_t doubleToBf16(double v);
uint8_t doubleToE4m3(double v);
uint8_t doubleToE5m2(double v);
double halfToDouble(uint16_t bits);
double bf16ToDouble(uint16_t bits);
double e4m3ToDouble(uint8_t bits);
double e5m2ToDouble(uint8_t bits);

// Bits of `v` in `type`: floats rounded as above; integers truncated modulo 2^bits (v must be
// integral for integer types).
uint64_t elemFromDouble(ncclDataType_t type, double v);
// Bits of the integer v in `type` (modulo 2^bits for integers; exact integers for floats within
// exactIntegerBudget).
uint64_t elemFromInt(ncclDataType_t type, int64_t v);
// Value of the element (integers: sign-extended for signed types; 64-bit values may round).
double elemToDouble(ncclDataType_t type, uint64_t bits);
// Integer elements only: the value sign-extended (signed types) or zero-extended to 64 bits.
int64_t elemToInt(ncclDataType_t type, uint64_t bits);

bool elemIsNan(ncclDataType_t type, uint64_t bits);
bool elemIsInf(ncclDataType_t type, uint64_t bits);
// Floats: distance in units in the last place between two finite elements (+0 and -0 are 0
// apart). Integers: absolute difference of the values. Returns UINT64_MAX when either is NaN.
uint64_t ulpDistance(ncclDataType_t type, uint64_t a, uint64_t b);

// Makes raw bits a finite, non-negative-zero element: NaN/inf patterns move to finite ones and
// -0 becomes +0 (integers are returned masked, otherwise unchanged).
uint64_t sanitizeFinite(ncclDataType_t type, uint64_t bits);

// "1.5 (0x3e00)" style rendering for failure messages.
std::string elemToString(ncclDataType_t type, uint64_t bits);

// Raw element access in a byte buffer.
uint64_t loadElem(ncclDataType_t type, const void* base, size_t index);
void storeElem(ncclDataType_t type, void* base, size_t index, uint64_t bits);

}  // namespace accl::test
