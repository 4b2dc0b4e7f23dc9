// Element values as bits: loading/storing one element of any width, and converting between double and
// the bit pattern of every floating type accl supports (IEEE half/float/double, bfloat16, fp8 e4m3 and
// e5m2), rounding to nearest even. The benchmark's checker computes expected results in double and
// compares through these conversions, so it needs no CUDA headers and behaves the same on every host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "catalog.h"

namespace accl::bench {

inline uint64_t loadElem(const void* base, size_t index, int size) {
  uint64_t v = 0;
  std::memcpy(&v, static_cast<const char*>(base) + index * (size_t)size, (size_t)size);  // little endian
  return v;
}

inline void storeElem(void* base, size_t index, int size, uint64_t bits) {
  std::memcpy(static_cast<char*>(base) + index * (size_t)size, &bits, (size_t)size);
}

inline uint64_t widthMask(int size) { return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1; }

// Integer value of an integer element (sign-extended for signed types).
int64_t intValue(const TypeInfo& t, uint64_t bits);

// Double <-> bits for floating types. encodeFloat rounds to nearest even; values beyond the largest
// finite number become infinity (IEEE-style types) or saturate to +-max (e4m3, which has no infinity).
uint64_t encodeFloat(const TypeInfo& t, double value);
double decodeFloat(const TypeInfo& t, uint64_t bits);

bool isNanBits(const TypeInfo& t, uint64_t bits);

// Largest finite value of a floating type, and 2^(mantissa bits + 1): every integer of magnitude up to
// this limit is exactly representable.
double maxFinite(const TypeInfo& t);
int64_t exactIntegerLimit(const TypeInfo& t);

// Distance in units in the last place between two non-NaN floating bit patterns (0 = identical value;
// +0 and -0 are at distance 0).
uint64_t ulpDistance(const TypeInfo& t, uint64_t a, uint64_t b);

}  // namespace accl::bench
