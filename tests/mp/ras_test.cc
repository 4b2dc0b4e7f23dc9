// accl-ras against running jobs (src/ras, tools/accl-ras): four ranks as processes or threads,
// three of them inside an all-reduce that the fourth has not joined (it is late, or stopped with
// SIGSTOP); a thread of the test process runs the real accl-ras binary meanwhile, parses what it
// prints (the communicator, the ranks, each rank's operation and sequence number, the peer the
// stuck rank waits for, the stopped peer) and then lets the fourth rank go. Also: NCCL_RAS_ENABLE=0
// runs no server, and a client that sends nothing is cut off without holding up the job.
// Run with ACCL_ENCRYPTION_PSK_FILE (ctest's Tls.RasTest.*), the same queries go over TLS, and
// EncryptedServerRefusesAnotherKey checks the key: another one fails clearly and fast.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <poll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "mp/mp_test_util.h"
#include "support/spawn_capture.h"

#ifndef ACCL_RAS_BIN
#error "ACCL_RAS_BIN must name the accl-ras binary"
#endif

namespace accl::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRanks = 4;
constexpr int kCount = 1024;
constexpr int kPortsScanned = 8;

// Sets environment variables for the scope of a test (the forked ranks inherit them).
class ScopedEnv {
 public:
  void set(const char* name, const std::string& value) {
    const char* old = getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// Whether nothing listens on 127.0.0.1:port (a bind succeeds).
bool portFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

// A base port for one test: a block of kPortsScanned free ports away from NCCL's default 28028
// range that other tests use, picked by pid so that test processes running at once differ.
int basePort() {
  static std::atomic<int> next{0};
  for (int attempt = 0; attempt < 50; ++attempt) {
    const int block = static_cast<int>((getpid() * 7919L + (next++) * 131L) % 790);
    const int base = 20000 + block * 10;
    bool free = true;
    for (int p = base; p < base + kPortsScanned && free; ++p) free = portFree(p);
    if (free) return base;
  }
  return 20000;
}

struct RasRun {
  int status = -1;
  std::string out;
};

// Runs the accl-ras binary (support/spawn_capture.h). `env`: "NAME=value" entries that replace
// (or, "NAME=" alone, remove) the test's own.
RasRun runRas(const std::string& args, const std::vector<std::string>& env = {}) {
  static std::atomic<int> serial{0};
  const std::string out = testing::TempDir() + "accl_ras_out_" + std::to_string(getpid()) + "_" +
                          std::to_string(serial++);
  std::vector<std::string> words{ACCL_RAS_BIN};
  for (size_t at = 0; at < args.size();) {
    size_t end = args.find(' ', at);
    if (end == std::string::npos) end = args.size();
    if (end > at) words.push_back(args.substr(at, end - at));
    at = end + 1;
  }
  SpawnResult s = spawnAndCapture(words, env, out);
  return RasRun{s.status, s.out};
}

std::string scanArgs(int base, double timeoutS) {
  char buf[128];
  snprintf(buf, sizeof(buf), "-a 127.0.0.1:%d --scan %d -t %.1f", base, kPortsScanned, timeoutS);
  return buf;
}

bool matches(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern));
}

// The line of `rank` ("  rank 2: ..."), or "".
std::string rankLine(const std::string& text, int rank) {
  std::smatch m;
  std::regex re("(^|\\n)  rank " + std::to_string(rank) + ": ([^\\n]*)");
  return std::regex_search(text, m, re) ? m[2].str() : "";
}

// Fills the buffer with rank+1, runs an all-reduce, checks the sum 1+2+...+n.
void allReduceAndCheck(RankContext& ctx, ncclComm_t comm, std::vector<float>& buf) {
  std::fill(buf.begin(), buf.end(), static_cast<float>(ctx.rank + 1));
  if (!RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr))) return;
  const float want = ctx.nranks * (ctx.nranks + 1) / 2.0f;
  ctx.check(buf.front() == want && buf.back() == want, "rank %d: all-reduce gave %g..%g, want %g", ctx.rank,
            buf.front(), buf.back(), want);
}

// Waits (bounded) until `path` exists.
void waitForFile(const std::string& path, std::chrono::seconds limit) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end && access(path.c_str(), F_OK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

class RasTest : public testing::TestWithParam<LaunchMode> {
 protected:
  LaunchOptions opts() const {
    LaunchOptions o;
    o.mode = GetParam();
    o.nranks = kRanks;
    o.deadline = std::chrono::seconds(40);
    o.ids = makeUniqueIds(1);
    return o;
  }
};

// Ranks 0-2 enter all-reduce #2 while rank 3 waits for a file the querying thread creates once
// accl-ras showed what is wanted (or after 20 s): the job then completes with correct sums.
TEST_P(RasTest, ShowsTheStuckRanksOperationAndThePeerItWaitsFor) {
  const int base = basePort();
  ScopedEnv env;
  env.set("NCCL_RAS_ADDR", "127.0.0.1:" + std::to_string(base));
  env.set("ACCL_RAS_PORT_RANGE", std::to_string(kPortsScanned));
  env.set("NCCL_ALGO", "Ring");  // rank 0 then receives from rank 3 first
  const std::string release = testing::TempDir() + "accl_ras_release_" + std::to_string(getpid());
  unlink(release.c_str());

  std::string seen, last;
  std::thread query([&] {
    const auto end = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < end) {
      RasRun r = runRas(scanArgs(base, 2));
      last = r.out;
      std::string l0 = rankLine(r.out, 0);
      if (r.status == 0 && matches(l0, "waiting for .*rank 3 \\(") && matches(rankLine(r.out, 1), "^in AllReduce #2") &&
          matches(rankLine(r.out, 2), "^in AllReduce #2") && matches(rankLine(r.out, 3), "^idle")) {
        seen = r.out;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::ofstream(release) << "go\n";
  });
  LaunchResult res = launchRanks(opts(), [&release](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(kCount);
    allReduceAndCheck(ctx, comm, buf);                                           // #1
    if (ctx.rank == kRanks - 1) waitForFile(release, std::chrono::seconds(25));  // late for #2
    allReduceAndCheck(ctx, comm, buf);                                           // #2
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  query.join();
  unlink(release.c_str());
  EXPECT_RANKS_OK(res);
  ASSERT_FALSE(seen.empty()) << "accl-ras never showed ranks 0-2 in AllReduce #2 with rank 0 waiting for rank 3; "
                                "last output:\n"
                             << last;
  // The communicator and its ranks.
  EXPECT_TRUE(matches(seen, "comm 0x[0-9a-f]{16} nranks 4: ranks in this process")) << seen;
  if (GetParam() == LaunchMode::kFork) {
    // One process per rank, each on its own port.
    int processes = 0;
    for (size_t at = 0; (at = seen.find("accl-ras: process ", at)) != std::string::npos; ++at) ++processes;
    EXPECT_EQ(processes, kRanks) << seen;
    for (int r = 0; r < kRanks; ++r)
      EXPECT_TRUE(matches(seen, "ranks in this process " + std::to_string(r) + "\\n")) << seen;
  } else {
    EXPECT_TRUE(matches(seen, "ranks in this process 0 1 2 3\\n")) << seen;
  }
  // The stuck rank: its operation, sequence number, arguments, and the peer it waits for.
  const std::string l0 = rankLine(seen, 0);
  EXPECT_TRUE(matches(l0, "^in AllReduce #2 \\(count 1024 float32 sum\\) for [0-9.]+ s; waiting for ")) << l0;
  EXPECT_TRUE(matches(l0, "waiting for .*rank 3 \\([0-9.]+ s")) << l0;
  for (int r = 1; r <= 2; ++r) EXPECT_TRUE(matches(rankLine(seen, r), "waiting for rank [0-9]")) << seen;
  EXPECT_TRUE(matches(rankLine(seen, 3), "^idle after 1 collective and 0 send/recv batches; last AllReduce #1 "))
      << seen;
  EXPECT_TRUE(matches(seen, "dead or unreachable: none known to this process")) << seen;
}

// Rank 3 stops itself (SIGSTOP) after all-reduce #1: accl-ras shows it stopped, from /proc, and
// the querying thread continues it with SIGCONT, using the pid accl-ras printed.
TEST_P(RasTest, ShowsAStoppedPeer) {
  if (GetParam() != LaunchMode::kFork) GTEST_SKIP() << "a stopped rank needs its own process";
  const int base = basePort();
  ScopedEnv env;
  env.set("NCCL_RAS_ADDR", "127.0.0.1:" + std::to_string(base));
  env.set("ACCL_RAS_PORT_RANGE", std::to_string(kPortsScanned));
  env.set("NCCL_ALGO", "Ring");

  std::string seen, last;
  int stoppedPid = 0;
  std::thread query([&] {
    const auto end = Clock::now() + std::chrono::seconds(20);
    std::smatch m;
    std::regex stopped("rank 3 pid ([0-9]+) stopped");
    while (Clock::now() < end) {
      // The stopped process cannot answer: 1 s per try for its port.
      RasRun r = runRas(scanArgs(base, 1));
      last = r.out;
      if (std::regex_search(r.out, m, stopped) && matches(rankLine(r.out, 0), "waiting for .*rank 3 \\(")) {
        seen = r.out;
        stoppedPid = std::stoi(m[1].str());
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (stoppedPid > 0) kill(stoppedPid, SIGCONT);
  });
  LaunchResult res = launchRanks(opts(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(kCount);
    allReduceAndCheck(ctx, comm, buf);
    if (ctx.rank == kRanks - 1) raise(SIGSTOP);  // continued by the test's query thread
    allReduceAndCheck(ctx, comm, buf);
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  query.join();
  EXPECT_RANKS_OK(res);
  ASSERT_GT(stoppedPid, 0) << "accl-ras never showed rank 3 stopped; last output:\n" << last;
  EXPECT_TRUE(matches(seen, "dead or unreachable: rank 3 \\(pid " + std::to_string(stoppedPid) +
                                ": stopped by a signal, e.g. SIGSTOP\\)"))
      << seen;
  EXPECT_TRUE(matches(rankLine(seen, 0), "^in AllReduce #2 .*waiting for .*rank 3 \\(")) << seen;
}

// NCCL_RAS_ENABLE=0: no process of the job answers, while the job runs.
TEST_P(RasTest, DisabledBySetting) {
  const int base = basePort();
  ScopedEnv env;
  env.set("NCCL_RAS_ADDR", "127.0.0.1:" + std::to_string(base));
  env.set("ACCL_RAS_PORT_RANGE", std::to_string(kPortsScanned));
  env.set("NCCL_RAS_ENABLE", "0");
  LaunchResult res = launchRanks(opts(), [base](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(kCount);
    allReduceAndCheck(ctx, comm, buf);
    if (ctx.rank == 0) {
      RasRun r = runRas(scanArgs(base, 1));
      ctx.check(r.status == 1 && r.out.find("accl-ras: process") == std::string::npos,
                "accl-ras answered with NCCL_RAS_ENABLE=0 (exit %d):\n%s", r.status, r.out.c_str());
    }
    allReduceAndCheck(ctx, comm, buf);  // everyone alive until rank 0 has looked
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// A client that connects and sends nothing is cut off after ACCL_RAS_CLIENT_TIMEOUT_MS; the job's
// collectives run meanwhile, and the next client gets its answer.
TEST_P(RasTest, SilentClientIsCutOffWithoutHoldingUpTheJob) {
  const int base = basePort();
  ScopedEnv env;
  env.set("NCCL_RAS_ADDR", "127.0.0.1:" + std::to_string(base));
  env.set("ACCL_RAS_PORT_RANGE", std::to_string(kPortsScanned));
  env.set("ACCL_RAS_CLIENT_TIMEOUT_MS", "300");
  LaunchResult res = launchRanks(opts(), [base](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(kCount);
    allReduceAndCheck(ctx, comm, buf);
    if (ctx.rank == 0) {
      // Find this process's server: the port whose answer names this process.
      int port = 0;
      for (int p = base; p < base + kPortsScanned && !port; ++p) {
        RasRun r = runRas("-a 127.0.0.1:" + std::to_string(p) + " -t 2");
        if (r.out.find("accl-ras: process " + std::to_string(getpid()) + " ") != std::string::npos) port = p;
      }
      if (!ctx.check(port != 0, "rank 0: no RAS server of pid %d on ports %d-%d", (int)getpid(), base,
                     base + kPortsScanned - 1)) {
        ctx.destroyComm(comm);
        return;
      }
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ctx.check(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0, "connect to port %d failed", port);
      const auto t0 = Clock::now();
      // Collectives go on while the silent client is connected.
      for (int i = 0; i < 3; ++i) allReduceAndCheck(ctx, comm, buf);
      pollfd p{fd, POLLIN, 0};
      ctx.check(poll(&p, 1, 5000) == 1, "the server did not close a silent client within 5 s");
      char c;
      ctx.check(recv(fd, &c, 1, 0) == 0, "the server sent something to a client that asked nothing");
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      ctx.check(s < 3.0, "the silent client was cut off after %.2f s (ACCL_RAS_CLIENT_TIMEOUT_MS=300)", s);
      close(fd);
      RasRun r = runRas("-a 127.0.0.1:" + std::to_string(port) + " -t 2");
      ctx.check(r.status == 0 && r.out.find("rank 0: idle after 4 collectives") != std::string::npos,
                "accl-ras after the silent client (exit %d):\n%s", r.status, r.out.c_str());
      RasRun v = runRas("-a 127.0.0.1:" + std::to_string(port) + " --version");
      ctx.check(v.out.find("accl-ras protocol 1 library ") == 0, "accl-ras --version printed: %s", v.out.c_str());
    } else {
      for (int i = 0; i < 3; ++i) allReduceAndCheck(ctx, comm, buf);
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

// Encrypted job (ACCL_ENCRYPTION_PSK_FILE in the test's environment): accl-ras with the job's key
// gets its answer over TLS; with another key it fails at once, saying the keys differ; without a
// key it is still answered, in clear, because it asks through the loopback (the server refuses
// clear clients from other hosts only: tests/netns, NetCrypt.Socket.Wire.Psk).
TEST_P(RasTest, EncryptedServerRefusesAnotherKey) {
  const char* key = getenv("ACCL_ENCRYPTION_PSK_FILE");
  if (!key || !*key) GTEST_SKIP() << "runs with ACCL_ENCRYPTION_PSK_FILE set (ctest: Tls.RasTest.*)";
  const std::string otherKey = testing::TempDir() + "accl_ras_other_key_" + std::to_string(getpid());
  std::ofstream(otherKey) << "not the job's key, but long enough to be one: 0123456789\n";
  const int base = basePort();
  ScopedEnv env;
  env.set("NCCL_RAS_ADDR", "127.0.0.1:" + std::to_string(base));
  env.set("ACCL_RAS_PORT_RANGE", std::to_string(kPortsScanned));
  LaunchResult res = launchRanks(opts(), [base, otherKey](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    std::vector<float> buf(kCount);
    allReduceAndCheck(ctx, comm, buf);
    if (ctx.rank == 0) {
      const std::string at = "-a 127.0.0.1:" + std::to_string(base) + " --version -t 5";
      RasRun good = runRas(at);
      ctx.check(good.status == 0 && good.out.find("accl-ras protocol 1 library ") == 0,
                "accl-ras with the job's key (exit %d): %s", good.status, good.out.c_str());
      const auto t0 = Clock::now();
      RasRun bad = runRas(at, {"ACCL_ENCRYPTION_PSK_FILE=" + otherKey});
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      ctx.check(bad.status == 1 && bad.out.find("pre-shared key differs") != std::string::npos &&
                    bad.out.find("accl-ras protocol") == std::string::npos,
                "accl-ras with another key (exit %d) did not fail saying the keys differ: %s", bad.status,
                bad.out.c_str());
      ctx.check(s < 4.0, "accl-ras with another key took %.2f s to fail (its timeout: 5 s)", s);
      RasRun clear = runRas(at, {"ACCL_ENCRYPTION_PSK_FILE="});
      ctx.check(clear.status == 0 && clear.out.find("accl-ras protocol 1 library ") == 0,
                "accl-ras without a key through the loopback (exit %d): %s", clear.status, clear.out.c_str());
    }
    allReduceAndCheck(ctx, comm, buf);  // everyone alive until rank 0 has looked
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  unlink(otherKey.c_str());
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, RasTest, testing::Values(LaunchMode::kThreads, LaunchMode::kFork),
                         [](const testing::TestParamInfo<LaunchMode>& info) {
                           return std::string(launchModeName(info.param));
                         });

}  // namespace
}  // namespace accl::test
