// Conversions between double and the bit patterns of the floating element types.
#include "elem_codec.h"

#include <cmath>
#include <limits>
#include <vector>

namespace accl::bench {
namespace {

// A binary floating format described by its field widths; float and double go through the same code
// as the narrow types so that one implementation is exercised everywhere.
struct Format {
  int expBits;
  int manBits;
  bool finiteOnly;
  int bias() const { return (1 << (expBits - 1)) - 1; }
  int totalBits() const { return 1 + expBits + manBits; }
  uint64_t signBit() const { return 1ull << (expBits + manBits); }
  uint64_t expMask() const { return ((1ull << expBits) - 1) << manBits; }
  uint64_t manMask() const { return (1ull << manBits) - 1; }
  // Largest biased exponent used by finite numbers.
  int maxBiasedExp() const { return finiteOnly ? (1 << expBits) - 1 : (1 << expBits) - 2; }
  // Largest mantissa field at maxBiasedExp (e4m3 reserves all-ones for NaN).
  uint64_t maxMantissa() const { return finiteOnly ? manMask() - 1 : manMask(); }
  double maxValue() const {
    return std::ldexp(1.0 + (double)maxMantissa() / std::ldexp(1.0, manBits), maxBiasedExp() - bias());
  }
  uint64_t nanBits() const { return expMask() | manMask(); }
  uint64_t infBits() const { return finiteOnly ? (expMask() | maxMantissa()) : expMask(); }
};

Format formatOf(const TypeInfo& t) { return Format{t.expBits, t.manBits, t.finiteOnly}; }

}  // namespace

int64_t intValue(const TypeInfo& t, uint64_t bits) {
  int shift = 64 - 8 * t.size;
  if (t.kind == TypeKind::kSigned && shift > 0) return (int64_t)(bits << shift) >> shift;
  return (int64_t)(bits & widthMask(t.size));
}

namespace {

// The generic, slow decode; the narrow types use it once to build their tables.
double decodeGeneric(const Format& f, uint64_t bits) {
  bool neg = (bits & f.signBit()) != 0;
  int expField = (int)((bits & f.expMask()) >> f.manBits);
  uint64_t mant = bits & f.manMask();
  if (f.finiteOnly) {
    if (expField == (1 << f.expBits) - 1 && mant == f.manMask()) return std::numeric_limits<double>::quiet_NaN();
  } else if (expField == (1 << f.expBits) - 1) {
    if (mant != 0) return std::numeric_limits<double>::quiet_NaN();
    return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  double v = expField == 0 ? std::ldexp((double)mant, 1 - f.bias() - f.manBits)
                           : std::ldexp((double)(mant | (1ull << f.manBits)), expField - f.bias() - f.manBits);
  return neg ? -v : v;
}

// Decode tables of the 8- and 16-bit types, built on first use (thread-safe static initialization).
const std::vector<double>& decodeTable(const TypeInfo& t) {
  auto build = [](const TypeInfo& ti) {
    Format f = formatOf(ti);
    std::vector<double> table((size_t)1 << (8 * ti.size));
    for (size_t b = 0; b < table.size(); ++b) table[b] = decodeGeneric(f, b);
    return table;
  };
  static const std::vector<double> kHalf = build(*findType("half"));
  static const std::vector<double> kBf16 = build(*findType("bfloat16"));
  static const std::vector<double> kE4m3 = build(*findType("f8e4m3"));
  static const std::vector<double> kE5m2 = build(*findType("f8e5m2"));
  switch (t.type) {
    case ncclFloat16: return kHalf;
    case ncclBfloat16: return kBf16;
    case ncclFloat8e4m3: return kE4m3;
    default: return kE5m2;
  }
}

// Rounds a finite, non-zero magnitude to the format, ties to even, working on the double's bits.
uint64_t encodeMagnitude(const Format& f, double a) {
  uint64_t d;
  std::memcpy(&d, &a, sizeof(d));
  int dexp = (int)((d >> 52) & 0x7ff);
  uint64_t m = d & ((1ull << 52) - 1);
  int e;  // a = m * 2^(e - 52) with m a 53-bit significand
  if (dexp == 0) {
    return 0;  // double subnormals are far below every narrower format's smallest value
  } else {
    m |= 1ull << 52;
    e = dexp - 1023;
  }
  const int minNormalExp = 1 - f.bias();
  int quantumExp = (e < minNormalExp ? minNormalExp : e) - f.manBits;
  int shift = quantumExp - (e - 52);  // low bits of m below the format's last place
  uint64_t q;
  if (shift <= 0) {
    q = m << -shift;  // cannot happen for formats narrower than double
  } else if (shift > 60) {
    q = 0;
  } else {
    q = m >> shift;
    uint64_t rem = m & ((1ull << shift) - 1);
    uint64_t half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
  }
  if (q >> (f.manBits + 1)) {  // rounding carried into the next binade
    q >>= 1;
    ++quantumExp;
  }
  if (q < (1ull << f.manBits)) return q;  // subnormal or zero: exponent field 0
  int expField = quantumExp + f.manBits + f.bias();
  uint64_t mant = q - (1ull << f.manBits);
  if (expField > f.maxBiasedExp() || (expField == f.maxBiasedExp() && mant > f.maxMantissa()))
    return f.infBits();  // IEEE types: infinity; e4m3: saturate to the largest finite value
  return ((uint64_t)expField << f.manBits) | mant;
}

}  // namespace

uint64_t encodeFloat(const TypeInfo& t, double value) {
  if (t.type == ncclFloat64) {
    uint64_t b;
    std::memcpy(&b, &value, 8);
    return b;
  }
  if (t.type == ncclFloat32) {
    float f = (float)value;  // the hardware rounds to nearest even
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  Format f = formatOf(t);
  if (std::isnan(value)) return f.nanBits();
  uint64_t sign = std::signbit(value) ? f.signBit() : 0;
  double a = std::fabs(value);
  if (a == 0.0) return sign;
  if (std::isinf(a)) return sign | f.infBits();
  return sign | encodeMagnitude(f, a);
}

double decodeFloat(const TypeInfo& t, uint64_t bits) {
  if (t.type == ncclFloat64) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  if (t.type == ncclFloat32) {
    uint32_t b = (uint32_t)bits;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  return decodeTable(t)[bits & widthMask(t.size)];
}

bool isNanBits(const TypeInfo& t, uint64_t bits) {
  return t.kind == TypeKind::kFloat && std::isnan(decodeFloat(t, bits));
}

double maxFinite(const TypeInfo& t) { return formatOf(t).maxValue(); }

int64_t exactIntegerLimit(const TypeInfo& t) {
  int bits = t.manBits + 1;
  return bits >= 62 ? (1ll << 53) : (1ll << bits);
}

uint64_t ulpDistance(const TypeInfo& t, uint64_t a, uint64_t b) {
  Format f = formatOf(t);
  // Map sign-magnitude patterns onto a line where consecutive values are consecutive integers.
  auto key = [&](uint64_t bits) -> int64_t {
    int64_t mag = (int64_t)(bits & (f.signBit() - 1));
    return (bits & f.signBit()) ? -mag : mag;
  };
  int64_t ka = key(a), kb = key(b);
  return (uint64_t)(ka > kb ? ka - kb : kb - ka);
}

}  // namespace accl::bench
