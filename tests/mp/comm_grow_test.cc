// ncclCommGetUniqueId and ncclCommGrow through the public API, ranks as threads and as forked
// processes. The launcher starts the final number of ranks; ranks below the old size build the
// old communicator first, the root makes the grow id and posts it in a shared-memory mailbox
// (MAP_SHARED, so forked joiners see it), and the joiners wait for it there. Every grown
// communicator is checked with collectives whose results are closed forms of the rank count,
// and the old communicator is checked to still work.
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "mp/mp_test_util.h"
#include "support/scoped_env.h"

namespace accl::test {
namespace {

// ---- The id mailbox --------------------------------------------------------------------------

// Slots of (ready flag, id) in one anonymous shared mapping made before the launch.
class IdMailbox {
 public:
  explicit IdMailbox(int slots) : slots_(slots) {
    void* p = mmap(nullptr, bytes(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    slot_ = static_cast<Slot*>(p);
    for (int i = 0; i < slots_; ++i) new (&slot_[i]) Slot();
  }
  ~IdMailbox() {
    if (slot_) munmap(slot_, bytes());
  }
  IdMailbox(const IdMailbox&) = delete;
  IdMailbox& operator=(const IdMailbox&) = delete;

  bool ok() const { return slot_ != nullptr; }

  void post(int slot, const ncclUniqueId& id) {
    std::memcpy(&slot_[slot].id, &id, sizeof(id));
    slot_[slot].ready.store(1, std::memory_order_release);
  }

  // Waits for slot to be posted; false (and a recorded failure) after the timeout.
  bool wait(RankContext& ctx, int slot, ncclUniqueId* id, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (slot_[slot].ready.load(std::memory_order_acquire) == 0) {
      if (std::chrono::steady_clock::now() >= end) {
        ctx.fail("rank %d: the grow id of slot %d was never posted", ctx.rank, slot);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::memcpy(id, &slot_[slot].id, sizeof(*id));
    return true;
  }

 private:
  struct Slot {
    std::atomic<int> ready{0};
    ncclUniqueId id{};
  };
  static_assert(std::atomic<int>::is_always_lock_free, "the mailbox flag must work across processes");
  size_t bytes() const { return sizeof(Slot) * static_cast<size_t>(slots_); }

  int slots_;
  Slot* slot_ = nullptr;
};

// ---- Closed-form collective checks ------------------------------------------------------------

constexpr int kGuard = 3;              // elements after every receive buffer that must stay untouched
constexpr int32_t kSentinel = -424242;

bool guardsIntact(RankContext& ctx, const std::vector<int32_t>& buf, size_t used, const char* what) {
  for (size_t i = used; i < buf.size(); ++i)
    if (!ctx.check(buf[i] == kSentinel, "rank %d: %s: guard element %zu overwritten with %d", ctx.rank, what,
                   i - used, buf[i]))
      return false;
  return true;
}

// Sum all-reduce of 37 (prime) int32s: rank r sends (r+1)*(i+1), everybody gets (i+1)*n(n+1)/2.
void checkAllReduce(RankContext& ctx, ncclComm_t comm, int n, int r, const char* what) {
  constexpr int kCount = 37;
  std::vector<int32_t> send(kCount), recv(kCount + kGuard, kSentinel);
  for (int i = 0; i < kCount; ++i) send[i] = (r + 1) * (i + 1);
  if (!RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), recv.data(), kCount, ncclInt32, ncclSum, comm, nullptr))) return;
  for (int i = 0; i < kCount; ++i) {
    const int32_t want = (i + 1) * n * (n + 1) / 2;
    if (!ctx.check(recv[i] == want, "rank %d: %s: all-reduce element %d = %d, expected %d", r, what, i, recv[i],
                   want))
      return;
  }
  guardsIntact(ctx, recv, kCount, what);
}

// All-gather of 7 int32s per rank: slice p holds p*1000 + i.
void checkAllGather(RankContext& ctx, ncclComm_t comm, int n, int r, const char* what) {
  constexpr int kCount = 7;
  std::vector<int32_t> send(kCount), recv(static_cast<size_t>(kCount) * n + kGuard, kSentinel);
  for (int i = 0; i < kCount; ++i) send[i] = r * 1000 + i;
  if (!RANK_NCCL_OK(ctx, ncclAllGather(send.data(), recv.data(), kCount, ncclInt32, comm, nullptr))) return;
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < kCount; ++i) {
      const int32_t got = recv[static_cast<size_t>(p) * kCount + i], want = p * 1000 + i;
      if (!ctx.check(got == want, "rank %d: %s: all-gather slice %d element %d = %d, expected %d", r, what, p, i,
                     got, want))
        return;
    }
  guardsIntact(ctx, recv, static_cast<size_t>(kCount) * n, what);
}

// Broadcast of 11 int32s from `root`: root*100 + 3i everywhere.
void checkBroadcast(RankContext& ctx, ncclComm_t comm, int root, int r, const char* what) {
  constexpr int kCount = 11;
  std::vector<int32_t> buf(kCount + kGuard, kSentinel);
  for (int i = 0; i < kCount; ++i) buf[i] = r == root ? root * 100 + 3 * i : -1;
  if (!RANK_NCCL_OK(ctx, ncclBroadcast(buf.data(), buf.data(), kCount, ncclInt32, root, comm, nullptr))) return;
  for (int i = 0; i < kCount; ++i) {
    const int32_t want = root * 100 + 3 * i;
    if (!ctx.check(buf[i] == want, "rank %d: %s: broadcast from %d element %d = %d, expected %d", r, what, root, i,
                   buf[i], want))
      return;
  }
  guardsIntact(ctx, buf, kCount, what);
}

// ---- Grow driver ------------------------------------------------------------------------------

// Builds this rank's part of the old communicator (ranks below oldN) from ctx.id().
bool initOld(RankContext& ctx, int oldN, ncclComm_t* comm) {
  *comm = nullptr;
  if (ctx.rank >= oldN) return true;
  const ncclResult_t res = ncclCommInitRank(comm, oldN, ctx.id(), ctx.rank);
  if (*comm) ctx.registerComm(*comm);
  return RANK_NCCL_OK(ctx, res);
}

// One grow from oldN to newN ranks. Existing ranks pass `comm`; `root` makes the id and posts it
// in `slot`; joiners (oldN <= rank < newN) wait for it. Ranks at or above newN do nothing. On
// success *grown is this rank's grown communicator, checked for size and rank.
bool growRank(RankContext& ctx, IdMailbox& box, int slot, ncclComm_t comm, int oldN, int newN, int root,
              ncclComm_t* grown, ncclConfig_t* config = nullptr) {
  const int r = ctx.rank;
  *grown = nullptr;
  if (r >= newN) return true;
  ncclResult_t res;
  if (r < oldN) {
    ncclUniqueId id;
    const ncclUniqueId* pass = nullptr;
    if (r == root) {
      if (!RANK_NCCL_OK(ctx, ncclCommGetUniqueId(comm, &id))) return false;
      box.post(slot, id);
      pass = &id;
    }
    res = ncclCommGrow(comm, newN, pass, -1, grown, config);
  } else {
    ncclUniqueId id;
    if (!box.wait(ctx, slot, &id)) return false;
    res = ncclCommGrow(nullptr, newN, &id, r, grown, config);
  }
  if (*grown) ctx.registerComm(*grown);
  const bool ok = config && !config->blocking ? RANK_NCCL_FINISH(ctx, res, *grown)
                                              : checkResult(ctx, res, ncclSuccess, "ncclCommGrow", __FILE__, __LINE__);
  if (!ok) return false;
  checkCommIdentity(ctx, *grown, newN, r, "grown comm");
  return !ctx.failed();
}

void checkCollectives(RankContext& ctx, ncclComm_t comm, int n, const char* what) {
  checkAllReduce(ctx, comm, n, ctx.rank, what);
  checkAllGather(ctx, comm, n, ctx.rank, what);
  checkBroadcast(ctx, comm, n - 1, ctx.rank, what);  // the last rank: a joiner on a grown comm
  checkBroadcast(ctx, comm, 0, ctx.rank, what);
}

// ---- Grow shapes: 1->2, 2->4, 3->5 ------------------------------------------------------------

struct GrowShape {
  int oldN, newN;
};

using GrowParam = std::tuple<LaunchMode, GrowShape>;

std::string growParamName(const testing::TestParamInfo<GrowParam>& info) {
  const GrowShape s = std::get<1>(info.param);
  return std::string(std::get<0>(info.param) == LaunchMode::kFork ? "Fork" : "Thread") + "_" +
         std::to_string(s.oldN) + "to" + std::to_string(s.newN);
}

class CommGrowTest : public testing::TestWithParam<GrowParam> {};

TEST_P(CommGrowTest, GrownCommRunsCollectivesAndTheOldOneStillWorks) {
  const GrowShape shape = std::get<1>(GetParam());
  IdMailbox box(1);
  ASSERT_TRUE(box.ok());
  LaunchOptions opts;
  opts.mode = std::get<0>(GetParam());
  opts.nranks = shape.newN;
  opts.deadline = mpDeadline(shape.newN);
  opts.ids = makeUniqueIds(1);
  LaunchResult res = launchRanks(opts, [&box, shape](RankContext& ctx) {
    ncclComm_t comm, grown;
    if (!initOld(ctx, shape.oldN, &comm)) return;
    // The root is the last existing rank: any existing rank may make the id.
    if (growRank(ctx, box, 0, comm, shape.oldN, shape.newN, shape.oldN - 1, &grown)) {
      checkCollectives(ctx, grown, shape.newN, "grown comm");
      RANK_NCCL_OK(ctx, ctx.destroyComm(grown));
    }
    if (comm) {
      checkAllReduce(ctx, comm, shape.oldN, ctx.rank, "old comm after the grow");
      checkBroadcast(ctx, comm, shape.oldN - 1, ctx.rank, "old comm after the grow");
      RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    }
  });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, CommGrowTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork),
                                          testing::Values(GrowShape{1, 2}, GrowShape{2, 4}, GrowShape{3, 5})),
                         growParamName);

// ---- Sequences, nonblocking, id rules, failures -----------------------------------------------

class CommGrowModeTest : public testing::TestWithParam<LaunchMode> {
 protected:
  LaunchOptions options(int nranks) const {
    LaunchOptions opts;
    opts.mode = GetParam();
    opts.nranks = nranks;
    opts.deadline = mpDeadline(nranks);
    opts.ids = makeUniqueIds(1);
    return opts;
  }
};

// 2 -> 3 -> 5; the second grow's root is rank 2, which joined in the first.
TEST_P(CommGrowModeTest, GrowTwiceInARow) {
  IdMailbox box(2);
  ASSERT_TRUE(box.ok());
  LaunchResult res = launchRanks(options(5), [&box](RankContext& ctx) {
    ncclComm_t comm, three = nullptr, five;
    if (!initOld(ctx, 2, &comm)) return;
    if (ctx.rank < 3 && !growRank(ctx, box, 0, comm, 2, 3, 0, &three)) return;
    if (three) checkAllReduce(ctx, three, 3, ctx.rank, "3-rank comm");
    if (growRank(ctx, box, 1, three, 3, 5, 2, &five)) {
      checkCollectives(ctx, five, 5, "5-rank comm");
      RANK_NCCL_OK(ctx, ctx.destroyComm(five));
    }
    if (three) {
      checkAllGather(ctx, three, 3, ctx.rank, "3-rank comm after growing it");
      RANK_NCCL_OK(ctx, ctx.destroyComm(three));
    }
    if (comm) {
      checkAllReduce(ctx, comm, 2, ctx.rank, "2-rank comm after two grows");
      RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    }
  });
  EXPECT_RANKS_OK(res);
}

// A nonblocking config: ncclCommGrow returns ncclInProgress (or ncclSuccess) and the grown comm
// becomes ready in the background, on existing and joining ranks alike.
TEST_P(CommGrowModeTest, NonblockingGrow) {
  IdMailbox box(1);
  ASSERT_TRUE(box.ok());
  LaunchResult res = launchRanks(options(4), [&box](RankContext& ctx) {
    ncclComm_t comm, grown;
    if (!initOld(ctx, 2, &comm)) return;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.commName = "mp-grow-nonblocking";
    if (growRank(ctx, box, 0, comm, 2, 4, 0, &grown, &config)) {
      checkAllReduce(ctx, grown, 4, ctx.rank, "nonblocking grown comm");
      RANK_NCCL_OK(ctx, ctx.destroyComm(grown));
    }
    if (comm) RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// One id at a time, each id once: a second ncclCommGetUniqueId before the grow is
// ncclInvalidUsage; after the grow a new id can be made, and the spent one is refused.
TEST_P(CommGrowModeTest, OneIdAtATimeAndEachIdOnce) {
  IdMailbox box(1);
  ASSERT_TRUE(box.ok());
  const bool forked = GetParam() == LaunchMode::kFork;
  LaunchResult res = launchRanks(options(2), [&box, forked](RankContext& ctx) {
    ncclComm_t comm, grown = nullptr;
    if (!initOld(ctx, 1, &comm)) return;
    ncclUniqueId id;
    if (ctx.rank == 0) {
      if (!RANK_NCCL_OK(ctx, ncclCommGetUniqueId(comm, &id))) return;
      ncclUniqueId second;
      RANK_NCCL_EXPECT(ctx, ncclCommGetUniqueId(comm, &second), ncclInvalidUsage);
      ctx.check(lastErrorContains("ncclCommGetUniqueId") && lastErrorContains("not been used"),
                "second ncclCommGetUniqueId: unexpected message: %s", ncclGetLastError(nullptr));
      box.post(0, id);
      if (!RANK_NCCL_OK(ctx, ncclCommGrow(comm, 2, &id, -1, &grown, nullptr))) return;
    } else {
      if (!box.wait(ctx, 0, &id)) return;
      if (!RANK_NCCL_OK(ctx, ncclCommGrow(nullptr, 2, &id, 1, &grown, nullptr))) return;
    }
    ctx.registerComm(grown);
    checkCollectives(ctx, grown, 2, "grown comm");
    ncclComm_t again = reinterpret_cast<ncclComm_t>(0x1);
    if (ctx.rank == 0) {
      // The spent id on the root: refused at once.
      RANK_NCCL_EXPECT(ctx, ncclCommGrow(comm, 2, &id, -1, &again, nullptr), ncclInvalidUsage);
      ctx.check(lastErrorContains("already used"), "reused id on the root: unexpected message: %s",
                ncclGetLastError(nullptr));
      ctx.check(again == nullptr, "a refused ncclCommGrow left newcomm = %p", static_cast<void*>(again));
      // The grow consumed the id: a new one can be made now.
      ncclUniqueId next;
      RANK_NCCL_OK(ctx, ncclCommGetUniqueId(comm, &next));
      ctx.check(std::memcmp(&next, &id, sizeof(id)) != 0, "ncclCommGetUniqueId returned the spent id again");
    } else if (!forked) {
      // A joiner in the root's process knows the id is spent. (A joiner in another process cannot
      // tell; its bootstrap would time out at the root that is gone.)
      RANK_NCCL_EXPECT(ctx, ncclCommGrow(nullptr, 2, &id, 1, &again, nullptr), ncclInvalidUsage);
      ctx.check(lastErrorContains("already used"), "reused id on a joiner: unexpected message: %s",
                ncclGetLastError(nullptr));
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(grown));
    if (comm) RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// The root passing NULL fails every existing rank at the rendezvous (no hang) and leaves the id
// usable; a non-root passing the id fails alone; then the same id grows the comm.
TEST_P(CommGrowModeTest, NullIdOnTheRootFailsEveryExistingRankThenARetryWorks) {
  IdMailbox box(1);
  ASSERT_TRUE(box.ok());
  LaunchResult res = launchRanks(options(3), [&box](RankContext& ctx) {
    const int r = ctx.rank;
    ncclComm_t comm, grown = nullptr;
    if (!initOld(ctx, 2, &comm)) return;
    ncclUniqueId id;
    if (r < 2) {
      if (r == 0 && !RANK_NCCL_OK(ctx, ncclCommGetUniqueId(comm, &id))) return;
      const auto start = std::chrono::steady_clock::now();
      ncclComm_t failed = nullptr;
      RANK_NCCL_EXPECT(ctx, ncclCommGrow(comm, 3, nullptr, -1, &failed, nullptr), ncclInvalidArgument);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ctx.check(lastErrorContains("no existing rank passed the grow id") && lastErrorContains("rank 0 made one"),
                "rank %d: NULL id on the root: unexpected message: %s", r, ncclGetLastError(nullptr));
      ctx.check(secs < 10, "rank %d: the failed grow took %.1f s (should fail at the rendezvous)", r, secs);
      if (failed) ncclCommDestroy(failed);
      if (r == 0) box.post(0, id);
    }
    if (r == 1) {
      // A non-root passing the root's id fails at once, without a rendezvous.
      if (!box.wait(ctx, 0, &id)) return;
      ncclComm_t failed = nullptr;
      RANK_NCCL_EXPECT(ctx, ncclCommGrow(comm, 3, &id, -1, &failed, nullptr), ncclInvalidArgument);
      ctx.check(lastErrorContains("made none with ncclCommGetUniqueId"),
                "non-root passing an id: unexpected message: %s", ncclGetLastError(nullptr));
      ctx.check(failed == nullptr, "a refused ncclCommGrow left newcomm = %p", static_cast<void*>(failed));
    }
    if (r < 2) {
      if (RANK_NCCL_OK(ctx, ncclCommGrow(comm, 3, r == 0 ? &id : nullptr, -1, &grown, nullptr)))
        ctx.registerComm(grown);
    } else {
      if (!box.wait(ctx, 0, &id)) return;
      if (RANK_NCCL_OK(ctx, ncclCommGrow(nullptr, 3, &id, 2, &grown, nullptr))) ctx.registerComm(grown);
    }
    if (grown) {
      checkCollectives(ctx, grown, 3, "grown comm after a retry");
      RANK_NCCL_OK(ctx, ctx.destroyComm(grown));
    }
    if (comm) RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// A joiner that never arrives: the others fail within the bootstrap timeout, naming it.
TEST_P(CommGrowModeTest, MissingJoinerFailsWithinTheBootstrapTimeout) {
  IdMailbox box(2);  // slot 0: the id; slot 1: rank 1 has its answer
  ASSERT_TRUE(box.ok());
  test::ScopedEnvVar timeout("ACCL_BOOTSTRAP_TIMEOUT_MS", "2000");
  LaunchOptions opts = options(3);
  opts.skipRanks = {2};
  // ncclGetLastError is process-wide: in thread mode the other rank's failure (the same missing
  // rank, seen from the bootstrap) may be the text this rank reads.
  const bool ownsLastError = GetParam() == LaunchMode::kFork;
  LaunchResult res = launchRanks(opts, [&box, ownsLastError](RankContext& ctx) {
    ncclComm_t comm, grown = nullptr;
    if (!initOld(ctx, 1, &comm)) return;
    ncclUniqueId id;
    const auto start = std::chrono::steady_clock::now();
    ncclResult_t got;
    if (ctx.rank == 0) {
      if (!RANK_NCCL_OK(ctx, ncclCommGetUniqueId(comm, &id))) return;
      box.post(0, id);
      got = ncclCommGrow(comm, 3, &id, -1, &grown, nullptr);
    } else {
      if (!box.wait(ctx, 0, &id)) return;
      got = ncclCommGrow(nullptr, 3, &id, 1, &grown, nullptr);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ctx.check(got != ncclSuccess && got != ncclInProgress, "rank %d: the grow without rank 2 returned %d (%s)",
              ctx.rank, got, ncclGetErrorString(got));
    ctx.check((!ownsLastError || lastErrorContains("ncclCommGrow")) && lastErrorContains("missing: 2"),
              "rank %d: missing joiner: unexpected message: %s", ctx.rank, ncclGetLastError(nullptr));
    ctx.check(secs < 15, "rank %d: the grow took %.1f s to fail with a 2 s bootstrap timeout", ctx.rank, secs);
    // The bootstrap root of the grow id is a thread of rank 0's process: rank 0 stays until rank
    // 1 has heard the root's explanation (a forked rank 0 that exits takes the root with it).
    if (ctx.rank == 1) box.post(1, id);
    if (ctx.rank == 0) box.wait(ctx, 1, &id);
    if (grown) ncclCommDestroy(grown);
    if (comm) RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, CommGrowModeTest, testing::Values(LaunchMode::kThreads, LaunchMode::kFork),
                         [](const testing::TestParamInfo<LaunchMode>& info) {
                           return std::string(info.param == LaunchMode::kFork ? "Fork" : "Thread");
                         });

// ---- Argument checks on one rank ----------------------------------------------------------------

bool lastErrorHas(const char* a, const char* b = nullptr) {
  return lastErrorContains(a) && (b == nullptr || lastErrorContains(b));
}

#define EXPECT_GROW_ERROR(call, code, text1, text2)                                 \
  do {                                                                              \
    EXPECT_EQ((call), (code)) << #call << ": " << ncclGetLastError(nullptr);        \
    EXPECT_TRUE(lastErrorHas(text1, text2)) << #call << ": " << ncclGetLastError(nullptr); \
  } while (0)

// Every argument rule, checked on a 1-rank communicator without any peer: each misuse fails at
// once with its code and a message naming the call and the value, and none consumes the id.
TEST(CommGrowArgsTest, EveryMisuseFailsAtOnceAndKeepsTheId) {
  ncclUniqueId commId, plainId, growId;
  ASSERT_EQ(ncclGetUniqueId(&commId), ncclSuccess);
  ASSERT_EQ(ncclGetUniqueId(&plainId), ncclSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 1, commId, 0), ncclSuccess) << ncclGetLastError(nullptr);

  EXPECT_GROW_ERROR(ncclCommGetUniqueId(comm, nullptr), ncclInvalidArgument, "ncclCommGetUniqueId", "NULL");
  EXPECT_NE(ncclCommGetUniqueId(nullptr, &growId), ncclSuccess);
  ASSERT_EQ(ncclCommGetUniqueId(comm, &growId), ncclSuccess) << ncclGetLastError(nullptr);

  ncclComm_t out = reinterpret_cast<ncclComm_t>(0x1);
  // Existing ranks: rank must be -1, nRanks must grow, the id must be this comm's.
  EXPECT_GROW_ERROR(ncclCommGrow(comm, 3, &growId, 0, &out, nullptr), ncclInvalidArgument, "ncclCommGrow: rank 0",
                    "pass -1");
  EXPECT_EQ(out, nullptr);
  EXPECT_GROW_ERROR(ncclCommGrow(comm, 1, &growId, -1, &out, nullptr), ncclInvalidArgument, "nRanks 1",
                    "larger than the communicator's size 1");
  EXPECT_GROW_ERROR(ncclCommGrow(comm, 0, &growId, -1, &out, nullptr), ncclInvalidArgument, "nRanks 0", nullptr);
  EXPECT_GROW_ERROR(ncclCommGrow(comm, 3, &plainId, -1, &out, nullptr), ncclInvalidArgument,
                    "not the id ncclCommGetUniqueId returned", nullptr);
  EXPECT_GROW_ERROR(ncclCommGrow(comm, 3, &growId, -1, nullptr, nullptr), ncclInvalidArgument, "ncclCommGrow",
                    "newcomm is NULL");

  // Joining ranks: an id from ncclCommGetUniqueId, rank in [old, nRanks), nRanks > old.
  EXPECT_GROW_ERROR(ncclCommGrow(nullptr, 3, nullptr, 1, &out, nullptr), ncclInvalidArgument, "ncclCommGrow",
                    "uniqueId is NULL");
  EXPECT_GROW_ERROR(ncclCommGrow(nullptr, 3, &growId, 0, &out, nullptr), ncclInvalidArgument, "rank 0",
                    "[1, 3)");
  EXPECT_GROW_ERROR(ncclCommGrow(nullptr, 3, &growId, 3, &out, nullptr), ncclInvalidArgument, "rank 3",
                    "[1, 3)");
  EXPECT_GROW_ERROR(ncclCommGrow(nullptr, 3, &growId, -1, &out, nullptr), ncclInvalidArgument, "rank -1",
                    "joining rank");
  EXPECT_GROW_ERROR(ncclCommGrow(nullptr, 1, &growId, 1, &out, nullptr), ncclInvalidArgument, "nRanks 1",
                    "size 1");
  EXPECT_GROW_ERROR(ncclCommGrow(nullptr, 3, &plainId, 1, &out, nullptr), ncclInvalidArgument, "ncclCommGrow",
                    "made by ncclGetUniqueId");
  EXPECT_EQ(out, nullptr);

  // A grow id is not an init id.
  ncclComm_t other = nullptr;
  EXPECT_GROW_ERROR(ncclCommInitRank(&other, 2, growId, 1), ncclInvalidArgument, "ncclCommInitRank",
                    "only works with ncclCommGrow");

  // None of the above consumed the id: it is still this comm's unused one.
  ncclUniqueId second;
  EXPECT_GROW_ERROR(ncclCommGetUniqueId(comm, &second), ncclInvalidUsage, "ncclCommGetUniqueId", "one id at a time");
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
}  // namespace accl::test
