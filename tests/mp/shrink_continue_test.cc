// Continuing after a failure (issue 9): 8 forked ranks loop on all-reduces; ranks 3 and 6 are
// SIGKILLed in the middle of the loop. Every survivor must see an error, then the 6 survivors call
// ncclCommShrink(NCCL_SHRINK_ABORT) excluding the dead ranks and run 100 all-reduces on the new
// communicator with exact, closed-form results. The time from the kill to each survivor's error
// and the time to shrink are measured and printed.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <vector>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRanks = 8;
constexpr int kVictims[] = {3, 6};
constexpr int kKillAt = 10;        // iteration at which the victims die
constexpr int kMaxLoop = 100000;   // survivors loop until their all-reduce fails
constexpr int kAfterShrink = 100;  // all-reduces on the shrunk communicator
constexpr size_t kCount = 1 << 18;  // 1 MiB of floats: the ring algorithm, not the one-round exchange
constexpr double kErrorBound = 10.0;   // s from the kill to every survivor's error
constexpr double kShrinkBound = 10.0;  // s for the shrink itself

int64_t nowNs() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

bool isVictim(int rank) { return std::find(std::begin(kVictims), std::end(kVictims), rank) != std::end(kVictims); }

// Timestamps shared by the forked ranks (CLOCK_MONOTONIC is the same clock in every process).
struct Times {
  std::atomic<int64_t> killNs[kRanks];
  std::atomic<int64_t> errorNs[kRanks];
  std::atomic<int64_t> shrinkStartNs[kRanks];
  std::atomic<int64_t> shrinkEndNs[kRanks];
};

class ShrinkContinueTest : public testing::Test {
 protected:
  void SetUp() override {
    void* p = mmap(nullptr, sizeof(Times), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    times_ = new (p) Times();
  }
  void TearDown() override { munmap(times_, sizeof(Times)); }
  Times* times_ = nullptr;
};

TEST_F(ShrinkContinueTest, SurvivorsOfTwoKilledRanksShrinkAndComputeCorrectly) {
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = kRanks;
  opts.deadline = std::chrono::seconds(90);
  opts.ids = makeUniqueIds(1);
  Times* times = times_;
  LaunchResult res = launchRanks(opts, [times](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(kCount);
    int iter = 0;
    ncclResult_t failed = ncclSuccess;
    for (; iter < kMaxLoop; ++iter) {
      if (iter == kKillAt && isVictim(ctx.rank)) {
        times->killNs[ctx.rank] = nowNs();
        kill(getpid(), SIGKILL);
      }
      std::fill(buf.begin(), buf.end(), 1.0f);
      failed = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
      if (failed != ncclSuccess) break;
      if (iter < kKillAt) ctx.check(buf[0] == kRanks, "rank %d: iteration %d: %g", ctx.rank, iter, buf[0]);
    }
    times->errorNs[ctx.rank] = nowNs();
    if (!ctx.check(failed == ncclRemoteError || failed == ncclSystemError || failed == ncclInvalidUsage,
                   "rank %d: the loop ended at iteration %d with %d (%s), want an error", ctx.rank, iter, failed,
                   ncclGetErrorString(failed)))
      return;
    ctx.note("rank %d: iteration %d failed with %s: %s", ctx.rank, iter, ncclGetErrorString(failed),
             ncclGetLastError(nullptr));

    // Shrink away the dead ranks, aborting whatever the parent still had in flight.
    int exclude[] = {kVictims[0], kVictims[1]};
    ncclComm_t small = nullptr;
    times->shrinkStartNs[ctx.rank] = nowNs();
    if (!RANK_NCCL_OK(ctx, ncclCommShrink(comm, exclude, 2, &small, nullptr, NCCL_SHRINK_ABORT))) return;
    times->shrinkEndNs[ctx.rank] = nowNs();
    int n = 0, me = -1;
    RANK_NCCL_OK(ctx, ncclCommCount(small, &n));
    RANK_NCCL_OK(ctx, ncclCommUserRank(small, &me));
    const int survivors = kRanks - 2;
    if (!ctx.check(n == survivors && me >= 0 && me < survivors, "rank %d: shrunk comm has %d ranks, my rank %d",
                   ctx.rank, n, me))
      return;
    // The parent refuses new work; the child computes exact sums.
    RANK_NCCL_EXPECT(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr),
                     ncclInvalidUsage);
    // sum over r in [0, 6) of ((r + 1) * (i % 7 + 1) + k) = 21 * (i % 7 + 1) + 6k
    int wrong = 0;
    for (int k = 0; k < kAfterShrink && wrong == 0; ++k) {
      for (size_t i = 0; i < kCount; ++i) buf[i] = static_cast<float>((me + 1) * (int)(i % 7 + 1) + k);
      if (!RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, small, nullptr)))
        return;
      for (size_t i = 0; i < kCount; ++i) {
        const float want = static_cast<float>(21 * (int)(i % 7 + 1) + survivors * k);
        if (buf[i] != want && wrong++ == 0)
          ctx.fail("rank %d: all-reduce %d on the shrunk comm: element %zu = %g, want %g", ctx.rank, k, i, buf[i], want);
      }
    }
    RANK_NCCL_OK(ctx, ncclCommDestroy(small));
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  for (const RankOutcome& r : res.ranks) {
    if (isVictim(r.rank))
      EXPECT_EQ(r.status, RankStatus::kSignaled) << res.summary();
    else
      EXPECT_EQ(r.status, RankStatus::kOk) << res.summary();
  }
  // Figures: from the first kill to each survivor's error, and the shrink's duration.
  int64_t kill0 = INT64_MAX;
  for (int v : kVictims)
    if (times_->killNs[v] > 0) kill0 = std::min<int64_t>(kill0, times_->killNs[v]);
  ASSERT_NE(kill0, INT64_MAX);
  double worstError = 0, worstShrink = 0, worstDone = 0;
  for (int r = 0; r < kRanks; ++r) {
    if (isVictim(r)) continue;
    const double toError = (times_->errorNs[r] - kill0) / 1e9;
    const double shrink = (times_->shrinkEndNs[r] - times_->shrinkStartNs[r]) / 1e9;
    const double toShrunk = (times_->shrinkEndNs[r] - kill0) / 1e9;
    std::printf("  rank %d: error %.3f s after the kill; shrink took %.3f s (done %.3f s after the kill)\n", r, toError,
                shrink, toShrunk);
    worstError = std::max(worstError, toError);
    worstShrink = std::max(worstShrink, shrink);
    worstDone = std::max(worstDone, toShrunk);
  }
  std::printf("  every survivor failed within %.3f s of the kill; shrink took at most %.3f s; all shrunk %.3f s after "
              "the kill\n",
              worstError, worstShrink, worstDone);
  EXPECT_LT(worstError, kErrorBound);
  EXPECT_LT(worstShrink, kShrinkBound);
  for (const RankOutcome& r : res.ranks)
    for (const std::string& n : r.notes) std::printf("  %s\n", n.c_str());
}

}  // namespace
}  // namespace accl::test
