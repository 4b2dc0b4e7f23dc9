// Aggregation, the nccl-tests-format table and the JSON file (see reporter.h).
#include "reporter.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

#include "channel.h"

namespace accl::bench {

std::string formatNumber(double value, int width) {
  char buf[64];
  const char* fmts[3] = {"%*.2f", "%*.1f", "%*.0f"};
  for (const char* f : fmts) {
    int n = std::snprintf(buf, sizeof(buf), f, width, value);
    if (n <= width) return buf;
  }
  std::snprintf(buf, sizeof(buf), width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return buf;
}

double stepTimeout(const Options& o, const Plan& plan, int step) {
  if (o.timeoutGiven) return o.timeoutSec;
  const PlanStep& s = plan.steps[step];
  const PlanTest& t = plan.tests[s.test];
  // Pessimistic 20 MB/s per rank for everything a step does: warmup (the first step of a test also warms
  // up every size), the untimed call, the timed calls and the checked calls.
  double calls = 2.0 + (double)o.iters * o.aggIters * std::max(1, o.graphLaunches) + 2.0 * o.checks;
  double bytes = (double)collShape(plan.coll, s.bytes, t.type->size, plan.nranks).send * t.type->size +
                 (double)s.bytes;
  double extra = calls * bytes * plan.nranks / 20e6;
  bool firstOfTest = step == 0 || plan.steps[step - 1].test != s.test;
  if (firstOfTest)
    for (size_t w : plan.warmup) extra += (double)o.warmupIters * o.aggIters * 2.0 * (double)w * plan.nranks / 20e6;
  return o.timeoutSec + extra;
}

namespace {

using Clock = std::chrono::steady_clock;

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += (char)c;
    }
  }
  return out + "\"";
}

std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

struct JsonRow {
  size_t bytes, count;
  std::string type, redop;
  int root;
  bool inPlace;
  double timeUs, cpuUs, algbw, busbw;
  int64_t wrong;  // -1: not checked
};

class Reporter {
 public:
  explicit Reporter(const ReporterInput& in) : in_(in), o_(*in.opts), plan_(*in.plan) {
    n_ = (int)in.fds.size();
    queues_.resize(n_);
    open_.assign(n_, true);
    finished_.assign(n_, false);
  }

  int run() {
    int code = body();
    writeJson(code);
    std::fflush(stdout);
    return code;
  }

 private:
  // ---- reading ----

  // Reads whatever is available within `ms` milliseconds. Returns false when nothing could be read
  // because every channel is closed.
  bool pump(int ms) {
    std::vector<pollfd> pfds;
    std::vector<int> ranks;
    for (int r = 0; r < n_; ++r) {
      if (!open_[r]) continue;
      pfds.push_back({in_.fds[r], POLLIN, 0});
      ranks.push_back(r);
    }
    if (pfds.empty()) return false;
    int rc = poll(pfds.data(), pfds.size(), ms);
    if (rc <= 0) return true;
    for (size_t i = 0; i < pfds.size(); ++i) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int r = ranks[i];
      Record rec;
      ReadStatus st = readRecord(in_.fds[r], &rec);
      if (st != ReadStatus::kOk) {
        open_[r] = false;
        if (!finished_[r]) rankVanished(r, st);
        continue;
      }
      if (rec.kind == RecordKind::kError) {
        finished_[r] = true;
        rankFailed(rec);
      } else {
        if (rec.kind == RecordKind::kDone) finished_[r] = true;
        queues_[r].push_back(rec);
      }
    }
    return true;
  }

  void rankFailed(const Record& rec) {
    std::printf(" .. accl-perf rank %d (pid %d%s): %s\n", rec.rank, rec.pid,
                rec.step >= 0 ? (", step " + std::to_string(rec.step)).c_str() : "", rec.text);
    std::fflush(stdout);
    errors_.push_back("rank " + std::to_string(rec.rank) + ": " + rec.text);
    if (failCode_ == 0) failCode_ = rec.exitCode ? rec.exitCode : kExitNcclError;
  }

  void rankVanished(int r, ReadStatus st) {
    finished_[r] = true;
    std::string why = st == ReadStatus::kEof ? "exited without finishing" : "sent a truncated record";
    if (r < (int)in_.pids.size() && in_.pids[r] > 0) {
      // The channel closes as the process exits; give the exit a moment to complete (a core dump can
      // take a while), but only ranks whose process is alone in it, so a live sibling is never waited for.
      int status = 0;
      pid_t got = 0;
      bool alone = std::count(in_.pids.begin(), in_.pids.end(), in_.pids[r]) == 1;
      for (int i = 0; i < (alone ? 100 : 1) && got == 0; ++i) {
        got = waitpid(in_.pids[r], &status, WNOHANG);
        if (got == 0 && alone) usleep(20000);
      }
      if (got == in_.pids[r]) {
        if (WIFSIGNALED(status)) why += " (killed by signal " + std::to_string(WTERMSIG(status)) + ")";
        else if (WIFEXITED(status)) why += " (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
      }
    }
    std::printf(" .. accl-perf rank %d %s\n", r, why.c_str());
    std::fflush(stdout);
    errors_.push_back("rank " + std::to_string(r) + " " + why);
    if (failCode_ == 0) failCode_ = kExitNcclError;
  }

  // Waits until every rank's next record satisfies `ready`, or failure/timeout.
  template <class Ready>
  bool waitAll(double timeoutSec, const char* what, Ready ready) {
    auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeoutSec));
    for (;;) {
      if (failCode_) return false;
      bool all = true;
      for (int r = 0; r < n_ && all; ++r) all = !queues_[r].empty() && ready(queues_[r].front());
      if (all) return true;
      auto now = Clock::now();
      if (now >= deadline) {
        std::string missing;
        for (int r = 0; r < n_; ++r)
          if (queues_[r].empty()) missing += (missing.empty() ? "" : ",") + std::to_string(r);
        std::printf(" .. accl-perf timeout: no %s from rank(s) %s after %.0f s (see --timeout)\n", what,
                    missing.c_str(), timeoutSec);
        std::fflush(stdout);
        errors_.push_back(std::string("timeout waiting for ") + what);
        failCode_ = kExitTimeout;
        return false;
      }
      int ms = (int)std::min<long long>(
          1000, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1);
      if (!pump(ms)) {
        if (!failCode_) failCode_ = kExitNcclError;
        return false;
      }
    }
  }

  // After a failure, give the other ranks a moment to report their own errors, then stop.
  void drainAfterFailure() {
    auto until = Clock::now() + std::chrono::seconds(3);
    while (Clock::now() < until) {
      bool anyOpen = false;
      for (int r = 0; r < n_; ++r) anyOpen |= open_[r] && !finished_[r];
      if (!anyOpen) break;
      if (!pump(100)) break;
    }
  }

  // ---- printing ----

  void printHeader() {
    const Options& o = o_;
    std::printf("# accl-perf (nccl-tests 2.19.6 compatible) nccl-headers=%d nccl-library=%d\n", NCCL_VERSION_CODE,
                in_.libraryVersion);
    std::printf("# Collective test starting: %s\n", o.programName.c_str());
    std::printf(
        "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d agg iters: %d "
        "validation: %d graph: %d unalign: %d\n",
        o.threads, o.gpus, o.minBytes, o.maxBytes, o.stepFactor > 1 ? o.stepFactor : o.stepBytes,
        o.stepFactor > 1 ? "factor" : "bytes", o.warmupIters, o.iters, o.aggIters, o.checks, o.graphLaunches,
        o.unalign);
    std::printf("# accl: %s, backend %s\n", in_.launch.c_str(), in_.backend.c_str());
    if (o.blocking == 1) std::printf("# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
    if (o.blocking == 2) std::printf("# Blocking Enabled: wait after each inner iteration (-m), no barrier \n");
    if (o.blocking == 3) std::printf("# Blocking Enabled: wait after each outer iteration (-n) \n");
    if (o.blocking && in_.backend == "host")
      std::printf("# note: -z has no effect on the host backend (calls block)\n");
    if (o.graphLaunches && in_.backend == "host")
      std::printf("# note: -G (CUDA graph) ignored on the host backend; plain timed loop used\n");
    if (o.collConfig) {
      if (o.collConfigNull)
        std::printf("# accl: nccl*Config variants, config NULL\n");
      else
        std::printf("# accl: nccl*Config variants, algSelection %s (force %d), minCTAs %s, maxCTAs %s\n",
                    o.algSelection.empty() ? "auto" : o.algSelection.c_str(), o.collForce,
                    o.collMinCtas > 0 ? std::to_string(o.collMinCtas).c_str() : "unset",
                    o.collMaxCtas > 0 ? std::to_string(o.collMaxCtas).c_str() : "unset");
    }
    for (const std::string& note : o.notes) std::printf("# note: %s\n", note.c_str());
    std::printf("#\n# Using devices\n");
    for (int r = 0; r < n_; ++r) {
      const Record& h = queues_[r].front();
      std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", r, 0, h.pid, h.host, h.device,
                  h.busId, h.deviceName);
    }
    std::printf("#\n");
    std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "",
                "", "", "", "");
    const char* timeName = o.reportCpuTime ? "cputime" : "time";
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count", "type",
                "redop", "root", timeName, "algbw", "busbw", "#wrong", timeName, "algbw", "busbw", "#wrong", 0, "");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)", "(elements)", "",
                "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", 0, "");
    std::fflush(stdout);
  }

  double aggregate(const std::vector<double>& v) const {
    switch (o_.average) {
      case 0: return v[0];
      case 2: return *std::min_element(v.begin(), v.end());
      case 3: return *std::max_element(v.begin(), v.end());
      default: {
        double s = 0;
        for (double x : v) s += x;
        return s / (double)v.size();
      }
    }
  }

  void printStep(int k) {
    const PlanStep& s = plan_.steps[k];
    const PlanTest& t = plan_.tests[s.test];
    CollShape shape = collShape(plan_.coll, s.bytes, t.type->size, n_);
    std::vector<double> times(n_), cpu(n_);
    int64_t wrong = 0;
    bool checked = true;
    for (int r = 0; r < n_; ++r) {
      const Record& rec = queues_[r].front();
      times[r] = rec.timeSec;
      cpu[r] = rec.cpuSec;
      if (rec.wrong < 0) checked = false;
      else wrong += rec.wrong;
      queues_[r].pop_front();
    }
    double sec = aggregate(times);
    double cpuSec = aggregate(cpu);
    double algbw = algBandwidth(plan_.coll, shape.param, t.type->size, n_, sec);
    double busbw = algbw * busFactor(plan_.coll, n_);
    double shownUs = (o_.reportCpuTime ? cpuSec : sec) * 1e6;
    if (!s.inPlace) {
      std::printf("%12zu  %12zu  %8s  %6s  %6d", reportedBytes(shape, t.type->size), shape.param, t.type->name,
                  plan_.opName(t), t.root);
    }
    if (checked) {
      std::printf("  %7s  %6s  %6s  %6g", formatNumber(shownUs, 7).c_str(), formatNumber(algbw, 6).c_str(),
                  formatNumber(busbw, 6).c_str(), (double)wrong);
    } else {
      std::printf("  %7s  %6s  %6s    N/A", formatNumber(shownUs, 7).c_str(), formatNumber(algbw, 6).c_str(),
                  formatNumber(busbw, 6).c_str());
    }
    if (s.inPlace) std::printf("\n");
    std::fflush(stdout);
    busbwSum_ += busbw;
    ++busbwCount_;
    if (checked && wrong > 0) ++outOfBounds_;
    rows_.push_back({reportedBytes(shape, t.type->size), shape.param, t.type->name, plan_.opName(t), t.root,
                     s.inPlace, sec * 1e6, cpuSec * 1e6, algbw, busbw, checked ? wrong : -1});
  }

  int body() {
    if (!waitAll(o_.timeoutSec, "start-up report", [](const Record& r) { return r.kind == RecordKind::kHello; })) {
      drainAfterFailure();
      return failCode_;
    }
    printHeader();
    for (int r = 0; r < n_; ++r) queues_[r].pop_front();
    for (int k = 0; k < (int)plan_.steps.size(); ++k) {
      bool ok = waitAll(stepTimeout(o_, plan_, k), "result", [k](const Record& r) {
        return r.kind == RecordKind::kResult && r.step == k;
      });
      if (!ok) {
        if (plan_.steps[k].inPlace) std::printf("\n");  // end the half-printed table line
        drainAfterFailure();
        return failCode_;
      }
      printStep(k);
    }
    if (!waitAll(o_.timeoutSec, "completion report", [](const Record& r) { return r.kind == RecordKind::kDone; })) {
      drainAfterFailure();
      return failCode_;
    }
    const char* minBwEnv = std::getenv("NCCL_TESTS_MIN_BW");
    double minBw = minBwEnv ? std::atof(minBwEnv) : -1;
    avgBusbw_ = busbwCount_ ? busbwSum_ / busbwCount_ : 0.0;
    bool bwOk = minBw < 0 || avgBusbw_ >= 0.9 * minBw;
    std::printf("# %-20s : %d %s\n", "Out of bounds values", outOfBounds_, outOfBounds_ ? "FAILED" : "OK");
    std::printf("# %-20s : %g %s\n", "Avg bus bandwidth", avgBusbw_, minBw < 0 ? "" : (bwOk ? "OK" : "FAILED"));
    std::printf("#\n# Collective test concluded: %s\n#\n\n", o_.programName.c_str());
    return (outOfBounds_ || !bwOk) ? kExitWrongData : kExitOk;
  }

  void writeJson(int code) {
    if (o_.jsonPath.empty()) return;
    FILE* f = std::fopen(o_.jsonPath.c_str(), "w");
    if (!f) {
      std::printf("# skipping json output; %s not accessible\n", o_.jsonPath.c_str());
      return;
    }
    const CollInfo& ci = collInfo(plan_.coll);
    std::fprintf(f, "{\n  \"tool\": \"accl-perf\",\n  \"format_version\": 1,\n");
    std::fprintf(f, "  \"collective\": %s,\n  \"nranks\": %d,\n  \"backend\": %s,\n  \"launch\": %s,\n",
                 jsonString(ci.name).c_str(), n_, jsonString(in_.backend).c_str(), jsonString(in_.launch).c_str());
    std::fprintf(f, "  \"nccl_version\": %d,\n", in_.libraryVersion);
    std::fprintf(f,
                 "  \"config\": {\"minbytes\": %zu, \"maxbytes\": %zu, \"stepbytes\": %zu, \"stepfactor\": %zu, "
                 "\"iters\": %d, \"warmup_iters\": %d, \"agg_iters\": %d, \"check\": %d, \"average\": %d},\n",
                 o_.minBytes, o_.maxBytes, o_.stepBytes, o_.stepFactor, o_.iters, o_.warmupIters, o_.aggIters,
                 o_.checks, o_.average);
    std::fprintf(f, "  \"results\": [");
    for (size_t i = 0; i < rows_.size(); ++i) {
      const JsonRow& r = rows_[i];
      std::fprintf(f,
                   "%s\n    {\"collective\": %s, \"size\": %zu, \"count\": %zu, \"type\": %s, \"redop\": %s, "
                   "\"root\": %d, \"inplace\": %s, \"time_us\": %s, \"cputime_us\": %s, \"algbw\": %s, "
                   "\"busbw\": %s, \"wrong\": %s}",
                   i ? "," : "", jsonString(ci.name).c_str(), r.bytes, r.count, jsonString(r.type).c_str(),
                   jsonString(r.redop).c_str(), r.root, r.inPlace ? "true" : "false", jsonNumber(r.timeUs).c_str(),
                   jsonNumber(r.cpuUs).c_str(), jsonNumber(r.algbw).c_str(), jsonNumber(r.busbw).c_str(),
                   r.wrong < 0 ? "null" : std::to_string(r.wrong).c_str());
    }
    std::fprintf(f, "\n  ],\n");
    std::fprintf(f, "  \"out_of_bounds\": {\"count\": %d, \"okay\": %s},\n", outOfBounds_,
                 outOfBounds_ ? "false" : "true");
    std::fprintf(f, "  \"average_bus_bandwidth\": %s,\n", jsonNumber(avgBusbw_).c_str());
    std::fprintf(f, "  \"exit_code\": %d,\n  \"errors\": [", code);
    for (size_t i = 0; i < errors_.size(); ++i) std::fprintf(f, "%s%s", i ? ", " : "", jsonString(errors_[i]).c_str());
    std::fprintf(f, "]\n}\n");
    std::fclose(f);
  }

 private:
  const ReporterInput& in_;
  const Options& o_;
  const Plan& plan_;
  int n_ = 0;
  std::vector<std::deque<Record>> queues_;
  std::vector<bool> open_;
  std::vector<bool> finished_;
  std::vector<std::string> errors_;
  std::vector<JsonRow> rows_;
  int failCode_ = 0;
  int outOfBounds_ = 0;
  double busbwSum_ = 0;
  int busbwCount_ = 0;
  double avgBusbw_ = 0;
};

}  // namespace

int runReporter(const ReporterInput& in) {
  Reporter rep(in);
  return rep.run();
}

}  // namespace accl::bench
