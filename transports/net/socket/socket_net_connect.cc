// SocketNetConnector (socket_net_connect.h).
#include "transports/net/socket/socket_net_connect.h"

#include "util/check.h"
#include "util/socket_auth.h"

namespace accl::socketnet {
namespace {

// A connect that neither succeeds nor is refused (a dropped SYN) gives up after this long.
constexpr int64_t kDialTimeoutMs = 60000;

}  // namespace

SocketNetConnector::~SocketNetConnector() {
  abort_.store(1, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
}

ncclResult_t SocketNetConnector::start() {
  thread_ = std::thread([this] {
    result_ = dialAll();
    finished_.store(true, std::memory_order_release);
  });
  return ncclSuccess;
}

ncclResult_t SocketNetConnector::dial(uint64_t connId, uint32_t index, Socket* out) {
  SocketWait wait = SocketWait::in(kDialTimeoutMs, &abort_, "a net socket connection");
  ACCL_CHECK(Socket::connect(handle_.addr, handle_.listenMagic, SocketType::kNetSocket, wait, out));
  HelloTail tail{connId, index, handle_.nThreads * handle_.nSocksPerThread};
  return out->sendAll(&tail, sizeof(tail), wait);
}

ncclResult_t SocketNetConnector::dialAll() {
  uint64_t connId = 0;
  while (connId == 0)
    if (!secureRandom(&connId, sizeof(connId)))
      return fail(ncclSystemError, "NET/Socket connect to %s: no random bytes for the connection id",
                  handle_.addr.toString().c_str());
  ACCL_CHECK(dial(connId, 0, &ctrl_));
  const uint32_t nData = handle_.nThreads * handle_.nSocksPerThread;
  data_.resize(nData);
  for (uint32_t i = 0; i < nData; ++i) ACCL_CHECK(dial(connId, i + 1, &data_[i]));
  return ncclSuccess;
}

}  // namespace accl::socketnet
