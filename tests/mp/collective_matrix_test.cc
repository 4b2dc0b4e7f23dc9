// The collective correctness matrix (label mp): every collective x type x op x {Ring, Tree for
// AllReduce} x {Simple, LL} x ranks {1,2,3,4,5,8} x counts {0,1,7,4099,~48 KiB} x in/out of place,
// with the thread and the fork launcher, plus fork launches over two virtual nodes, plus a few
// launches through the nccl*Config variants (per-call algSelection and channel bounds). Each test is
// one launch: one communicator per rank running the launch's case list (collective_cases.h) and
// checking every element against closed-form values (collective_expect.h).
//
// Run:   ctest -L mp -R CollectiveMatrix           (sampled; a few minutes)
//        accl_mp_collective_tests --gtest_filter='*CollectiveMatrix*' --full   (every combination)
//        ACCL_TEST_FULL=1 ctest -L mp -R Collective --timeout 3600   (same, through ctest)
#include <chrono>
#include <cstdio>

#include "mp/collective_cases.h"
#include "mp/collective_runner.h"
#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

std::string launchDescription(const LaunchKey& key) {
  std::string text = launchName(key);
  for (const auto& [name, value] : envSettings(key.env))
    if (!value.empty()) text += " " + name + "=" + value;
  if (key.env.twoNodes) text += " NCCL_HOSTID=node{0,1}";
  if (key.env.viaConfig) {
    const ncclCollConfig_t config = launchCollConfig(key.env);
    text += std::string(" via nccl*Config algSelection=") + config.algSelection;
    if (config.minCTAs != NCCL_CONFIG_UNDEF_INT)
      text += " minCTAs=maxCTAs=" + std::to_string(config.minCTAs);
  }
  return text;
}

void runMatrixRank(RankContext& ctx, const LaunchKey& key, const std::vector<CaseSpec>& cases,
                   const std::string& launch) {
  // Only fork children may change their environment without affecting the other ranks.
  if (key.env.twoNodes && key.mode == LaunchMode::kFork)
    setenv("NCCL_HOSTID", virtualHostId(ctx.rank, ctx.nranks).c_str(), 1);
  ncclComm_t comm = nullptr;
  if (!initComm(ctx, &comm)) return;
  const ncclCollConfig_t config = launchCollConfig(key.env);
  CollectiveRunner runner(ctx, comm, launch, CallVia{key.env.viaConfig, key.env.viaConfig ? &config : nullptr});
  bool callsOk = true;
  for (const CaseSpec& cs : cases) {
    if (!runner.run(cs)) {
      callsOk = false;
      break;
    }
  }
  runner.finish(cases.size());
  if (!callsOk) {
    ctx.abortComm(comm);
    return;
  }
  ncclResult_t async = ncclInProgress;
  RANK_NCCL_OK(ctx, ncclCommGetAsyncError(comm, &async));
  ctx.check(async == ncclSuccess, "[%s] rank %d: async error %d (%s) after the cases", launch.c_str(),
            ctx.rank, async, ncclGetErrorString(async));
  RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
}

class CollectiveMatrixTest : public testing::TestWithParam<LaunchKey> {};

TEST_P(CollectiveMatrixTest, Run) {
  const LaunchKey key = GetParam();
  const bool full = fullMatrixRequested();
  const std::vector<CaseSpec> cases = casesFor(key, full);
  const std::string launch = launchDescription(key);
  ScopedEnv env(envSettings(key.env));

  LaunchOptions opts;
  opts.mode = key.mode;
  opts.nranks = key.nranks;
  opts.deadline = launchDeadline(full);
  opts.ids = makeUniqueIds(1);
  const auto start = std::chrono::steady_clock::now();
  LaunchResult res = launchRanks(opts, [&](RankContext& ctx) { runMatrixRank(ctx, key, cases, launch); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("cases", static_cast<int>(cases.size()));
  std::printf("[ matrix   ] %s: %zu cases%s in %.2f s\n", launch.c_str(), cases.size(), full ? " (full)" : "",
              seconds);
  EXPECT_RANKS_OK(res);
}

std::string launchParamName(const testing::TestParamInfo<LaunchKey>& info) { return launchName(info.param); }

INSTANTIATE_TEST_SUITE_P(SingleNode, CollectiveMatrixTest, testing::ValuesIn(singleNodeLaunches()),
                         launchParamName);
INSTANTIATE_TEST_SUITE_P(TwoNodes, CollectiveMatrixTest, testing::ValuesIn(twoNodeLaunches()),
                         launchParamName);
INSTANTIATE_TEST_SUITE_P(ViaConfig, CollectiveMatrixTest, testing::ValuesIn(viaConfigLaunches()),
                         launchParamName);

}  // namespace
}  // namespace accl::test
