// Closed-form inputs and expected outputs of every collective, type and operator (see pattern.h).
#include "pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "elem_codec.h"

namespace accl::bench {
namespace {

uint64_t mix(uint64_t seed, int rank, size_t j) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1) + 0xd1b54a32d192ed03ull * (uint64_t)j;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int ceilDiv(int a, int b) { return (a + b - 1) / b; }

// Smallest sparsity k such that at most `budget` ranks contribute to any element.
int sparsityFor(int nranks, int64_t budget) {
  if (budget < 1) budget = 1;
  int k = 1;
  while (ceilDiv(nranks, k) > budget) ++k;
  return k;
}

int64_t maxIntOf(const TypeInfo& t) {
  int bits = 8 * t.size;
  if (t.kind == TypeKind::kSigned) return bits >= 64 ? INT64_MAX : (1ll << (bits - 1)) - 1;
  return bits >= 63 ? (1ll << 62) : (1ll << bits) - 1;  // uint64: a bound that still fits int64
}

// Largest E with 2^E <= the type's largest finite value.
int maxPowerOfTwo(const TypeInfo& t) {
  int e = 0;
  std::frexp(maxFinite(t), &e);
  return e - 1;
}

uint64_t encodeInteger(const TypeInfo& t, int64_t v) {
  if (t.kind == TypeKind::kFloat) return encodeFloat(t, (double)v);
  return (uint64_t)v & widthMask(t.size);
}

}  // namespace

ValueRule chooseValueRule(const TypeInfo& t, OpId op, int nranks) {
  ValueRule r;
  if (t.kind != TypeKind::kFloat) {
    switch (op) {
      case OpId::kProd:
        r.mode = ValueRule::Mode::kRawBits;
        r.odd = true;
        break;
      case OpId::kAvg: {
        int64_t maxv = maxIntOf(t);
        r.mode = ValueRule::Mode::kRange;
        r.sparsity = sparsityFor(nranks, maxv);
        int64_t h = maxv / ceilDiv(nranks, r.sparsity);
        r.lo = t.kind == TypeKind::kSigned ? -h : 0;
        r.hi = h;
        break;
      }
      default:
        r.mode = ValueRule::Mode::kRawBits;
        break;
    }
    return r;
  }
  const int64_t limit = std::min<int64_t>(exactIntegerLimit(t), 1ll << 20);
  const int64_t exact = exactIntegerLimit(t);
  r.mode = ValueRule::Mode::kRange;
  switch (op) {
    case OpId::kSum: {
      r.sparsity = sparsityFor(nranks, exact);
      int64_t h = std::min(limit, exact / ceilDiv(nranks, r.sparsity));
      r.lo = -h;
      r.hi = h;
      break;
    }
    case OpId::kMulSum: {
      r.sparsity = sparsityFor(nranks, exact / 2);
      int64_t h = std::min(limit, exact / (2 * ceilDiv(nranks, r.sparsity)));
      r.lo = -h;
      r.hi = h;
      break;
    }
    case OpId::kAvg: {
      if (nranks <= exact) {
        int64_t h = std::min(limit, exact / nranks);
        r.lo = -h;
        r.hi = h;
        r.scale = nranks;
      } else {
        // nranks itself is not representable: let one rank contribute per element, so the result is
        // that rank's pre-multiplied value whatever the order (every other term is +0).
        r.sparsity = nranks;
        r.lo = -limit;
        r.hi = limit;
      }
      break;
    }
    case OpId::kProd:
      r.mode = ValueRule::Mode::kPowerOfTwo;
      r.sparsity = sparsityFor(nranks, maxPowerOfTwo(t));
      r.neutral = 1;
      break;
    case OpId::kMax:
    case OpId::kMin:
      r.lo = -limit;
      r.hi = limit;
      break;
  }
  return r;
}

Pattern::Pattern(CollId coll, const TypeInfo& type, OpId op, int root, int nranks, uint64_t seed)
    : coll_(coll), type_(&type), op_(op), root_(root), nranks_(nranks), seed_(seed) {
  reduces_ = collInfo(coll).reduces;
  if (reduces_) rule_ = chooseValueRule(type, op, nranks);
  if (reduces_ && op == OpId::kAvg && type.kind == TypeKind::kFloat) {
    // The library's 1/nranks: computed in double, rounded to float, then to the element type (double
    // keeps the double quotient).
    if (type.type == ncclFloat64) {
      avgScalar_ = 1.0 / nranks;
    } else {
      avgScalar_ = decodeFloat(type, encodeFloat(type, (double)(float)(1.0 / nranks)));
    }
  }
}

uint64_t Pattern::preMulScalar(const TypeInfo& type, int rank) { return encodeInteger(type, rank % 2 ? 2 : 1); }

uint64_t Pattern::input(int rank, size_t j) const {
  if (!reduces_) return mix(seed_, rank, j) & widthMask(type_->size);
  return reductionInput(rank, j);
}

uint64_t Pattern::reductionInput(int rank, size_t j) const {
  const ValueRule& r = rule_;
  if (r.sparsity > 1 && (size_t)(rank + (int)(j % (size_t)r.sparsity)) % (size_t)r.sparsity != 0)
    return encodeInteger(*type_, r.neutral);
  uint64_t h = mix(seed_, rank, j);
  switch (r.mode) {
    case ValueRule::Mode::kRawBits:
      return (h | (r.odd ? 1ull : 0ull)) & widthMask(type_->size);
    case ValueRule::Mode::kRange: {
      // In unsigned arithmetic: hi - lo overflows int64 for a signed 64-bit range [-max, max].
      uint64_t span = (uint64_t)r.hi - (uint64_t)r.lo + 1;
      int64_t v = (int64_t)((uint64_t)r.lo + h % span);
      return encodeInteger(*type_, v * r.scale);
    }
    case ValueRule::Mode::kPowerOfTwo: {
      static const int64_t kValues[4] = {1, 2, -1, -2};
      return encodeInteger(*type_, kValues[h & 3]);
    }
  }
  return 0;
}

uint64_t Pattern::reduced(size_t j) const {
  const TypeInfo& t = *type_;
  const uint64_t mask = widthMask(t.size);
  if (t.kind != TypeKind::kFloat) {
    const bool isSigned = t.kind == TypeKind::kSigned;
    uint64_t acc = 0;
    int64_t sacc = 0;
    for (int r = 0; r < nranks_; ++r) {
      uint64_t bits = input(r, j);
      int64_t v = intValue(t, bits);
      uint64_t u = (uint64_t)v;  // sign-extended two's complement; arithmetic below wraps mod 2^64
      if (r == 0) {
        acc = op_ == OpId::kMulSum ? u * 1 : u;
        sacc = v;
        continue;
      }
      switch (op_) {
        case OpId::kSum:
          acc += u;
          break;
        case OpId::kAvg:
          sacc += v;
          break;
        case OpId::kMulSum:
          acc += u * (uint64_t)(r % 2 ? 2 : 1);
          break;
        case OpId::kProd:
          acc *= u;
          break;
        case OpId::kMax:
          if (isSigned ? v > (int64_t)acc : (bits & mask) > (acc & mask)) acc = u;
          break;
        case OpId::kMin:
          if (isSigned ? v < (int64_t)acc : (bits & mask) < (acc & mask)) acc = u;
          break;
      }
    }
    if (op_ == OpId::kAvg) return (uint64_t)(sacc / nranks_) & mask;  // truncates toward zero
    return acc & mask;
  }
  double acc = 0;
  for (int r = 0; r < nranks_; ++r) {
    double v = decodeFloat(t, input(r, j));
    switch (op_) {
      case OpId::kSum:
        acc = r == 0 ? v : acc + v;
        break;
      case OpId::kMulSum:
        acc = r == 0 ? v : acc + v * (r % 2 ? 2.0 : 1.0);
        break;
      case OpId::kProd:
        acc = r == 0 ? v : acc * v;
        break;
      case OpId::kMax:
        acc = r == 0 ? v : std::max(acc, v);
        break;
      case OpId::kMin:
        acc = r == 0 ? v : std::min(acc, v);
        break;
      case OpId::kAvg:
        acc += decodeFloat(t, encodeFloat(t, v * avgScalar_));
        break;
    }
  }
  return encodeFloat(t, acc);
}

uint64_t Pattern::initialRecv(int rank, bool inPlace, const CollShape& s, size_t pos) const {
  if (!inPlace) return 0;
  size_t sendOff = s.sendInPlaceOffset * (size_t)rank;
  if (pos >= sendOff && pos - sendOff < s.send) return input(rank, pos - sendOff);
  return 0;
}

uint64_t Pattern::expected(int rank, bool inPlace, const CollShape& s, size_t idx) const {
  const size_t c = s.param;
  const int n = nranks_;
  const size_t recvOff = inPlace ? s.recvInPlaceOffset * (size_t)rank : 0;
  switch (coll_) {
    case CollId::kAllReduce:
      return reduced(idx);
    case CollId::kReduce:
      return rank == root_ ? reduced(idx) : initialRecv(rank, inPlace, s, recvOff + idx);
    case CollId::kReduceScatter:
      return reduced((size_t)rank * c + idx);
    case CollId::kAllGather:
      return input((int)(idx / c), idx % c);
    case CollId::kBroadcast:
      return input(root_, idx);
    case CollId::kAllToAll:
      return input((int)(idx / c), (size_t)rank * c + idx % c);
    case CollId::kSendRecv:
      return input((rank - 1 + n) % n, idx);
    case CollId::kGather:
      return rank == root_ ? input((int)(idx / c), idx % c) : initialRecv(rank, inPlace, s, recvOff + idx);
    case CollId::kScatter:
      return input(root_, (size_t)rank * c + idx);
  }
  return 0;
}

bool Pattern::matches(uint64_t got, uint64_t want) const {
  const TypeInfo& t = *type_;
  const uint64_t mask = widthMask(t.size);
  got &= mask;
  want &= mask;
  if (!reduces_ || t.kind != TypeKind::kFloat) return got == want;
  if (isNanBits(t, got) || isNanBits(t, want)) return got == want;
  if (op_ == OpId::kAvg) return ulpDistance(t, got, want) <= 2;
  return decodeFloat(t, got) == decodeFloat(t, want);
}

size_t inPlaceExtent(const CollShape& s, int rank) {
  size_t sendEnd = s.sendInPlaceOffset * (size_t)rank + s.send;
  size_t recvEnd = s.recvInPlaceOffset * (size_t)rank + s.recv;
  return std::max(sendEnd, recvEnd);
}

void fillRank(const Pattern& p, int rank, bool inPlace, const CollShape& s, void* send, void* recv) {
  const int size = p.type().size;
  if (!inPlace) {
    for (size_t j = 0; j < s.send; ++j) storeElem(send, j, size, p.input(rank, j));
    if (s.recv) std::memset(recv, 0, s.recv * (size_t)size);
    return;
  }
  size_t extent = inPlaceExtent(s, rank);
  if (extent) std::memset(recv, 0, extent * (size_t)size);
  size_t sendOff = s.sendInPlaceOffset * (size_t)rank;
  for (size_t j = 0; j < s.send; ++j) storeElem(recv, sendOff + j, size, p.input(rank, j));
}

int64_t countWrong(const Pattern& p, int rank, bool inPlace, const CollShape& s, const void* output,
                   WrongSample* first) {
  const int size = p.type().size;
  int64_t wrong = 0;
  for (size_t i = 0; i < s.recv; ++i) {
    uint64_t got = loadElem(output, i, size);
    uint64_t want = p.expected(rank, inPlace, s, i);
    if (!p.matches(got, want)) {
      if (wrong == 0 && first) *first = WrongSample{i, got, want};
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace accl::bench
