// The text accl-ras prints for one process: its communicators grouped by comm hash, each local
// rank's current operation and sequence number, the peers its waits sleep on, and the peers this
// process knows to be dead or unreachable. Example:
//
//   accl-ras: process 4242 on host node7 (library 2.32.3), 1 communicator
//   comm 0x5f3c2a1b00d4e9f7 nranks 4: ranks in this process 0
//     rank 0: in AllReduce #2 (count 1024 float32 sum) for 3.21 s; waiting for rank 3 (3.20 s; <liveness's word on it>)
//     peers on this host: rank 1 pid 4243 sleeping, rank 2 pid 4244 sleeping, rank 3 pid 4245 stopped
//     dead or unreachable: rank 3 (pid 4245: stopped by a signal, e.g. SIGSTOP)
//   last error in this process: ...
// and for an idle rank: "rank 0: idle after 5 collectives and 0 send/recv batches; last
// AllReduce #5 (count 8 float32 sum) ended 0.52 s ago".
//
// "dead or unreachable" lists liveness's verdict (core/liveness/liveness.h, the same failed rank on every
// survivor), the peers on the same host whose process exited or is stopped (read from /proc), and
// the communicator's async error. It is the view of one process; run accl-ras against each
// process (--scan) for the whole host.
#pragma once

#include <string>
#include <vector>

#include "ras/ras_snapshot.h"

namespace accl {

// The report of this process now.
std::string rasReportText();

// The state of a process on this host as /proc shows it: "running", "sleeping", "stopped",
// "exited", "zombie" ... ("exited" when no such process exists).
std::string rasProcessState(int pid);

// Formats a report from snapshots (exposed for tests of the format).
std::string rasFormatReport(const std::vector<RasCommSnapshot>& comms, int64_t nowNs);

}  // namespace accl
