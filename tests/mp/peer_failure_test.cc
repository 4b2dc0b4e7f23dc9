// A peer that goes away in the middle of a job makes the others fail within a bounded time,
// never hang: a rank that aborts its communicator (threads and processes) and a rank whose
// process is killed (processes). ACCL_TIMEOUT_MS stays at its 30-minute default, so what is
// tested is the detection of the closed connection / dead process, not the timeout. Every
// survivor's error names the rank that left, also those that waited on another survivor.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

constexpr double kBoundSeconds = 10.0;

class PeerFailureTest : public testing::TestWithParam<std::tuple<LaunchMode, int>> {
 protected:
  LaunchOptions opts() const {
    LaunchOptions o;
    o.mode = std::get<0>(GetParam());
    o.nranks = std::get<1>(GetParam());
    o.deadline = std::chrono::seconds(60);
    ncclUniqueId id;
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    o.ids = {id};
    return o;
  }
};

// The survivors' side: a second all-reduce must fail with ncclRemoteError, quickly, and name the
// rank that left (`victim`), not the neighbour this rank happened to wait on.
void survivorExpectsError(RankContext& ctx, ncclComm_t comm, std::vector<float>& buf, int victim) {
  auto t0 = std::chrono::steady_clock::now();
  ncclResult_t res = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string text = ncclGetLastError(nullptr);
  ctx.check(res == ncclRemoteError, "rank %d: all-reduce after a peer left returned %d (%s), want ncclRemoteError: %s",
            ctx.rank, res, ncclGetErrorString(res), text.c_str());
  ctx.check(s < kBoundSeconds, "rank %d: the failure took %.1f s (bound %.0f s)", ctx.rank, s, kBoundSeconds);
  const std::string named = "rank " + std::to_string(victim) + " (";
  ctx.check(text.find(named) != std::string::npos, "rank %d: the error does not name rank %d ('%s'): %s", ctx.rank,
            victim, named.c_str(), text.c_str());
  ctx.abortComm(comm);
}

TEST_P(PeerFailureTest, PeerAbortsItsCommunicator) {
  LaunchResult res = launchRanks(opts(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(4099, 1.0f);
    // A first collective connects everyone, so the failure below hits live connections.
    if (!RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr)))
      return;
    if (ctx.rank == ctx.nranks - 1) {
      RANK_NCCL_OK(ctx, ctx.abortComm(comm));
      return;
    }
    survivorExpectsError(ctx, comm, buf, ctx.nranks - 1);
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(PeerFailureTest, PeerProcessIsKilled) {
  if (std::get<0>(GetParam()) != LaunchMode::kFork) GTEST_SKIP() << "a killed rank needs its own process";
  LaunchResult res = launchRanks(opts(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(4099, 1.0f);
    if (!RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr)))
      return;
    if (ctx.rank == ctx.nranks - 1) kill(getpid(), SIGKILL);
    survivorExpectsError(ctx, comm, buf, ctx.nranks - 1);
  });
  const int victim = static_cast<int>(res.ranks.size()) - 1;
  for (const RankOutcome& r : res.ranks) {
    if (r.rank == victim)
      EXPECT_EQ(r.status, RankStatus::kSignaled) << res.summary();
    else
      EXPECT_EQ(r.status, RankStatus::kOk) << res.summary();
  }
}

INSTANTIATE_TEST_SUITE_P(, PeerFailureTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork), testing::Values(2, 3, 5)),
                         [](const testing::TestParamInfo<std::tuple<LaunchMode, int>>& info) {
                           return std::string(launchModeName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace accl::test
