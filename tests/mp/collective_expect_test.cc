// Unit test (label unit) of the collective tests' own helpers: the float-format conversions
// against hand-computed encodings, the expected reductions against hand-computed values, the
// exactness of the generated inputs under NCCL's arithmetic (one rounding per step in the element
// type, avg as a pre-multiplication by round(1/n)), the in-place layouts, and the sampler's
// coverage. An in-process model of each collective, written from NCCL's API description and
// working on the call's pointers only, runs every combo through the layouts and must pass the
// checks -- and a single corrupted element or guard must fail them.
#include "mp/collective_expect.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "mp/collective_cases.h"
#include "mp/collective_types.h"

namespace accl::test {
namespace {

// ---- Conversions -----------------------------------------------------------------------------------

TEST(CollectiveTypes, HalfEncodings) {
  EXPECT_EQ(doubleToHalf(1.0), 0x3c00);
  EXPECT_EQ(doubleToHalf(-2.0), 0xc000);
  EXPECT_EQ(doubleToHalf(65504.0), 0x7bff);
  EXPECT_EQ(doubleToHalf(65520.0), 0x7c00);  // rounds up past the largest finite: inf
  EXPECT_EQ(doubleToHalf(2049.0), 0x6800);   // tie between 2048 and 2050: even mantissa (2048)
  EXPECT_EQ(doubleToHalf(2051.0), 0x6802);   // tie between 2050 and 2052: 2052
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -25)), 0x0000);     // half of the smallest subnormal: to even (0)
  EXPECT_EQ(doubleToHalf(std::ldexp(3.0, -26)), 0x0001);     // 0.75 of it: up
  EXPECT_EQ(doubleToHalf(std::ldexp(1023.0, -24)), 0x03ff);  // largest subnormal
  EXPECT_EQ(doubleToHalf(std::ldexp(2047.0, -25)), 0x0400);  // rounds up to the smallest normal
  EXPECT_EQ(doubleToHalf(1.0 / 3.0), 0x3555);
  EXPECT_EQ(doubleToHalf(-0.0), 0x8000);
  EXPECT_EQ(doubleToHalf(NAN), 0x7e00);
  EXPECT_EQ(halfToDouble(0x3555), 0.333251953125);
  EXPECT_EQ(halfToDouble(0x7bff), 65504.0);
  EXPECT_TRUE(std::isinf(halfToDouble(0xfc00)) && halfToDouble(0xfc00) < 0);
  EXPECT_TRUE(std::isnan(halfToDouble(0x7c01)));
}

TEST(CollectiveTypes, Bf16Encodings) {
  EXPECT_EQ(doubleToBf16(1.0), 0x3f80);
  EXPECT_EQ(doubleToBf16(3.0), 0x4040);
  EXPECT_EQ(doubleToBf16(257.0), 0x4380);  // tie: 256
  EXPECT_EQ(doubleToBf16(259.0), 0x4382);  // tie: 260
  EXPECT_EQ(doubleToBf16(-0.0), 0x8000);
  EXPECT_EQ(doubleToBf16(1e39), 0x7f80);  // beyond the largest finite (~3.39e38): inf
  EXPECT_EQ(bf16ToDouble(0x4382), 260.0);
}

TEST(CollectiveTypes, Fp8E4m3Encodings) {
  EXPECT_EQ(doubleToE4m3(1.0), 0x38);
  EXPECT_EQ(doubleToE4m3(16.0), 0x58);
  EXPECT_EQ(doubleToE4m3(17.0), 0x58);  // tie between 16 and 18: 16
  EXPECT_EQ(doubleToE4m3(448.0), 0x7e);
  EXPECT_EQ(doubleToE4m3(-448.0), 0xfe);
  EXPECT_EQ(doubleToE4m3(464.0), 0x7e);  // tie between 448 and (NaN slot) 480: 448
  EXPECT_EQ(doubleToE4m3(500.0), 0x7e);  // saturates
  EXPECT_EQ(doubleToE4m3(1e9), 0x7e);
  EXPECT_EQ(doubleToE4m3(0.34375), 0x2b);
  EXPECT_EQ(doubleToE4m3(1.0 / 3.0), 0x2b);
  EXPECT_EQ(doubleToE4m3(0.2), 0x25);                  // 13/64 = 1.625 * 2^-3
  EXPECT_EQ(doubleToE4m3(std::ldexp(1.0, -6)), 0x08);  // smallest normal
  EXPECT_EQ(doubleToE4m3(std::ldexp(7.0, -9)), 0x07);  // largest subnormal
  EXPECT_EQ(doubleToE4m3(std::ldexp(1.0, -9)), 0x01);
  EXPECT_EQ(doubleToE4m3(std::ldexp(1.0, -10)), 0x00);  // tie: even (0)
  EXPECT_EQ(doubleToE4m3(std::ldexp(3.0, -11)), 0x01);
  EXPECT_EQ(doubleToE4m3(NAN), 0x7f);
  EXPECT_EQ(e4m3ToDouble(0x7e), 448.0);
  EXPECT_EQ(e4m3ToDouble(0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(e4m3ToDouble(0x25), 0.203125);
  EXPECT_TRUE(std::isnan(e4m3ToDouble(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3ToDouble(0xff)));
  EXPECT_EQ(e4m3ToDouble(0x78), 256.0);  // exponent field all ones is an ordinary binade in FN
}

TEST(CollectiveTypes, Fp8E5m2Encodings) {
  EXPECT_EQ(doubleToE5m2(1.0), 0x3c);
  EXPECT_EQ(doubleToE5m2(8.0), 0x48);
  EXPECT_EQ(doubleToE5m2(9.0), 0x48);  // tie between 8 and 10: 8
  EXPECT_EQ(doubleToE5m2(7.0), 0x47);
  EXPECT_EQ(doubleToE5m2(57344.0), 0x7b);
  EXPECT_EQ(doubleToE5m2(1e9), 0x7b);  // saturates
  EXPECT_EQ(doubleToE5m2(1.0 / 3.0), 0x35);
  EXPECT_EQ(doubleToE5m2(std::ldexp(1.0, -16)), 0x01);
  EXPECT_EQ(doubleToE5m2(NAN), 0x7f);
  EXPECT_TRUE(std::isinf(e5m2ToDouble(0x7c)));
  EXPECT_TRUE(std::isnan(e5m2ToDouble(0x7d)));
  EXPECT_EQ(e5m2ToDouble(0x35), 0.3125);
}

// decode(encode) is the identity on every non-NaN pattern of the narrow formats.
TEST(CollectiveTypes, NarrowFormatsRoundTripEveryPattern) {
  for (ncclDataType_t type : {ncclFloat16, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2}) {
    const uint64_t count = typeMask(type) + 1;
    for (uint64_t bits = 0; bits < count; ++bits) {
      if (elemIsNan(type, bits)) continue;
      const double v = elemToDouble(type, bits);
      if ((type == ncclFloat8e4m3 || type == ncclFloat8e5m2) && std::isinf(v)) continue;  // fp8 saturates inf
      ASSERT_EQ(elemFromDouble(type, v), bits) << typeName(type) << " bits " << bits << " value " << v;
    }
  }
}

TEST(CollectiveTypes, IntegersWrapAndSignExtend) {
  EXPECT_EQ(elemFromInt(ncclInt8, -56), 0xc8u);
  EXPECT_EQ(elemToInt(ncclInt8, 0xc8), -56);
  EXPECT_EQ(elemToInt(ncclUint8, 0xc8), 200);
  EXPECT_EQ(elemFromInt(ncclUint32, -1), 0xffffffffu);
  EXPECT_EQ(elemToInt(ncclInt32, 0x80000000u), INT32_MIN);
  EXPECT_EQ(elemFromInt(ncclInt64, -3), static_cast<uint64_t>(-3));
  EXPECT_EQ(elemFromInt(ncclFloat32, 3), 0x40400000u);
  EXPECT_EQ(elemFromInt(ncclFloat64, -1), 0xbff0000000000000ull);
}

TEST(CollectiveTypes, UlpDistanceAndSanitize) {
  EXPECT_EQ(ulpDistance(ncclFloat16, 0x3c00, 0x3c01), 1u);
  EXPECT_EQ(ulpDistance(ncclFloat16, 0x0000, 0x8000), 0u);
  EXPECT_EQ(ulpDistance(ncclFloat16, 0x0001, 0x8001), 2u);
  EXPECT_EQ(ulpDistance(ncclFloat32, 0x3f800000, 0x3f7fffff), 1u);
  EXPECT_EQ(ulpDistance(ncclFloat8e4m3, 0x7f, 0x38), UINT64_MAX);
  EXPECT_EQ(ulpDistance(ncclInt32, elemFromInt(ncclInt32, -3), elemFromInt(ncclInt32, 4)), 7u);
  EXPECT_EQ(sanitizeFinite(ncclFloat8e4m3, 0x7f), 0x7eu);
  EXPECT_EQ(sanitizeFinite(ncclFloat8e4m3, 0xff), 0xfeu);
  EXPECT_EQ(sanitizeFinite(ncclFloat8e5m2, 0x7c), 0x3cu);
  EXPECT_EQ(sanitizeFinite(ncclFloat16, 0x8000), 0x0u);
  EXPECT_EQ(sanitizeFinite(ncclFloat32, 0x7fc00000), 0x3fc00000u);
  EXPECT_EQ(sanitizeFinite(ncclInt8, 0x1ff), 0xffu);
  for (ncclDataType_t type : {ncclFloat16, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2})
    for (uint64_t bits = 0; bits <= typeMask(type); ++bits) {
      const uint64_t s = sanitizeFinite(type, bits);
      ASSERT_FALSE(elemIsNan(type, s) || elemIsInf(type, s) || s == (typeMask(type) + 1) / 2) << bits;
    }
}

// ---- Expected reductions against hand-computed values -----------------------------------------------

uint64_t I(ncclDataType_t type, int64_t v) { return elemFromInt(type, v); }
uint64_t F(ncclDataType_t type, double v) { return elemFromDouble(type, v); }

TEST(CollectiveExpect, IntegerReductionsByHand) {
  EXPECT_EQ(reduceElements(ncclInt8, Op::kSum, {I(ncclInt8, 100), I(ncclInt8, 100)}).bits,
            0xc8u);  // wraps to -56
  EXPECT_EQ(reduceElements(ncclInt8, Op::kSum, {I(ncclInt8, 127), I(ncclInt8, 1), I(ncclInt8, -128)}).bits,
            0u);
  EXPECT_EQ(reduceElements(ncclUint8, Op::kMax, {200, 3, 17}).bits, 200u);
  EXPECT_EQ(reduceElements(ncclInt8, Op::kMax, {0xc8, 3}).bits, 3u);  // -56 < 3 when signed
  EXPECT_EQ(reduceElements(ncclInt8, Op::kMin, {0xc8, 3}).bits, 0xc8u);
  EXPECT_EQ(reduceElements(ncclUint64, Op::kMax, {1ull << 63, 1}).bits, 1ull << 63);
  EXPECT_EQ(reduceElements(ncclInt64, Op::kMax, {1ull << 63, 1}).bits, 1u);  // INT64_MIN < 1
  EXPECT_EQ(reduceElements(ncclInt32, Op::kProd, {I(ncclInt32, 3), I(ncclInt32, -5), I(ncclInt32, 7)}).bits,
            I(ncclInt32, -105));
  EXPECT_EQ(reduceElements(ncclUint8, Op::kProd, {16, 16}).bits, 0u);  // 256 wraps to 0
  // Avg on integers: sum, then divide truncating toward zero.
  EXPECT_EQ(reduceElements(ncclInt32, Op::kAvg, {I(ncclInt32, -5), 0, 0}).bits, I(ncclInt32, -1));
  EXPECT_EQ(reduceElements(ncclInt8, Op::kAvg, {I(ncclInt8, -3), I(ncclInt8, -3), I(ncclInt8, -2)}).bits,
            I(ncclInt8, -2));  // -8/3: -2 (floor would be -3)
  EXPECT_EQ(reduceElements(ncclInt32, Op::kAvg, {5, 1, 1}).bits, 2u);
  EXPECT_EQ(reduceElements(ncclUint8, Op::kAvg, {1, 2}).bits, 1u);
  EXPECT_FALSE(reduceElements(ncclInt32, Op::kAvg, {5, 1, 1}).tolerant);
  // PreMulSum: immediate scalars 1, 2, 3 (rank % 3 + 1); device scalars 3, 2, 1.
  EXPECT_EQ(reduceElements(ncclInt32, Op::kPreMulSumImm, {10, 20, 30}).bits, 140u);
  EXPECT_EQ(reduceElements(ncclInt32, Op::kPreMulSumDev, {10, 20, 30}).bits, 100u);
}

TEST(CollectiveExpect, FloatReductionsByHand) {
  EXPECT_EQ(
      reduceElements(ncclFloat32, Op::kSum, {F(ncclFloat32, 1), F(ncclFloat32, 2), F(ncclFloat32, -4)}).bits,
      F(ncclFloat32, -1));
  const ExpectedElem avg = reduceElements(
      ncclFloat16, Op::kAvg, {F(ncclFloat16, 4), F(ncclFloat16, -4), F(ncclFloat16, 8), F(ncclFloat16, 0)});
  EXPECT_EQ(avg.bits, 0x4000u);  // 2.0
  EXPECT_TRUE(avg.tolerant);
  // e5m2 premulsum, immediate scalars 1 and 2 (1 + rank % 2): 1*1 + 2*3 = 7.
  EXPECT_EQ(
      reduceElements(ncclFloat8e5m2, Op::kPreMulSumImm, {F(ncclFloat8e5m2, 1), F(ncclFloat8e5m2, 3)}).bits,
      0x47u);
  EXPECT_EQ(reduceElements(ncclBfloat16, Op::kProd,
                           {F(ncclBfloat16, -2), F(ncclBfloat16, 0.5), F(ncclBfloat16, -2)})
                .bits,
            F(ncclBfloat16, 2));
  EXPECT_EQ(
      reduceElements(ncclFloat64, Op::kMax, {F(ncclFloat64, -1), F(ncclFloat64, 3), F(ncclFloat64, 2.5)})
          .bits,
      F(ncclFloat64, 3));
  EXPECT_EQ(reduceElements(ncclFloat8e4m3, Op::kMin, {F(ncclFloat8e4m3, -1), F(ncclFloat8e4m3, 3)}).bits,
            0xb8u);
}

TEST(CollectiveExpect, ToleranceOnlyForFloatAvgAndPreMulSum) {
  ExpectedElem want{F(ncclFloat32, 2), true};
  EXPECT_TRUE(elemMatches(ncclFloat32, want, F(ncclFloat32, 2)));
  EXPECT_TRUE(elemMatches(ncclFloat32, want, F(ncclFloat32, 2) + 2));
  EXPECT_FALSE(elemMatches(ncclFloat32, want, F(ncclFloat32, 2) + 3));
  EXPECT_FALSE(elemMatches(ncclFloat32, {F(ncclFloat32, 2), false}, F(ncclFloat32, 2) + 1));
  EXPECT_FALSE(elemMatches(ncclInt32, {5, true}, 6));
}

// ---- The generated inputs are exact under NCCL's arithmetic -------------------------------------------

// One rounding in the element type, as the library does per step.
uint64_t roundT(ncclDataType_t type, double v) { return elemFromDouble(type, v); }
double valueT(ncclDataType_t type, uint64_t bits) { return elemToDouble(type, bits); }

TEST(CollectiveExpect, GeneratedFloatInputsAreExactInEveryOrder) {
  for (int t = 0; t < kNumElemTypes; ++t) {
    const auto type = static_cast<ncclDataType_t>(t);
    if (!isFloatType(type)) continue;
    const double budget = static_cast<double>(exactIntegerBudget(type));
    for (int n = 1; n <= 8; ++n) {
      for (Op op : kAllReduceOps) {
        if (op == Op::kMax || op == Op::kMin) continue;
        CaseSpec cs;
        cs.coll = Coll::kAllReduce;
        cs.type = type;
        cs.op = op;
        const CaseModel model(cs, n);
        // ncclAvg on floats multiplies by the scalar round(float(1/n)) in the element type.
        const uint64_t avgScalar =
            type == ncclFloat64 ? roundT(type, 1.0 / n) : roundT(type, static_cast<float>(1.0 / n));
        for (size_t j = 0; j < 512; ++j) {
          double sumAbs = 0;
          int nonUnitFactors = 0;
          for (int q = 0; q < n; ++q) {
            const uint64_t x = model.input(q, j);
            const double v = valueT(type, x);
            ASSERT_FALSE(std::isnan(v) || std::isinf(v));
            double contribution = v;
            if (op == Op::kAvg) {
              // Each contribution times round(1/n), rounded in T, must be exactly v / n.
              contribution = valueT(type, roundT(type, v * valueT(type, avgScalar)));
              ASSERT_EQ(contribution, v / n) << typeName(type) << " n=" << n << " j=" << j << " rank " << q;
            } else if (op == Op::kPreMulSumImm || op == Op::kPreMulSumDev) {
              const double s = static_cast<double>(premulScalar(type, op, q));
              contribution = valueT(type, roundT(type, v * s));
              ASSERT_EQ(contribution, v * s) << typeName(type) << " n=" << n << " j=" << j;
            } else if (op == Op::kProd) {
              ASSERT_TRUE(std::fabs(v) == 1 || std::fabs(v) == 2 || std::fabs(v) == 0.5) << v;
              nonUnitFactors += std::fabs(v) != 1;
            }
            sumAbs += std::fabs(contribution);
          }
          if (op == Op::kProd) {
            // Every partial product is +-2^k with |k| <= nonUnitFactors: finite and exact.
            const int limit = type == ncclFloat8e4m3                            ? 8
                              : (type == ncclFloat8e5m2 || type == ncclFloat16) ? 14
                                                                                : 60;
            ASSERT_LE(nonUnitFactors, limit) << typeName(type) << " n=" << n;
          } else {
            // Every partial sum is an integer of magnitude <= sumAbs <= budget: exact.
            ASSERT_LE(sumAbs, budget) << typeName(type) << " " << opName(op) << " n=" << n << " j=" << j;
            ASSERT_EQ(sumAbs, std::floor(sumAbs));
          }
        }
      }
    }
  }
}

TEST(CollectiveExpect, IntegerAvgInputsShowTruncation) {
  // Some element of a signed int avg case must have a negative sum that is not a multiple of n.
  for (ncclDataType_t type : {ncclInt8, ncclInt32, ncclInt64}) {
    CaseSpec cs;
    cs.coll = Coll::kAllReduce;
    cs.type = type;
    cs.op = Op::kAvg;
    const CaseModel model(cs, 3);
    bool seen = false;
    for (size_t j = 0; j < 64 && !seen; ++j) {
      int64_t sum = 0;
      for (int q = 0; q < 3; ++q) sum += elemToInt(type, model.input(q, j));
      seen = sum < 0 && sum % 3 != 0;
    }
    EXPECT_TRUE(seen) << typeName(type);
  }
}

// ---- Layouts: NCCL's in-place conventions -------------------------------------------------------------

TEST(CollectiveLayout, InPlacePointers) {
  CaseSpec cs;
  cs.count = 2;
  cs.inPlace = true;
  cs.coll = Coll::kAllGather;
  RankLayout l = layoutFor(cs, 3, 1);
  ASSERT_EQ(l.buffers.size(), 1u);
  EXPECT_EQ(l.buffers[0].elems, 6u);
  EXPECT_EQ(l.sendOffset, 2u);  // sendbuff == recvbuff + rank * count
  EXPECT_EQ(l.recvOffset, 0u);

  cs.coll = Coll::kReduceScatter;
  cs.count = 3;
  l = layoutFor(cs, 4, 2);
  EXPECT_EQ(l.buffers[0].elems, 12u);
  EXPECT_EQ(l.sendOffset, 0u);
  EXPECT_EQ(l.recvOffset, 6u);  // recvbuff == sendbuff + rank * recvcount

  cs.coll = Coll::kGather;
  cs.root = 1;
  l = layoutFor(cs, 4, 3);
  EXPECT_EQ(l.sendOffset, 3u);  // sendbuff == recvbuff + root * count
  EXPECT_EQ(l.recvOffset, 0u);

  cs.coll = Coll::kScatter;
  l = layoutFor(cs, 4, 0);
  EXPECT_EQ(l.sendOffset, 0u);
  EXPECT_EQ(l.recvOffset, 3u);  // recvbuff == sendbuff + root * count

  cs.coll = Coll::kAllReduce;
  l = layoutFor(cs, 4, 0);
  EXPECT_EQ(l.buffers.size(), 1u);
  cs.inPlace = false;
  l = layoutFor(cs, 4, 0);
  EXPECT_EQ(l.buffers.size(), 2u);
  EXPECT_NE(l.sendBuffer, l.recvBuffer);
}

// ---- An in-process model of the collectives runs through the layouts and checks -----------------------

// NCCL's arithmetic for one step in the element type.
uint64_t modelReduce(ncclDataType_t type, Op op, uint64_t a, uint64_t b) {
  if (!isFloatType(type)) {
    const bool sign = isSignedType(type);
    const uint64_t m = typeMask(type);
    switch (op) {
      case Op::kProd:
        return (a * b) & m;
      case Op::kMax:
        return (sign ? elemToInt(type, a) >= elemToInt(type, b) : a >= b) ? a : b;
      case Op::kMin:
        return (sign ? elemToInt(type, a) <= elemToInt(type, b) : a <= b) ? a : b;
      default:
        return (a + b) & m;
    }
  }
  const double x = valueT(type, a), y = valueT(type, b);
  switch (op) {
    case Op::kProd:
      return roundT(type, x * y);
    case Op::kMax:
      return x >= y ? a : b;
    case Op::kMin:
      return x <= y ? a : b;
    default:
      return roundT(type, x + y);
  }
}

// A rank's own contribution as it enters the reduction (PreMulSum / float avg scale it).
uint64_t modelPreOp(ncclDataType_t type, Op op, int rank, int n, uint64_t x) {
  if (op == Op::kPreMulSumImm || op == Op::kPreMulSumDev) {
    const int64_t s = premulScalar(type, op, rank);
    if (!isFloatType(type)) return (x * static_cast<uint64_t>(s)) & typeMask(type);
    return roundT(type, valueT(type, x) * static_cast<double>(s));
  }
  if (op == Op::kAvg && isFloatType(type)) {
    const uint64_t s =
        type == ncclFloat64 ? roundT(type, 1.0 / n) : roundT(type, static_cast<float>(1.0 / n));
    return roundT(type, valueT(type, x) * valueT(type, s));
  }
  return x;
}

// Reduction of element j over ranks, starting at rank `first` and going around (the order
// changes with j, as ring chunks do).
uint64_t modelReduceAll(const CaseSpec& cs, int n, const std::vector<const char*>& sends, size_t j) {
  const int first = static_cast<int>(j % static_cast<size_t>(n));
  uint64_t acc = modelPreOp(cs.type, cs.op, first, n, loadElem(cs.type, sends[first], j));
  for (int k = 1; k < n; ++k) {
    const int q = (first + k) % n;
    acc = modelReduce(cs.type, cs.op, acc, modelPreOp(cs.type, cs.op, q, n, loadElem(cs.type, sends[q], j)));
  }
  if (cs.op == Op::kAvg && !isFloatType(cs.type)) acc = elemFromInt(cs.type, elemToInt(cs.type, acc) / n);
  return acc;
}

// Performs the collective on the ranks' pointers, from NCCL's API description.
void modelCollective(const CaseSpec& cs, int n, const std::vector<const char*>& sendPtrs,
                     const std::vector<char*>& recvPtrs) {
  const size_t c = cs.count, size = typeSize(cs.type);
  const size_t sendElems =
      (cs.coll == Coll::kReduceScatter || cs.coll == Coll::kAlltoAll || cs.coll == Coll::kScatter) ? n * c
                                                                                                   : c;
  // Snapshot the send data first: in place, outputs overwrite inputs.
  std::vector<std::vector<char>> snap(n);
  std::vector<const char*> sends(n);
  for (int q = 0; q < n; ++q) {
    snap[q].assign(sendPtrs[q], sendPtrs[q] + sendElems * size);
    sends[q] = snap[q].data();
  }
  auto copy = [&](char* dst, const char* src, size_t elems) {
    if (elems) memcpy(dst, src, elems * size);  // src may be null for an empty block
  };
  for (int r = 0; r < n; ++r) {
    char* recv = recvPtrs[r];
    switch (cs.coll) {
      case Coll::kAllReduce:
        for (size_t i = 0; i < c; ++i) storeElem(cs.type, recv, i, modelReduceAll(cs, n, sends, i));
        break;
      case Coll::kReduce:
        if (r == cs.root)
          for (size_t i = 0; i < c; ++i) storeElem(cs.type, recv, i, modelReduceAll(cs, n, sends, i));
        break;
      case Coll::kBroadcast:
      case Coll::kBcast:
        copy(recv, sends[cs.root], c);
        break;
      case Coll::kReduceScatter:
        for (size_t i = 0; i < c; ++i) storeElem(cs.type, recv, i, modelReduceAll(cs, n, sends, r * c + i));
        break;
      case Coll::kAllGather:
        for (int q = 0; q < n; ++q) copy(recv + q * c * size, sends[q], c);
        break;
      case Coll::kAlltoAll:
        for (int q = 0; q < n; ++q) copy(recv + q * c * size, sends[q] + r * c * size, c);
        break;
      case Coll::kGather:
        if (r == cs.root)
          for (int q = 0; q < n; ++q) copy(recv + q * c * size, sends[q], c);
        break;
      case Coll::kScatter:
        copy(recv, sends[cs.root] + r * c * size, c);
        break;
    }
  }
}

struct ModelRun {
  std::vector<RankLayout> layouts;
  std::vector<std::vector<std::unique_ptr<HostBuffer>>> buffers;  // [rank][buffer]
};

ModelRun prepareAndRun(const CaseSpec& cs, int n) {
  ModelRun run;
  const CaseModel model(cs, n);
  std::vector<const char*> sends(n);
  std::vector<char*> recvs(n);
  for (int r = 0; r < n; ++r) {
    run.layouts.push_back(layoutFor(cs, n, r));
    run.buffers.emplace_back();
    for (const BufferLayout& b : run.layouts[r].buffers) {
      run.buffers[r].push_back(std::make_unique<HostBuffer>());
      run.buffers[r].back()->prepare(model, b);
    }
    const RankLayout& l = run.layouts[r];
    sends[r] = static_cast<const char*>(run.buffers[r][l.sendBuffer]->at(l.sendOffset));
    recvs[r] = static_cast<char*>(run.buffers[r][l.recvBuffer]->at(l.recvOffset));
  }
  modelCollective(cs, n, sends, recvs);
  return run;
}

size_t checkAll(const CaseSpec& cs, int n, ModelRun& run, std::vector<std::string>* reports) {
  const CaseModel model(cs, n);
  size_t wrong = 0;
  for (int r = 0; r < n; ++r)
    for (size_t b = 0; b < run.layouts[r].buffers.size(); ++b)
      wrong += run.buffers[r][b]->check(model, run.layouts[r].buffers[b], 3, reports);
  return wrong;
}

TEST(CollectiveModel, EveryComboPassesAndCorruptionIsCaught) {
  int runs = 0;
  for (int n : {1, 2, 3, 5, 8}) {
    for (const Combo& combo : allCombos()) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{33}}) {
        for (bool inPlace : {false, true}) {
          if (inPlace ? !collAllowsInPlace(combo.coll) : !collAllowsOutOfPlace(combo.coll)) continue;
          CaseSpec cs;
          cs.coll = combo.coll;
          cs.type = combo.type;
          cs.op = combo.op;
          cs.count = count;
          cs.inPlace = inPlace;
          cs.root = collHasRoot(combo.coll) ? (n - 1 + static_cast<int>(count)) % n : 0;
          cs.misalign = count % 2 == 1 ? 1 : 0;
          ModelRun run = prepareAndRun(cs, n);
          std::vector<std::string> reports;
          const size_t wrong = checkAll(cs, n, run, &reports);
          ++runs;
          ASSERT_EQ(wrong, 0u) << describeCase(cs) << " ranks=" << n << ": "
                               << (reports.empty() ? "" : reports[0]);
          // Corrupt the last rank's recv pointer element 0 (when the call writes it there) and a guard.
          const int r = n - 1;
          const RankLayout& l = run.layouts[r];
          char* guardByte = static_cast<char*>(run.buffers[r][0]->at(0)) - 1;
          *guardByte ^= 0x10;
          reports.clear();
          ASSERT_EQ(checkAll(cs, n, run, &reports), 1u) << "guard corruption missed: " << describeCase(cs);
          *guardByte ^= 0x10;
          if (count > 0) {
            char* recv = static_cast<char*>(run.buffers[r][l.recvBuffer]->at(l.recvOffset));
            storeElem(cs.type, recv, 0, loadElem(cs.type, recv, 0) ^ 0x4);  // beyond any 2-ulp tolerance
            reports.clear();
            ASSERT_EQ(checkAll(cs, n, run, &reports), 1u) << "data corruption missed: " << describeCase(cs);
          }
        }
      }
    }
  }
  EXPECT_GT(runs, 5000);
}

// A library that forgets to write (or to honour in-place aliasing) fails: run the model with
// the receive side skipped and expect wrong elements whenever the call has outputs to write.
TEST(CollectiveModel, MissingWritesAreCaught) {
  for (const Combo& combo : allCombos()) {
    CaseSpec cs;
    cs.coll = combo.coll;
    cs.type = combo.type;
    cs.op = combo.op;
    cs.count = 7;
    cs.root = 0;
    cs.inPlace = !collAllowsOutOfPlace(combo.coll);
    const int n = 3;
    const CaseModel model(cs, n);
    size_t wrong = 0;
    for (int r = 0; r < n; ++r) {
      const RankLayout l = layoutFor(cs, n, r);
      for (const BufferLayout& b : l.buffers) {
        HostBuffer buf;
        buf.prepare(model, b);
        std::vector<std::string> reports;
        wrong += buf.check(model, b, 3, &reports);
      }
    }
    EXPECT_GT(wrong, 0u) << describeCase(cs);
  }
}

// ---- Sampler ----------------------------------------------------------------------------------

using ComboKey = std::tuple<int, int, int>;  // coll, type, op
ComboKey comboKey(const CaseSpec& cs) {
  return {static_cast<int>(cs.coll), static_cast<int>(cs.type), static_cast<int>(cs.op)};
}

size_t totalCases(const std::vector<LaunchKey>& launches, bool full) {
  size_t total = 0;
  for (const LaunchKey& key : launches) total += casesFor(key, full).size();
  return total;
}

TEST(CollectiveSampler, CasesAreValidAndDeterministic) {
  std::vector<LaunchKey> launches = singleNodeLaunches();
  for (const LaunchKey& k : twoNodeLaunches()) launches.push_back(k);
  for (const LaunchKey& key : launches) {
    const auto cases = casesFor(key, false);
    EXPECT_EQ(cases, casesFor(key, false)) << launchName(key);
    EXPECT_FALSE(cases.empty()) << launchName(key);
    for (const CaseSpec& cs : cases) {
      EXPECT_TRUE(cs.root >= 0 && cs.root < key.nranks) << describeCase(cs);
      EXPECT_TRUE(cs.inPlace ? collAllowsInPlace(cs.coll) : collAllowsOutOfPlace(cs.coll))
          << describeCase(cs);
      EXPECT_EQ(collReduces(cs.coll), cs.op != Op::kNone) << describeCase(cs);
    }
  }
  for (const LaunchKey& k : twoNodeLaunches()) EXPECT_EQ(k.mode, LaunchMode::kFork);
}

TEST(CollectiveSampler, SmallRingLaunchesCoverEveryComboAndVariant) {
  for (Proto proto : {Proto::kSimple, Proto::kLL}) {
    std::set<std::tuple<int, int, int, size_t, bool>> variants;
    for (const LaunchKey& key : singleNodeLaunches()) {
      if (key.env.size != SizeClass::kSmall || key.env.algo != Algo::kRing || key.env.proto != proto)
        continue;
      std::set<ComboKey> combos;
      std::map<int, std::set<int>> roots;
      for (const CaseSpec& cs : casesFor(key, false)) {
        combos.insert(comboKey(cs));
        variants.insert({static_cast<int>(cs.coll), static_cast<int>(cs.type), static_cast<int>(cs.op),
                         cs.count, cs.inPlace});
        if (collHasRoot(cs.coll)) roots[static_cast<int>(cs.coll)].insert(cs.root);
      }
      // Every combo below 8 ranks, every other one from 8 on.
      if (key.nranks < 8)
        EXPECT_EQ(combos.size(), allCombos().size()) << launchName(key);
      else
        EXPECT_GE(combos.size(), allCombos().size() / 2) << launchName(key);
      // Every root up to 5 ranks; above, at least three different roots per collective.
      for (const auto& [coll, seen] : roots)
        EXPECT_GE(seen.size(), static_cast<size_t>(std::min(key.nranks, key.nranks <= 5 ? 5 : 3)))
            << launchName(key) << " coll " << coll;
    }
    size_t expected = 0;
    for (const Combo& c : allCombos())
      expected += smallCounts().size() * (collAllowsInPlace(c.coll) + collAllowsOutOfPlace(c.coll));
    EXPECT_EQ(variants.size(), expected);
  }
}

TEST(CollectiveSampler, SmallTreeLaunchesCoverEveryAllReduceTypeAndOp) {
  for (const LaunchKey& key : singleNodeLaunches()) {
    if (key.env.size != SizeClass::kSmall || key.env.algo != Algo::kTree) continue;
    std::set<ComboKey> combos;
    std::set<int> colls;
    for (const CaseSpec& cs : casesFor(key, false)) {
      if (cs.coll == Coll::kAllReduce) combos.insert(comboKey(cs));
      colls.insert(static_cast<int>(cs.coll));
    }
    EXPECT_EQ(combos.size(), static_cast<size_t>(kNumElemTypes * kNumReduceOps)) << launchName(key);
    EXPECT_EQ(colls.size(), static_cast<size_t>(kNumColls)) << launchName(key);
  }
}

TEST(CollectiveSampler, LargeLaunchesCoverAllPairs) {
  // Factors: collective+op, type, in-place, ranks, algorithm, protocol, launcher, collective.
  // Required: every pair except (collective+op, type); of the collective alone, (collective, type).
  constexpr int kF = 8;
  using Values = std::array<int, kF>;
  std::vector<Values> rows;
  for (const LaunchKey& key : singleNodeLaunches()) {
    if (key.env.size != SizeClass::kLarge) continue;
    for (const CaseSpec& cs : casesFor(key, false)) {
      EXPECT_EQ(cs.count, largeCount(cs.type));
      EXPECT_GT(cs.count * typeSize(cs.type), size_t{40000});
      rows.push_back({static_cast<int>(cs.coll) * 8 + static_cast<int>(cs.op), static_cast<int>(cs.type),
                      cs.inPlace, key.nranks, static_cast<int>(key.env.algo), static_cast<int>(key.env.proto),
                      static_cast<int>(key.mode), static_cast<int>(cs.coll)});
    }
  }
  std::vector<std::set<int>> domain(kF);
  for (const Combo& c : allCombos()) {
    domain[0].insert(static_cast<int>(c.coll) * 8 + static_cast<int>(c.op));
    domain[1].insert(static_cast<int>(c.type));
    domain[7].insert(static_cast<int>(c.coll));
  }
  domain[2] = {0, 1};
  for (int n : matrixRankCounts()) domain[3].insert(n);
  domain[4] = domain[5] = domain[6] = {0, 1};
  std::set<std::tuple<int, int, int, int>> covered;
  for (const Values& v : rows)
    for (int a = 0; a < kF; ++a)
      for (int b = a + 1; b < kF; ++b) covered.insert({a, v[a], b, v[b]});
  size_t missing = 0, required = 0;
  for (int a = 0; a < kF; ++a)
    for (int b = a + 1; b < kF; ++b) {
      if ((a == 0 && b == 1) || (b == 7 && a != 1)) continue;
      for (int va : domain[a])
        for (int vb : domain[b]) {
          if (a == 0 && b == 2) {
            const Coll coll = static_cast<Coll>(va / 8);
            if (vb ? !collAllowsInPlace(coll) : !collAllowsOutOfPlace(coll)) continue;
          }
          ++required;
          if (!covered.count({a, va, b, vb})) {
            ++missing;
            ADD_FAILURE() << "pair not covered: factor " << a << "=" << va << ", factor " << b << "=" << vb;
          }
        }
    }
  EXPECT_EQ(missing, 0u);
  std::printf("[ sampler  ] large cases (single node): %zu rows cover %zu required pairs\n", rows.size(),
              required);
}

TEST(CollectiveSampler, FullModeContainsEveryDefaultVariant) {
  for (const LaunchKey& key : singleNodeLaunches()) {
    if (key.nranks != 3 && key.nranks != 8) continue;
    std::set<std::tuple<int, int, int, size_t, bool, int>> full;
    for (const CaseSpec& cs : casesFor(key, true))
      full.insert({static_cast<int>(cs.coll), static_cast<int>(cs.type), static_cast<int>(cs.op), cs.count,
                   cs.inPlace, collHasRoot(cs.coll) ? 0 : -1});
    for (const CaseSpec& cs : casesFor(key, false)) {
      // Tree launches only change AllReduce; their other cases are Ring cases, which the Ring
      // launches' full lists cover.
      if (key.env.algo == Algo::kTree && cs.coll != Coll::kAllReduce) continue;
      EXPECT_TRUE(full.count({static_cast<int>(cs.coll), static_cast<int>(cs.type), static_cast<int>(cs.op),
                              cs.count, cs.inPlace, collHasRoot(cs.coll) ? 0 : -1}))
          << launchName(key) << ": " << describeCase(cs);
    }
  }
}

TEST(CollectiveSampler, MatrixSize) {
  const size_t singleDefault = totalCases(singleNodeLaunches(), false);
  const size_t twoDefault = totalCases(twoNodeLaunches(), false);
  const size_t singleFull = totalCases(singleNodeLaunches(), true);
  const size_t twoFull = totalCases(twoNodeLaunches(), true);
  std::printf("[ sampler  ] launches: %zu single-node + %zu two-node\n", singleNodeLaunches().size(),
              twoNodeLaunches().size());
  std::printf("[ sampler  ] default: %zu cases (%zu single-node, %zu two-node)\n", singleDefault + twoDefault,
              singleDefault, twoDefault);
  std::printf("[ sampler  ] full:    %zu cases (%zu single-node, %zu two-node)\n", singleFull + twoFull,
              singleFull, twoFull);
  RecordProperty("default_cases", static_cast<int>(singleDefault + twoDefault));
  RecordProperty("full_cases", static_cast<int>(singleFull + twoFull));
  EXPECT_LT(singleDefault + twoDefault, singleFull + twoFull);
}

TEST(CollectiveSampler, FullModeFromEnvironment) {
  unsetenv("ACCL_TEST_FULL");
  EXPECT_FALSE(fullMatrixRequested());
  setenv("ACCL_TEST_FULL", "1", 1);
  EXPECT_TRUE(fullMatrixRequested());
  setenv("ACCL_TEST_FULL", "0", 1);
  EXPECT_FALSE(fullMatrixRequested());
  unsetenv("ACCL_TEST_FULL");
}

TEST(CollectiveSampler, ScopedEnvRestores) {
  setenv("ACCL_TEST_SCOPED_A", "old", 1);
  unsetenv("ACCL_TEST_SCOPED_B");
  {
    ScopedEnv env({{"ACCL_TEST_SCOPED_A", ""}, {"ACCL_TEST_SCOPED_B", "new"}});
    EXPECT_EQ(getenv("ACCL_TEST_SCOPED_A"), nullptr);
    ASSERT_NE(getenv("ACCL_TEST_SCOPED_B"), nullptr);
    EXPECT_STREQ(getenv("ACCL_TEST_SCOPED_B"), "new");
  }
  ASSERT_NE(getenv("ACCL_TEST_SCOPED_A"), nullptr);
  EXPECT_STREQ(getenv("ACCL_TEST_SCOPED_A"), "old");
  EXPECT_EQ(getenv("ACCL_TEST_SCOPED_B"), nullptr);
  unsetenv("ACCL_TEST_SCOPED_A");
}

TEST(CollectiveSampler, VirtualHosts) {
  EXPECT_EQ(virtualHostId(0, 2), "node0");
  EXPECT_EQ(virtualHostId(1, 2), "node1");
  EXPECT_EQ(virtualHostId(1, 3), "node0");
  EXPECT_EQ(virtualHostId(2, 3), "node1");
  EXPECT_EQ(virtualHostId(3, 8), "node0");
  EXPECT_EQ(virtualHostId(4, 8), "node1");
}

}  // namespace
}  // namespace accl::test
