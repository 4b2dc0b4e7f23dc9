// ACCL_CHECK_COLLECTIVES=1 (src/core/engine/coll_consistency.h): one rank calls a collective with a
// different count, datatype, op, root or function, or launches a different number of collectives
// in a group; every rank must fail with ncclInvalidUsage and a message naming that rank and the
// field, and the communicator must stay usable. Matching calls of every collective succeed with
// correct results while checking is on. Off by default: a mismatch the check would catch then
// goes through (only the return codes are looked at, never the data).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "mp/mp_test_util.h"
#include "support/scoped_env.h"

namespace accl::test {
namespace {

constexpr int kOdd = 2;  // the rank that calls something else (the last rank with 2 ranks: 1)

enum class Field { kCount, kDatatype, kOp, kRoot, kFunction, kGroupSize, kSixthInGroup };

const char* fieldName(Field f) {
  switch (f) {
    case Field::kCount: return "count";
    case Field::kDatatype: return "datatype";
    case Field::kOp: return "op";
    case Field::kRoot: return "root";
    case Field::kFunction: return "function";
    case Field::kGroupSize: return "groupsize";
    case Field::kSixthInGroup: return "sixthingroup";
  }
  return "?";
}

// What the failing call must say: the odd rank's side and the others' side.
struct Expected {
  std::string odd, others;
};

Expected expected(Field f, int nranks) {
  const int odd = nranks == 2 ? 1 : kOdd;
  std::string others = nranks == 2 ? "rank 0" : "ranks 0, 1, 3";
  std::string r = "rank " + std::to_string(odd);
  switch (f) {
    case Field::kCount: return {r + " called ncclAllReduce count 100 but ", others + " called count 128"};
    case Field::kDatatype:
      return {r + " called ncclAllReduce datatype int32 but ", others + " called datatype float32"};
    case Field::kOp: return {r + " called ncclAllReduce op max but ", others + " called op sum"};
    case Field::kRoot: return {r + " called ncclBroadcast root 1 but ", others + " called root 0"};
    case Field::kFunction:
      return {r + " called ncclBroadcast count 128 datatype float32 root 0 but ",
              others + " called ncclAllReduce count 128 datatype float32 op sum"};
    case Field::kGroupSize: return {r + " launched 2 collectives in one group but ", others + " launched 1"};
    case Field::kSixthInGroup:
      return {"in collective 6 of 6 of one group, " + r + " called ncclAllReduce count 32 but ", others + " called count 64"};
  }
  return {};
}

// This rank's version of the mismatched call (the odd rank changes one field).
ncclResult_t mismatchedCall(Field f, bool odd, std::vector<float>& buf, ncclComm_t comm) {
  void* p = buf.data();
  switch (f) {
    case Field::kCount: return ncclAllReduce(p, p, odd ? 100 : 128, ncclFloat, ncclSum, comm, nullptr);
    case Field::kDatatype: return ncclAllReduce(p, p, 128, odd ? ncclInt32 : ncclFloat, ncclSum, comm, nullptr);
    case Field::kOp: return ncclAllReduce(p, p, 128, ncclFloat, odd ? ncclMax : ncclSum, comm, nullptr);
    case Field::kRoot: return ncclBroadcast(p, p, 128, ncclFloat, odd ? 1 : 0, comm, nullptr);
    case Field::kFunction:
      return odd ? ncclBroadcast(p, p, 128, ncclFloat, 0, comm, nullptr)
                 : ncclAllReduce(p, p, 128, ncclFloat, ncclSum, comm, nullptr);
    case Field::kGroupSize: {
      ncclGroupStart();
      ncclAllReduce(p, p, 128, ncclFloat, ncclSum, comm, nullptr);
      if (odd) ncclAllReduce(p, p, 64, ncclFloat, ncclSum, comm, nullptr);
      return ncclGroupEnd();
    }
    case Field::kSixthInGroup: {  // beyond the first exchange's four
      ncclGroupStart();
      for (int i = 0; i < 6; ++i) ncclAllReduce(p, p, odd && i == 5 ? 32 : 64, ncclFloat, ncclSum, comm, nullptr);
      return ncclGroupEnd();
    }
  }
  return ncclInternalError;
}

void allReduceAndCheck(RankContext& ctx, ncclComm_t comm, size_t count, const char* when) {
  std::vector<float> buf(count, static_cast<float>(ctx.rank + 1));
  if (!RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, ncclSum, comm, nullptr))) return;
  const float want = ctx.nranks * (ctx.nranks + 1) / 2.0f;
  ctx.check(buf.front() == want && buf.back() == want, "rank %d %s: all-reduce gave %g..%g, want %g", ctx.rank, when,
            buf.front(), buf.back(), want);
}

LaunchOptions launchOptions(LaunchMode mode, int nranks) {
  LaunchOptions o;
  o.mode = mode;
  o.nranks = nranks;
  o.deadline = std::chrono::seconds(60);
  o.ids = makeUniqueIds(1);
  return o;
}

class CollMismatchTest : public testing::TestWithParam<std::tuple<LaunchMode, int, Field>> {};

TEST_P(CollMismatchTest, EveryRankFailsNamingTheRankAndField) {
  const auto [mode, nranks, field] = GetParam();
  test::ScopedEnvVar check("ACCL_CHECK_COLLECTIVES", "1");
  const Expected want = expected(field, nranks);
  LaunchResult res = launchRanks(launchOptions(mode, nranks), [field, want](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    allReduceAndCheck(ctx, comm, 256, "before the mismatch");
    const bool odd = ctx.rank == (ctx.nranks == 2 ? 1 : kOdd);
    std::vector<float> buf(256, 1.0f);
    ncclResult_t r = mismatchedCall(field, odd, buf, comm);
    const std::string err = ncclGetLastError(comm);
    ctx.check(r == ncclInvalidUsage, "rank %d: the mismatched %s returned %d (%s), want ncclInvalidUsage; last error: %s",
              ctx.rank, fieldName(field), r, ncclGetErrorString(r), err.c_str());
    ctx.check(err.find("ACCL_CHECK_COLLECTIVES") != std::string::npos && err.find(want.odd) != std::string::npos &&
                  err.find(want.others) != std::string::npos,
              "rank %d: the message does not say \"%s...%s\": %s", ctx.rank, want.odd.c_str(), want.others.c_str(),
              err.c_str());
    // Nothing ran and every rank reached the same verdict: the communicator goes on.
    allReduceAndCheck(ctx, comm, 4099, "after the mismatch");
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, CollMismatchTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork), testing::Values(4),
                                          testing::Values(Field::kCount, Field::kDatatype, Field::kOp, Field::kRoot,
                                                          Field::kFunction, Field::kGroupSize, Field::kSixthInGroup)),
                         [](const auto& info) {
                           return std::string(launchModeName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "_" + fieldName(std::get<2>(info.param));
                         });
// Two ranks that disagree: a tie, so the lowest rank's call is the reference.
INSTANTIATE_TEST_SUITE_P(Pair, CollMismatchTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork), testing::Values(2),
                                          testing::Values(Field::kCount)),
                         [](const auto& info) {
                           return std::string(launchModeName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "_" + fieldName(std::get<2>(info.param));
                         });

class CollCheckTest : public testing::TestWithParam<std::tuple<LaunchMode, int>> {
 protected:
  LaunchOptions opts() const { return launchOptions(std::get<0>(GetParam()), std::get<1>(GetParam())); }
};

// Every collective, alone and grouped (more collectives than one exchange carries), with
// checking on: correct results.
TEST_P(CollCheckTest, MatchingCallsSucceedWithCorrectResults) {
  test::ScopedEnvVar check("ACCL_CHECK_COLLECTIVES", "1");
  LaunchResult res = launchRanks(opts(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    const int n = ctx.nranks, me = ctx.rank;
    const size_t count = 1000;
    std::vector<float> send(count * n), recv(count * n);
    auto fill = [&](float v) { std::fill(send.begin(), send.end(), v); };
    auto all = [&](size_t len, float want, const char* what) {
      for (size_t i = 0; i < len; ++i)
        if (recv[i] != want) return ctx.check(false, "rank %d: %s: element %zu is %g, want %g", me, what, i, recv[i], want);
      return true;
    };
    fill(me + 1.0f);
    if (RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum, comm, nullptr)))
      all(count, n * (n + 1) / 2.0f, "AllReduce");
    if (RANK_NCCL_OK(ctx, ncclBroadcast(send.data(), recv.data(), count, ncclFloat, 1, comm, nullptr)))
      all(count, 2.0f, "Broadcast from 1");
    if (RANK_NCCL_OK(ctx, ncclReduce(send.data(), recv.data(), count, ncclFloat, ncclMax, 2, comm, nullptr)) && me == 2)
      all(count, static_cast<float>(n), "Reduce(max) to 2");
    if (RANK_NCCL_OK(ctx, ncclAllGather(send.data(), recv.data(), count, ncclFloat, comm, nullptr)))
      for (int r = 0; r < n; ++r)
        ctx.check(recv[r * count] == r + 1.0f && recv[(r + 1) * count - 1] == r + 1.0f,
                  "rank %d: AllGather block %d is wrong", me, r);
    if (RANK_NCCL_OK(ctx, ncclReduceScatter(send.data(), recv.data(), count, ncclFloat, ncclSum, comm, nullptr)))
      all(count, n * (n + 1) / 2.0f, "ReduceScatter");
    // Six collectives in one group: the check needs a second exchange for the ones beyond four.
    std::vector<std::vector<float>> bufs(6, std::vector<float>(64, me + 1.0f));
    ncclGroupStart();
    for (auto& b : bufs) ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat, ncclSum, comm, nullptr);
    if (RANK_NCCL_OK(ctx, ncclGroupEnd()))
      for (auto& b : bufs) ctx.check(b[0] == n * (n + 1) / 2.0f && b[63] == b[0], "rank %d: grouped AllReduce wrong", me);
    // Send/recv are not checked (not every rank takes part): a ring exchange still works.
    std::vector<float> in(16, -1.0f), out(16, me + 1.0f);
    ncclGroupStart();
    ncclSend(out.data(), out.size(), ncclFloat, (me + 1) % n, comm, nullptr);
    ncclRecv(in.data(), in.size(), ncclFloat, (me + n - 1) % n, comm, nullptr);
    if (RANK_NCCL_OK(ctx, ncclGroupEnd()))
      ctx.check(in[0] == (me + n - 1) % n + 1.0f, "rank %d: ring send/recv got %g", me, in[0]);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// Without the setting, a datatype mismatch of equal size (int32 vs float32 sum) is not caught by
// this mechanism: every call returns ncclSuccess (the data is not looked at).
TEST_P(CollCheckTest, OffByDefault) {
  test::ScopedEnvVar check("ACCL_CHECK_COLLECTIVES", nullptr);
  LaunchResult res = launchRanks(opts(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(128, 1.0f);
    RANK_NCCL_OK(ctx, mismatchedCall(Field::kDatatype, ctx.rank == kOdd, buf, comm));
    allReduceAndCheck(ctx, comm, 4099, "after the unchecked mismatch");
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// A rank killed before its next collective: the others, waiting in the check's exchange, fail with
// ncclRemoteError naming the dead rank (liveness's verdict), not a neighbour or a timeout.
TEST(CollCheckFailureTest, DeadPeerDuringTheExchangeIsNamed) {
  test::ScopedEnvVar check("ACCL_CHECK_COLLECTIVES", "1");
  LaunchResult res = launchRanks(launchOptions(LaunchMode::kFork, 4), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    allReduceAndCheck(ctx, comm, 256, "before the kill");
    if (ctx.rank == 3) kill(getpid(), SIGKILL);
    std::vector<float> buf(256, 1.0f);
    const auto t0 = std::chrono::steady_clock::now();
    ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string err = ncclGetLastError(comm);
    ctx.check(r == ncclRemoteError && err.find("rank 3 ") != std::string::npos,
              "rank %d: all-reduce after rank 3 died returned %d (%s), want ncclRemoteError naming rank 3: %s",
              ctx.rank, r, ncclGetErrorString(r), err.c_str());
    ctx.check(s < 5.0, "rank %d: the failure took %.2f s", ctx.rank, s);
    ctx.abortComm(comm);
  });
  for (const RankOutcome& r : res.ranks)
    EXPECT_EQ(r.status, r.rank == 3 ? RankStatus::kSignaled : RankStatus::kOk) << res.summary();
}

// 3, 5 and 8 ranks: the exchange's rounds with a partial last round and with several full ones.
INSTANTIATE_TEST_SUITE_P(, CollCheckTest,
                         testing::Combine(testing::Values(LaunchMode::kThreads, LaunchMode::kFork),
                                          testing::Values(3, 4, 5, 8)),
                         [](const testing::TestParamInfo<std::tuple<LaunchMode, int>>& info) {
                           return std::string(launchModeName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace accl::test
