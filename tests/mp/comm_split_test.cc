// ncclCommSplit and ncclCommShrink through the public API, as threads and as processes, 1..16
// ranks. Expected sizes and ranks are closed forms of the parent rank: child ranks are ordered by
// (key, parent rank); shrink keeps the survivors in parent order.
#include <algorithm>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

// A placeholder for an output handle, to see that the library overwrote it.
ncclComm_t const kUnwrittenComm = reinterpret_cast<ncclComm_t>(static_cast<uintptr_t>(0x1));

class CommSplitTest : public MpTest {};

TEST_P(CommSplitTest, EvenOddColorsWithNegatedKeyReverseTheOrder) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    const int n = ctx.nranks, r = ctx.rank, color = r % 2;
    ncclComm_t comm, child = kUnwrittenComm;
    if (!initComm(ctx, &comm)) return;
    if (RANK_NCCL_OK(ctx, ncclCommSplit(comm, color, -r, &child, nullptr))) {
      // Even ranks: ceil(n/2) of them; odd ranks: floor(n/2). Key -r puts the highest parent rank
      // first, so the child rank is the number of same-color ranks above r.
      const int size = color == 0 ? (n + 1) / 2 : n / 2;
      const int sameColorAbove = (n - 1 - r) / 2;
      checkCommIdentity(ctx, child, size, sameColorAbove, "even/odd child");
      if (child != kUnwrittenComm) RANK_NCCL_OK(ctx, ncclCommDestroy(child));
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommSplitTest, EqualKeysKeepTheParentOrder) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    const int n = ctx.nranks, r = ctx.rank, color = r % 3;
    ncclComm_t comm, child = kUnwrittenComm;
    if (!initComm(ctx, &comm)) return;
    if (RANK_NCCL_OK(ctx, ncclCommSplit(comm, color, 0, &child, nullptr))) {
      const int size = (n - color + 2) / 3;  // ranks color, color+3, ... below n
      checkCommIdentity(ctx, child, size, r / 3, "mod-3 child");
      if (child != kUnwrittenComm) RANK_NCCL_OK(ctx, ncclCommDestroy(child));
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommSplitTest, OneColorForAllIsACopy) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm, child = kUnwrittenComm;
    if (!initComm(ctx, &comm)) return;
    if (RANK_NCCL_OK(ctx, ncclCommSplit(comm, 5, ctx.rank, &child, nullptr))) {
      checkCommIdentity(ctx, child, ctx.nranks, ctx.rank, "single-color child");
      if (child != kUnwrittenComm) RANK_NCCL_OK(ctx, ncclCommDestroy(child));
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommSplitTest, NoColorRanksGetNull) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    const int n = ctx.nranks, r = ctx.rank;
    const bool out = r % 3 == 2;
    ncclComm_t comm, child = kUnwrittenComm;
    if (!initComm(ctx, &comm)) return;
    if (RANK_NCCL_OK(ctx, ncclCommSplit(comm, out ? NCCL_SPLIT_NOCOLOR : 7, r, &child, nullptr))) {
      if (out) {
        ctx.check(child == nullptr, "rank %d: NCCL_SPLIT_NOCOLOR gave newcomm %p, expected NULL", r,
                  static_cast<void*>(child));
      } else {
        const int outBelow = r / 3, outTotal = n / 3;  // ranks 2, 5, 8, ... are out
        checkCommIdentity(ctx, child, n - outTotal, r - outBelow, "colored child");
      }
      if (child != nullptr && child != kUnwrittenComm) RANK_NCCL_OK(ctx, ncclCommDestroy(child));
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommSplitTest, SplitOfASplit) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    const int n = ctx.nranks, r = ctx.rank;
    ncclComm_t comm, child = kUnwrittenComm, grandchild = kUnwrittenComm;
    if (!initComm(ctx, &comm)) return;
    // First level: even/odd, parent order.
    const int childSize = r % 2 == 0 ? (n + 1) / 2 : n / 2;
    const int childRank = r / 2;
    if (RANK_NCCL_OK(ctx, ncclCommSplit(comm, r % 2, r, &child, nullptr))) {
      checkCommIdentity(ctx, child, childSize, childRank, "child");
      // Second level: lower and upper half of the child, with a named config.
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.commName = "mp-split-grandchild";
      const int half = childSize / 2;
      const bool upper = childRank >= half;
      if (child != kUnwrittenComm && child != nullptr &&
          RANK_NCCL_OK(ctx, ncclCommSplit(child, upper ? 1 : 0, childRank, &grandchild, &config))) {
        checkCommIdentity(ctx, grandchild, upper ? childSize - half : half,
                          upper ? childRank - half : childRank, "grandchild");
        if (grandchild != kUnwrittenComm) RANK_NCCL_OK(ctx, ncclCommDestroy(grandchild));
      }
      if (child != kUnwrittenComm) RANK_NCCL_OK(ctx, ncclCommDestroy(child));
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

ACCL_MP_INSTANTIATE(CommSplitTest);

// ---- Shrink ---------------------------------------------------------------------------------------

// Excludes rank 1 and the last rank (just rank 1 with two ranks).
std::vector<int> excludedRanks(int n) {
  std::vector<int> out;
  if (n >= 2) out.push_back(1);
  if (n >= 3) out.push_back(n - 1);
  return out;
}

class CommShrinkTest : public MpTest {
 protected:
  void runShrink(int flags) {
    if (nranks() < 2) GTEST_SKIP() << "shrinking needs a rank to exclude";
    const std::vector<int> excluded = excludedRanks(nranks());
    const bool forked = mode() == LaunchMode::kFork;
    LaunchResult res = launchRanks(options(), [excluded, flags, forked](RankContext& ctx) {
      const int n = ctx.nranks, r = ctx.rank;
      ncclComm_t comm;
      if (!initComm(ctx, &comm)) return;
      if (std::count(excluded.begin(), excluded.end(), r)) {
        // Excluded ranks do not call ncclCommShrink. With NCCL_SHRINK_ABORT they play failed
        // peers: a forked one dies without cleaning up, a thread aborts its comm.
        if (flags == NCCL_SHRINK_ABORT && forked) _exit(0);
        RANK_NCCL_OK(ctx, flags == NCCL_SHRINK_ABORT ? ctx.abortComm(comm) : ctx.destroyComm(comm));
        return;
      }
      std::vector<int> list = excluded;
      ncclComm_t shrunk = kUnwrittenComm;
      if (RANK_NCCL_OK(ctx, ncclCommShrink(comm, list.data(), static_cast<int>(list.size()), &shrunk, nullptr,
                                           flags))) {
        const int excludedBelow =
            static_cast<int>(std::count_if(excluded.begin(), excluded.end(), [r](int e) { return e < r; }));
        checkCommIdentity(ctx, shrunk, n - static_cast<int>(excluded.size()), r - excludedBelow,
                          "shrunk comm");
        if (shrunk != kUnwrittenComm) RANK_NCCL_OK(ctx, ncclCommDestroy(shrunk));
      }
      RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    });
    EXPECT_RANKS_OK(res);
  }
};

TEST_P(CommShrinkTest, DefaultExcludesRanksAndRenumbers) { runShrink(NCCL_SHRINK_DEFAULT); }

TEST_P(CommShrinkTest, AbortExcludesFailedRanksAndRenumbers) { runShrink(NCCL_SHRINK_ABORT); }

ACCL_MP_INSTANTIATE(CommShrinkTest);

}  // namespace
}  // namespace accl::test
