// The network transport (transports/net) between forked ranks on virtual hosts (label mp): every
// rank gets its own NCCL_HOSTID, so ranks of different hosts connect through the socket NetDevice
// on loopback (NCCL_NET=Socket, NCCL_SOCKET_IFNAME=lo) and their proxies, while ranks of one host
// still use shm. Checked against closed-form values (collective_expect.h):
//   NetCollectives  all-reduce (sum, float and int32), all-gather, reduce-scatter, broadcast,
//                   counts 0, 1, 7, 4099 and a many-step count, in and out of place, for
//                   {2 hosts x 1, 3 hosts x 1, 2 hosts x 2 ranks} x {Ring, Tree} x {Simple, LL},
//                   then a send/recv ring exchange of the same counts.
//   NetForced       NCCL_P2P_DISABLE=1 + NCCL_SHM_DISABLE=1: ranks of one host (forked, or threads
//                   of one process) use the network too.
//   NetPeerKilled   a peer SIGKILLed during a loop of all-reduces: the survivor's call fails
//                   within kFailBoundS naming the peer's rank and host; ncclCommAbort < 5 s.
//   NetThroughput   2 hosts x 1 rank, 64 MiB float all-reduce: prints the bus bandwidth (no
//                   assertion: the machine is shared).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "mp/collective_cases.h"
#include "mp/collective_runner.h"
#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Small FIFOs, so the many-step count crosses the network in many steps of both protocols.
constexpr const char* kBuffSize = "65536";
constexpr const char* kLLBuffSize = "16384";
constexpr size_t kManyStepCount = 100003;
constexpr double kFailBoundS = 30;
constexpr double kAbortBoundS = 5;

std::vector<std::pair<std::string, std::string>> netEnv(const char* algo, const char* proto) {
  return {{"NCCL_NET", "Socket"},        {"NCCL_SOCKET_IFNAME", "lo"}, {"NCCL_ALGO", algo},
          {"NCCL_PROTO", proto},         {"NCCL_BUFFSIZE", kBuffSize}, {"NCCL_LL_BUFFSIZE", kLLBuffSize},
          {"NCCL_HOSTID", ""},           {"NCCL_P2P_DISABLE", ""},     {"NCCL_SHM_DISABLE", ""}};
}

// Every rank body starts here: this child's host.
void joinHost(RankContext& ctx, int ranksPerHost) {
  const std::string id = "netx-host" + std::to_string(ctx.rank / ranksPerHost);
  setenv("NCCL_HOSTID", id.c_str(), 1);
}

std::vector<CaseSpec> netCases() {
  std::vector<CaseSpec> cases;
  const std::vector<size_t> counts = {0, 1, 7, 4099, kManyStepCount};
  for (ncclDataType_t type : {ncclFloat32, ncclInt32})
    for (size_t count : counts)
      for (bool inPlace : {false, true}) {
        CaseSpec cs;
        cs.coll = Coll::kAllReduce;
        cs.type = type;
        cs.op = Op::kSum;
        cs.count = count;
        cs.inPlace = inPlace;
        cases.push_back(cs);
      }
  for (Coll coll : {Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast})
    for (size_t count : counts) {
      CaseSpec cs;
      cs.coll = coll;
      cs.type = ncclFloat32;
      cs.op = coll == Coll::kReduceScatter ? Op::kSum : Op::kNone;
      cs.count = count;
      cs.inPlace = count % 2 == 1;
      cs.root = coll == Coll::kBroadcast ? 1 : 0;
      cases.push_back(cs);
    }
  return cases;
}

// Value rank r sends at index j of a ring exchange: closed form.
int32_t ringValue(int rank, size_t j) { return static_cast<int32_t>(rank * 1000003 + j * 7 + 1); }

void ringExchange(RankContext& ctx, ncclComm_t comm, const std::string& launch) {
  const int next = (ctx.rank + 1) % ctx.nranks, prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(4099), kManyStepCount}) {
    std::vector<int32_t> send(count + 1), recv(count + 1, -5);
    for (size_t j = 0; j < count; ++j) send[j] = ringValue(ctx.rank, j);
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_OK(ctx, ncclSend(send.data(), count, ncclInt32, next, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclRecv(recv.data(), count, ncclInt32, prev, comm, nullptr));
    if (!RANK_NCCL_OK(ctx, ncclGroupEnd())) return;
    size_t bad = 0;
    for (size_t j = 0; j < count; ++j) bad += recv[j] != ringValue(prev, j);
    ctx.check(bad == 0 && recv[count] == -5, "[%s] rank %d: send/recv of %zu int32 from rank %d: %zu wrong elements",
              launch.c_str(), ctx.rank, count, prev, bad);
  }
}

struct NetLaunch {
  int hosts;
  int ranksPerHost;
  const char* algo;   // "Ring" or "Tree" (all-reduce only: NCCL_ALGO="Ring;AllReduce:Tree")
  const char* proto;  // NCCL_PROTO
};

void PrintTo(const NetLaunch& l, std::ostream* os) {
  *os << l.hosts << " hosts x " << l.ranksPerHost << " ranks, " << l.algo << ", " << l.proto;
}

std::string netLaunchName(const testing::TestParamInfo<NetLaunch>& info) {
  const NetLaunch& l = info.param;
  return std::to_string(l.hosts) + "Hosts_x" + std::to_string(l.ranksPerHost) + "_" + l.algo + "_" + l.proto;
}

std::vector<NetLaunch> netLaunches() {
  std::vector<NetLaunch> out;
  for (auto [hosts, per] : {std::pair{2, 1}, std::pair{3, 1}, std::pair{2, 2}})
    for (const char* algo : {"Ring", "Tree"})
      for (const char* proto : {"Simple", "LL"}) out.push_back({hosts, per, algo, proto});
  return out;
}

class NetCollectivesTest : public testing::TestWithParam<NetLaunch> {};

TEST_P(NetCollectivesTest, Run) {
  const NetLaunch l = GetParam();
  const std::string launch = netLaunchName({l, 0});
  ScopedEnv env(netEnv(std::string(l.algo) == "Tree" ? "Ring;AllReduce:Tree" : "Ring", l.proto));
  const std::vector<CaseSpec> cases = netCases();
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = l.hosts * l.ranksPerHost;
  opts.deadline = std::chrono::seconds(180);
  opts.ids = makeUniqueIds(1);
  const auto start = Clock::now();
  LaunchResult res = launchRanks(opts, [&](RankContext& ctx) {
    joinHost(ctx, l.ranksPerHost);
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    CollectiveRunner runner(ctx, comm, launch);
    bool ok = true;
    for (const CaseSpec& cs : cases)
      if (!(ok = runner.run(cs))) break;
    runner.finish(cases.size());
    if (ok) ringExchange(ctx, comm, launch);
    if (ctx.failed()) {
      ctx.abortComm(comm);
      return;
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  std::printf("[ net      ] %s: %zu cases + send/recv in %.2f s\n", launch.c_str(), cases.size(), secondsSince(start));
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(Net, NetCollectivesTest, testing::ValuesIn(netLaunches()), netLaunchName);

// NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 leave the network as the only path between the ranks
// of one host, threads of one process included (as NCCL does).
class NetForcedTest : public testing::TestWithParam<std::tuple<LaunchMode, const char*>> {};

TEST_P(NetForcedTest, LocalRanksUseTheNetwork) {
  const auto [mode, proto] = GetParam();
  const std::string launch = std::string("forced_") + launchModeName(mode) + "_" + proto;
  std::vector<std::pair<std::string, std::string>> settings = netEnv("Ring", proto);
  for (auto& [name, value] : settings)
    if (name == "NCCL_P2P_DISABLE" || name == "NCCL_SHM_DISABLE") value = "1";
  ScopedEnv env(settings);
  const std::vector<CaseSpec> cases = netCases();
  LaunchOptions opts;
  opts.mode = mode;
  opts.nranks = mode == LaunchMode::kFork ? 2 : 3;
  opts.deadline = std::chrono::seconds(180);
  opts.ids = makeUniqueIds(1);
  LaunchResult res = launchRanks(opts, [&](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    CollectiveRunner runner(ctx, comm, launch);
    bool ok = true;
    for (const CaseSpec& cs : cases)
      if (!(ok = runner.run(cs))) break;
    runner.finish(cases.size());
    if (ok) ringExchange(ctx, comm, launch);
    if (ctx.failed()) {
      ctx.abortComm(comm);
      return;
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(Net, NetForcedTest,
                         testing::Combine(testing::Values(LaunchMode::kFork, LaunchMode::kThreads),
                                          testing::Values("Simple", "LL")),
                         [](const testing::TestParamInfo<std::tuple<LaunchMode, const char*>>& info) {
                           return std::string(launchModeName(std::get<0>(info.param))) + "_" +
                                  std::get<1>(info.param);
                         });

TEST(NetPeerKilledTest, SurvivorFailsNamingThePeer) {
  ScopedEnv env(netEnv("Ring", "Simple"));
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = 2;
  opts.deadline = std::chrono::seconds(120);
  opts.ids = makeUniqueIds(1);
  constexpr int kVictimIterations = 5;
  constexpr size_t kCount = 1 << 20;
  LaunchResult res = launchRanks(opts, [&](RankContext& ctx) {
    joinHost(ctx, 1);
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(kCount, 1.0f);
    for (int it = 0; it < 100000; ++it) {
      if (ctx.rank == 1 && it == kVictimIterations) raise(SIGKILL);
      const auto t0 = Clock::now();
      ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), kCount, ncclFloat32, ncclSum, comm, nullptr);
      const double took = secondsSince(t0);
      if (r == ncclSuccess) {
        if (it > 1000) {
          ctx.fail("rank 0: 1000 all-reduces succeeded after the peer was killed");
          break;
        }
        continue;
      }
      const std::string text = ncclGetLastError(comm);
      ctx.note("iteration %d failed after %.2f s with %s: %s", it, took, ncclGetErrorString(r), text.c_str());
      // The victim's last all-reduce may end before its proxy sent everything: that one may fail too.
      ctx.check(it >= kVictimIterations - 1, "rank 0 failed at iteration %d, before the peer was killed", it);
      ctx.check(r == ncclRemoteError || r == ncclSystemError, "error %d (%s), want remote or system error", r,
                ncclGetErrorString(r));
      ctx.check(took < kFailBoundS, "the failing all-reduce took %.1f s (bound %.0f s)", took, kFailBoundS);
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      ctx.check(text.find("rank 1") != std::string::npos && text.find(host) != std::string::npos,
                "the error does not name rank 1 and host %s: %s", host, text.c_str());
      break;
    }
    const auto t0 = Clock::now();
    RANK_NCCL_OK(ctx, ctx.abortComm(comm));
    ctx.check(secondsSince(t0) < kAbortBoundS, "ncclCommAbort took %.2f s", secondsSince(t0));
  });
  ASSERT_EQ(res.ranks.size(), 2u);
  EXPECT_EQ(res.ranks[1].status, RankStatus::kSignaled) << res.summary();
  EXPECT_EQ(res.ranks[0].status, RankStatus::kOk) << res.summary();
  for (const std::string& n : res.ranks[0].notes) std::printf("[ net      ] %s\n", n.c_str());
}

TEST(NetThroughputTest, AllReduce64MiBTwoHosts) {
  ScopedEnv env({{"NCCL_NET", "Socket"}, {"NCCL_SOCKET_IFNAME", "lo"}, {"NCCL_PROTO", "Simple"},
                 {"NCCL_ALGO", "Ring"}, {"NCCL_HOSTID", ""}});
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = 2;
  opts.deadline = std::chrono::seconds(180);
  opts.ids = makeUniqueIds(1);
  constexpr size_t kBytes = 64u << 20;
  constexpr int kIters = 3;
  LaunchResult res = launchRanks(opts, [&](RankContext& ctx) {
    joinHost(ctx, 1);
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(kBytes / sizeof(float), 1.0f);
    RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr));
    const auto t0 = Clock::now();
    for (int i = 0; i < kIters; ++i)
      RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr));
    const double s = secondsSince(t0) / kIters;
    // 1 + 1 + 2 + 4: the warm-up and 3 doublings.
    ctx.check(buf[0] == 16.0f && buf.back() == 16.0f, "rank %d: got %g, want 16", ctx.rank, buf[0]);
    if (ctx.rank == 0)
      ctx.note("all-reduce 64 MiB, 2 hosts x 1 rank over Socket/lo: %.1f ms, busbw %.2f GB/s (%ld CPUs)", s * 1e3,
               kBytes / s / 1e9, sysconf(_SC_NPROCESSORS_ONLN));
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
  for (const std::string& n : res.ranks[0].notes) std::printf("[ net      ] %s\n", n.c_str());
}

}  // namespace
}  // namespace accl::test
