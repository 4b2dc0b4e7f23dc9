// Runs a program the way the tests run accl's tools (accl-ras): its stdout and stderr go to a file,
// not a pipe (ranks forked meanwhile would inherit a pipe's write end and hold it open), read back
// once it exits; its environment is the caller's with some variables replaced or removed.
#pragma once

#include <string>
#include <vector>

namespace accl::test {

struct SpawnResult {
  int status = -1;  // the exit status; -1 when it did not start or died by a signal
  std::string out;  // stdout and stderr together
};

// argv[0] is the program's path. `env`: "NAME=value" replaces NAME (or adds it), "NAME=" removes
// it. `outFile`: where the output goes meanwhile (removed afterwards; unique per call is the
// caller's business).
SpawnResult spawnAndCapture(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                            const std::string& outFile);

}  // namespace accl::test
