// Two ranks as two "containers" on this machine, built by the test itself: each rank runs as PID
// 1 of its own network, PID, UTS and mount namespaces (its own hostname and its own /proc, like a
// container), and the two network namespaces are joined by a veth pair the test creates, so the
// bootstrap runs over real interfaces and never leaves namespaces the test made.
//
//   test process
//   ├─ holder A: unshare(NET|PID|UTS|NS), sethostname, creates the veth pair into B's netns,
//   │  └─ rank 0 (pid 1 of A's PID namespace, fresh /proc)
//   └─ holder B: unshare(NET|PID|UTS|NS), sethostname, configures its end
//      └─ rank 1 (pid 1 of B's PID namespace, fresh /proc)
//
// Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and the `ip` tool; runNamespacePair() reports why
// when it cannot build the pair, so the caller can GTEST_SKIP.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace accl::test {

// What a rank reports back to the test process (plain bytes through a pipe).
struct NetnsRankReport {
  int rank = -1;
  int ran = 0;            // the body ran to its end (the report was filled)
  int pidInNamespace = 0; // getpid() inside the rank's namespace (1)
  int initResult = -1;
  int allReduceResult = -1;
  long allReduceWrong = -1;  // elements that differ from the expected sum (when the call succeeded)
  int allGatherResult = -1;
  long allGatherWrong = -1;
  double seconds = 0;        // time from init to the end of the body
  double initSeconds = 0;    // ncclCommInitRank
  double allReduceSeconds = 0;  // ncclAllReduce (to its result or its error)
  char hostname[64] = {};
  char lastError[1024] = {};
};

struct NetnsPairResult {
  bool built = false;       // false: the namespaces or the veth could not be made (see whyNot)
  std::string whyNot;
  bool timedOut = false;
  NetnsRankReport ranks[2];
  int exitStatus[2] = {-1, -1};  // wait status of each holder
};

// Runs `body(rank, idPipeRead, idPipeWrite, report)` as rank 0 and rank 1 in the namespace pair.
// Rank 0 makes the ncclUniqueId inside its namespace and writes it to idPipeWrite; rank 1 reads it
// from idPipeRead. Every process still alive at `deadline` is killed.
using NetnsRankBody = std::function<void(int rank, int idRead, int idWrite, NetnsRankReport* report)>;
NetnsPairResult runNamespacePair(const NetnsRankBody& body, std::chrono::milliseconds deadline);

// Empty when namespaces can be made here, else the reason (not root, unshare refused, no `ip`).
std::string namespaceSupportProblem();

}  // namespace accl::test
