// accl-perf's command line: nccl-tests' flags (same letters, long names and defaults) plus the accl
// launcher flags. Two letters differ from nccl-tests, by design of accl-perf:
//   -C <collective> selects the collective (nccl-tests: -C 0/1 = report CPU time; a numeric argument
//      still means that, so nccl-tests command lines keep working);
//   -N <n> runs n forked local processes (nccl-tests: -N = run cycles, here --run_cycles).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "catalog.h"
#include "common/cli.h"

namespace accl::bench {

// Process exit codes: the tools' convention (tools/common/cli.h, docs/tools.md: 0 ok, 1 the run
// failed, 2 bad usage), with "the run failed" refined by nccl-tests' testResult_t values where
// nccl-tests has one. nccl-tests' own 2 (CUDA error) would read as bad usage, so a CUDA runtime
// error is 1 here; nccl-tests' 6 (invalid usage) and 255 (bad sizes) are both 2.
enum ExitCode : int {
  kExitOk = cli::kExitOk,
  kExitCudaError = cli::kExitRunFailed,
  kExitInvalidUsage = cli::kExitUsage,
  kExitNcclError = 3,
  kExitTimeout = 4,
  kExitNotImplemented = 5,
  kExitWrongData = 7,
};

struct Options {
  CollId coll = CollId::kAllReduce;
  bool collFromName = false;       // chosen through the program name (all_reduce_perf ...)
  std::string programName = "all_reduce_perf";

  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepBytes = 1u << 20;
  size_t stepFactor = 1;           // > 1: multiply; else add stepBytes
  int iters = 20;
  int warmupIters = 1;
  int aggIters = 1;
  int runCycles = 1;
  int checks = 1;                  // checked iterations per result (0: "#wrong" is N/A)
  std::vector<OpId> ops{OpId::kSum};
  std::vector<const TypeInfo*> types;  // default: float
  int root = 0;
  bool allRoots = false;
  int average = 1;                 // 0 rank 0, 1 mean, 2 min, 3 max over ranks
  int blocking = 0;
  int streamNull = 0;
  int graphLaunches = 0;
  int reportCpuTime = 0;
  int localRegister = 0;           // 1 ncclCommRegister, 2 ncclCommWindowRegister(symmetric)
  int ctaPolicy = -1;              // -x; -1: leave the config field unset
  // --coll-config and the --coll-* bounds: issue the nccl*Config variants (sendrecv has none and
  // stays plain) with one ncclCollConfig_t built from these.
  bool collConfig = false;
  bool collConfigNull = false;     // --coll-config null: the Config variants with config NULL
  std::string algSelection;        // --coll-config <NCCL_ALGO syntax>; "" or "auto": automatic
  int collMinCtas = -1;            // --coll-min-ctas; -1: unset
  int collMaxCtas = -1;            // --coll-max-ctas; -1: unset
  int collForce = 1;               // --coll-force 0/1 (forceAlgSelection)
  uint64_t collTag = 0;            // --coll-tag (userProfilerTag); 0: untagged
  int unalign = 0;
  int threads = 1;                 // -t
  int gpus = 1;                    // -g
  int procs = 0;                   // -N; 0: no forked processes
  double timeoutSec = 600;         // no-progress limit per step (plus a size-based allowance by default)
  bool timeoutGiven = false;
  std::string jsonPath;
  bool selftest = false;
  bool help = false;
  std::vector<std::string> notes;  // flags accepted but without effect here; printed in the header

  int ranksPerProcess() const { return threads * gpus; }
};

// Parses argv into *opts. Returns -1 to go on, or the exit code to return now (0 after --help, after
// printing usage). Error messages go to *error.
int parseOptions(int argc, char** argv, Options* opts, std::string* error);

void printUsage(const char* program);

// Message sizes of one sweep, and the doubling sizes nccl-tests warms up with.
std::vector<size_t> sweepSizes(const Options& opts);
std::vector<size_t> warmupSizes(const Options& opts);

// Parses "32M", "1.5K", "8" (binary K/M/G suffixes). Returns false on garbage or negative values.
bool parseSize(const char* text, size_t* out);

}  // namespace accl::bench
