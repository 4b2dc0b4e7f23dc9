// TCP for the test net plugins (acclTest, acclStrictV6): the interface they listen on
// (ACCL_TEST_NET_IFNAME, else the first NCCL_SOCKET_IFNAME prefix match, else the first
// non-loopback IPv4 interface, else lo), their listening socket, and their data sockets' options.
// Header-only: each plugin is a module of its own and links nothing from accl.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace accl::testnet {

struct Interface {
  std::string name = "lo";
  sockaddr_in addr{};  // port 0
};

// Whether `ifname` starts with one of the comma list's entries (a leading ^ or = is ignored).
inline bool prefixMatches(const char* ifname, const char* list) {
  if (!list || !*list) return false;
  std::string spec(list);
  if (spec[0] == '^' || spec[0] == '=') spec.erase(0, 1);
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    std::string prefix = spec.substr(start, comma - start);
    if (!prefix.empty() && std::strncmp(ifname, prefix.c_str(), prefix.size()) == 0) return true;
    start = comma + 1;
  }
  return false;
}

inline Interface chooseInterface() {
  Interface chosen;
  chosen.addr.sin_family = AF_INET;
  chosen.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const char* wanted = std::getenv("ACCL_TEST_NET_IFNAME");
  if (!wanted || !*wanted) wanted = std::getenv("NCCL_SOCKET_IFNAME");
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return chosen;
  bool found = false;
  for (int pass = 0; pass < 2 && !found; ++pass) {
    for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
      bool loopback = i->ifa_flags & IFF_LOOPBACK;
      bool ok = wanted && *wanted ? prefixMatches(i->ifa_name, wanted) : (pass == 0 ? !loopback : loopback);
      if (!ok) continue;
      chosen.name = i->ifa_name;
      std::memcpy(&chosen.addr, i->ifa_addr, sizeof(sockaddr_in));
      found = true;
    }
    if (wanted && *wanted) break;
  }
  freeifaddrs(list);
  chosen.addr.sin_port = 0;
  return chosen;
}

// A blocking TCP socket listening on `itf` (any port); `bound` gets its address. -1 on failure,
// with errno set.
inline int listenTcp(const Interface& itf, sockaddr_in* bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  *bound = itf.addr;
  socklen_t len = sizeof(*bound);
  if (bind(fd, reinterpret_cast<sockaddr*>(bound), sizeof(*bound)) != 0 || ::listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(bound), &len) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

inline void setNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// A connected socket that carries messages: no Nagle delay, non-blocking.
inline void makeDataSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setNonBlocking(fd);
}

}  // namespace accl::testnet
