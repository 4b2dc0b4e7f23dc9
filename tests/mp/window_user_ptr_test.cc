// ncclWinGetUserPtr through the public API, as threads and as processes, 1..16 ranks: every
// rank gets back the buffer each of its windows was registered with (odd sizes, several windows,
// a NULL/0 window), and a window of another communicator, a deregistered or forged handle and
// NULL arguments are ncclInvalidArgument naming the handle, with no crash.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

class WindowUserPtrTest : public MpTest {};

TEST_P(WindowUserPtrTest, EachWindowGivesBackItsBuffer) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    // Three windows per rank: sizes 1, 4096 + rank and 97 * (rank + 1) bytes, all distinct.
    const size_t sizes[] = {1, 4096 + static_cast<size_t>(ctx.rank), 97 * static_cast<size_t>(ctx.rank + 1)};
    std::vector<void*> buffers;
    std::vector<ncclWindow_t> wins;
    for (size_t size : sizes) {
      void* buf = nullptr;
      if (!RANK_NCCL_OK(ctx, ncclMemAlloc(&buf, size))) break;
      buffers.push_back(buf);
      ncclWindow_t win = nullptr;
      if (RANK_NCCL_OK(ctx, ncclCommWindowRegister(comm, buf, size, &win, NCCL_WIN_DEFAULT))) wins.push_back(win);
    }
    ncclWindow_t empty = nullptr;
    RANK_NCCL_OK(ctx, ncclCommWindowRegister(comm, nullptr, 0, &empty, NCCL_WIN_COLL_SYMMETRIC));
    for (size_t i = 0; i < wins.size(); ++i) {
      void* ptr = reinterpret_cast<void*>(uintptr_t{1});
      if (RANK_NCCL_OK(ctx, ncclWinGetUserPtr(comm, wins[i], &ptr)))
        ctx.check(ptr == buffers[i], "rank %d: window %zu gave %p, registered %p", ctx.rank, i, ptr, buffers[i]);
    }
    void* ptr = reinterpret_cast<void*>(uintptr_t{1});
    if (RANK_NCCL_OK(ctx, ncclWinGetUserPtr(comm, empty, &ptr))) RANK_CHECK(ctx, ptr == nullptr);
    // Deregistering one leaves the others intact.
    if (!wins.empty()) {
      RANK_NCCL_OK(ctx, ncclCommWindowDeregister(comm, wins[0]));
      RANK_NCCL_EXPECT(ctx, ncclWinGetUserPtr(comm, wins[0], &ptr), ncclInvalidArgument);
      for (size_t i = 1; i < wins.size(); ++i) {
        if (RANK_NCCL_OK(ctx, ncclWinGetUserPtr(comm, wins[i], &ptr))) RANK_CHECK(ctx, ptr == buffers[i]);
      }
    }
    for (size_t i = 1; i < wins.size(); ++i) RANK_NCCL_OK(ctx, ncclCommWindowDeregister(comm, wins[i]));
    RANK_NCCL_OK(ctx, ncclCommWindowDeregister(comm, empty));
    for (void* b : buffers) RANK_NCCL_OK(ctx, ncclMemFree(b));
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(WindowUserPtrTest, ForeignFreedForgedAndNullHandlesAreRejected) {
  // Threads share one last-error text: check messages only where a rank has it to itself.
  const bool ownLastError = mode() == LaunchMode::kFork || nranks() == 1;
  LaunchResult res = launchRanks(options(), [ownLastError](RankContext& ctx) {
    ncclComm_t comm, other = nullptr;
    if (!initComm(ctx, &comm)) return;
    if (!RANK_NCCL_OK(ctx, ncclCommSplit(comm, 0, ctx.rank, &other, nullptr))) {
      RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
      return;
    }
    std::vector<char> buf(33);
    ncclWindow_t win = nullptr;
    if (RANK_NCCL_OK(ctx, ncclCommWindowRegister(comm, buf.data(), buf.size(), &win, NCCL_WIN_DEFAULT))) {
      void* ptr = nullptr;
      // Another communicator's window (the split child has the same ranks).
      RANK_NCCL_EXPECT(ctx, ncclWinGetUserPtr(other, win, &ptr), ncclInvalidArgument);
      if (ownLastError) RANK_CHECK(ctx, lastErrorContains("belongs to comm"));
      RANK_NCCL_EXPECT(ctx, ncclCommWindowDeregister(other, win), ncclInvalidArgument);
      // NULL arguments.
      RANK_NCCL_EXPECT(ctx, ncclWinGetUserPtr(comm, win, nullptr), ncclInvalidArgument);
      RANK_NCCL_EXPECT(ctx, ncclWinGetUserPtr(nullptr, win, &ptr), ncclInvalidArgument);
      RANK_NCCL_EXPECT(ctx, ncclWinGetUserPtr(comm, nullptr, &ptr), ncclInvalidArgument);
      // Still fine with its own comm, then gone after deregistration (a second one fails too).
      if (RANK_NCCL_OK(ctx, ncclWinGetUserPtr(comm, win, &ptr))) RANK_CHECK(ctx, ptr == buf.data());
      RANK_NCCL_OK(ctx, ncclCommWindowDeregister(comm, win));
      RANK_NCCL_EXPECT(ctx, ncclWinGetUserPtr(comm, win, &ptr), ncclInvalidArgument);
      if (ownLastError) RANK_CHECK(ctx, lastErrorContains("not registered"));
      RANK_NCCL_EXPECT(ctx, ncclCommWindowDeregister(comm, win), ncclInvalidArgument);
    }
    // A handle that never was a window: rejected without being dereferenced.
    uint64_t junk[8] = {};
    auto forged = reinterpret_cast<ncclWindow_t>(junk);
    void* ptr = nullptr;
    RANK_NCCL_EXPECT(ctx, ncclWinGetUserPtr(comm, forged, &ptr), ncclInvalidArgument);
    if (ownLastError) {
      char text[32];
      std::snprintf(text, sizeof(text), "%p", static_cast<void*>(junk));
      RANK_CHECK(ctx, lastErrorContains(text));
    }
    RANK_NCCL_OK(ctx, ncclCommDestroy(other));
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

ACCL_MP_INSTANTIATE(WindowUserPtrTest);

}  // namespace
}  // namespace accl::test
