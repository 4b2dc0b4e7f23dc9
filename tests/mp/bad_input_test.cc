// Bad input to the public API: every case must return the documented error code, leave a
// ncclGetLastError() message naming the call (and the bad value where there is one), and never
// crash or hang. Single-call cases run in a forked process so a crash is reported, not fatal.
// Multi-rank cases: duplicate or inconsistent ranks, a rank that never arrives, and junk sent to
// the bootstrap root. This binary runs with ACCL_BOOTSTRAP_TIMEOUT_MS=2000 (see mp_main.cc).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

using namespace std::chrono_literals;

// Offsets inside an ncclUniqueId (NCCL's layout, which accl keeps).
constexpr size_t kIdMagicOffset = 0;
constexpr size_t kIdRootAddrOffset = 8;
constexpr size_t kIdRootAddrBytes = 28;  // sizeof(sockaddr_in6)

// How long a rank may take to notice that a peer never arrives, with a 2 s bootstrap timeout.
constexpr double kBootstrapFailureBoundSeconds = 15.0;

LaunchOptions singleProcess(std::vector<ncclUniqueId> ids = {}) {
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = 1;
  opts.deadline = 20s;
  opts.ids = std::move(ids);
  return opts;
}

// Expects `got == want` and a last-error text that contains every needle.
void checkError(RankContext& ctx, const char* what, ncclResult_t got, ncclResult_t want,
                const std::vector<std::string>& needles) {
  const char* text = ncclGetLastError(nullptr);
  ctx.check(got == want, "%s: returned %d (%s), expected %d (%s); last error: %s", what, got,
            ncclGetErrorString(got), want, ncclGetErrorString(want), text);
  for (const std::string& needle : needles)
    ctx.check(lastErrorContains(needle), "%s: last error does not mention '%s': %s", what, needle.c_str(),
              text);
}

// ---- Bad arguments to the init calls ---------------------------------------------------------------

enum class IdKind { kReal, kZeros, kRandom, kClosedPort };

struct BadInitCase {
  const char* name;
  IdKind idKind;
  // Makes the call; `id` is the case's id, `comm` the output slot.
  std::function<ncclResult_t(const ncclUniqueId& id, ncclComm_t* comm)> call;
  ncclResult_t want;  // ncclNumResults: any error is accepted
  std::vector<std::string> needles;
};

ncclUniqueId randomBytesId() {
  std::mt19937 gen(12345);
  ncclUniqueId id;
  for (char& c : id.internal) c = static_cast<char>(gen());
  sa_family_t family;
  memcpy(&family, id.internal + kIdRootAddrOffset, sizeof(family));
  if (family == AF_INET || family == AF_INET6) id.internal[kIdRootAddrOffset] ^= 0x40;  // keep it garbage
  return id;
}

// A well-formed id whose root is a local port nobody listens on.
ncclUniqueId closedPortId() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);  // the port is now closed (and very unlikely to be reused within the test)
  ncclUniqueId id{};
  uint64_t magic = 0x5eed5eed5eed5eedull;
  memcpy(id.internal + kIdMagicOffset, &magic, sizeof(magic));
  memcpy(id.internal + kIdRootAddrOffset, &addr, sizeof(addr));
  return id;
}

ncclConfig_t zeroedConfig() {
  ncclConfig_t config;
  memset(&config, 0, sizeof(config));
  config.size = sizeof(config);
  return config;
}

std::vector<BadInitCase> badInitCases() {
  auto initRank = [](int nranks, int rank) {
    return [nranks, rank](const ncclUniqueId& id, ncclComm_t* comm) {
      return ncclCommInitRank(comm, nranks, id, rank);
    };
  };
  return {
      {"NullCommPointer",
       IdKind::kReal,
       [](const ncclUniqueId& id, ncclComm_t*) { return ncclCommInitRank(nullptr, 2, id, 0); },
       ncclInvalidArgument,
       {"ncclCommInitRank", "NULL"}},
      {"ZeroRanks", IdKind::kReal, initRank(0, 0), ncclInvalidArgument, {"ncclCommInitRank", "nranks 0"}},
      {"NegativeRanks", IdKind::kReal, initRank(-1, 0), ncclInvalidArgument, {"ncclCommInitRank", "-1"}},
      {"NegativeRank", IdKind::kReal, initRank(2, -1), ncclInvalidArgument, {"ncclCommInitRank", "rank -1"}},
      {"RankEqualsNranks",
       IdKind::kReal,
       initRank(3, 3),
       ncclInvalidArgument,
       {"ncclCommInitRank", "rank 3"}},
      {"ConfigAllZeros",
       IdKind::kReal,
       [](const ncclUniqueId& id, ncclComm_t* comm) {
         ncclConfig_t config = zeroedConfig();
         return ncclCommInitRankConfig(comm, 1, id, 0, &config);
       },
       ncclInvalidArgument,
       {"ncclCommInitRankConfig", "NCCL_CONFIG_INITIALIZER"}},
      {"ConfigWrongMagic",
       IdKind::kReal,
       [](const ncclUniqueId& id, ncclComm_t* comm) {
         ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
         config.magic = 0xdeadbeef;
         return ncclCommInitRankConfig(comm, 1, id, 0, &config);
       },
       ncclInvalidArgument,
       {"ncclCommInitRankConfig", "NCCL_CONFIG_INITIALIZER"}},
      {"Config232BadHostCftMode",
       IdKind::kReal,
       [](const ncclUniqueId& id, ncclComm_t* comm) {
         ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
         config.hostCftMode = 7;
         return ncclCommInitRankConfig(comm, 1, id, 0, &config);
       },
       ncclInvalidArgument,
       {"ncclCommInitRankConfig", "hostCftMode = 7"}},
      {"Config232BadGraphUsageMode",
       IdKind::kReal,
       [](const ncclUniqueId& id, ncclComm_t* comm) {
         ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
         config.graphUsageMode = -3;
         return ncclCommInitRankConfig(comm, 1, id, 0, &config);
       },
       ncclInvalidArgument,
       {"ncclCommInitRankConfig", "graphUsageMode = -3"}},
      {"ScalableZeroIds",
       IdKind::kReal,
       [](const ncclUniqueId& id, ncclComm_t* comm) {
         ncclUniqueId ids[1] = {id};
         return ncclCommInitRankScalable(comm, 2, 0, 0, ids, nullptr);
       },
       ncclInvalidArgument,
       {"ncclCommInitRankScalable", "0"}},
      {"ScalableNullIds",
       IdKind::kReal,
       [](const ncclUniqueId&, ncclComm_t* comm) {
         return ncclCommInitRankScalable(comm, 2, 0, 1, nullptr, nullptr);
       },
       ncclInvalidArgument,
       {"ncclCommInitRankScalable", "NULL"}},
      {"InitAllNullComms",
       IdKind::kReal,
       [](const ncclUniqueId&, ncclComm_t*) { return ncclCommInitAll(nullptr, 2, nullptr); },
       ncclInvalidArgument,
       {"ncclCommInitAll", "NULL"}},
      {"InitAllZeroDevices",
       IdKind::kReal,
       [](const ncclUniqueId&, ncclComm_t* comm) { return ncclCommInitAll(comm, 0, nullptr); },
       ncclInvalidArgument,
       {"ncclCommInitAll", "0"}},
      {"ZeroId", IdKind::kZeros, initRank(2, 0), ncclInvalidArgument, {"ncclCommInitRank"}},
      {"RandomBytesId", IdKind::kRandom, initRank(2, 0), ncclNumResults, {"ncclCommInitRank"}},
      {"RootNotListening", IdKind::kClosedPort, initRank(2, 0), ncclNumResults, {"ncclCommInitRank"}},
  };
}

void PrintTo(const BadInitCase& c, std::ostream* os) { *os << c.name; }

class BadInitTest : public testing::TestWithParam<BadInitCase> {};

TEST_P(BadInitTest, FailsWithTheDocumentedCodeAndMessage) {
  const BadInitCase& c = GetParam();
  ncclUniqueId id{};
  switch (c.idKind) {
    case IdKind::kReal:
      id = makeUniqueIds(1)[0];
      break;
    case IdKind::kZeros:
      break;
    case IdKind::kRandom:
      id = randomBytesId();
      break;
    case IdKind::kClosedPort:
      id = closedPortId();
      break;
  }
  LaunchResult res = launchRanks(singleProcess({id}), [&c](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    ncclResult_t got = c.call(ctx.id(), &comm);
    if (c.want == ncclNumResults) {
      ctx.check(got != ncclSuccess && got != ncclInProgress, "%s: returned %d (%s), expected an error",
                c.name, got, ncclGetErrorString(got));
      for (const std::string& needle : c.needles)
        ctx.check(lastErrorContains(needle), "%s: last error does not mention '%s': %s", c.name,
                  needle.c_str(), ncclGetLastError(nullptr));
    } else {
      checkError(ctx, c.name, got, c.want, c.needles);
    }
    if (comm != nullptr) ncclCommAbort(comm);  // a failed init still hands back its comm: release it
  });
  EXPECT_RANKS_OK(res);
  EXPECT_LT(res.seconds, kBootstrapFailureBoundSeconds) << c.name << " took too long to fail";
}

INSTANTIATE_TEST_SUITE_P(, BadInitTest, testing::ValuesIn(badInitCases()),
                         [](const testing::TestParamInfo<BadInitCase>& info) { return info.param.name; });

// ---- Bad arguments to calls on a live communicator and to group calls ------------------------------

struct BadCallCase {
  const char* name;
  std::function<ncclResult_t(ncclComm_t comm)> call;
  ncclResult_t want;
  std::vector<std::string> needles;
};

std::vector<BadCallCase> badCallCases() {
  return {
      {"CommCountNullComm",
       [](ncclComm_t) {
         int n;
         return ncclCommCount(nullptr, &n);
       },
       ncclInvalidArgument,
       {"ncclCommCount"}},
      {"CommCountNullOut",
       [](ncclComm_t comm) { return ncclCommCount(comm, nullptr); },
       ncclInvalidArgument,
       {"ncclCommCount", "NULL"}},
      {"UserRankNullOut",
       [](ncclComm_t comm) { return ncclCommUserRank(comm, nullptr); },
       ncclInvalidArgument,
       {"ncclCommUserRank", "NULL"}},
      {"UserRankNullComm",
       [](ncclComm_t) {
         int r;
         return ncclCommUserRank(nullptr, &r);
       },
       ncclInvalidArgument,
       {"ncclCommUserRank"}},
      {"CuDeviceNullOut",
       [](ncclComm_t comm) { return ncclCommCuDevice(comm, nullptr); },
       ncclInvalidArgument,
       {"ncclCommCuDevice", "NULL"}},
      {"GetAsyncErrorNullOut",
       [](ncclComm_t comm) { return ncclCommGetAsyncError(comm, nullptr); },
       ncclInvalidArgument,
       {"ncclCommGetAsyncError", "NULL"}},
      {"GetVersionNull",
       [](ncclComm_t) { return ncclGetVersion(nullptr); },
       ncclInvalidArgument,
       {"ncclGetVersion"}},
      {"GetUniqueIdNull",
       [](ncclComm_t) { return ncclGetUniqueId(nullptr); },
       ncclInvalidArgument,
       {"ncclGetUniqueId"}},
      {"GroupEndWithoutStart", [](ncclComm_t) { return ncclGroupEnd(); }, ncclInvalidUsage, {"ncclGroupEnd"}},
      {"SplitNullNewcomm",
       [](ncclComm_t comm) { return ncclCommSplit(comm, 0, 0, nullptr, nullptr); },
       ncclInvalidArgument,
       {"ncclCommSplit", "NULL"}},
      {"SplitNegativeColor",
       [](ncclComm_t comm) {
         ncclComm_t child = nullptr;
         return ncclCommSplit(comm, -5, 0, &child, nullptr);
       },
       ncclInvalidArgument,
       {"ncclCommSplit", "-5"}},
      {"ShrinkNullNewcomm",
       [](ncclComm_t comm) {
         int excluded[1] = {0};
         return ncclCommShrink(comm, excluded, 0, nullptr, nullptr, NCCL_SHRINK_DEFAULT);
       },
       ncclInvalidArgument,
       {"ncclCommShrink", "NULL"}},
      {"RevokeBadFlags",
       [](ncclComm_t comm) { return ncclCommRevoke(comm, 3); },
       ncclInvalidArgument,
       {"ncclCommRevoke", "3"}},
  };
}

void PrintTo(const BadCallCase& c, std::ostream* os) { *os << c.name; }

class BadCallTest : public testing::TestWithParam<BadCallCase> {};

TEST_P(BadCallTest, FailsWithTheDocumentedCodeAndMessage) {
  const BadCallCase& c = GetParam();
  LaunchResult res = launchRanks(singleProcess(makeUniqueIds(1)), [&c](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (!RANK_NCCL_OK(ctx, ncclCommInitRank(&comm, 1, ctx.id(), 0))) return;
    checkError(ctx, c.name, c.call(comm), c.want, c.needles);
    // The failed call left the communicator and the group state usable.
    checkCommIdentity(ctx, comm, 1, 0, "comm after the bad call");
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_OK(ctx, ncclGroupEnd());
    RANK_NCCL_OK(ctx, ncclCommDestroy(comm));
  });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, BadCallTest, testing::ValuesIn(badCallCases()),
                         [](const testing::TestParamInfo<BadCallCase>& info) { return info.param.name; });

// ---- Inconsistent ranks ---------------------------------------------------------------------------

class BadRanksTest : public testing::TestWithParam<LaunchMode> {
 protected:
  LaunchOptions options(int nranks) {
    LaunchOptions opts;
    opts.mode = GetParam();
    opts.nranks = nranks;
    opts.deadline = 30s;
    opts.ids = makeUniqueIds(1);
    return opts;
  }
};

// Each rank reports its result code as a note "result=<code>".
void noteResult(RankContext& ctx, ncclResult_t got, ncclComm_t comm) {
  ctx.note("result=%d", got);
  ctx.check(got != ncclSuccess, "rank %d: init succeeded, expected an error", ctx.rank);
  ctx.check(got != ncclInProgress, "rank %d: blocking init returned ncclInProgress", ctx.rank);
  if (comm != nullptr) ncclCommAbort(comm);  // a failed init still hands back its comm: release it
}

std::vector<int> resultsOf(const LaunchResult& res) {
  std::vector<int> out;
  for (const RankOutcome& r : res.ranks)
    for (const std::string& note : r.notes)
      if (note.rfind("result=", 0) == 0) out.push_back(std::stoi(note.substr(7)));
  return out;
}

TEST_P(BadRanksTest, TwoRanksClaimingRankZeroBothFail) {
  LaunchResult res = launchRanks(options(2), [](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    // Init first: as one argument list, `comm` could be read before the call fills it in.
    ncclResult_t got = ncclCommInitRank(&comm, 2, ctx.id(), 0);
    noteResult(ctx, got, comm);
  });
  EXPECT_RANKS_OK(res);
  std::vector<int> results = resultsOf(res);
  EXPECT_EQ(results.size(), 2u);
  EXPECT_NE(std::count(results.begin(), results.end(), ncclInvalidUsage), 0)
      << "no rank was told ncclInvalidUsage for the duplicate rank; results: "
      << testing::PrintToString(results);
  EXPECT_LT(res.seconds, kBootstrapFailureBoundSeconds);
}

TEST_P(BadRanksTest, MismatchedRankCountsFail) {
  LaunchResult res = launchRanks(options(2), [](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    ncclResult_t got = ncclCommInitRank(&comm, ctx.rank == 0 ? 2 : 3, ctx.id(), ctx.rank);
    noteResult(ctx, got, comm);
  });
  EXPECT_RANKS_OK(res);
  std::vector<int> results = resultsOf(res);
  EXPECT_EQ(results.size(), 2u);
  EXPECT_NE(std::count(results.begin(), results.end(), ncclInvalidUsage), 0)
      << "no rank was told ncclInvalidUsage for the nranks mismatch; results: "
      << testing::PrintToString(results);
  EXPECT_LT(res.seconds, kBootstrapFailureBoundSeconds);
}

TEST_P(BadRanksTest, RankThatNeverArrivesFailsTheOthersInBoundedTime) {
  LaunchOptions opts = options(3);
  opts.skipRanks = {2};
  const bool forked = opts.mode == LaunchMode::kFork;
  LaunchResult res = launchRanks(opts, [forked](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    ncclResult_t got = ncclCommInitRank(&comm, 3, ctx.id(), ctx.rank);
    ctx.check(
        got == ncclRemoteError || got == ncclSystemError,
        "rank %d: init without rank 2 returned %d (%s), expected ncclRemoteError or ncclSystemError; %s",
        ctx.rank, got, ncclGetErrorString(got), ncclGetLastError(nullptr));
    // The last error is process-wide: with threads, the other rank's inner message may land between
    // this rank's final message and this read, so threads are checked after the launch instead.
    if (forked) {
      ctx.check(lastErrorContains("ncclCommInitRank"),
                "rank %d: last error does not name ncclCommInitRank: %s", ctx.rank,
                ncclGetLastError(nullptr));
    }
    if (comm != nullptr) ncclCommAbort(comm);  // a failed init still hands back its comm: release it
  });
  EXPECT_RANKS_OK(res);
  EXPECT_EQ(res.ranksWith(RankStatus::kSkipped), std::vector<int>{2});
  EXPECT_LT(res.seconds, kBootstrapFailureBoundSeconds);
  // Each rank's last message is the one naming the call, so once all are done the text must name it.
  if (!forked) {
    EXPECT_TRUE(lastErrorContains("ncclCommInitRank")) << ncclGetLastError(nullptr);
  }
}

// Strangers connect to the root's port before the real ranks: one writes random bytes, one
// connects and sends nothing (and stays connected throughout). The real ranks must not notice.
TEST_P(BadRanksTest, JunkConnectionsToTheRootDoNotDisturbInit) {
  LaunchOptions opts = options(3);
  sockaddr_storage root{};
  memcpy(&root, opts.ids[0].internal + kIdRootAddrOffset, kIdRootAddrBytes);
  ASSERT_TRUE(root.ss_family == AF_INET || root.ss_family == AF_INET6) << "family " << root.ss_family;
  const socklen_t rootLen = root.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  auto connectToRoot = [&] {
    int fd = socket(root.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&root), rootLen), 0) << strerror(errno);
    return fd;
  };
  int silent = connectToRoot();
  int noisy = connectToRoot();
  std::mt19937 gen(777);
  std::vector<char> junk(4096);
  for (char& c : junk) c = static_cast<char>(gen());
  EXPECT_EQ(write(noisy, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  close(noisy);
  int noisyAgain = connectToRoot();  // and a stranger that sends junk and keeps the connection
  EXPECT_EQ(write(noisyAgain, junk.data(), 64), 64);

  LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    checkCommIdentity(ctx, comm, ctx.nranks, ctx.rank, "comm");
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
  close(silent);
  close(noisyAgain);
}

INSTANTIATE_TEST_SUITE_P(, BadRanksTest, testing::Values(LaunchMode::kThreads, LaunchMode::kFork),
                         [](const testing::TestParamInfo<LaunchMode>& info) {
                           return std::string(info.param == LaunchMode::kFork ? "Fork" : "Thread");
                         });

}  // namespace
}  // namespace accl::test
