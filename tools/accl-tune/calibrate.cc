// `accl-tune calibrate` and `accl-tune regret` (see calibrate.h): sweeps rank counts and
// collectives with the measurement harness, then fits and writes a calibration file, or compares
// the tuner's pick with the best measured candidate.
#include "calibrate.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "common/cli.h"
#include "sweep_options.h"
#include "tuner/algo_proto_filter.h"
#include "tuner/calibration.h"

namespace accl::tune {
namespace {

const char* kCalibrateUsage =
    "usage: accl-tune calibrate [-n 2,4,8] [-C all_reduce,...|all] [-b 8] [-e 256M] [-f 2]\n"
    "                           [--rounds 5] [--launches 3] [--target-us 20000] [--timeout 3600] [--no-pin]\n"
    "                           [-o FILE]\n"
    "Measures every algorithm x protocol the host backend has, for each rank count (forked local\n"
    "ranks) and collective, over the sizes -b..-e (factor -f), and writes the fitted curves to FILE\n"
    "(default: ACCL_TUNER_FILE, else ~/.cache/accl/tuner-host.conf), which the tuner then uses.\n"
    "Each rank count is launched --launches times and the per-launch medians are combined by their\n"
    "median: with more ranks than cores, how the scheduler places them differs from launch to\n"
    "launch and shifts whole curves.\n"
    "Exit status: 0 ok, 1 a measurement or the file failed, 2 bad usage.\n";

const char* kRegretUsage =
    "usage: accl-tune regret [-n 2,4,8] [-C all_reduce,...|all] [-b 8] [-e 256M] [-f 2]\n"
    "                        [--rounds 5] [--target-us 20000] [--no-pin] [-o CALIBRATION] [--max-regret 1.05]\n"
    "Measures, in one run, every algorithm x protocol and the tuner's own choice (with the\n"
    "calibration -o, else ACCL_TUNER_FILE / the default location) and prints, per size, the\n"
    "regret = time of the tuner's pick / time of the best candidate. Exits 1 when any regret\n"
    "exceeds --max-regret.\n"
    "Exit status: 0 every regret within --max-regret, 1 one above it or a measurement failed, 2 bad usage.\n";

std::string machineLine() {
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);
  char date[64];
  std::time_t t = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  char line[400];
  std::snprintf(line, sizeof(line), "%s cpus=%ld backend=host date=%s", host, sysconf(_SC_NPROCESSORS_ONLN), date);
  return line;
}

void makeParentDirs(const std::string& path) {
  for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1))
    mkdir(path.substr(0, at).c_str(), 0755);
}

MeasureSpec specFor(const SweepOptions& o, FuncId func, int nRanks, bool withAuto) {
  MeasureSpec spec;
  spec.func = func;
  spec.nRanks = nRanks;
  spec.sizes = sizeRange(o.minBytes, o.maxBytes, o.factor);
  spec.candidates = hostCandidates(func);
  if (withAuto) spec.candidates.push_back(Candidate{});
  spec.rounds = o.rounds;
  spec.targetUs = o.targetUs;
  spec.timeoutSec = o.timeoutSec;
  spec.reportPicks = withAuto;
  spec.pin = o.pin;
  return spec;
}

// Per size and candidate, the median over launches of the launches' medians (failed entries,
// negative, are left out; all failed stays negative).
MeasureResult combineLaunches(const std::vector<MeasureResult>& runs) {
  MeasureResult out = runs.front();
  for (size_t s = 0; s < out.us.size(); ++s) {
    for (size_t c = 0; c < out.us[s].size(); ++c) {
      std::vector<double> v;
      for (const MeasureResult& r : runs)
        if (r.us[s][c] > 0) v.push_back(r.us[s][c]);
      if (!v.empty()) out.us[s][c] = median(v);
    }
  }
  return out;
}


}  // namespace

int runCalibrate(int argc, char** argv) {
  SweepOptions o;
  if (int rc = parseSweepOptions(argc, argv, kCalibrateUsage, &o); rc >= 0) return rc;
  if (o.file.empty()) o.file = calibrationPath();
  if (o.file.empty() || o.file == "none") {
    return cli::usageError("accl-tune calibrate",
                           "no output file (ACCL_TUNER_FILE is \"none\", or no cache directory is known): give -o FILE");
  }
  Calibration cal;
  cal.machine = machineLine();
  for (FuncId func : o.funcs) {
    for (int n : o.ranks) {
      MeasureSpec spec = specFor(o, func, n, false);
      std::printf("# %s, %d ranks: %zu sizes x %zu candidates x %d launches (median us)\n", funcName(func), n,
                  spec.sizes.size(), spec.candidates.size(), o.launches);
      std::fflush(stdout);
      MeasureResult res;
      std::vector<MeasureResult> runs(o.launches);
      for (int l = 0; l < o.launches; ++l) {
        std::string err;
        if (!measure(spec, &runs[l], &err)) {
          std::fprintf(stderr, "accl-tune calibrate: %s with %d ranks failed: %s\n", funcName(func), n, err.c_str());
          return cli::kExitRunFailed;
        }
      }
      res = combineLaunches(runs);
      std::printf("%12s", "bytes");
      for (const Candidate& c : spec.candidates) std::printf(" %14s", c.label().c_str());
      std::printf("\n");
      for (size_t s = 0; s < spec.sizes.size(); ++s) {
        std::printf("%12zu", spec.sizes[s]);
        for (double us : res.us[s]) std::printf(" %14.2f", us);
        std::printf("\n");
      }
      for (size_t c = 0; c < spec.candidates.size(); ++c) {
        CalibrationCurve curve;
        curve.func = func;
        curve.algo = algoIndex(spec.candidates[c].algo);
        curve.proto = protoIndex(spec.candidates[c].proto);
        curve.nRanks = n;
        curve.nNodes = 1;
        for (size_t s = 0; s < spec.sizes.size(); ++s)
          if (res.us[s][c] > 0) curve.points.push_back({spec.sizes[s], res.us[s][c]});
        if (curve.points.empty()) continue;
        curve.makeMonotone();
        curve.fit();
        std::printf("  fit %-15s latency %9.2f us  bandwidth %8.3f GB/s  (%zu points)\n",
                    spec.candidates[c].label().c_str(), curve.latUs, curve.gbps, curve.points.size());
        cal.curves.push_back(std::move(curve));
      }
      std::fflush(stdout);
    }
  }
  makeParentDirs(o.file);
  if (cal.save(o.file.c_str()) != ncclSuccess) {
    std::fprintf(stderr, "accl-tune calibrate: %s\n", ncclGetLastError(nullptr));
    return cli::kExitRunFailed;
  }
  std::printf("# wrote %s (%zu curves); the tuner reads it through ACCL_TUNER_FILE or the default location\n",
              o.file.c_str(), cal.curves.size());
  return 0;
}

int runRegret(int argc, char** argv) {
  SweepOptions o;
  if (int rc = parseSweepOptions(argc, argv, kRegretUsage, &o); rc >= 0) return rc;
  if (!o.file.empty()) setenv("ACCL_TUNER_FILE", o.file.c_str(), 1);
  double worst = 0;
  for (FuncId func : o.funcs) {
    for (int n : o.ranks) {
      MeasureSpec spec = specFor(o, func, n, true);
      const size_t autoIdx = spec.candidates.size() - 1;
      MeasureResult res;
      std::string err;
      if (!measure(spec, &res, &err)) {
        std::fprintf(stderr, "accl-tune regret: %s with %d ranks failed: %s\n", funcName(func), n, err.c_str());
        return cli::kExitRunFailed;
      }
      std::printf("# %s, %d ranks (times in us; regret = pick / best, auto = tuner-driven run / best)\n",
                  funcName(func), n);
      std::printf("%12s", "bytes");
      for (size_t c = 0; c < autoIdx; ++c) std::printf(" %14s", spec.candidates[c].label().c_str());
      std::printf(" %14s %14s %14s %7s %7s\n", "pick", "best", "auto", "regret", "auto/b");
      for (size_t s = 0; s < spec.sizes.size(); ++s) {
        const auto& us = res.us[s];
        size_t best = autoIdx, pick = autoIdx;
        for (size_t c = 0; c < autoIdx; ++c) {
          if (us[c] > 0 && (best == autoIdx || us[c] < us[best])) best = c;
          if (spec.candidates[c].label() == res.picks[s]) pick = c;
        }
        std::printf("%12zu", spec.sizes[s]);
        for (size_t c = 0; c < autoIdx; ++c) std::printf(" %14.2f", us[c]);
        if (best == autoIdx || pick == autoIdx) {
          std::printf(" %14s  (no pick or no measurement)\n", res.picks[s].c_str());
          worst = 1e9;
          continue;
        }
        double regret = us[pick] / us[best];
        double autoRatio = us[autoIdx] / us[best];
        if (regret > worst) worst = regret;
        std::printf(" %14s %14s %14.2f %7.3f %7.3f%s\n", res.picks[s].c_str(), spec.candidates[best].label().c_str(),
                    us[autoIdx], regret, autoRatio, regret > o.maxRegret ? "  <-- above target" : "");
      }
      std::fflush(stdout);
    }
  }
  std::printf("# worst regret %.3f (target <= %.2f): %s\n", worst, o.maxRegret, worst <= o.maxRegret ? "met" : "MISSED");
  return worst <= o.maxRegret ? cli::kExitOk : cli::kExitRunFailed;
}

}  // namespace accl::tune
