// Tests of the element types and reduction ops in src/device/common and the user-op registry in
// src/core/red_op_registry: conversions (exhaustive over every half/bf16/fp8 bit pattern, and
// float->narrow rounding against a double-arithmetic reference), every op on every type through
// the ring step order with closed-form expectations, NaN/zero/overflow/wrap semantics,
// PreMulSum scalars (immediate and pointer), and handle mangling / free-list behaviour.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/engine/red_op_registry.h"
#include "device/common/dev_red_op.h"
#include "device/common/dtypes.h"
#include "device/common/fp_convert.h"
#include "device/common/red_op_apply.h"
#include "device/common/red_ops.h"
#include "device/common/reduce_buffers.h"
#include "util/last_error.h"

namespace accl {
namespace {

// ---- reference arithmetic (double only, independent of the code under test) --------------------

// A floating format: `precision` significant bits including the implicit one, the exponent of
// its smallest normal, its largest finite value, and what happens beyond it.
struct FormatSpec {
  int precision;
  int minNormalExp;
  double maxFinite;
  bool overflowToInf;  // false: saturate to +-maxFinite (fp8 with SATFINITE), inf included
};

const FormatSpec kHalfSpec{11, -14, 65504.0, true};
const FormatSpec kBf16Spec{8, -126, std::ldexp(255.0, 120), true};  // 0x7f7f = 1.1111111b * 2^127
const FormatSpec kE4M3Spec{4, -6, 448.0, false};
const FormatSpec kE5M2Spec{3, -14, 57344.0, false};

// `d` rounded to nearest-even in the format, computed with double arithmetic.
double refRound(double d, const FormatSpec& f) {
  if (std::isnan(d)) return d;
  if (std::isinf(d)) return f.overflowToInf ? d : std::copysign(f.maxFinite, d);
  if (d == 0) return d;
  int e = 0;
  std::frexp(d, &e);  // |d| in [2^(e-1), 2^e)
  int lead = std::max(e - 1, f.minNormalExp);
  double quantum = std::ldexp(1.0, lead - (f.precision - 1));
  double r = std::nearbyint(d / quantum) * quantum;  // default rounding mode: ties to even
  if (std::fabs(r) > f.maxFinite) {
    return f.overflowToInf ? std::copysign(INFINITY, d) : std::copysign(f.maxFinite, d);
  }
  return r == 0 ? std::copysign(0.0, d) : r;
}

// Value of a bit pattern of a float format with the given field widths, from the definition.
double refDecode(uint32_t bits, int expBits, int manBits, bool ieeeSpecials) {
  int bias = (1 << (expBits - 1)) - 1;
  bool neg = (bits >> (expBits + manBits)) & 1u;
  uint32_t exp = (bits >> manBits) & ((1u << expBits) - 1u);
  uint32_t man = bits & ((1u << manBits) - 1u);
  uint32_t expMax = (1u << expBits) - 1u;
  double v;
  if (ieeeSpecials && exp == expMax) {
    v = man ? NAN : INFINITY;
  } else if (!ieeeSpecials && exp == expMax && man == (1u << manBits) - 1u) {
    v = NAN;
  } else if (exp == 0) {
    v = std::ldexp(double(man), 1 - bias - manBits);
  } else {
    v = std::ldexp(double((1u << manBits) | man), int(exp) - bias - manBits);
  }
  return neg ? -v : v;
}

// IEEE 754-2019 maximumNumber / minimumNumber on doubles.
double refPick(double a, double b, bool isMax) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return (std::signbit(a) == isMax) ? b : a;
  return ((a < b) == isMax) ? b : a;
}

// Same value, or both NaN; zeros must also agree in sign.
::testing::AssertionResult sameValue(double got, double want) {
  if (std::isnan(want) && std::isnan(got)) return ::testing::AssertionSuccess();
  if (got == want && std::signbit(got) == std::signbit(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << " want " << want;
}

float floatFromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t bitsOfFloat(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Float inputs that stress rounding into a format whose non-negative finite values are
// `values` (sorted): every midpoint (a tie) and its float neighbours, the overflow threshold
// region, zeros, infinities, NaNs, and random bit patterns.
std::vector<float> roundingInputs(const std::vector<double>& values, double maxFinite, uint32_t seed) {
  std::vector<float> in;
  auto addAround = [&in](double m) {
    float f = float(m);
    for (float v : {f, std::nextafter(f, INFINITY), std::nextafter(f, -INFINITY)}) {
      in.push_back(v);
      in.push_back(-v);
    }
  };
  for (size_t i = 0; i + 1 < values.size(); ++i) addAround((values[i] + values[i + 1]) / 2);
  double top = values.back();
  double ulpTop = top - values[values.size() - 2];
  addAround(top + ulpTop / 2);  // tie at the overflow threshold
  addAround(top + ulpTop);
  addAround(maxFinite * 4);
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, floatFromBits(0x7f800001u), floatFromBits(0xffc12345u),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()}) {
    in.push_back(v);
  }
  std::mt19937 rng(seed);
  for (int i = 0; i < 200000; ++i) in.push_back(floatFromBits(rng()));
  // Random values inside the format's range, where most real data lives.
  std::uniform_real_distribution<double> mant(-2.0, 2.0);
  std::uniform_int_distribution<int> ex(-30, 20);
  for (int i = 0; i < 100000; ++i) in.push_back(float(std::ldexp(mant(rng), ex(rng))));
  return in;
}

template <class Fn>
std::vector<double> sortedNonNegativeFinite(int nPatterns, Fn decode) {
  std::vector<double> v;
  for (int b = 0; b < nPatterns; ++b) {
    double d = decode(uint32_t(b));
    if (std::isfinite(d) && !std::signbit(d)) v.push_back(d);
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// ---- Dtype map ----------------------------------------------------------------------------------

TEST(DtypeMap, SizesNamesAndTypes) {
  static_assert(std::is_same_v<DtypeT<ncclInt8>, int8_t> && std::is_same_v<DtypeT<ncclChar>, int8_t>);
  static_assert(std::is_same_v<DtypeT<ncclUint8>, uint8_t> && std::is_same_v<DtypeT<ncclInt>, int32_t>);
  static_assert(std::is_same_v<DtypeT<ncclUint32>, uint32_t> && std::is_same_v<DtypeT<ncclInt64>, int64_t>);
  static_assert(std::is_same_v<DtypeT<ncclUint64>, uint64_t> && std::is_same_v<DtypeT<ncclHalf>, Half>);
  static_assert(std::is_same_v<DtypeT<ncclFloat>, float> && std::is_same_v<DtypeT<ncclDouble>, double>);
  static_assert(std::is_same_v<DtypeT<ncclBfloat16>, Bf16> && std::is_same_v<DtypeT<ncclFloat8e4m3>, Fp8E4M3>);
  static_assert(std::is_same_v<DtypeT<ncclFloat8e5m2>, Fp8E5M2>);
  static_assert(DtypeTraits<Bf16>::kType == ncclBfloat16 && DtypeTraits<uint64_t>::kType == ncclUint64);
  static_assert(dtypeSize(ncclFloat64) == 8 && dtypeSize(ncclFloat8e5m2) == 1 && dtypeSize(ncclNumTypes) == 0);

  const size_t sizes[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int t = 0; t < int(ncclNumTypes); ++t) {
    ncclDataType_t type = ncclDataType_t(t);
    EXPECT_TRUE(dtypeValid(type));
    EXPECT_EQ(dtypeSize(type), sizes[t]) << t;
    size_t viaVisit = visitDtype(type, size_t(0), [](auto tag) { return sizeof(typename decltype(tag)::Type); });
    EXPECT_EQ(viaVisit, sizes[t]) << t;
    EXPECT_STRNE(dtypeName(type), "invalid");
  }
  EXPECT_FALSE(dtypeValid(ncclDataType_t(-1)));
  EXPECT_FALSE(dtypeValid(ncclNumTypes));
  EXPECT_EQ(dtypeSize(ncclDataType_t(-1)), 0u);
  EXPECT_STREQ(dtypeName(ncclDataType_t(99)), "invalid");
  EXPECT_STREQ(dtypeName(ncclFloat8e4m3), "float8e4m3");
  EXPECT_EQ(visitDtype(ncclDataType_t(12), -7, [](auto) { return 1; }), -7);
  EXPECT_TRUE(dtypeIsFloat(ncclBfloat16));
  EXPECT_FALSE(dtypeIsFloat(ncclUint64));
  EXPECT_TRUE(dtypeIsSignedInt(ncclInt8));
  EXPECT_FALSE(dtypeIsSignedInt(ncclUint32));
}

// ---- Half ---------------------------------------------------------------------------------------

TEST(HalfConvert, AllPatternsDecodeAndRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    Half h = Half::fromBits(uint16_t(b));
    double want = refDecode(b, 5, 10, true);
    float f = h.toFloat();
    ASSERT_TRUE(sameValue(f, want)) << std::hex << b;
    EXPECT_EQ(h.isNan(), std::isnan(want)) << std::hex << b;
    uint16_t back = Half::fromFloat(f).bits;
    if (std::isnan(want)) {
      EXPECT_EQ(bitsOfFloat(f), kFloatCanonicalNanBits) << std::hex << b;
      EXPECT_EQ(back, kHalfCanonicalNanBits) << std::hex << b;
    } else {
      ASSERT_EQ(back, b) << "round trip of half 0x" << std::hex << b;
    }
  }
}

TEST(HalfConvert, RoundingMatchesReference) {
  auto values = sortedNonNegativeFinite(65536, [](uint32_t b) { return refDecode(b, 5, 10, true); });
  ASSERT_EQ(values.size(), 31744u);  // 0 .. 65504: 31 binades x 1024 values
  int failures = 0;
  for (float x : roundingInputs(values, 65504.0, 1)) {
    Half h = Half::fromFloat(x);
    if (std::isnan(x)) {
      EXPECT_EQ(h.bits, kHalfCanonicalNanBits);
      continue;
    }
    if (!sameValue(h.toFloat(), refRound(x, kHalfSpec)) && ++failures < 10) {
      ADD_FAILURE() << "float " << x << " (0x" << std::hex << bitsOfFloat(x) << ") -> half 0x" << h.bits;
    }
  }
  EXPECT_EQ(failures, 0);
  // Fixed points of the rules.
  EXPECT_EQ(Half::fromFloat(65504.0f).bits, 0x7bffu);
  EXPECT_EQ(Half::fromFloat(65519.99f).bits, 0x7bffu);
  EXPECT_EQ(Half::fromFloat(65520.0f).bits, 0x7c00u);  // tie above max rounds to even = inf
  EXPECT_EQ(Half::fromFloat(-1e30f).bits, 0xfc00u);
  EXPECT_EQ(Half::fromFloat(std::ldexp(1.0f, -25)).bits, 0x0000u);  // tie with 0 -> 0
  EXPECT_EQ(Half::fromFloat(std::ldexp(1.5f, -25)).bits, 0x0001u);
  EXPECT_EQ(Half::fromFloat(-std::ldexp(1.0f, -26)).bits, 0x8000u);  // signed zero survives
  EXPECT_EQ(Half::fromFloat(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00u);  // tie -> even
  EXPECT_EQ(Half::fromFloat(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02u);
}

// ---- bfloat16 -----------------------------------------------------------------------------------

TEST(Bf16Convert, AllPatternsDecodeAndRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    Bf16 v = Bf16::fromBits(uint16_t(b));
    double want = refDecode(b, 8, 7, true);
    float f = v.toFloat();
    ASSERT_TRUE(sameValue(f, want)) << std::hex << b;
    EXPECT_EQ(v.isNan(), std::isnan(want)) << std::hex << b;
    uint16_t back = Bf16::fromFloat(f).bits;
    if (std::isnan(want)) {
      EXPECT_EQ(back, kBf16CanonicalNanBits) << std::hex << b;
    } else {
      ASSERT_EQ(back, b) << "round trip of bf16 0x" << std::hex << b;
    }
  }
}

TEST(Bf16Convert, RoundingMatchesReference) {
  auto values = sortedNonNegativeFinite(65536, [](uint32_t b) { return refDecode(b, 8, 7, true); });
  int failures = 0;
  for (float x : roundingInputs(values, kBf16Spec.maxFinite, 2)) {
    Bf16 v = Bf16::fromFloat(x);
    if (std::isnan(x)) {
      EXPECT_EQ(v.bits, kBf16CanonicalNanBits);
      continue;
    }
    if (!sameValue(v.toFloat(), refRound(x, kBf16Spec)) && ++failures < 10) {
      ADD_FAILURE() << "float " << x << " (0x" << std::hex << bitsOfFloat(x) << ") -> bf16 0x" << v.bits;
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(Bf16::fromFloat(std::numeric_limits<float>::max()).bits, 0x7f80u);  // rounds up to inf
  EXPECT_EQ(Bf16::fromFloat(floatFromBits(0x3f808000u)).bits, 0x3f80u);         // tie -> even
  EXPECT_EQ(Bf16::fromFloat(floatFromBits(0x3f818000u)).bits, 0x3f82u);         // tie -> even (up)
  EXPECT_EQ(Bf16::fromFloat(floatFromBits(0x00000001u)).bits, 0x0000u);         // float subnormal
}

// ---- fp8 ----------------------------------------------------------------------------------------

TEST(Fp8Convert, E4M3AllPatterns) {
  int nans = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    Fp8E4M3 v = Fp8E4M3::fromBits(uint8_t(b));
    double want = refDecode(b, 4, 3, false);
    ASSERT_TRUE(sameValue(v.toFloat(), want)) << std::hex << b;
    EXPECT_EQ(v.isNan(), std::isnan(want));
    EXPECT_FALSE(std::isinf(v.toFloat())) << "E4M3 has no infinity";
    uint8_t back = Fp8E4M3::fromFloat(v.toFloat()).bits;
    if (std::isnan(want)) {
      ++nans;
      EXPECT_EQ(back, kFp8CanonicalNanBits);
    } else {
      EXPECT_EQ(back, b) << std::hex << b;
    }
  }
  EXPECT_EQ(nans, 2);  // 0x7f and 0xff
  EXPECT_EQ(Fp8E4M3::fromBits(0x7e).toFloat(), 448.0f);
  EXPECT_EQ(Fp8E4M3::fromBits(0x78).toFloat(), 256.0f);
  EXPECT_EQ(Fp8E4M3::fromBits(0x01).toFloat(), std::ldexp(1.0f, -9));
}

TEST(Fp8Convert, E5M2AllPatterns) {
  int nans = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    Fp8E5M2 v = Fp8E5M2::fromBits(uint8_t(b));
    double want = refDecode(b, 5, 2, true);
    ASSERT_TRUE(sameValue(v.toFloat(), want)) << std::hex << b;
    EXPECT_EQ(v.isNan(), std::isnan(want));
    uint8_t back = Fp8E5M2::fromFloat(v.toFloat()).bits;
    if (std::isnan(want)) {
      ++nans;
      EXPECT_EQ(back, kFp8CanonicalNanBits);
    } else if (std::isinf(want)) {
      EXPECT_EQ(back, b == 0x7c ? 0x7bu : 0xfbu) << "inf saturates to the largest finite value";
      EXPECT_EQ(floatToFp8e5m2Bits(v.toFloat(), Fp8Overflow::kNoSat), b);
    } else {
      EXPECT_EQ(back, b) << std::hex << b;
    }
  }
  EXPECT_EQ(nans, 6);
  EXPECT_EQ(Fp8E5M2::fromBits(0x7b).toFloat(), 57344.0f);
  EXPECT_EQ(Fp8E5M2::fromBits(0x01).toFloat(), std::ldexp(1.0f, -16));
}

template <class T>
void checkFp8Rounding(const FormatSpec& spec, int expBits, int manBits, bool ieee, uint32_t seed) {
  auto values = sortedNonNegativeFinite(256, [&](uint32_t b) { return refDecode(b, expBits, manBits, ieee); });
  int failures = 0;
  for (float x : roundingInputs(values, spec.maxFinite, seed)) {
    T v = T::fromFloat(x);
    if (std::isnan(x)) {
      EXPECT_EQ(v.bits, kFp8CanonicalNanBits);
      continue;
    }
    if (!sameValue(v.toFloat(), refRound(x, spec)) && ++failures < 10) {
      ADD_FAILURE() << "float " << x << " (0x" << std::hex << bitsOfFloat(x) << ") -> 0x" << unsigned(v.bits);
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(Fp8Convert, E4M3RoundingMatchesReference) {
  checkFp8Rounding<Fp8E4M3>(kE4M3Spec, 4, 3, false, 3);
  EXPECT_EQ(Fp8E4M3::fromFloat(464.0f).bits, 0x7eu);  // tie above 448 rounds to even (448)
  EXPECT_EQ(Fp8E4M3::fromFloat(465.0f).bits, 0x7eu);  // saturates
  EXPECT_EQ(Fp8E4M3::fromFloat(-1e9f).bits, 0xfeu);
  EXPECT_EQ(Fp8E4M3::fromFloat(INFINITY).bits, 0x7eu);
  EXPECT_EQ(Fp8E4M3::fromFloat(-INFINITY).bits, 0xfeu);
  EXPECT_EQ(floatToFp8e4m3Bits(465.0f, Fp8Overflow::kNoSat), 0x7fu);  // NaN without saturation
  EXPECT_EQ(floatToFp8e4m3Bits(-INFINITY, Fp8Overflow::kNoSat), 0xffu);
  EXPECT_EQ(floatToFp8e4m3Bits(464.0f, Fp8Overflow::kNoSat), 0x7eu);
  EXPECT_EQ(Fp8E4M3::fromFloat(std::ldexp(1.0f, -10)).bits, 0x00u);  // half the smallest: tie -> 0
  EXPECT_EQ(Fp8E4M3::fromFloat(-std::ldexp(1.0f, -11)).bits, 0x80u);
  EXPECT_EQ(Fp8E4M3::fromFloat(-NAN).bits, 0x7fu);
}

TEST(Fp8Convert, E5M2RoundingMatchesReference) {
  checkFp8Rounding<Fp8E5M2>(kE5M2Spec, 5, 2, true, 4);
  EXPECT_EQ(Fp8E5M2::fromFloat(61439.0f).bits, 0x7bu);
  EXPECT_EQ(Fp8E5M2::fromFloat(61440.0f).bits, 0x7bu);  // tie rounds to even (65536): saturated
  EXPECT_EQ(floatToFp8e5m2Bits(61440.0f, Fp8Overflow::kNoSat), 0x7cu);
  EXPECT_EQ(floatToFp8e5m2Bits(61439.0f, Fp8Overflow::kNoSat), 0x7bu);
  EXPECT_EQ(floatToFp8e5m2Bits(-1e9f, Fp8Overflow::kNoSat), 0xfcu);
  EXPECT_EQ(Fp8E5M2::fromFloat(-INFINITY).bits, 0xfbu);
}

// ---- per-element arithmetic ---------------------------------------------------------------------

// NCCL reduces fp8 by widening to half, operating in half and narrowing with saturation. Our
// single float step must give the same bits for every pair of inputs.
template <class T>
void checkFp8MatchesHalfRoute(const FormatSpec& spec) {
  int failures = 0;
  for (uint32_t i = 0; i < 256; ++i) {
    for (uint32_t j = 0; j < 256; ++j) {
      T a = T::fromBits(uint8_t(i)), b = T::fromBits(uint8_t(j));
      double da = a.toFloat(), db = b.toFloat();
      struct Case {
        const char* name;
        T got;
        double want;
      } cases[] = {
          {"add", elemAdd(a, b), refRound(refRound(da + db, kHalfSpec), spec)},
          {"mul", elemMul(a, b), refRound(refRound(da * db, kHalfSpec), spec)},
          {"max", elemMax(a, b), refPick(da, db, true)},
          {"min", elemMin(a, b), refPick(da, db, false)},
      };
      for (const Case& c : cases) {
        double got = c.got.toFloat();
        bool ok = sameValue(got, c.want);
        if (std::isnan(c.want)) ok = ok && c.got.bits == kFp8CanonicalNanBits;
        if (!ok && ++failures < 10) {
          ADD_FAILURE() << c.name << "(0x" << std::hex << i << ", 0x" << j << ") = 0x" << unsigned(c.got.bits)
                        << std::dec << " (" << got << "), want " << c.want;
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(Fp8Arith, E4M3AllPairsMatchHalfRoute) { checkFp8MatchesHalfRoute<Fp8E4M3>(kE4M3Spec); }
TEST(Fp8Arith, E5M2AllPairsMatchHalfRoute) { checkFp8MatchesHalfRoute<Fp8E5M2>(kE5M2Spec); }

// Half/bf16 steps through float must be the correctly rounded half/bf16 operation (what
// __hadd/__hmul compute natively).
template <class T>
void checkNarrowCorrectlyRounded(const FormatSpec& spec, uint32_t seed) {
  std::mt19937 rng(seed);
  int failures = 0;
  for (int k = 0; k < 400000; ++k) {
    uint32_t r = rng();
    T a = T::fromBits(uint16_t(r)), b = T::fromBits(uint16_t(r >> 16));
    // Half the time, force nearby exponents so additions round rather than absorb.
    if (k & 1) b.bits = uint16_t((a.bits & 0xfc00u) ^ (b.bits & 0x83ffu));
    double da = a.toFloat(), db = b.toFloat();
    double wantAdd = refRound(da + db, spec), wantMul = refRound(da * db, spec);
    if ((!sameValue(elemAdd(a, b).toFloat(), wantAdd) || !sameValue(elemMul(a, b).toFloat(), wantMul)) &&
        ++failures < 10) {
      ADD_FAILURE() << std::hex << "0x" << a.bits << " op 0x" << b.bits;
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(HalfArith, AddMulCorrectlyRounded) { checkNarrowCorrectlyRounded<Half>(kHalfSpec, 5); }
TEST(Bf16Arith, AddMulCorrectlyRounded) { checkNarrowCorrectlyRounded<Bf16>(kBf16Spec, 6); }

TEST(RedOpElem, MaxMinNanAndSignedZero) {
  const float nan = NAN;
  EXPECT_EQ(elemMax(nan, 1.0f), 1.0f);
  EXPECT_EQ(elemMax(1.0f, nan), 1.0f);
  EXPECT_EQ(elemMin(nan, -3.0f), -3.0f);
  EXPECT_EQ(bitsOfFloat(elemMax(nan, nan)), kFloatCanonicalNanBits);
  EXPECT_FALSE(std::signbit(elemMax(0.0f, -0.0f)));
  EXPECT_FALSE(std::signbit(elemMax(-0.0f, 0.0f)));
  EXPECT_TRUE(std::signbit(elemMin(0.0f, -0.0f)));
  EXPECT_TRUE(std::signbit(elemMin(-0.0f, 0.0f)));
  EXPECT_EQ(elemMax(-INFINITY, -1e30f), -1e30f);
  EXPECT_EQ(elemMax(std::nan(""), 2.0), 2.0);
  EXPECT_FALSE(std::signbit(elemMax(-0.0, 0.0)));

  Half hn = Half::fromBits(0xfe01), h1 = Half::fromFloat(1.0f);
  EXPECT_EQ(elemMax(hn, h1).bits, h1.bits);
  EXPECT_EQ(elemMin(h1, hn).bits, h1.bits);
  EXPECT_EQ(elemMax(hn, hn).bits, kHalfCanonicalNanBits);
  EXPECT_EQ(elemMax(Half::fromBits(0x8000), Half::fromBits(0x0000)).bits, 0x0000u);
  EXPECT_EQ(elemMin(Half::fromBits(0x0000), Half::fromBits(0x8000)).bits, 0x8000u);
  EXPECT_EQ(elemMax(Bf16::fromBits(0x7fc1), Bf16::fromFloat(-2.0f)).toFloat(), -2.0f);
  EXPECT_EQ(elemMax(Fp8E4M3::fromBits(0xff), Fp8E4M3::fromFloat(-2.0f)).toFloat(), -2.0f);

  EXPECT_EQ(elemMax<int8_t>(-128, 127), 127);
  EXPECT_EQ(elemMin<int8_t>(-128, 127), -128);
  EXPECT_EQ(elemMax<uint8_t>(0, 255), 255);
  EXPECT_EQ(elemMin<uint64_t>(~0ull, 1), 1u);
  EXPECT_EQ(elemMax<int64_t>(INT64_MIN, -1), -1);
}

TEST(RedOpElem, IntegerWrapAndOverflowSaturation) {
  EXPECT_EQ(elemAdd<int32_t>(INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(elemAdd<uint8_t>(255, 1), 0);
  EXPECT_EQ(elemAdd<int8_t>(127, 1), -128);
  EXPECT_EQ(elemMul<int8_t>(16, 16), 0);
  EXPECT_EQ(elemMul<int8_t>(-128, -1), -128);
  EXPECT_EQ(elemMul<uint8_t>(255, 255), 1);
  EXPECT_EQ(elemMul<int32_t>(65536, 65536), 0);
  EXPECT_EQ(elemMul<int64_t>(INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(elemMul<uint64_t>(1ull << 32, 1ull << 32), 0u);

  EXPECT_EQ(elemAdd(Fp8E4M3::fromFloat(448), Fp8E4M3::fromFloat(448)).bits, 0x7eu);
  EXPECT_EQ(elemMul(Fp8E4M3::fromFloat(-448), Fp8E4M3::fromFloat(2)).bits, 0xfeu);
  EXPECT_EQ(elemAdd(Fp8E5M2::fromFloat(57344), Fp8E5M2::fromFloat(57344)).bits, 0x7bu);
  EXPECT_EQ(elemAdd(Fp8E5M2::fromBits(0x7c), Fp8E5M2::fromFloat(1)).bits, 0x7bu);  // inf saturates too
  EXPECT_EQ(elemAdd(Fp8E5M2::fromBits(0x7c), Fp8E5M2::fromBits(0xfc)).bits, kFp8CanonicalNanBits);
  EXPECT_EQ(elemAdd(Half::fromFloat(65504), Half::fromFloat(65504)).bits, 0x7c00u);
  EXPECT_EQ(elemAdd(Half::fromFloat(2048), Half::fromFloat(1)).toFloat(), 2048.0f);  // tie -> even
  EXPECT_EQ(elemAdd(Half::fromFloat(2050), Half::fromFloat(1)).toFloat(), 2052.0f);
  EXPECT_EQ(elemDivTrunc<int32_t>(-7, 2), -3);
  EXPECT_EQ(elemDivTrunc<int8_t>(-128, 200), 0);
  EXPECT_EQ(elemDivTrunc<int64_t>(INT64_MIN, 1), INT64_MIN);
  EXPECT_EQ(elemDivTrunc<uint64_t>(~0ull, 2), ~0ull >> 1);
}

// ---- ops x types through the ring step order ----------------------------------------------------

template <class T>
T fromDouble(double d) {
  if constexpr (kIsNarrowFloat<T>) return T::fromFloat(float(d));
  else return static_cast<T>(d);
}
template <class T>
double toDouble(T v) {
  if constexpr (kIsNarrowFloat<T>) return v.toFloat();
  else return double(v);
}

// The step order of a ring reduction, one element vector per rank: the first rank sends
// preOp(x), every later rank reduces its own pre-op'd input into what arrives, and the last
// one applies postOp. With one rank: postOp(preOp(x)).
template <class T>
std::vector<T> ringReduce(const std::vector<std::vector<T>>& in, const DevRedOp& op) {
  constexpr ncclDataType_t kType = DtypeTraits<T>::kType;
  size_t count = in[0].size();
  std::vector<T> acc(count);
  EXPECT_EQ(applyPreOp(acc.data(), in[0].data(), count, kType, op), ncclSuccess);
  if (in.size() == 1) {
    EXPECT_EQ(applyPostOp(acc.data(), acc.data(), count, kType, op), ncclSuccess);
    return acc;
  }
  for (size_t r = 1; r < in.size(); ++r) {
    unsigned steps = kPreOpB | (r + 1 == in.size() ? kPostOp : 0u);
    EXPECT_EQ(reduceBuffers(acc.data(), acc.data(), in[r].data(), count, kType, op, steps), ncclSuccess);
  }
  return acc;
}

template <class T>
class RedOpTyped : public ::testing::Test {
 protected:
  static constexpr bool kFp8 = std::is_same_v<T, Fp8E4M3> || std::is_same_v<T, Fp8E5M2>;
  static constexpr bool kSigned = !std::is_unsigned_v<T>;  // the float structs count as signed
  static constexpr int kCount = 6;
  const int rankCounts_[5] = {1, 2, 3, 5, 8};

  // Element i's sign and scale: small factors that keep every partial result exact in T.
  static double sign(int i) { return kSigned && (i & 1) ? -1.0 : 1.0; }
  static double scale(int i) { return i < 2 ? 1.0 : i < 4 ? 2.0 : (kIsFloatElem<T> ? 0.5 : 3.0); }
  // Rank r's base value for sums: r+1, or 1 for fp8 (its partial sums of r+1 are not exact).
  static double base(int r) { return kFp8 ? 1.0 : double(r + 1); }
  static double baseSum(int n) { return kFp8 ? n : n * (n + 1) / 2.0; }

  static std::vector<std::vector<T>> inputs(int n, double (*value)(int r, int i)) {
    std::vector<std::vector<T>> in(n, std::vector<T>(kCount));
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < kCount; ++i) in[r][i] = fromDouble<T>(value(r, i));
    return in;
  }

  static DevRedOp builtin(ncclRedOp_t op, int n) {
    DevRedOp d;
    EXPECT_EQ(makeDevRedOp(op, DtypeTraits<T>::kType, n, &d), ncclSuccess);
    return d;
  }
};

using AllElementTypes =
    ::testing::Types<int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, Half, float, double, Bf16, Fp8E4M3, Fp8E5M2>;
TYPED_TEST_SUITE(RedOpTyped, AllElementTypes);

#define ACCL_EXPECT_ELEMENTS(got, n, wantExpr, what)                                                      \
  for (int i = 0; i < TestFixture::kCount; ++i) {                                                         \
    double want_ = (wantExpr);                                                                            \
    EXPECT_TRUE(sameValue(toDouble((got)[i]), want_))                                                     \
        << (what) << " " << DtypeTraits<TypeParam>::kName << " nRanks=" << (n) << " element " << i; \
  }

TYPED_TEST(RedOpTyped, Sum) {
  using F = TestFixture;
  for (int n : this->rankCounts_) {
    auto in = F::inputs(n, [](int r, int i) { return F::sign(i) * F::scale(i) * F::base(r); });
    auto got = ringReduce(in, F::builtin(ncclSum, n));
    ACCL_EXPECT_ELEMENTS(got, n, F::sign(i) * F::scale(i) * F::baseSum(n), "sum");
  }
}

TYPED_TEST(RedOpTyped, Prod) {
  using F = TestFixture;
  // Rank factors cycle 1, 2, -1 (1, 2, 1 for unsigned); element i adds a factor sign(i) (and
  // 1/2 on floats for i >= 4) per rank. Every partial product is a signed power of two.
  auto rankFactor = [](int r) { return r % 3 == 1 ? 2.0 : (r % 3 == 2 && F::kSigned ? -1.0 : 1.0); };
  for (int n : this->rankCounts_) {
    std::vector<std::vector<TypeParam>> in(n, std::vector<TypeParam>(F::kCount));
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < F::kCount; ++i) {
        double elemFactor = F::sign(i) * (i >= 4 && kIsFloatElem<TypeParam> ? 0.5 : 1.0);
        in[r][i] = fromDouble<TypeParam>(elemFactor * rankFactor(r));
      }
    auto got = ringReduce(in, F::builtin(ncclProd, n));
    double ranks = 1;
    for (int r = 0; r < n; ++r) ranks *= rankFactor(r);
    ACCL_EXPECT_ELEMENTS(got, n, ranks * std::pow(F::sign(i) * (i >= 4 && kIsFloatElem<TypeParam> ? 0.5 : 1.0), n),
                         "prod");
  }
}

TYPED_TEST(RedOpTyped, MaxMin) {
  using F = TestFixture;
  for (int n : this->rankCounts_) {
    // Rank r holds sign(i) * (((r + i) mod n) + 1): the values 1..n spread over the ranks.
    std::vector<std::vector<TypeParam>> in(n, std::vector<TypeParam>(F::kCount));
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < F::kCount; ++i) in[r][i] = fromDouble<TypeParam>(F::sign(i) * ((r + i) % n + 1));
    auto gotMax = ringReduce(in, F::builtin(ncclMax, n));
    auto gotMin = ringReduce(in, F::builtin(ncclMin, n));
    ACCL_EXPECT_ELEMENTS(gotMax, n, F::sign(i) > 0 ? double(n) : -1.0, "max");
    ACCL_EXPECT_ELEMENTS(gotMin, n, F::sign(i) > 0 ? 1.0 : -double(n), "min");
  }
}

TYPED_TEST(RedOpTyped, Avg) {
  using F = TestFixture;
  using T = TypeParam;
  for (int n : this->rankCounts_) {
    auto in = F::inputs(n, [](int r, int i) { return F::sign(i) * F::scale(i) * F::base(r); });
    DevRedOp op = F::builtin(ncclAvg, n);
    auto got = ringReduce(in, op);
    if constexpr (kIsIntElem<T>) {
      EXPECT_EQ(op.kind, DevRedOpKind::kSumPostDiv);
      EXPECT_EQ(op.arg, uint64_t(n));
      // Integer sum, then one division truncating toward zero: e.g. -3/2 = -1, not -2.
      ACCL_EXPECT_ELEMENTS(got, n, double(int64_t(F::sign(i) * F::scale(i) * F::baseSum(n)) / int64_t(n)), "avg");
    } else {
      EXPECT_EQ(op.kind, DevRedOpKind::kPreMulSum);
      EXPECT_FALSE(op.scalarIsPtr);
      T scalar = loadRedOpScalar<T>(op);
      // 1/n is computed in double, rounded to float, then to T; double keeps the double quotient.
      double wantScalar = std::is_same_v<T, double> ? 1.0 / n : toDouble(fromDouble<T>(double(float(1.0 / n))));
      EXPECT_TRUE(sameValue(toDouble(scalar), wantScalar));
      bool exact = (n & (n - 1)) == 0;  // 1/n and every scaled contribution are exact in T
      double eps = std::is_same_v<T, double> ? 0x1p-52
                   : std::is_same_v<T, float> ? 0x1p-23
                   : std::is_same_v<T, Half>  ? 0x1p-10
                   : std::is_same_v<T, Bf16>  ? 0x1p-7
                   : std::is_same_v<T, Fp8E4M3> ? 0x1p-3 : 0x1p-2;
      for (int i = 0; i < F::kCount; ++i) {
        double want = F::sign(i) * F::scale(i) * F::baseSum(n) / n;
        if (exact) {
          EXPECT_TRUE(sameValue(toDouble(got[i]), want)) << DtypeTraits<T>::kName << " n=" << n << " i=" << i;
        } else {
          EXPECT_NEAR(toDouble(got[i]), want, 2 * n * eps * std::fabs(want))
              << DtypeTraits<T>::kName << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

TYPED_TEST(RedOpTyped, PreMulSumImmediateAndPointer) {
  using F = TestFixture;
  using T = TypeParam;
  constexpr ncclDataType_t kType = DtypeTraits<T>::kType;
  for (int n : this->rankCounts_) {
    // Immediate scalar 2: result 2 * sum of contributions.
    T two = fromDouble<T>(2.0);
    DevRedOp imm;
    ASSERT_EQ(makePreMulSum(kType, &two, false, &imm), ncclSuccess);
    two = fromDouble<T>(5.0);  // the value was copied at creation
    auto in = F::inputs(n, [](int r, int i) { return F::sign(i) * F::base(r); });
    auto got = ringReduce(in, imm);
    ACCL_EXPECT_ELEMENTS(got, n, 2.0 * F::sign(i) * F::baseSum(n), "premulsum immediate");

    // Pointer scalar: read when the reduction runs, so the last store before it counts.
    T scalar = fromDouble<T>(7.0);
    DevRedOp ptr;
    ASSERT_EQ(makePreMulSum(kType, &scalar, true, &ptr), ncclSuccess);
    EXPECT_TRUE(ptr.scalarIsPtr);
    double s = kIsFloatElem<T> ? 0.5 : 3.0;
    scalar = fromDouble<T>(s);
    got = ringReduce(in, ptr);
    ACCL_EXPECT_ELEMENTS(got, n, s * F::sign(i) * F::baseSum(n), "premulsum pointer");
  }
}

TYPED_TEST(RedOpTyped, StepsAndAliasing) {
  using T = TypeParam;
  constexpr ncclDataType_t kType = DtypeTraits<T>::kType;
  T three = fromDouble<T>(3.0);
  DevRedOp pms;
  ASSERT_EQ(makePreMulSum(kType, &three, false, &pms), ncclSuccess);
  std::vector<T> a = {fromDouble<T>(1), fromDouble<T>(2)}, b = {fromDouble<T>(4), fromDouble<T>(1)};
  std::vector<T> out(2);
  // No preOp flag: a plain sum. kPreOpB scales b only, kPreOpA|kPreOpB both.
  ASSERT_EQ(reduceBuffers(out.data(), a.data(), b.data(), 2, kType, pms), ncclSuccess);
  EXPECT_EQ(toDouble(out[0]), 5.0);
  ASSERT_EQ(reduceBuffers(out.data(), a.data(), b.data(), 2, kType, pms, kPreOpB), ncclSuccess);
  EXPECT_EQ(toDouble(out[0]), 13.0 - (std::is_same_v<T, Fp8E5M2> ? 1.0 : 0.0));  // e5m2: 13 -> 12
  ASSERT_EQ(reduceBuffers(out.data(), a.data(), b.data(), 2, kType, pms, kPreOpA | kPreOpB), ncclSuccess);
  EXPECT_EQ(toDouble(out[1]), 9.0 - (kIsNarrowFloat<T> && std::is_same_v<T, Fp8E5M2> ? 1.0 : 0.0));  // 8 or 9
  // kPostOp on an op without postOp changes nothing; in place on a and on b.
  DevRedOp sum;
  ASSERT_EQ(makeDevRedOp(ncclSum, kType, 4, &sum), ncclSuccess);
  ASSERT_EQ(reduceBuffers(a.data(), a.data(), b.data(), 2, kType, sum, kPostOp | kPreOpA), ncclSuccess);
  EXPECT_EQ(toDouble(a[0]), 5.0);
  ASSERT_EQ(reduceBuffers(b.data(), a.data(), b.data(), 2, kType, sum), ncclSuccess);
  EXPECT_EQ(toDouble(b[1]), 4.0);
  ASSERT_EQ(applyPreOp(out.data(), a.data(), 2, kType, pms), ncclSuccess);
  EXPECT_EQ(toDouble(out[1]), 9.0 - (std::is_same_v<T, Fp8E5M2> ? 1.0 : 0.0));
  ASSERT_EQ(applyPostOp(out.data(), a.data(), 2, kType, pms), ncclSuccess);  // identity = copy
  EXPECT_EQ(toDouble(out[1]), 3.0);
  // Zero elements is a no-op, even with null buffers.
  EXPECT_EQ(reduceBuffers(nullptr, nullptr, nullptr, 0, kType, sum), ncclSuccess);
  EXPECT_EQ(applyPreOp(nullptr, nullptr, 0, kType, pms), ncclSuccess);
}

// ---- integer average details --------------------------------------------------------------------

TEST(RedOpAvg, IntegerTruncationAndWrap) {
  DevRedOp avg;
  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclInt32, 4, &avg), ncclSuccess);
  std::vector<int32_t> sums = {-7, 7, -4, -3, 0, INT32_MIN};
  std::vector<int32_t> out(sums.size());
  ASSERT_EQ(applyPostOp(out.data(), sums.data(), sums.size(), ncclInt32, avg), ncclSuccess);
  EXPECT_EQ(out, (std::vector<int32_t>{-1, 1, -1, 0, 0, INT32_MIN / 4}));

  // int8, 16 ranks contributing 8: the sum 128 wraps to -128 first (as on NCCL), then /16 = -8.
  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclInt8, 16, &avg), ncclSuccess);
  int8_t acc = 8, contribution = 8;
  for (int r = 1; r < 16; ++r) {
    ASSERT_EQ(reduceBuffers(&acc, &acc, &contribution, 1, ncclInt8, avg, kPreOpB), ncclSuccess);
  }
  EXPECT_EQ(acc, int8_t(-128));
  int8_t avg8 = 0;
  ASSERT_EQ(applyPostOp(&avg8, &acc, 1, ncclInt8, avg), ncclSuccess);
  EXPECT_EQ(avg8, -8);

  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclUint64, 3, &avg), ncclSuccess);
  uint64_t big = ~0ull, q = 0;
  ASSERT_EQ(applyPostOp(&q, &big, 1, ncclUint64, avg), ncclSuccess);
  EXPECT_EQ(q, ~0ull / 3);
}

// ---- descriptors --------------------------------------------------------------------------------

TEST(RedOpDescriptor, BuiltinMapping) {
  DevRedOp d;
  ASSERT_EQ(makeDevRedOp(ncclSum, ncclFloat, 3, &d), ncclSuccess);
  EXPECT_EQ(d.kind, DevRedOpKind::kSum);
  ASSERT_EQ(makeDevRedOp(ncclProd, ncclInt8, 3, &d), ncclSuccess);
  EXPECT_EQ(d.kind, DevRedOpKind::kProd);
  ASSERT_EQ(makeDevRedOp(ncclMax, ncclUint64, 3, &d), ncclSuccess);
  EXPECT_EQ(d.kind, DevRedOpKind::kMax);
  ASSERT_EQ(makeDevRedOp(ncclMin, ncclBfloat16, 3, &d), ncclSuccess);
  EXPECT_EQ(d.kind, DevRedOpKind::kMin);
  EXPECT_EQ(devRedOpNetOp(d), ncclMin);

  // Avg scalars: 1/3 rounded through float into each type.
  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclFloat8e4m3, 3, &d), ncclSuccess);
  EXPECT_EQ(d.kind, DevRedOpKind::kPreMulSum);
  EXPECT_EQ(d.arg, 0x2bu);  // 0.34375 = 1.011b * 2^-2, the e4m3 value nearest 1/3
  EXPECT_EQ(devRedOpNetOp(d), ncclSum);
  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclFloat8e5m2, 3, &d), ncclSuccess);
  EXPECT_EQ(d.arg, 0x35u);  // 0.3125 = 1.01b * 2^-2
  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclFloat16, 3, &d), ncclSuccess);
  EXPECT_EQ(d.arg, 0x3555u);
  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclBfloat16, 3, &d), ncclSuccess);
  EXPECT_EQ(d.arg, 0x3eabu);
  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclFloat32, 3, &d), ncclSuccess);
  EXPECT_EQ(d.arg, uint64_t(bitsOfFloat(float(1.0 / 3))));
  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclFloat64, 3, &d), ncclSuccess);
  double third = 1.0 / 3;
  uint64_t thirdBits;
  std::memcpy(&thirdBits, &third, 8);
  EXPECT_EQ(d.arg, thirdBits);
  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclInt64, 7, &d), ncclSuccess);
  EXPECT_EQ(d.kind, DevRedOpKind::kSumPostDiv);
  EXPECT_EQ(d.arg, 7u);
  EXPECT_EQ(devRedOpNetOp(d), ncclSum);
  // e4m3's 1/nRanks underflows to zero beyond 1024 ranks, as on NCCL.
  ASSERT_EQ(makeDevRedOp(ncclAvg, ncclFloat8e4m3, 2048, &d), ncclSuccess);
  EXPECT_EQ(d.arg, 0u);
}

TEST(RedOpDescriptor, Errors) {
  DevRedOp d;
  EXPECT_EQ(makeDevRedOp(ncclNumOps, ncclFloat, 2, &d), ncclInvalidArgument);
  EXPECT_NE(std::string(lastErrorText()).find("5"), std::string::npos);
  EXPECT_EQ(makeDevRedOp(ncclRedOp_t(-1), ncclFloat, 2, &d), ncclInvalidArgument);
  EXPECT_EQ(makeDevRedOp(ncclSum, ncclNumTypes, 2, &d), ncclInvalidArgument);
  EXPECT_EQ(makeDevRedOp(ncclAvg, ncclInt32, 0, &d), ncclInvalidArgument);
  EXPECT_EQ(makePreMulSum(ncclFloat, nullptr, false, &d), ncclInvalidArgument);
  EXPECT_EQ(makePreMulSum(ncclDataType_t(42), &d, false, &d), ncclInvalidArgument);

  float x = 1, y = 2, z = 0;
  EXPECT_EQ(reduceBuffers(&z, &x, &y, 1, ncclDataType_t(12), d), ncclInternalError);
  DevRedOp bad;
  bad.kind = DevRedOpKind::kSumPostDiv;
  bad.arg = 2;
  EXPECT_EQ(reduceBuffers(&z, &x, &y, 1, ncclFloat, bad), ncclInternalError);  // no float SumPostDiv
  EXPECT_NE(std::string(lastErrorText()).find("SumPostDiv"), std::string::npos);
  int32_t i = 4, j = 0;
  bad.arg = 0;
  EXPECT_EQ(applyPostOp(&j, &i, 1, ncclInt32, bad), ncclInternalError);  // divisor 0
  bad.kind = DevRedOpKind(17);
  EXPECT_EQ(applyPreOp(&j, &i, 1, ncclInt32, bad), ncclInternalError);
}

// ---- registry -----------------------------------------------------------------------------------

// Two fixed "communicator addresses" so the mangling is deterministic.
const void* const kCommA = reinterpret_cast<const void*>(uintptr_t(0x7f12345670a0ull));
const void* const kCommB = reinterpret_cast<const void*>(uintptr_t(0x55aa00c0ffe0ull));

TEST(RedOpRegistry, MangleIsAnInvolutionThatKeepsBuiltins) {
  for (int op = 0; op < int(ncclNumOps); ++op) {
    EXPECT_EQ(RedOpRegistry::mangle(kCommA, ncclRedOp_t(op)), ncclRedOp_t(op));
  }
  std::mt19937 rng(7);
  for (int k = 0; k < 10000; ++k) {
    ncclRedOp_t raw = ncclRedOp_t(int(ncclNumOps) + int(rng() % 100000));
    ncclRedOp_t m = RedOpRegistry::mangle(kCommA, raw);
    EXPECT_GE(int(m), int(ncclNumOps));
    EXPECT_EQ(RedOpRegistry::mangle(kCommA, m), raw);
  }
  EXPECT_NE(RedOpRegistry::mangle(kCommA, ncclRedOp_t(5)), RedOpRegistry::mangle(kCommB, ncclRedOp_t(5)));
}

TEST(RedOpRegistry, CreateResolveDestroy) {
  RedOpRegistry reg(kCommA);
  float scalar = 0.25f;
  ncclRedOp_t op;
  ASSERT_EQ(reg.createPreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate), ncclSuccess);
  EXPECT_GE(int(op), int(ncclNumOps));
  EXPECT_EQ(op, RedOpRegistry::mangle(kCommA, ncclRedOp_t(ncclNumOps)));  // first entry
  EXPECT_EQ(reg.liveCount(), 1);
  EXPECT_EQ(reg.capacity(), 4);
  scalar = 9.0f;

  DevRedOp d;
  ASSERT_EQ(reg.resolve("ncclAllReduce", op, ncclFloat32, 4, &d), ncclSuccess);
  EXPECT_EQ(d.kind, DevRedOpKind::kPreMulSum);
  EXPECT_FALSE(d.scalarIsPtr);
  EXPECT_EQ(loadRedOpScalar<float>(d), 0.25f);

  // Device residence keeps the pointer.
  double dscalar = 3.0;
  ncclRedOp_t opPtr;
  ASSERT_EQ(reg.createPreMulSum(&opPtr, &dscalar, ncclFloat64, ncclScalarDevice), ncclSuccess);
  ASSERT_EQ(reg.resolve("ncclReduce", opPtr, ncclFloat64, 4, &d), ncclSuccess);
  EXPECT_TRUE(d.scalarIsPtr);
  EXPECT_EQ(d.arg, uint64_t(reinterpret_cast<uintptr_t>(&dscalar)));
  dscalar = 1.5;
  EXPECT_EQ(loadRedOpScalar<double>(d), 1.5);

  // Built-ins resolve without the table.
  ASSERT_EQ(reg.resolve("ncclAllReduce", ncclAvg, ncclInt32, 6, &d), ncclSuccess);
  EXPECT_EQ(d.kind, DevRedOpKind::kSumPostDiv);
  EXPECT_EQ(d.arg, 6u);

  ASSERT_EQ(reg.destroy(op), ncclSuccess);
  EXPECT_EQ(reg.liveCount(), 1);
  EXPECT_EQ(reg.resolve("ncclAllReduce", op, ncclFloat32, 4, &d), ncclInvalidArgument);
  std::string msg = lastErrorText();
  EXPECT_NE(msg.find("ncclAllReduce"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(int(op))), std::string::npos) << msg;
  EXPECT_EQ(reg.destroy(op), ncclInvalidArgument);  // twice
  msg = lastErrorText();
  EXPECT_NE(msg.find("ncclRedOpDestroy"), std::string::npos) << msg;
  EXPECT_EQ(reg.destroy(opPtr), ncclSuccess);
  EXPECT_EQ(reg.liveCount(), 0);
}

TEST(RedOpRegistry, WrongCommAndWrongDatatypeRejected) {
  RedOpRegistry regA(kCommA), regB(kCommB);
  int32_t scalar = 3;
  ncclRedOp_t opA, opB;
  ASSERT_EQ(regA.createPreMulSum(&opA, &scalar, ncclInt32, ncclScalarHostImmediate), ncclSuccess);
  ASSERT_EQ(regB.createPreMulSum(&opB, &scalar, ncclInt32, ncclScalarHostImmediate), ncclSuccess);
  EXPECT_NE(opA, opB);  // same table slot, different handles
  DevRedOp d;
  EXPECT_EQ(regB.resolve("ncclAllReduce", opA, ncclInt32, 2, &d), ncclInvalidArgument);
  EXPECT_EQ(regA.resolve("ncclAllReduce", opB, ncclInt32, 2, &d), ncclInvalidArgument);
  EXPECT_EQ(regB.destroy(opA), ncclInvalidArgument);
  EXPECT_EQ(regB.liveCount(), 1);

  EXPECT_EQ(regA.resolve("ncclReduceScatter", opA, ncclUint32, 2, &d), ncclInvalidArgument);
  std::string msg = lastErrorText();
  EXPECT_NE(msg.find("ncclReduceScatter"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("uint32"), std::string::npos) << msg;
  ASSERT_EQ(regA.resolve("ncclReduceScatter", opA, ncclInt32, 2, &d), ncclSuccess);
  EXPECT_EQ(loadRedOpScalar<int32_t>(d), 3);

  EXPECT_EQ(regA.resolve("ncclAllReduce", ncclRedOp_t(-3), ncclInt32, 2, &d), ncclInvalidArgument);
  EXPECT_EQ(regA.resolve("ncclAllReduce", ncclSum, ncclDataType_t(12), 2, &d), ncclInvalidArgument);
  EXPECT_EQ(regA.resolve("ncclAllReduce", ncclRedOp_t(123456), ncclInt32, 2, &d), ncclInvalidArgument);
}

TEST(RedOpRegistry, DestroyErrors) {
  RedOpRegistry reg(kCommA);
  for (int op = 0; op < int(ncclNumOps); ++op) {
    EXPECT_EQ(reg.destroy(ncclRedOp_t(op)), ncclInvalidArgument);
    EXPECT_NE(std::string(lastErrorText()).find("built-in"), std::string::npos);
  }
  EXPECT_EQ(reg.destroy(ncclRedOp_t(-1)), ncclInvalidArgument);
  EXPECT_EQ(reg.destroy(ncclRedOp_t(ncclNumOps)), ncclInvalidArgument);  // nothing created yet
  EXPECT_EQ(reg.destroy(ncclRedOp_t(ncclMaxRedOp)), ncclInvalidArgument);
}

TEST(RedOpRegistry, CreateErrors) {
  RedOpRegistry reg(kCommA);
  float s = 1;
  ncclRedOp_t op;
  EXPECT_EQ(reg.createPreMulSum(nullptr, &s, ncclFloat, ncclScalarHostImmediate), ncclInvalidArgument);
  EXPECT_EQ(reg.createPreMulSum(&op, nullptr, ncclFloat, ncclScalarHostImmediate), ncclInvalidArgument);
  EXPECT_NE(std::string(lastErrorText()).find("ncclRedOpCreatePreMulSum"), std::string::npos);
  EXPECT_EQ(reg.createPreMulSum(&op, &s, ncclNumTypes, ncclScalarHostImmediate), ncclInvalidArgument);
  EXPECT_EQ(reg.createPreMulSum(&op, &s, ncclFloat, ncclScalarResidence_t(2)), ncclInvalidArgument);
  EXPECT_EQ(reg.liveCount(), 0);
}

TEST(RedOpRegistry, FreeListReuseAndGrowth) {
  RedOpRegistry reg(kCommA);
  uint8_t s = 2;
  std::vector<ncclRedOp_t> ops(9);
  for (auto& op : ops) ASSERT_EQ(reg.createPreMulSum(&op, &s, ncclUint8, ncclScalarHostImmediate), ncclSuccess);
  EXPECT_EQ(reg.capacity(), 16);  // 4 -> 8 -> 16
  EXPECT_EQ(reg.liveCount(), 9);
  for (size_t k = 0; k < ops.size(); ++k) {
    EXPECT_EQ(RedOpRegistry::mangle(kCommA, ops[k]), ncclRedOp_t(int(ncclNumOps) + int(k)));
  }
  // LIFO reuse: the most recently freed slot comes back first, with the same handle.
  ASSERT_EQ(reg.destroy(ops[2]), ncclSuccess);
  ASSERT_EQ(reg.destroy(ops[6]), ncclSuccess);
  ncclRedOp_t again;
  int16_t s16 = 0;  // any datatype; this one is float16-sized
  ASSERT_EQ(reg.createPreMulSum(&again, &s16, ncclFloat16, ncclScalarHostImmediate), ncclSuccess);
  EXPECT_EQ(again, ops[6]);
  ASSERT_EQ(reg.createPreMulSum(&again, &s, ncclUint8, ncclScalarHostImmediate), ncclSuccess);
  EXPECT_EQ(again, ops[2]);
  ASSERT_EQ(reg.createPreMulSum(&again, &s, ncclUint8, ncclScalarHostImmediate), ncclSuccess);
  EXPECT_EQ(RedOpRegistry::mangle(kCommA, again), ncclRedOp_t(int(ncclNumOps) + 9));
  EXPECT_EQ(reg.capacity(), 16);
  EXPECT_EQ(reg.liveCount(), 10);
  // The reused slot carries the new datatype.
  DevRedOp d;
  EXPECT_EQ(reg.resolve("ncclAllReduce", ops[6], ncclUint8, 2, &d), ncclInvalidArgument);
  EXPECT_EQ(reg.resolve("ncclAllReduce", ops[6], ncclFloat16, 2, &d), ncclSuccess);
}

}  // namespace
}  // namespace accl

namespace accl {
namespace {

// The host loops (reduce_buffers.cc) have one vectorized loop per aliasing case: out of place,
// dst == a, dst == b, all three the same. Each must give, byte for byte, what the same reduction
// gives one element at a time (no vector body runs for one element), for every type, op and step
// set, over random bit patterns (NaNs, infinities and subnormals of every float type included) and
// lengths around vector widths.
TEST(ReduceBuffersLoops, EveryAliasingCaseMatchesElementByElement) {
  std::mt19937_64 rng(20261203);
  const std::vector<DevRedOp> ops = {
      {DevRedOpKind::kSum, false, 0}, {DevRedOpKind::kProd, false, 0}, {DevRedOpKind::kMax, false, 0},
      {DevRedOpKind::kMin, false, 0}, {DevRedOpKind::kSumPostDiv, false, 3}};
  int checked = 0;
  for (int t = 0; t < ncclNumTypes; ++t) {
    const ncclDataType_t type = static_cast<ncclDataType_t>(t);
    const size_t width = dtypeSize(type);
    for (const DevRedOp& op : ops) {
      // Only the pairs reduceBuffers implements (SumPostDiv: integers only).
      uint8_t probe[8] = {};
      if (reduceBuffers(probe, probe, probe, 1, type, op) != ncclSuccess) continue;
      for (unsigned steps : {0u, unsigned(kPreOpB), unsigned(kPostOp), unsigned(kPreOpA | kPreOpB | kPostOp)}) {
        for (size_t n : {size_t(1), size_t(15), size_t(64), size_t(1031)}) {
          std::vector<uint8_t> a(n * width), b(n * width);
          for (auto& v : a) v = static_cast<uint8_t>(rng());
          for (auto& v : b) v = static_cast<uint8_t>(rng());
          std::vector<uint8_t> want(n * width), wantSame(n * width);
          for (size_t i = 0; i < n; ++i) {
            const size_t o = i * width;
            ASSERT_EQ(reduceBuffers(&want[o], &a[o], &b[o], 1, type, op, steps), ncclSuccess);
            ASSERT_EQ(reduceBuffers(&wantSame[o], &a[o], &a[o], 1, type, op, steps), ncclSuccess);
          }
          std::vector<uint8_t> out(n * width), intoA = a, intoB = b, same = a;
          ASSERT_EQ(reduceBuffers(out.data(), a.data(), b.data(), n, type, op, steps), ncclSuccess);
          ASSERT_EQ(reduceBuffers(intoA.data(), intoA.data(), b.data(), n, type, op, steps), ncclSuccess);
          ASSERT_EQ(reduceBuffers(intoB.data(), a.data(), intoB.data(), n, type, op, steps), ncclSuccess);
          ASSERT_EQ(reduceBuffers(same.data(), same.data(), same.data(), n, type, op, steps), ncclSuccess);
          const std::string what = std::string(dtypeName(type)) + " op " + std::to_string(int(op.kind)) +
                                   " steps " + std::to_string(steps) + " n " + std::to_string(n);
          EXPECT_EQ(out, want) << "out of place, " << what;
          EXPECT_EQ(intoA, want) << "dst == a, " << what;
          EXPECT_EQ(intoB, want) << "dst == b, " << what;
          EXPECT_EQ(same, wantSame) << "dst == a == b, " << what;
          ++checked;
        }
      }
    }
  }
  // 12 types x (sum, prod, max, min) + 6 integer types x SumPostDiv, x 4 step sets x 4 lengths.
  EXPECT_EQ(checked, (12 * 4 + 6) * 4 * 4);
}

}  // namespace
}  // namespace accl
