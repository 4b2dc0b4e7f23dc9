// The one reader of the socket retry settings (see socket_retry.h).
#include "util/socket_retry.h"

#include <algorithm>

#include "util/params.h"

namespace accl {

SocketRetryPolicy socketRetryPolicy() {
  SocketRetryPolicy p;
  p.retries = std::max<int64_t>(0, paramInt("NCCL_SOCKET_RETRY_CNT"));
  p.sleepMs = std::max<int64_t>(0, paramInt("NCCL_SOCKET_RETRY_SLEEP_MSEC"));
  return p;
}

}  // namespace accl
