// Communicator teardown through the public API, as threads and as processes, 1..16 ranks:
// ncclCommFinalize then ncclCommDestroy (blocking and nonblocking), ncclCommAbort (in place and
// from another thread, mixed with peers that destroy), and ncclCommRevoke.
#include <thread>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

class CommTeardownTest : public MpTest {};

TEST_P(CommTeardownTest, FinalizeThenDestroy) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    if (RANK_NCCL_OK(ctx, ncclCommFinalize(comm))) {
      ncclResult_t async = ncclInProgress;
      RANK_NCCL_OK(ctx, ncclCommGetAsyncError(comm, &async));
      ctx.check(async == ncclSuccess, "rank %d: async result after finalize is %d (%s)", ctx.rank, async,
                ncclGetErrorString(async));
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommTeardownTest, NonblockingFinalizeThenDestroy) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm;
    if (!initComm(ctx, &comm, &config)) return;
    RANK_NCCL_FINISH(ctx, ncclCommFinalize(comm), comm);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// Even ranks abort, odd ranks destroy: every call returns, whatever the peers do.
TEST_P(CommTeardownTest, AbortReturnsWhilePeersDestroy) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    if (ctx.rank % 2 == 0) {
      RANK_NCCL_OK(ctx, ctx.abortComm(comm));
    } else {
      RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    }
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommTeardownTest, AbortFromAnotherThreadWhileIdle) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    if (!ctx.unregisterCleanup(comm)) return;  // the launcher took it: the deadline passed
    ncclResult_t aborted = ncclInternalError;
    std::thread other([&] { aborted = ncclCommAbort(comm); });
    other.join();
    ctx.check(aborted == ncclSuccess, "rank %d: ncclCommAbort from another thread returned %d (%s): %s",
              ctx.rank, aborted, ncclGetErrorString(aborted), ncclGetLastError(nullptr));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommTeardownTest, RevokeThenFinalizeFailsAndDestroyWorks) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    if (RANK_NCCL_OK(ctx, ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT))) {
      RANK_NCCL_EXPECT(ctx, ncclCommFinalize(comm), ncclInvalidUsage);
      ctx.check(lastErrorContains("ncclCommFinalize"),
                "rank %d: last error does not name ncclCommFinalize: %s", ctx.rank,
                ncclGetLastError(nullptr));
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

ACCL_MP_INSTANTIATE(CommTeardownTest);

}  // namespace
}  // namespace accl::test
