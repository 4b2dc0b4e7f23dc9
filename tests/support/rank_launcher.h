// Rank launcher for multi-rank tests: runs one test body as N ranks, either as N threads of this
// process or as N fork()ed child processes, under a deadline, and collects each rank's outcome.
//
// Contract
// - The body receives a RankContext: its rank, the rank count, the unique ids the caller made
//   before the launch (plain bytes, so they survive fork), and calls to record failures
//   (check/fail) and informational notes (note). Record failures through the context: in fork
//   mode a gtest EXPECT_* inside the child is also forwarded to the parent (a listener in the
//   child turns it into a failure message), but ctx.check is the portable way.
// - Thread mode: one std::thread per rank. A rank that misses the deadline cannot be killed: the
//   launcher runs the cleanups that rank registered (registerComm -> ncclCommAbort), waits a
//   second, short grace period, and detaches the threads that are still running. A detached
//   thread may still touch whatever the body captured by reference, so after a thread-mode
//   timeout the test process is suspect: the result says so and the test binary should end soon.
// - Fork mode: one child process per rank, each the leader of its own process group. The child
//   streams its messages to the parent through a pipe and ends with _exit(): 0 when it recorded
//   no failure, 1 otherwise. A child killed by a signal or exiting with another code is reported
//   as such. At the deadline the launcher SIGKILLs the whole process group of every straggler.
// - skipRanks: ranks that are never started, to play a peer that never arrives.
// - The launcher calls no NCCL function itself; only the inline helpers registerComm/destroyComm
//   call ncclCommAbort/ncclCommDestroy, so this library links without libnccl.
//
// Example
//   LaunchOptions opts{.mode = LaunchMode::kFork, .nranks = 4, .ids = {id}};
//   LaunchResult res = launchRanks(opts, [](RankContext& ctx) {
//     ncclComm_t comm;
//     RANK_CHECK(ctx, ncclCommInitRank(&comm, ctx.nranks, ctx.id(), ctx.rank) == ncclSuccess);
//   });
//   EXPECT_RANKS_OK(res);
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdarg>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "nccl.h"

namespace accl::test {

enum class LaunchMode { kThreads, kFork };

const char* launchModeName(LaunchMode mode);
// Lets gtest print a LaunchMode test parameter by name.
void PrintTo(LaunchMode mode, std::ostream* os);

class RankContext;
using RankBody = std::function<void(RankContext&)>;

struct LaunchOptions {
  LaunchMode mode = LaunchMode::kThreads;
  int nranks = 1;
  // Time the ranks get to finish, measured from the launch.
  std::chrono::milliseconds deadline{60000};
  // Thread mode only: after the deadline and the registered cleanups ran, how long to wait for the
  // stragglers before detaching them.
  std::chrono::milliseconds abortGrace{5000};
  // Unique ids shared by every rank (made with ncclGetUniqueId by the caller, or dummies).
  std::vector<ncclUniqueId> ids;
  // Ranks that are not started at all.
  std::set<int> skipRanks;
};

enum class RankStatus {
  kOk,        // finished in time and recorded no failure
  kFailed,    // finished in time but recorded failures (or threw)
  kExited,    // fork: exited with a code other than 0/1
  kSignaled,  // fork: killed by a signal before the deadline
  kTimedOut,  // did not finish within the deadline
  kSkipped,   // listed in skipRanks, never started
};

const char* rankStatusName(RankStatus status);

struct RankOutcome {
  int rank = -1;
  RankStatus status = RankStatus::kSkipped;
  std::vector<std::string> failures;  // failure messages, in order
  std::vector<std::string> notes;     // ctx.note() messages, in order
  int exitCode = -1;                  // fork: the exit code when the child exited
  int signal = 0;                     // fork: the signal that ended the child (SIGKILL after a timeout)
  bool detached = false;              // thread: still running when the launcher returned
  double seconds = 0;                 // time from launch to the rank's end (or to the give-up)
};

struct LaunchResult {
  LaunchMode mode = LaunchMode::kThreads;
  std::vector<RankOutcome> ranks;  // indexed by rank, skipped ranks included
  double seconds = 0;              // wall time of the whole launch

  // True when at least one rank exists and every started rank ended with kOk.
  bool ok() const;
  // Ranks with the given status, ascending.
  std::vector<int> ranksWith(RankStatus status) const;
  // Ranks that were started and did not end kOk, ascending.
  std::vector<int> failedRanks() const;
  // One line per rank that did not end kOk, followed by its messages.
  std::string summary() const;
};

// gtest predicate: succeeds when result.ok(), else prints summary().
testing::AssertionResult ranksOk(const char* expr, const LaunchResult& result);
#define EXPECT_RANKS_OK(result) EXPECT_PRED_FORMAT1(::accl::test::ranksOk, result)
#define ASSERT_RANKS_OK(result) ASSERT_PRED_FORMAT1(::accl::test::ranksOk, result)

// Everything a rank body sees. Methods are thread-safe (a body may spawn its own threads).
class RankContext {
 public:
  const int rank;
  const int nranks;

  // The ids from LaunchOptions::ids; id() is the first and fails the rank when there is none.
  const std::vector<ncclUniqueId>& ids() const { return *ids_; }
  const ncclUniqueId& id();

  // Records a failure when cond is false; returns cond.
  bool check(bool cond, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  void fail(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void vfail(const char* fmt, va_list args);
  // Records an informational message that reaches the parent without failing the rank.
  void note(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  bool failed() const;

  // Cleanups run by the launcher when this rank misses the deadline (thread mode; in fork mode
  // the process is killed instead). The key identifies the registration. unregisterCleanup
  // returns false when the launcher already took that cleanup to run it: the resource is then
  // the launcher's, and the body must not free it again.
  void registerCleanup(const void* key, std::function<void()> cleanup);
  bool unregisterCleanup(const void* key);

  // The cleanup for a communicator: ncclCommAbort. Pair with destroyComm (or abortComm).
  void registerComm(ncclComm_t comm) {
    registerCleanup(comm, [comm] { ncclCommAbort(comm); });
  }
  // ncclCommDestroy unless the launcher already aborted the comm (then ncclSuccess).
  ncclResult_t destroyComm(ncclComm_t comm) {
    return unregisterCleanup(comm) ? ncclCommDestroy(comm) : ncclSuccess;
  }
  ncclResult_t abortComm(ncclComm_t comm) {
    return unregisterCleanup(comm) ? ncclCommAbort(comm) : ncclSuccess;
  }

  // Built by the launcher. In fork mode every record is also written to pipeFd at once, so a
  // child that later hangs or crashes still delivers what it recorded.
  RankContext(int rank, int nranks, const std::vector<ncclUniqueId>* ids, int pipeFd);
  RankContext(const RankContext&) = delete;
  RankContext& operator=(const RankContext&) = delete;

 private:
  friend struct LauncherAccess;
  void record(char kind, std::string text);

  const std::vector<ncclUniqueId>* ids_;
  const int pipeFd_;
  mutable std::mutex mutex_;
  std::vector<std::string> failures_;
  std::vector<std::string> notes_;
  std::vector<std::pair<const void*, std::function<void()>>> cleanups_;
};

// Runs body as opts.nranks ranks and returns when all started ranks ended or the deadline passed
// (plus, in thread mode, the abort grace period).
LaunchResult launchRanks(const LaunchOptions& opts, const RankBody& body);

}  // namespace accl::test

// Records a failure naming the file, line and condition when cond is false; evaluates to cond.
#define RANK_CHECK(ctx, cond) \
  ((ctx).check(static_cast<bool>(cond), "%s:%d: check failed: %s", __FILE__, __LINE__, #cond))
