// accl-tune: the tuner from the command line. `table` prints the tuner's choice per size and why
// (the predicted time of the winner and of the runner-up); `calibrate` measures the host
// backend's algorithms and writes the calibration its cost model reads; `regret` measures the
// tuner's picks against the best candidate.
#include <cstdio>
#include <cstring>

#include "calibrate.h"
#include "common/cli.h"
#include "table.h"

namespace {

void printUsage(FILE* out) {
  std::fprintf(out,
               "usage: accl-tune <command> [options]   (accl-tune <command> --help for its options)\n"
               "  table      the tuner's choice per size: algorithm, protocol, channels, threads, predicted\n"
               "             time and bandwidth, and the runner-up\n"
               "  calibrate  measure the host backend and write the tuner's calibration file\n"
               "  regret     measure the tuner's picks against the best measured candidate\n"
               "Exit status: 0 ok, 1 the run failed, 2 bad usage (docs/tools.md).\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    printUsage(stderr);
    return accl::cli::usageError("accl-tune", "a command is needed: table, calibrate or regret");
  }
  const char* cmd = argv[1];
  // Subcommands see argv[0] = their own name.
  if (std::strcmp(cmd, "table") == 0) return accl::tune::runTable(argc - 1, argv + 1);
  if (std::strcmp(cmd, "calibrate") == 0) return accl::tune::runCalibrate(argc - 1, argv + 1);
  if (std::strcmp(cmd, "regret") == 0) return accl::tune::runRegret(argc - 1, argv + 1);
  if (std::strcmp(cmd, "-h") == 0 || std::strcmp(cmd, "--help") == 0 || std::strcmp(cmd, "help") == 0) {
    printUsage(stdout);
    return 0;
  }
  return accl::cli::usageError("accl-tune", "unknown command '%s' (table, calibrate or regret)", cmd);
}
