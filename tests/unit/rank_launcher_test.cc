// Tests of the rank launcher (tests/support/rank_launcher.h) in both modes: passing bodies, a
// failing rank, hangs past the deadline, crashes and exit codes of forked ranks, skipped ranks,
// and the pipe that carries a forked rank's messages. Dummy unique ids: no NCCL call is made.
#include "support/rank_launcher.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>

namespace accl::test {
namespace {

using namespace std::chrono_literals;

ncclUniqueId dummyId(int seed) {
  ncclUniqueId id;
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) id.internal[i] = static_cast<char>(i * 7 + seed);
  return id;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool anyContains(const std::vector<std::string>& messages, const std::string& needle) {
  for (const std::string& m : messages)
    if (contains(m, needle)) return true;
  return false;
}

// A process that is gone or a zombie (its parent died and init has not reaped it yet).
bool processGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

class RankLauncherTest : public testing::TestWithParam<std::tuple<LaunchMode, int>> {
 protected:
  LaunchMode mode() const { return std::get<0>(GetParam()); }
  int nranks() const { return std::get<1>(GetParam()); }
};

TEST_P(RankLauncherTest, EveryRankRunsOnceWithItsIndexAndTheIds) {
  LaunchOptions opts;
  opts.mode = mode();
  opts.nranks = nranks();
  opts.deadline = 20s;
  opts.ids = {dummyId(1), dummyId(2)};
  LaunchResult res = launchRanks(opts, [n = nranks()](RankContext& ctx) {
    RANK_CHECK(ctx, ctx.nranks == n);
    RANK_CHECK(ctx, ctx.ids().size() == 2);
    RANK_CHECK(ctx, memcmp(&ctx.id(), &ctx.ids()[0], sizeof(ncclUniqueId)) == 0);
    ncclUniqueId second = dummyId(2);
    RANK_CHECK(ctx, memcmp(&ctx.ids()[1], &second, sizeof(ncclUniqueId)) == 0);
    ctx.note("I am rank %d", ctx.rank);
  });
  EXPECT_RANKS_OK(res);
  EXPECT_EQ(res.mode, mode());
  ASSERT_EQ(res.ranks.size(), static_cast<size_t>(nranks()));
  for (int r = 0; r < nranks(); ++r) {
    EXPECT_EQ(res.ranks[r].rank, r);
    EXPECT_EQ(res.ranks[r].status, RankStatus::kOk);
    EXPECT_EQ(res.ranks[r].notes, std::vector<std::string>{"I am rank " + std::to_string(r)});
    if (mode() == LaunchMode::kFork) {
      EXPECT_EQ(res.ranks[r].exitCode, 0);
    }
  }
  EXPECT_LT(res.seconds, 10.0);
}

TEST_P(RankLauncherTest, OneFailingRankIsNamed) {
  const int bad = nranks() / 2;
  LaunchOptions opts;
  opts.mode = mode();
  opts.nranks = nranks();
  opts.deadline = 20s;
  LaunchResult res = launchRanks(opts, [bad](RankContext& ctx) {
    if (ctx.rank != bad) return;
    ctx.check(false, "boom %d", 42);
    RANK_CHECK(ctx, 1 + 1 == 3);
  });
  EXPECT_FALSE(res.ok());
  EXPECT_EQ(res.failedRanks(), std::vector<int>{bad});
  const RankOutcome& out = res.ranks[bad];
  EXPECT_EQ(out.status, RankStatus::kFailed);
  ASSERT_EQ(out.failures.size(), 2u);
  EXPECT_EQ(out.failures[0], "boom 42");
  EXPECT_TRUE(contains(out.failures[1], "rank_launcher_test.cc")) << out.failures[1];
  EXPECT_TRUE(contains(out.failures[1], "1 + 1 == 3")) << out.failures[1];
  EXPECT_TRUE(contains(res.summary(), "rank " + std::to_string(bad) + "/")) << res.summary();
  EXPECT_TRUE(contains(res.summary(), "boom 42")) << res.summary();
  testing::AssertionResult assertion = ranksOk("res", res);
  EXPECT_FALSE(assertion);
  EXPECT_TRUE(contains(assertion.message(), "ranks {" + std::to_string(bad) + "}")) << assertion.message();
}

TEST_P(RankLauncherTest, UncaughtExceptionFailsTheRank) {
  LaunchOptions opts;
  opts.mode = mode();
  opts.nranks = nranks();
  opts.deadline = 20s;
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
    if (ctx.rank == 0) throw std::runtime_error("thrown by rank 0");
  });
  EXPECT_EQ(res.failedRanks(), std::vector<int>{0});
  EXPECT_TRUE(anyContains(res.ranks[0].failures, "uncaught exception: thrown by rank 0")) << res.summary();
}

TEST_P(RankLauncherTest, SkippedRanksAreNotStarted) {
  if (nranks() < 3) GTEST_SKIP() << "needs a rank to skip between two started ones";
  LaunchOptions opts;
  opts.mode = mode();
  opts.nranks = nranks();
  opts.deadline = 20s;
  opts.skipRanks = {1, nranks() - 1};
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) { ctx.note("ran"); });
  EXPECT_RANKS_OK(res);
  for (int r = 0; r < nranks(); ++r) {
    bool skipped = r == 1 || r == nranks() - 1;
    EXPECT_EQ(res.ranks[r].status, skipped ? RankStatus::kSkipped : RankStatus::kOk) << "rank " << r;
    EXPECT_EQ(res.ranks[r].notes.size(), skipped ? 0u : 1u) << "rank " << r;
  }
  EXPECT_EQ(res.ranksWith(RankStatus::kSkipped), (std::vector<int>{1, nranks() - 1}));
}

std::string paramName(const testing::TestParamInfo<std::tuple<LaunchMode, int>>& info) {
  return std::string(std::get<0>(info.param) == LaunchMode::kFork ? "Fork" : "Thread") + "_" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(, RankLauncherTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork),
                                          testing::Values(1, 3, 8)),
                         paramName);

TEST(RankLauncher, NoRanksIsNotOk) {
  LaunchOptions opts;
  opts.nranks = 0;
  LaunchResult res = launchRanks(opts, [](RankContext&) {});
  EXPECT_FALSE(res.ok());
}

TEST(RankLauncher, IdWithoutIdsFailsTheRank) {
  LaunchOptions opts;
  opts.deadline = 20s;
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) { (void)ctx.id(); });
  EXPECT_EQ(res.failedRanks(), std::vector<int>{0});
}

// ---- Deadlines ------------------------------------------------------------------------------------

TEST(RankLauncherThreads, HangingRankIsNamedAndItsCleanupRuns) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  LaunchOptions opts;
  opts.nranks = 3;
  opts.deadline = 500ms;
  opts.abortGrace = 3s;
  LaunchResult res = launchRanks(opts, [release](RankContext& ctx) {
    if (ctx.rank != 2) return;
    int key = 0;
    // Plays ncclCommAbort: the cleanup wakes the blocked "call" below.
    ctx.registerCleanup(&key, [release] { release->store(true); });
    while (!release->load()) std::this_thread::sleep_for(1ms);
    ctx.note("unregister after the launcher's cleanup returned %d", ctx.unregisterCleanup(&key));
  });
  EXPECT_EQ(res.failedRanks(), std::vector<int>{2});
  const RankOutcome& out = res.ranks[2];
  EXPECT_EQ(out.status, RankStatus::kTimedOut);
  EXPECT_FALSE(out.detached);
  ASSERT_FALSE(out.failures.empty());
  EXPECT_TRUE(contains(out.failures[0], "did not finish within 500 ms")) << out.failures[0];
  EXPECT_TRUE(contains(out.failures[0], "1 registered cleanup")) << out.failures[0];
  EXPECT_EQ(out.notes, std::vector<std::string>{"unregister after the launcher's cleanup returned 0"});
  EXPECT_EQ(res.ranks[0].status, RankStatus::kOk);
  EXPECT_GE(res.seconds, 0.5);
  EXPECT_LT(res.seconds, 2.5);
}

TEST(RankLauncherThreads, CleanupNotNeededWhenInTime) {
  LaunchOptions opts;
  opts.nranks = 2;
  opts.deadline = 20s;
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
    int key = 0;
    bool ran = false;
    ctx.registerCleanup(&key, [&ran] { ran = true; });
    RANK_CHECK(ctx, ctx.unregisterCleanup(&key));
    RANK_CHECK(ctx, !ctx.unregisterCleanup(&key));
    RANK_CHECK(ctx, !ran);
  });
  EXPECT_RANKS_OK(res);
}

TEST(RankLauncherThreads, RankThatIgnoresItsCleanupIsDetached) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  LaunchOptions opts;
  opts.nranks = 2;
  opts.deadline = 300ms;
  opts.abortGrace = 300ms;
  LaunchResult res = launchRanks(opts, [release](RankContext& ctx) {
    if (ctx.rank != 1) return;
    while (!release->load()) std::this_thread::sleep_for(1ms);
  });
  release->store(true);  // lets the detached thread end now that the launcher gave up on it
  EXPECT_EQ(res.failedRanks(), std::vector<int>{1});
  EXPECT_EQ(res.ranks[1].status, RankStatus::kTimedOut);
  EXPECT_TRUE(res.ranks[1].detached);
  EXPECT_TRUE(anyContains(res.ranks[1].failures, "thread detached")) << res.summary();
  EXPECT_GE(res.seconds, 0.6);
  EXPECT_LT(res.seconds, 2.0);
}

TEST(RankLauncherFork, HangingRankIsKilledAtTheDeadline) {
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = 3;
  opts.deadline = 500ms;
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
    if (ctx.rank != 1) return;
    ctx.note("about to hang");
    for (;;) pause();
  });
  EXPECT_EQ(res.failedRanks(), std::vector<int>{1});
  const RankOutcome& out = res.ranks[1];
  EXPECT_EQ(out.status, RankStatus::kTimedOut);
  EXPECT_EQ(out.signal, SIGKILL);
  EXPECT_TRUE(anyContains(out.failures, "did not finish within 500 ms")) << res.summary();
  EXPECT_EQ(out.notes, std::vector<std::string>{"about to hang"});  // sent before the hang, still delivered
  EXPECT_GE(res.seconds, 0.5);
  EXPECT_LT(res.seconds, 3.0);
}

TEST(RankLauncherFork, DeadlineKillsTheRanksOwnChildrenToo) {
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = 1;
  opts.deadline = 500ms;
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
    pid_t grandchild = fork();
    if (grandchild == 0) {
      for (;;) pause();
    }
    ctx.note("%d", static_cast<int>(grandchild));
    for (;;) pause();
  });
  ASSERT_EQ(res.ranks[0].status, RankStatus::kTimedOut) << res.summary();
  ASSERT_EQ(res.ranks[0].notes.size(), 1u);
  pid_t grandchild = std::stoi(res.ranks[0].notes[0]);
  ASSERT_GT(grandchild, 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = processGone(grandchild);
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived the deadline";
}

// ---- Fork-only outcomes -----------------------------------------------------------------------------

TEST(RankLauncherFork, SegfaultIsReportedWithTheSignal) {
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = 2;
  opts.deadline = 20s;
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
    if (ctx.rank != 0) return;
    ctx.note("before the crash");
    volatile int* volatile nowhere = nullptr;
    *nowhere = 1;
  });
  EXPECT_EQ(res.failedRanks(), std::vector<int>{0});
  EXPECT_EQ(res.ranks[0].status, RankStatus::kSignaled);
  EXPECT_EQ(res.ranks[0].signal, SIGSEGV);
  EXPECT_EQ(res.ranks[0].notes, std::vector<std::string>{"before the crash"});
  EXPECT_TRUE(contains(res.summary(), "SIGSEGV")) << res.summary();
  EXPECT_EQ(res.ranks[1].status, RankStatus::kOk);
}

TEST(RankLauncherFork, AbnormalExitCodeIsReported) {
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = 2;
  opts.deadline = 20s;
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
    if (ctx.rank == 1) _exit(7);
  });
  EXPECT_EQ(res.failedRanks(), std::vector<int>{1});
  EXPECT_EQ(res.ranks[1].status, RankStatus::kExited);
  EXPECT_EQ(res.ranks[1].exitCode, 7);
  EXPECT_TRUE(contains(res.summary(), "exited with code 7")) << res.summary();
}

TEST(RankLauncherFork, GtestFailureInsideTheChildReachesTheParent) {
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = 2;
  opts.deadline = 20s;
  LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
    if (ctx.rank == 1) {
      EXPECT_EQ(ctx.rank, 12345);
    }
  });
  EXPECT_EQ(res.failedRanks(), std::vector<int>{1});
  EXPECT_TRUE(anyContains(res.ranks[1].failures, "12345")) << res.summary();
  EXPECT_TRUE(anyContains(res.ranks[1].failures, "rank_launcher_test.cc")) << res.summary();
}

TEST(RankLauncherFork, MoreMessagesThanAPipeHolds) {
  constexpr int kMessages = 400;
  const std::string chunk(1000, 'x');
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = 3;
  opts.deadline = 20s;
  LaunchResult res = launchRanks(opts, [&chunk](RankContext& ctx) {
    for (int i = 0; i < kMessages; ++i) ctx.note("%d:%s", i, chunk.c_str());
  });
  EXPECT_RANKS_OK(res);
  for (const RankOutcome& out : res.ranks) {
    ASSERT_EQ(out.notes.size(), static_cast<size_t>(kMessages)) << "rank " << out.rank;
    EXPECT_EQ(out.notes.front(), "0:" + chunk);
    EXPECT_EQ(out.notes.back(), std::to_string(kMessages - 1) + ":" + chunk);
  }
}

}  // namespace
}  // namespace accl::test
