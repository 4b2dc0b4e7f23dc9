// Shared helpers of the mp tests: parameter names, deadlines, unique ids and result checks.
#include "mp/mp_test_util.h"

#include <climits>
#include <cstring>
#include <thread>

namespace accl::test {

std::string mpParamName(const testing::TestParamInfo<MpParam>& info) {
  return std::string(std::get<0>(info.param) == LaunchMode::kFork ? "Fork" : "Thread") + "_" +
         std::to_string(std::get<1>(info.param));
}

std::vector<ncclUniqueId> makeUniqueIds(int n) {
  std::vector<ncclUniqueId> ids(n);
  for (ncclUniqueId& id : ids) {
    ncclResult_t res = ncclGetUniqueId(&id);
    EXPECT_EQ(res, ncclSuccess) << "ncclGetUniqueId: " << ncclGetLastError(nullptr);
  }
  return ids;
}

std::chrono::milliseconds mpDeadline(int nranks) { return std::chrono::milliseconds(20000 + 2500 * nranks); }

LaunchOptions MpTest::optionsFor(int launchRanks, int nIds) const {
  LaunchOptions opts;
  opts.mode = mode();
  opts.nranks = launchRanks;
  opts.deadline = mpDeadline(nranks());
  opts.ids = makeUniqueIds(nIds);
  return opts;
}

bool checkResult(RankContext& ctx, ncclResult_t got, ncclResult_t want, const char* expr, const char* file,
                 int line) {
  return ctx.check(got == want, "%s:%d: rank %d: %s returned %d (%s), expected %d (%s); last error: %s", file,
                   line, ctx.rank, expr, got, ncclGetErrorString(got), want, ncclGetErrorString(want),
                   ncclGetLastError(nullptr));
}

ncclResult_t waitForAsync(ncclComm_t comm, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (true) {
    ncclResult_t async = ncclInProgress;
    ncclResult_t res = ncclCommGetAsyncError(comm, &async);
    if (res != ncclSuccess) return res;
    if (async != ncclInProgress || std::chrono::steady_clock::now() >= end) return async;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

bool finishNonblocking(RankContext& ctx, ncclResult_t callResult, ncclComm_t comm, const char* expr,
                       const char* file, int line) {
  if (!ctx.check(
          callResult == ncclSuccess || callResult == ncclInProgress,
          "%s:%d: rank %d: %s returned %d (%s), expected ncclSuccess or ncclInProgress; last error: %s", file,
          line, ctx.rank, expr, callResult, ncclGetErrorString(callResult), ncclGetLastError(nullptr))) {
    return false;
  }
  if (comm == nullptr)
    return ctx.check(false, "%s:%d: rank %d: %s gave no communicator", file, line, ctx.rank, expr);
  ncclResult_t async = waitForAsync(comm, std::chrono::seconds(30));
  return ctx.check(async == ncclSuccess,
                   "%s:%d: rank %d: after %s the async result is %d (%s) (7 = still in progress after 30 s); "
                   "last error: %s",
                   file, line, ctx.rank, expr, async, ncclGetErrorString(async), ncclGetLastError(nullptr));
}

bool initComm(RankContext& ctx, ncclComm_t* comm, ncclConfig_t* config) {
  *comm = nullptr;
  ncclResult_t res = ncclCommInitRankConfig(comm, ctx.nranks, ctx.id(), ctx.rank, config);
  if (*comm) ctx.registerComm(*comm);
  if (config && !config->blocking) return RANK_NCCL_FINISH(ctx, res, *comm);
  return checkResult(ctx, res, ncclSuccess, "ncclCommInitRankConfig", __FILE__, __LINE__);
}

void checkCommIdentity(RankContext& ctx, ncclComm_t comm, int wantCount, int wantRank, const char* what) {
  if (!ctx.check(comm != nullptr, "rank %d: %s is NULL", ctx.rank, what)) return;
  int count = -1, rank = -1, device = INT_MIN;
  ncclResult_t async = ncclInProgress;
  RANK_NCCL_OK(ctx, ncclCommCount(comm, &count));
  RANK_NCCL_OK(ctx, ncclCommUserRank(comm, &rank));
  // On the host backend the device is a label; only require that the query works and writes.
  RANK_NCCL_OK(ctx, ncclCommCuDevice(comm, &device));
  RANK_NCCL_OK(ctx, ncclCommGetAsyncError(comm, &async));
  ctx.check(count == wantCount, "rank %d: %s: ncclCommCount = %d, expected %d", ctx.rank, what, count,
            wantCount);
  ctx.check(rank == wantRank, "rank %d: %s: ncclCommUserRank = %d, expected %d", ctx.rank, what, rank,
            wantRank);
  ctx.check(device != INT_MIN, "rank %d: %s: ncclCommCuDevice did not write the device", ctx.rank, what);
  ctx.check(async == ncclSuccess, "rank %d: %s: ncclCommGetAsyncError reports %d (%s)", ctx.rank, what, async,
            ncclGetErrorString(async));
}

bool lastErrorContains(const std::string& needle) {
  const char* text = ncclGetLastError(nullptr);
  return text != nullptr && strstr(text, needle.c_str()) != nullptr;
}

}  // namespace accl::test
