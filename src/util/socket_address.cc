// SocketAddress parsing and printing (see socket_address.h).
#include "util/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/check.h"

namespace accl {

SocketAddress::SocketAddress() { std::memset(this, 0, sizeof(*this)); }

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(in4.sin_port);
  if (family() == AF_INET6) return ntohs(in6.sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) in4.sin_port = htons(port);
  if (family() == AF_INET6) in6.sin6_port = htons(port);
}

socklen_t SocketAddress::length() const {
  if (family() == AF_INET) return sizeof(sockaddr_in);
  if (family() == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

bool SocketAddress::isLoopback() const {
  if (family() == AF_INET) return (ntohl(in4.sin_addr.s_addr) >> 24) == 127;
  if (family() == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr) ||
           (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr) && in6.sin6_addr.s6_addr[12] == 127);  // ::ffff:127.x
  return false;
}

bool SocketAddress::operator==(const SocketAddress& other) const {
  if (family() != other.family() || port() != other.port()) return false;
  if (family() == AF_INET) return in4.sin_addr.s_addr == other.in4.sin_addr.s_addr;
  if (family() == AF_INET6) return std::memcmp(&in6.sin6_addr, &other.in6.sin6_addr, sizeof(in6_addr)) == 0;
  return std::memcmp(this, &other, sizeof(*this)) == 0;
}

std::string SocketAddress::hostString() const {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &in4.sin_addr, buf, sizeof(buf));
    return buf;
  }
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof(buf));
    return buf;
  }
  return "<invalid family " + std::to_string(family()) + ">";
}

std::string SocketAddress::toString() const {
  if (family() == AF_INET) return hostString() + ":" + std::to_string(port());
  if (family() == AF_INET6) return "[" + hostString() + "]:" + std::to_string(port());
  return hostString();
}

SocketAddress SocketAddress::fromSockaddr(const sockaddr* sa, socklen_t len) {
  SocketAddress a;
  if (sa && sa->sa_family == AF_INET && len >= sizeof(sockaddr_in))
    std::memcpy(&a.in4, sa, sizeof(sockaddr_in));
  if (sa && sa->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6))
    std::memcpy(&a.in6, sa, sizeof(sockaddr_in6));
  return a;
}

ncclResult_t SocketAddress::parse(const std::string& text, SocketAddress* out, int family, const char* what) {
  std::string host, portText;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return fail(ncclInvalidArgument, "%s: cannot parse '%s': expected [ipv6-address]:port", what,
                  text.c_str());
    host = text.substr(1, close - 1);
    portText = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return fail(ncclInvalidArgument, "%s: cannot parse '%s': expected host:port or [ipv6-address]:port",
                  what, text.c_str());
    host = text.substr(0, colon);
    portText = text.substr(colon + 1);
  }
  char* end = nullptr;
  errno = 0;
  long port = portText.empty() ? -1 : std::strtol(portText.c_str(), &end, 10);
  if (portText.empty() || errno != 0 || *end != '\0' || port < 0 || port > 65535)
    return fail(ncclInvalidArgument, "%s: '%s' has an invalid port '%s' (expected 0..65535)", what,
                text.c_str(), portText.c_str());

  SocketAddress a;
  if (inet_pton(AF_INET, host.c_str(), &a.in4.sin_addr) == 1) {
    a.in4.sin_family = AF_INET;
  } else if (inet_pton(AF_INET6, host.c_str(), &a.in6.sin6_addr) == 1) {
    a.in6.sin6_family = AF_INET6;
  } else {
    addrinfo hints{};
    hints.ai_family = (family == AF_INET || family == AF_INET6) ? family : AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || !res)
      return fail(ncclInvalidArgument, "%s: cannot resolve host '%s' in '%s': %s", what, host.c_str(),
                  text.c_str(), gai_strerror(rc));
    const addrinfo* pick = res;
    for (const addrinfo* r = res; r; r = r->ai_next) {
      if (r->ai_family == AF_INET || r->ai_family == AF_INET6) {
        pick = r;
        break;
      }
    }
    a = fromSockaddr(pick->ai_addr, pick->ai_addrlen);
    freeaddrinfo(res);
    if (!a.isInet())
      return fail(ncclInvalidArgument, "%s: host '%s' has no IPv4/IPv6 address", what, host.c_str());
  }
  a.setPort(static_cast<uint16_t>(port));
  *out = a;
  return ncclSuccess;
}

}  // namespace accl
