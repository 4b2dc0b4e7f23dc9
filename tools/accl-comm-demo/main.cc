// accl-comm-demo: the communicator lifecycle over N local ranks — N forked processes (-N) or N
// threads (-g) — through the public API only: ncclGetUniqueId, ncclCommInitRank, ncclCommSplit
// (even/odd), ncclCommFinalize, ncclCommDestroy. Prints one line per rank with the time each
// step took and exits non-zero if any rank failed. (README's main job until accl-perf exists.)
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.h"
#include "nccl.h"

namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

#define DEMO_CHECK(call)                                                                                     \
  do {                                                                                                       \
    ncclResult_t r_ = (call);                                                                                \
    if (r_ != ncclSuccess) {                                                                                 \
      std::fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #call, ncclGetErrorString(r_),            \
                   ncclGetLastError(nullptr));                                                               \
      return 1;                                                                                              \
    }                                                                                                        \
  } while (0)

// One rank's run; returns 0 on success.
int runRank(int rank, int nranks, ncclUniqueId id) {
  auto t0 = std::chrono::steady_clock::now();
  ncclComm_t comm;
  DEMO_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  double initMs = msSince(t0);

  int count = 0, me = -1;
  DEMO_CHECK(ncclCommCount(comm, &count));
  DEMO_CHECK(ncclCommUserRank(comm, &me));
  if (count != nranks || me != rank) {
    std::fprintf(stderr, "rank %d: communicator reports rank %d of %d\n", rank, me, count);
    return 1;
  }

  t0 = std::chrono::steady_clock::now();
  ncclComm_t half;
  DEMO_CHECK(ncclCommSplit(comm, rank % 2, rank, &half, nullptr));
  double splitMs = msSince(t0);
  int halfCount = 0, halfRank = -1;
  DEMO_CHECK(ncclCommCount(half, &halfCount));
  DEMO_CHECK(ncclCommUserRank(half, &halfRank));
  int expectCount = rank % 2 == 0 ? (nranks + 1) / 2 : nranks / 2;
  if (halfCount != expectCount || halfRank != rank / 2) {
    std::fprintf(stderr, "rank %d: split gave rank %d of %d, expected %d of %d\n", rank, halfRank, halfCount,
                 rank / 2, expectCount);
    return 1;
  }

  t0 = std::chrono::steady_clock::now();
  DEMO_CHECK(ncclCommFinalize(half));
  DEMO_CHECK(ncclCommDestroy(half));
  DEMO_CHECK(ncclCommFinalize(comm));
  DEMO_CHECK(ncclCommDestroy(comm));
  double destroyMs = msSince(t0);
  std::printf("%6d %8d %10.2f %10.2f %10.2f   %d/%d\n", rank, nranks, initMs, splitMs, destroyMs, halfRank,
              halfCount);
  std::fflush(stdout);
  return 0;
}

constexpr const char* kTool = "accl-comm-demo";

void printUsage(FILE* out) {
  std::fprintf(out,
               "usage: accl-comm-demo [-N processes | -g threads]\n"
               "  -N N  N ranks as forked processes (default: 4 processes)\n"
               "  -g N  N ranks as threads of this process\n"
               "Exit status: 0 every rank succeeded, 1 a rank failed, 2 bad usage.\n");
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 4;
  bool threads = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      printUsage(stdout);
      return accl::cli::kExitOk;
    }
    if (a != "-N" && a != "-g") return accl::cli::usageError(kTool, "unknown option '%s'", a.c_str());
    if (i + 1 >= argc) return accl::cli::usageError(kTool, "%s needs a rank count", a.c_str());
    long n = 0;
    std::string why;
    if (!accl::cli::parseInt(argv[++i], 1, 1024, &n, &why))
      return accl::cli::badValue(kTool, a, argv[i], why + " (ranks to run)");
    threads = a == "-g";
    nranks = static_cast<int>(n);
  }
  if (!std::getenv("ACCL_BACKEND")) setenv("ACCL_BACKEND", "host", 0);
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    std::fprintf(stderr, "accl-comm-demo: ncclGetUniqueId failed: %s\n", ncclGetLastError(nullptr));
    return accl::cli::kExitRunFailed;
  }
  std::printf("# accl-comm-demo: %d ranks as %s\n", nranks, threads ? "threads" : "processes");
  std::printf("# %4s %8s %10s %10s %10s   %s\n", "rank", "nranks", "init(ms)", "split(ms)", "destroy(ms)",
              "split rank");
  std::fflush(stdout);
  int failures = 0;
  if (threads) {
    std::vector<int> rc(nranks, 0);
    std::vector<std::thread> ts;
    for (int r = 0; r < nranks; ++r) ts.emplace_back([&, r] { rc[r] = runRank(r, nranks, id); });
    for (auto& t : ts) t.join();
    for (int r : rc) failures += r != 0;
  } else {
    std::vector<pid_t> pids;
    for (int r = 0; r < nranks; ++r) {
      pid_t pid = fork();
      if (pid == 0) _exit(runRank(r, nranks, id));
      pids.push_back(pid);
    }
    for (pid_t pid : pids) {
      int status = 0;
      waitpid(pid, &status, 0);
      failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }
  std::printf("# %d of %d ranks succeeded\n", nranks - failures, nranks);
  return failures == 0 ? accl::cli::kExitOk : accl::cli::kExitRunFailed;
}
