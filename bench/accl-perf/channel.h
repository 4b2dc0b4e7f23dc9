// The out-of-band path from every rank to the reporter: fixed-size records over a pipe (ranks that are
// threads or forked processes) or a TCP socket (ranks of other processes under mpirun). It never goes
// through the library under test, so a broken collective cannot hide its own errors or hang the report.
#pragma once

#include <cstddef>
#include <cstdint>

namespace accl::bench {

enum class RecordKind : uint32_t {
  kHello = 1,   // rank is up: pid, host, device
  kResult = 2,  // one step's timing and wrong-element count
  kError = 3,   // the rank failed; text says why; no more records follow
  kDone = 4,    // the rank finished every step
};

struct Record {
  RecordKind kind;
  int32_t rank;
  int32_t step;
  int32_t pid;
  int32_t device;      // CUDA device, -1 on the host backend
  int32_t exitCode;    // kError: the exit code this failure maps to
  double timeSec;      // kResult: seconds per call (after the final synchronization)
  double cpuSec;       // kResult: seconds per call before the final synchronization (-C 1)
  int64_t wrong;       // kResult: wrong elements on this rank (-1: not checked)
  char host[64];
  char busId[32];
  char deviceName[96];
  char text[1024];
};

// Blocking whole-record I/O; EINTR is retried. writeRecord returns false when the reader is gone.
bool writeRecord(int fd, const Record& r);
enum class ReadStatus { kOk, kEof, kError };
ReadStatus readRecord(int fd, Record* r);

// Whole-buffer helpers used by the rendezvous too.
bool writeAll(int fd, const void* data, size_t bytes);
bool readAll(int fd, void* data, size_t bytes);  // false on EOF or error

}  // namespace accl::bench
