// ncclCommMemStats, ncclCommSuspend and ncclCommResume on the host backend (label mp), ranks as
// threads and as processes, 1..7 ranks:
//   FreshComm            a new comm holds only persistent memory; Total == Suspend + Persist
//   GrowsPerComm         the first all-reduce adds connection FIFOs (at least one region of the
//                        default layout per rank); a second comm and its traffic leave the first
//                        comm's figures unchanged
//   SuspendResumeCycles  3 times: Suspend releases exactly the releasable bytes, operations on the
//                        suspended comm fail, Resume then all-reduce / all-gather / broadcast are
//                        exact (closed form, guard elements) and the FIFOs are back
//   PeerResumesLate      rank 0 resumes and starts at once; the others resume later: exact results
//   Errors               bad flags, resume when not suspended, suspend twice, suspend with work
//                        queued in an open group, NULL value, bad stat, NULL comm; a suspended
//                        comm still splits (exact all-reduce on the child), finalizes, destroys
//   BusyOnAnotherThread  suspend while an all-reduce of the comm runs on another thread
//   InitInProgress       suspend of a nonblocking comm whose init has not finished
//   InitAllSuspendResume one thread drives 4 ranks (ncclCommInitAll, grouped all-reduce)
//   RankThatSkipsSuspendFails  misuse: one rank does not suspend; every rank fails, none hangs
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

// Bytes of one connection region with the host defaults (NCCL_BUFFSIZE 1 MiB of Simple slots,
// NCCL_LL_BUFFSIZE 256 KiB of LL slots, 192 bytes of control words).
constexpr uint64_t kDefaultRegionBytes = 192 + (1u << 20) + (256u << 10);
constexpr int kGuard = 4;
constexpr int32_t kGuardValue = -777;

struct MemStats {
  uint64_t suspend = 0, suspended = 0, persist = 0, total = 0;
  bool operator==(const MemStats&) const = default;
};

MemStats readStats(RankContext& ctx, ncclComm_t comm) {
  MemStats s;
  RANK_NCCL_OK(ctx, ncclCommMemStats(comm, ncclStatGpuMemSuspend, &s.suspend));
  RANK_NCCL_OK(ctx, ncclCommMemStats(comm, ncclStatGpuMemSuspended, &s.suspended));
  RANK_NCCL_OK(ctx, ncclCommMemStats(comm, ncclStatGpuMemPersist, &s.persist));
  RANK_NCCL_OK(ctx, ncclCommMemStats(comm, ncclStatGpuMemTotal, &s.total));
  ctx.check(s.total == s.suspend + s.persist, "rank %d: Total %llu != Suspend %llu + Persist %llu", ctx.rank,
            (unsigned long long)s.total, (unsigned long long)s.suspend, (unsigned long long)s.persist);
  return s;
}

std::string describe(const MemStats& s) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "Suspend %llu Suspended %llu Persist %llu Total %llu",
                (unsigned long long)s.suspend, (unsigned long long)s.suspended, (unsigned long long)s.persist,
                (unsigned long long)s.total);
  return buf;
}

// Buffers with kGuard guard elements after the payload; returns false on any mismatch.
bool checkBuffer(RankContext& ctx, const char* what, const std::vector<int32_t>& got,
                 const std::vector<int32_t>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!ctx.check(got[i] == want[i], "rank %d: %s[%zu] = %d, expected %d", ctx.rank, what, i, got[i], want[i]))
      return false;
  for (size_t i = want.size(); i < got.size(); ++i)
    if (!ctx.check(got[i] == kGuardValue, "rank %d: %s guard [%zu] overwritten (%d)", ctx.rank, what, i, got[i]))
      return false;
  return true;
}

// All-reduce (sum) of x_r[i] = r + 1 + i % 11: every rank gets n(n+1)/2 + n * (i % 11).
bool allReduceExact(RankContext& ctx, ncclComm_t comm, size_t count) {
  const int n = ctx.nranks;
  std::vector<int32_t> send(count), recv(count + kGuard, kGuardValue), want(count);
  for (size_t i = 0; i < count; ++i) {
    send[i] = ctx.rank + 1 + static_cast<int32_t>(i % 11);
    want[i] = n * (n + 1) / 2 + n * static_cast<int32_t>(i % 11);
  }
  if (!RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), recv.data(), count, ncclInt32, ncclSum, comm, nullptr)))
    return false;
  return checkBuffer(ctx, "allreduce", recv, want);
}

// All-gather of block_r[i] = 1000 r + i.
bool allGatherExact(RankContext& ctx, ncclComm_t comm, size_t count) {
  const int n = ctx.nranks;
  std::vector<int32_t> send(count), recv(count * n + kGuard, kGuardValue), want(count * n);
  for (size_t i = 0; i < count; ++i) send[i] = 1000 * ctx.rank + static_cast<int32_t>(i);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) want[r * count + i] = 1000 * r + static_cast<int32_t>(i);
  if (!RANK_NCCL_OK(ctx, ncclAllGather(send.data(), recv.data(), count, ncclInt32, comm, nullptr))) return false;
  return checkBuffer(ctx, "allgather", recv, want);
}

// Broadcast from the last rank of v[i] = 7 root - i.
bool broadcastExact(RankContext& ctx, ncclComm_t comm, size_t count) {
  const int root = ctx.nranks - 1;
  std::vector<int32_t> buf(count + kGuard, kGuardValue), want(count);
  for (size_t i = 0; i < count; ++i) want[i] = 7 * root - static_cast<int32_t>(i);
  if (ctx.rank == root) std::copy(want.begin(), want.end(), buf.begin());
  if (!RANK_NCCL_OK(ctx, ncclBroadcast(buf.data(), buf.data(), count, ncclInt32, root, comm, nullptr))) return false;
  return checkBuffer(ctx, "broadcast", buf, want);
}

// Every operation kind fails on a suspended comm with ncclInvalidUsage and a message that says so.
void expectOperationsRefused(RankContext& ctx, ncclComm_t comm) {
  int32_t x[4] = {1, 2, 3, 4}, y[4] = {};
  RANK_NCCL_EXPECT(ctx, ncclAllReduce(x, y, 4, ncclInt32, ncclSum, comm, nullptr), ncclInvalidUsage);
  ctx.check(lastErrorContains("communicator is suspended; call ncclCommResume"),
            "rank %d: all-reduce on a suspended comm: last error is '%s'", ctx.rank, ncclGetLastError(nullptr));
  RANK_NCCL_EXPECT(ctx, ncclBroadcast(x, y, 4, ncclInt32, 0, comm, nullptr), ncclInvalidUsage);
  RANK_NCCL_EXPECT(ctx, ncclSend(x, 4, ncclInt32, (ctx.rank + 1) % ctx.nranks, comm, nullptr), ncclInvalidUsage);
  ctx.check(lastErrorContains("suspended"), "rank %d: send on a suspended comm: last error is '%s'", ctx.rank,
            ncclGetLastError(nullptr));
  // In a group the error is latched and returned by the group end; nothing runs.
  RANK_NCCL_OK(ctx, ncclGroupStart());
  ncclResult_t inGroup = ncclAllGather(x, y, 1, ncclInt32, comm, nullptr);
  ncclResult_t end = ncclGroupEnd();
  ctx.check(inGroup == ncclInvalidUsage && end == ncclInvalidUsage,
            "rank %d: all-gather in a group on a suspended comm: call %d, group end %d", ctx.rank, inGroup, end);
}

class CommMemoryTest : public MpTest {};

TEST_P(CommMemoryTest, FreshComm) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    MemStats s = readStats(ctx, comm);
    ctx.check(s.suspended == 0, "rank %d: fresh comm reports Suspended %llu", ctx.rank,
              (unsigned long long)s.suspended);
    ctx.check(s.suspend == 0, "rank %d: fresh comm holds %llu releasable bytes (no connection yet)", ctx.rank,
              (unsigned long long)s.suspend);
    ctx.check(s.persist > 0, "rank %d: fresh comm reports no persistent memory", ctx.rank);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommMemoryTest, GrowsPerComm) {
  LaunchResult res = launchRanks(options(2), [](RankContext& ctx) {
    ncclComm_t a, b;
    if (!initComm(ctx, &a)) return;
    b = nullptr;
    ncclResult_t rb = ncclCommInitRank(&b, ctx.nranks, ctx.ids()[1], ctx.rank);
    if (b) ctx.registerComm(b);
    if (!RANK_NCCL_OK(ctx, rb)) return;
    const MemStats a0 = readStats(ctx, a), b0 = readStats(ctx, b);
    allReduceExact(ctx, a, 1000);
    const MemStats a1 = readStats(ctx, a);
    // One rank has no connection and no scratch to grow, and a lone call takes no plan
    // (core/engine/lone_coll.h): its Total stays.
    if (ctx.nranks > 1)
      ctx.check(a1.total > a0.total, "rank %d: Total did not grow with the first all-reduce: %s -> %s", ctx.rank,
                describe(a0).c_str(), describe(a1).c_str());
    ctx.check(a1.persist == a0.persist, "rank %d: Persist changed with an all-reduce: %s -> %s", ctx.rank,
              describe(a0).c_str(), describe(a1).c_str());
    if (ctx.nranks > 1)
      ctx.check(a1.suspend >= kDefaultRegionBytes, "rank %d: after an all-reduce Suspend = %llu < one region (%llu)",
                ctx.rank, (unsigned long long)a1.suspend, (unsigned long long)kDefaultRegionBytes);
    // The second comm: untouched by the first one's traffic, and its own traffic leaves the first alone.
    ctx.check(readStats(ctx, b) == b0, "rank %d: comm b's stats changed with comm a's all-reduce", ctx.rank);
    allReduceExact(ctx, b, 1000);
    allGatherExact(ctx, b, 5);
    const MemStats b1 = readStats(ctx, b);
    if (ctx.nranks > 1)
      ctx.check(b1.total > b0.total, "rank %d: comm b's Total did not grow: %s -> %s", ctx.rank,
                describe(b0).c_str(), describe(b1).c_str());
    const MemStats a2 = readStats(ctx, a);
    ctx.check(a2 == a1, "rank %d: comm a's stats changed with comm b's traffic: %s -> %s", ctx.rank,
              describe(a1).c_str(), describe(a2).c_str());
    if (ctx.rank == 0) ctx.note("%d ranks, rank 0: fresh %s; after one all-reduce %s", ctx.nranks,
                                describe(a0).c_str(), describe(a1).c_str());
    RANK_NCCL_OK(ctx, ctx.destroyComm(b));
    RANK_NCCL_OK(ctx, ctx.destroyComm(a));
  });
  EXPECT_RANKS_OK(res);
  if (res.ok())
    for (const std::string& note : res.ranks[0].notes) std::printf("[ memory ] %s\n", note.c_str());
}

TEST_P(CommMemoryTest, SuspendResumeCycles) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    for (int cycle = 0; cycle < 3 && !ctx.failed(); ++cycle) {
      // Small (one round for 3+ ranks) and large (ring) all-reduces: connections and scratch.
      allReduceExact(ctx, comm, 13);
      allReduceExact(ctx, comm, 70001);
      const MemStats before = readStats(ctx, comm);
      if (ctx.nranks > 1)
        ctx.check(before.suspend >= kDefaultRegionBytes, "rank %d cycle %d: before suspend %s", ctx.rank, cycle,
                  describe(before).c_str());
      if (!RANK_NCCL_OK(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM))) break;
      const MemStats after = readStats(ctx, comm);
      ctx.check(after.suspended == 1 && after.suspend == 0 && after.persist == before.persist &&
                    after.total == before.total - before.suspend,
                "rank %d cycle %d: suspend: %s -> %s", ctx.rank, cycle, describe(before).c_str(),
                describe(after).c_str());
      if (ctx.rank == 0 && cycle == 0)
        ctx.note("%d ranks, rank 0: before suspend %s; suspended %s", ctx.nranks, describe(before).c_str(),
                 describe(after).c_str());
      expectOperationsRefused(ctx, comm);
      ctx.check(readStats(ctx, comm) == after, "rank %d: refused operations changed the stats", ctx.rank);
      if (!RANK_NCCL_OK(ctx, ncclCommResume(comm))) break;
      ctx.check(readStats(ctx, comm).suspended == 0, "rank %d: Suspended still 1 after resume", ctx.rank);
      allReduceExact(ctx, comm, 70001);
      allGatherExact(ctx, comm, 1);
      allGatherExact(ctx, comm, 4099);
      broadcastExact(ctx, comm, 0);
      broadcastExact(ctx, comm, 33333);
      allReduceExact(ctx, comm, 13);
      const MemStats back = readStats(ctx, comm);
      if (ctx.nranks > 1)
        ctx.check(back.suspend >= kDefaultRegionBytes && back.persist == before.persist,
                  "rank %d cycle %d: after resume and traffic %s (before suspend %s)", ctx.rank, cycle,
                  describe(back).c_str(), describe(before).c_str());
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
  if (res.ok())
    for (const std::string& note : res.ranks[0].notes) std::printf("[ memory ] %s\n", note.c_str());
}

TEST_P(CommMemoryTest, PeerResumesLate) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    allReduceExact(ctx, comm, 999);
    RANK_NCCL_OK(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
    if (ctx.rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    RANK_NCCL_OK(ctx, ncclCommResume(comm));
    allReduceExact(ctx, comm, 999);
    allReduceExact(ctx, comm, 5);
    broadcastExact(ctx, comm, 77);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(CommMemoryTest, Errors) {
  // ncclGetLastError is process-wide: with several rank threads another rank's error may replace
  // this rank's text before it reads it, so the texts are checked where each rank owns its process.
  const bool ownsLastError = mode() == LaunchMode::kFork || nranks() == 1;
  LaunchResult res = launchRanks(options(), [ownsLastError](RankContext& ctx) {
    auto lastErrorContains = [ownsLastError](const char* needle) {
      return !ownsLastError || accl::test::lastErrorContains(needle);
    };
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    uint64_t v = 12345;
    RANK_NCCL_EXPECT(ctx, ncclCommSuspend(comm, 0), ncclInvalidArgument);
    ctx.check(lastErrorContains("flags = 0"), "rank %d: last error is '%s'", ctx.rank, ncclGetLastError(nullptr));
    RANK_NCCL_EXPECT(ctx, ncclCommSuspend(comm, 2), ncclInvalidArgument);
    RANK_NCCL_EXPECT(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM | 4), ncclInvalidArgument);
    RANK_NCCL_EXPECT(ctx, ncclCommSuspend(nullptr, NCCL_SUSPEND_MEM), ncclInvalidArgument);
    RANK_NCCL_EXPECT(ctx, ncclCommResume(nullptr), ncclInvalidArgument);
    RANK_NCCL_EXPECT(ctx, ncclCommMemStats(nullptr, ncclStatGpuMemTotal, &v), ncclInvalidArgument);
    RANK_NCCL_EXPECT(ctx, ncclCommResume(comm), ncclInvalidUsage);
    ctx.check(lastErrorContains("not suspended"), "rank %d: last error is '%s'", ctx.rank, ncclGetLastError(nullptr));
    RANK_NCCL_EXPECT(ctx, ncclCommMemStats(comm, ncclStatGpuMemTotal, nullptr), ncclInvalidArgument);
    RANK_NCCL_EXPECT(ctx, ncclCommMemStats(comm, static_cast<ncclCommMemStat_t>(4), &v), ncclInvalidArgument);
    ctx.check(lastErrorContains("stat = 4"), "rank %d: last error is '%s'", ctx.rank, ncclGetLastError(nullptr));
    RANK_NCCL_EXPECT(ctx, ncclCommMemStats(comm, static_cast<ncclCommMemStat_t>(-1), &v), ncclInvalidArgument);
    ctx.check(v == 12345, "rank %d: a failed ncclCommMemStats wrote %llu", ctx.rank, (unsigned long long)v);

    // Work of this comm queued in the open group: refused; the group then runs normally.
    std::vector<int32_t> x(8, ctx.rank + 1), y(8, 0);
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_OK(ctx, ncclAllReduce(x.data(), y.data(), 8, ncclInt32, ncclSum, comm, nullptr));
    RANK_NCCL_EXPECT(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM), ncclInvalidUsage);
    ctx.check(lastErrorContains("open group"), "rank %d: last error is '%s'", ctx.rank, ncclGetLastError(nullptr));
    RANK_NCCL_OK(ctx, ncclGroupEnd());
    ctx.check(y[7] == ctx.nranks * (ctx.nranks + 1) / 2, "rank %d: grouped all-reduce gave %d", ctx.rank, y[7]);
    ctx.check(readStats(ctx, comm).suspended == 0, "rank %d: the refused suspend suspended", ctx.rank);

    RANK_NCCL_OK(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
    RANK_NCCL_EXPECT(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM), ncclInvalidUsage);
    ctx.check(lastErrorContains("already suspended"), "rank %d: last error is '%s'", ctx.rank,
              ncclGetLastError(nullptr));
    RANK_NCCL_OK(ctx, ncclCommResume(comm));
    RANK_NCCL_EXPECT(ctx, ncclCommResume(comm), ncclInvalidUsage);
    allReduceExact(ctx, comm, 3);

    // A suspended comm can still be split (the child has its own connections), finalized and
    // destroyed.
    RANK_NCCL_OK(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
    ncclComm_t child = nullptr;
    if (RANK_NCCL_OK(ctx, ncclCommSplit(comm, 0, ctx.rank, &child, nullptr)) && child != nullptr) {
      allReduceExact(ctx, child, 300);
      RANK_NCCL_OK(ctx, ncclCommDestroy(child));
    }
    RANK_NCCL_OK(ctx, ncclCommFinalize(comm));
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// Rank 0 starts an all-reduce on a helper thread; its peers join 1.5 s later, so for that long
// the operation is running, and rank 0's suspend from the main thread must be refused.
TEST_P(CommMemoryTest, BusyOnAnotherThread) {
  if (nranks() < 2) GTEST_SKIP() << "needs a peer to wait for";
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    if (ctx.rank == 0) {
      bool exact = false;
      std::thread op([&] { exact = allReduceExact(ctx, comm, 4097); });
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      RANK_NCCL_EXPECT(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM), ncclInvalidUsage);
      ctx.check(lastErrorContains("running on another thread"), "rank %d: last error is '%s'", ctx.rank,
                ncclGetLastError(nullptr));
      op.join();
      ctx.check(exact, "rank 0: the all-reduce running during the refused suspend was wrong");
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      allReduceExact(ctx, comm, 4097);
    }
    RANK_NCCL_OK(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
    RANK_NCCL_OK(ctx, ncclCommResume(comm));
    allReduceExact(ctx, comm, 4097);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// Rank 0 starts a nonblocking init; its peers join 500 ms later, so the init is still running.
TEST_P(CommMemoryTest, InitInProgress) {
  if (nranks() < 2) GTEST_SKIP() << "needs a peer to wait for";
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    if (ctx.rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ncclComm_t comm = nullptr;
    ncclResult_t r = ncclCommInitRankConfig(&comm, ctx.nranks, ctx.id(), ctx.rank, &config);
    if (comm) ctx.registerComm(comm);
    if (!ctx.check(comm != nullptr && (r == ncclSuccess || r == ncclInProgress), "rank %d: init returned %d",
                   ctx.rank, r))
      return;
    if (ctx.rank == 0) {
      uint64_t v = 0;
      RANK_NCCL_EXPECT(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM), ncclInvalidUsage);
      ctx.check(lastErrorContains("in progress"), "rank 0: last error is '%s'", ncclGetLastError(nullptr));
      RANK_NCCL_EXPECT(ctx, ncclCommMemStats(comm, ncclStatGpuMemTotal, &v), ncclInvalidArgument);
    }
    if (!ctx.check(waitForAsync(comm, std::chrono::seconds(30)) == ncclSuccess, "rank %d: init failed", ctx.rank))
      return;
    allReduceExact(ctx, comm, 100);
    RANK_NCCL_OK(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
    RANK_NCCL_OK(ctx, ncclCommResume(comm));
    allReduceExact(ctx, comm, 100);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// Misuse: rank 1 skips the suspend its peers make. Its next all-reduce meets connections its
// peers closed and fails; it aborts, and the peers, waiting in the reconnect handshake for it,
// fail too. Nobody returns wrong data or hangs.
TEST_P(CommMemoryTest, RankThatSkipsSuspendFails) {
  if (nranks() < 2 || nranks() > 3) GTEST_SKIP() << "runs with 2 and 3 ranks";
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    allReduceExact(ctx, comm, 5000);
    if (ctx.rank != 1) {
      RANK_NCCL_OK(ctx, ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
      RANK_NCCL_OK(ctx, ncclCommResume(comm));
    }
    std::vector<int32_t> x(5000, 1), y(5000, 0);
    ncclResult_t r = ncclAllReduce(x.data(), y.data(), 5000, ncclInt32, ncclSum, comm, nullptr);
    ctx.check(r != ncclSuccess, "rank %d: all-reduce after a suspend that rank 1 skipped succeeded", ctx.rank);
    if (ctx.rank == 1) {
      RANK_NCCL_OK(ctx, ctx.abortComm(comm));
    } else {
      RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    }
  });
  EXPECT_RANKS_OK(res);
}

// One thread drives every rank (ncclCommInitAll): Suspend and Resume need no peer, so they are
// called rank by rank; the grouped all-reduce afterwards reconnects all ranks at once.
TEST(CommMemorySingleThread, InitAllSuspendResume) {
  constexpr int n = 4;
  constexpr size_t count = 3001;
  ncclComm_t comms[n] = {};
  ASSERT_EQ(ncclCommInitAll(comms, n, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<std::vector<int32_t>> send(n, std::vector<int32_t>(count)), recv(n, std::vector<int32_t>(count));
  auto groupedAllReduce = [&] {
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) send[r][i] = r * 3 + static_cast<int32_t>(i % 5), recv[r][i] = -1;
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < n; ++r)
      ASSERT_EQ(ncclAllReduce(send[r].data(), recv[r].data(), count, ncclInt32, ncclSum, comms[r], nullptr),
                ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(recv[r][i], 3 * n * (n - 1) / 2 + n * static_cast<int32_t>(i % 5)) << "rank " << r << " i " << i;
  };
  for (int cycle = 0; cycle < 3; ++cycle) {
    groupedAllReduce();
    for (int r = 0; r < n; ++r) {
      uint64_t releasable = 0;
      ASSERT_EQ(ncclCommMemStats(comms[r], ncclStatGpuMemSuspend, &releasable), ncclSuccess);
      EXPECT_GE(releasable, kDefaultRegionBytes) << "rank " << r;
      ASSERT_EQ(ncclCommSuspend(comms[r], NCCL_SUSPEND_MEM), ncclSuccess) << ncclGetLastError(nullptr);
      ASSERT_EQ(ncclCommMemStats(comms[r], ncclStatGpuMemSuspend, &releasable), ncclSuccess);
      EXPECT_EQ(releasable, 0u) << "rank " << r;
    }
    for (int r = 0; r < n; ++r) ASSERT_EQ(ncclCommResume(comms[r]), ncclSuccess) << ncclGetLastError(nullptr);
  }
  groupedAllReduce();
  for (int r = 0; r < n; ++r) EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
}

INSTANTIATE_TEST_SUITE_P(, CommMemoryTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork),
                                          testing::Values(1, 2, 3, 4, 7)),
                         mpParamName);

}  // namespace
}  // namespace accl::test
