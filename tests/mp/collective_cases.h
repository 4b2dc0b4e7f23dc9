// The collective matrix's sampling: which launches run (launcher mode x rank count x algorithm x
// protocol x size class, plus fork launches spread over two virtual nodes), the environment each
// launch sets, and which cases each launch runs, in the default (sampled) and the --full mode.
//
// One launch = one communicator per rank running its whole case list in sequence (launch cost
// dominates small collectives, so cases share it). All tuning constants sit at the top of
// collective_cases.cc.
//
// Default sampling, per launch:
//   * Small, Ring: every (collective, type, op) once (every other one from 8 ranks on); the
//     count (0, 1, 7, 4099), in-place flag, root and misalignment rotate with the launch, so over
//     the launches of one (algorithm, protocol) -- 2 launchers x 6 rank counts -- every
//     combination of (collective, type, op, count, in-place) appears.
//   * Small, Tree (NCCL_ALGO="Ring;AllReduce:Tree": tree applies to AllReduce only): every
//     (type, op) of AllReduce once with a rotating variant, plus each other collective once.
//   * Large (NCCL_BUFFSIZE=8192, 2 channels, ~48 KiB per rank block: many chunks on both
//     channels): a pairwise-covering set over (collective+op, type, in-place, rank count,
//     algorithm, protocol, launcher), distributed over the launches.
//   * Two virtual nodes (fork only, NCCL_HOSTID per rank): a stride-sampled subset of the above.
// --full (or ACCL_TEST_FULL=1): every combination for each launch (all roots up to 4 ranks,
// three roots above), same launches.
#pragma once

#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "mp/collective_expect.h"
#include "support/rank_launcher.h"

namespace accl::test {

enum class Algo { kRing, kTree };
enum class Proto { kSimple, kLL };
enum class SizeClass { kSmall, kLarge };

struct EnvConfig {
  Algo algo = Algo::kRing;
  Proto proto = Proto::kSimple;
  SizeClass size = SizeClass::kSmall;
  bool twoNodes = false;  // ranks split over two virtual nodes with NCCL_HOSTID (fork only)
  // Every call goes through its nccl*Config variant: the algorithm is selected per call
  // (algSelection = algoSelection(), NCCL_ALGO unset) and, for Large, minCTAs = maxCTAs = the
  // launch's channel count, so even the smallest call spreads over every channel.
  bool viaConfig = false;
};

struct LaunchKey {
  LaunchMode mode = LaunchMode::kThreads;
  int nranks = 1;
  EnvConfig env;
};

// "Fork_4_Ring_LL_Small", "Fork_8_TwoNodes_Tree_Simple_Large", "Thread_3_Ring_Simple_Small_ViaConfig"
std::string launchName(const LaunchKey& key);
void PrintTo(const LaunchKey& key, std::ostream* os);

const std::vector<int>& matrixRankCounts();
const std::vector<size_t>& smallCounts();
// The count of the large cases for `type`: about 48 KiB per rank block, odd.
size_t largeCount(ncclDataType_t type);

std::vector<LaunchKey> singleNodeLaunches();
std::vector<LaunchKey> twoNodeLaunches();
// A few launches of the single-node matrix again through the nccl*Config variants (CI time).
std::vector<LaunchKey> viaConfigLaunches();

// The NCCL_ALGO value of an algorithm choice ("Ring", "Ring;AllReduce:Tree"); a viaConfig launch
// passes it as the per-call algSelection instead.
const char* algoSelection(Algo algo);
// The per-call config of a viaConfig launch (NCCL_COLLCONFIG_INITIALIZER plus the above).
ncclCollConfig_t launchCollConfig(const EnvConfig& env);

// Every (collective, type, op) of the matrix: reducing collectives with the 7 ops, the others
// with Op::kNone. 3*12*7 + 6*12 = 324 entries, collective-major.
struct Combo {
  Coll coll;
  ncclDataType_t type;
  Op op;
};
const std::vector<Combo>& allCombos();

std::vector<CaseSpec> casesFor(const LaunchKey& key, bool full);

// Environment of a launch: (variable, value) pairs; an empty value means "unset".
std::vector<std::pair<std::string, std::string>> envSettings(const EnvConfig& env);
// NCCL_HOSTID of `rank` for a two-node launch: rank r is on node r*2/nranks.
std::string virtualHostId(int rank, int nranks);

// --full on the command line or ACCL_TEST_FULL=1.
bool fullMatrixRequested();
// Deadline of one launch: 120 s by default, 3600 s in full mode; ACCL_TEST_LAUNCH_DEADLINE_S
// overrides both.
std::chrono::milliseconds launchDeadline(bool full);

// Sets variables for its lifetime and restores the previous values (or unsets) afterwards.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>>& settings);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace accl::test
