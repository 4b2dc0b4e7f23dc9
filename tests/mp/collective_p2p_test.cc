// Point-to-point correctness (label mp): ncclSend/ncclRecv in groups, checked against closed-form
// data, for ranks {1,2,3,4,5,8} with both launchers, small counts (0, 1, 7, 4099) and a large
// count (~48 KiB) with small buffers and chunks (many steps), plus fork launches over two
// virtual nodes.
// Patterns, each in one ncclGroupStart/End:
//   Ring       send to r+1, receive from r-1
//   Pairwise   exchange with r^1 (the odd one out exchanges with itself)
//   Self       send to and receive from itself
//   FanOut     a root sends a different block to every rank (itself included)
//   FanIn      every rank sends to a root, which receives from all
//   AllPairs   every rank sends to and receives from every rank
//   Repeated   two sends to the same peer in one group (sizes c and c+3), received in order
//   Mixed      an AllReduce and a ring exchange in the same group
// Every received element, every guard element and every send buffer is checked.
#include <chrono>
#include <cstdio>

#include "mp/collective_cases.h"
#include "mp/collective_types.h"
#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

enum class P2pKind { kRing, kPairwise, kSelf, kFanOut, kFanIn, kAllPairs, kRepeated, kMixed };
constexpr P2pKind kAllP2pKinds[] = {P2pKind::kRing,  P2pKind::kPairwise, P2pKind::kSelf,     P2pKind::kFanOut,
                                    P2pKind::kFanIn, P2pKind::kAllPairs, P2pKind::kRepeated, P2pKind::kMixed};

const char* kindName(P2pKind kind) {
  switch (kind) {
    case P2pKind::kRing:
      return "Ring";
    case P2pKind::kPairwise:
      return "Pairwise";
    case P2pKind::kSelf:
      return "Self";
    case P2pKind::kFanOut:
      return "FanOut";
    case P2pKind::kFanIn:
      return "FanIn";
    case P2pKind::kAllPairs:
      return "AllPairs";
    case P2pKind::kRepeated:
      return "Repeated";
    case P2pKind::kMixed:
      return "Mixed";
  }
  return "?";
}

// Tuning: counts, the large-launch environment, and the launches.
// Large launches use largeCount(type) (collective_cases.h): ~48 KiB per message.
const std::vector<size_t> kP2pSmallCounts = {0, 1, 7, 4099};
const std::vector<int> kP2pRankCounts = {1, 2, 3, 4, 5, 8};
const std::vector<int> kP2pTwoNodeRankCounts = {2, 5};
constexpr size_t kP2pGuard = 8;

struct P2pCase {
  P2pKind kind;
  ncclDataType_t type;
  size_t count;
  int root;        // FanOut / FanIn
  bool recvFirst;  // order of the calls inside the group
};

std::string describeP2p(const P2pCase& pc) {
  std::string text =
      std::string(kindName(pc.kind)) + " " + typeName(pc.type) + " count=" + std::to_string(pc.count);
  if (pc.kind == P2pKind::kFanOut || pc.kind == P2pKind::kFanIn) text += " root=" + std::to_string(pc.root);
  text += pc.recvFirst ? " recv-first" : " send-first";
  return text;
}

struct P2pKey {
  LaunchMode mode;
  int nranks;
  bool large;
  bool twoNodes;
};

std::string p2pName(const P2pKey& key) {
  return std::string(key.mode == LaunchMode::kFork ? "Fork_" : "Thread_") + std::to_string(key.nranks) +
         (key.twoNodes ? "_TwoNodes" : "") + (key.large ? "_Large" : "_Small");
}

void PrintTo(const P2pKey& key, std::ostream* os) { *os << p2pName(key); }

std::vector<P2pKey> p2pLaunches() {
  std::vector<P2pKey> out;
  for (bool large : {false, true}) {
    for (LaunchMode mode : {LaunchMode::kThreads, LaunchMode::kFork})
      for (int n : kP2pRankCounts) out.push_back({mode, n, large, false});
    for (int n : kP2pTwoNodeRankCounts) out.push_back({LaunchMode::kFork, n, large, true});
  }
  return out;
}

std::vector<P2pCase> p2pCases(const P2pKey& key, bool full) {
  std::vector<P2pCase> out;
  int k = 0;
  for (P2pKind kind : kAllP2pKinds) {
    for (int t = 0; t < kNumElemTypes; ++t, ++k) {
      const auto type = static_cast<ncclDataType_t>(t);
      const std::vector<size_t> counts = key.large ? std::vector<size_t>{largeCount(type)} : kP2pSmallCounts;
      if (full) {
        for (size_t c : counts) out.push_back({kind, type, c, k % key.nranks, k % 2 == 1});
        continue;
      }
      // Large launches: two types per pattern; small: every type with a rotating count.
      if (key.large && (t + static_cast<int>(kind) + key.nranks) % 6 != 0) continue;
      const size_t count = counts[(k + key.nranks + (key.mode == LaunchMode::kFork ? 1 : 0)) % counts.size()];
      out.push_back({kind, type, count, (k / 3) % key.nranks, (k + key.nranks) % 2 == 1});
    }
  }
  return out;
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Element j of message `seq` from src to dst.
uint64_t messageElem(const P2pCase& pc, int src, int dst, int seq, size_t j) {
  uint64_t h = mix((static_cast<uint64_t>(pc.kind) << 56) ^ (static_cast<uint64_t>(pc.type) << 48) ^
                   (static_cast<uint64_t>(src) << 36) ^ (static_cast<uint64_t>(dst) << 24) ^
                   (static_cast<uint64_t>(seq) << 20) ^ j);
  return sanitizeFinite(pc.type, h);
}

constexpr uint64_t kGuardBits = 0xa5a5a5a5a5a5a5a5ull;

// One message buffer with guards on both sides.
struct Message {
  int peer;
  int seq;
  size_t count;
  bool isSend;
  std::vector<uint64_t> storage;  // 8-byte aligned bytes

  char* base() { return reinterpret_cast<char*>(storage.data()); }
  void* data(ncclDataType_t type) { return base() + kP2pGuard * typeSize(type); }
};

// The messages rank r sends and receives in a case (in call order).
std::vector<Message> messagesOf(const P2pCase& pc, int n, int r) {
  std::vector<Message> sends, recvs;
  auto add = [](std::vector<Message>& list, int peer, int seq, size_t count, bool isSend) {
    list.push_back(Message{peer, seq, count, isSend, {}});
  };
  const size_t c = pc.count;
  switch (pc.kind) {
    case P2pKind::kRing:
    case P2pKind::kMixed:
      add(sends, (r + 1) % n, 0, c, true);
      add(recvs, (r + n - 1) % n, 0, c, false);
      break;
    case P2pKind::kPairwise: {
      const int partner = (r ^ 1) < n ? (r ^ 1) : r;
      add(sends, partner, 0, c, true);
      add(recvs, partner, 0, c, false);
      break;
    }
    case P2pKind::kSelf:
      add(sends, r, 0, c, true);
      add(recvs, r, 0, c, false);
      break;
    case P2pKind::kFanOut:
      if (r == pc.root)
        for (int q = 0; q < n; ++q) add(sends, q, 0, c, true);
      add(recvs, pc.root, 0, c, false);
      break;
    case P2pKind::kFanIn:
      add(sends, pc.root, 0, c, true);
      if (r == pc.root)
        for (int q = 0; q < n; ++q) add(recvs, q, 0, c, false);
      break;
    case P2pKind::kAllPairs:
      for (int q = 0; q < n; ++q) {
        add(sends, (r + q) % n, 0, c, true);
        add(recvs, (r + n - q) % n, 0, c, false);
      }
      break;
    case P2pKind::kRepeated:
      add(sends, (r + 1) % n, 0, c, true);
      add(sends, (r + 1) % n, 1, c + 3, true);
      add(recvs, (r + n - 1) % n, 0, c, false);
      add(recvs, (r + n - 1) % n, 1, c + 3, false);
      break;
  }
  std::vector<Message> out;
  auto& first = pc.recvFirst ? recvs : sends;
  auto& second = pc.recvFirst ? sends : recvs;
  for (auto& m : first) out.push_back(std::move(m));
  for (auto& m : second) out.push_back(std::move(m));
  return out;
}

// Fills a message buffer: guards, and the data (sends) or the complement of the expected data
// (receives, so an element that is never written cannot pass).
void prepareMessage(const P2pCase& pc, int rank, Message* m) {
  const size_t size = typeSize(pc.type);
  const size_t elems = m->count + 2 * kP2pGuard;
  m->storage.assign((elems * size + 7) / 8, 0);
  for (size_t e = 0; e < elems; ++e) {
    uint64_t bits = kGuardBits;
    if (e >= kP2pGuard && e < kP2pGuard + m->count) {
      const size_t j = e - kP2pGuard;
      bits =
          m->isSend ? messageElem(pc, rank, m->peer, m->seq, j) : ~messageElem(pc, m->peer, rank, m->seq, j);
    }
    storeElem(pc.type, m->base(), e, bits);
  }
}

// Number of wrong elements; describes up to 3 in *report.
size_t checkMessage(const P2pCase& pc, int rank, Message& m, std::string* report) {
  const size_t elems = m.count + 2 * kP2pGuard;
  size_t wrong = 0;
  for (size_t e = 0; e < elems; ++e) {
    uint64_t want = kGuardBits;
    if (e >= kP2pGuard && e < kP2pGuard + m.count) {
      const size_t j = e - kP2pGuard;
      want = m.isSend ? messageElem(pc, rank, m.peer, m.seq, j) : messageElem(pc, m.peer, rank, m.seq, j);
    }
    want &= typeMask(pc.type);
    const uint64_t got = loadElem(pc.type, m.base(), e);
    if (got == want) continue;
    if (wrong++ >= 3) continue;
    const long index = static_cast<long>(e) - static_cast<long>(kP2pGuard);
    *report += "; " + std::string(m.isSend ? "send buffer to " : "recv buffer from ") +
               std::to_string(m.peer) + " #" + std::to_string(m.seq) + "[" + std::to_string(index) +
               "]: expected " + elemToString(pc.type, want) + " got " + elemToString(pc.type, got);
  }
  return wrong;
}

// Returns false when a call failed (the launch stops).
bool runP2pCase(RankContext& ctx, ncclComm_t comm, const P2pCase& pc, const std::string& launch) {
  const int n = ctx.nranks, r = ctx.rank;
  std::vector<Message> messages = messagesOf(pc, n, r);
  for (Message& m : messages) prepareMessage(pc, r, &m);
  // Mixed: an AllReduce of 5 int32 in the same group (rank q contributes q + i).
  int32_t arIn[5], arOut[5];
  for (int i = 0; i < 5; ++i) arIn[i] = r + i, arOut[i] = -1;

  auto failCall = [&](const char* what, ncclResult_t res) {
    ctx.fail("[%s] rank %d: %s: %s returned %d (%s); last error: %s", launch.c_str(), r,
             describeP2p(pc).c_str(), what, res, ncclGetErrorString(res), ncclGetLastError(nullptr));
  };
  ncclResult_t res = ncclGroupStart();
  if (res != ncclSuccess) return failCall("ncclGroupStart", res), false;
  bool ok = true;
  if (pc.kind == P2pKind::kMixed) {
    res = ncclAllReduce(arIn, arOut, 5, ncclInt32, ncclSum, comm, nullptr);
    if (res != ncclSuccess) failCall("ncclAllReduce (in the group)", res), ok = false;
  }
  for (Message& m : messages) {
    if (!ok) break;
    res = m.isSend ? ncclSend(m.data(pc.type), m.count, pc.type, m.peer, comm, nullptr)
                   : ncclRecv(m.data(pc.type), m.count, pc.type, m.peer, comm, nullptr);
    if (res != ncclSuccess) failCall(m.isSend ? "ncclSend" : "ncclRecv", res), ok = false;
  }
  res = ncclGroupEnd();
  if (res != ncclSuccess) failCall("ncclGroupEnd", res), ok = false;
  if (!ok) return false;

  size_t wrong = 0;
  std::string report;
  for (Message& m : messages) wrong += checkMessage(pc, r, m, &report);
  if (pc.kind == P2pKind::kMixed) {
    for (int i = 0; i < 5; ++i) {
      const int32_t want = n * i + n * (n - 1) / 2;
      if (arOut[i] != want) {
        ++wrong;
        report += "; allreduce[" + std::to_string(i) + "]: expected " + std::to_string(want) + " got " +
                  std::to_string(arOut[i]);
      }
    }
  }
  ctx.check(wrong == 0, "[%s] rank %d: %s: %zu elements wrong (guards included)%s", launch.c_str(), r,
            describeP2p(pc).c_str(), wrong, report.c_str());
  return true;
}

class CollectiveP2pTest : public testing::TestWithParam<P2pKey> {};

TEST_P(CollectiveP2pTest, SendRecvPatterns) {
  const P2pKey key = GetParam();
  const bool full = fullMatrixRequested();
  const std::vector<P2pCase> cases = p2pCases(key, full);
  std::vector<std::pair<std::string, std::string>> settings = envSettings(
      {Algo::kRing, Proto::kSimple, key.large ? SizeClass::kLarge : SizeClass::kSmall, key.twoNodes});
  settings.erase(settings.begin(),
                 settings.begin() + 2);  // no NCCL_ALGO / NCCL_PROTO: they do not filter p2p
  settings.push_back({"NCCL_ALGO", ""});
  settings.push_back({"NCCL_PROTO", ""});
  for (const char* var : {"NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE", "NCCL_P2P_NVL_CHUNKSIZE"})
    settings.push_back({var, key.large ? "2048" : ""});
  ScopedEnv env(settings);
  std::string launch = p2pName(key);
  for (const auto& [name, value] : settings)
    if (!value.empty()) launch += " " + name + "=" + value;

  LaunchOptions opts;
  opts.mode = key.mode;
  opts.nranks = key.nranks;
  opts.deadline = launchDeadline(full);
  opts.ids = makeUniqueIds(1);
  const auto start = std::chrono::steady_clock::now();
  LaunchResult res = launchRanks(opts, [&](RankContext& ctx) {
    if (key.twoNodes) setenv("NCCL_HOSTID", virtualHostId(ctx.rank, ctx.nranks).c_str(), 1);
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    bool callsOk = true;
    for (const P2pCase& pc : cases)
      if (!(callsOk = runP2pCase(ctx, comm, pc, launch))) break;
    if (!callsOk) {
      ctx.abortComm(comm);
      return;
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ p2p      ] %s: %zu cases%s in %.2f s\n", launch.c_str(), cases.size(), full ? " (full)" : "",
              seconds);
  EXPECT_RANKS_OK(res);
}

std::string p2pParamName(const testing::TestParamInfo<P2pKey>& info) { return p2pName(info.param); }

INSTANTIATE_TEST_SUITE_P(, CollectiveP2pTest, testing::ValuesIn(p2pLaunches()), p2pParamName);

}  // namespace
}  // namespace accl::test
