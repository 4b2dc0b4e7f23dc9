// Rank launcher implementation: thread mode (std::thread per rank, cleanups then detach on
// timeout) and fork mode (child per rank in its own process group, messages over a pipe,
// SIGKILL of the group on timeout). See rank_launcher.h for the contract.
#include "rank_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

namespace accl::test {

using Clock = std::chrono::steady_clock;

namespace {

constexpr char kFailureRecord = 'F';
constexpr char kNoteRecord = 'N';
// A record on the pipe: one kind byte, a native-endian uint32 length, then that many bytes.
constexpr size_t kRecordHeaderBytes = 1 + sizeof(uint32_t);
constexpr size_t kMaxRecordBytes = 1 << 16;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string vformat(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int len = vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (len <= 0) return std::string();
  std::string out(static_cast<size_t>(len), '\0');
  vsnprintf(out.data(), out.size() + 1, fmt, args);
  return out;
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string out = vformat(fmt, args);
  va_end(args);
  return out;
}

// Writes all of buf, retrying on EINTR and short writes. Errors are ignored: a child whose parent
// went away has no one to tell.
void writeAll(int fd, const char* buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    buf += n;
    len -= static_cast<size_t>(n);
  }
}

std::string describeSignal(int sig) {
  const char* name = sigabbrev_np(sig);
  return format("signal %d (SIG%s)", sig, name ? name : "?");
}

}  // namespace

// ---- Names ----------------------------------------------------------------------------------------

const char* launchModeName(LaunchMode mode) { return mode == LaunchMode::kFork ? "fork" : "thread"; }

void PrintTo(LaunchMode mode, std::ostream* os) { *os << launchModeName(mode); }

const char* rankStatusName(RankStatus status) {
  switch (status) {
    case RankStatus::kOk:
      return "ok";
    case RankStatus::kFailed:
      return "failed";
    case RankStatus::kExited:
      return "exited";
    case RankStatus::kSignaled:
      return "signaled";
    case RankStatus::kTimedOut:
      return "timed out";
    case RankStatus::kSkipped:
      return "skipped";
  }
  return "?";
}

// ---- RankContext ----------------------------------------------------------------------------------

RankContext::RankContext(int rank, int nranks, const std::vector<ncclUniqueId>* ids, int pipeFd)
    : rank(rank), nranks(nranks), ids_(ids), pipeFd_(pipeFd) {}

const ncclUniqueId& RankContext::id() {
  static const ncclUniqueId kZeroId{};
  if (ids_->empty()) {
    fail("RankContext::id(): the launch was given no unique id");
    return kZeroId;
  }
  return ids_->front();
}

void RankContext::record(char kind, std::string text) {
  if (text.size() > kMaxRecordBytes) text.resize(kMaxRecordBytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (pipeFd_ >= 0) {
    char header[kRecordHeaderBytes];
    uint32_t len = static_cast<uint32_t>(text.size());
    header[0] = kind;
    memcpy(header + 1, &len, sizeof(len));
    writeAll(pipeFd_, header, sizeof(header));
    writeAll(pipeFd_, text.data(), text.size());
  }
  (kind == kFailureRecord ? failures_ : notes_).push_back(std::move(text));
}

bool RankContext::check(bool cond, const char* fmt, ...) {
  if (cond) return true;
  va_list args;
  va_start(args, fmt);
  vfail(fmt, args);
  va_end(args);
  return false;
}

void RankContext::fail(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vfail(fmt, args);
  va_end(args);
}

void RankContext::vfail(const char* fmt, va_list args) { record(kFailureRecord, vformat(fmt, args)); }

void RankContext::note(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  record(kNoteRecord, vformat(fmt, args));
  va_end(args);
}

bool RankContext::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !failures_.empty();
}

void RankContext::registerCleanup(const void* key, std::function<void()> cleanup) {
  // A registration after the launcher already ran the cleanups is kept but never run by the
  // launcher, so the body's own unregister-and-free path stays valid.
  std::lock_guard<std::mutex> lock(mutex_);
  cleanups_.emplace_back(key, std::move(cleanup));
}

bool RankContext::unregisterCleanup(const void* key) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = cleanups_.begin(); it != cleanups_.end(); ++it) {
    if (it->first == key) {
      cleanups_.erase(it);
      return true;
    }
  }
  return false;
}

// The launcher's view of a context: the recorded messages and the registered cleanups.
struct LauncherAccess {
  static std::vector<std::string> failures(const RankContext& ctx) {
    std::lock_guard<std::mutex> lock(ctx.mutex_);
    return ctx.failures_;
  }
  static std::vector<std::string> notes(const RankContext& ctx) {
    std::lock_guard<std::mutex> lock(ctx.mutex_);
    return ctx.notes_;
  }
  // Takes the registered cleanups (so unregisterCleanup reports them as gone) and runs them.
  static size_t runCleanups(RankContext& ctx) {
    std::vector<std::pair<const void*, std::function<void()>>> taken;
    {
      std::lock_guard<std::mutex> lock(ctx.mutex_);
      taken.swap(ctx.cleanups_);
    }
    for (auto& entry : taken) entry.second();
    return taken.size();
  }
};

// ---- LaunchResult ---------------------------------------------------------------------------------

bool LaunchResult::ok() const { return !ranks.empty() && failedRanks().empty(); }

std::vector<int> LaunchResult::ranksWith(RankStatus status) const {
  std::vector<int> out;
  for (const RankOutcome& r : ranks)
    if (r.status == status) out.push_back(r.rank);
  return out;
}

std::vector<int> LaunchResult::failedRanks() const {
  std::vector<int> out;
  for (const RankOutcome& r : ranks)
    if (r.status != RankStatus::kOk && r.status != RankStatus::kSkipped) out.push_back(r.rank);
  return out;
}

std::string LaunchResult::summary() const {
  std::ostringstream out;
  if (ranks.empty()) out << "no rank was launched (nranks < 1)\n";
  for (const RankOutcome& r : ranks) {
    if (r.status == RankStatus::kOk || r.status == RankStatus::kSkipped) continue;
    out << "rank " << r.rank << "/" << ranks.size() << " (" << launchModeName(mode)
        << "): " << rankStatusName(r.status) << " after " << format("%.2f", r.seconds) << " s\n";
    for (const std::string& m : r.failures) out << "    " << m << "\n";
    for (const std::string& m : r.notes) out << "    note: " << m << "\n";
  }
  return out.str();
}

testing::AssertionResult ranksOk(const char* expr, const LaunchResult& result) {
  if (result.ok()) return testing::AssertionSuccess();
  std::ostringstream ranks;
  for (int r : result.failedRanks()) ranks << (ranks.tellp() > 0 ? ", " : "") << r;
  return testing::AssertionFailure() << expr << ": ranks {" << ranks.str() << "} of " << result.ranks.size()
                                     << " did not succeed (" << launchModeName(result.mode) << " mode, "
                                     << format("%.2f", result.seconds) << " s)\n"
                                     << result.summary();
}

// ---- Thread mode ----------------------------------------------------------------------------------

namespace {

// Everything the rank threads touch lives here, owned jointly by the launcher and the threads, so
// a detached thread never outlives what it uses (except what its body captured by reference).
struct ThreadLaunch {
  std::vector<ncclUniqueId> ids;
  RankBody body;
  Clock::time_point start;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::unique_ptr<RankContext>> contexts;
  std::vector<bool> done;
  std::vector<double> endSeconds;
  bool cleanupsDone = false;
};

void runRankThread(const std::shared_ptr<ThreadLaunch>& launch, int rank) {
  RankContext& ctx = *launch->contexts[rank];
  try {
    launch->body(ctx);
  } catch (const std::exception& e) {
    ctx.fail("uncaught exception: %s", e.what());
  } catch (...) {
    ctx.fail("uncaught exception of unknown type");
  }
  std::lock_guard<std::mutex> lock(launch->mutex);
  launch->done[rank] = true;
  launch->endSeconds[rank] = secondsSince(launch->start);
  launch->changed.notify_all();
}

LaunchResult launchThreads(const LaunchOptions& opts, const RankBody& body) {
  const int n = opts.nranks;
  auto launch = std::make_shared<ThreadLaunch>();
  launch->ids = opts.ids;
  launch->body = body;
  launch->contexts.resize(n);
  launch->done.assign(n, false);
  launch->endSeconds.assign(n, 0.0);
  launch->start = Clock::now();
  const Clock::time_point deadline = launch->start + opts.deadline;

  LaunchResult result;
  result.mode = LaunchMode::kThreads;
  result.ranks.resize(n);
  std::vector<std::thread> threads(n);
  for (int r = 0; r < n; ++r) {
    result.ranks[r].rank = r;
    if (opts.skipRanks.count(r)) continue;
    launch->contexts[r] = std::make_unique<RankContext>(r, n, &launch->ids, -1);
  }
  for (int r = 0; r < n; ++r) {
    if (!launch->contexts[r]) continue;
    threads[r] = std::thread(runRankThread, launch, r);
    std::string name = format("rank %d", r);
    pthread_setname_np(threads[r].native_handle(), name.c_str());
  }

  auto unfinished = [&] {
    std::vector<int> out;
    for (int r = 0; r < n; ++r)
      if (launch->contexts[r] && !launch->done[r]) out.push_back(r);
    return out;
  };

  std::vector<int> stragglers;
  std::vector<size_t> cleanupCount(n, 0);
  {
    std::unique_lock<std::mutex> lock(launch->mutex);
    launch->changed.wait_until(lock, deadline, [&] { return unfinished().empty(); });
    stragglers = unfinished();
  }
  if (!stragglers.empty()) {
    // Run the stragglers' cleanups (ncclCommAbort) on a helper thread: a cleanup that itself hangs
    // must not hang the launcher.
    auto counts = std::make_shared<std::vector<size_t>>(n, 0);
    std::thread cleaner([launch, stragglers, counts] {
      for (int r : stragglers) (*counts)[r] = LauncherAccess::runCleanups(*launch->contexts[r]);
      std::lock_guard<std::mutex> lock(launch->mutex);
      launch->cleanupsDone = true;
      launch->changed.notify_all();
    });
    std::unique_lock<std::mutex> lock(launch->mutex);
    launch->changed.wait_until(lock, Clock::now() + opts.abortGrace,
                               [&] { return launch->cleanupsDone && unfinished().empty(); });
    const bool cleanupsDone = launch->cleanupsDone;
    lock.unlock();
    if (cleanupsDone) {
      cleaner.join();
      cleanupCount = *counts;
    } else {
      cleaner.detach();
    }
  }

  std::unique_lock<std::mutex> lock(launch->mutex);
  for (int r = 0; r < n; ++r) {
    RankOutcome& out = result.ranks[r];
    if (!launch->contexts[r]) continue;
    out.failures = LauncherAccess::failures(*launch->contexts[r]);
    out.notes = LauncherAccess::notes(*launch->contexts[r]);
    bool late = std::find(stragglers.begin(), stragglers.end(), r) != stragglers.end();
    if (!late) {
      out.status = out.failures.empty() ? RankStatus::kOk : RankStatus::kFailed;
      out.seconds = launch->endSeconds[r];
      continue;
    }
    out.status = RankStatus::kTimedOut;
    std::string what = format("did not finish within %lld ms; ran %zu registered cleanup(s); ",
                              static_cast<long long>(opts.deadline.count()), cleanupCount[r]);
    if (launch->done[r]) {
      what += format("finished %.2f s after the launch", launch->endSeconds[r]);
      out.seconds = launch->endSeconds[r];
    } else {
      what += "still running: thread detached, this test process is no longer trustworthy";
      out.detached = true;
      out.seconds = secondsSince(launch->start);
    }
    out.failures.insert(out.failures.begin(), what);
  }
  std::vector<bool> joinable(n);
  for (int r = 0; r < n; ++r) joinable[r] = launch->contexts[r] && launch->done[r];
  lock.unlock();
  for (int r = 0; r < n; ++r) {
    if (!threads[r].joinable()) continue;
    if (joinable[r]) {
      threads[r].join();
    } else {
      threads[r].detach();
    }
  }
  result.seconds = secondsSince(launch->start);
  return result;
}

// ---- Fork mode ------------------------------------------------------------------------------------

// In a forked child, turns gtest failures (EXPECT_*/ASSERT_* in the body) into rank failures, since
// the child's own gtest state never reaches the parent.
class ForwardGtestFailures : public testing::EmptyTestEventListener {
 public:
  explicit ForwardGtestFailures(RankContext* ctx) : ctx_(ctx) {}
  void OnTestPartResult(const testing::TestPartResult& part) override {
    if (!part.failed()) return;
    ctx_->fail("%s:%d: %s", part.file_name() ? part.file_name() : "?", part.line_number(), part.message());
  }

 private:
  RankContext* ctx_;
};

[[noreturn]] void runRankChild(const LaunchOptions& opts, const RankBody& body, int rank, int writeFd,
                               const std::vector<int>& inheritedFds) {
  setpgid(0, 0);
  for (int fd : inheritedFds) close(fd);
  struct rlimit noCore = {0, 0};
  setrlimit(RLIMIT_CORE, &noCore);  // a rank that crashes on purpose should not leave core files
  RankContext ctx(rank, opts.nranks, &opts.ids, writeFd);
  // The child's failures reach the parent as messages, so the child does not print them itself.
  // The forwarder is owned by gtest from here on; the child ends with _exit and never frees it.
  testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new ForwardGtestFailures(&ctx));
  try {
    body(ctx);
  } catch (const std::exception& e) {
    ctx.fail("uncaught exception: %s", e.what());
  } catch (...) {
    ctx.fail("uncaught exception of unknown type");
  }
  fflush(nullptr);
  _exit(ctx.failed() ? 1 : 0);
}

struct Child {
  int rank = -1;
  pid_t pid = -1;
  int readFd = -1;
  bool reaped = false;
  int waitStatus = 0;
  std::string bytes;  // everything read from the pipe so far
};

// Reads what is available without blocking; closes the fd at EOF. Returns false once closed.
bool drainPipe(Child& child) {
  char buf[4096];
  while (child.readFd >= 0) {
    ssize_t n = read(child.readFd, buf, sizeof(buf));
    if (n > 0) {
      child.bytes.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      close(child.readFd);
      child.readFd = -1;
    } else if (errno == EINTR) {
      continue;
    } else {
      break;  // EAGAIN: nothing more for now
    }
  }
  return child.readFd >= 0;
}

void parseRecords(const std::string& bytes, RankOutcome& out) {
  size_t pos = 0;
  while (bytes.size() - pos >= kRecordHeaderBytes) {
    char kind = bytes[pos];
    uint32_t len;
    memcpy(&len, bytes.data() + pos + 1, sizeof(len));
    if (bytes.size() - pos - kRecordHeaderBytes < len) break;
    std::string text = bytes.substr(pos + kRecordHeaderBytes, len);
    (kind == kFailureRecord ? out.failures : out.notes).push_back(std::move(text));
    pos += kRecordHeaderBytes + len;
  }
  if (pos != bytes.size())
    out.failures.push_back(format("(%zu trailing bytes of a cut-off message)", bytes.size() - pos));
}

void reapIfDone(Child& child, Clock::time_point start, RankOutcome& out) {
  if (child.reaped) return;
  pid_t got;
  do {
    got = waitpid(child.pid, &child.waitStatus, WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == child.pid) {
    child.reaped = true;
    out.seconds = secondsSince(start);
  }
}

LaunchResult launchForked(const LaunchOptions& opts, const RankBody& body) {
  const int n = opts.nranks;
  LaunchResult result;
  result.mode = LaunchMode::kFork;
  result.ranks.resize(n);
  for (int r = 0; r < n; ++r) result.ranks[r].rank = r;

  fflush(nullptr);  // or the children would flush the parent's buffered output a second time
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + opts.deadline;
  std::vector<Child> children;
  std::vector<int> parentFds;  // read ends the parent holds, closed in each later child
  for (int r = 0; r < n; ++r) {
    if (opts.skipRanks.count(r)) continue;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      result.ranks[r].status = RankStatus::kFailed;
      result.ranks[r].failures.push_back(format("launcher: pipe2 failed: %s", strerror(errno)));
      continue;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      runRankChild(opts, body, r, fds[1], parentFds);
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      result.ranks[r].status = RankStatus::kFailed;
      result.ranks[r].failures.push_back(format("launcher: fork failed: %s", strerror(errno)));
      continue;
    }
    setpgid(pid, pid);  // also done by the child; whichever runs first wins, both are the same
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    parentFds.push_back(fds[0]);
    Child child;
    child.rank = r;
    child.pid = pid;
    child.readFd = fds[0];
    children.push_back(std::move(child));
  }

  // Read the pipes and reap children until all are done or the deadline passes.
  auto allReaped = [&] {
    for (const Child& c : children)
      if (!c.reaped) return false;
    return true;
  };
  while (true) {
    for (Child& c : children) {
      reapIfDone(c, start, result.ranks[c.rank]);
      if (c.reaped) drainPipe(c);
    }
    if (allReaped() || Clock::now() >= deadline) break;
    std::vector<pollfd> pfds;
    for (const Child& c : children)
      if (c.readFd >= 0 && !c.reaped) pfds.push_back({c.readFd, POLLIN, 0});
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    int waitMs = static_cast<int>(std::clamp<long long>(left, 0, 20));
    if (poll(pfds.data(), pfds.size(), waitMs) > 0) {
      for (Child& c : children)
        if (!c.reaped) drainPipe(c);
    }
  }

  // Kill the stragglers' process groups (their own children included) and collect them.
  std::vector<bool> timedOut(n, false);
  for (Child& c : children) {
    if (c.reaped) continue;
    timedOut[c.rank] = true;
    kill(-c.pid, SIGKILL);
    kill(c.pid, SIGKILL);  // in case the child had not yet made its own group
    while (waitpid(c.pid, &c.waitStatus, 0) < 0 && errno == EINTR) {
    }
    c.reaped = true;
    result.ranks[c.rank].seconds = secondsSince(start);
    drainPipe(c);
  }

  for (Child& c : children) {
    if (c.readFd >= 0) close(c.readFd);  // a grandchild may still hold the write end open
    RankOutcome& out = result.ranks[c.rank];
    parseRecords(c.bytes, out);
    const int st = c.waitStatus;
    if (timedOut[c.rank]) {
      out.status = RankStatus::kTimedOut;
      out.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
      out.failures.insert(out.failures.begin(),
                          format("did not finish within %lld ms; its process group was killed with SIGKILL",
                                 static_cast<long long>(opts.deadline.count())));
    } else if (WIFSIGNALED(st)) {
      out.status = RankStatus::kSignaled;
      out.signal = WTERMSIG(st);
      out.failures.insert(out.failures.begin(), "process killed by " + describeSignal(out.signal));
    } else if (WIFEXITED(st)) {
      out.exitCode = WEXITSTATUS(st);
      if (out.exitCode == 0 && out.failures.empty()) {
        out.status = RankStatus::kOk;
      } else if (out.exitCode == 0 || out.exitCode == 1) {
        out.status = RankStatus::kFailed;
        if (out.failures.empty()) out.failures.push_back("process exited with code 1 but sent no message");
      } else {
        out.status = RankStatus::kExited;
        out.failures.insert(out.failures.begin(), format("process exited with code %d", out.exitCode));
      }
    }
  }
  result.seconds = secondsSince(start);
  return result;
}

}  // namespace

LaunchResult launchRanks(const LaunchOptions& opts, const RankBody& body) {
  if (opts.nranks < 1) {
    LaunchResult result;
    result.mode = opts.mode;
    return result;
  }
  return opts.mode == LaunchMode::kFork ? launchForked(opts, body) : launchThreads(opts, body);
}

}  // namespace accl::test
