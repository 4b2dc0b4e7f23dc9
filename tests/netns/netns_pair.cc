// The namespace pair of netns_pair.h: holders, veth pair, ranks as PID 1 with their own /proc.
#include "netns_pair.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace accl::test {
namespace {

constexpr int kNamespaceFlags = CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWNS;
// The PID namespace comes last: after unshare(CLONE_NEWPID) the holder's next child becomes PID 1
// of the new namespace, so the `ip` commands (children too) must run before it.
constexpr int kHolderFirstFlags = CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWNS;

bool writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool readAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

int runShell(const std::string& cmd) {
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, 0) == 0) {
      r = fds[0];
      w = fds[1];
    }
  }
};

// The rank process: PID 1 of the holder's PID namespace. Mounts a /proc of its own namespace (as
// a container runtime does), runs the body and sends its report.
[[noreturn]] void runRank(int rank, const NetnsRankBody& body, int idRead, int idWrite, int reportFd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  NetnsRankReport report;
  report.rank = rank;
  report.pidInNamespace = getpid();
  gethostname(report.hostname, sizeof(report.hostname) - 1);
  if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    std::snprintf(report.lastError, sizeof(report.lastError), "harness: cannot mount /proc: %s", strerror(errno));
    writeAll(reportFd, &report, sizeof(report));
    _exit(3);
  }
  body(rank, idRead, idWrite, &report);
  report.ran = 1;
  writeAll(reportFd, &report, sizeof(report));
  _exit(0);
}

// A holder: enters its namespaces, takes part in building the link, then starts its rank and
// waits for it. `setupLink` runs inside the holder's network namespace.
[[noreturn]] void runHolder(int rank, const std::string& hostname, const std::function<bool()>& setupLink,
                            const NetnsRankBody& body, int idRead, int idWrite, int reportFd) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (unshare(kHolderFirstFlags) != 0) _exit(10);
  if (sethostname(hostname.data(), hostname.size()) != 0) _exit(11);
  if (!setupLink()) _exit(12);
  if (unshare(CLONE_NEWPID) != 0) _exit(10);
  pid_t child = fork();
  if (child < 0) _exit(13);
  if (child == 0) runRank(rank, body, idRead, idWrite, reportFd);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
}

}  // namespace

std::string namespaceSupportProblem() {
  if (geteuid() != 0)
    return "needs root to create network, PID and UTS namespaces (euid " + std::to_string(geteuid()) + ")";
  if (runShell("command -v ip >/dev/null 2>&1") != 0) return "the `ip` tool (iproute2) is not installed";
  pid_t probe = fork();
  if (probe < 0) return std::string("fork failed: ") + strerror(errno);
  if (probe == 0) _exit(unshare(kNamespaceFlags) == 0 ? 0 : errno);
  int status = 0;
  waitpid(probe, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return std::string("unshare(CLONE_NEWNET|CLONE_NEWPID|CLONE_NEWUTS|CLONE_NEWNS) is refused here: ") +
           strerror(WIFEXITED(status) ? WEXITSTATUS(status) : EPERM);
  return "";
}

NetnsPairResult runNamespacePair(const NetnsRankBody& body, std::chrono::milliseconds deadline) {
  NetnsPairResult result;
  Pipe idPipe, linkReady, reports[2], bReady;
  // Interface names: unique per test process (at most 15 characters), visible only inside the
  // namespaces; they vanish with them.
  const std::string suffix = std::to_string(getpid() % 100000);
  const std::string ifA = "acclva" + suffix, ifB = "acclvb" + suffix;

  pid_t holderB = fork();
  if (holderB == 0) {
    auto setupB = [&]() -> bool {
      char ok = 1;
      if (!writeAll(bReady.w, &ok, 1)) return false;
      if (!readAll(linkReady.r, &ok, 1) || ok != 1) return false;  // A moved our end in
      return runShell("ip link set lo up && ip addr add 10.231.7.2/24 dev " + ifB + " && ip link set " + ifB +
                      " up") == 0;
    };
    runHolder(1, "accl-ns-b", setupB, body, idPipe.r, idPipe.w, reports[1].w);
  }
  char ok = 0;
  if (holderB < 0 || !readAll(bReady.r, &ok, 1)) {
    result.whyNot = "holder B did not start its namespaces";
    if (holderB > 0) kill(-holderB, SIGKILL), waitpid(holderB, nullptr, 0);
    return result;
  }
  pid_t holderA = fork();
  if (holderA == 0) {
    auto setupA = [&]() -> bool {
      bool up = runShell("ip link set lo up && ip link add " + ifA + " type veth peer name " + ifB + " netns " +
                         std::to_string(holderB) + " && ip addr add 10.231.7.1/24 dev " + ifA + " && ip link set " +
                         ifA + " up") == 0;
      char flag = up ? 1 : 0;
      writeAll(linkReady.w, &flag, 1);
      return up;
    };
    runHolder(0, "accl-ns-a", setupA, body, idPipe.r, idPipe.w, reports[0].w);
  }
  for (Pipe* p : {&idPipe, &linkReady, &reports[0], &reports[1], &bReady}) {
    if (p != &reports[0] && p != &reports[1]) close(p->r);
    close(p->w);
  }
  pid_t holders[2] = {holderA, holderB};
  bool done[2] = {holderA < 0, false};
  auto start = std::chrono::steady_clock::now();
  while (!(done[0] && done[1])) {
    for (int i = 0; i < 2; ++i) {
      if (done[i]) continue;
      int status = 0;
      if (waitpid(holders[i], &status, WNOHANG) == holders[i]) {
        done[i] = true;
        result.exitStatus[i] = status;
      }
    }
    if (std::chrono::steady_clock::now() - start > deadline) {
      result.timedOut = true;
      for (int i = 0; i < 2; ++i)
        if (!done[i] && holders[i] > 0) kill(-holders[i], SIGKILL);
      for (int i = 0; i < 2; ++i)
        if (!done[i] && holders[i] > 0) waitpid(holders[i], &result.exitStatus[i], 0), done[i] = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int i = 0; i < 2; ++i) {
    fcntl(reports[i].r, F_SETFL, O_NONBLOCK);
    NetnsRankReport rep;
    if (readAll(reports[i].r, &rep, sizeof(rep))) result.ranks[i] = rep;
    close(reports[i].r);
  }
  for (int i = 0; i < 2; ++i) {
    int st = result.exitStatus[i];
    if (WIFEXITED(st) && WEXITSTATUS(st) >= 10 && WEXITSTATUS(st) <= 13 && !result.ranks[i].ran) {
      result.whyNot = "holder " + std::to_string(i) + " could not build its namespaces or link (exit " +
                      std::to_string(WEXITSTATUS(st)) + ")";
      return result;
    }
  }
  result.built = true;
  return result;
}

}  // namespace accl::test
