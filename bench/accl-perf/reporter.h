// The reporter: reads every rank's records, aggregates each step across ranks (time per -a, wrong
// elements summed), prints nccl-tests' header, table and footer, writes the JSON file, and turns errors,
// dead ranks and timeouts into a message and an exit code. It runs in the launching process (thread and
// fork modes) or in process 0 (mpirun mode) and never calls the library's collectives.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "options.h"
#include "plan.h"

namespace accl::bench {

struct ReporterInput {
  const Options* opts = nullptr;
  const Plan* plan = nullptr;
  std::vector<int> fds;          // read end of each rank's channel, indexed by rank
  std::vector<pid_t> pids;       // fork mode: the process of each rank (else -1), for failure messages
  std::string launch;            // e.g. "4 ranks = 4 processes x 1 ranks"
  std::string backend;           // "host" or "cuda"
  int libraryVersion = 0;        // ncclGetVersion
};

// Returns the exit code: 0, 7 (wrong data or busbw below NCCL_TESTS_MIN_BW), or the failure's code.
int runReporter(const ReporterInput& in);

// nccl-tests' number formatting: the value in `width` characters, dropping decimals, then exponent form.
std::string formatNumber(double value, int width);

// Per-step timing budget (seconds) before the reporter declares a hang.
double stepTimeout(const Options& opts, const Plan& plan, int step);

}  // namespace accl::bench
