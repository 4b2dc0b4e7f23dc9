// SocketNetListen: the receiving side's listening port. accept() drives it without blocking: it
// takes every waiting TCP connection, reads each one's hello (util/socket's handshake with the
// listener's random magic and SocketType::kNetSocket, then the connection id and socket index),
// and groups the sockets of one connection by id until the control socket and every data socket
// are there. A connection that sends junk, a wrong magic or type, an impossible index, closes, or
// stays silent past ACCL_SOCKET_HANDSHAKE_MS is closed with a WARN naming its address; the
// listener keeps serving everyone else.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transports/net/net_device.h"
#include "transports/net/socket/socket_net_config.h"
#include "transports/net/socket/socket_net_conn.h"
#include "transports/net/socket/socket_net_wire.h"
#include "util/socket.h"

namespace accl::socketnet {

class SocketNetListen final : public NetListenComm {
 public:
  // Listens on `iface`'s address (ephemeral port) and fills `handle`.
  static ncclResult_t create(const SocketNetIf& iface, NetHandle* handle, std::unique_ptr<SocketNetListen>* out);

  // Rejects, with a log line each, the connections that had not identified themselves yet (a
  // silent stranger is never dropped without a trace).
  ~SocketNetListen() override;

  // Non-blocking; *out stays null until a whole connection has arrived.
  ncclResult_t accept(std::unique_ptr<SocketNetRecvComm>* out);

  // Connections rejected so far (for tests).
  uint64_t rejected() const { return rejected_; }
  const SocketAddress& address() const { return listener_.localAddress(); }

 private:
  struct Pending {
    Socket sock;
    int64_t deadlineNs = 0;
    unsigned char hello[kHelloBytes] = {};
    size_t have = 0;
  };
  struct Group {
    std::vector<Socket> socks;  // index 0 = control, 1..n = data
    int arrived = 0;
  };
  void acceptWaiting();
  // Reads what the hello has so far; true when `p` is finished (filed into a group or rejected).
  bool advance(Pending& p, int64_t now);
  void reject(const Pending& p, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

  Socket listener_;
  std::string ifName_;
  uint64_t magic_ = 0;
  Parallelism par_;
  int64_t handshakeMs_ = 5000;
  std::vector<Pending> pending_;
  std::map<uint64_t, Group> groups_;  // by connection id
  uint64_t rejected_ = 0;
};

}  // namespace accl::socketnet
