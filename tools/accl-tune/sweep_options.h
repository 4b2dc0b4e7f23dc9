// Command-line options shared by `accl-tune calibrate` and `accl-tune regret`: which rank counts,
// collectives and sizes to sweep, and how hard to measure.
#pragma once

#include <string>
#include <vector>

#include "measure.h"

namespace accl::tune {

struct SweepOptions {
  std::vector<int> ranks = {2, 4, 8};
  std::vector<FuncId> funcs = {kFuncAllReduce};
  size_t minBytes = 8;
  size_t maxBytes = 256u << 20;
  double factor = 2;
  int rounds = 5;
  int launches = 3;
  bool pin = true;           // --no-pin: leave rank placement to the kernel
  double targetUs = 20000;
  int timeoutSec = 3600;
  std::string file;          // calibrate: output; regret: ACCL_TUNER_FILE to evaluate
  double maxRegret = 1.05;   // regret: exit 1 above this
};

// Parses argv[1..] (argv[0] is the subcommand). Returns -1 to go on, or the exit status to
// return now: 0 after --help (usage printed), 2 after a bad option or value (named, with why).
int parseSweepOptions(int argc, char** argv, const char* usage, SweepOptions* out);

}  // namespace accl::tune
