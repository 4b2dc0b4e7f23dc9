// SocketAddress: an IPv4 or IPv6 socket address that fits in 28 bytes (it is stored inside ncclUniqueId
// and sent between ranks as raw bytes), with parsing of "host:port" / "[ipv6]:port" and printing.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "nccl.h"

namespace accl {

// Trivially copyable, exactly 28 bytes (the size of sockaddr_in6), so it can be stored inside an
// ncclUniqueId and sent over the wire as is.
union SocketAddress {
  sockaddr sa;
  sockaddr_in in4;
  sockaddr_in6 in6;

  SocketAddress();
  int family() const { return sa.sa_family; }
  bool isInet() const { return family() == AF_INET || family() == AF_INET6; }
  uint16_t port() const;  // host byte order; 0 when not AF_INET/AF_INET6
  void setPort(uint16_t port);
  socklen_t length() const;  // sizeof the active member
  bool isLoopback() const;
  bool operator==(const SocketAddress& other) const;  // family, address and port
  // "1.2.3.4:5678" or "[fd00::2]:5678"; "<invalid family N>" otherwise.
  std::string toString() const;
  // Address only, no port.
  std::string hostString() const;

  // Parses "1.2.3.4:port", "[ipv6]:port", "hostname:port" (resolved with getaddrinfo, preferring
  // `family` when it is AF_INET or AF_INET6) and a bare IPv6 literal with a trailing ":port" when
  // unambiguous. Port must be 0..65535 and is mandatory. Errors: ncclInvalidArgument, message logged
  // through fail() naming `what` (e.g. "NCCL_COMM_ID").
  static ncclResult_t parse(const std::string& text, SocketAddress* out, int family = AF_UNSPEC,
                            const char* what = "socket address");
  static SocketAddress fromSockaddr(const sockaddr* sa, socklen_t len);
};
static_assert(sizeof(SocketAddress) == 28, "SocketAddress must stay 28 bytes (lives inside ncclUniqueId)");

}  // namespace accl
