// Launches, environments and case sampling of the collective matrix (see collective_cases.h).
#include "mp/collective_cases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

namespace accl::test {

// ---- Tuning constants --------------------------------------------------------------------------

namespace {

// Rank counts of the single-node matrix (both launchers).
const std::vector<int> kMatrixRankCounts = {1, 2, 3, 4, 5, 8};
// Rank counts of the two-virtual-node launches (fork only), small cases, and the subset that
// also runs the large cases.
const std::vector<int> kTwoNodeRankCounts = {2, 3, 5, 8};
const std::vector<int> kTwoNodeLargeRankCounts = {5};
// Counts: small launches use the default buffer sizes. Large launches shrink the buffers and use
// kLargeBytes / sizeof(type) + kLargeExtra elements per rank block (odd, not a multiple of any
// chunk), ~48 chunks of the Simple protocol's 1 KiB slots, spread over kLargeChannels channels.
// The host engine's cost grows with the number of steps, i.e. with bytes, so every type costs
// the same.
const std::vector<size_t> kSmallCounts = {0, 1, 7, 4099};
constexpr size_t kLargeBytes = 49152;
constexpr size_t kLargeExtra = 7;
// In count lists: "largeCount(type)".
constexpr size_t kPerTypeLargeCount = SIZE_MAX;
const std::vector<size_t> kLargeCounts = {kPerTypeLargeCount};
const char* const kLargeBuffSize = "8192";     // NCCL_BUFFSIZE (Simple)
const char* const kLargeLLBuffSize = "16384";  // NCCL_LL_BUFFSIZE
const char* const kLargeChannels = "2";        // NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS
// Small Tree launches run each AllReduce (type, op) this many times (different variants).
constexpr int kTreeVariantsPerCombo = 1;
// Small Ring launches with at least kHalfCombosFromRanks ranks run every other combo (rotating);
// the launches with fewer ranks already run every (combo, count, in-place) variant.
constexpr int kHalfCombosFromRanks = 8;
// Two-node small Ring launches run every kTwoNodeComboStride-th combo (rotating).
constexpr int kTwoNodeComboStride = 4;
// Full mode: every root for rank counts up to this, else roots {0, n/2, n-1}.
constexpr int kAllRootsUpTo = 4;
// Default mode: one case in kMisalignEvery runs with buffers shifted by one element.
constexpr int kMisalignEvery = 5;
// Launch deadlines (seconds).
constexpr int kDefaultDeadlineS = 120;
constexpr int kFullDeadlineS = 3600;

}  // namespace

// ---- Names and environment ---------------------------------------------------------------------

std::string launchName(const LaunchKey& key) {
  std::string name = key.mode == LaunchMode::kFork ? "Fork_" : "Thread_";
  name += std::to_string(key.nranks);
  if (key.env.twoNodes) name += "_TwoNodes";
  name += key.env.algo == Algo::kRing ? "_Ring" : "_Tree";
  name += key.env.proto == Proto::kSimple ? "_Simple" : "_LL";
  name += key.env.size == SizeClass::kSmall ? "_Small" : "_Large";
  if (key.env.viaConfig) name += "_ViaConfig";
  return name;
}

void PrintTo(const LaunchKey& key, std::ostream* os) { *os << launchName(key); }

const std::vector<int>& matrixRankCounts() { return kMatrixRankCounts; }
const std::vector<size_t>& smallCounts() { return kSmallCounts; }
size_t largeCount(ncclDataType_t type) { return kLargeBytes / typeSize(type) + kLargeExtra; }

std::vector<std::pair<std::string, std::string>> envSettings(const EnvConfig& env) {
  const bool large = env.size == SizeClass::kLarge;
  return {
      {"NCCL_ALGO", env.viaConfig ? "" : algoSelection(env.algo)},
      {"NCCL_PROTO", env.proto == Proto::kSimple ? "Simple" : "LL"},
      {"NCCL_BUFFSIZE", large ? kLargeBuffSize : ""},
      {"NCCL_LL_BUFFSIZE", large ? kLargeLLBuffSize : ""},
      {"NCCL_MIN_NCHANNELS", large ? kLargeChannels : ""},
      {"NCCL_MAX_NCHANNELS", large ? kLargeChannels : ""},
      {"NCCL_HOSTID", ""},  // set per rank in the child for two-node launches
  };
}

const char* algoSelection(Algo algo) { return algo == Algo::kRing ? "Ring" : "Ring;AllReduce:Tree"; }

ncclCollConfig_t launchCollConfig(const EnvConfig& env) {
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.algSelection = algoSelection(env.algo);
  if (env.size == SizeClass::kLarge) config.minCTAs = config.maxCTAs = std::atoi(kLargeChannels);
  return config;
}

std::string virtualHostId(int rank, int nranks) { return "node" + std::to_string(rank * 2 / nranks); }

bool fullMatrixRequested() {
  const char* env = getenv("ACCL_TEST_FULL");
  if (env != nullptr && strcmp(env, "0") != 0 && env[0] != '\0') return true;
  for (const std::string& arg : testing::internal::GetArgvs())
    if (arg == "--full") return true;
  return false;
}

std::chrono::milliseconds launchDeadline(bool full) {
  if (const char* env = getenv("ACCL_TEST_LAUNCH_DEADLINE_S")) {
    long s = strtol(env, nullptr, 10);
    if (s > 0) return std::chrono::seconds(s);
  }
  return std::chrono::seconds(full ? kFullDeadlineS : kDefaultDeadlineS);
}

ScopedEnv::ScopedEnv(const std::vector<std::pair<std::string, std::string>>& settings) {
  for (const auto& [name, value] : settings) {
    const char* old = getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value.empty())
      unsetenv(name.c_str());
    else
      setenv(name.c_str(), value.c_str(), 1);
  }
}

ScopedEnv::~ScopedEnv() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second)
      setenv(it->first.c_str(), it->second->c_str(), 1);
    else
      unsetenv(it->first.c_str());
  }
}

// ---- Launches ----------------------------------------------------------------------------------

std::vector<LaunchKey> singleNodeLaunches() {
  std::vector<LaunchKey> out;
  for (SizeClass size : {SizeClass::kSmall, SizeClass::kLarge})
    for (Algo algo : {Algo::kRing, Algo::kTree})
      for (Proto proto : {Proto::kSimple, Proto::kLL})
        for (LaunchMode mode : {LaunchMode::kThreads, LaunchMode::kFork})
          for (int n : kMatrixRankCounts) out.push_back({mode, n, {algo, proto, size, false}});
  return out;
}

std::vector<LaunchKey> viaConfigLaunches() {
  return {
      {LaunchMode::kThreads, 3, {Algo::kRing, Proto::kSimple, SizeClass::kSmall, false, true}},
      {LaunchMode::kFork, 5, {Algo::kTree, Proto::kLL, SizeClass::kSmall, false, true}},
      {LaunchMode::kThreads, 4, {Algo::kTree, Proto::kSimple, SizeClass::kLarge, false, true}},
      {LaunchMode::kFork, 3, {Algo::kRing, Proto::kLL, SizeClass::kLarge, false, true}},
  };
}

std::vector<LaunchKey> twoNodeLaunches() {
  std::vector<LaunchKey> out;
  for (SizeClass size : {SizeClass::kSmall, SizeClass::kLarge}) {
    const std::vector<int>& counts = size == SizeClass::kSmall ? kTwoNodeRankCounts : kTwoNodeLargeRankCounts;
    for (Algo algo : {Algo::kRing, Algo::kTree})
      for (Proto proto : {Proto::kSimple, Proto::kLL})
        for (int n : counts) out.push_back({LaunchMode::kFork, n, {algo, proto, size, true}});
  }
  return out;
}

// ---- Combos ------------------------------------------------------------------------------------

const std::vector<Combo>& allCombos() {
  static const std::vector<Combo> combos = [] {
    std::vector<Combo> out;
    for (Coll coll : kAllColls)
      for (int t = 0; t < kNumElemTypes; ++t) {
        const auto type = static_cast<ncclDataType_t>(t);
        if (collReduces(coll)) {
          for (Op op : kAllReduceOps) out.push_back({coll, type, op});
        } else {
          out.push_back({coll, type, Op::kNone});
        }
      }
    return out;
  }();
  return combos;
}

namespace {

int indexOf(const std::vector<int>& values, int v) {
  auto it = std::find(values.begin(), values.end(), v);
  return it == values.end() ? 0 : static_cast<int>(it - values.begin());
}

// Position of a launch among the launches that share its (algorithm, protocol, size, nodes):
// rotations use it so those launches run different variants of each combo. Thread launches get
// 0..5 and fork launches 5..10, so the ten launches below 8 ranks already see 8 consecutive
// salts, i.e. every count x in-place variant.
int launchSalt(const LaunchKey& key) {
  if (key.env.twoNodes) return indexOf(kTwoNodeRankCounts, key.nranks);
  const int modeIndex = key.mode == LaunchMode::kFork ? 1 : 0;
  return modeIndex * static_cast<int>(kMatrixRankCounts.size() - 1) + indexOf(kMatrixRankCounts, key.nranks);
}

bool resolveInPlace(Coll coll, bool want) {
  if (!collAllowsInPlace(coll)) return false;
  if (!collAllowsOutOfPlace(coll)) return true;
  return want;
}

std::vector<bool> inPlaceOptions(Coll coll) {
  std::vector<bool> out;
  if (collAllowsOutOfPlace(coll)) out.push_back(false);
  if (collAllowsInPlace(coll)) out.push_back(true);
  return out;
}

std::vector<int> fullRoots(Coll coll, int n) {
  if (!collHasRoot(coll)) return {0};
  std::vector<int> roots;
  if (n <= kAllRootsUpTo) {
    for (int r = 0; r < n; ++r) roots.push_back(r);
  } else {
    for (int r : {0, n / 2, n - 1})
      if (std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  }
  return roots;
}

CaseSpec makeCase(const Combo& combo, size_t count, bool inPlace, int root, int misalign) {
  CaseSpec cs;
  cs.coll = combo.coll;
  cs.type = combo.type;
  cs.op = combo.op;
  cs.count = count == kPerTypeLargeCount ? largeCount(combo.type) : count;
  cs.inPlace = resolveInPlace(combo.coll, inPlace);
  cs.root = collHasRoot(combo.coll) ? root : 0;
  cs.misalign = misalign;
  return cs;
}

// One variant of combo k for rotation value v: count and in-place flag from v, root and
// misalignment from k and the salt.
CaseSpec rotatedCase(const Combo& combo, int k, int v, int salt, int n, const std::vector<size_t>& counts) {
  const int nCounts = static_cast<int>(counts.size());
  const size_t count = counts[v % nCounts];
  const bool inPlace = (v / nCounts) % 2 == 1;
  const int root = (k / 2 + salt) % n;
  const int misalign = (k + 3 * salt) % kMisalignEvery == 0 ? 1 : 0;
  return makeCase(combo, count, inPlace, root, misalign);
}

// Every collective but AllReduce once, with a rotating type, op and count (for Tree launches,
// where the algorithm only changes AllReduce).
void addOthersOnce(int salt, int n, const std::vector<size_t>& counts, std::vector<CaseSpec>* out) {
  int ci = 0;
  for (Coll coll : kAllColls) {
    if (coll == Coll::kAllReduce) continue;
    Combo combo{coll, static_cast<ncclDataType_t>((salt + 5 * ci) % kNumElemTypes),
                collReduces(coll) ? kAllReduceOps[(salt + ci) % kNumReduceOps] : Op::kNone};
    out->push_back(rotatedCase(combo, ci, salt + ci, salt, n, counts));
    ++ci;
  }
}

// ---- Pairwise covering of the large cases --------------------------------------------------------
//
// Factors of a large-case row: collective+op, type, in-place, rank count, algorithm, protocol,
// launcher, count, and the collective alone (derived from collective+op). Required: every pair of
// values of two factors, except (collective+op, type), which is replaced by (collective, type):
// the op does not change how a collective is chunked, the element size does.

enum Factor { kFCollOp, kFType, kFInPlace, kFRanks, kFAlgo, kFProto, kFMode, kFCount, kFColl, kNumFactors };

struct CollOp {
  Coll coll;
  Op op;
};

const std::vector<CollOp>& collOps() {
  static const std::vector<CollOp> list = [] {
    std::vector<CollOp> out;
    for (Coll coll : kAllColls) {
      if (collReduces(coll)) {
        for (Op op : kAllReduceOps) out.push_back({coll, op});
      } else {
        out.push_back({coll, Op::kNone});
      }
    }
    return out;
  }();
  return list;
}

using Row = std::array<int, kNumFactors>;

std::array<int, kNumFactors> factorSizes() {
  return {static_cast<int>(collOps().size()),
          kNumElemTypes,
          2,
          static_cast<int>(kMatrixRankCounts.size()),
          2,
          2,
          2,
          static_cast<int>(kLargeCounts.size()),
          kNumColls};
}

void setCollOp(Row* row, int collOp) {
  (*row)[kFCollOp] = collOp;
  (*row)[kFColl] = static_cast<int>(collOps()[collOp].coll);
}

bool rowFeasible(const Row& row) {
  const Coll coll = collOps()[row[kFCollOp]].coll;
  return row[kFInPlace] == 1 ? collAllowsInPlace(coll) : collAllowsOutOfPlace(coll);
}

// Whether the pair (fa = va, fb = vb), fa < fb, must appear in some row.
bool pairRequired(int fa, int va, int fb, int vb) {
  if (fa == kFCollOp && fb == kFType) return false;
  if (fb == kFColl) return fa == kFType;
  if (fa == kFCollOp && fb == kFInPlace) {
    const Coll coll = collOps()[va].coll;
    return vb == 1 ? collAllowsInPlace(coll) : collAllowsOutOfPlace(coll);
  }
  return true;
}

// Greedy all-pairs generation: one row per (collective+op, rank count), the other factors chosen
// to cover the most uncovered required pairs; then rows for any required pair still uncovered.
const std::vector<Row>& pairwiseLargeRows() {
  static const std::vector<Row> rows = [] {
    const auto sizes = factorSizes();
    std::array<int, kNumFactors> offset{};
    int total = 0;
    for (int f = 0; f < kNumFactors; ++f) {
      offset[f] = total;
      total += sizes[f];
    }
    // need[i] for the pair index i = (offset[fa]+va) * total + offset[fb]+vb, fa < fb:
    // 1 while a required pair is uncovered.
    std::vector<char> need(static_cast<size_t>(total) * total, 0);
    auto pairIndex = [&](int fa, int va, int fb, int vb) {
      return static_cast<size_t>(offset[fa] + va) * total + offset[fb] + vb;
    };
    for (int fa = 0; fa < kNumFactors; ++fa)
      for (int fb = fa + 1; fb < kNumFactors; ++fb)
        for (int va = 0; va < sizes[fa]; ++va)
          for (int vb = 0; vb < sizes[fb]; ++vb)
            need[pairIndex(fa, va, fb, vb)] = pairRequired(fa, va, fb, vb);
    auto gain = [&](const Row& row) {
      int g = 0;
      for (int fa = 0; fa < kNumFactors; ++fa)
        for (int fb = fa + 1; fb < kNumFactors; ++fb) g += need[pairIndex(fa, row[fa], fb, row[fb])];
      return g;
    };
    auto mark = [&](const Row& row) {
      for (int fa = 0; fa < kNumFactors; ++fa)
        for (int fb = fa + 1; fb < kNumFactors; ++fb) need[pairIndex(fa, row[fa], fb, row[fb])] = 0;
    };
    // The free factors of the first pass, enumerated as one index.
    const int freeFactors[] = {kFType, kFInPlace, kFAlgo, kFProto, kFMode, kFCount};
    int freeOptions = 1;
    for (int f : freeFactors) freeOptions *= sizes[f];
    auto decodeFree = [&](int index, Row* row) {
      for (int f : freeFactors) {
        (*row)[f] = index % sizes[f];
        index /= sizes[f];
      }
    };
    std::vector<Row> out;
    for (int a = 0; a < sizes[kFCollOp]; ++a) {
      for (int nr = 0; nr < sizes[kFRanks]; ++nr) {
        Row best{};
        int bestGain = -1;
        const int start = static_cast<int>(out.size() * 7) % freeOptions;
        for (int i = 0; i < freeOptions; ++i) {
          Row row{};
          setCollOp(&row, a);
          row[kFRanks] = nr;
          decodeFree((start + i) % freeOptions, &row);
          if (!rowFeasible(row)) continue;
          const int g = gain(row);
          if (g > bestGain) {
            bestGain = g;
            best = row;
          }
        }
        mark(best);
        out.push_back(best);
      }
    }
    // Any required pair still uncovered gets a row of its own, the other factors chosen greedily.
    for (int fa = 0; fa < kNumFactors; ++fa)
      for (int fb = fa + 1; fb < kNumFactors; ++fb)
        for (int va = 0; va < sizes[fa]; ++va)
          for (int vb = 0; vb < sizes[fb]; ++vb) {
            if (!need[pairIndex(fa, va, fb, vb)]) continue;
            Row row{};
            for (int f = 0; f < kFColl; ++f) {
              const bool fixed = f == fa || f == fb;
              int bestV = fixed ? (f == fa ? va : vb) : 0, bestGain = -1;
              for (int v = 0; v < sizes[f] && !fixed; ++v) {
                Row trial = row;
                trial[f] = v;
                if (f == kFCollOp) {
                  setCollOp(&trial, v);
                  if (fb == kFColl && trial[kFColl] != vb) continue;  // the collective is fixed
                }
                const int g = gain(trial);
                if (g > bestGain) {
                  bestGain = g;
                  bestV = v;
                }
              }
              if (f == kFCollOp)
                setCollOp(&row, bestV);
              else
                row[f] = bestV;
            }
            if (!rowFeasible(row)) row[kFInPlace] = 1 - row[kFInPlace];
            mark(row);
            out.push_back(row);
          }
    return out;
  }();
  return rows;
}

std::vector<CaseSpec> largeDefaultCases(const LaunchKey& key) {
  std::vector<CaseSpec> out;
  const auto& rows = pairwiseLargeRows();
  const int n = key.nranks;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    if (kMatrixRankCounts[row[kFRanks]] != n) continue;
    if ((row[kFAlgo] == 1) != (key.env.algo == Algo::kTree)) continue;
    if ((row[kFProto] == 1) != (key.env.proto == Proto::kLL)) continue;
    if ((row[kFMode] == 1) != (key.mode == LaunchMode::kFork)) continue;
    const CollOp co = collOps()[row[kFCollOp]];
    Combo combo{co.coll, static_cast<ncclDataType_t>(row[kFType]), co.op};
    out.push_back(makeCase(combo, kLargeCounts[row[kFCount]], row[kFInPlace] == 1, static_cast<int>(i) % n,
                           i % 3 == 0 ? 1 : 0));
  }
  return out;
}

std::vector<CaseSpec> fullCases(const LaunchKey& key, const std::vector<size_t>& counts) {
  std::vector<CaseSpec> out;
  const int n = key.nranks;
  const bool tree = key.env.algo == Algo::kTree;
  for (const Combo& combo : allCombos()) {
    if (tree && combo.coll != Coll::kAllReduce) continue;
    for (size_t count : counts)
      for (bool inPlace : inPlaceOptions(combo.coll))
        for (int root : fullRoots(combo.coll, n)) out.push_back(makeCase(combo, count, inPlace, root, 0));
  }
  if (tree) addOthersOnce(launchSalt(key), n, counts, &out);
  return out;
}

}  // namespace

std::vector<CaseSpec> casesFor(const LaunchKey& key, bool full) {
  const bool large = key.env.size == SizeClass::kLarge;
  const std::vector<size_t>& counts = large ? kLargeCounts : kSmallCounts;
  if (full) return fullCases(key, counts);

  std::vector<CaseSpec> out;
  const int n = key.nranks;
  const int salt = launchSalt(key);
  const bool tree = key.env.algo == Algo::kTree;
  const int variants = static_cast<int>(counts.size()) * 2;
  const auto& combos = allCombos();

  if (large && !key.env.twoNodes) return largeDefaultCases(key);

  if (large) {
    // Two nodes, large: AllReduce with every op (rotating types), and on Ring launches every
    // other collective once (sum for the reducing ones).
    int k = 0;
    for (const Combo& combo : combos) {
      const int t = static_cast<int>(combo.type);
      bool pick;
      if (combo.coll == Coll::kAllReduce) {
        pick = t == (salt + static_cast<int>(combo.op)) % kNumElemTypes;
      } else {
        pick = !tree && (combo.op == Op::kNone || combo.op == Op::kSum) &&
               t == (salt + 3 * static_cast<int>(combo.coll)) % kNumElemTypes;
      }
      if (pick) out.push_back(rotatedCase(combo, k, k + salt, salt, n, counts));
      ++k;
    }
    if (tree) addOthersOnce(salt, n, counts, &out);
    return out;
  }

  for (int k = 0; k < static_cast<int>(combos.size()); ++k) {
    const Combo& combo = combos[k];
    if (tree) {
      if (combo.coll != Coll::kAllReduce) continue;
      const int reps = key.env.twoNodes ? 1 : kTreeVariantsPerCombo;
      for (int t = 0; t < reps; ++t)
        out.push_back(rotatedCase(combo, k, (k + salt + 5 * t) % variants, salt, n, counts));
      continue;
    }
    if (key.env.twoNodes && (k + salt) % kTwoNodeComboStride != 0) continue;
    if (!key.env.twoNodes && n >= kHalfCombosFromRanks && (k + salt) % 2 != 0) continue;
    out.push_back(rotatedCase(combo, k, (k + salt) % variants, salt, n, counts));
  }
  if (tree) addOthersOnce(salt, n, counts, &out);
  return out;
}

}  // namespace accl::test
