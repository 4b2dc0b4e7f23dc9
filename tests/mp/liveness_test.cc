// Liveness separate from progress (core/liveness/liveness.h): a frozen (SIGSTOP) or vanished (SIGKILL)
// process is declared failed within the heartbeat timeout, even before any connection exists,
// and every survivor's error names it (rank, pid, what was seen), not the neighbour it waited on;
// a live rank that is merely late is waited for, and a long wait logs who it waits for.
//
// Settings are short (heartbeat every 100 ms, declared failed after 1 s of silence) and set with
// setenv(..., overwrite = 0), so running the binary with ACCL_HEARTBEAT_INTERVAL_MS=0 shows the
// behaviour without liveness (these tests then fail), and other values measure other settings.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

constexpr int kRanks = 4;
constexpr int kVictim = 2;

// Environment for one test, restored afterwards (values already in the environment win).
class ScopedEnv {
 public:
  void set(const char* name, const std::string& value) {
    const char* old = getenv(name);
    saved_.push_back({name, old ? std::string(old) : std::string(), old != nullptr});
    setenv(name, value.c_str(), /*overwrite=*/0);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      it->wasSet ? setenv(it->name, it->value.c_str(), 1) : unsetenv(it->name);
  }

 private:
  struct Saved {
    const char* name;
    std::string value;
    bool wasSet;
  };
  std::vector<Saved> saved_;
};

int64_t envInt(const char* name) { return strtoll(getenv(name), nullptr, 0); }

// A forked rank inherits the parent's parsed log settings: re-read them (deprecated in NCCL, but
// the only public way to point a running process's log elsewhere); also closes the log file.
void reloadLogSettings() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop
}

// Memory the forked ranks share: each rank's pid, so a survivor can end the stopped victim.
struct Shared {
  std::atomic<int> pid[kRanks];
};

Shared* mapShared() {
  void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : new (p) Shared();
}

class LivenessTest : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string(testing::UnitTest::GetInstance()->current_test_info()->name()).find("DuringInit") ==
        std::string::npos)
      env_.set("ACCL_BOOTSTRAP_TIMEOUT_MS", "60000");  // far above what these tests allow
    env_.set("ACCL_HEARTBEAT_INTERVAL_MS", "100");
    env_.set("ACCL_HEARTBEAT_TIMEOUT_MS", "1000");
    env_.set("ACCL_TIMEOUT_MS", "600000");             // progress timeout out of the picture
    shared_ = mapShared();
    ASSERT_NE(shared_, nullptr);
  }
  void TearDown() override {
    if (shared_) munmap(shared_, sizeof(Shared));
  }
  LaunchOptions options(LaunchMode mode = LaunchMode::kFork) {
    LaunchOptions o;
    o.mode = mode;
    o.nranks = kRanks;
    o.deadline = std::chrono::seconds(45);
    o.ids = makeUniqueIds(1);
    return o;
  }
  // What a survivor may take, from the moment it could first notice: the heartbeat timeout plus
  // slack for 4 processes on 2 busy cores.
  double boundSeconds() const { return envInt("ACCL_HEARTBEAT_TIMEOUT_MS") / 1000.0 + 4.0; }

  ScopedEnv env_;
  Shared* shared_ = nullptr;
};

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A survivor's checks after its all-reduce returned `res` after `s` seconds.
void expectVictimNamed(RankContext& ctx, ncclComm_t comm, ncclResult_t res, double s, double bound, int victimPid,
                       const char* seen) {
  const std::string text = ncclGetLastError(nullptr);
  ctx.note("rank %d: returned %d after %.2f s: %s", ctx.rank, res, s, text.c_str());
  ctx.check(res == ncclRemoteError, "rank %d: all-reduce returned %d (%s), want ncclRemoteError: %s", ctx.rank, res,
            ncclGetErrorString(res), text.c_str());
  ctx.check(s < bound, "rank %d: the failure took %.2f s (bound %.1f s)", ctx.rank, s, bound);
  const std::string rank = "rank " + std::to_string(kVictim) + " ";
  const std::string pid = "pid " + std::to_string(victimPid);
  ctx.check(text.find(rank) != std::string::npos && text.find(pid) != std::string::npos &&
                text.find(seen) != std::string::npos,
            "rank %d: the error does not name the failed rank as '%s', '%s' and '%s': %s", ctx.rank, rank.c_str(),
            pid.c_str(), seen, text.c_str());
  ncclResult_t async = ncclSuccess;
  ctx.check(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == ncclRemoteError,
            "rank %d: ncclCommGetAsyncError gives %d, want ncclRemoteError", ctx.rank, async);
}

// Checks the survivors ended kOk and the victim died by a signal.
void expectOutcome(const LaunchResult& res) {
  for (const RankOutcome& r : res.ranks) {
    if (r.rank == kVictim)
      EXPECT_EQ(r.status, RankStatus::kSignaled) << res.summary();
    else
      EXPECT_EQ(r.status, RankStatus::kOk) << res.summary();
  }
  for (const RankOutcome& r : res.ranks)
    for (const std::string& n : r.notes) std::printf("  %s\n", n.c_str());
}

TEST_F(LivenessTest, StoppedRankIsNamedByEverySurvivor) {
  Shared* shared = shared_;
  const double bound = boundSeconds();
  LaunchResult res = launchRanks(options(), [shared, bound](RankContext& ctx) {
    shared->pid[ctx.rank] = getpid();
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(1 << 14, 1.0f);
    if (!RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr)))
      return;
    if (ctx.rank == kVictim) {
      raise(SIGSTOP);  // frozen while the others run the next collective; a survivor kills it
      return;
    }
    auto t0 = std::chrono::steady_clock::now();
    ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
    expectVictimNamed(ctx, comm, r, secondsSince(t0), bound, shared->pid[kVictim].load(), "frozen");
    ctx.abortComm(comm);
    if (ctx.rank == 0) kill(shared->pid[kVictim], SIGKILL);
  });
  expectOutcome(res);
}

TEST_F(LivenessTest, RankKilledBeforeFirstCollectiveIsNamedBySurvivors) {
  Shared* shared = shared_;
  LaunchResult res = launchRanks(options(), [shared](RankContext& ctx) {
    shared->pid[ctx.rank] = getpid();
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    // No collective yet, so no connection between the ranks exists.
    if (ctx.rank == kVictim) kill(getpid(), SIGKILL);
    std::vector<float> buf(1 << 14, 1.0f);
    auto t0 = std::chrono::steady_clock::now();
    ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
    // Far below ACCL_BOOTSTRAP_TIMEOUT_MS (60 s): an exit is seen at once.
    expectVictimNamed(ctx, comm, r, secondsSince(t0), 5.0, shared->pid[kVictim].load(), "exited");
    ctx.abortComm(comm);
  });
  expectOutcome(res);
}

TEST_F(LivenessTest, RankKilledDuringACollectiveIsNamedByEverySurvivor) {
  Shared* shared = shared_;
  LaunchResult res = launchRanks(options(), [shared](RankContext& ctx) {
    shared->pid[ctx.rank] = getpid();
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(1 << 14, 1.0f);
    if (!RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr)))
      return;
    if (ctx.rank == kVictim) {
      usleep(200 * 1000);  // the others are inside the next all-reduce by now
      kill(getpid(), SIGKILL);
    }
    auto t0 = std::chrono::steady_clock::now();
    ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
    expectVictimNamed(ctx, comm, r, secondsSince(t0), 5.0, shared->pid[kVictim].load(), "exited");
    ctx.abortComm(comm);
  });
  expectOutcome(res);
}

// A rank killed while the communicator is being created, before liveness watches it: every
// survivor returns an error within the bootstrap's bound (a rank that never reached the root is
// indistinguishable from a slow one until ACCL_BOOTSTRAP_TIMEOUT_MS, here 3 s); if init completes
// first, the first collective fails naming the victim.
TEST_F(LivenessTest, RankKilledDuringInitEndsEverySurvivorsInit) {
  env_.set("ACCL_BOOTSTRAP_TIMEOUT_MS", "3000");
  Shared* shared = shared_;
  LaunchResult res = launchRanks(options(), [shared](RankContext& ctx) {
    shared->pid[ctx.rank] = getpid();
    auto t0 = std::chrono::steady_clock::now();
    ncclComm_t comm = nullptr;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = ctx.rank == kVictim ? 0 : 1;
    ncclResult_t r = ncclCommInitRankConfig(&comm, ctx.nranks, ctx.id(), ctx.rank, &config);
    if (ctx.rank == kVictim) kill(getpid(), SIGKILL);  // its init runs in the background: dies inside it
    if (comm) ctx.registerComm(comm);
    if (r == ncclSuccess) {
      std::vector<float> buf(1024, 1.0f);
      r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
    }
    const double s = secondsSince(t0);
    ctx.note("rank %d: returned %d after %.2f s: %s", ctx.rank, r, s, ncclGetLastError(nullptr));
    ctx.check(r != ncclSuccess, "rank %d: init and all-reduce succeeded without rank %d", ctx.rank, kVictim);
    ctx.check(s < 8.0, "rank %d: took %.2f s (bootstrap timeout 3 s)", ctx.rank, s);
    if (comm) ctx.abortComm(comm);
  });
  expectOutcome(res);
}

// Reads a rank's log file (NCCL_DEBUG_FILE).
std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A rank that sleeps 3x the heartbeat timeout between collectives is alive: everyone waits for it
// (ACCL_TIMEOUT_MS is large), the results are right, and the waiting ranks log who they wait for.
void runLateRank(LaunchMode mode, LaunchOptions opts, const std::string& logDir) {
  const int64_t sleepMs = 3 * envInt("ACCL_HEARTBEAT_TIMEOUT_MS");
  LaunchResult res = launchRanks(opts, [sleepMs, mode, logDir](RankContext& ctx) {
    if (mode == LaunchMode::kFork) {
      setenv("NCCL_DEBUG", "WARN", 1);
      setenv("NCCL_DEBUG_FILE", (logDir + "/rank" + std::to_string(ctx.rank) + ".log").c_str(), 1);
      reloadLogSettings();
    }
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    const size_t n = 4099;
    std::vector<float> buf(n);
    for (int iter = 0; iter < 3; ++iter) {
      for (size_t i = 0; i < n; ++i) buf[i] = static_cast<float>(ctx.rank + iter + (i % 7));
      if (ctx.rank == 1 && iter == 1) std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs));
      if (!RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), n, ncclFloat, ncclSum, comm, nullptr))) return;
      for (size_t i = 0; i < n; ++i) {
        const float want = static_cast<float>(ctx.nranks * (ctx.nranks - 1) / 2 + ctx.nranks * (iter + (int)(i % 7)));
        if (!ctx.check(buf[i] == want, "rank %d iter %d: buf[%zu] = %g, want %g", ctx.rank, iter, i, buf[i], want))
          return;
      }
    }
    ncclResult_t async = ncclInProgress;
    RANK_NCCL_OK(ctx, ncclCommGetAsyncError(comm, &async));
    ctx.check(async == ncclSuccess, "rank %d: async error %d after a late peer", ctx.rank, async);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    if (mode == LaunchMode::kFork) reloadLogSettings();  // flushes the log
  });
  EXPECT_RANKS_OK(res);
}

TEST_F(LivenessTest, LateRankIsWaitedForAndTheWaitIsLogged) {
  env_.set("ACCL_WAIT_LOG_INTERVAL_MS", "500");
  char tmpl[] = "/tmp/accl-liveness-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  runLateRank(LaunchMode::kFork, options(), dir);
  // Rank 2 receives from rank 1 in the ring: it waited for rank 1 and said so.
  const std::string log = readFile(dir + "/rank2.log");
  EXPECT_NE(log.find("ncclAllReduce (opCount 1) rank 2: waiting for rank 1 for"), std::string::npos) << log;
  EXPECT_NE(log.find("alive: last heartbeat"), std::string::npos) << log;
  EXPECT_EQ(log.find("frozen"), std::string::npos) << log;
  for (int r = 0; r < kRanks; ++r) unlink((dir + "/rank" + std::to_string(r) + ".log").c_str());
  rmdir(dir.c_str());
}

TEST_F(LivenessTest, LateRankIsWaitedForInThreadsMode) { runLateRank(LaunchMode::kThreads, options(LaunchMode::kThreads), ""); }

}  // namespace
}  // namespace accl::test
