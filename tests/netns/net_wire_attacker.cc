// Bad input on the wire (net_matrix_rank attack): while the ranks make their communicator and run
// all-reduces, an attacker process in host 0's namespace (forked by rank 0 before init) watches
// that namespace's listening TCP ports (/proc/net/tcp and tcp6, state LISTEN) and opens three
// connections to each new one: one that sends 64 random bytes, one that sends a well-formed
// handshake with a wrong magic (u64 random magic, i32 SocketType kNetSocket = 3, 16 bytes of
// hello), and one that sends nothing at all and stays open until the ranks are done. This hits the
// bootstrap root and peer listeners as well as the net transport's listeners. The ranks in the
// other hosts wait ACCL_NM_ATTACK_DELAY_S (default 1 s) before init and before their first
// collective, so host 0's listeners stay open long enough to be found.
// The communicator must still complete and every all-reduce be right; net_matrix.sh also checks
// that the rejections were logged. ACCL_NM_ATTACK_HOLD_S (default 0) keeps every rank's
// communicator open that long after the all-reduces, so that silent connections time out too.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mp/collective_runner.h"
#include "netns/net_matrix_rank.h"

namespace accl::test {
namespace {

struct Listener {
  bool v6;
  uint16_t port;
  std::string inode;
  bool operator<(const Listener& o) const { return std::tie(v6, port, inode) < std::tie(o.v6, o.port, o.inode); }
};

std::vector<Listener> listeners() {
  std::vector<Listener> out;
  for (bool v6 : {false, true}) {
    std::ifstream in(v6 ? "/proc/net/tcp6" : "/proc/net/tcp");
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string sl, local, remote, state, txrx, tr, retr, uid, timeout, inode;
      ls >> sl >> local >> remote >> state >> txrx >> tr >> retr >> uid >> timeout >> inode;
      if (state != "0A") continue;
      const size_t colon = local.rfind(':');
      if (colon == std::string::npos) continue;
      out.push_back({v6, (uint16_t)std::stoul(local.substr(colon + 1), nullptr, 16), inode});
    }
  }
  return out;
}

int connectTo(const Listener& l) {
  // Every listener of the ranks is reachable at the host's address (10.77.0.1) or on loopback.
  int fd = socket(l.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int rc;
  if (l.v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(l.port);
    a.sin6_addr = in6addr_loopback;
    rc = connect(fd, (sockaddr*)&a, sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(l.port);
    inet_pton(AF_INET, "10.77.0.1", &a.sin_addr);
    rc = connect(fd, (sockaddr*)&a, sizeof(a));
    if (rc != 0) {
      close(fd);
      fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      rc = connect(fd, (sockaddr*)&a, sizeof(a));
    }
  }
  if (rc != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The attacker: runs until `stopFd` becomes readable (rank 0 closed its end) or 120 s pass.
[[noreturn]] void attackerMain(int stopFd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  signal(SIGPIPE, SIG_IGN);
  std::mt19937_64 rng(std::random_device{}());
  std::set<Listener> seen;
  std::vector<int> held;
  int probed = 0, refused = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (;;) {
    pollfd p{stopFd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0 || std::chrono::steady_clock::now() > until) break;
    for (const Listener& l : listeners()) {
      if (!seen.insert(l).second) continue;
      // 1: junk.
      int junk = connectTo(l);
      if (junk < 0) {
        ++refused;
        continue;
      }
      char bytes[64];
      for (char& b : bytes) b = (char)rng();
      (void)!write(junk, bytes, sizeof(bytes));
      held.push_back(junk);
      // 2: the handshake's shape with a wrong magic.
      int wrong = connectTo(l);
      if (wrong >= 0) {
        char hello[28] = {};
        const uint64_t magic = rng();
        const int32_t type = 3;  // SocketType::kNetSocket
        std::memcpy(hello, &magic, 8);
        std::memcpy(hello + 8, &type, 4);
        const uint64_t connId = rng() | 1;
        std::memcpy(hello + 12, &connId, 8);
        (void)!write(wrong, hello, sizeof(hello));
        held.push_back(wrong);
      }
      // 3: silence.
      int silent = connectTo(l);
      if (silent >= 0) held.push_back(silent);
      ++probed;
      std::printf("attacker (host 0): probed listening port %u%s (junk, wrong magic, silent)\n", l.port,
                  l.v6 ? " [v6]" : "");
      std::fflush(stdout);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (int fd : held) close(fd);
  std::printf("attacker (host 0): probed %d listening ports, %d refused the connection\n", probed, refused);
  std::fflush(stdout);
  _exit(probed > 0 ? 0 : 3);
}

}  // namespace

int runAttackMode(const MhRank& me) {
  int stop[2] = {-1, -1};
  pid_t attacker = -1;
  if (me.rank == 0) {
    if (pipe2(stop, O_CLOEXEC) != 0) return 1;
    std::fflush(stdout);
    attacker = fork();
    if (attacker < 0) return 1;
    if (attacker == 0) {
      close(stop[1]);
      attackerMain(stop[0]);
    }
    close(stop[0]);
  }
  const double delayS = envDouble("ACCL_NM_ATTACK_DELAY_S", 1.0);
  auto delay = [&] {
    if (me.host != 0) std::this_thread::sleep_for(std::chrono::milliseconds((int)(delayS * 1000)));
  };
  int code = 0;
  {
    PrintingContext pc(me);
    RankContext& ctx = pc.ctx();
    ncclUniqueId id;
    delay();
    ncclComm_t comm = nullptr;
    ncclResult_t res = sharedUniqueId(me, &id) ? ncclCommInitRank(&comm, me.nranks, id, me.rank) : ncclInternalError;
    if (res != ncclSuccess) {
      ctx.fail("ncclCommInitRank under attack returned %d (%s): %s", res, ncclGetErrorString(res),
               ncclGetLastError(nullptr));
    } else {
      delay();
      CollectiveRunner runner(ctx, comm, "attack");
      const size_t counts[] = {1, 4099, 1 << 20};
      bool ok = true;
      for (size_t n : counts) {
        CaseSpec cs;
        cs.coll = Coll::kAllReduce;
        cs.type = ncclFloat32;
        cs.op = Op::kSum;
        cs.count = n;
        if (!(ok = runner.run(cs))) break;
      }
      runner.finish(3);
      // Stay a while, so the silent connections meet the listeners' handshake timeout
      // (ACCL_SOCKET_HANDSHAKE_MS) and their rejection is logged too.
      std::this_thread::sleep_for(std::chrono::milliseconds((int)(envDouble("ACCL_NM_ATTACK_HOLD_S", 0) * 1000)));
      res = ok ? ncclCommDestroy(comm) : ncclCommAbort(comm);
      ctx.check(res == ncclSuccess, "closing the communicator returned %d: %s", res, ncclGetLastError(nullptr));
    }
    code = pc.failed() ? 1 : 0;
    if (!code) ctx.note("communicator made and all-reduces right despite the attacker");
  }
  if (attacker > 0) {
    close(stop[1]);
    int status = 0;
    while (waitpid(attacker, &status, 0) < 0) {}
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      std::fprintf(stderr, "FAIL %s: the attacker probed nothing (wait status 0x%x)\n", me.tag.c_str(), status);
      code = 1;
    }
  }
  return code;
}

}  // namespace accl::test
