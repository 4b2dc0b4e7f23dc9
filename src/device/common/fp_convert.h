// Bit-exact conversions between float and the narrow floating formats accl reduces:
// IEEE binary16 (half), bfloat16, and the two OCP 8-bit formats E4M3 ("FN": no infinities) and
// E5M2 (IEEE-like). Pure integer code on the host; on the device the same results come from the
// hardware cvt instructions where the architecture has them.
//
// Rules (identical on host and device; they are those of CUDA's __float2half, __float2bfloat16
// and the __nv_fp8_e4m3/__nv_fp8_e5m2 constructors):
//   * float -> narrow: round to nearest, ties to even. Signed zeros keep their sign, also when
//     a tiny value underflows to zero.
//   * half, bf16: a finite value that rounds past the largest finite value becomes +-infinity
//     (half: |x| >= 65520; bf16 like float). +-inf stays +-inf.
//   * fp8 (reductions use kSatFinite): a value that rounds past the largest finite value,
//     and +-infinity itself, become the largest finite value of that sign (E4M3: 448,
//     E5M2: 57344). This is CUDA's __NV_SATFINITE, used by the __nv_fp8 constructors and hence by
//     NCCL's fp8 reductions; a sum that overflows therefore sticks at +-max instead of becoming
//     NaN (E4M3 has no infinity) or inf. kNoSat (CUDA's __NV_NOSAT) is available for callers
//     that want overflow to produce NaN (E4M3) / inf (E5M2).
//   * NaN in any direction becomes the format's canonical quiet NaN with the sign dropped:
//     float 0x7fffffff, half 0x7fff, bf16 0x7fff, fp8 0x7f (both formats).
//   * narrow -> float is exact for every non-NaN value (subnormals included).
#pragma once

#include <cstdint>

#include "device/common/host_device.h"

namespace accl {

inline constexpr uint32_t kFloatCanonicalNanBits = 0x7fffffffu;
inline constexpr uint16_t kHalfCanonicalNanBits = 0x7fffu;
inline constexpr uint16_t kBf16CanonicalNanBits = 0x7fffu;
inline constexpr uint8_t kFp8CanonicalNanBits = 0x7fu;

enum class Fp8Overflow { kSatFinite, kNoSat };

namespace fpdetail {

// Rounds the unsigned magnitude `sig` right by `shift` bits (shift >= 1), ties to even.
ACCL_HOST_DEVICE ACCL_INLINE uint32_t roundShiftRne(uint32_t sig, uint32_t shift) {
  if (shift >= 32) return 0;
  uint32_t kept = sig >> shift;
  uint32_t rest = sig & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (kept & 1u))) ++kept;
  return kept;
}

// Builds a float from a nonzero subnormal significand `man` of a narrow format whose least
// significant bit weighs 2^lsbExp: shifts it up to a normal float.
ACCL_HOST_DEVICE ACCL_INLINE uint32_t subnormalToFloatBits(uint32_t man, int lsbExp) {
  // The leading one by count-leading-zeros, not a loop: inside the kernels' unrolled packets a
  // data-dependent loop per element multiplied the code that ptxas had to allocate.
#if ACCL_DEVICE_PASS
  int msb = 31 - __clz(int(man));
#else
  int msb = 31 - __builtin_clz(man);
#endif
  int exp = lsbExp + msb;  // value = 1.xxx * 2^exp
  uint32_t frac = (man << (23 - msb)) & 0x7fffffu;
  return (uint32_t(exp + 127) << 23) | frac;
}

}  // namespace fpdetail

// ---- binary16 -----------------------------------------------------------------------------------

ACCL_HOST_DEVICE ACCL_INLINE float halfBitsToFloat(uint16_t h) {
#if ACCL_DEVICE_PASS
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  if (f != f) f = bitsAs<float>(kFloatCanonicalNanBits);
  return f;
#else
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1fu) {
    bits = man ? kFloatCanonicalNanBits : (sign | 0x7f800000u);
  } else if (exp == 0) {
    bits = man ? (sign | fpdetail::subnormalToFloatBits(man, -24)) : sign;
  } else {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  }
  return bitsAs<float>(bits);
#endif
}

ACCL_HOST_DEVICE ACCL_INLINE uint16_t floatToHalfBits(float f) {
#if ACCL_DEVICE_PASS
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  if ((h & 0x7fffu) > 0x7c00u) h = kHalfCanonicalNanBits;
  return h;
#else
  uint32_t x = bitsAs<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return kHalfCanonicalNanBits;
  if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 (and inf): infinity
  if (mag >= 0x38800000u) {                                  // half normal range (>= 2^-14)
    uint32_t exp = (mag >> 23) - 112u;
    uint32_t kept = (exp << 10) | ((mag >> 13) & 0x3ffu);
    uint32_t rest = mag & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (kept & 1u))) ++kept;  // carry may bump exp
    return uint16_t(sign | kept);
  }
  if (mag <= 0x33000000u) return uint16_t(sign);  // <= 2^-25: rounds to (signed) zero
  // Subnormal half: the result counts units of 2^-24.
  uint32_t e = mag >> 23;  // biased float exponent, 102..112 here
  uint32_t sig = (mag & 0x7fffffu) | 0x800000u;
  // value = sig * 2^(e-150); in units of 2^-24: sig * 2^(e-126) -> shift right by 126-e.
  return uint16_t(sign | fpdetail::roundShiftRne(sig, 126u - e));
#endif
}

// ---- bfloat16 -----------------------------------------------------------------------------------

// Both directions pick the canonical NaN with a mask, not a branch, so that the host's reduction
// loops (reduce_buffers.cc) vectorize (GCC threads jumps through a select and then gives up).
ACCL_HOST_DEVICE ACCL_INLINE float bf16BitsToFloat(uint16_t b) {
  const uint32_t nanMask = 0u - uint32_t((b & 0x7fffu) > 0x7f80u);  // all ones for a NaN
  return bitsAs<float>((kFloatCanonicalNanBits & nanMask) | ((uint32_t(b) << 16) & ~nanMask));
}

ACCL_HOST_DEVICE ACCL_INLINE uint16_t floatToBf16Bits(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  if ((b & 0x7fffu) > 0x7f80u) b = kBf16CanonicalNanBits;
  return b;
#else
  const uint32_t x = bitsAs<uint32_t>(f);
  const uint32_t nanMask = 0u - uint32_t((x & 0x7fffffffu) > 0x7f800000u);  // all ones for a NaN
  // Adding 0x7fff plus the lowest kept bit rounds to nearest even; a carry into the exponent
  // is the correct next binade (and turns the largest values into infinity).
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return uint16_t((kBf16CanonicalNanBits & nanMask) | (rounded & ~nanMask));
#endif
}

// ---- 8-bit formats ------------------------------------------------------------------------------

// Layout of an 8-bit float: 1 sign bit, kExpBits exponent bits, kManBits mantissa bits.
// E4M3 (kIeeeSpecials=false): exponent 15 is an ordinary binade except S.1111.111, the only NaN;
// no infinities. E5M2 (kIeeeSpecials=true): exponent 31 holds inf (mantissa 0) and NaNs.
template <int kExpBits, int kManBits, bool kIeeeSpecials>
struct Fp8Format {
  static constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  static constexpr int kMinNormalExp = 1 - kBias;
  static constexpr uint32_t kMagMask = 0x7fu;
  static constexpr uint32_t kMaxFinite = kIeeeSpecials ? (((1u << kExpBits) - 2u) << kManBits) | ((1u << kManBits) - 1u)
                                                       : 0x7eu;
  static constexpr uint32_t kInfBits = ((1u << kExpBits) - 1u) << kManBits;  // E5M2 only

  ACCL_HOST_DEVICE static ACCL_INLINE bool isNan(uint8_t v) {
    uint32_t mag = v & kMagMask;
    return kIeeeSpecials ? mag > kInfBits : mag == 0x7fu;
  }

  ACCL_HOST_DEVICE static ACCL_INLINE float toFloat(uint8_t v) {
    uint32_t sign = uint32_t(v & 0x80u) << 24;
    uint32_t mag = v & kMagMask;
    if (isNan(v)) return bitsAs<float>(kFloatCanonicalNanBits);
    if (kIeeeSpecials && mag == kInfBits) return bitsAs<float>(sign | 0x7f800000u);
    uint32_t exp = mag >> kManBits;
    uint32_t man = mag & ((1u << kManBits) - 1u);
    uint32_t bits;
    if (exp == 0) {
      bits = man ? (sign | fpdetail::subnormalToFloatBits(man, kMinNormalExp - kManBits)) : sign;
    } else {
      bits = sign | (uint32_t(int(exp) - kBias + 127) << 23) | (man << (23 - kManBits));
    }
    return bitsAs<float>(bits);
  }

  ACCL_HOST_DEVICE static ACCL_INLINE uint8_t fromFloat(float f, Fp8Overflow overflow) {
    uint32_t x = bitsAs<uint32_t>(f);
    uint32_t sign = (x >> 24) & 0x80u;
    uint32_t mag = x & 0x7fffffffu;
    if (mag > 0x7f800000u) return uint8_t(kFp8CanonicalNanBits);
    uint32_t overflowBits =
        overflow == Fp8Overflow::kSatFinite ? kMaxFinite : (kIeeeSpecials ? kInfBits : 0x7fu);
    if (mag == 0x7f800000u) return uint8_t(sign | overflowBits);
    if (mag < 0x00800000u) return uint8_t(sign);  // float zero/subnormal: far below fp8's range
    int exp = int(mag >> 23) - 127;                // value = sig * 2^(exp-23), sig in [2^23, 2^24)
    uint32_t sig = (mag & 0x7fffffu) | 0x800000u;
    // Exponent of the result's least significant bit: normal binade or the subnormal floor.
    int lsbExp = (exp >= kMinNormalExp ? exp : kMinNormalExp) - kManBits;
    int shift = lsbExp - (exp - 23);  // >= 23 - kManBits
    uint32_t units = fpdetail::roundShiftRne(sig, uint32_t(shift > 31 ? 32 : shift));
    // Normal: units in [2^m, 2^(m+1)]; the encoding is (biasedExp-1)<<m plus units, so a
    // rounding carry to 2^(m+1) lands on the next exponent. Subnormal: the encoding is units.
    uint32_t enc = exp >= kMinNormalExp ? (uint32_t(exp + kBias - 1) << kManBits) + units : units;
    if (enc > kMaxFinite) return uint8_t(sign | overflowBits);
    return uint8_t(sign | enc);
  }
};

using Fp8E4M3Format = Fp8Format<4, 3, false>;
using Fp8E5M2Format = Fp8Format<5, 2, true>;

// On the device both go through binary16, which holds every fp8 value exactly: E5M2 is the high
// byte of a binary16 (infinities and NaNs included), and sm_89+ converts E4M3 pairs to half
// pairs in one instruction. halfBitsToFloat makes a NaN canonical, as the host code does. Kept
// small on purpose: the fp8 kernels convert every element of every packet, and the integer
// version made their translation units the slowest of the build.
ACCL_HOST_DEVICE ACCL_INLINE float fp8e4m3BitsToFloat(uint8_t v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned int halves;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(halves) : "h"((unsigned short)v));
  return halfBitsToFloat(uint16_t(halves & 0xffffu));
#else
  return Fp8E4M3Format::toFloat(v);
#endif
}
ACCL_HOST_DEVICE ACCL_INLINE float fp8e5m2BitsToFloat(uint8_t v) {
#if ACCL_DEVICE_PASS
  return halfBitsToFloat(uint16_t(uint16_t(v) << 8));
#else
  return Fp8E5M2Format::toFloat(v);
#endif
}

ACCL_HOST_DEVICE ACCL_INLINE uint8_t floatToFp8e4m3Bits(float f,
                                                         Fp8Overflow overflow = Fp8Overflow::kSatFinite) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if (overflow == Fp8Overflow::kSatFinite) {
    unsigned short pair;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
    uint8_t v = uint8_t(pair & 0xffu);
    return Fp8E4M3Format::isNan(v) ? uint8_t(kFp8CanonicalNanBits) : v;
  }
#endif
  return Fp8E4M3Format::fromFloat(f, overflow);
}

ACCL_HOST_DEVICE ACCL_INLINE uint8_t floatToFp8e5m2Bits(float f,
                                                         Fp8Overflow overflow = Fp8Overflow::kSatFinite) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if (overflow == Fp8Overflow::kSatFinite) {
    unsigned short pair;
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
    uint8_t v = uint8_t(pair & 0xffu);
    return Fp8E5M2Format::isNan(v) ? uint8_t(kFp8CanonicalNanBits) : v;
  }
#endif
  return Fp8E5M2Format::fromFloat(f, overflow);
}

}  // namespace accl
