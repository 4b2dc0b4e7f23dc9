// Which interfaces the socket NetDevice serves and how it uses them: interface selection
// (NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY as util/net_interfaces reads them), the sysfs facts behind
// getProperties, and the threads x sockets of a connection (NCCL_SOCKET_NTHREADS,
// NCCL_NSOCKS_PERTHREAD), with NCCL's automatic choice and caps.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nccl.h"
#include "util/net_interfaces.h"
#include "util/socket_address.h"

namespace accl::socketnet {

struct SocketNetIf {
  std::string name;     // "eth0"
  SocketAddress addr;   // port 0
  std::string pciPath;  // realpath of /sys/class/net/<name>/device, "" when virtual
  int speedMbps = 0;    // /sys/class/net/<name>/speed, 10000 when unknown
};

// The interfaces `setting` (readSocketIfSetting()) allows, in NCCL's order of preference with
// NCCL_COMM_ID's subnet as the hint, at most 16. An empty list is not an error here; *all gets every
// interface seen, for messages.
ncclResult_t findSocketNetInterfaces(const SocketIfSetting& setting, std::vector<SocketNetIf>* out,
                                     std::string* all);

// sysfs facts of one interface (read once when the device is created).
std::string netIfPciPath(const std::string& ifname);
int netIfSpeedMbps(const std::string& ifname);

struct Parallelism {
  int nThreads = 0;         // helper threads per connection (0: data on the control socket)
  int nSocksPerThread = 0;  // data sockets per helper thread
  int dataSockets() const { return nThreads * nSocksPerThread; }
};

// The settings, or NCCL's automatic choice for the NIC at pciPath (cloud vendors' NICs want
// several streams), within the caps of 16 threads and 64 data sockets.
Parallelism chooseParallelism(const std::string& pciPath);
// The same choice from explicit values (-2 = automatic), for tests.
Parallelism chooseParallelism(int nThreads, int nSocksPerThread, const std::string& pciPath);

// NCCL_SOCKET_MIN_TASKSIZE and NCCL_SOCKET_INLINE, sanitised.
size_t minTaskBytes();
size_t inlineBytes();

}  // namespace accl::socketnet
