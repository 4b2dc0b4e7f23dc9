// ConnStatus: the first error of one socket-net connection, set by whichever thread meets it (the
// caller's or a helper thread) and reported to the caller by isend / irecv / test. The first
// report logs it as a WARN (fail()), later calls return the same code quietly.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "nccl.h"

namespace accl::socketnet {

// A failed socket call's errno as an NCCL code: the peer or the link (reset, unreachable, ...)
// -> ncclRemoteError, anything else -> ncclSystemError.
ncclResult_t socketErrorCode(int err);

class ConnStatus {
 public:
  // Keeps only the first error.
  void set(ncclResult_t code, std::string text);
  bool failed() const { return code_.load(std::memory_order_acquire) != ncclSuccess; }
  // ncclSuccess, or the error (logged the first time it is reported).
  ncclResult_t report();

 private:
  std::atomic<int> code_{ncclSuccess};
  std::mutex mutex_;
  std::string text_;
  bool reported_ = false;
};

}  // namespace accl::socketnet
