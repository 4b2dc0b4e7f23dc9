// accl-perf's self-test (see selftest.h). It never calls the library.
#include "selftest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "catalog.h"
#include "elem_codec.h"
#include "options.h"
#include "pattern.h"
#include "plan.h"

namespace accl::bench {
namespace {

int gFailures = 0;
int gChecks = 0;

#define ST_EXPECT(cond, ...)                                  \
  do {                                                        \
    ++gChecks;                                                \
    if (!(cond)) {                                            \
      ++gFailures;                                            \
      if (gFailures <= 50) {                                  \
        std::printf("selftest FAILED %s:%d: ", __FILE__, __LINE__); \
        std::printf(__VA_ARGS__);                             \
        std::printf("\n");                                    \
      }                                                       \
    }                                                         \
  } while (0)

const TypeInfo& T(const char* name) { return *findType(name); }

// ---------------------------------------------------------------- element codec

void testCodec() {
  // Every finite pattern of the 8- and 16-bit floating types survives decode -> encode.
  for (const char* name : {"half", "bfloat16", "f8e4m3", "f8e5m2"}) {
    const TypeInfo& t = T(name);
    uint64_t limit = 1ull << (8 * t.size);
    int bad = 0;
    for (uint64_t b = 0; b < limit; ++b) {
      double d = decodeFloat(t, b);
      if (std::isnan(d)) continue;
      if (encodeFloat(t, d) != b) ++bad;
    }
    ST_EXPECT(bad == 0, "%s: %d bit patterns do not round-trip", name, bad);
  }
  struct Known {
    const char* type;
    double value;
    uint64_t bits;
  };
  const Known known[] = {
      {"half", 1.0, 0x3c00},         {"half", -2.0, 0xc000},       {"half", 65504.0, 0x7bff},
      {"half", 65520.0, 0x7c00},     {"half", 1.0 + 1.0 / 2048, 0x3c00},  // tie -> even
      {"half", 1.0 + 3.0 / 2048, 0x3c02},                                 // tie -> even (up)
      {"half", std::ldexp(1.0, -24), 0x0001},                             // smallest subnormal
      {"bfloat16", 1.0, 0x3f80},     {"bfloat16", -3.0, 0xc040},   {"bfloat16", 256.0, 0x4380},
      {"f8e4m3", 1.0, 0x38},         {"f8e4m3", 448.0, 0x7e},      {"f8e4m3", 1000.0, 0x7e},  // saturates
      {"f8e4m3", -16.0, 0xd8},       {"f8e4m3", std::ldexp(1.0, -9), 0x01},
      {"f8e5m2", 1.0, 0x3c},         {"f8e5m2", 57344.0, 0x7b},    {"f8e5m2", 1e6, 0x7c},     // infinity
      {"f8e5m2", -8.0, 0xc8},        {"float", 1.0, 0x3f800000},   {"float", -0.5, 0xbf000000},
      {"double", 1.0, 0x3ff0000000000000ull},
  };
  for (const Known& k : known) {
    uint64_t got = encodeFloat(T(k.type), k.value);
    ST_EXPECT(got == k.bits, "encode %s(%g) = 0x%llx, want 0x%llx", k.type, k.value, (unsigned long long)got,
              (unsigned long long)k.bits);
  }
  ST_EXPECT(std::isnan(decodeFloat(T("f8e4m3"), 0x7f)), "e4m3 0x7f must be NaN");
  ST_EXPECT(std::isinf(decodeFloat(T("f8e5m2"), 0x7c)), "e5m2 0x7c must be infinity");
  ST_EXPECT(decodeFloat(T("f8e4m3"), 0x7e) == 448.0, "e4m3 0x7e must be 448");
  // The bit-level rounding of the narrow types agrees with a brute-force nearest search (ties to even).
  uint64_t rng = 777;
  for (const char* name : {"half", "bfloat16", "f8e4m3", "f8e5m2"}) {
    const TypeInfo& t = T(name);
    const uint64_t patterns = 1ull << (8 * t.size);
    const int samples = t.size == 1 ? 20000 : 300;
    int bad = 0;
    for (int i = 0; i < samples; ++i) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      double unit = (double)(rng >> 11) / (double)(1ull << 53);
      double a = (i % 4 == 0) ? unit * std::ldexp(1.0, -(t.manBits + (1 << (t.expBits - 1)) - 1))  // subnormals
                              : unit * maxFinite(t);
      if (i % 7 == 0) a = decodeFloat(t, (rng >> 20) % (patterns / 2));                 // exact values
      if (i % 11 == 0) {                                                               // exact midpoints
        uint64_t b = (rng >> 20) % (patterns / 2 - 2);
        double lo = decodeFloat(t, b), hi = decodeFloat(t, b + 1);
        if (std::isfinite(lo) && std::isfinite(hi)) a = (lo + hi) / 2;
      }
      if (!std::isfinite(a)) continue;
      uint64_t best = 0;
      double bestErr = INFINITY;
      for (uint64_t b = 0; b < patterns / 2; ++b) {
        double v = decodeFloat(t, b);
        if (!std::isfinite(v)) continue;
        double err = std::fabs(v - a);
        if (err < bestErr || (err == bestErr && (b & 1) == 0)) {
          best = b;
          bestErr = err;
        }
      }
      if (encodeFloat(t, a) != best || encodeFloat(t, -a) != (best | (1ull << (8 * t.size - 1)))) ++bad;
    }
    ST_EXPECT(bad == 0, "%s: %d values round differently from the nearest-value search", name, bad);
  }
  // float and double agree with the hardware's own rounding.
  uint64_t state = 12345;
  int floatBad = 0, doubleBad = 0;
  for (int i = 0; i < 200000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double d = std::ldexp((double)(state >> 11) / (double)(1ull << 53) - 0.5, (int)(state % 300) - 150);
    float f = (float)d;
    uint32_t fb;
    std::memcpy(&fb, &f, 4);
    if (encodeFloat(T("float"), d) != fb) ++floatBad;
    uint64_t db;
    std::memcpy(&db, &d, 8);
    if (encodeFloat(T("double"), d) != db || decodeFloat(T("double"), db) != d) ++doubleBad;
  }
  ST_EXPECT(floatBad == 0, "float rounding disagrees with (float) casts %d times", floatBad);
  ST_EXPECT(doubleBad == 0, "double encode/decode is not the identity %d times", doubleBad);
  ST_EXPECT(ulpDistance(T("half"), 0x3c00, 0x3c02) == 2, "ulp distance");
  ST_EXPECT(ulpDistance(T("half"), 0x8001, 0x0001) == 2, "ulp distance across zero");
  ST_EXPECT(ulpDistance(T("half"), 0x8000, 0x0000) == 0, "+0 and -0");
  ST_EXPECT(intValue(T("int8"), 0xff) == -1 && intValue(T("uint8"), 0xff) == 255, "intValue sign handling");
}

// ---------------------------------------------------------------- shapes and bandwidth

void testShapes() {
  CollShape s = collShape(CollId::kAllGather, 1024, 4, 3);  // 256 floats / 3 ranks -> 85 -> 84 (16 B blocks)
  ST_EXPECT(s.param == 84 && s.send == 84 && s.recv == 252 && s.sendInPlaceOffset == 84 && s.recvInPlaceOffset == 0,
            "all_gather shape %zu %zu %zu", s.param, s.send, s.recv);
  ST_EXPECT(reportedBytes(s, 4) == 1008, "all_gather size column");
  s = collShape(CollId::kReduceScatter, 1024, 8, 4);  // 128 doubles / 4 -> 32
  ST_EXPECT(s.param == 32 && s.send == 128 && s.recv == 32 && s.recvInPlaceOffset == 32, "reduce_scatter shape");
  s = collShape(CollId::kAllToAll, 100, 1, 3);  // 100 int8 / 3 -> 33 -> 32
  ST_EXPECT(s.param == 32 && s.send == 96 && s.recv == 96, "alltoall shape");
  s = collShape(CollId::kScatter, 4096, 2, 8);
  ST_EXPECT(s.param == 256 && s.send == 2048 && s.recv == 256 && s.recvInPlaceOffset == 256, "scatter shape");
  s = collShape(CollId::kAllReduce, 8, 4, 7);
  ST_EXPECT(s.param == 2 && s.send == 2 && s.recv == 2, "all_reduce shape");
  s = collShape(CollId::kGather, 8, 4, 4);  // 2 floats / 4 ranks -> 0
  ST_EXPECT(s.param == 0 && s.recv == 0, "gather rounds small sizes down to 0");
  ST_EXPECT(busFactor(CollId::kAllReduce, 4) == 1.5, "all_reduce bus factor");
  ST_EXPECT(busFactor(CollId::kAllGather, 4) == 0.75 && busFactor(CollId::kAllToAll, 4) == 0.75, "(n-1)/n");
  ST_EXPECT(busFactor(CollId::kBroadcast, 4) == 1 && busFactor(CollId::kSendRecv, 4) == 1, "factor 1");
  ST_EXPECT(busFactor(CollId::kGather, 1) == 0 && busFactor(CollId::kAllReduce, 1) == 0, "1 rank: busbw 0");
  ST_EXPECT(std::fabs(algBandwidth(CollId::kAllGather, 1000, 4, 4, 1e-3) - 0.016) < 1e-12, "all_gather algbw");
  ST_EXPECT(std::fabs(algBandwidth(CollId::kAllReduce, 1000, 4, 4, 1e-3) - 0.004) < 1e-12, "all_reduce algbw");
}

// ---------------------------------------------------------------- options

int parseArgs(std::vector<const char*> args, Options* o) {
  std::vector<char*> argv;
  for (const char* a : args) argv.push_back(const_cast<char*>(a));
  argv.push_back(nullptr);
  std::string err;
  return parseOptions((int)args.size(), argv.data(), o, &err);
}

void testOptions() {
  Options o;
  int rc = parseArgs({"/x/all_gather_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "4"}, &o);
  ST_EXPECT(rc == -1 && o.coll == CollId::kAllGather && o.minBytes == 8 && o.maxBytes == (128u << 20) &&
                o.stepFactor == 2 && o.ranksPerProcess() == 4 && o.programName == "all_gather_perf",
            "all_gather_perf flags");
  rc = parseArgs({"accl-perf", "-C", "reduce", "-o", "all", "-d", "all", "-r", "all", "-c", "0"}, &o);
  ST_EXPECT(rc == -1 && o.coll == CollId::kReduce && o.ops.size() == 6 && o.types.size() == 12 && o.allRoots &&
                o.checks == 0,
            "-C reduce -o all -d all -r all");
  rc = parseArgs({"reduce_scatter_perf_mpi", "-C", "1", "-t", "2", "-g", "3"}, &o);
  ST_EXPECT(rc == -1 && o.coll == CollId::kReduceScatter && o.reportCpuTime == 1 && o.ranksPerProcess() == 6,
            "-C 1 keeps nccl-tests' meaning");
  rc = parseArgs({"accl-perf", "-N", "4", "--run_cycles", "2", "--json", "x.json", "-a", "3", "-T", "5"}, &o);
  ST_EXPECT(rc == -1 && o.procs == 4 && o.runCycles == 2 && o.jsonPath == "x.json" && o.average == 3 &&
                o.timeoutGiven && o.timeoutSec == 5,
            "-N/--run_cycles/--json/-a/-T");
  ST_EXPECT(parseArgs({"accl-perf", "-b", "64", "-e", "8"}, &o) == kExitInvalidUsage, "min > max is exit 2");
  ST_EXPECT(parseArgs({"accl-perf", "-b", "x"}, &o) == kExitInvalidUsage, "bad size is exit 2");
  ST_EXPECT(parseArgs({"accl-perf", "-d", "float16"}, &o) == kExitInvalidUsage, "unknown type");
  ST_EXPECT(parseArgs({"accl-perf", "-C", "allreduce"}, &o) == kExitInvalidUsage, "unknown collective");
  ST_EXPECT(parseArgs({"accl-perf", "--bogus"}, &o) == kExitInvalidUsage, "unknown option");
  ST_EXPECT(parseArgs({"accl-perf", "-D", "1"}, &o) == kExitNotImplemented, "-D is not implemented");
  rc = parseArgs({"accl-perf", "-b", "8", "-e", "256M", "-f", "4"}, &o);
  std::vector<size_t> sizes = sweepSizes(o);
  ST_EXPECT(rc == -1 && sizes.size() == 13 && sizes.front() == 8 && sizes.back() == (128u << 20), "-f 4 sweep");
  rc = parseArgs({"accl-perf", "-b", "1K", "-e", "4K", "-i", "1K"}, &o);
  sizes = sweepSizes(o);
  ST_EXPECT(rc == -1 && sizes.size() == 4 && sizes[3] == 4096, "-i sweep");
  std::vector<size_t> warm = warmupSizes(o);
  ST_EXPECT(warm.size() == 3 && warm[2] == 4096, "warmup doubles");
  size_t v = 0;
  ST_EXPECT(parseSize("1.5K", &v) && v == 1536, "1.5K");
  ST_EXPECT(parseSize("32MB", &v) && v == (32u << 20), "32MB");
  ST_EXPECT(!parseSize("-1", &v) && !parseSize("12X", &v), "bad sizes rejected");

  rc = parseArgs({"accl-perf", "-C", "broadcast", "-d", "all", "-r", "all", "-b", "8", "-e", "64", "-f", "2",
                  "--run_cycles", "2"},
                 &o);
  Plan plan = makePlan(o, 3);
  ST_EXPECT(rc == -1 && plan.tests.size() == 36 && plan.sizes.size() == 4 && plan.steps.size() == 36 * 2 * 4 * 2,
            "plan size");
  ST_EXPECT(std::string(plan.opName(plan.tests[0])) == "none" && plan.tests[2].root == 2, "plan order");
}

// ---------------------------------------------------------------- the data check, end to end

// An in-process stand-in for the library: computes each collective from the ranks' actual buffers,
// reducing element by element in a chosen order with rounding after every step, as a real engine does.
class Reference {
 public:
  Reference(const TypeInfo& t, OpId op, int n) : t_(t), op_(op), n_(n) {
    mask_ = widthMask(t.size);
    if (t.kind == TypeKind::kFloat && op == OpId::kAvg)
      avgScalar_ = t.type == ncclFloat64 ? 1.0 / n : decodeFloat(t, encodeFloat(t, (double)(float)(1.0 / n)));
  }

  uint64_t pre(uint64_t x, int rank) const {
    if (t_.kind == TypeKind::kFloat) {
      if (op_ == OpId::kAvg) return encodeFloat(t_, decodeFloat(t_, x) * avgScalar_);
      if (op_ == OpId::kMulSum) return encodeFloat(t_, decodeFloat(t_, x) * (rank % 2 ? 2.0 : 1.0));
      return x;
    }
    if (op_ == OpId::kMulSum) return ((uint64_t)intValue(t_, x) * (uint64_t)(rank % 2 ? 2 : 1)) & mask_;
    return x;
  }
  uint64_t combine(uint64_t a, uint64_t b) const {
    if (t_.kind == TypeKind::kFloat) {
      double x = decodeFloat(t_, a), y = decodeFloat(t_, b), r = 0;
      switch (op_) {
        case OpId::kProd: r = x * y; break;
        case OpId::kMax: r = std::max(x, y); break;
        case OpId::kMin: r = std::min(x, y); break;
        default: r = x + y; break;
      }
      return encodeFloat(t_, r);
    }
    int64_t x = intValue(t_, a), y = intValue(t_, b);
    bool sgn = t_.kind == TypeKind::kSigned;
    switch (op_) {
      case OpId::kProd: return ((uint64_t)x * (uint64_t)y) & mask_;
      case OpId::kMax: return (sgn ? x >= y : (a & mask_) >= (b & mask_)) ? a : b;
      case OpId::kMin: return (sgn ? x <= y : (a & mask_) <= (b & mask_)) ? a : b;
      default: return ((uint64_t)x + (uint64_t)y) & mask_;
    }
  }
  uint64_t post(uint64_t x) const {
    if (t_.kind != TypeKind::kFloat && op_ == OpId::kAvg) {
      if (t_.kind == TypeKind::kSigned) return (uint64_t)(intValue(t_, x) / n_) & mask_;
      return ((x & mask_) / (uint64_t)n_) & mask_;
    }
    return x;
  }
  // Reduces vals (one per rank, in rank order) in one of three orders, chosen per element so that one
  // pass exercises all of them.
  uint64_t reduce(std::vector<uint64_t> vals, int variant, size_t j) const {
    int n = (int)vals.size();
    variant = (int)((j + (size_t)variant) % 3);
    for (int r = 0; r < n; ++r) vals[r] = pre(vals[r], r);
    uint64_t acc = 0;
    if (variant == 0) {  // ring starting at a different rank for each element
      int start = (int)(j % (size_t)n);
      acc = vals[start];
      for (int k = 1; k < n; ++k) acc = combine(acc, vals[(start + k) % n]);
    } else if (variant == 1) {  // reversed chain
      acc = vals[n - 1];
      for (int r = n - 2; r >= 0; --r) acc = combine(vals[r], acc);
    } else {  // pairwise tree
      while (vals.size() > 1) {
        std::vector<uint64_t> next;
        for (size_t i = 0; i + 1 < vals.size(); i += 2) next.push_back(combine(vals[i], vals[i + 1]));
        if (vals.size() % 2) next.push_back(vals.back());
        vals.swap(next);
      }
      acc = vals[0];
    }
    return post(acc);
  }

 private:
  const TypeInfo& t_;
  OpId op_;
  int n_;
  uint64_t mask_;
  double avgScalar_ = 0;
};

enum class Fault { kNone, kCorruptOne, kDropLastRank, kSwapBlocks };

struct Scenario {
  CollId coll;
  const TypeInfo* type;
  OpId op;
  int root;
  int n;
  size_t bytes;
  bool inPlace;
};

// Runs one scenario through fill -> reference collective -> check; returns the total wrong count.
int64_t runScenario(const Scenario& sc, Fault fault, int variant, int64_t* checkedElems) {
  const TypeInfo& t = *sc.type;
  const int sz = t.size;
  const int n = sc.n;
  CollShape shape = collShape(sc.coll, sc.bytes, sz, n);
  Pattern p(sc.coll, t, sc.op, sc.root, n, 0x5eed0000ull + sc.bytes * 31 + (uint64_t)variant);
  std::vector<std::vector<char>> send(n), recv(n);
  std::vector<char*> sptr(n), rptr(n);
  for (int r = 0; r < n; ++r) {
    send[r].assign(shape.send * sz + 1, 0);
    recv[r].assign(std::max(shape.recv, inPlaceExtent(shape, r)) * sz + 1, 0);
    fillRank(p, r, sc.inPlace, shape, send[r].data(), recv[r].data());
    sptr[r] = sc.inPlace ? recv[r].data() + shape.sendInPlaceOffset * r * sz : send[r].data();
    rptr[r] = sc.inPlace ? recv[r].data() + shape.recvInPlaceOffset * r * sz : recv[r].data();
  }
  const size_t c = shape.param;
  Reference ref(t, sc.op, n);
  auto in = [&](int r, size_t j) { return loadElem(sptr[r], j, sz); };
  auto reducedAt = [&](size_t j) {
    std::vector<uint64_t> vals;
    int ranks = fault == Fault::kDropLastRank && n > 1 ? n - 1 : n;
    for (int r = 0; r < ranks; ++r) vals.push_back(in(r, j));
    return ref.reduce(vals, variant, j);
  };
  // Results go to temporaries first: in place, outputs overwrite inputs only once the call is done.
  std::vector<std::vector<uint64_t>> out(n);
  std::vector<bool> writes(n, true);
  for (int r = 0; r < n; ++r) {
    std::vector<uint64_t>& o = out[r];
    o.resize(shape.recv);
    for (size_t i = 0; i < shape.recv; ++i) {
      switch (sc.coll) {
        case CollId::kAllReduce: o[i] = reducedAt(i); break;
        case CollId::kReduce: o[i] = reducedAt(i); break;
        case CollId::kReduceScatter: o[i] = reducedAt((size_t)r * c + i); break;
        case CollId::kAllGather: o[i] = in((int)(i / c), i % c); break;
        case CollId::kBroadcast: o[i] = in(sc.root, i); break;
        case CollId::kAllToAll: o[i] = in((int)(i / c), (size_t)r * c + i % c); break;
        case CollId::kSendRecv: o[i] = in((r - 1 + n) % n, i); break;
        case CollId::kGather: o[i] = in((int)(i / c), i % c); break;
        case CollId::kScatter: o[i] = in(sc.root, (size_t)r * c + i); break;
      }
    }
    if ((sc.coll == CollId::kReduce || sc.coll == CollId::kGather) && r != sc.root) writes[r] = false;
    if (fault == Fault::kSwapBlocks && n > 1 && c > 0 && shape.recv >= 2 * c)
      for (size_t i = 0; i < c; ++i) std::swap(o[i], o[c + i]);
  }
  for (int r = 0; r < n; ++r)
    if (writes[r])
      for (size_t i = 0; i < shape.recv; ++i) storeElem(rptr[r], i, sz, out[r][i]);
  if (fault == Fault::kCorruptOne) {
    for (int r = n - 1; r >= 0; --r) {
      if (shape.recv == 0) break;
      size_t i = shape.recv / 2;
      uint64_t flip = t.kind == TypeKind::kFloat ? (1ull << t.manBits) : 1ull;
      storeElem(rptr[r], i, sz, loadElem(rptr[r], i, sz) ^ flip);
      break;
    }
  }
  int64_t wrong = 0;
  *checkedElems = 0;
  for (int r = 0; r < n; ++r) {
    WrongSample first;
    int64_t w = countWrong(p, r, sc.inPlace, shape, rptr[r], &first);
    if (w && fault == Fault::kNone && gFailures < 50) {
      std::printf("  %s %s %s root %d n %d bytes %zu %s variant %d: rank %d elem %zu got 0x%llx want 0x%llx\n",
                  collInfo(sc.coll).name, t.name, opInfo(sc.op).name, sc.root, n, sc.bytes,
                  sc.inPlace ? "in-place" : "out-of-place", variant, r, first.index, (unsigned long long)first.got,
                  (unsigned long long)first.want);
    }
    wrong += w;
    *checkedElems += (int64_t)shape.recv;
  }
  return wrong;
}

void testDataCheck(bool verbose) {
  // Every collective x type x op over small rank counts (with 0, 1-2 and a few hundred elements), then
  // rank counts where the value rules switch to sparse contributions (16, 17) on one size.
  struct Sweep {
    std::vector<int> ranks;
    std::vector<size_t> bytes;
    std::vector<int> inPlace;
    std::vector<int> variants;
  };
  const Sweep sweeps[] = {
      {{1, 2, 3, 4, 5, 8}, {0, 24, 520}, {0, 1}, {0}},
      {{16, 17}, {520}, {0}, {0}},
  };
  long scenarios = 0;
  for (const CollInfo& ci : allColls()) {
    std::vector<OpId> ops;
    if (ci.reduces) {
      for (const OpInfo& op : allOps()) ops.push_back(op.id);
    } else {
      ops.push_back(OpId::kSum);
    }
    for (const TypeInfo& t : allTypes()) {
      for (OpId op : ops) {
        for (const Sweep& sw : sweeps) {
          for (int n : sw.ranks) {
            std::vector<int> roots = ci.rooted ? std::vector<int>{0, n - 1} : std::vector<int>{-1};
            if (ci.rooted && n == 1) roots = {0};
            for (int root : roots) {
              for (size_t bytes : sw.bytes) {
                for (int ip : sw.inPlace) {
                  Scenario sc{ci.id, &t, op, root, n, bytes, ip == 1};
                  int64_t elems = 0;
                  for (int variant : sw.variants) {
                    int64_t w = runScenario(sc, Fault::kNone, variant, &elems);
                    ST_EXPECT(w == 0, "%s %s %s root %d n %d bytes %zu %s variant %d: %lld wrong", ci.name, t.name,
                              opInfo(op).name, root, n, bytes, ip ? "in-place" : "out-of-place", variant,
                              (long long)w);
                    if (!ci.reduces) break;  // the order only matters for reductions
                  }
                  ++scenarios;
                  if (elems > 0) {
                    int64_t w = runScenario(sc, Fault::kCorruptOne, 0, &elems);
                    ST_EXPECT(w == 1, "%s %s %s n %d bytes %zu: a corrupted element gave %lld wrong", ci.name,
                              t.name, opInfo(op).name, n, bytes, (long long)w);
                  }
                }
              }
            }
          }
        }
        // Broken engines must be caught: a rank's contribution dropped, blocks in the wrong place.
        for (int n : {2, 3, 16}) {
          Scenario sc{ci.id, &t, op, ci.rooted ? n - 1 : -1, n, 1024, false};
          int64_t elems = 0;
          if (ci.reduces) {
            int64_t w = runScenario(sc, Fault::kDropLastRank, 0, &elems);
            ST_EXPECT(w > 0, "%s %s %s n %d: dropping a rank went unnoticed", ci.name, t.name, opInfo(op).name, n);
          }
          if (ci.id == CollId::kAllGather || ci.id == CollId::kAllToAll || ci.id == CollId::kGather) {
            int64_t w = runScenario(sc, Fault::kSwapBlocks, 0, &elems);
            ST_EXPECT(w > 0, "%s %s n %d: swapped blocks went unnoticed", ci.name, t.name, n);
          }
        }
      }
    }
    if (verbose) std::printf("selftest: %s checked\n", ci.name);
  }
  if (verbose) std::printf("selftest: %ld data-check scenarios\n", scenarios);
}

// The value rules keep every partial result exact (the property the checker relies on).
void testValueRules() {
  for (const TypeInfo& t : allTypes()) {
    if (t.kind != TypeKind::kFloat) continue;
    for (int n : {1, 2, 3, 7, 8, 9, 16, 17, 64, 200}) {
      for (OpId op : {OpId::kSum, OpId::kMulSum}) {
        ValueRule r = chooseValueRule(t, op, n);
        int active = (n + r.sparsity - 1) / r.sparsity;
        int64_t bound = (int64_t)active * std::max(-r.lo, r.hi) * (op == OpId::kMulSum ? 2 : 1);
        ST_EXPECT(r.hi >= 1 && bound <= exactIntegerLimit(t), "%s %s n %d: bound %lld", t.name, opInfo(op).name, n,
                  (long long)bound);
      }
      ValueRule r = chooseValueRule(t, OpId::kProd, n);
      int active = (n + r.sparsity - 1) / r.sparsity;
      ST_EXPECT(std::ldexp(1.0, active) <= maxFinite(t), "%s prod n %d: 2^%d overflows", t.name, n, active);
    }
  }
}

}  // namespace

int runSelftest(bool verbose) {
  gFailures = 0;
  gChecks = 0;
  testCodec();
  testShapes();
  testOptions();
  testValueRules();
  testDataCheck(verbose);
  std::printf("accl-perf selftest: %d checks, %d failed\n", gChecks, gFailures);
  return gFailures == 0 ? 0 : 1;
}

}  // namespace accl::bench
