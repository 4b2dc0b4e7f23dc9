// Shared pieces of the multi-rank (mp) tests: the (launcher mode x rank count) parameter grid,
// deadlines scaled by rank count, unique-id creation in the launching process, and checks that a
// rank body uses to compare NCCL results (recording the call, the codes and ncclGetLastError).
// The mp tests use only the public API (nccl.h) and the shared library.
#pragma once

#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "nccl.h"
#include "support/rank_launcher.h"

namespace accl::test {

using MpParam = std::tuple<LaunchMode, int>;

// Rank counts every mp suite runs: 1, a pair, odd, prime, powers of two up to 16.
inline const std::vector<int> kMpRankCounts = {1, 2, 3, 5, 8, 16};

std::string mpParamName(const testing::TestParamInfo<MpParam>& info);

// Makes n unique ids with ncclGetUniqueId in this process (before any fork). A failure is a
// gtest failure of the calling test.
std::vector<ncclUniqueId> makeUniqueIds(int n);

// Time a launch of nranks ranks gets: generous, since 16 forked ranks share two cores in CI.
std::chrono::milliseconds mpDeadline(int nranks);

class MpTest : public testing::TestWithParam<MpParam> {
 protected:
  LaunchMode mode() const { return std::get<0>(GetParam()); }
  int nranks() const { return std::get<1>(GetParam()); }
  // Options for a launch of nranks() ranks in mode() sharing nIds fresh unique ids.
  LaunchOptions options(int nIds = 1) const { return optionsFor(nranks(), nIds); }
  // Same, for a launch of a different number of launcher ranks (e.g. one thread making all comms).
  LaunchOptions optionsFor(int launchRanks, int nIds = 1) const;
};

#define ACCL_MP_INSTANTIATE(Suite)                                                                           \
  INSTANTIATE_TEST_SUITE_P(                                                                                  \
      , Suite,                                                                                               \
      testing::Combine(testing::Values(::accl::test::LaunchMode::kThreads, ::accl::test::LaunchMode::kFork), \
                       testing::ValuesIn(::accl::test::kMpRankCounts)),                                      \
      ::accl::test::mpParamName)

// Records a failure unless got == want, naming the expression, both codes and the last error text.
bool checkResult(RankContext& ctx, ncclResult_t got, ncclResult_t want, const char* expr, const char* file,
                 int line);
#define RANK_NCCL_EXPECT(ctx, call, want) \
  ::accl::test::checkResult((ctx), (call), (want), #call, __FILE__, __LINE__)
#define RANK_NCCL_OK(ctx, call) RANK_NCCL_EXPECT(ctx, call, ncclSuccess)

// Polls ncclCommGetAsyncError until it is not ncclInProgress or timeout passes; returns the last
// async result (ncclInProgress on timeout) or the error of GetAsyncError itself.
ncclResult_t waitForAsync(ncclComm_t comm, std::chrono::milliseconds timeout);

// A call that may complete now (ncclSuccess) or continue in the background (ncclInProgress, on a
// nonblocking comm): accepts either, then waits for the comm's async result and expects success.
bool finishNonblocking(RankContext& ctx, ncclResult_t callResult, ncclComm_t comm, const char* expr,
                       const char* file, int line);
#define RANK_NCCL_FINISH(ctx, call, comm) \
  ::accl::test::finishNonblocking((ctx), (call), (comm), #call, __FILE__, __LINE__)

// Creates this rank's communicator of ctx.nranks ranks from ctx.id() with ncclCommInitRankConfig
// (a NULL config means the defaults; a nonblocking config is waited for) and registers it with
// the launcher. Returns false, with the failure recorded, when that did not give a ready comm.
bool initComm(RankContext& ctx, ncclComm_t* comm, ncclConfig_t* config = nullptr);

// Checks the public queries of a ready communicator: count, user rank, device query succeeds and
// writes a value, no async error. `what` names the comm in messages.
void checkCommIdentity(RankContext& ctx, ncclComm_t comm, int wantCount, int wantRank, const char* what);

// True when ncclGetLastError(NULL) contains needle.
bool lastErrorContains(const std::string& needle);

}  // namespace accl::test
