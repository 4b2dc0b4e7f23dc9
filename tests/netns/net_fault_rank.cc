// Faults across namespace hosts (net_matrix_rank fault linkdown|qperror|kill): every rank loops
// over large all-reduces; after ACCL_NM_FAULT_AFTER (default 3) of them the victim, the last rank,
// injects the fault from a second thread while its loop goes on:
//   linkdown  `ip link set mh0 down` in its namespace (its host's only link; a pulled cable)
//   qperror   the verbs emulator's next send work request moves its QP to the error state
//             (accl_verbs_emu_set_fault in the ACCL_IBVERBS_LIB library the process loaded)
//   kill      SIGKILL of its own process (it runs as a forked child; the parent only reports)
// and writes the fault's wall-clock time to ACCL_NM_DIR/fault_ms. Every surviving rank must then
// see its all-reduce return ncclRemoteError or ncclSystemError within ACCL_NM_FAULT_BOUND_S (30 s
// by default) of the fault, with ncclGetLastError naming the peer's rank and host (its NCCL_HOSTID
// accl-host<h> or its address 10.77.0.<h+1>), and ncclCommAbort must return within 5 s. A
// watchdog ends the process with a FAIL line when a call outlives those bounds (nothing hangs).
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "netns/net_matrix_rank.h"

namespace accl::test {
namespace {

constexpr double kAbortBoundS = 5.0;

std::string faultFile() {
  const char* dir = getenv("ACCL_NM_DIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/fault_ms";
}

// The fault's wall-clock time, or 0 while it has not happened.
double readFaultMs() {
  std::ifstream in(faultFile());
  double ms = 0;
  return (in >> ms) ? ms : 0;
}

void writeFaultMs(double ms) {
  const std::string path = faultFile(), tmp = path + ".tmp";
  { std::ofstream(tmp) << std::fixed << ms << "\n"; }
  std::rename(tmp.c_str(), path.c_str());
}

// Injects the fault; returns a description, or "" with a FAIL line when it could not.
std::string injectFault(const MhRank& me, const std::string& kind) {
  writeFaultMs(wallMs());
  if (kind == "kill") {
    std::printf("%s: fault: SIGKILL to myself (pid %d)\n", me.tag.c_str(), (int)getpid());
    std::fflush(stdout);
    raise(SIGKILL);
  }
  if (kind == "linkdown") {
    int rc = std::system("ip link set mh0 down");
    if (rc != 0) std::fprintf(stderr, "FAIL %s: `ip link set mh0 down` returned %d\n", me.tag.c_str(), rc);
    return rc == 0 ? "link mh0 of host " + std::to_string(me.host) + " set down" : "";
  }
  const char* lib = getenv("ACCL_IBVERBS_LIB");
  void* h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  using SetFault = int (*)(const char*);
  auto set = h ? reinterpret_cast<SetFault>(dlsym(h, "accl_verbs_emu_set_fault")) : nullptr;
  if (!set || set("qp_error_after:0") != 0) {
    std::fprintf(stderr, "FAIL %s: cannot inject the QP error: the verbs emulator %s is %s\n", me.tag.c_str(),
                 lib ? lib : "(ACCL_IBVERBS_LIB unset)", h ? "loaded without accl_verbs_emu_set_fault" : "not loaded");
    return "";
  }
  return "the next send work request moves its QP to the error state";
}

int runFaultLoop(const MhRank& me, const std::string& kind) {
  const int victim = me.nranks - 1;
  const bool isVictim = me.rank == victim;
  const int perHost = me.nranks / me.nhosts;
  const int peer = isVictim ? 0 : victim;
  const int peerHost = peer / perHost;
  const double bound = envDouble("ACCL_NM_FAULT_BOUND_S", 30);
  const int after = (int)envDouble("ACCL_NM_FAULT_AFTER", 3);
  const size_t count = (size_t)(envDouble("ACCL_NM_ALLREDUCE_MIB", 8) * (1 << 20) / sizeof(float));
  const double budgetS = bound + 30;  // how long the loop may run without seeing an error

  std::atomic<int> phase{0};  // 0 before the fault/loop, 1 in a call, 2 in abort, 3 done
  std::atomic<double> abortStartMs{0};
  std::thread watchdog([&] {
    while (phase.load() != 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const double faultMs = readFaultMs();
      const double now = wallMs();
      if (phase.load() == 1 && faultMs > 0 && now - faultMs > (bound + 5) * 1000) {
        std::fprintf(stderr, "FAIL %s: the all-reduce has not returned %.1f s after the fault (bound %.0f s): hang\n",
                     me.tag.c_str(), (now - faultMs) / 1000, bound);
        std::fflush(stderr);
        _exit(1);
      }
      if (phase.load() == 2 && now - abortStartMs.load() > (kAbortBoundS + 5) * 1000) {
        std::fprintf(stderr, "FAIL %s: ncclCommAbort has not returned after %.1f s: hang\n", me.tag.c_str(),
                     (now - abortStartMs.load()) / 1000);
        std::fflush(stderr);
        _exit(1);
      }
    }
  });
  int failures = 0;
  auto fail = [&](const char* fmt, auto... args) {
    ++failures;
    std::fprintf(stderr, ("FAIL %s: " + std::string(fmt) + "\n").c_str(), me.tag.c_str(), args...);
  };
  auto finish = [&](int code) {
    phase = 3;
    watchdog.join();
    return code;
  };

  ncclUniqueId id;
  if (!sharedUniqueId(me, &id)) return finish(1);
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclCommInitRank(&comm, me.nranks, id, me.rank);
  if (res != ncclSuccess) {
    fail("ncclCommInitRank returned %d: %s", res, ncclGetLastError(nullptr));
    return finish(1);
  }
  std::vector<float> buf(count);
  std::thread injector;
  const auto loopStart = std::chrono::steady_clock::now();
  int iter = 0;
  for (;; ++iter) {
    if (iter == after && isVictim)
      injector = std::thread([&, iter] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // inside the next all-reduce
        const std::string what = injectFault(me, kind);
        if (what.empty()) ++failures;
        else std::printf("%s: fault injected at iteration %d: %s\n", me.tag.c_str(), iter, what.c_str());
      });
    for (size_t j = 0; j < count; j += 4096) buf[j] = (float)(me.rank + 1);
    phase = 1;
    res = ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, ncclSum, comm, nullptr);
    phase = 0;
    if (res != ncclSuccess) break;
    const float want = (float)(me.nranks * (me.nranks + 1) / 2);
    if (buf[0] != want) fail("iteration %d: element 0 is %g, expected %g", iter, buf[0], want);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - loopStart).count() > budgetS) break;
  }
  if (injector.joinable()) injector.join();
  const double errMs = wallMs();
  const std::string lastError = ncclGetLastError(nullptr);
  if (res == ncclSuccess) {
    fail("no error after %d all-reduces (%.0f s): the fault (%s by rank %d) went unnoticed", iter, budgetS, kind.c_str(),
         victim);
  } else {
    const double faultMs = readFaultMs();
    const double took = faultMs > 0 ? (errMs - faultMs) / 1000 : -1;
    std::printf("%s: all-reduce %d returned %d (%s) %.2f s after the fault: %s\n", me.tag.c_str(), iter, res,
                ncclGetErrorString(res), took, lastError.c_str());
    if (res != ncclRemoteError && res != ncclSystemError)
      fail("all-reduce returned %d (%s), expected ncclRemoteError or ncclSystemError", res, ncclGetErrorString(res));
    if (faultMs <= 0) fail("the all-reduce failed (iteration %d) before any fault was injected", iter);
    else if (took > bound) fail("the error came %.2f s after the fault, over the bound of %.0f s", took, bound);
    const std::string rankWord = "rank " + std::to_string(peer);
    const std::string hostId = "accl-host" + std::to_string(peerHost);
    const std::string hostAddr = "10.77.0." + std::to_string(peerHost + 1);
    if (lastError.find(rankWord) == std::string::npos ||
        (lastError.find(hostId) == std::string::npos && lastError.find(hostAddr) == std::string::npos))
      fail("ncclGetLastError does not name the peer as '%s' and '%s' (or '%s'): %s", rankWord.c_str(), hostId.c_str(),
           hostAddr.c_str(), lastError.c_str());
  }
  abortStartMs = wallMs();
  phase = 2;
  const auto a0 = std::chrono::steady_clock::now();
  ncclResult_t ab = ncclCommAbort(comm);
  const double abortS = std::chrono::duration<double>(std::chrono::steady_clock::now() - a0).count();
  phase = 0;
  std::printf("%s: ncclCommAbort returned %d in %.2f s\n", me.tag.c_str(), ab, abortS);
  if (ab != ncclSuccess) fail("ncclCommAbort returned %d", ab);
  if (abortS > kAbortBoundS) fail("ncclCommAbort took %.2f s (bound %.0f s)", abortS, kAbortBoundS);
  if (failures == 0) std::printf("%s: fault %s: checks passed\n", me.tag.c_str(), kind.c_str());
  return finish(failures ? 1 : 0);
}

}  // namespace

int runFaultMode(const MhRank& me, const std::string& kind) {
  if (!(kind == "kill" && me.rank == me.nranks - 1)) return runFaultLoop(me, kind);
  // The victim of a kill runs as a child, so that the process multihost.sh waits for reports
  // "killed as planned" instead of a signal.
  std::fflush(stdout);
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) _exit(runFaultLoop(me, kind));
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {}
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    std::printf("%s: the victim (pid %d) died of SIGKILL as planned\n", me.tag.c_str(), (int)child);
    return 0;
  }
  std::fprintf(stderr, "FAIL %s: the victim was to die of SIGKILL; wait status 0x%x\n", me.tag.c_str(), status);
  return 1;
}

}  // namespace accl::test
