// Communicator creation through the public API, as threads and as processes, 1..16 ranks:
// ncclCommInitRank, ncclCommInitRankConfig (default config, commName, nonblocking),
// ncclCommInitRankScalable (one and two ids), ncclCommInitAll, and inits grouped in one thread.
#include <cstring>
#include <thread>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

class CommInitTest : public MpTest {};

TEST_P(CommInitTest, InitRankReportsCountRankAndNoError) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (!RANK_NCCL_OK(ctx, ncclCommInitRank(&comm, ctx.nranks, ctx.id(), ctx.rank))) return;
    ctx.registerComm(comm);
    checkCommIdentity(ctx, comm, ctx.nranks, ctx.rank, "comm");
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommInitTest, InitRankConfigWithDefaultNamedAndNullConfig) {
  // One communicator per config variant, one after the other, each with its own unique id.
  LaunchResult res = launchRanks(options(3), [](RankContext& ctx) {
    ncclConfig_t plain = NCCL_CONFIG_INITIALIZER;
    ncclConfig_t named = NCCL_CONFIG_INITIALIZER;
    named.commName = "mp-init-named";
    ncclConfig_t* variants[] = {&plain, &named, nullptr};
    const char* names[] = {"comm(NCCL_CONFIG_INITIALIZER)", "comm(commName)", "comm(NULL config)"};
    for (int v = 0; v < 3; ++v) {
      ncclComm_t comm = nullptr;
      if (!RANK_NCCL_OK(ctx, ncclCommInitRankConfig(&comm, ctx.nranks, ctx.ids()[v], ctx.rank, variants[v])))
        return;
      ctx.registerComm(comm);
      checkCommIdentity(ctx, comm, ctx.nranks, ctx.rank, names[v]);
      RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    }
    ctx.check(strcmp(named.commName, "mp-init-named") == 0, "the library modified config.commName");
  });
  EXPECT_RANKS_OK(res);
}

// A program built against NCCL 2.28's header passes a shorter ncclConfig_t (size and version say
// so): whatever lies in memory after it must be ignored. A 2.32 config with its new fields set to
// valid, non-default values must be accepted too.
TEST_P(CommInitTest, InitRankConfigFromThe228AndThe232Header) {
  LaunchResult res = launchRanks(options(2), [](RankContext& ctx) {
    ncclConfig_t old = NCCL_CONFIG_INITIALIZER;
    old.size = offsetof(ncclConfig_t, graphUsageMode);
    old.version = NCCL_VERSION(2, 28, 9);
    old.graphUsageMode = 12345;  // out of range, but beyond the struct the caller declared
    old.hostCftMode = -7;
    old.nvlsHostMode = 99;
    ncclConfig_t current = NCCL_CONFIG_INITIALIZER;
    current.graphUsageMode = 0;
    current.maxP2pPeers = 4;
    current.numRmaCtx = 2;
    current.hostCftMode = ncclHostCftFallback;
    current.nvlsHostMode = ncclNvlsHostModeDisableTransport;
    ncclConfig_t* variants[] = {&old, &current};
    const char* names[] = {"comm(2.28 config)", "comm(2.32 config)"};
    for (int v = 0; v < 2; ++v) {
      ncclComm_t comm = nullptr;
      if (!RANK_NCCL_OK(ctx, ncclCommInitRankConfig(&comm, ctx.nranks, ctx.ids()[v], ctx.rank, variants[v])))
        return;
      ctx.registerComm(comm);
      checkCommIdentity(ctx, comm, ctx.nranks, ctx.rank, names[v]);
      RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    }
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommInitTest, NonblockingInitCompletesThroughGetAsyncError) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm = nullptr;
    ncclResult_t init = ncclCommInitRankConfig(&comm, ctx.nranks, ctx.id(), ctx.rank, &config);
    if (comm) ctx.registerComm(comm);
    if (!RANK_NCCL_FINISH(ctx, init, comm)) return;
    checkCommIdentity(ctx, comm, ctx.nranks, ctx.rank, "nonblocking comm");
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// The nonblocking pattern a single-threaded program uses: start every rank's init, then poll.
// Only works if nonblocking init really returns before the peers arrive.
TEST_P(CommInitTest, NonblockingInitOfAllRanksFromOneThread) {
  const int n = nranks();
  LaunchResult res = launchRanks(optionsFor(1), [n](RankContext& ctx) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    std::vector<ncclComm_t> comms(n, nullptr);
    bool started = true;
    for (int r = 0; r < n && started; ++r) {
      ncclResult_t init = ncclCommInitRankConfig(&comms[r], n, ctx.id(), r, &config);
      if (comms[r]) ctx.registerComm(comms[r]);
      started = ctx.check(init == ncclSuccess || init == ncclInProgress,
                          "rank %d: nonblocking ncclCommInitRankConfig returned %d (%s): %s", r, init,
                          ncclGetErrorString(init), ncclGetLastError(nullptr));
    }
    for (int r = 0; r < n; ++r) {
      if (!comms[r]) continue;
      if (started) {
        ncclResult_t async = waitForAsync(comms[r], std::chrono::seconds(30));
        if (ctx.check(async == ncclSuccess, "rank %d: async init result %d (%s): %s", r, async,
                      ncclGetErrorString(async), ncclGetLastError(nullptr))) {
          checkCommIdentity(ctx, comms[r], n, r, "nonblocking comm");
        }
      }
      RANK_NCCL_OK(ctx, ctx.destroyComm(comms[r]));
    }
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommInitTest, ScalableInitWithOneId) {
  LaunchResult res = launchRanks(options(1), [](RankContext& ctx) {
    std::vector<ncclUniqueId> ids = ctx.ids();
    ncclComm_t comm = nullptr;
    if (!RANK_NCCL_OK(ctx, ncclCommInitRankScalable(&comm, ctx.nranks, ctx.rank, 1, ids.data(), nullptr)))
      return;
    ctx.registerComm(comm);
    checkCommIdentity(ctx, comm, ctx.nranks, ctx.rank, "comm");
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommInitTest, ScalableInitWithTwoIds) {
  if (nranks() < 2) GTEST_SKIP() << "two roots need at least two ranks";
  LaunchResult res = launchRanks(options(2), [](RankContext& ctx) {
    std::vector<ncclUniqueId> ids = ctx.ids();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    ncclComm_t comm = nullptr;
    if (!RANK_NCCL_OK(ctx, ncclCommInitRankScalable(&comm, ctx.nranks, ctx.rank, 2, ids.data(), &config)))
      return;
    ctx.registerComm(comm);
    checkCommIdentity(ctx, comm, ctx.nranks, ctx.rank, "comm");
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// ncclCommInitAll creates all ranks from one call; it needs no launcher ranks of its own, but
// runs inside one (a thread, or a forked process) for the deadline.
TEST_P(CommInitTest, InitAllWithNullAndRepeatedDevlist) {
  const int n = nranks();
  LaunchOptions opts = optionsFor(1, 0);
  LaunchResult res = launchRanks(opts, [n](RankContext& ctx) {
    std::vector<int> sameDevice(n, 0);  // several ranks on one device are allowed by accl
    const int* devlists[] = {nullptr, sameDevice.data()};
    for (const int* devlist : devlists) {
      std::vector<ncclComm_t> comms(n, nullptr);
      if (!RANK_NCCL_OK(ctx, ncclCommInitAll(comms.data(), n, devlist))) return;
      for (int r = 0; r < n; ++r) {
        checkCommIdentity(ctx, comms[r], n, r, devlist ? "comm(devlist of zeros)" : "comm(devlist NULL)");
        if (devlist) {
          int device = -1;
          if (ncclCommCuDevice(comms[r], &device) == ncclSuccess)
            ctx.check(device == 0, "rank %d: ncclCommCuDevice = %d, devlist said 0", r, device);
        }
      }
      for (ncclComm_t comm : comms) RANK_NCCL_OK(ctx, ncclCommDestroy(comm));
    }
  });
  EXPECT_RANKS_OK(res);
}

// Blocking inits of several ranks inside one group from one thread: ncclGroupEnd runs them
// together. In thread mode one thread creates all ranks; in fork mode each process wraps its one
// rank in a group.
TEST_P(CommInitTest, GroupedInitsFromOneThread) {
  const int n = nranks();
  const bool oneThread = mode() == LaunchMode::kThreads;
  LaunchResult res = launchRanks(optionsFor(oneThread ? 1 : n), [n, oneThread](RankContext& ctx) {
    std::vector<int> myRanks;
    for (int r = oneThread ? 0 : ctx.rank; r < (oneThread ? n : ctx.rank + 1); ++r) myRanks.push_back(r);
    std::vector<ncclComm_t> comms(myRanks.size(), nullptr);
    RANK_NCCL_OK(ctx, ncclGroupStart());
    for (size_t i = 0; i < myRanks.size(); ++i)
      RANK_NCCL_OK(ctx, ncclCommInitRank(&comms[i], n, ctx.id(), myRanks[i]));
    if (!RANK_NCCL_OK(ctx, ncclGroupEnd())) return;
    for (size_t i = 0; i < myRanks.size(); ++i) {
      checkCommIdentity(ctx, comms[i], n, myRanks[i], "grouped comm");
      if (comms[i]) RANK_NCCL_OK(ctx, ncclCommDestroy(comms[i]));
    }
  });
  EXPECT_RANKS_OK(res);
}

// Two workers (threads or processes) each create their share of the ranks inside one group:
// grouped inits in several places at once.
TEST_P(CommInitTest, GroupedInitsSharedByTwoWorkers) {
  const int n = nranks();
  const int workers = std::min(n, 2);
  LaunchResult res = launchRanks(optionsFor(workers), [n, workers](RankContext& ctx) {
    std::vector<int> myRanks;
    for (int r = ctx.rank; r < n; r += workers) myRanks.push_back(r);
    std::vector<ncclComm_t> comms(myRanks.size(), nullptr);
    RANK_NCCL_OK(ctx, ncclGroupStart());
    for (size_t i = 0; i < myRanks.size(); ++i)
      RANK_NCCL_OK(ctx, ncclCommInitRank(&comms[i], n, ctx.id(), myRanks[i]));
    if (!RANK_NCCL_OK(ctx, ncclGroupEnd())) return;
    for (size_t i = 0; i < myRanks.size(); ++i) {
      checkCommIdentity(ctx, comms[i], n, myRanks[i], "grouped comm");
      if (comms[i]) RANK_NCCL_OK(ctx, ncclCommDestroy(comms[i]));
    }
  });
  EXPECT_RANKS_OK(res);
}

ACCL_MP_INSTANTIATE(CommInitTest);

}  // namespace
}  // namespace accl::test
