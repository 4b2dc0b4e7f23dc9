// Issue 9 problem 5: whoever can reach a bootstrap port must not be able to join, stall or break a
// genuine job. Attacks from outside the job (raw sockets from the launching process, or a library
// client holding a copy of the id with a wrong secret) against the bootstrap root during init and
// against every rank's peer listener during collectives and ncclCommSplit. In every case the
// genuine 4-rank job must complete, with correct results, in about its undisturbed time.
// Bootstrap waits are bounded by ACCL_MP_BOOTSTRAP_TIMEOUT_MS (CMakeLists.txt) so a stalled init
// fails instead of hanging.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

constexpr int kRanks = 4;
constexpr int kSilent = 200;

// The root address stored in an id (bytes 8..35: a sockaddr_in or sockaddr_in6).
sockaddr_storage rootOf(const ncclUniqueId& id, socklen_t* len) {
  sockaddr_storage ss{};
  std::memcpy(&ss, id.internal + 8, 28);
  *len = ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  return ss;
}

int dial(const sockaddr_storage& addr, socklen_t len) {
  int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Starts a connection without waiting for it (listeners with a full backlog must not stall the
// attacker); -1 when the attempt failed at once.
int dialAsync(const sockaddr_storage& addr, socklen_t len) {
  int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Waits (at most timeoutMs) for an async connection to be established.
bool established(int fd, int timeoutMs) {
  pollfd p{fd, POLLOUT, 0};
  if (::poll(&p, 1, timeoutMs) != 1) return false;
  int err = 0;
  socklen_t l = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
  return err == 0;
}

void sendBytes(int fd, const void* data, size_t n) { (void)!::send(fd, data, n, MSG_NOSIGNAL); }

struct Fds {
  std::vector<int> fds;
  ~Fds() {
    for (int fd : fds) ::close(fd);
  }
};

// n connections that never send anything, held open until `out` goes away.
int openSilent(const sockaddr_storage& addr, socklen_t len, int n, Fds* out) {
  int opened = 0;
  for (int i = 0; i < n; ++i) {
    int fd = dial(addr, len);
    if (fd < 0) continue;
    out->fds.push_back(fd);
    ++opened;
  }
  return opened;
}

// The pre-hardening handshake (u64 magic from id bytes 0..7, i32 type 1) followed by a join in the
// pre-hardening layout: 96 bytes {kind "join", version 1, rank, nranks, nroots, rootIndex,
// timeoutMs, listenAddr[28], root0Addr[28], root0Magic}. Against the hardened root it is simply a
// connection that presents no valid proof of the secret.
std::vector<unsigned char> forgedJoin(const ncclUniqueId& id, int rank, int nranks,
                                      const sockaddr_storage& listenAddr) {
  std::vector<unsigned char> b(12 + 96, 0);
  std::memcpy(b.data(), id.internal, 8);
  int32_t type = 1;
  std::memcpy(b.data() + 8, &type, 4);
  unsigned char* j = b.data() + 12;
  uint32_t kind = 0x6a6f696e, version = 1;
  int32_t nroots = 1, rootIndex = 0;
  int64_t timeoutMs = 100000;
  std::memcpy(j + 0, &kind, 4);
  std::memcpy(j + 4, &version, 4);
  std::memcpy(j + 8, &rank, 4);
  std::memcpy(j + 12, &nranks, 4);
  std::memcpy(j + 16, &nroots, 4);
  std::memcpy(j + 20, &rootIndex, 4);
  std::memcpy(j + 24, &timeoutMs, 8);
  std::memcpy(j + 32, &listenAddr, 28);
  std::memcpy(j + 60, id.internal + 8, 28);
  std::memcpy(j + 88, id.internal, 8);
  return b;
}

// A listener the forger offers as "rank 1's" address; counts who dials it.
struct Trap {
  int fd = -1;
  sockaddr_storage addr{};
  socklen_t len = 0;
  Trap(const sockaddr_storage& like) {
    fd = ::socket(like.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_storage a = like;
    if (a.ss_family == AF_INET6)
      reinterpret_cast<sockaddr_in6*>(&a)->sin6_port = 0;
    else
      reinterpret_cast<sockaddr_in*>(&a)->sin_port = 0;
    len = a.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    (void)!::bind(fd, reinterpret_cast<sockaddr*>(&a), len);
    (void)!::listen(fd, 64);
    socklen_t l = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &l);
  }
  ~Trap() { ::close(fd); }
  int dialedCount() {
    int n = 0;
    while (true) {
      int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) break;
      ::close(c);
      ++n;
    }
    return n;
  }
};

// The genuine job: init, a checked all-reduce, destroy. Each rank notes its init time in ms.
void genuineJob(RankContext& ctx) {
  auto t0 = std::chrono::steady_clock::now();
  ncclComm_t comm;
  if (!initComm(ctx, &comm)) return;
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ctx.note("init_ms=%.1f", ms);
  std::vector<float> buf(1000, static_cast<float>(ctx.rank + 1));
  if (RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr)))
    ctx.check(buf[0] == 10.0f && buf[999] == 10.0f, "rank %d: all-reduce gave %g, want 10", ctx.rank, buf[0]);
  RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
}

LaunchOptions jobOptions(const ncclUniqueId& id) {
  LaunchOptions o;
  o.mode = LaunchMode::kFork;
  o.nranks = kRanks;
  o.deadline = std::chrono::seconds(40);
  o.ids = {id};
  return o;
}

double maxInitMs(const LaunchResult& res) {
  double worst = 0;
  for (const RankOutcome& r : res.ranks)
    for (const std::string& n : r.notes) {
      double v = 0;
      if (std::sscanf(n.c_str(), "init_ms=%lf", &v) == 1 && v > worst) worst = v;
    }
  return worst;
}

double undisturbedInitMs() {
  static double cached = -1;
  if (cached >= 0) return cached;
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  LaunchResult res = launchRanks(jobOptions(id), genuineJob);
  EXPECT_RANKS_OK(res);
  cached = maxInitMs(res);
  return cached;
}

TEST(BootstrapAttackTest, ForgedJoinClaimingRankOneIsRejected) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  socklen_t len;
  sockaddr_storage root = rootOf(id, &len);
  Trap trap(root);
  Fds held;
  int fd = dial(root, len);
  ASSERT_GE(fd, 0);
  held.fds.push_back(fd);
  std::vector<unsigned char> join = forgedJoin(id, 1, kRanks, trap.addr);
  sendBytes(fd, join.data(), join.size());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the forger is first in line
  LaunchResult res = launchRanks(jobOptions(id), genuineJob);
  EXPECT_RANKS_OK(res);
  EXPECT_EQ(trap.dialedCount(), 0) << "a genuine rank dialed the forger's listener";
}

TEST(BootstrapAttackTest, ForgedJoinWithHugeNranksLeavesTheRootServing) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  socklen_t len;
  sockaddr_storage root = rootOf(id, &len);
  Fds held;
  int fd = dial(root, len);
  ASSERT_GE(fd, 0);
  held.fds.push_back(fd);
  std::vector<unsigned char> join = forgedJoin(id, 0, INT32_MAX, root);
  sendBytes(fd, join.data(), join.size());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  LaunchResult res = launchRanks(jobOptions(id), genuineJob);
  EXPECT_RANKS_OK(res);
}

TEST(BootstrapAttackTest, JunkAndOversizedLengthsLeaveTheRootServing) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  socklen_t len;
  sockaddr_storage root = rootOf(id, &len);
  Fds held;
  // Junk bytes.
  int fd = dial(root, len);
  ASSERT_GE(fd, 0);
  held.fds.push_back(fd);
  std::string junk(4096, '\xa5');
  sendBytes(fd, junk.data(), junk.size());
  // A header whose length fields are all ones (a message header {tag, reserved, u64 bytes} and
  // a wire header {kind, version, u32 bytes, reserved} both read as huge lengths).
  fd = dial(root, len);
  ASSERT_GE(fd, 0);
  held.fds.push_back(fd);
  std::vector<unsigned char> huge(256, 0xff);
  std::memcpy(huge.data(), id.internal, 8);
  sendBytes(fd, huge.data(), huge.size());
  // Correct-looking handshake bytes, then nothing.
  fd = dial(root, len);
  ASSERT_GE(fd, 0);
  held.fds.push_back(fd);
  sendBytes(fd, id.internal, 8);
  LaunchResult res = launchRanks(jobOptions(id), genuineJob);
  EXPECT_RANKS_OK(res);
}

// A process that has a copy of the id with a different secret (bytes 40..71) tries to join as
// rank 1 through the library itself: it must be refused, and the genuine job must complete.
TEST(BootstrapAttackTest, WrongSecretThroughTheApiIsRefused) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclUniqueId forged = id;
  for (int i = 40; i < 72; ++i) forged.internal[i] ^= 0x5a;
  std::thread forger([&] {
    ncclComm_t comm = nullptr;
    ncclResult_t r = ncclCommInitRank(&comm, kRanks, forged, 1);
    EXPECT_NE(r, ncclSuccess) << "a rank with the wrong secret joined";
    if (comm) ncclCommAbort(comm);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  LaunchResult res = launchRanks(jobOptions(id), genuineJob);
  forger.join();
  EXPECT_RANKS_OK(res);
}

TEST(BootstrapAttackTest, SilentConnectionsDoNotDelayInit) {
  double base = undisturbedInitMs();
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  socklen_t len;
  sockaddr_storage root = rootOf(id, &len);
  Fds held;
  ASSERT_EQ(openSilent(root, len, kSilent, &held), kSilent);
  LaunchResult res = launchRanks(jobOptions(id), genuineJob);
  EXPECT_RANKS_OK(res);
  double attacked = maxInitMs(res);
  double ratio = base > 0 ? attacked / base : 0;
  std::printf("[ figures ] 4-rank init: undisturbed %.1f ms, with %d silent connections on the root %.1f ms "
              "(ratio %.2f)\n",
              base, kSilent, attacked, ratio);
  RecordProperty("init_undisturbed_ms", std::to_string(base));
  RecordProperty("init_under_attack_ms", std::to_string(attacked));
  // "About the undisturbed time": generous for a loaded 2-core CI machine, far below the 1 s per
  // stranger a serial root would take.
  EXPECT_LT(attacked, 5 * base + 1000);
}

// ---- Peer listeners ------------------------------------------------------------------------------

// The TCP listeners this process owns (from /proc/self/fd and /proc/net/tcp{,6}), except `skipPort`.
std::vector<sockaddr_storage> ownListeners(uint16_t skipPort) {
  std::set<std::string> inodes;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char link[256];
      std::string path = std::string("/proc/self/fd/") + e->d_name;
      ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
      if (n <= 0) continue;
      link[n] = 0;
      unsigned long ino;
      if (std::sscanf(link, "socket:[%lu]", &ino) == 1) inodes.insert(std::to_string(ino));
    }
    closedir(d);
  }
  std::vector<sockaddr_storage> out;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream s(line);
      std::string sl, local, remote, st, q, tr, rt, uid, to, inode;
      s >> sl >> local >> remote >> st >> q >> tr >> rt >> uid >> to >> inode;
      if (st != "0A" || !inodes.count(inode)) continue;
      size_t colon = local.find(':');
      unsigned port = std::stoul(local.substr(colon + 1), nullptr, 16);
      if (port == skipPort) continue;
      std::string hex = local.substr(0, colon);
      sockaddr_storage ss{};
      if (hex.size() == 8) {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        a->sin_addr.s_addr = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
      } else {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        for (int w = 0; w < 4; ++w) {
          uint32_t word = static_cast<uint32_t>(std::stoul(hex.substr(w * 8, 8), nullptr, 16));
          std::memcpy(&a->sin6_addr.s6_addr[w * 4], &word, 4);
        }
      }
      out.push_back(ss);
    }
  }
  return out;
}

uint16_t portOf(const sockaddr_storage& ss) {
  return ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port
                                        : reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
}

// Init, then all-reduces; `attack` (if set) runs against this rank's own listeners between the
// first collectives and the split; then ncclCommSplit into two halves and a checked all-reduce on
// the child. Notes the time from the attack point to the end of the split in ms.
void collectivesAndSplit(RankContext& ctx, bool attack) {
  ncclComm_t comm;
  if (!initComm(ctx, &comm)) return;
  std::vector<float> buf(1000);
  auto allReduce = [&](ncclComm_t c, float want) {
    int n = 0, me = 0;
    ncclCommCount(c, &n);
    ncclCommUserRank(c, &me);
    std::fill(buf.begin(), buf.end(), 1.0f);
    if (RANK_NCCL_OK(ctx, ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, c, nullptr)))
      ctx.check(buf[0] == want, "rank %d: all-reduce gave %g, want %g", ctx.rank, buf[0], want);
  };
  allReduce(comm, kRanks);
  Fds held;
  if (attack) {
    socklen_t rootLen;
    uint16_t rootPort = portOf(rootOf(ctx.id(), &rootLen));
    std::vector<sockaddr_storage> targets = ownListeners(rootPort);
    ctx.check(!targets.empty(), "rank %d: found no listener of its own to attack", ctx.rank);
    for (const sockaddr_storage& t : targets) ctx.note("rank %d attacks port %u", ctx.rank, portOf(t));
    for (const sockaddr_storage& t : targets) {
      socklen_t len = t.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
      // A spoofed pre-hardening hello: magic of the id, type 1, then "I am rank 0" (ring and p2p).
      for (uint32_t link : {1u, 2u}) {
        int fd = dialAsync(t, len);
        if (fd < 0) continue;
        if (!established(fd, 200)) {
          ::close(fd);
          continue;
        }
        held.fds.push_back(fd);
        unsigned char hello[20] = {};
        std::memcpy(hello, ctx.id().internal, 8);
        int32_t type = 1, from = 0;
        std::memcpy(hello + 8, &type, 4);
        std::memcpy(hello + 12, &link, 4);
        std::memcpy(hello + 16, &from, 4);
        sendBytes(fd, hello, sizeof(hello));
      }
      for (int i = 0; i < kSilent / kRanks; ++i) {
        int fd = dialAsync(t, len);
        if (fd >= 0) held.fds.push_back(fd);
      }
    }
  }
  allReduce(comm, kRanks);  // every rank has finished its attack: start the clock together
  auto t0 = std::chrono::steady_clock::now();
  auto stage = [&](const char* what) {
    ctx.note("rank %d %s at %.1f ms", ctx.rank, what,
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  };
  for (int i = 0; i < 5; ++i) allReduce(comm, kRanks);
  stage("all-reduces done");
  ncclComm_t child = nullptr;
  if (RANK_NCCL_OK(ctx, ncclCommSplit(comm, ctx.rank % 2, ctx.rank, &child, nullptr)) && child) {
    allReduce(child, kRanks / 2);
    RANK_NCCL_OK(ctx, ncclCommDestroy(child));
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ctx.note("split_ms=%.1f", ms);
  RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
}

double maxSplitMs(const LaunchResult& res) {
  double worst = 0;
  for (const RankOutcome& r : res.ranks)
    for (const std::string& n : r.notes) {
      double v = 0;
      if (std::sscanf(n.c_str(), "split_ms=%lf", &v) == 1 && v > worst) worst = v;
    }
  return worst;
}

TEST(BootstrapAttackTest, SpoofedHellosAndSilentConnectionsOnPeerListeners) {
  ncclUniqueId id1, id2;
  ASSERT_EQ(ncclGetUniqueId(&id1), ncclSuccess);
  ASSERT_EQ(ncclGetUniqueId(&id2), ncclSuccess);
  LaunchResult quiet = launchRanks(jobOptions(id1), [](RankContext& ctx) { collectivesAndSplit(ctx, false); });
  ASSERT_RANKS_OK(quiet);
  LaunchResult attacked =
      launchRanks(jobOptions(id2), [](RankContext& ctx) { collectivesAndSplit(ctx, true); });
  EXPECT_RANKS_OK(attacked);
  for (const RankOutcome& r : attacked.ranks)
    for (const std::string& n : r.notes) std::printf("  %s\n", n.c_str());
  double base = maxSplitMs(quiet), hit = maxSplitMs(attacked);
  std::printf("[ figures ] 4 ranks, 5 all-reduces + split + all-reduce: undisturbed %.1f ms, with spoofed "
              "hellos and %d silent connections on the peer listeners %.1f ms (ratio %.2f)\n",
              base, kSilent, hit, base > 0 ? hit / base : 0);
  EXPECT_LT(hit, 5 * base + 1000);
}

// Issue 9 problem 7: nranks beyond what the library supports is an invalid argument.
TEST(BootstrapAttackTest, HugeNranksIsInvalidArgument) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, INT32_MAX, id, 0), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("2147483647"), std::string::npos)
      << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommInitRank(&comm, INT32_MAX, id, INT32_MAX - 1), ncclInvalidArgument);
  if (comm) ncclCommAbort(comm);
  ncclComm_t few[2] = {nullptr, nullptr};
  EXPECT_EQ(ncclCommInitAll(few, INT32_MAX, nullptr), ncclInvalidArgument);
  EXPECT_EQ(few[0], nullptr);
}

}  // namespace
}  // namespace accl::test
