// Closed-form inputs, expected results and buffer layouts of the collective matrix (see
// collective_expect.h for the value rules).
#include "mp/collective_expect.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace accl::test {

namespace {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hashAt(uint64_t salt, int rank, size_t j) {
  return mix64(salt ^ (static_cast<uint64_t>(rank + 1) << 42) ^ static_cast<uint64_t>(j));
}

bool isFp8(ncclDataType_t type) { return type == ncclFloat8e4m3 || type == ncclFloat8e5m2; }
bool isPreMulSum(Op op) { return op == Op::kPreMulSumImm || op == Op::kPreMulSumDev; }

// Smallest magnitude/stride pair such that the worst sum over ranks of weight * magnitude, over
// the ranks that contribute at one index, stays within budget. Magnitude is capped by maxMag.
void chooseMagnitude(const std::vector<int64_t>& weights, uint64_t budget, int64_t maxMag, ValuePlan* plan) {
  const int n = static_cast<int>(weights.size());
  auto worst = [&](int stride) {
    int64_t best = 0;
    for (int j0 = 0; j0 < stride; ++j0) {
      int64_t sum = 0;
      for (int r = 0; r < n; ++r)
        if ((r + j0) % stride == 0) sum += weights[r];
      best = std::max(best, sum);
    }
    return best;
  };
  int64_t full = std::max<int64_t>(1, worst(1));
  int64_t mag = std::min<int64_t>(maxMag, static_cast<int64_t>(budget) / full);
  if (mag >= 1) {
    plan->magnitude = mag;
    plan->stride = 1;
    return;
  }
  plan->magnitude = 1;
  int stride = 2;
  while (stride<n&& static_cast<uint64_t>(worst(stride))> budget) ++stride;
  plan->stride = stride;
}

}  // namespace

const char* collName(Coll coll) {
  switch (coll) {
    case Coll::kAllReduce:
      return "AllReduce";
    case Coll::kReduce:
      return "Reduce";
    case Coll::kBroadcast:
      return "Broadcast";
    case Coll::kBcast:
      return "Bcast";
    case Coll::kReduceScatter:
      return "ReduceScatter";
    case Coll::kAllGather:
      return "AllGather";
    case Coll::kAlltoAll:
      return "AlltoAll";
    case Coll::kGather:
      return "Gather";
    case Coll::kScatter:
      return "Scatter";
  }
  return "?";
}

const char* opName(Op op) {
  switch (op) {
    case Op::kSum:
      return "sum";
    case Op::kProd:
      return "prod";
    case Op::kMax:
      return "max";
    case Op::kMin:
      return "min";
    case Op::kAvg:
      return "avg";
    case Op::kPreMulSumImm:
      return "premulsum";
    case Op::kPreMulSumDev:
      return "premulsum-dev";
    case Op::kNone:
      return "none";
  }
  return "?";
}

bool collReduces(Coll coll) {
  return coll == Coll::kAllReduce || coll == Coll::kReduce || coll == Coll::kReduceScatter;
}

bool collHasRoot(Coll coll) {
  return coll == Coll::kReduce || coll == Coll::kBroadcast || coll == Coll::kBcast || coll == Coll::kGather ||
         coll == Coll::kScatter;
}

bool collAllowsOutOfPlace(Coll coll) { return coll != Coll::kBcast; }
bool collAllowsInPlace(Coll coll) { return coll != Coll::kAlltoAll; }

ncclRedOp_t builtinRedOp(Op op) {
  switch (op) {
    case Op::kSum:
      return ncclSum;
    case Op::kProd:
      return ncclProd;
    case Op::kMax:
      return ncclMax;
    case Op::kMin:
      return ncclMin;
    case Op::kAvg:
      return ncclAvg;
    default:
      return ncclNumOps;
  }
}

std::string describeCase(const CaseSpec& cs) {
  std::string text = std::string(collName(cs.coll)) + " " + typeName(cs.type);
  if (collReduces(cs.coll)) text += std::string(" ") + opName(cs.op);
  text += " count=" + std::to_string(cs.count);
  text += cs.inPlace ? " in-place" : " out-of-place";
  text += " root=" + (collHasRoot(cs.coll) ? std::to_string(cs.root) : std::string("-"));
  if (cs.misalign) text += " misalign=" + std::to_string(cs.misalign);
  return text;
}

int64_t premulScalar(ncclDataType_t type, Op op, int rank) {
  if (isFloatType(type)) return op == Op::kPreMulSumDev ? 2 - rank % 2 : 1 + rank % 2;
  return op == Op::kPreMulSumDev ? 3 - rank % 3 : 1 + rank % 3;
}

int64_t premulDecoyScalar(ncclDataType_t) { return 5; }

ValuePlan planValues(ncclDataType_t type, Op op, int nranks) {
  ValuePlan plan;
  const bool fl = isFloatType(type);
  const uint64_t budget = exactIntegerBudget(type);
  switch (op) {
    case Op::kNone:
    case Op::kMax:
    case Op::kMin:
      plan.kind = fl ? ValueKind::kFiniteBits : ValueKind::kRawBits;
      break;
    case Op::kSum:
      if (!fl) {
        plan.kind = ValueKind::kRawBits;
      } else {
        plan.kind = ValueKind::kSmallInt;
        chooseMagnitude(std::vector<int64_t>(nranks, 1), budget, 3, &plan);
      }
      break;
    case Op::kProd:
      if (!fl) {
        plan.kind = ValueKind::kRawOddBits;
      } else {
        plan.kind = ValueKind::kPowerOfTwoFactor;
        plan.allowHalf = !isFp8(type);
        // Largest power of two that stays finite (and, with 0.5, normal or exact subnormal).
        const int maxPow = type == ncclFloat8e4m3                            ? 8
                           : (type == ncclFloat8e5m2 || type == ncclFloat16) ? 14
                                                                             : 60;
        plan.stride = (nranks + maxPow - 1) / maxPow;
      }
      break;
    case Op::kAvg:
      if (!fl) {
        plan.kind = ValueKind::kSmallInt;
        chooseMagnitude(std::vector<int64_t>(nranks, 1), budget, 3, &plan);
      } else {
        plan.kind = ValueKind::kAvgScaled;
        plan.tolerant = true;
        // Each input is nranks * a; |a| <= 2 when nranks * 2 is still exact, else 1.
        const int64_t maxA = static_cast<uint64_t>(2 * nranks) <= budget ? 2 : 1;
        chooseMagnitude(std::vector<int64_t>(nranks, 1), budget, maxA, &plan);
      }
      break;
    case Op::kPreMulSumImm:
    case Op::kPreMulSumDev:
      if (!fl) {
        plan.kind = ValueKind::kRawBits;
      } else {
        plan.kind = ValueKind::kSmallInt;
        plan.tolerant = true;
        std::vector<int64_t> weights(nranks);
        for (int r = 0; r < nranks; ++r) weights[r] = premulScalar(type, op, r);
        chooseMagnitude(weights, budget, 3, &plan);
      }
      break;
  }
  return plan;
}

CaseModel::CaseModel(const CaseSpec& cs, int nranks)
    : cs_(cs),
      nranks_(nranks),
      plan_(planValues(cs.type, collReduces(cs.coll) ? cs.op : Op::kNone, nranks)),
      salt_(mix64((static_cast<uint64_t>(cs.coll) << 16) ^ (static_cast<uint64_t>(cs.type) << 8) ^
                  static_cast<uint64_t>(cs.op))) {}

double CaseModel::floatInput(int rank, size_t j) const {
  const uint64_t h = hashAt(salt_, rank, j);
  const bool active = (static_cast<size_t>(rank) + j) % static_cast<size_t>(plan_.stride) == 0;
  switch (plan_.kind) {
    case ValueKind::kSmallInt: {
      if (!active) return 0;
      const int64_t span = 2 * plan_.magnitude + 1;
      return static_cast<double>(static_cast<int64_t>(h % static_cast<uint64_t>(span)) - plan_.magnitude);
    }
    case ValueKind::kAvgScaled: {
      if (!active) return 0;
      const int64_t choices[5] = {0, 1, -1, plan_.magnitude, -plan_.magnitude};
      return static_cast<double>(nranks_ * choices[h % 5]);
    }
    case ValueKind::kPowerOfTwoFactor: {
      const double sign = (h & 1) ? -1.0 : 1.0;
      if (!active || (h >> 1) % 3 == 0) return sign;
      return sign * ((plan_.allowHalf && ((h >> 3) & 1)) ? 0.5 : 2.0);
    }
    default:
      return 0;
  }
}

uint64_t CaseModel::input(int rank, size_t j) const {
  const ncclDataType_t type = cs_.type;
  switch (plan_.kind) {
    case ValueKind::kRawBits:
      return hashAt(salt_, rank, j) & typeMask(type);
    case ValueKind::kRawOddBits:
      return (hashAt(salt_, rank, j) | 1u) & typeMask(type);
    case ValueKind::kFiniteBits:
      return sanitizeFinite(type, hashAt(salt_, rank, j));
    case ValueKind::kSmallInt:
      if (!isFloatType(type)) {
        // Integer avg: signed values in [-m, m], unsigned in [0, 2m].
        const uint64_t h = hashAt(salt_, rank, j);
        const int64_t span = 2 * plan_.magnitude + 1;
        int64_t v = static_cast<int64_t>(h % static_cast<uint64_t>(span));
        if (isSignedType(type)) v -= plan_.magnitude;
        return elemFromInt(type, v);
      }
      return elemFromDouble(type, floatInput(rank, j));
    case ValueKind::kAvgScaled:
    case ValueKind::kPowerOfTwoFactor:
      return elemFromDouble(type, floatInput(rank, j));
  }
  return 0;
}

ExpectedElem reduceElements(ncclDataType_t type, Op op, const std::vector<uint64_t>& inputs) {
  const int n = static_cast<int>(inputs.size());
  ExpectedElem out;
  out.tolerant = isFloatType(type) && (op == Op::kAvg || isPreMulSum(op));
  if (n == 0) return out;
  if (!isFloatType(type)) {
    const bool sign = isSignedType(type);
    uint64_t acc = inputs[0];
    int64_t wide = elemToInt(type, acc);
    if (isPreMulSum(op)) acc *= static_cast<uint64_t>(premulScalar(type, op, 0));
    for (int q = 1; q < n; ++q) {
      const uint64_t x = inputs[q] & typeMask(type);
      switch (op) {
        case Op::kSum:
          acc += x;
          break;
        case Op::kProd:
          acc *= x;
          break;
        case Op::kMax:
          if (sign ? elemToInt(type, x) > elemToInt(type, acc) : x > (acc & typeMask(type))) acc = x;
          break;
        case Op::kMin:
          if (sign ? elemToInt(type, x) < elemToInt(type, acc) : x < (acc & typeMask(type))) acc = x;
          break;
        case Op::kAvg:
          wide += elemToInt(type, x);
          break;
        case Op::kPreMulSumImm:
        case Op::kPreMulSumDev:
          acc += x * static_cast<uint64_t>(premulScalar(type, op, q));
          break;
        case Op::kNone:
          break;
      }
    }
    if (op == Op::kAvg) acc = static_cast<uint64_t>(wide / n);  // C++ division truncates toward zero
    out.bits = acc & typeMask(type);
    return out;
  }
  if (op == Op::kMax || op == Op::kMin) {
    uint64_t best = inputs[0];
    double bestValue = elemToDouble(type, best);
    for (int q = 1; q < n; ++q) {
      const double v = elemToDouble(type, inputs[q]);
      if (op == Op::kMax ? v > bestValue : v < bestValue) {
        best = inputs[q];
        bestValue = v;
      }
    }
    out.bits = best & typeMask(type);
    return out;
  }
  // The generated inputs make these sums and products exact in double.
  double acc = op == Op::kProd ? 1.0 : 0.0;
  for (int q = 0; q < n; ++q) {
    const double v = elemToDouble(type, inputs[q]);
    switch (op) {
      case Op::kProd:
        acc *= v;
        break;
      case Op::kPreMulSumImm:
      case Op::kPreMulSumDev:
        acc += v * static_cast<double>(premulScalar(type, op, q));
        break;
      default:
        acc += v;
        break;
    }
  }
  if (op == Op::kAvg) acc /= n;
  out.bits = elemFromDouble(type, acc);
  return out;
}

ExpectedElem CaseModel::reduced(size_t j) const {
  thread_local std::vector<uint64_t> inputs;
  inputs.resize(static_cast<size_t>(nranks_));
  for (int q = 0; q < nranks_; ++q) inputs[q] = input(q, j);
  return reduceElements(cs_.type, cs_.op, inputs);
}

uint64_t CaseModel::pattern(size_t e) const {
  return sanitizeFinite(cs_.type, mix64(salt_ ^ 0x5eedfacecafeull ^ e));
}

uint64_t CaseModel::guard() const { return 0xa5a5a5a5a5a5a5a5ull & typeMask(cs_.type); }

// ---- layouts -----------------------------------------------------------------------------------

namespace {

Segment seg(size_t begin, size_t end, Fill fill, int rank = -1, size_t j0 = 0) {
  return Segment{begin, end, fill, rank, j0};
}

BufferLayout buffer(const char* name, size_t elems, std::vector<Segment> initial,
                    std::vector<Segment> final) {
  return BufferLayout{name, elems, std::move(initial), std::move(final)};
}

// One segment per rank block q of `count` elements: fill(q).
template <class F>
std::vector<Segment> perBlock(int nranks, size_t count, F fill) {
  std::vector<Segment> out;
  for (int q = 0; q < nranks; ++q) out.push_back(fill(q, q * count, (q + 1) * count));
  return out;
}

}  // namespace

RankLayout layoutFor(const CaseSpec& cs, int n, int r) {
  const size_t c = cs.count;
  const size_t nc = static_cast<size_t>(n) * c;
  const int root = cs.root;
  const bool isRoot = r == root;
  RankLayout L;
  auto outOfPlace = [&](BufferLayout send, BufferLayout recv) {
    L.buffers = {std::move(send), std::move(recv)};
    L.sendBuffer = 0;
    L.recvBuffer = 1;
  };
  auto inPlace = [&](BufferLayout buff, size_t sendOffset, size_t recvOffset) {
    L.buffers = {std::move(buff)};
    L.sendBuffer = L.recvBuffer = 0;
    L.sendOffset = sendOffset;
    L.recvOffset = recvOffset;
  };
  switch (cs.coll) {
    case Coll::kAllReduce:
    case Coll::kReduce: {
      const bool writes = cs.coll == Coll::kAllReduce || isRoot;
      if (cs.inPlace) {
        inPlace(buffer("buff", c, {seg(0, c, Fill::kInput, r)},
                       {seg(0, c, writes ? Fill::kReduced : Fill::kKeep)}),
                0, 0);
      } else {
        outOfPlace(buffer("sendbuff", c, {seg(0, c, Fill::kInput, r)}, {seg(0, c, Fill::kKeep)}),
                   writes ? buffer("recvbuff", c, {seg(0, c, Fill::kPoison)}, {seg(0, c, Fill::kReduced)})
                          : buffer("recvbuff", c, {seg(0, c, Fill::kPattern)}, {seg(0, c, Fill::kKeep)}));
      }
      break;
    }
    case Coll::kBroadcast:
    case Coll::kBcast:
      if (cs.inPlace || cs.coll == Coll::kBcast) {
        inPlace(isRoot ? buffer("buff", c, {seg(0, c, Fill::kInput, root)}, {seg(0, c, Fill::kKeep)})
                       : buffer("buff", c, {seg(0, c, Fill::kPoison)}, {seg(0, c, Fill::kMoved, root)}),
                0, 0);
      } else {
        outOfPlace(buffer("sendbuff", c, {seg(0, c, isRoot ? Fill::kInput : Fill::kPattern, root)},
                          {seg(0, c, Fill::kKeep)}),
                   buffer("recvbuff", c, {seg(0, c, Fill::kPoison)}, {seg(0, c, Fill::kMoved, root)}));
      }
      break;
    case Coll::kReduceScatter:
      if (cs.inPlace) {
        inPlace(buffer("buff", nc, {seg(0, nc, Fill::kInput, r)},
                       {seg(0, r * c, Fill::kKeep), seg(r * c, (r + 1) * c, Fill::kReduced, -1, r * c),
                        seg((r + 1) * c, nc, Fill::kKeep)}),
                0, r * c);
      } else {
        outOfPlace(buffer("sendbuff", nc, {seg(0, nc, Fill::kInput, r)}, {seg(0, nc, Fill::kKeep)}),
                   buffer("recvbuff", c, {seg(0, c, Fill::kPoison)}, {seg(0, c, Fill::kReduced, -1, r * c)}));
      }
      break;
    case Coll::kAllGather: {
      auto gathered = perBlock(n, c, [](int q, size_t b, size_t e) { return seg(b, e, Fill::kMoved, q, 0); });
      if (cs.inPlace) {
        auto initial = perBlock(n, c, [r](int q, size_t b, size_t e) {
          return q == r ? seg(b, e, Fill::kInput, r, 0) : seg(b, e, Fill::kPoison);
        });
        inPlace(buffer("buff", nc, std::move(initial), std::move(gathered)), r * c, 0);
      } else {
        outOfPlace(buffer("sendbuff", c, {seg(0, c, Fill::kInput, r)}, {seg(0, c, Fill::kKeep)}),
                   buffer("recvbuff", nc, {seg(0, nc, Fill::kPoison)}, std::move(gathered)));
      }
      break;
    }
    case Coll::kAlltoAll:
      outOfPlace(buffer("sendbuff", nc, {seg(0, nc, Fill::kInput, r)}, {seg(0, nc, Fill::kKeep)}),
                 buffer("recvbuff", nc, {seg(0, nc, Fill::kPoison)},
                        perBlock(n, c, [r, c](int q, size_t b, size_t e) {
                          return seg(b, e, Fill::kMoved, q, r * c);
                        })));
      break;
    case Coll::kGather: {
      auto gathered = perBlock(n, c, [](int q, size_t b, size_t e) { return seg(b, e, Fill::kMoved, q, 0); });
      if (cs.inPlace) {
        // sendbuff == recvbuff + root * count on every rank; only the root's recvbuff is written.
        auto initial = perBlock(n, c, [&](int q, size_t b, size_t e) {
          if (q == root) return seg(b, e, Fill::kInput, r, 0);
          return seg(b, e, isRoot ? Fill::kPoison : Fill::kPattern);
        });
        inPlace(buffer("buff", nc, std::move(initial),
                       isRoot ? std::move(gathered) : std::vector<Segment>{seg(0, nc, Fill::kKeep)}),
                root * c, 0);
      } else {
        outOfPlace(buffer("sendbuff", c, {seg(0, c, Fill::kInput, r)}, {seg(0, c, Fill::kKeep)}),
                   isRoot ? buffer("recvbuff", nc, {seg(0, nc, Fill::kPoison)}, std::move(gathered))
                          : buffer("recvbuff", nc, {seg(0, nc, Fill::kPattern)}, {seg(0, nc, Fill::kKeep)}));
      }
      break;
    }
    case Coll::kScatter:
      if (cs.inPlace) {
        // recvbuff == sendbuff + root * count on every rank; only the root's sendbuff is read.
        if (isRoot) {
          inPlace(buffer("buff", nc, {seg(0, nc, Fill::kInput, root)}, {seg(0, nc, Fill::kKeep)}), 0,
                  root * c);
        } else {
          auto initial = perBlock(n, c, [&](int q, size_t b, size_t e) {
            return seg(b, e, q == root ? Fill::kPoison : Fill::kPattern);
          });
          auto final = perBlock(n, c, [&](int q, size_t b, size_t e) {
            return q == root ? seg(b, e, Fill::kMoved, root, r * c) : seg(b, e, Fill::kKeep);
          });
          inPlace(buffer("buff", nc, std::move(initial), std::move(final)), 0, root * c);
        }
      } else {
        outOfPlace(buffer("sendbuff", nc, {seg(0, nc, isRoot ? Fill::kInput : Fill::kPattern, root)},
                          {seg(0, nc, Fill::kKeep)}),
                   buffer("recvbuff", c, {seg(0, c, Fill::kPoison)}, {seg(0, c, Fill::kMoved, root, r * c)}));
      }
      break;
  }
  return L;
}

namespace {

const Segment* findSegment(const std::vector<Segment>& segments, size_t e) {
  for (const Segment& s : segments)
    if (e >= s.begin && e < s.end) return &s;
  return nullptr;
}

bool isGuard(const BufferLayout& buffer, int64_t e) {
  return e < 0 || static_cast<size_t>(e) >= buffer.elems;
}

}  // namespace

uint64_t initialElem(const CaseModel& model, const BufferLayout& buffer, int64_t e) {
  if (isGuard(buffer, e)) return model.guard();
  const size_t i = static_cast<size_t>(e);
  const Segment* s = findSegment(buffer.initial, i);
  if (s == nullptr) return model.pattern(i);
  switch (s->fill) {
    case Fill::kInput:
    case Fill::kMoved:
      return model.input(s->rank, s->j0 + (i - s->begin));
    case Fill::kReduced:
      return model.reduced(s->j0 + (i - s->begin)).bits;
    case Fill::kPoison:
      return ~finalElem(model, buffer, e).bits & typeMask(model.type());
    case Fill::kPattern:
    case Fill::kKeep:
      return model.pattern(i);
  }
  return 0;
}

ExpectedElem finalElem(const CaseModel& model, const BufferLayout& buffer, int64_t e) {
  if (isGuard(buffer, e)) return {model.guard(), false};
  const size_t i = static_cast<size_t>(e);
  const Segment* s = findSegment(buffer.final, i);
  if (s == nullptr) return {model.pattern(i), false};
  switch (s->fill) {
    case Fill::kInput:
    case Fill::kMoved:
      return {model.input(s->rank, s->j0 + (i - s->begin)), false};
    case Fill::kReduced:
      return model.reduced(s->j0 + (i - s->begin));
    case Fill::kKeep:
      return {initialElem(model, buffer, e), false};
    case Fill::kPattern:
    case Fill::kPoison:
      return {model.pattern(i), false};
  }
  return {};
}

bool elemMatches(ncclDataType_t type, const ExpectedElem& want, uint64_t got) {
  const uint64_t mask = typeMask(type);
  if ((want.bits & mask) == (got & mask)) return true;
  if (!want.tolerant || !isFloatType(type)) return false;
  if (elemIsNan(type, got) || elemIsInf(type, got)) return false;
  return ulpDistance(type, want.bits, got) <= kFloatAvgUlpTolerance;
}

// ---- host buffers ------------------------------------------------------------------------------

HostBuffer::~HostBuffer() { free(base_); }

void HostBuffer::prepare(const CaseModel& model, const BufferLayout& layout) {
  type_ = model.type();
  front_ = kGuardElems + static_cast<size_t>(model.spec().misalign);
  elems_ = layout.elems;
  const size_t bytes = (front_ + elems_ + kGuardElems) * typeSize(type_);
  const size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded > capacityBytes_) {
    free(base_);
    base_ = static_cast<char*>(aligned_alloc(64, rounded));
    capacityBytes_ = base_ ? rounded : 0;
  }
  const int64_t last = static_cast<int64_t>(elems_ + kGuardElems);
  for (int64_t e = -static_cast<int64_t>(front_); e < last; ++e)
    storeElem(type_, base_, static_cast<size_t>(e + static_cast<int64_t>(front_)),
              initialElem(model, layout, e));
}

void* HostBuffer::at(size_t offset) { return base_ + (front_ + offset) * typeSize(type_); }

size_t HostBuffer::check(const CaseModel& model, const BufferLayout& layout, size_t maxReport,
                         std::vector<std::string>* reports) const {
  size_t wrong = 0;
  const int64_t last = static_cast<int64_t>(elems_ + kGuardElems);
  for (int64_t e = -static_cast<int64_t>(front_); e < last; ++e) {
    const uint64_t got = loadElem(type_, base_, static_cast<size_t>(e + static_cast<int64_t>(front_)));
    const ExpectedElem want = finalElem(model, layout, e);
    if (elemMatches(type_, want, got)) continue;
    if (wrong++ >= maxReport) continue;
    std::string where = layout.name;
    if (e < 0)
      where += " guard[" + std::to_string(e) + "]";
    else if (static_cast<size_t>(e) >= elems_)
      where += " guard[end+" + std::to_string(e - static_cast<int64_t>(elems_)) + "]";
    else
      where += "[" + std::to_string(e) + "]";
    reports->push_back(where + ": expected " + elemToString(type_, want.bits) +
                       (want.tolerant ? " (+-2 ulp)" : "") + " got " + elemToString(type_, got));
  }
  return wrong;
}

}  // namespace accl::test
