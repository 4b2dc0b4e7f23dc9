// Unit tests for tuner/algo_proto_filter: NCCL_ALGO / NCCL_PROTO parsing as a pure function (valid
// lists, case, negation, per-collective entries and their order, LL128's auto/forced state), the
// errors for bad values, and reading the variables through the settings registry.
#include "tuner/algo_proto_filter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "support/scoped_env.h"
#include "util/last_error.h"

namespace accl {
namespace {

constexpr uint32_t bit(int i) { return 1u << i; }
constexpr uint32_t kLL = bit(kProtoLL), kLL128 = bit(kProtoLL128), kSimple = bit(kProtoSimple);
constexpr uint32_t kTree = bit(kAlgoTree), kRing = bit(kAlgoRing);

AlgoProtoFilter parseOk(const char* algo, const char* proto) {
  AlgoProtoFilter f;
  EXPECT_EQ(parseAlgoProtoFilter(algo, proto, &f), ncclSuccess) << lastErrorText();
  return f;
}

// Expects `value` for `var` ("NCCL_ALGO"/"NCCL_PROTO") to be rejected with a message containing `mention`.
void expectRejected(const char* var, const char* value, const std::string& mention) {
  SCOPED_TRACE(std::string(var) + "=" + value);
  bool isAlgo = std::string(var) == "NCCL_ALGO";
  AlgoProtoFilter f;
  EXPECT_EQ(parseAlgoProtoFilter(isAlgo ? value : nullptr, isAlgo ? nullptr : value, &f), ncclInvalidUsage);
  std::string msg = lastErrorText();
  EXPECT_NE(msg.find(var), std::string::npos) << msg;
  EXPECT_NE(msg.find(mention), std::string::npos) << msg;
}

TEST(AlgoProtoFilter, IndicesAndNamesMatchNccl) {
  static_assert(kAlgoTree == 0 && kAlgoRing == 1 && kAlgoCollNetDirect == 2 && kAlgoCollNetChain == 3 &&
                kAlgoNvls == 4 && kAlgoNvlsTree == 5 && kAlgoPat == 6 && kNumAlgos == 7);
  static_assert(kProtoLL == 0 && kProtoLL128 == 1 && kProtoSimple == 2 && kNumProtos == 3);
  static_assert(kFuncBroadcast == 0 && kFuncReduce == 1 && kFuncAllGather == 2 && kFuncReduceScatter == 3 &&
                kFuncAllReduce == 4 && kFuncSendRecv == 5 && kNumCollFuncs == 5);
  EXPECT_STREQ(algoName(kAlgoCollNetDirect), "CollNetDirect");
  EXPECT_STREQ(algoName(kAlgoNvlsTree), "NVLSTree");
  EXPECT_STREQ(algoName(kAlgoPat), "PAT");
  EXPECT_STREQ(algoName(kAlgoOneShot), "OneShot");  // accl's host-only one-round all-reduce
  EXPECT_STREQ(algoName(8), "Unknown");
  EXPECT_STREQ(algoName(-1), "Unknown");
  EXPECT_STREQ(protoName(kProtoLL128), "LL128");
  EXPECT_STREQ(protoName(3), "Unknown");
  EXPECT_STREQ(funcName(kFuncReduceScatter), "ReduceScatter");
  EXPECT_STREQ(funcName(kFuncSendRecv), "SendRecv");
  EXPECT_STREQ(funcName(6), "Unknown");
}

TEST(AlgoProtoFilter, DefaultAllowsEverythingWithLl128LeftToTopology) {
  AlgoProtoFilter f = parseOk(nullptr, nullptr);
  EXPECT_FALSE(f.algoSet);
  EXPECT_FALSE(f.protoSet);
  for (int fn = 0; fn < kNumFilterFuncs; ++fn) {
    EXPECT_EQ(f.algos[fn], kAllAlgosMask) << fn;
    EXPECT_EQ(f.protos[fn], kAllProtosMask) << fn;
    EXPECT_EQ(f.protoAuto[fn], fn == kFuncSendRecv ? 0u : kLL128) << fn;
  }
  EXPECT_EQ(kAllAlgosMask, 0xffu);  // NCCL's seven + accl's OneShot
  EXPECT_EQ(kAllProtosMask, 0x7u);
}

TEST(AlgoProtoFilter, PlainListAppliesToEveryCollectiveButNotSendRecv) {
  AlgoProtoFilter f = parseOk("ring", "Simple");
  EXPECT_TRUE(f.algoSet);
  EXPECT_TRUE(f.protoSet);
  for (int fn = 0; fn < kNumCollFuncs; ++fn) {
    EXPECT_EQ(f.algos[fn], kRing) << fn;
    EXPECT_EQ(f.protos[fn], kSimple) << fn;
    EXPECT_EQ(f.protoAuto[fn], 0u) << fn;
  }
  EXPECT_EQ(f.algos[kFuncSendRecv], kAllAlgosMask);
  EXPECT_EQ(f.protos[kFuncSendRecv], kAllProtosMask);
  EXPECT_TRUE(f.allowsAlgo(kFuncAllReduce, kAlgoRing));
  EXPECT_FALSE(f.allowsAlgo(kFuncAllReduce, kAlgoTree));
  EXPECT_TRUE(f.allowsProto(kFuncBroadcast, kProtoSimple));
  EXPECT_FALSE(f.allowsProto(kFuncBroadcast, kProtoLL));
}

TEST(AlgoProtoFilter, NamesAreCaseInsensitiveAndEveryNameIsKnown) {
  AlgoProtoFilter f = parseOk("TREE,rInG,collnetdirect,CollNetChain,nvls,NvlsTree,pat,oneshot", "ll,LL128,SIMPLE");
  for (int fn = 0; fn < kNumCollFuncs; ++fn) {
    EXPECT_EQ(f.algos[fn], kAllAlgosMask);
    EXPECT_EQ(f.protos[fn], kAllProtosMask);
    EXPECT_EQ(f.protoAuto[fn], 0u);  // LL128 named: forced on, not left to the topology
  }
  for (int a = 0; a < kNumTunerAlgos; ++a) EXPECT_EQ(parseOk(algoName(a), nullptr).algos[kFuncAllGather], bit(a)) << a;
  for (int p = 0; p < kNumProtos; ++p) EXPECT_EQ(parseOk(nullptr, protoName(p)).protos[kFuncReduce], bit(p)) << p;
}

TEST(AlgoProtoFilter, NegationSelectsEverythingElse) {
  AlgoProtoFilter f = parseOk("^tree", "^LL128");
  for (int fn = 0; fn < kNumCollFuncs; ++fn) {
    EXPECT_EQ(f.algos[fn], kAllAlgosMask & ~kTree);
    EXPECT_EQ(f.protos[fn], kLL | kSimple);
    EXPECT_EQ(f.protoAuto[fn], 0u);
  }
  f = parseOk("^nvls, NVLSTree ,collnetdirect,collnetchain", nullptr);
  EXPECT_EQ(f.algos[kFuncAllReduce], kTree | kRing | bit(kAlgoPat) | bit(kAlgoOneShot));
  // "^" alone (and "^" + only separators) means everything.
  EXPECT_EQ(parseOk("^", nullptr).algos[kFuncReduce], kAllAlgosMask);
  EXPECT_EQ(parseOk("^ , ,", nullptr).algos[kFuncReduce], kAllAlgosMask);
  // Negating every name is syntactically fine; the tuner later reports that nothing is selectable.
  EXPECT_EQ(parseOk("^Tree,Ring,CollNetDirect,CollNetChain,NVLS,NVLSTree,PAT,OneShot", nullptr).algos[kFuncAllReduce],
            0u);
  // Naming only NCCL's algorithms rules accl's OneShot out, as NCCL_ALGO=ring should.
  EXPECT_EQ(parseOk("ring", nullptr).algos[kFuncAllReduce], kRing);
  // "^LL" forces LL128 on (NCCL's semantics: the negated list assigns it explicitly).
  f = parseOk(nullptr, "^LL");
  EXPECT_EQ(f.protos[kFuncAllGather], kLL128 | kSimple);
  EXPECT_FALSE(f.protoIsAuto(kFuncAllGather, kProtoLL128));
}

TEST(AlgoProtoFilter, PerCollectiveEntries) {
  // NCCL's documented examples.
  AlgoProtoFilter f = parseOk("ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring", nullptr);
  EXPECT_EQ(f.algos[kFuncAllReduce], kTree | bit(kAlgoCollNetDirect));
  EXPECT_EQ(f.algos[kFuncBroadcast], kRing);
  EXPECT_EQ(f.algos[kFuncReduce], kRing | bit(kAlgoCollNetDirect));
  EXPECT_EQ(f.algos[kFuncAllGather], kRing | bit(kAlgoCollNetDirect));
  EXPECT_EQ(f.algos[kFuncReduceScatter], kRing | bit(kAlgoCollNetDirect));

  f = parseOk(nullptr, "LL,Simple;allreduce:^LL");
  EXPECT_EQ(f.protos[kFuncAllReduce], kLL128 | kSimple);
  EXPECT_EQ(f.protos[kFuncAllGather], kLL | kSimple);
  for (int fn = 0; fn < kNumCollFuncs; ++fn) EXPECT_EQ(f.protoAuto[fn], 0u) << fn;

  f = parseOk(nullptr, "^LL128;allreduce:LL128");
  EXPECT_EQ(f.protos[kFuncAllReduce], kLL128);
  EXPECT_EQ(f.protos[kFuncBroadcast], kLL | kSimple);
  EXPECT_EQ(f.protos[kFuncReduceScatter], kLL | kSimple);

  // A first entry with a prefix leaves the other collectives at their defaults (LL128 still auto).
  f = parseOk("allreduce:tree", "reducescatter:simple");
  EXPECT_EQ(f.algos[kFuncAllReduce], kTree);
  EXPECT_EQ(f.algos[kFuncAllGather], kAllAlgosMask);
  EXPECT_EQ(f.protos[kFuncReduceScatter], kSimple);
  EXPECT_EQ(f.protoAuto[kFuncReduceScatter], 0u);
  EXPECT_EQ(f.protos[kFuncAllReduce], kAllProtosMask);
  EXPECT_TRUE(f.protoIsAuto(kFuncAllReduce, kProtoLL128));

  // Entries apply left to right: a later entry for the same collective replaces the earlier one.
  f = parseOk("allreduce:ring;allreduce:tree;AllGather:pat;ALLGATHER:^pat", nullptr);
  EXPECT_EQ(f.algos[kFuncAllReduce], kTree);
  EXPECT_EQ(f.algos[kFuncAllGather], kAllAlgosMask & ~bit(kAlgoPat));
  EXPECT_EQ(f.algos[kFuncBroadcast], kAllAlgosMask);

  // Every prefix is recognised.
  for (int fn = 0; fn < kNumCollFuncs; ++fn) {
    std::string value = std::string(funcName(fn)) + ":nvls";
    f = parseOk(value.c_str(), nullptr);
    for (int g = 0; g < kNumFilterFuncs; ++g) EXPECT_EQ(f.algos[g], g == fn ? bit(kAlgoNvls) : kAllAlgosMask);
  }
}

TEST(AlgoProtoFilter, WhitespaceAndEmptyPiecesAreIgnored) {
  AlgoProtoFilter f = parseOk("  ring ;; allreduce : tree , , ring ; ", " ^ ll128 ");
  EXPECT_EQ(f.algos[kFuncAllReduce], kTree | kRing);
  EXPECT_EQ(f.algos[kFuncReduce], kRing);
  EXPECT_EQ(f.protos[kFuncReduce], kLL | kSimple);
  // An empty or blank value changes nothing, but still counts as set.
  f = parseOk("", "  ");
  EXPECT_TRUE(f.algoSet);
  EXPECT_TRUE(f.protoSet);
  EXPECT_EQ(f.algos[kFuncAllReduce], kAllAlgosMask);
  EXPECT_TRUE(f.protoIsAuto(kFuncAllReduce, kProtoLL128));
  EXPECT_EQ(parseOk(";;;", nullptr).algos[kFuncAllReduce], kAllAlgosMask);
}

TEST(AlgoProtoFilter, BadValuesAreRejectedNamingVariableAndToken) {
  expectRejected("NCCL_ALGO", "ringg", "unknown algorithm \"ringg\"");
  expectRejected("NCCL_ALGO", "ring,tree,bogus", "\"bogus\"");
  expectRejected("NCCL_ALGO", "^ring,LL", "unknown algorithm \"LL\"");
  expectRejected("NCCL_PROTO", "LL256", "unknown protocol \"LL256\"");
  expectRejected("NCCL_PROTO", "ring", "unknown protocol \"ring\"");
  expectRejected("NCCL_ALGO", "allgahter:ring", "unknown function prefix \"allgahter\"");
  expectRejected("NCCL_ALGO", "sendrecv:ring", "unknown function prefix \"sendrecv\"");
  expectRejected("NCCL_ALGO", "allreduce:tree;ring", "only the first entry may omit the function prefix");
  expectRejected("NCCL_PROTO", "allreduce:LL:Simple", "more than one ':'");
  expectRejected("NCCL_ALGO", ":ring", "empty function name");
  expectRejected("NCCL_ALGO", "allreduce:", "lists no algorithm");
  expectRejected("NCCL_PROTO", "simple;allreduce: ,", "lists no protocol");
  expectRejected("NCCL_ALGO", "ring tree", "unknown algorithm \"ring tree\"");
}

TEST(AlgoProtoFilter, FailedApplyLeavesFilterUnchanged) {
  AlgoProtoFilter f = defaultAlgoProtoFilter();
  ASSERT_EQ(applyAlgoList("NCCL_ALGO", "ring", &f), ncclSuccess);
  // The first entry is valid, the second is not: nothing of it may stick.
  EXPECT_EQ(applyAlgoList("NCCL_ALGO", "allreduce:tree;broadcast:nope", &f), ncclInvalidUsage);
  EXPECT_EQ(f.algos[kFuncAllReduce], kRing);
  EXPECT_EQ(applyProtoList("MY_PROTO", "allreduce:simple;reduce:x", &f), ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find("MY_PROTO"), std::string::npos);
  EXPECT_EQ(f.protos[kFuncAllReduce], kAllProtosMask);
  EXPECT_TRUE(f.protoIsAuto(kFuncAllReduce, kProtoLL128));
}

TEST(AlgoProtoFilter, LongBadValueIsTruncatedInMessage) {
  std::string huge(5000, 'x');
  AlgoProtoFilter f;
  EXPECT_EQ(parseAlgoProtoFilter(huge.c_str(), nullptr, &f), ncclInvalidUsage);
  std::string msg = lastErrorText();
  EXPECT_NE(msg.find("NCCL_ALGO"), std::string::npos);
  EXPECT_LT(msg.size(), 1100u);
}

TEST(AlgoProtoFilter, ReadsTheEnvironment) {
  {
    test::ScopedEnvVar algo("NCCL_ALGO", "ring;allreduce:tree");
    test::ScopedEnvVar proto("NCCL_PROTO", nullptr);
    AlgoProtoFilter f;
    ASSERT_EQ(algoProtoFilterFromEnv(&f), ncclSuccess) << lastErrorText();
    EXPECT_TRUE(f.algoSet);
    EXPECT_FALSE(f.protoSet);
    EXPECT_EQ(f.algos[kFuncAllReduce], kTree);
    EXPECT_EQ(f.algos[kFuncAllGather], kRing);
    EXPECT_EQ(f.protos[kFuncAllGather], kAllProtosMask);
  }
  {
    test::ScopedEnvVar algo("NCCL_ALGO", nullptr);
    test::ScopedEnvVar proto("NCCL_PROTO", "LL,bogus");
    AlgoProtoFilter f;
    EXPECT_EQ(algoProtoFilterFromEnv(&f), ncclInvalidUsage);
    EXPECT_NE(std::string(lastErrorText()).find("NCCL_PROTO: unknown protocol \"bogus\""), std::string::npos)
        << lastErrorText();
  }
}

TEST(AlgoProtoFilter, FormatsATable) {
  AlgoProtoFilter f = parseOk("allreduce:^tree", "broadcast:LL");
  std::string table = formatAlgoProtoFilter(f);
  // Header plus one row per function.
  int lines = 0;
  for (char c : table) lines += c == '\n';
  EXPECT_EQ(lines, 1 + kNumFilterFuncs);
  EXPECT_NE(table.find("CollNetDirect"), std::string::npos);
  size_t ar = table.find("    AllReduce |");
  ASSERT_NE(ar, std::string::npos) << table;
  std::string arRow = table.substr(ar, table.find('\n', ar) - ar);
  EXPECT_NE(arRow.find("auto"), std::string::npos) << arRow;
  size_t bc = table.find("    Broadcast |");
  ASSERT_NE(bc, std::string::npos) << table;
  std::string bcRow = table.substr(bc, table.find('\n', bc) - bc);
  EXPECT_EQ(bcRow.find("auto"), std::string::npos) << bcRow;
}

}  // namespace
}  // namespace accl
