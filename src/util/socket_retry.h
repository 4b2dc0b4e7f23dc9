// NCCL_SOCKET_RETRY_CNT and NCCL_SOCKET_RETRY_SLEEP_MSEC, read in this one place with one meaning:
// how many more times a TCP connect that was refused, unreachable or timed out — or a listen on
// an address still in use — is tried, and how long to back off before try N (N times the sleep).
// Socket::connectTcp and the NCCL_COMM_ID root's listen both follow it.
#pragma once

#include <cstdint>

namespace accl {

struct SocketRetryPolicy {
  int64_t retries = 0;  // tries after the first (>= 0)
  int64_t sleepMs = 0;  // the back-off unit (>= 0)

  // Milliseconds to wait after failed try `attempt` (0-based) before the next one.
  int64_t backoffMs(int64_t attempt) const { return (attempt + 1) * sleepMs; }
};

SocketRetryPolicy socketRetryPolicy();

}  // namespace accl
