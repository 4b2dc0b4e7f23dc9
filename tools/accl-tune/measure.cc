// Forked-rank measurement of candidate algorithm x protocol combinations (see measure.h).
#include "measure.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "nccl.h"
#include "tuner/algo_proto_filter.h"
#include "tuner/host_model.h"
#include "tuner/tuner.h"

namespace accl::tune {
namespace {

double nowUs() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

void setOrUnset(const char* name, const std::string& value) {
  if (value.empty()) unsetenv(name);
  else setenv(name, value.c_str(), 1);
}

constexpr double kSettleUs = 300000;
constexpr double kPruneFactor = 3.0;

// Pins the calling process to one CPU of those it may run on: rank r gets the (r mod n)-th, as
// `mpirun --bind-to core` places ranks. Unpinned, forked ranks start on their parent's core and
// the kernel spreads them over the next milliseconds differently in every launch, which moves
// whole curves (see measure.h).
void pinRank(int rank) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  int n = CPU_COUNT(&allowed);
  if (n <= 0) return;
  int want = rank % n;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (want-- == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      sched_setaffinity(0, sizeof(one), &one);
      return;
    }
  }
}

// One rank's whole run. Rank 0 writes "r <size> <cand> <us>" and "p <size> <label>" lines to
// `out` (a pipe to the parent). Returns the process exit code.
int rankMain(const MeasureSpec& spec, const std::vector<ncclUniqueId>& ids, int rank, int out) {
  const int n = spec.nRanks;
  const int k = static_cast<int>(spec.candidates.size());
  setenv("ACCL_BACKEND", "host", 1);
  if (spec.pin) pinRank(rank);
  const char* oldAlgo = getenv("NCCL_ALGO");
  const char* oldProto = getenv("NCCL_PROTO");
  std::string savedAlgo = oldAlgo ? oldAlgo : "", savedProto = oldProto ? oldProto : "";
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  ncclComm_t ctrl;
  if (ncclCommInitRank(&ctrl, n, ids[k], rank) != ncclSuccess) return 3;
  std::vector<ncclComm_t> comms(k);
  for (int c = 0; c < k; ++c) {
    setOrUnset("NCCL_ALGO", spec.candidates[c].algo);
    setOrUnset("NCCL_PROTO", spec.candidates[c].proto);
    if (ncclCommInitRank(&comms[c], n, ids[c], rank) != ncclSuccess) return 3;
  }
  setOrUnset("NCCL_ALGO", savedAlgo);
  setOrUnset("NCCL_PROTO", savedProto);

  size_t maxBytes = 8;
  for (size_t s : spec.sizes) maxBytes = std::max(maxBytes, s);
  std::vector<float> send(maxBytes / sizeof(float) + n, 1.0f), recv(maxBytes / sizeof(float) + n, 0.0f);

  auto run = [&](ncclComm_t comm, size_t bytes) -> ncclResult_t {
    size_t elems = std::max<size_t>(1, bytes / sizeof(float));
    size_t perRank = std::max<size_t>(1, elems / n);
    switch (spec.func) {
      case kFuncAllReduce: return ncclAllReduce(send.data(), recv.data(), elems, ncclFloat, ncclSum, comm, nullptr);
      case kFuncAllGather: return ncclAllGather(send.data(), recv.data(), perRank, ncclFloat, comm, nullptr);
      case kFuncReduceScatter:
        return ncclReduceScatter(send.data(), recv.data(), perRank, ncclFloat, ncclSum, comm, nullptr);
      case kFuncBroadcast: return ncclBroadcast(send.data(), recv.data(), elems, ncclFloat, 0, comm, nullptr);
      case kFuncReduce: return ncclReduce(send.data(), recv.data(), elems, ncclFloat, ncclSum, 0, comm, nullptr);
      default: return ncclInvalidArgument;
    }
  };
  float one = 1.0f;
  auto barrier = [&] { return ncclAllReduce(&one, &one, 1, ncclFloat, ncclMax, ctrl, nullptr); };
  auto slowest = [&](double v) {
    ncclAllReduce(&v, &v, 1, ncclFloat64, ncclMax, ctrl, nullptr);
    return v;
  };

  // Settle first, for at least kSettleUs: connections, scratch buffers, page faults and the wait
  // policy's spin budget all warm up on the first operations of each communicator. Every rank
  // runs the same number of operations (rank 0 decides when to stop and tells the others).
  for (double start = nowUs();;) {
    for (int c = 0; c < k; ++c)
      for (int i = 0; i < 20; ++i) run(comms[c], spec.sizes.empty() ? 8 : spec.sizes.front());
    float done = rank == 0 && nowUs() - start >= kSettleUs ? 1.0f : 0.0f;
    ncclAllReduce(&done, &done, 1, ncclFloat, ncclMax, ctrl, nullptr);
    if (done > 0) break;
  }
  // A candidate slower than kPruneFactor x the best at two sizes in a row cannot become the best at
  // larger sizes (protocol and step costs only grow with size); it is not measured further, which
  // keeps LL's multi-second large-message runs from dominating the sweep. Every rank sees the same
  // (all-reduced) samples, so every rank prunes the same candidates.
  std::vector<int> slowStreak(k, 0);
  std::vector<bool> pruned(k, false);
  for (size_t si = 0; si < spec.sizes.size(); ++si) {
    const size_t bytes = spec.sizes[si];
    std::vector<bool> ok(pruned.size());
    for (int c = 0; c < k; ++c) ok[c] = !pruned[c];
    // Warm-up (also the estimate that sizes the loops): one operation per candidate.
    double estimate = 1e30;
    for (int c = 0; c < k; ++c) {
      if (!ok[c]) continue;
      barrier();
      double t0 = nowUs();
      ok[c] = run(comms[c], bytes) == ncclSuccess;
      double t = slowest(nowUs() - t0);
      if (ok[c]) estimate = std::min(estimate, t);
    }
    int iters = static_cast<int>(std::clamp(spec.targetUs / std::max(estimate, 0.05), 1.0, 20000.0));
    std::vector<std::vector<double>> samples(k);
    for (int r = 0; r < spec.rounds; ++r) {
      for (int j = 0; j < k; ++j) {
        int c = (j + r) % k;
        if (!ok[c]) continue;
        barrier();
        double t0 = nowUs();
        for (int i = 0; i < iters; ++i) run(comms[c], bytes);
        samples[c].push_back(slowest((nowUs() - t0) / iters));
      }
    }
    std::vector<double> med(k, -1);
    double best = -1;
    for (int c = 0; c < k; ++c) {
      if (!ok[c] || samples[c].empty()) continue;
      med[c] = median(samples[c]);
      if (best < 0 || med[c] < best) best = med[c];
    }
    for (int c = 0; c < k; ++c) {
      bool isAuto = spec.candidates[c].algo.empty() && spec.candidates[c].proto.empty();
      slowStreak[c] = med[c] > kPruneFactor * best ? slowStreak[c] + 1 : 0;
      if (slowStreak[c] >= 2 && !isAuto) pruned[c] = true;
    }
    if (rank == 0) {
      std::string lines;
      char buf[160];
      for (int c = 0; c < k; ++c) {
        std::snprintf(buf, sizeof(buf), "r %zu %d %.6f\n", si, c, med[c]);
        lines += buf;
        if (spec.reportPicks && spec.candidates[c].algo.empty() && spec.candidates[c].proto.empty()) {
          TunerChoice choice;
          if (comms[c]->engine->tuner->choose(spec.func, bytes, &choice) == ncclSuccess) {
            std::snprintf(buf, sizeof(buf), "p %zu %s/%s\n", si, algoName(choice.algo), protoName(choice.proto));
            lines += buf;
          }
        }
      }
      if (write(out, lines.data(), lines.size()) != static_cast<ssize_t>(lines.size())) return 4;
    }
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  ncclCommDestroy(ctrl);
  return 0;
}

}  // namespace

bool measure(const MeasureSpec& spec, MeasureResult* out, std::string* error) {
  const int k = static_cast<int>(spec.candidates.size());
  std::vector<ncclUniqueId> ids(k + 1);
  for (auto& id : ids) {
    if (ncclGetUniqueId(&id) != ncclSuccess) {
      *error = std::string("ncclGetUniqueId failed: ") + ncclGetLastError(nullptr);
      return false;
    }
  }
  int fds[2];
  if (pipe(fds) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < spec.nRanks; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      *error = std::string("fork: ") + std::strerror(errno);
      for (pid_t p : pids) kill(p, SIGKILL);
      return false;
    }
    if (pid == 0) {
      close(fds[0]);
      _exit(rankMain(spec, ids, r, fds[1]));
    }
    pids.push_back(pid);
  }
  close(fds[1]);

  out->us.assign(spec.sizes.size(), std::vector<double>(k, -1));
  out->picks.assign(spec.sizes.size(), "");
  std::string text;
  const double deadline = nowUs() + spec.timeoutSec * 1e6;
  bool timedOut = false;
  while (true) {
    int left = static_cast<int>((deadline - nowUs()) / 1000);
    if (left <= 0) {
      timedOut = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int rc = poll(&p, 1, std::min(left, 1000));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    char buf[4096];
    ssize_t got = read(fds[0], buf, sizeof(buf));
    if (got <= 0) break;  // every rank closed its end: done or dead
    text.append(buf, got);
  }
  close(fds[0]);
  if (timedOut)
    for (pid_t p : pids) kill(p, SIGKILL);
  bool allOk = !timedOut;
  for (int r = 0; r < spec.nRanks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (allOk) {
        char msg[160];
        if (WIFSIGNALED(status))
          std::snprintf(msg, sizeof(msg), "rank %d was killed by signal %d%s", r, WTERMSIG(status),
                        timedOut ? " (timeout)" : "");
        else
          std::snprintf(msg, sizeof(msg), "rank %d exited with status %d", r, WEXITSTATUS(status));
        *error = msg;
      }
      allOk = false;
    }
  }
  std::istringstream lines(text);
  std::string kind;
  while (lines >> kind) {
    size_t si;
    if (kind == "r") {
      int c;
      double us;
      lines >> si >> c >> us;
      if (si < out->us.size() && c >= 0 && c < k) out->us[si][c] = us;
    } else if (kind == "p") {
      std::string label;
      lines >> si >> label;
      if (si < out->picks.size()) out->picks[si] = label;
    }
  }
  if (timedOut && error->empty()) *error = "timed out";
  return allOk;
}

bool parseSize(const std::string& text, size_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  double mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1024, ++end;
  else if (*end == 'M' || *end == 'm') mult = 1024.0 * 1024, ++end;
  else if (*end == 'G' || *end == 'g') mult = 1024.0 * 1024 * 1024, ++end;
  if (*end != '\0' || v < 0) return false;
  *out = static_cast<size_t>(v * mult);
  return true;
}

std::vector<size_t> sizeRange(size_t minBytes, size_t maxBytes, double factor) {
  std::vector<size_t> out;
  if (factor <= 1.0) factor = 2.0;
  for (double s = double(std::max<size_t>(minBytes, 1)); s <= double(maxBytes) * 1.0000001; s *= factor)
    out.push_back(static_cast<size_t>(s));
  return out;
}

bool parseFunc(const std::string& text, FuncId* out) {
  std::string t;
  for (char ch : text)
    if (ch != '_') t += ch;
  int f = collFuncIndex(t);
  if (f < 0) return false;
  *out = static_cast<FuncId>(f);
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size();
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

std::vector<Candidate> hostCandidates(FuncId func) {
  std::vector<Candidate> c = {{"Ring", "Simple"}, {"Ring", "LL"}};
  if (func == kFuncAllReduce) {
    c.push_back({"Tree", "Simple"});
    c.push_back({"Tree", "LL"});
    c.push_back({"OneShot", "Simple"});
  }
  return c;
}

}  // namespace accl::tune
