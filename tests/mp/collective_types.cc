// Element types of the collective tests: names, sizes and bit-exact float-format conversions
// (see collective_types.h for the rules).
#include "mp/collective_types.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace accl::test {

const FloatFormat kHalfFormat{5, 10, 15, true, false, 0x7e00};
const FloatFormat kBf16Format{8, 7, 127, true, false, 0x7fc0};
const FloatFormat kE4m3Format{4, 3, 7, false, true, 0x7f};
const FloatFormat kE5m2Format{5, 2, 15, true, true, 0x7f};

namespace {

// Bit layout of a floating element, wide enough for double.
struct Layout {
  int expBits;
  int mantBits;
  bool hasInf;
};

bool layoutOf(ncclDataType_t type, Layout* out) {
  switch (type) {
    case ncclFloat16:
      *out = {5, 10, true};
      return true;
    case ncclBfloat16:
      *out = {8, 7, true};
      return true;
    case ncclFloat8e4m3:
      *out = {4, 3, false};
      return true;
    case ncclFloat8e5m2:
      *out = {5, 2, true};
      return true;
    case ncclFloat32:
      *out = {8, 23, true};
      return true;
    case ncclFloat64:
      *out = {11, 52, true};
      return true;
    default:
      return false;
  }
}

uint64_t expFieldOf(const Layout& l, uint64_t bits) {
  return (bits >> l.mantBits) & ((1ull << l.expBits) - 1);
}
uint64_t mantOf(const Layout& l, uint64_t bits) { return bits & ((1ull << l.mantBits) - 1); }
uint64_t signBitOf(const Layout& l) { return 1ull << (l.expBits + l.mantBits); }

bool layoutIsNan(const Layout& l, uint64_t bits) {
  uint64_t expAll = (1ull << l.expBits) - 1;
  if (l.hasInf) return expFieldOf(l, bits) == expAll && mantOf(l, bits) != 0;
  return expFieldOf(l, bits) == expAll && mantOf(l, bits) == (1ull << l.mantBits) - 1;
}

bool layoutIsInf(const Layout& l, uint64_t bits) {
  return l.hasInf && expFieldOf(l, bits) == (1ull << l.expBits) - 1 && mantOf(l, bits) == 0;
}

}  // namespace

std::string typeName(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "half";
    case ncclFloat32:
      return "float";
    case ncclFloat64:
      return "double";
    case ncclBfloat16:
      return "bfloat16";
    case ncclFloat8e4m3:
      return "f8e4m3";
    case ncclFloat8e5m2:
      return "f8e5m2";
    default:
      return "invalid(" + std::to_string(static_cast<int>(type)) + ")";
  }
}

size_t typeSize(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

bool isFloatType(ncclDataType_t type) {
  Layout l;
  return layoutOf(type, &l);
}

bool isSignedType(ncclDataType_t type) {
  return type == ncclInt8 || type == ncclInt32 || type == ncclInt64 || isFloatType(type);
}

uint64_t typeMask(ncclDataType_t type) {
  size_t bytes = typeSize(type);
  return bytes >= 8 ? ~0ull : ((1ull << (8 * bytes)) - 1);
}

uint64_t exactIntegerBudget(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
      return 127;
    case ncclUint8:
      return 255;
    case ncclInt32:
      return 0x7fffffffull;
    case ncclUint32:
      return 0xffffffffull;
    case ncclInt64:
    case ncclUint64:
      return 1ull << 62;
    case ncclFloat16:
      return 2048;
    case ncclFloat32:
      return 1ull << 24;
    case ncclFloat64:
      return 1ull << 53;
    case ncclBfloat16:
      return 256;
    case ncclFloat8e4m3:
      return 16;
    case ncclFloat8e5m2:
      return 8;
    default:
      return 0;
  }
}

uint32_t encodeFloatFormat(const FloatFormat& f, double v) {
  const uint32_t signBit = 1u << (f.expBits + f.mantBits);
  if (std::isnan(v)) return f.nanBits;
  const uint32_t sign = std::signbit(v) ? signBit : 0u;
  const double a = std::fabs(v);
  const int expAll = (1 << f.expBits) - 1;
  // Largest finite encoding: with infinities the top exponent is reserved; without (e4m3 FN)
  // only the top exponent with an all-ones mantissa is (NaN).
  const int maxExpField = f.hasInf ? expAll - 1 : expAll;
  const uint32_t maxMantAtTop = f.hasInf ? (1u << f.mantBits) - 1 : (1u << f.mantBits) - 2;
  const uint32_t maxFinite = (uint32_t(maxExpField) << f.mantBits) | maxMantAtTop;
  const uint32_t overflowBits = (f.saturate || !f.hasInf) ? maxFinite : (uint32_t(expAll) << f.mantBits);
  if (std::isinf(a)) return sign | overflowBits;
  if (a == 0) return sign;

  int e2 = 0;
  std::frexp(a, &e2);     // a = m * 2^e2 with m in [0.5, 1)
  int exponent = e2 - 1;  // a in [2^exponent, 2^(exponent+1))
  const int minNormalExp = 1 - f.bias;
  if (exponent < minNormalExp) {
    // Subnormal: a multiple of 2^(minNormalExp - mantBits). A round-up to 2^mantBits lands on
    // the smallest normal, which the encoding represents by the same integer.
    double units = std::nearbyint(std::ldexp(a, f.mantBits - minNormalExp));
    return sign | static_cast<uint32_t>(units);
  }
  uint64_t q = static_cast<uint64_t>(std::nearbyint(std::ldexp(a, f.mantBits - exponent)));
  if (q == (1ull << (f.mantBits + 1))) {
    q >>= 1;
    ++exponent;
  }
  const int expField = exponent + f.bias;
  const uint32_t mant = static_cast<uint32_t>(q - (1ull << f.mantBits));
  if (expField > maxExpField || (expField == maxExpField && mant > maxMantAtTop)) return sign | overflowBits;
  return sign | (uint32_t(expField) << f.mantBits) | mant;
}

double decodeFloatFormat(const FloatFormat& f, uint32_t bits) {
  const Layout l{f.expBits, f.mantBits, f.hasInf};
  const bool negative = (bits >> (f.expBits + f.mantBits)) & 1u;
  if (layoutIsNan(l, bits)) return std::numeric_limits<double>::quiet_NaN();
  if (layoutIsInf(l, bits)) return negative ? -INFINITY : INFINITY;
  const uint64_t expField = expFieldOf(l, bits);
  const uint64_t mant = mantOf(l, bits);
  double value = expField == 0 ? std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mantBits)
                               : std::ldexp(static_cast<double>(mant + (1ull << f.mantBits)),
                                            static_cast<int>(expField) - f.bias - f.mantBits);
  return negative ? -value : value;
}

uint16_t doubleToHalf(double v) { return static_cast<uint16_t>(encodeFloatFormat(kHalfFormat, v)); }
uint16_t doubleToBf16(double v) { return static_cast<uint16_t>(encodeFloatFormat(kBf16Format, v)); }
uint8_t doubleToE4m3(double v) { return static_cast<uint8_t>(encodeFloatFormat(kE4m3Format, v)); }
uint8_t doubleToE5m2(double v) { return static_cast<uint8_t>(encodeFloatFormat(kE5m2Format, v)); }
double halfToDouble(uint16_t bits) { return decodeFloatFormat(kHalfFormat, bits); }
double bf16ToDouble(uint16_t bits) { return decodeFloatFormat(kBf16Format, bits); }
double e4m3ToDouble(uint8_t bits) { return decodeFloatFormat(kE4m3Format, bits); }
double e5m2ToDouble(uint8_t bits) { return decodeFloatFormat(kE5m2Format, bits); }

uint64_t elemFromDouble(ncclDataType_t type, double v) {
  switch (type) {
    case ncclFloat16:
      return doubleToHalf(v);
    case ncclBfloat16:
      return doubleToBf16(v);
    case ncclFloat8e4m3:
      return doubleToE4m3(v);
    case ncclFloat8e5m2:
      return doubleToE5m2(v);
    case ncclFloat32: {
      float f = static_cast<float>(v);
      uint32_t bits;
      memcpy(&bits, &f, sizeof(bits));
      return bits;
    }
    case ncclFloat64: {
      uint64_t bits;
      memcpy(&bits, &v, sizeof(bits));
      return bits;
    }
    case ncclUint64:
      return static_cast<uint64_t>(v);
    default:
      return static_cast<uint64_t>(static_cast<int64_t>(v)) & typeMask(type);
  }
}

uint64_t elemFromInt(ncclDataType_t type, int64_t v) {
  if (isFloatType(type)) return elemFromDouble(type, static_cast<double>(v));
  return static_cast<uint64_t>(v) & typeMask(type);
}

int64_t elemToInt(ncclDataType_t type, uint64_t bits) {
  bits &= typeMask(type);
  if (!isSignedType(type) || typeSize(type) >= 8) return static_cast<int64_t>(bits);
  const int width = static_cast<int>(8 * typeSize(type));
  const uint64_t sign = 1ull << (width - 1);
  return static_cast<int64_t>((bits ^ sign) - sign);
}

double elemToDouble(ncclDataType_t type, uint64_t bits) {
  switch (type) {
    case ncclFloat16:
      return halfToDouble(static_cast<uint16_t>(bits));
    case ncclBfloat16:
      return bf16ToDouble(static_cast<uint16_t>(bits));
    case ncclFloat8e4m3:
      return e4m3ToDouble(static_cast<uint8_t>(bits));
    case ncclFloat8e5m2:
      return e5m2ToDouble(static_cast<uint8_t>(bits));
    case ncclFloat32: {
      uint32_t b = static_cast<uint32_t>(bits);
      float f;
      memcpy(&f, &b, sizeof(f));
      return f;
    }
    case ncclFloat64: {
      double d;
      memcpy(&d, &bits, sizeof(d));
      return d;
    }
    case ncclUint64:
      return static_cast<double>(bits);
    default:
      return static_cast<double>(elemToInt(type, bits));
  }
}

bool elemIsNan(ncclDataType_t type, uint64_t bits) {
  Layout l;
  return layoutOf(type, &l) && layoutIsNan(l, bits & typeMask(type));
}

bool elemIsInf(ncclDataType_t type, uint64_t bits) {
  Layout l;
  return layoutOf(type, &l) && layoutIsInf(l, bits & typeMask(type));
}

uint64_t ulpDistance(ncclDataType_t type, uint64_t a, uint64_t b) {
  a &= typeMask(type);
  b &= typeMask(type);
  Layout l;
  if (!layoutOf(type, &l)) {
    if (isSignedType(type)) {
      int64_t x = elemToInt(type, a), y = elemToInt(type, b);
      return x > y ? static_cast<uint64_t>(x) - static_cast<uint64_t>(y)
                   : static_cast<uint64_t>(y) - static_cast<uint64_t>(x);
    }
    return a > b ? a - b : b - a;
  }
  if (layoutIsNan(l, a) || layoutIsNan(l, b)) return UINT64_MAX;
  // Sign-magnitude to a monotonic integer key; +0 and -0 both map to 0.
  auto key = [&](uint64_t bits) -> __int128 {
    __int128 mag = static_cast<__int128>(bits & (signBitOf(l) - 1));
    return (bits & signBitOf(l)) ? -mag : mag;
  };
  __int128 d = key(a) - key(b);
  if (d < 0) d = -d;
  return d > static_cast<__int128>(UINT64_MAX - 1) ? UINT64_MAX - 1 : static_cast<uint64_t>(d);
}

uint64_t sanitizeFinite(ncclDataType_t type, uint64_t bits) {
  bits &= typeMask(type);
  Layout l;
  if (!layoutOf(type, &l)) return bits;
  if (l.hasInf) {
    if (expFieldOf(l, bits) == (1ull << l.expBits) - 1) bits &= ~(1ull << (l.mantBits + l.expBits - 1));
  } else if (layoutIsNan(l, bits)) {
    bits ^= 1ull;  // e4m3 S.1111.111 -> S.1111.110 (+-448)
  }
  if (bits == signBitOf(l)) bits = 0;  // -0 -> +0
  return bits;
}

std::string elemToString(ncclDataType_t type, uint64_t bits) {
  bits &= typeMask(type);
  char text[96];
  const int hexDigits = static_cast<int>(2 * typeSize(type));
  if (isFloatType(type)) {
    snprintf(text, sizeof(text), "%.17g (0x%0*" PRIx64 ")", elemToDouble(type, bits), hexDigits, bits);
  } else if (isSignedType(type)) {
    snprintf(text, sizeof(text), "%" PRId64 " (0x%0*" PRIx64 ")", elemToInt(type, bits), hexDigits, bits);
  } else {
    snprintf(text, sizeof(text), "%" PRIu64 " (0x%0*" PRIx64 ")", bits, hexDigits, bits);
  }
  return text;
}

uint64_t loadElem(ncclDataType_t type, const void* base, size_t index) {
  const size_t size = typeSize(type);
  uint64_t bits = 0;
  memcpy(&bits, static_cast<const char*>(base) + index * size, size);
  return bits;
}

void storeElem(ncclDataType_t type, void* base, size_t index, uint64_t bits) {
  const size_t size = typeSize(type);
  memcpy(static_cast<char*>(base) + index * size, &bits, size);
}

}  // namespace accl::test
