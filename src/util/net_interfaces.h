// Network interface discovery and NCCL's selection rules: NCCL_SOCKET_IFNAME lists (prefix, ^exclude,
// =exact), NCCL_SOCKET_FAMILY, and the order of preference (explicit list; ib*; the NCCL_COMM_ID subnet;
// anything but docker/lo/virbr; then docker, lo, virbr). The selection is a pure function for testing.
#pragma once

#include <string>
#include <vector>

#include "nccl.h"
#include "util/socket_address.h"

namespace accl {

struct NetInterface {
  std::string name;
  SocketAddress addr;     // port 0
  SocketAddress netmask;  // same family as addr
};

// A parsed NCCL_SOCKET_IFNAME-style list: "eth,ib" (prefixes), "=eth0,eth1" (exact names),
// "^docker,lo" (everything but), "^=eth0" (everything but exactly eth0). An entry may carry ":port"
// (kept for NCCL compatibility; interface matching ignores it when no port is given).
struct IfNameFilter {
  struct Entry {
    std::string name;
    int port = -1;
  };
  bool exclude = false;
  bool exact = false;
  std::vector<Entry> entries;

  static IfNameFilter parse(const std::string& spec);
  // True when `ifname` is selected by this filter (exclude lists select what they do not name).
  bool matches(const std::string& ifname, int port = -1) const;
};

// Parses NCCL_SOCKET_FAMILY: "AF_INET" -> AF_INET, "AF_INET6" -> AF_INET6, empty -> AF_UNSPEC.
// Anything else -> AF_UNSPEC with a WARN-free INFO note (NCCL ignores bad values too).
int parseSocketFamily(const std::string& value);

// Every (interface, address) pair of the machine that is up and IPv4/IPv6 (IPv6 link-local addresses
// are skipped: they need a scope id that does not survive being copied to other hosts).
ncclResult_t listInterfaces(std::vector<NetInterface>* out);

// Pure selection logic, NCCL's order of preference, first non-empty stage wins:
//   1. ifnameSpec when non-empty (only that list, nothing else is tried);
//   2. names starting with "ib";
//   3. when `subnetOf` is given: interfaces in the same subnet as that address;
//   4. anything but docker*, lo*, virbr*;
//   5. docker*, then lo*, then virbr*.
// `family` (AF_INET / AF_INET6 / AF_UNSPEC) filters addresses; each interface name is returned once
// (its first address of an acceptable family). At most maxIfs results.
std::vector<NetInterface> selectInterfaces(const std::vector<NetInterface>& all,
                                           const std::string& ifnameSpec, int family,
                                           const SocketAddress* subnetOf, int maxIfs);

// True when `a` and `iface.addr` are of the same family and equal under iface.netmask.
bool sameSubnet(const NetInterface& iface, const SocketAddress& a);

}  // namespace accl
