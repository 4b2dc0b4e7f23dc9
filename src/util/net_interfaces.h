// Network interface discovery and NCCL's selection rules: the one reader of NCCL_SOCKET_IFNAME /
// NCCL_SOCKET_FAMILY (readSocketIfSetting: which interfaces and address family accl may use for TCP),
// the list syntax (prefix, ^exclude, =exact), and the order of preference when no list is set (ib*;
// a caller's subnet hint; anything but docker/lo/virbr; then docker, lo, virbr). The selection is a
// pure function for testing.
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

// Parses an address-family setting (NCCL_SOCKET_FAMILY, NCCL_IB_ADDR_FAMILY): "AF_INET" -> AF_INET,
// "AF_INET6" -> AF_INET6, empty -> AF_UNSPEC. Anything else -> AF_UNSPEC with a WARN-free INFO note
// naming `setting` (NCCL ignores bad values too).
int parseSocketFamily(const std::string& value, const char* setting = "NCCL_SOCKET_FAMILY");

// NCCL_SOCKET_IFNAME and NCCL_SOCKET_FAMILY together: the interfaces (by name) and the address family
// accl may use for its TCP traffic, the bootstrap's, the socket network's and the IB network's
// connection side channel. No list set: any name, and selectInterfaces() applies NCCL's automatic
// order. A list set: only the names it selects, and nothing else is ever tried. Every reader of the
// two settings goes through this struct, and every message that quotes them uses describe().
struct SocketIfSetting {
  std::string ifnameText;  // NCCL_SOCKET_IFNAME as given ("" = not set)
  std::string familyText;  // NCCL_SOCKET_FAMILY as given ("" = not set)
  IfNameFilter names;      // ifnameText parsed
  int family = AF_UNSPEC;  // familyText parsed (AF_UNSPEC: IPv4 and IPv6 both allowed)

  // The setting from its two texts (what readSocketIfSetting parses; tests call it directly).
  static SocketIfSetting parse(const std::string& ifname, const std::string& family);
  // True when NCCL_SOCKET_IFNAME is set to anything (even a list that selects nothing).
  bool hasList() const { return !ifnameText.empty(); }
  // True when interface `ifname` may be used: the list selects it, or no list is set.
  bool allowsName(const std::string& ifname) const;
  // True when an address of family `fam` may be used: it is the forced family, or none is forced.
  bool allowsFamily(int fam) const { return family == AF_UNSPEC || fam == family; }
  bool allows(const NetInterface& i) const { return allowsName(i.name) && allowsFamily(i.addr.family()); }
  // "NCCL_SOCKET_IFNAME='<text>', NCCL_SOCKET_FAMILY='<text>'", for messages.
  std::string describe() const;
};

// Reads NCCL_SOCKET_IFNAME and NCCL_SOCKET_FAMILY (environment, config files or env plugin, like any
// setting) and parses them. Read afresh on every call, never cached: settings are live in accl
// (util/params.h), so a program or test that changes them between communicators or network devices
// gets the new interfaces. Callers read it once per decision and pass the result along, so a choice
// and the message about it always see the same values.
SocketIfSetting readSocketIfSetting();

// Every (interface, address) pair of the machine that is up and IPv4/IPv6 (IPv6 link-local addresses
// are skipped: they need a scope id that does not survive being copied to other hosts).
ncclResult_t listInterfaces(std::vector<NetInterface>* out);

// Pure selection logic, NCCL's order of preference, first non-empty stage wins:
//   1. setting.hasList(): the names the list allows (only those, nothing else is tried);
//   2. names starting with "ib";
//   3. when `subnetOf` is given (the bootstrap and the socket network pass NCCL_COMM_ID's address):
//      interfaces in the same subnet as that address;
//   4. anything but docker*, lo*, virbr*;
//   5. docker*, then lo*, then virbr*.
// setting.family filters addresses; each interface name is returned once (its first address of an
// allowed family). At most maxIfs results.
std::vector<NetInterface> selectInterfaces(const std::vector<NetInterface>& all, const SocketIfSetting& setting,
                                           const SocketAddress* subnetOf, int maxIfs);

// True when `a` and `iface.addr` are of the same family and equal under iface.netmask.
bool sameSubnet(const NetInterface& iface, const SocketAddress& a);

}  // namespace accl
