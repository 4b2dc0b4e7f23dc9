// Collective consistency checking across ranks (see coll_consistency.h).
#include "core/engine/coll_consistency.h"

#include <algorithm>
#include <cstring>

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "core/engine/red_op_registry.h"
#include "device/common/dtypes.h"
#include "util/check.h"
#include "util/str_format.h"

namespace accl {
namespace {

constexpr uint32_t kWireMagic = 0x43434b31;  // "CCK1"
constexpr int kInline = 4;                   // collectives that fit in the first exchange
constexpr uint32_t kMaxCollsPerLaunch = 1u << 20;  // a bound on what a record may claim

// The signature's op for every op made with ncclRedOpCreatePreMulSum.
constexpr int32_t kCustomOp = ncclNumOps;

// One rank's contribution to the first all-gather: most launches hold one collective, so the
// whole comparison usually takes a single exchange.
struct WireRecord {
  uint32_t magic;
  uint32_t nColl;
  CollSignature sigs[kInline];
};
static_assert(sizeof(WireRecord) == 8 + kInline * sizeof(CollSignature));

const char* callName(int32_t func) { return collApiName(func, "an unknown collective"); }
constexpr const char* kCustomOpText = "custom (ncclRedOpCreatePreMulSum)";



std::string ranksText(const std::vector<int>& ranks) {
  constexpr size_t kShown = 8;
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size() && i < kShown; ++i) s += strFormat("%s%d", i ? ", " : "", ranks[i]);
  if (ranks.size() > kShown) s += strFormat(" and %zu more", ranks.size() - kShown);
  return s;
}

// Bits naming the compared fields.
constexpr unsigned kSeq = 1, kCount = 2, kType = 4, kOp = 8, kRoot = 16;

unsigned differingFields(const CollSignature& a, const CollSignature& b) {
  return (a.seq != b.seq ? kSeq : 0) | (a.count != b.count ? kCount : 0) | (a.type != b.type ? kType : 0) |
         (a.op != b.op ? kOp : 0) | (a.root != b.root ? kRoot : 0);
}

std::string fieldsText(const CollSignature& s, unsigned fields) {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : " ") + part; };
  if (fields & kSeq) add(strFormat("sequence number %llu", static_cast<unsigned long long>(s.seq)));
  if (fields & kCount) add(strFormat("count %llu", static_cast<unsigned long long>(s.count)));
  if (fields & kType) add(strFormat("datatype %s", dtypeName(static_cast<ncclDataType_t>(s.type))));
  if (fields & kOp) add(s.op < 0 ? "no op" : std::string("op ") + builtinRedOpName(s.op, kCustomOpText));
  if (fields & kRoot) add(s.root < 0 ? "no root" : strFormat("root %d", s.root));
  return out;
}

// How the ranks of `group` differ from the reference ranks.
std::string describeGroup(const std::vector<int>& group, const std::vector<CollSignature>& mine,
                          const std::vector<int>& ref, const std::vector<CollSignature>& theirs) {
  if (mine.size() != theirs.size())
    return strFormat("%s launched %zu collective%s in one group but %s launched %zu", ranksText(group).c_str(),
                     mine.size(), mine.size() == 1 ? "" : "s", ranksText(ref).c_str(), theirs.size());
  size_t i = 0;
  while (i < mine.size() && mine[i] == theirs[i]) ++i;
  if (i == mine.size()) return "";
  std::string where = mine.size() > 1 ? strFormat("in collective %zu of %zu of one group, ", i + 1, mine.size()) : "";
  const CollSignature& a = mine[i];
  const CollSignature& b = theirs[i];
  if (a.func != b.func) {
    const unsigned all = kCount | kType | (a.op >= 0 ? kOp : 0u) | (a.root >= 0 ? kRoot : 0u);
    const unsigned allB = kCount | kType | (b.op >= 0 ? kOp : 0u) | (b.root >= 0 ? kRoot : 0u);
    return where + strFormat("%s called %s %s but %s called %s %s", ranksText(group).c_str(), callName(a.func),
                             fieldsText(a, all).c_str(), ranksText(ref).c_str(), callName(b.func),
                             fieldsText(b, allB).c_str());
  }
  const unsigned fields = differingFields(a, b);
  std::string s = where + strFormat("%s called %s %s but %s called %s", ranksText(group).c_str(), callName(a.func),
                                    fieldsText(a, fields).c_str(), ranksText(ref).c_str(),
                                    fieldsText(b, fields).c_str());
  if (fields == kSeq) s += " (a rank skipped or added a collective on this communicator)";
  return s;
}

// The bootstrap tag of the check's messages (no other user of the bootstrap takes it).
constexpr int kCheckTag = 0x43434b00;

// All-gather of `bytesPerRank` per rank over the bootstrap's point-to-point messages, Bruck's way:
// ceil(log2 n) rounds instead of the ring's n - 1 steps. In round k a rank sends the blocks it
// has to rank - 2^k and receives as many from rank + 2^k. In place, like Bootstrap::allGather.
// Every rank sends before it receives, so a round's message must fit in the sockets' buffers:
// beyond kBruckMaxBytes per rank in all, the bootstrap's ring all-gather (which sends and receives
// together) is used.
constexpr size_t kBruckMaxBytes = 64 << 10;

ncclResult_t bruckAllGather(Bootstrap& bs, int rank, int n, void* data, size_t bytesPerRank) {
  if (bytesPerRank * n > kBruckMaxBytes) return bs.allGather(data, bytesPerRank);
  // rotated[i] holds the block of rank (rank + i) % n.
  std::vector<char> rotated(bytesPerRank * n);
  char* base = static_cast<char*>(data);
  std::memcpy(rotated.data(), base + bytesPerRank * rank, bytesPerRank);
  for (int dist = 1; dist < n; dist *= 2) {
    const int blocks = std::min(dist, n - dist);
    ACCL_CHECK(bs.send((rank - dist + n) % n, kCheckTag, rotated.data(), bytesPerRank * blocks));
    ACCL_CHECK(bs.recv((rank + dist) % n, kCheckTag, rotated.data() + bytesPerRank * dist, bytesPerRank * blocks));
  }
  for (int i = 0; i < n; ++i)
    std::memcpy(base + bytesPerRank * ((rank + i) % n), rotated.data() + bytesPerRank * i, bytesPerRank);
  return ncclSuccess;
}

// An exchange that failed: aborted by ncclCommAbort, ended by a peer failure that liveness
// recorded (then that failure is named, as by every other wait), or the bootstrap's own error.
ncclResult_t exchangeFailure(ncclComm* comm, const char* call, ncclResult_t res) {
  if (comm->abortFlag.load() == 1)
    return fail(ncclInvalidUsage, "%s: aborted (ncclCommAbort) during the ACCL_CHECK_COLLECTIVES exchange", call);
  std::string what = strFormat("%s (ACCL_CHECK_COLLECTIVES exchange)", call);
  return comm->engine ? comm->engine->backend->peerFailureOr(what.c_str(), res) : res;
}

}  // namespace

CollSignature collSignature(const CollCall& call, uint64_t seq) {
  const bool reduces = call.func == kFuncReduce || call.func == kFuncReduceScatter || call.func == kFuncAllReduce;
  const bool rooted = call.func == kFuncBroadcast || call.func == kFuncReduce;
  CollSignature s{};
  s.func = call.func;
  s.type = static_cast<int32_t>(call.type);
  // A custom op's handle is this rank's own (and its scalar may differ by rank): only "custom".
  const int32_t op = static_cast<int32_t>(call.op);
  s.op = !reduces ? -1 : (op >= 0 && op < ncclNumOps ? op : kCustomOp);
  s.root = rooted ? call.root : -1;
  s.count = call.count;
  s.seq = seq;
  return s;
}

std::string describeCollMismatch(const std::vector<std::vector<CollSignature>>& all) {
  if (all.empty()) return "";
  bool same = true;
  for (size_t r = 1; r < all.size() && same; ++r) same = all[r] == all[0];
  if (same) return "";
  // Group identical records; the biggest group (ties: the one holding the lowest rank) is the
  // reference every other group is described against.
  std::vector<std::vector<int>> groups;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const std::vector<int>& g) { return all[g[0]] == all[r]; });
    if (it == groups.end())
      groups.push_back({r});
    else
      it->push_back(r);
  }
  size_t ref = 0;
  for (size_t g = 1; g < groups.size(); ++g)
    if (groups[g].size() > groups[ref].size()) ref = g;
  constexpr size_t kGroupsShown = 8;
  std::string out;
  size_t shown = 0, hiddenRanks = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g == ref) continue;
    if (shown == kGroupsShown) {
      hiddenRanks += groups[g].size();
      continue;
    }
    std::string d = describeGroup(groups[g], all[groups[g][0]], groups[ref], all[groups[ref][0]]);
    out += (out.empty() ? "" : "; ") + d;
    ++shown;
  }
  if (hiddenRanks) out += strFormat("; %zu more ranks differ", hiddenRanks);
  return out;
}

ncclResult_t checkCollConsistency(ncclComm* comm, const char* call, const std::vector<CollSignature>& mine) {
  const int n = comm->nranks;
  if (n == 1) return ncclSuccess;
  std::vector<WireRecord> records(n);
  WireRecord& own = records[comm->rank];
  std::memset(&own, 0, sizeof(own));
  own.magic = kWireMagic;
  own.nColl = static_cast<uint32_t>(mine.size());
  for (size_t i = 0; i < mine.size() && i < static_cast<size_t>(kInline); ++i) own.sigs[i] = mine[i];
  ncclResult_t res = bruckAllGather(*comm->bootstrap, comm->rank, n, records.data(), sizeof(WireRecord));
  if (res != ncclSuccess) return exchangeFailure(comm, call, res);

  bool sameCount = true;
  for (int r = 0; r < n; ++r) {
    if (records[r].magic != kWireMagic || records[r].nColl > kMaxCollsPerLaunch)
      return fail(ncclInternalError,
                  "%s: ACCL_CHECK_COLLECTIVES: rank %d sent a malformed record (magic 0x%x, %u collectives)", call, r,
                  records[r].magic, records[r].nColl);
    sameCount = sameCount && records[r].nColl == own.nColl;
  }
  std::vector<std::vector<CollSignature>> all(n);
  for (int r = 0; r < n; ++r) {
    const size_t inlined = std::min<size_t>(records[r].nColl, kInline);
    all[r].assign(records[r].sigs, records[r].sigs + inlined);
    // Unknown beyond the first exchange when the counts differ: the count alone is reported.
    all[r].resize(records[r].nColl, CollSignature{-1, -1, -1, -1, 0, 0});
  }
  if (sameCount && mine.size() > static_cast<size_t>(kInline)) {
    // Every rank launched the same (large) number of collectives: exchange the rest.
    const size_t rest = mine.size() - kInline;
    std::vector<CollSignature> more(rest * n);
    std::copy(mine.begin() + kInline, mine.end(), more.begin() + rest * comm->rank);
    res = bruckAllGather(*comm->bootstrap, comm->rank, n, more.data(), rest * sizeof(CollSignature));
    if (res != ncclSuccess) return exchangeFailure(comm, call, res);
    for (int r = 0; r < n; ++r) std::copy(more.begin() + rest * r, more.begin() + rest * (r + 1), all[r].begin() + kInline);
  }
  std::string mismatch = describeCollMismatch(all);
  if (mismatch.empty()) return ncclSuccess;
  return fail(ncclInvalidUsage, "%s: ACCL_CHECK_COLLECTIVES: the ranks of comm 0x%llx called different collectives: %s",
              call, static_cast<unsigned long long>(comm->commHash), mismatch.c_str());
}

}  // namespace accl
