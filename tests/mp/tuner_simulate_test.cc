// The tuner seen through the public API (label mp): ncclGroupSimulateEnd returns the model's
// estimate without running the group's operations, and a calibration file given through
// ACCL_TUNER_FILE steers the choice without changing results.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <string>
#include <vector>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

class TunerSimulateTest : public MpTest {};

TEST_P(TunerSimulateTest, SimulateEndEstimatesWithoutRunning) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (!RANK_NCCL_OK(ctx, ncclCommInitRank(&comm, ctx.nranks, ctx.id(), ctx.rank))) return;
    ctx.registerComm(comm);
    const size_t small = 1024, large = 4u << 20;
    std::vector<float> send(large, 1.0f), recv(large, -7.0f);
    float estimate[2] = {0, 0};
    size_t counts[2] = {small, large};
    for (int i = 0; i < 2; ++i) {
      ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
      RANK_NCCL_OK(ctx, ncclGroupStart());
      RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), recv.data(), counts[i], ncclFloat, ncclSum, comm, nullptr));
      RANK_NCCL_OK(ctx, ncclGroupSimulateEnd(&info));
      estimate[i] = info.estimatedTime;
    }
    ctx.check(recv[0] == -7.0f && recv[large - 1] == -7.0f, "ncclGroupSimulateEnd ran the all-reduce");
    if (ctx.nranks > 1) {
      ctx.check(estimate[0] > 0, "estimate of a 4 KiB all-reduce is %g us", estimate[0]);
      ctx.check(estimate[1] > estimate[0], "estimate of 16 MiB (%g us) is not above 4 KiB (%g us)", estimate[1],
                estimate[0]);
    }
    // Two operations in one simulated group take longer than either alone.
    ncclSimInfo_t both = NCCL_SIM_INFO_INITIALIZER;
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), recv.data(), small, ncclFloat, ncclSum, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), recv.data(), large, ncclFloat, ncclSum, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclGroupSimulateEnd(&both));
    ctx.check(both.estimatedTime >= estimate[1], "group estimate %g < its larger part %g", both.estimatedTime,
              estimate[1]);
    // The simulated operations are gone: a real all-reduce afterwards runs alone and is right.
    RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), recv.data(), small, ncclFloat, ncclSum, comm, nullptr));
    ctx.check(recv[0] == float(ctx.nranks) && recv[small - 1] == float(ctx.nranks), "all-reduce gave %g, want %d",
              recv[0], ctx.nranks);
    ctx.check(recv[small] == -7.0f, "the simulated large all-reduce ran later");
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

TEST_P(TunerSimulateTest, SimulateEndChecksItsArgument) {
  LaunchResult res = launchRanks(optionsFor(1), [](RankContext& ctx) {
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_EXPECT(ctx, ncclGroupSimulateEnd(nullptr), ncclInvalidArgument);
    ctx.check(lastErrorContains("simInfo is NULL"), "message does not name simInfo");
    ncclSimInfo_t bad = NCCL_SIM_INFO_INITIALIZER;
    bad.magic = 1;
    RANK_NCCL_EXPECT(ctx, ncclGroupSimulateEnd(&bad), ncclInvalidArgument);
    ctx.check(lastErrorContains("magic 0x1"), "message does not name the bad magic");
    RANK_NCCL_OK(ctx, ncclGroupEnd());
  });
  EXPECT_RANKS_OK(res);
}

// A calibration that claims Ring/LL is fastest at every size: the tuner must follow it (checked
// through ncclGroupSimulateEnd, which returns the calibrated time) and results stay exact.
TEST_P(TunerSimulateTest, CalibrationFileSteersTheChoice) {
  if (nranks() < 2) GTEST_SKIP() << "needs peers";
  char path[] = "/tmp/accl-tuner-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string text = "version 1\nmachine test\n";
  for (const char* c : {"Ring LL", "Ring Simple", "Tree Simple", "Tree LL", "OneShot Simple"}) {
    bool ll = std::string(c) == "Ring LL";
    text += std::string("curve AllReduce ") + c + " ranks=" + std::to_string(nranks()) + " nodes=1\n";
    text += std::string("point 4 ") + (ll ? "3" : "50") + "\npoint 1073741824 " + (ll ? "4" : "5000") + "\n";
  }
  ASSERT_EQ(write(fd, text.data(), text.size()), (ssize_t)text.size());
  close(fd);
  setenv("ACCL_TUNER_FILE", path, 1);
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (!RANK_NCCL_OK(ctx, ncclCommInitRank(&comm, ctx.nranks, ctx.id(), ctx.rank))) return;
    ctx.registerComm(comm);
    const size_t count = 4099;
    std::vector<float> send(count), recv(count);
    for (size_t i = 0; i < count; ++i) send[i] = float(ctx.rank + i % 7);
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclGroupSimulateEnd(&info));
    ctx.check(info.estimatedTime >= 3.0f && info.estimatedTime <= 4.0f,
              "estimate %g us is not the calibrated Ring/LL time (3..4 us)", info.estimatedTime);
    RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum, comm, nullptr));
    const int n = ctx.nranks;
    for (size_t i = 0; i < count; ++i) {
      float want = float(n * (n - 1) / 2 + n * int(i % 7));
      if (recv[i] != want) {
        ctx.check(false, "element %zu is %g, want %g", i, recv[i], want);
        break;
      }
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  unsetenv("ACCL_TUNER_FILE");
  unlink(path);
  EXPECT_RANKS_OK(res);
}

ACCL_MP_INSTANTIATE(TunerSimulateTest);

}  // namespace
}  // namespace accl::test
