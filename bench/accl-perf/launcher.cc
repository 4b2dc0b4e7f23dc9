// Thread, fork and mpirun launchers and the TCP rendezvous of the mpirun mode (see launcher.h).
#include "launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "channel.h"
#include "plan.h"
#include "rank_device.h"
#include "rank_runner.h"
#include "reporter.h"

namespace accl::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The ranks of this process, one thread each.
class LocalRanks {
 public:
  void start(const Options& o, const Plan& plan, const ncclUniqueId& id, int firstRank, int count, int localBase,
             const std::vector<int>& fds, bool closeFds, bool cuda) {
    contexts_.resize(count);
    codes_.assign(count, 0);
    for (int i = 0; i < count; ++i) {
      RankContext& c = contexts_[i];
      c.opts = &o;
      c.plan = &plan;
      c.rank = firstRank + i;
      c.nranks = plan.nranks;
      c.localIndex = localBase + i;
      c.id = id;
      c.fd = fds[i];
      c.closeFd = closeFds;
      c.cuda = cuda;
    }
    for (int i = 0; i < count; ++i)
      threads_.emplace_back([this, i] {
        codes_[i] = runRank(contexts_[i]);
        finished_.fetch_add(1);
      });
  }
  int finished() const { return finished_.load(); }
  int count() const { return (int)threads_.size(); }
  bool waitFinished(double seconds) const {
    auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    while (finished() < count()) {
      if (Clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  // Joins every thread; returns the first non-zero rank exit code.
  int join() {
    int worst = 0;
    for (size_t i = 0; i < threads_.size(); ++i) {
      threads_[i].join();
      if (!worst) worst = codes_[i];
    }
    threads_.clear();
    return worst;
  }

 private:
  std::vector<RankContext> contexts_;
  std::vector<int> codes_;
  std::vector<std::thread> threads_;
  std::atomic<int> finished_{0};
};

std::string describeLaunch(int nranks, int procs, int perProc, const char* procWord) {
  return std::to_string(nranks) + " ranks = " + std::to_string(procs) + " " + procWord + " x " +
         std::to_string(perProc) + " rank thread" + (perProc == 1 ? "" : "s");
}

bool getUniqueId(ncclUniqueId* id) {
  ncclResult_t res = ncclGetUniqueId(id);
  if (res != ncclSuccess) {
    std::printf(" .. accl-perf: ncclGetUniqueId failed: %s\n", ncclErrorText(res).c_str());
    std::fflush(stdout);
    return false;
  }
  return true;
}

// Leaves the process at once, without waiting for rank threads stuck inside the library.
[[noreturn]] void leaveNow(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

bool makePipes(int n, std::vector<int>* readEnds, std::vector<int>* writeEnds) {
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
      std::perror("accl-perf: pipe");
      return false;
    }
    readEnds->push_back(p[0]);
    writeEnds->push_back(p[1]);
  }
  return true;
}

// ---- mpirun rendezvous ----

constexpr uint64_t kHelloMagic = 0x6163636c2d726476ull;  // "accl-rdv"

struct RdvHello {
  uint64_t magic;
  uint64_t nonce;
  int32_t rank;
  int32_t pad;
};

struct RdvReply {
  uint64_t magic;
  uint64_t nonce;
  ncclUniqueId id;
};

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += (isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_') ? c : '_';
  return out.substr(0, 100);
}

std::string rendezvousPath(const MpiJob& job) {
  const char* dir = std::getenv("ACCL_PERF_RDV_DIR");
  if (!dir || !*dir) dir = std::getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  return std::string(dir) + "/accl-perf-" + std::to_string(getuid()) + "-" + sanitize(job.key) + ".rdv";
}

// Waits until fd is readable (true) or the timeout expires (false).
bool waitReadable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    int rc = poll(&p, 1, ms);
    if (rc < 0 && errno == EINTR) continue;
    return rc > 0;
  }
}

// ACCL_PERF_RDV=<IPv4 address>:<port>: process 0 listens there and the others connect there, with
// no rendezvous file (processes on different hosts or network namespaces). False when unset.
bool fixedRendezvous(sockaddr_in* out) {
  const char* v = std::getenv("ACCL_PERF_RDV");
  if (!v || !*v) return false;
  std::string text = v;
  size_t colon = text.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  int port = colon == std::string::npos ? 0 : std::atoi(text.c_str() + colon + 1);
  if (colon == std::string::npos || port <= 0 || port > 65535 ||
      inet_pton(AF_INET, text.substr(0, colon).c_str(), &a.sin_addr) != 1) {
    std::fprintf(stderr, "accl-perf: ACCL_PERF_RDV=\"%s\" is not <IPv4 address>:<port>; using the rendezvous file\n", v);
    return false;
  }
  a.sin_port = htons((uint16_t)port);
  *out = a;
  return true;
}

// The job's nonce when there is no file to carry a random one: a hash of the job key.
uint64_t keyNonce(const std::string& key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

int listenLoopback(int* port, const sockaddr_in* at = nullptr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const char* fixed = std::getenv("ACCL_PERF_RDV_PORT");
  addr.sin_port = htons(fixed ? (uint16_t)std::atoi(fixed) : 0);
  if (at) addr = *at;
  socklen_t len = sizeof(addr);
  if (bind(fd, (sockaddr*)&addr, sizeof(addr)) != 0 || listen(fd, 256) != 0 ||
      getsockname(fd, (sockaddr*)&addr, &len) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

int connectLoopback(int port, const sockaddr_in* at = nullptr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((uint16_t)port);
  if (at) addr = *at;
  if (connect(fd, (sockaddr*)&addr, sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool readRendezvousFile(const std::string& path, int* port, uint64_t* nonce) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return false;
  unsigned long long n = 0;
  int p = 0;
  bool ok = std::fscanf(f, "accl-perf-rdv 1 %d %llu", &p, &n) == 2;
  std::fclose(f);
  if (!ok) return false;
  *port = p;
  *nonce = n;
  return true;
}

}  // namespace

bool detectMpiJob(MpiJob* job) {
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return (v && *v) ? v : nullptr;
  };
  const char *size = nullptr, *rank = nullptr, *local = nullptr, *key = nullptr;
  std::string fallbackKey;
  if (env("ACCL_PERF_NPROCS") && env("ACCL_PERF_PROC")) {
    size = env("ACCL_PERF_NPROCS");
    rank = env("ACCL_PERF_PROC");
    local = env("ACCL_PERF_LOCAL_PROC");
    key = env("ACCL_PERF_JOBKEY");
    fallbackKey = "env-" + std::to_string(getppid());
  } else if (env("OMPI_COMM_WORLD_SIZE") && env("OMPI_COMM_WORLD_RANK")) {
    size = env("OMPI_COMM_WORLD_SIZE");
    rank = env("OMPI_COMM_WORLD_RANK");
    local = env("OMPI_COMM_WORLD_LOCAL_RANK");
    key = env("OMPI_MCA_ess_base_jobid");
    if (!key) key = env("PMIX_NAMESPACE");
    fallbackKey = "ompi-" + std::to_string(getppid());
  } else if (env("PMI_SIZE") && env("PMI_RANK")) {
    size = env("PMI_SIZE");
    rank = env("PMI_RANK");
    local = env("MPI_LOCALRANKID");
    key = env("PMI_JOBID");
    fallbackKey = "pmi-" + std::to_string(getppid());
  } else {
    return false;
  }
  job->size = std::atoi(size);
  job->rank = std::atoi(rank);
  job->localRank = local ? std::atoi(local) : job->rank;
  job->key = key ? key : fallbackKey;
  return job->size > 1 && job->rank >= 0 && job->rank < job->size;
}

int launchThreads(const Options& o, const LaunchEnv& env) {
  const int n = o.ranksPerProcess();
  Plan plan = makePlan(o, n);
  ncclUniqueId id;
  if (!getUniqueId(&id)) return kExitNcclError;
  std::vector<int> readEnds, writeEnds;
  if (!makePipes(n, &readEnds, &writeEnds)) return kExitNcclError;
  LocalRanks ranks;
  ranks.start(o, plan, id, 0, n, 0, writeEnds, true, env.cuda);
  ReporterInput in;
  in.opts = &o;
  in.plan = &plan;
  in.fds = readEnds;
  in.pids.assign(n, -1);
  in.launch = describeLaunch(n, 1, n, "process");
  in.backend = env.backend;
  in.libraryVersion = env.libraryVersion;
  int code = runReporter(in);
  if (code != kExitOk && code != kExitWrongData && !ranks.waitFinished(2.0)) {
    std::printf(" .. accl-perf: %d rank thread(s) still inside the library; exiting without them\n",
                ranks.count() - ranks.finished());
    leaveNow(code);
  }
  int rankCode = ranks.join();
  for (int fd : readEnds) close(fd);
  return code != kExitOk ? code : rankCode;
}

int launchForked(const Options& o, const LaunchEnv& env) {
  const int perProc = o.ranksPerProcess();
  const int procs = o.procs;
  const int n = procs * perProc;
  Plan plan = makePlan(o, n);
  ncclUniqueId id;
  if (!getUniqueId(&id)) return kExitNcclError;  // made once, in the parent, before any fork
  std::vector<int> readEnds, writeEnds;
  if (!makePipes(n, &readEnds, &writeEnds)) return kExitNcclError;
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid();
  std::vector<pid_t> children(procs, -1);
  for (int p = 0; p < procs; ++p) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("accl-perf: fork");
      for (pid_t c : children)
        if (c > 0) kill(c, SIGKILL);
      return kExitNcclError;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the reporter
      if (getppid() != parent) _exit(kExitNcclError);
      std::vector<int> mine;
      for (int r = 0; r < n; ++r) {
        close(readEnds[r]);
        if (r / perProc == p) mine.push_back(writeEnds[r]);
        else close(writeEnds[r]);
      }
      LocalRanks ranks;
      ranks.start(o, plan, id, p * perProc, perProc, p * perProc, mine, true, env.cuda);
      int code = ranks.join();
      std::fflush(stdout);
      _exit(code);
    }
    children[p] = pid;
  }
  for (int fd : writeEnds) close(fd);
  ReporterInput in;
  in.opts = &o;
  in.plan = &plan;
  in.fds = readEnds;
  for (int r = 0; r < n; ++r) in.pids.push_back(children[r / perProc]);
  in.launch = describeLaunch(n, procs, perProc, "forked processes");
  in.backend = env.backend;
  in.libraryVersion = env.libraryVersion;
  int code = runReporter(in);
  const bool stopAll = code != kExitOk && code != kExitWrongData;
  int childCode = 0;
  for (pid_t c : children) {
    int status = 0;
    pid_t got = waitpid(c, &status, WNOHANG);
    if (got < 0) continue;  // already reaped by the reporter
    if (got == 0) {
      // Still running. After a failure, stop it (a rank stuck in the library would hold the run forever);
      // it cannot be someone else's process: an unreaped child keeps its pid.
      if (stopAll) kill(c, SIGKILL);
      if (waitpid(c, &status, 0) != c) continue;
    }
    if (!childCode && WIFEXITED(status) && WEXITSTATUS(status) != 0) childCode = WEXITSTATUS(status);
    if (!childCode && WIFSIGNALED(status) && !stopAll) childCode = kExitNcclError;
  }
  for (int fd : readEnds) close(fd);
  return code != kExitOk ? code : childCode;
}

int launchMpi(const Options& o, const LaunchEnv& env, const MpiJob& job) {
  const int perProc = o.ranksPerProcess();
  const int n = job.size * perProc;
  const int firstRank = job.rank * perProc;
  Plan plan = makePlan(o, n);
  const std::string path = rendezvousPath(job);
  sockaddr_in rdvAddr{};
  const bool fixedRdv = fixedRendezvous(&rdvAddr);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(o.timeoutSec));

  if (job.rank == 0) {
    ncclUniqueId id;
    if (!getUniqueId(&id)) return kExitNcclError;
    int port = 0;
    int lfd = listenLoopback(&port, fixedRdv ? &rdvAddr : nullptr);
    if (lfd < 0) {
      std::perror(fixedRdv ? "accl-perf: rendezvous listen on ACCL_PERF_RDV" : "accl-perf: rendezvous listen on 127.0.0.1");
      return kExitNcclError;
    }
    std::random_device rd;
    uint64_t nonce = fixedRdv ? keyNonce(job.key) : ((uint64_t)rd() << 32) ^ rd() ^ (uint64_t)getpid();
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    FILE* f = fixedRdv ? nullptr : std::fopen(tmp.c_str(), "w");
    if (fixedRdv) {
      // No file: the others know the address and the job key.
    } else if (!f || std::fprintf(f, "accl-perf-rdv 1 %d %llu\n", port, (unsigned long long)nonce) < 0 ||
        std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::fprintf(stderr, "accl-perf: cannot write the rendezvous file %s\n", path.c_str());
      close(lfd);
      return kExitNcclError;
    }
    std::vector<int> fds(n, -1);
    std::vector<int> readEnds, writeEnds;
    if (!makePipes(perProc, &readEnds, &writeEnds)) return kExitNcclError;
    for (int i = 0; i < perProc; ++i) fds[i] = readEnds[i];
    LocalRanks ranks;
    ranks.start(o, plan, id, 0, perProc, job.localRank * perProc, writeEnds, true, env.cuda);
    int missing = n - perProc;
    while (missing > 0) {
      int ms = (int)std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (ms <= 0 || !waitReadable(lfd, ms)) break;
      int c = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      RdvHello hello{};
      if (!waitReadable(c, 10000) || !readAll(c, &hello, sizeof(hello)) || hello.magic != kHelloMagic ||
          hello.nonce != nonce || hello.rank < perProc || hello.rank >= n || fds[hello.rank] >= 0) {
        close(c);
        continue;
      }
      RdvReply reply{kHelloMagic, nonce, id};
      if (!writeAll(c, &reply, sizeof(reply))) {
        close(c);
        continue;
      }
      fds[hello.rank] = c;
      --missing;
    }
    close(lfd);
    if (!fixedRdv) unlink(path.c_str());
    if (missing > 0) {
      std::printf(" .. accl-perf: only %d of %d ranks joined through %s within %.0f s\n", n - missing, n,
                  path.c_str(), o.timeoutSec);
      leaveNow(kExitTimeout);
    }
    ReporterInput in;
    in.opts = &o;
    in.plan = &plan;
    in.fds = fds;
    in.pids.assign(n, -1);
    in.launch = describeLaunch(n, job.size, perProc, "mpirun processes");
    in.backend = env.backend;
    in.libraryVersion = env.libraryVersion;
    int code = runReporter(in);
    if (code != kExitOk && code != kExitWrongData) {
      const char abortByte = 'A';
      for (int r = perProc; r < n; ++r) writeAll(fds[r], &abortByte, 1);
      if (!ranks.waitFinished(2.0)) leaveNow(code);
    }
    int rankCode = ranks.join();
    for (int fd : fds) close(fd);
    return code != kExitOk ? code : rankCode;
  }

  // Other processes: find process 0, one connection per local rank, the unique id from the reply.
  std::vector<int> conns;
  ncclUniqueId id{};
  while (conns.size() < (size_t)perProc) {
    if (Clock::now() >= deadline) {
      std::fprintf(stderr, "accl-perf: process %d could not reach process 0 through %s within %.0f s\n", job.rank,
                   path.c_str(), o.timeoutSec);
      return kExitTimeout;
    }
    int port = 0;
    uint64_t nonce = 0;
    bool ok = fixedRdv ? (nonce = keyNonce(job.key), true) : readRendezvousFile(path, &port, &nonce);
    for (int i = 0; ok && i < perProc; ++i) {
      int c = connectLoopback(port, fixedRdv ? &rdvAddr : nullptr);
      RdvHello hello{kHelloMagic, nonce, firstRank + i, 0};
      RdvReply reply{};
      ok = c >= 0 && writeAll(c, &hello, sizeof(hello)) && waitReadable(c, 10000) &&
           readAll(c, &reply, sizeof(reply)) && reply.magic == kHelloMagic && reply.nonce == nonce;
      if (ok) {
        conns.push_back(c);
        id = reply.id;
      } else if (c >= 0) {
        close(c);
      }
    }
    if (!ok) {
      for (int c : conns) close(c);
      conns.clear();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  LocalRanks ranks;
  ranks.start(o, plan, id, firstRank, perProc, job.localRank * perProc, conns, false, env.cuda);
  // Watch the connections: process 0 writes a byte to stop the run, or goes away.
  while (ranks.finished() < ranks.count()) {
    std::vector<pollfd> pfds;
    for (int c : conns) pfds.push_back({c, POLLIN, 0});
    int rc = poll(pfds.data(), pfds.size(), 200);
    if (rc <= 0) continue;
    bool stop = false;
    for (const pollfd& p : pfds) {
      if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char b = 0;
      ssize_t got = read(p.fd, &b, 1);
      if (got == 1 || !ranks.waitFinished(5.0)) stop = true;
      break;
    }
    if (stop) {
      std::fprintf(stderr, "accl-perf: process %d: process 0 stopped the run\n", job.rank);
      leaveNow(kExitNcclError);
    }
  }
  int code = ranks.join();
  for (int c : conns) close(c);
  return code;
}

}  // namespace accl::bench
