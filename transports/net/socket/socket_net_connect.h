// SocketNetConnector: the sending side's connection being made. connect() must not block, so a
// short-lived thread dials the control socket and every data socket with util/socket's connect
// (its retries, NCCL_SOCKET_RETRY_CNT / _SLEEP_MSEC) and sends each socket's hello; connect()
// polls finished() and then takes the sockets. Destroying it cancels the dialing (abort flag) and
// joins the thread, within one poll slice.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "transports/net/socket/socket_net_wire.h"
#include "util/socket.h"

namespace accl::socketnet {

class SocketNetConnector {
 public:
  explicit SocketNetConnector(const HandleWire& handle) : handle_(handle) {}
  ~SocketNetConnector();
  SocketNetConnector(const SocketNetConnector&) = delete;
  SocketNetConnector& operator=(const SocketNetConnector&) = delete;

  ncclResult_t start();
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // After finished(): the outcome (errors were logged by util/socket), and the sockets.
  ncclResult_t result() const { return result_; }
  Socket takeControl() { return std::move(ctrl_); }
  std::vector<Socket> takeData() { return std::move(data_); }
  const HandleWire& handle() const { return handle_; }

 private:
  ncclResult_t dialAll();
  ncclResult_t dial(uint64_t connId, uint32_t index, Socket* out);

  HandleWire handle_;
  std::atomic<int> abort_{0};
  std::atomic<bool> finished_{false};
  ncclResult_t result_ = ncclSuccess;
  Socket ctrl_;
  std::vector<Socket> data_;
  std::thread thread_;
};

}  // namespace accl::socketnet
