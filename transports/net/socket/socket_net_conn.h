// SocketNetConn: one established socket-net connection (either end): the control socket, the
// data sockets and their helper threads, and the requests in posting order.
//
// Message flow. isend queues a MsgHeader (tag, size, taskBytes) and, for small messages (up to
// NCCL_SOCKET_INLINE) or when the connection has no data sockets, the payload, on the control
// socket; a large message is cut into tasks dealt round-robin to the data sockets' helper
// threads at once. The receiver reads a header only when a receive is posted for it (the first
// one without a header), checks the tag and the size, and then reads the inline payload or deals
// the same tasks to its own helper threads. So the n-th send meets the n-th receive, as in NCCL;
// a tag that differs, or a send larger than the receive, fails the connection.
//
// Threads: the caller's thread (the proxy) moves the control socket inside isend / irecv / test,
// never blocking; the helper threads move the data sockets. One caller thread per connection at
// a time, as NCCL's plugin API requires.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transports/net/net_device.h"
#include "transports/net/socket/socket_net_status.h"
#include "transports/net/socket/socket_net_wire.h"
#include "transports/net/socket/socket_net_worker.h"
#include "util/socket.h"

namespace accl::socketnet {

class SocketNetConn;

struct SocketNetRequest final : NetRequest {
  SocketNetConn* conn = nullptr;
  int tag = 0;
  char* data = nullptr;
  size_t capacity = 0;  // send: its size; receive: the buffer's size
  MsgHeader header{};   // send: what goes out; receive: what came in
  size_t ctrlBytes = 0;  // bytes of header + inline payload moved on the control socket
  bool headerDone = false;    // the header is known (send: at once; receive: arrived and accepted)
  bool ctrlFinished = false;  // header and inline payload moved, tasks dealt
  TaskCounter tasks;
};

class SocketNetConn {
 public:
  // `ctrl` and `data` are the connected sockets (data: nThreads * nSocksPerThread of them).
  SocketNetConn(bool sending, Socket ctrl, std::vector<Socket> data, int nSocksPerThread, std::string devName);
  virtual ~SocketNetConn();  // stops and joins the helper threads, closes the sockets
  SocketNetConn(const SocketNetConn&) = delete;
  SocketNetConn& operator=(const SocketNetConn&) = delete;

  ncclResult_t start();  // starts the helper threads
  bool sending() const { return sending_; }

  ncclResult_t isend(void* data, size_t size, int tag, NetRequest** request);
  ncclResult_t irecv(void* data, size_t size, int tag, NetRequest** request);
  ncclResult_t test(SocketNetRequest* r, int* done, size_t* sizes);

  // "1.2.3.4:5678 (eth0)", for messages.
  const std::string& peerText() const { return peerText_; }

 private:
  ncclResult_t post(std::unique_ptr<SocketNetRequest> r, NetRequest** request);
  // Moves the control socket as far as it goes without blocking.
  void progress();
  void progressSend();
  void progressRecv();
  // Receiver: the header of `r` arrived; checks it, then starts the payload.
  bool acceptHeader(SocketNetRequest* r);
  void dealTasks(SocketNetRequest* r);
  void setError(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  // A failed control-socket send / recv (n == 0: the peer closed it).
  void ioError(const char* op, long n, int err, size_t done, size_t total);

  bool sending_;
  Socket ctrl_;
  std::vector<Socket> data_;
  int nSocksPerThread_;
  std::string peerText_;
  size_t inlineBytes_;
  size_t minTaskBytes_;
  size_t nextSocket_ = 0;  // where the next message's first task goes
  ConnStatus status_;
  std::vector<std::unique_ptr<DataWorker>> workers_;
  std::vector<std::unique_ptr<SocketNetRequest>> requests_;  // posting order
};

class SocketNetSendComm final : public NetSendComm, public SocketNetConn {
 public:
  using SocketNetConn::SocketNetConn;
};
class SocketNetRecvComm final : public NetRecvComm, public SocketNetConn {
 public:
  using SocketNetConn::SocketNetConn;
};

}  // namespace accl::socketnet
