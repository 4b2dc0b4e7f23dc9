// ConnStatus (socket_net_status.h).
#include "transports/net/socket/socket_net_status.h"

#include <cerrno>

#include "util/check.h"

namespace accl::socketnet {

ncclResult_t socketErrorCode(int err) {
  switch (err) {
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ECONNABORTED:
    case ENETDOWN:
    case ENETRESET:
      return ncclRemoteError;
    default:
      return ncclSystemError;
  }
}

void ConnStatus::set(ncclResult_t code, std::string text) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (code_.load(std::memory_order_relaxed) != ncclSuccess) return;
  text_ = std::move(text);
  code_.store(code, std::memory_order_release);
}

ncclResult_t ConnStatus::report() {
  int code = code_.load(std::memory_order_acquire);
  if (code == ncclSuccess) return ncclSuccess;
  std::lock_guard<std::mutex> lock(mutex_);
  if (reported_) return static_cast<ncclResult_t>(code);
  reported_ = true;
  return fail(static_cast<ncclResult_t>(code), "%s", text_.c_str());
}

}  // namespace accl::socketnet
