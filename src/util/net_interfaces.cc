// Interface listing (getifaddrs), the one reader of NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY, and NCCL's
// interface selection rules (see net_interfaces.h).
#include "util/net_interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {
namespace {

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

IfNameFilter IfNameFilter::parse(const std::string& spec) {
  IfNameFilter f;
  size_t pos = 0;
  if (pos < spec.size() && spec[pos] == '^') {
    f.exclude = true;
    ++pos;
  }
  if (pos < spec.size() && spec[pos] == '=') {
    f.exact = true;
    ++pos;
  }
  std::string rest = spec.substr(pos);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    // Trim blanks so "eth0, lo" works.
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    if (!item.empty()) {
      Entry entry;
      size_t colon = item.find(':');
      if (colon != std::string::npos) {
        entry.name = item.substr(0, colon);
        char* end = nullptr;
        long port = std::strtol(item.c_str() + colon + 1, &end, 10);
        entry.port = (end && *end == '\0' && colon + 1 < item.size()) ? static_cast<int>(port) : -1;
      } else {
        entry.name = item;
      }
      if (!entry.name.empty()) f.entries.push_back(entry);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return f;
}

bool IfNameFilter::matches(const std::string& ifname, int port) const {
  bool named = false;
  for (const Entry& e : entries) {
    bool nameOk = exact ? ifname == e.name : startsWith(ifname, e.name.c_str());
    bool portOk = e.port < 0 || port < 0 || e.port == port;
    if (nameOk && portOk) {
      named = true;
      break;
    }
  }
  return exclude ? !named : named;
}

int parseSocketFamily(const std::string& value, const char* setting) {
  if (value.empty()) return AF_UNSPEC;
  if (value == "AF_INET") return AF_INET;
  if (value == "AF_INET6") return AF_INET6;
  ACCL_INFO(ACCL_LOG_ENV, "%s='%s' is neither AF_INET nor AF_INET6; ignoring it", setting, value.c_str());
  return AF_UNSPEC;
}

SocketIfSetting SocketIfSetting::parse(const std::string& ifname, const std::string& family) {
  SocketIfSetting s;
  s.ifnameText = ifname;
  s.familyText = family;
  s.names = IfNameFilter::parse(ifname);
  s.family = parseSocketFamily(family);
  return s;
}

bool SocketIfSetting::allowsName(const std::string& ifname) const {
  return !hasList() || names.matches(ifname);
}

std::string SocketIfSetting::describe() const {
  return "NCCL_SOCKET_IFNAME='" + ifnameText + "', NCCL_SOCKET_FAMILY='" + familyText + "'";
}

SocketIfSetting readSocketIfSetting() {
  return SocketIfSetting::parse(paramStr("NCCL_SOCKET_IFNAME"), paramStr("NCCL_SOCKET_FAMILY"));
}

ncclResult_t listInterfaces(std::vector<NetInterface>* out) {
  out->clear();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    int err = errno;
    return fail(ncclSystemError, "getifaddrs failed while listing network interfaces: %s", strerror(err));
  }
  for (ifaddrs* it = list; it; it = it->ifa_next) {
    if (!it->ifa_addr || !(it->ifa_flags & IFF_UP)) continue;
    int fam = it->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    if (fam == AF_INET6) {
      const auto* s6 = reinterpret_cast<const sockaddr_in6*>(it->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) continue;
    }
    NetInterface iface;
    iface.name = it->ifa_name ? it->ifa_name : "";
    socklen_t len = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    iface.addr = SocketAddress::fromSockaddr(it->ifa_addr, len);
    iface.addr.setPort(0);
    if (it->ifa_netmask) {
      // The netmask's family field is not always filled in; copy the raw address bytes.
      iface.netmask.sa.sa_family = static_cast<sa_family_t>(fam);
      if (fam == AF_INET)
        iface.netmask.in4.sin_addr = reinterpret_cast<const sockaddr_in*>(it->ifa_netmask)->sin_addr;
      else
        iface.netmask.in6.sin6_addr = reinterpret_cast<const sockaddr_in6*>(it->ifa_netmask)->sin6_addr;
    }
    out->push_back(iface);
  }
  freeifaddrs(list);
  return ncclSuccess;
}

bool sameSubnet(const NetInterface& iface, const SocketAddress& a) {
  if (iface.addr.family() != a.family()) return false;
  if (a.family() == AF_INET) {
    uint32_t mask = iface.netmask.family() == AF_INET ? iface.netmask.in4.sin_addr.s_addr : 0xffffffffu;
    return (iface.addr.in4.sin_addr.s_addr & mask) == (a.in4.sin_addr.s_addr & mask);
  }
  if (a.family() == AF_INET6) {
    const uint8_t* x = iface.addr.in6.sin6_addr.s6_addr;
    const uint8_t* y = a.in6.sin6_addr.s6_addr;
    const uint8_t* m = iface.netmask.in6.sin6_addr.s6_addr;
    bool haveMask = iface.netmask.family() == AF_INET6;
    for (int i = 0; i < 16; ++i) {
      uint8_t mask = haveMask ? m[i] : 0xff;
      if ((x[i] & mask) != (y[i] & mask)) return false;
    }
    return true;
  }
  return false;
}

std::vector<NetInterface> selectInterfaces(const std::vector<NetInterface>& all, const SocketIfSetting& setting,
                                           const SocketAddress* subnetOf, int maxIfs) {
  // One entry per interface name: the first address whose family is allowed.
  std::vector<NetInterface> unique;
  for (const NetInterface& i : all) {
    if (!setting.allowsFamily(i.addr.family())) continue;
    bool seen =
        std::any_of(unique.begin(), unique.end(), [&](const NetInterface& u) { return u.name == i.name; });
    if (!seen) unique.push_back(i);
  }
  auto pick = [&](auto&& accept) {
    std::vector<NetInterface> res;
    for (const NetInterface& i : unique) {
      if (static_cast<int>(res.size()) >= maxIfs) break;
      if (accept(i)) res.push_back(i);
    }
    return res;
  };
  if (setting.hasList()) return pick([&](const NetInterface& i) { return setting.allowsName(i.name); });
  std::vector<NetInterface> res = pick([](const NetInterface& i) { return startsWith(i.name, "ib"); });
  if (!res.empty()) return res;
  if (subnetOf && subnetOf->isInet()) {
    res = pick([&](const NetInterface& i) { return sameSubnet(i, *subnetOf); });
    if (!res.empty()) return res;
  }
  IfNameFilter usual = IfNameFilter::parse("^docker,lo,virbr");
  res = pick([&](const NetInterface& i) { return usual.matches(i.name); });
  if (!res.empty()) return res;
  for (const char* last : {"docker", "lo", "virbr"}) {
    res = pick([&](const NetInterface& i) { return startsWith(i.name, last); });
    if (!res.empty()) return res;
  }
  return res;
}

}  // namespace accl
